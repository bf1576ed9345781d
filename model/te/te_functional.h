// Functional + cycle-timed TLM model of the Tensor Engine datapath.
//
// Bit-exact with the RTL and the golden GEMM (BRIEF section 3 rules 1-3, 5): inputs widen exactly to FP32 (the
// model's own conversion, model/fp, through a table built once per dtype), each product and each sum is one host
// binary32 operation (round to nearest even, gradual underflow; a multiply and a separate add, never a fused
// multiply-add: the project builds with -ffp-contract=off and the kernels use no FMA instructions), every column sum
// starts at +0.0 and adds partitions 0..K-1 in increasing order; NaN results become 0x7FC00000. FP8 passes contract
// up to 2 * rows partitions (rule 8, double-row): the PE adds its two products one after the other, so the pass's
// sum is still partitions 0..K-1 in order, which is what the kernels below compute for any K.
//
// Speed: the sums are computed by a register-blocked kernel (a block of MB output rows x NB output columns held in
// vector registers for the whole k loop) on operands packed at load/multiply time. Only the order of independent
// column sums differs from the textbook loop; each sum still sees its partitions in increasing order. The kernel is
// chosen at run time from what the CPU supports (AVX-512F, AVX2, or portable 128-bit vectors), so the binary runs
// on any x86-64; every kernel gives the same bits (tests/model/te_functional_test.cpp runs them all).
//
// MX dtypes (rule 10): the product a * 2^(ca - 127) * b * 2^(cb - 127) is rounded once to FP32. When both scaled
// operands are FP32 values (the common case: the scaled element neither overflows FP32 nor loses bits below its
// subnormal range), one FP32 multiply of the scaled operands is that rounding, so the same kernels run on operands
// widened through a table indexed by (scale, element). Otherwise the pass takes a scalar path that forms the exact
// product in double (at most 8 significant bits) and rounds it to FP32.
#pragma once

#include <string>
#include <vector>

#include "model/te/te_compute.h"

namespace trnsim::model {

class TeFunctional : public TeCompute {
 public:
  TeFunctional(int rows, int cols);
  int rows() const override { return rows_; }
  int cols() const override { return cols_; }
  std::string name() const override { return "tlm"; }
  bool supports(isa::Dtype dtype) const override { return isa::is_te_dtype(dtype); }
  using TeCompute::load_stationary;
  /// Throws std::invalid_argument for a shape outside the array or scales of the wrong size.
  uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                           const std::vector<uint8_t>& scales) override;
  using TeCompute::multiply_moving;
  /// `psum_write` comes back as it went in: the datapath carries the mode with the result columns.
  uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                           const std::vector<uint8_t>& scales, std::vector<uint32_t>& out, PsumWrite& psum_write,
                           uint32_t instr_index) override;
  uint64_t issue_cycles() const override { return issue_; }

  /// Kernels this CPU can run, fastest first ("avx512", "avx2", "generic"; "generic" always).
  static std::vector<std::string> available_kernels();
  /// The kernel new instances use: the first of available_kernels().
  static const char* kernel_name();
  /// Name of the kernel this instance uses.
  const char* kernel() const;
  /// Selects one of available_kernels() for this instance (tests, benchmarks); false if unknown or unsupported.
  bool use_kernel(const std::string& name);

 private:
  void pack_weights();

  int rows_, cols_;
  int k_ = 0, m_ = 0;
  uint64_t issue_ = 0;         ///< issue_cycles() of the last command
  int kernel_ = 0;             ///< index into the kernel table (te_functional.cpp)
  isa::Dtype dtype_ = isa::Dtype::kBf16;
  std::vector<uint16_t> stationary_;  ///< [k, m] as loaded (MX: scale << 8 | element; kept to re-pack)
  bool stationary_exact_ = true;      ///< MX: every scaled stationary element is an FP32 value (fast kernels)
  std::vector<float> wpack_;          ///< stationary widened and packed: [m / MB][k][MB], zero-padded in m
  std::vector<float> xpack_;          ///< moving widened and packed: [n / NB][k][NB], zero-padded in n (scratch)
};

}  // namespace trnsim::model
