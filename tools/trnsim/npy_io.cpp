#include "tools/trnsim/npy_io.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
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

F32Tensor load_f32_tensor(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    const bool dir = std::filesystem::is_directory(path, ec);
    throw BadInput(fmt::format("{} {}: {}", flag, path, dir ? "is a directory" : "no such file"));
  }
  const uint64_t header = npy_header_bytes(path, flag);
  xt::xarray<float> a;
  try {
    a = xt::load_npy<float>(path);
  } catch (const std::exception& e) {
    throw BadInput(fmt::format("{} {}: cannot read as a float32 .npy array ({})", flag, path, e.what()));
  }
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  if (file_bytes != header + a.size() * 4) {
    throw BadInput(fmt::format("{} {}: the file has {} bytes but its header describes {} ({} float32)", flag, path,
                               file_bytes, header + a.size() * 4, fmt::join(a.shape(), " x ")));
  }
  F32Tensor t;
  for (const auto d : a.shape()) t.shape.push_back(int64_t(d));
  t.bits.resize(a.size());
  std::memcpy(t.bits.data(), a.data(), a.size() * 4);  // xarray is row-major by default
  return t;
}

F32Matrix load_f32_matrix(const std::string& path, const std::string& flag) {
  F32Tensor t = load_f32_tensor(path, flag);
  if (t.shape.size() != 2) {
    throw BadInput(fmt::format("{} {}: expected a 2-D array, got {} dimensions", flag, path, t.shape.size()));
  }
  return {t.shape[0], t.shape[1], std::move(t.bits)};
}

void save_f32_tensor(const std::string& path, const std::string& flag, const F32Tensor& t) {
  std::vector<size_t> shape(t.shape.begin(), t.shape.end());
  xt::xarray<float> a = xt::zeros<float>(shape);
  std::memcpy(a.data(), t.bits.data(), t.bits.size() * 4);
  const std::string bytes = xt::dump_npy(a);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw BadInput(fmt::format("{} {}: cannot open for writing", flag, path));
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.flush();
  out.close();
  if (!out) {
    // A full disk or a file size limit: leave no truncated .npy behind (but never remove a device such as /dev/full).
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
    throw BadInput(fmt::format("{} {}: write failed", flag, path));
  }
}

void save_f32_matrix(const std::string& path, const std::string& flag, const F32Matrix& m) {
  save_f32_tensor(path, flag, {{m.rows, m.cols}, m.bits});
}

}  // namespace trnsim::tool
