// The verilated Tensor Engine as the chip model's TE datapath: the transactor from the model's TE commands
// (tensors read from SBUF) to the engine's pins (TeRtl drives the valid/ready streams cycle by cycle).
#pragma once

#include <memory>

#include "cosim/te/te_rtl.h"
#include "model/te/te_compute.h"

namespace trnsim::cosim {

class TeRtlCompute : public model::TeCompute {
 public:
  /// Creates the verilated engine of rows x cols (TeRtlError if this binary was not built with that size).
  TeRtlCompute(int rows, int cols, const TeRtlOptions& options = {});
  int rows() const override { return rtl_->rows(); }
  int cols() const override { return rtl_->cols(); }
  std::string name() const override { return "rtl"; }
  /// Cycles = the command's latency on the pins (cmd handshake .. last beat), which the TE tests assert equals
  /// model::TeTiming. Every TE dtype, the MX ones with their per-element scales (BRIEF section 3 rule 10).
  bool supports(isa::Dtype dtype) const override { return isa::is_te_dtype(dtype); }
  using TeCompute::load_stationary;
  uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                           const std::vector<uint8_t>& scales) override;
  using TeCompute::multiply_moving;
  /// Drives cmd_acc_i from `psum_write`; every result beat's out_acc_o must match it (else TeRtlError naming the
  /// instruction and the cycle), and `psum_write` returns the mode the beats carried. Engine failures are TeRtlError
  /// "instruction N: ...".
  uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                           const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                           model::PsumWrite& psum_write, uint32_t instr_index) override;
  /// Measured: the command's handshake to its last stationary/moving beat, inclusive.
  uint64_t issue_cycles() const override { return issue_; }
  TeRtl& rtl() { return *rtl_; }

 private:
  std::unique_ptr<TeRtl> rtl_;
  int m_ = 0;
  uint64_t issue_ = 0;
};

/// Runs the TLM datapath and the RTL side by side and stops at the first difference in result bits or cycles.
class TeLockstep : public model::TeCompute {
 public:
  TeLockstep(std::unique_ptr<model::TeCompute> reference, std::unique_ptr<model::TeCompute> dut);
  int rows() const override { return ref_->rows(); }
  int cols() const override { return ref_->cols(); }
  std::string name() const override { return "lockstep"; }
  bool supports(isa::Dtype dtype) const override { return ref_->supports(dtype) && dut_->supports(dtype); }
  using TeCompute::load_stationary;
  uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                           const std::vector<uint8_t>& scales) override;
  using TeCompute::multiply_moving;
  /// Throws std::runtime_error "lockstep mismatch ..." naming the instruction index, the PSUM write-back modes, the
  /// element [m, n], the expected (TLM) and got (RTL) bits, or the two cycle counts.
  uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                           const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                           model::PsumWrite& psum_write, uint32_t instr_index) override;
  /// The reference's (the two were compared after the command: a difference is a lockstep mismatch).
  uint64_t issue_cycles() const override { return ref_->issue_cycles(); }

 private:
  std::unique_ptr<model::TeCompute> ref_, dut_;
};

}  // namespace trnsim::cosim
