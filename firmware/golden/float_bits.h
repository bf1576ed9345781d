// Bit casts between FP32 patterns and host floats, shared by the golden kernels (C++17 has no std::bit_cast).
#pragma once

#include <cstdint>
#include <cstring>

namespace trnsim::golden {

inline float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t bits_from_float(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

}  // namespace trnsim::golden
