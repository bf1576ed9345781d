// Random narrow operands for the device tests: N(0, sigma^2) FP32 values rounded once to the type (RNE, saturating;
// BRIEF section 3 rule 6, by the golden narrowing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "firmware/golden/fp_golden.h"
#include "firmware/isa/dtype.h"
#include "firmware/kernels/gemm_launch.h"

namespace trnsim::test {

/// `count` bit patterns of `dtype` (FP8 in the low 8 bits) drawn from N(0, sigma^2) with `rng`.
inline std::vector<uint16_t> random_narrow(isa::Dtype dtype, std::size_t count, std::mt19937_64& rng,
                                           float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<uint16_t> v(count);
  for (auto& x : v) {
    const float f = dist(rng);
    uint32_t b = 0;
    std::memcpy(&b, &f, 4);
    x = golden::narrow_from_f32(dtype, b, true);
  }
  return v;
}

/// `count` FP32 bit patterns that BF16 holds exactly (random bits rounded to BF16 and widened back: any exponent,
/// NaN and Inf included), e.g. a P to accumulate into.
inline std::vector<uint32_t> random_bf16_exact_f32(std::size_t count, std::mt19937_64& rng) {
  std::vector<uint32_t> v(count);
  for (auto& x : v) {
    x = golden::widen_to_f32(isa::Dtype::kBf16, golden::narrow_from_f32(isa::Dtype::kBf16, uint32_t(rng()), true));
  }
  return v;
}

/// A GEMM's host operands: stationary [K, M] and moving [K, N] of `dtype` from random_narrow (no P, no scales).
inline kernels::GemmHostOperands random_gemm_operands(isa::Dtype dtype, int k, int m, int n, std::mt19937_64& rng) {
  kernels::GemmHostOperands ops;
  ops.dtype = dtype;
  ops.k = k;
  ops.m = m;
  ops.n = n;
  ops.stationary = random_narrow(dtype, std::size_t(k) * m, rng);
  ops.moving = random_narrow(dtype, std::size_t(k) * n, rng);
  return ops;
}

}  // namespace trnsim::test
