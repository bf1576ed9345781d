#include "model/te/te_functional.h"

#include <cstring>
#include <stdexcept>

#include "model/fp/fp_ops.h"

namespace trnsim::model {

namespace {
float to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
}  // namespace

uint64_t TeFunctional::load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary) {
  if (k < 1 || k > rows_ || m < 1 || m > cols_ || stationary.size() != size_t(k) * m) {
    throw std::invalid_argument("TeFunctional::load_stationary: shape outside the array");
  }
  k_ = k;
  m_ = m;
  weights_.resize(stationary.size());
  for (size_t i = 0; i < stationary.size(); ++i) weights_[i] = to_float(fp::widen(dtype, stationary[i]));
  return TeTiming::load_stationary(k);
}

uint64_t TeFunctional::multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                                       std::vector<uint32_t>& out, uint32_t /*instr_index*/) {
  if (k != k_ || n < 1 || moving.size() != size_t(k) * n) {
    throw std::invalid_argument("TeFunctional::multiply_moving: shape does not match the loaded stationary");
  }
  std::vector<float> x(moving.size());
  for (size_t i = 0; i < moving.size(); ++i) x[i] = to_float(fp::widen(dtype, moving[i]));
  std::vector<float> acc(size_t(m_) * n, 0.0f);  // +0.0: the column sum's start (rule 3)
  for (int kk = 0; kk < k; ++kk) {
    const float* xr = &x[size_t(kk) * n];
    for (int mm = 0; mm < m_; ++mm) {
      const float w = weights_[size_t(kk) * m_ + mm];
      float* a = &acc[size_t(mm) * n];
      for (int nn = 0; nn < n; ++nn) {
        const float p = w * xr[nn];  // one RNE product (no contraction: -ffp-contract=off)
        a[nn] = a[nn] + p;           // one RNE sum, partitions in increasing order
      }
    }
  }
  out.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const uint32_t b = to_bits(acc[i]);
    out[i] = ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu)) ? fp::kF32Qnan : b;
  }
  return TeTiming::multiply_moving(rows_, cols_, n);
}

}  // namespace trnsim::model
