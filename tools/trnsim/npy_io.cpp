#include "tools/trnsim/npy_io.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
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
  if (pre[6] < 1 || pre[6] > 3) {
    throw BadInput(fmt::format("{} {}: .npy format version {}.{}, expected 1.0, 2.0 or 3.0", flag, path, pre[6], pre[7]));
  }
  if (pre[6] == 1) return 10u + (pre[8] | (pre[9] << 8));
  if (in.gcount() < 12) throw BadInput(fmt::format("{} {}: truncated .npy header", flag, path));
  return 12u + (pre[8] | (pre[9] << 8) | (uint64_t(pre[10]) << 16) | (uint64_t(pre[11]) << 24));
}

/// The shape the header's dictionary names ('shape': (d0, d1, ...)), checked before anything is allocated: the
/// element type float32, every dimension a number >= 0, and their product of float32 exactly the bytes after the
/// header (so a damaged or hostile header names its shape instead of failing with bad_alloc).
std::vector<uint64_t> npy_shape(const std::string& path, const std::string& flag, uint64_t header, uint64_t file) {
  std::ifstream in(path, std::ios::binary);
  std::string text(std::min<uint64_t>(header, 1 << 20), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  const std::size_t d = text.find("'descr'");
  const std::size_t q0 = d == std::string::npos ? d : text.find('\'', d + 7);
  const std::size_t q1 = q0 == std::string::npos ? q0 : text.find('\'', q0 + 1);
  const std::string descr = q1 == std::string::npos ? "" : text.substr(q0 + 1, q1 - q0 - 1);
  if (descr != "<f4" && descr != "f4") {
    throw BadInput(fmt::format("{} {}: element type '{}', expected float32 ('<f4')", flag, path, descr));
  }
  const std::size_t order = text.find("'fortran_order'");
  const std::size_t value = order == std::string::npos ? order : text.find_first_not_of(": \t", order + 15);
  if (value == std::string::npos || text.compare(value, 5, "False") != 0) {
    throw BadInput(fmt::format("{} {}: the .npy header does not say 'fortran_order': False (only row-major arrays "
                               "are read)", flag, path));
  }
  const std::size_t key = text.find("'shape'");
  const std::size_t open = key == std::string::npos ? key : text.find('(', key);
  const std::size_t close = open == std::string::npos ? open : text.find(')', open);
  if (close == std::string::npos) throw BadInput(fmt::format("{} {}: the .npy header names no shape", flag, path));
  const std::string tuple = text.substr(open, close - open + 1);
  std::vector<uint64_t> shape;
  std::size_t at = open + 1;
  unsigned __int128 elements = 1, nonzero = 1;  // nonzero: the product of the dimensions other than 0
  while (at < close) {
    const std::size_t comma = std::min(text.find(',', at), close);
    std::string item = text.substr(at, comma - at);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \tL") + 1);
    at = comma + 1;
    if (item.empty()) continue;  // "(5,)"
    if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 19) {
      throw BadInput(fmt::format("{} {}: shape {} has a dimension '{}' that is not a size", flag, path, tuple, item));
    }
    shape.push_back(std::stoull(item));
    // Saturating: once the product is past any file's size it stays so (no wrap-around to a size that matches).
    elements = std::min<unsigned __int128>(elements * shape.back(), (unsigned __int128)(UINT64_MAX) + 1);
    if (shape.back() > 0) nonzero = std::min<unsigned __int128>(nonzero * shape.back(), (unsigned __int128)(1) << 64);
  }
  const uint64_t data = file > header ? file - header : 0;
  if (elements * 4 != data) {
    throw BadInput(fmt::format("{} {}: shape {} describes {} float32 bytes, the file has {} after its header", flag,
                               path, tuple, elements > (unsigned __int128)(UINT64_MAX) / 4
                                                ? std::string("more than 2^64")
                                                : std::to_string(uint64_t(elements * 4)),
                               data));
  }
  // An empty array (a 0 in the shape, no data): its other dimensions must still index with signed 64-bit
  // strides, as every array library's do (found by the npy fuzz target: (0, 6722330222111922528, 2) overflowed
  // xtensor's strides).
  if (nonzero > (unsigned __int128)(1) << 62) {
    throw BadInput(fmt::format("{} {}: shape {} is too large (its non-zero dimensions hold more than 2^62 elements)",
                               flag, path, tuple));
  }
  return shape;
}
}  // namespace

F32Tensor load_f32_tensor(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    const bool dir = std::filesystem::is_directory(path, ec);
    throw BadInput(fmt::format("{} {}: {}", flag, path, dir ? "is a directory" : "no such file"));
  }
  const uint64_t header = npy_header_bytes(path, flag);
  const std::vector<uint64_t> shape = npy_shape(path, flag, header, std::filesystem::file_size(path, ec));
  // The data: row-major little-endian float32, exactly the bytes after the header (npy_shape checked the count).
  // Read here rather than by xt::load_npy, which takes the 1.0 header length's bytes as signed chars and misreads
  // every length whose low byte is 0x80 or more (e.g. 182), refusing a valid file (found by the npy fuzz target).
  F32Tensor t;
  t.shape.assign(shape.begin(), shape.end());
  uint64_t elements = 1;
  for (const uint64_t d : shape) elements *= d;
  t.bits.resize(elements);
  std::ifstream in(path, std::ios::binary);
  in.seekg(std::streamoff(header));
  if (elements > 0) in.read(reinterpret_cast<char*>(t.bits.data()), std::streamsize(elements * 4));
  if (!in) throw BadInput(fmt::format("{} {}: cannot read the array's {} bytes", flag, path, elements * 4));
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
  if (!t.bits.empty()) std::memcpy(a.data(), t.bits.data(), t.bits.size() * 4);
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
