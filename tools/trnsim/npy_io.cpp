#include "tools/trnsim/npy_io.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "tools/trnsim/commands.h"

namespace trnsim::tool {

namespace {
// Bytes of the .npy preamble + header: magic(6) version(2) then a 2-byte (v1) or 4-byte (v2, v3) header length.
uint64_t npy_header_bytes(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), sizeof pre);
  if (in.gcount() < 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
    throw BadInput(fmt::format("{} {}: not a .npy file (no \\x93NUMPY magic)", flag, path));
  }
  if (pre[6] == 1) return 10u + (pre[8] | (pre[9] << 8));
  if (in.gcount() < 12) throw BadInput(fmt::format("{} {}: truncated .npy header", flag, path));
  return 12u + (pre[8] | (pre[9] << 8) | (uint64_t(pre[10]) << 16) | (uint64_t(pre[11]) << 24));
}
}  // namespace

F32Matrix load_f32_matrix(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw BadInput(fmt::format("{} {}: no such file", flag, path));
  }
  const uint64_t header = npy_header_bytes(path, flag);
  xt::xarray<float> a;
  try {
    a = xt::load_npy<float>(path);
  } catch (const std::exception& e) {
    throw BadInput(fmt::format("{} {}: cannot read as a float32 .npy array ({})", flag, path, e.what()));
  }
  if (a.dimension() != 2) {
    throw BadInput(fmt::format("{} {}: expected a 2-D array, got {} dimensions", flag, path, a.dimension()));
  }
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  if (file_bytes != header + a.size() * 4) {
    throw BadInput(fmt::format("{} {}: the file has {} bytes but its header describes {} ({} x {} float32)", flag,
                               path, file_bytes, header + a.size() * 4, a.shape()[0], a.shape()[1]));
  }
  F32Matrix m;
  m.rows = int64_t(a.shape()[0]);
  m.cols = int64_t(a.shape()[1]);
  m.bits.resize(a.size());
  size_t i = 0;
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      const float f = a(r, c);
      std::memcpy(&m.bits[i++], &f, 4);
    }
  return m;
}

void save_f32_matrix(const std::string& path, const std::string& flag, const F32Matrix& m) {
  xt::xarray<float> a = xt::zeros<float>({size_t(m.rows), size_t(m.cols)});
  std::memcpy(a.data(), m.bits.data(), m.bits.size() * 4);
  try {
    xt::dump_npy(path, a);
  } catch (const std::exception& e) {
    throw BadInput(fmt::format("{} {}: cannot write ({})", flag, path, e.what()));
  }
  std::ifstream check(path, std::ios::binary);
  if (!check) throw BadInput(fmt::format("{} {}: cannot write", flag, path));
}

}  // namespace trnsim::tool
