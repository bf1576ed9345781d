// Test data and comparison helpers shared by the softmax / norm / transpose kernel tests (host reference machine
// and SystemC model): seeded random tensors with optional special values, and a bit-exact comparison that prints
// the first mismatches.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/float_bits.h"
#include "firmware/isa/isa.h"

namespace trnsim::test {

inline uint32_t f32_bits(float f) { return golden::bits_from_float(f); }

/// Special FP32 values the kernels must carry through in their documented way.
inline const std::vector<uint32_t>& special_values() {
  static const std::vector<uint32_t> v{
      0x7FC00000u,        // NaN
      0x7FA00001u,        // signalling NaN with a payload
      0x7F800000u,        // +inf
      0xFF800000u,        // -inf
      0x80000000u,        // -0
      0x00000000u,        // +0
      0x00000001u,        // smallest subnormal
      0x807FFFFFu,        // largest negative subnormal
      0x7F7FFFFFu,        // FLT_MAX
      0xFF7FFFFFu,        // -FLT_MAX
      f32_bits(88.8f),    // exp overflows past this
      f32_bits(-104.0f),  // exp underflows to a subnormal / 0
      f32_bits(1e30f),   f32_bits(-1e30f),
  };
  return v;
}

/// `n` random elements of `type` (patterns): normal(0, sigma) values cast to the type; with `specials`, about one
/// element in `special_every` is replaced by a special value (cast too).
inline std::vector<uint32_t> random_elements(isa::DataType type, std::size_t n, std::mt19937_64& rng,
                                             float sigma = 2.0f, bool specials = false, int special_every = 7) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<uint32_t> v(n);
  const auto& sp = special_values();
  for (auto& x : v) {
    uint32_t f = f32_bits(dist(rng));
    if (specials && rng() % uint64_t(special_every) == 0) f = sp[rng() % sp.size()];
    x = type == isa::DataType::kFp32 ? f : golden::element_from_f32(type, f, true);
  }
  return v;
}

/// Bit-exact comparison of two [rows, cols] pattern tensors; reports up to 5 mismatches and returns their count.
inline std::size_t expect_same_bits(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want, int cols,
                                    const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      if (++bad <= 5) {
        ADD_FAILURE() << fmt::format("{}: [{}][{}] = {:#010x}, golden {:#010x}", what, i / std::size_t(cols),
                                     i % std::size_t(cols), got[i], want[i]);
      }
    }
  }
  if (bad > 5) ADD_FAILURE() << fmt::format("{}: {} mismatches in all", what, bad);
  return bad;
}

}  // namespace trnsim::test
