// Shared helpers for the Tensor Engine tests: operand generators (seeds: tests/support/test_seed.h).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/isa/dtype.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {

/// A random finite, non-NaN pattern of `dt`, most of them of moderate magnitude (exponent near the bias), so sums
/// stay finite and rounding is exercised; one in eight draws from the whole finite range (subnormals, max).
inline uint16_t random_finite(isa::Dtype dt, std::mt19937_64& rng) {
  const bool wide = (rng() & 7u) == 0;
  for (;;) {
    const uint32_t r = static_cast<uint32_t>(rng());
    uint16_t bits = 0;
    switch (dt) {
      case isa::Dtype::kBf16: {
        // sign | exponent | 7-bit mantissa; moderate: exponent 127 +- 4
        const uint32_t exp = wide ? (r >> 8) % 255u : 123u + (r >> 8) % 9u;
        bits = static_cast<uint16_t>(((r >> 31) << 15) | (exp << 7) | (r & 0x7Fu));
        break;
      }
      case isa::Dtype::kFp16: {
        const uint32_t exp = wide ? (r >> 10) % 31u : 11u + (r >> 10) % 9u;
        bits = static_cast<uint16_t>(((r >> 31) << 15) | (exp << 10) | (r & 0x3FFu));
        break;
      }
      case isa::Dtype::kFp8E4M3:
      case isa::Dtype::kMxFp8E4M3: {
        const uint32_t exp = wide ? (r >> 3) % 16u : 5u + (r >> 3) % 5u;
        bits = static_cast<uint16_t>(((r >> 31) << 7) | (exp << 3) | (r & 0x7u));
        if ((bits & 0x7Fu) == 0x7Fu) continue;  // S.1111.111 is NaN
        break;
      }
      case isa::Dtype::kFp8E5M2:
      case isa::Dtype::kMxFp8E5M2: {
        const uint32_t exp = wide ? (r >> 2) % 31u : 13u + (r >> 2) % 5u;
        bits = static_cast<uint16_t>(((r >> 31) << 7) | (exp << 2) | (r & 0x3u));
        break;
      }
      case isa::Dtype::kMxFp4:  // E2M1: all 16 codes are finite
        bits = static_cast<uint16_t>(r & 0xFu);
        break;
      case isa::Dtype::kFp32:  // not a narrow (TE operand) type
        break;
    }
    return bits;
  }
}

inline std::vector<uint16_t> random_tensor(isa::Dtype dt, size_t count, std::mt19937_64& rng) {
  std::vector<uint16_t> v(count);
  for (uint16_t& x : v) x = random_finite(dt, rng);
  return v;
}

/// Special values of each dtype: +-0, smallest subnormal, largest finite, +-Inf (where the format has it), NaN.
inline std::vector<uint16_t> special_values(isa::Dtype dt) {
  switch (dt) {
    case isa::Dtype::kBf16:  // 0, -0, min subnormal, -min subnormal, max, -max, +Inf, -Inf, NaN, 1.0
      return {0x0000, 0x8000, 0x0001, 0x8001, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80};
    case isa::Dtype::kFp16:
      return {0x0000, 0x8000, 0x0001, 0x8001, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00};
    case isa::Dtype::kFp8E4M3:  // max 448 = 0x7E; NaN = 0x7F; no Inf
    case isa::Dtype::kMxFp8E4M3:
      return {0x00, 0x80, 0x01, 0x81, 0x7E, 0xFE, 0x7F, 0x38};
    case isa::Dtype::kFp8E5M2:  // max 57344 = 0x7B; Inf = 0x7C
    case isa::Dtype::kMxFp8E5M2:
      return {0x00, 0x80, 0x01, 0x81, 0x7B, 0xFB, 0x7C, 0xFC, 0x7E, 0x3C};
    case isa::Dtype::kMxFp4:  // E2M1: 0, -0, 0.5 (subnormal), -0.5, max 6, -6, 1.0
      return {0x0, 0x8, 0x1, 0x9, 0x7, 0xF, 0x2};
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return {};
}

/// Hex rendering of FP32 bits for failure messages.
inline std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

}  // namespace trnsim::test
