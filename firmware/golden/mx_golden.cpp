// Golden MX quantization (mx_golden.h), written from BRIEF section 3 rule 10.
#include "firmware/golden/mx_golden.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "firmware/golden/float_bits.h"
#include "firmware/golden/fp_golden.h"

namespace trnsim::golden {

int mx_emax(isa::Dtype mx) {
  switch (mx) {
    case isa::Dtype::kMxFp8E4M3: return 8;   // max 448 = 1.75 * 2^8
    case isa::Dtype::kMxFp8E5M2: return 15;  // max 57344 = 1.75 * 2^15
    case isa::Dtype::kMxFp4: return 2;       // max 6 = 1.5 * 2^2
    default: break;
  }
  throw std::invalid_argument("golden: " + std::string(isa::dtype_name(mx)) + " is not an MX type");
}

MxTensor quantize_mx(isa::Dtype mx, int k, int f, const std::vector<uint32_t>& values) {
  const int emax = mx_emax(mx);
  if (k < 1 || f < 1 || values.size() != size_t(k) * size_t(f)) {
    throw std::invalid_argument("golden::quantize_mx: values must hold K * F elements, K and F >= 1");
  }
  const int block = int(isa::kMxBlockSize);
  const int blocks = int(isa::mx_blocks(unsigned(k)));
  const uint16_t sign_bit = mx == isa::Dtype::kMxFp4 ? 0x8 : 0x80;
  MxTensor t;
  t.elements.assign(values.size(), 0);
  t.scales.assign(size_t(blocks) * size_t(f), 0);
  for (int b = 0; b < blocks; ++b) {
    const int k0 = b * block, k1 = std::min(k, k0 + block);
    for (int c = 0; c < f; ++c) {
      auto at = [&](int r) { return size_t(r) * size_t(f) + size_t(c); };
      bool special = false;
      double amax = 0.0;
      for (int r = k0; r < k1; ++r) {
        const float v = float_from_bits(values[at(r)]);
        if (!std::isfinite(v)) special = true;
        amax = std::max(amax, std::fabs(double(v)));
      }
      uint8_t code;
      if (special) {
        code = isa::kE8M0Nan;  // elements stay 0
      } else if (amax == 0.0) {
        code = 0;
        for (int r = k0; r < k1; ++r) {
          t.elements[at(r)] = std::signbit(float_from_bits(values[at(r)])) ? sign_bit : 0;
        }
      } else {
        const int e = std::ilogb(amax);  // floor(log2 amax), exact for subnormal FP32 values too
        code = uint8_t(std::clamp(e - emax + 127, 0, 254));
        for (int r = k0; r < k1; ++r) {
          t.elements[at(r)] = narrow_scaled(mx, values[at(r)], int(code) - 127, /*saturate=*/true);
        }
      }
      t.scales[size_t(b) * size_t(f) + size_t(c)] = code;
    }
  }
  return t;
}

double mx_value(isa::Dtype mx, uint16_t code, uint8_t scale) {
  if (scale == isa::kE8M0Nan) return std::numeric_limits<double>::quiet_NaN();
  const float e = float_from_bits(widen_to_f32(mx, code));  // exact; NaN stays NaN
  return std::ldexp(double(e), int(scale) - 127);
}

}  // namespace trnsim::golden
