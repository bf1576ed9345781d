// NumPy .npy version 1.0 files for the command-line tests: a writer of little-endian arrays of any rank and a
// reader of float32 ones (format: numpy.org/neps/nep-0001). Paths are scratch files of the running test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace trnsim::test {

inline std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dims;  // NumPy writes "(3, 4)" and "(5,)"
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += char(1);
  h += char(0);
  h += char(dict.size() & 0xFF);
  h += char(dict.size() >> 8);
  return h + dict;
}
inline std::string npy_header(const std::string& descr, int64_t rows, int64_t cols) {
  return npy_header(descr, std::vector<int64_t>{rows, cols});
}

/// Writes float32 bit patterns as an array of `shape` to `path`.
inline void write_npy_to(const std::string& path, const std::vector<uint32_t>& bits, const std::vector<int64_t>& shape) {
  std::ofstream f(path, std::ios::binary);
  f << npy_header("<f4", shape);
  f.write(reinterpret_cast<const char*>(bits.data()), std::streamsize(bits.size() * 4));
}

/// Writes a [rows, cols] float32 array to a fresh scratch file and returns its path.
inline std::string write_npy(const std::vector<uint32_t>& bits, int64_t rows, int64_t cols) {
  const std::string path = next_scratch(".npy");
  write_npy_to(path, bits, {rows, cols});
  return path;
}

/// The `count` float32 values of a .npy file (checks the dtype and the size).
inline std::vector<uint32_t> read_npy_f32(const std::string& path, size_t count) {
  const std::string bytes = slurp(path);
  const size_t header = bytes.size() >= 10 ? 10 + (uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8)) : 0;
  EXPECT_NE(bytes.find("'descr': '<f4'"), std::string::npos) << path;
  EXPECT_EQ(bytes.size(), header + count * 4) << path;
  std::vector<uint32_t> v(count);
  if (bytes.size() >= header + count * 4) std::memcpy(v.data(), bytes.data() + header, count * 4);
  return v;
}

}  // namespace trnsim::test
