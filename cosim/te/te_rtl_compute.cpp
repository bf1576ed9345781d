#include "cosim/te/te_rtl_compute.h"

#include <cstdio>
#include <optional>
#include <stdexcept>

#include <fmt/core.h>

namespace trnsim::cosim {

TeRtlCompute::TeRtlCompute(int rows, int cols, const TeRtlOptions& options)
    : rtl_(TeRtl::create(rows, cols, options)) {}

uint64_t TeRtlCompute::load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                                       const std::vector<uint8_t>& scales) {
  const TeCommand load = stationary_command(dtype, k, m, rtl_->cols(), stationary, scales);
  const TeRunResult r = rtl_->run({load});
  m_ = m;
  issue_ = r.timing.at(0).last_beat_cycle - r.timing.at(0).cmd_cycle + 1;
  return r.timing.at(0).latency();
}

uint64_t TeRtlCompute::multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                                       const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                                       model::PsumWrite& psum_write, uint32_t instr_index) {
  const int rows = rtl_->rows(), cols = rtl_->cols();
  const TeCommand mult =
      moving_command(dtype, k, n, rows, moving, psum_write == model::PsumWrite::kAccumulate, scales);
  TeRunResult r;
  try {
    r = rtl_->run({mult});  // checks each beat's out_acc_o against cmd_acc_i
  } catch (const TeRtlError& e) {
    throw TeRtlError(fmt::format("instruction {}: {}", instr_index, e.what()));
  }
  // The PSUM write-back mode is the one the result beats came back with (all alike: run() checked each).
  psum_write = r.out_acc.at(0).at(0) != 0 ? model::PsumWrite::kAccumulate : model::PsumWrite::kOverwrite;
  const std::vector<uint32_t>& beats = r.results.at(0);
  out.resize(size_t(m_) * n);
  for (int mm = 0; mm < m_; ++mm)
    for (int nn = 0; nn < n; ++nn) out[size_t(mm) * n + nn] = beats[size_t(nn) * cols + mm];
  issue_ = r.timing.at(0).last_beat_cycle - r.timing.at(0).cmd_cycle + 1;
  return r.timing.at(0).latency();
}

TeLockstep::TeLockstep(std::unique_ptr<model::TeCompute> reference, std::unique_ptr<model::TeCompute> dut)
    : ref_(std::move(reference)), dut_(std::move(dut)) {
  if (ref_->rows() != dut_->rows() || ref_->cols() != dut_->cols()) {
    throw std::invalid_argument("TeLockstep: the two datapaths differ in size");
  }
}

namespace {
// The RTL engine's cycle counter when the DUT is the verilated engine (a window for the waveform), else nullopt.
std::optional<uint64_t> rtl_cycle(model::TeCompute& dut) {
  if (auto* rtl = dynamic_cast<TeRtlCompute*>(&dut)) return rtl->rtl().cycle();
  return std::nullopt;
}

// " (Tensor Engine RTL cycles A..B; re-run with --wave te.fst --wave-from A' --wave-to B')", or "" without RTL.
std::string rtl_where(std::optional<uint64_t> start, std::optional<uint64_t> end) {
  if (!start || !end) return "";
  const WaveWindow w{wave_window_around(*start, 20, 0).from, *end + 20};
  std::fprintf(stderr, "[ fail-at  ] block=te-lockstep cycle=%llu wave-from=%llu wave-to=%llu\n",
               static_cast<unsigned long long>(*start), static_cast<unsigned long long>(w.from),
               static_cast<unsigned long long>(w.to));
  return fmt::format(" (Tensor Engine RTL cycles {}..{}; re-run the same command with --wave te.fst --wave-from {} "
                     "--wave-to {})",
                     *start, *end, w.from, w.to);
}

// Throws "lockstep mismatch ..." when the two datapaths' issue_cycles() of the last command differ.
void compare_issue(const model::TeCompute& ref, const model::TeCompute& dut, const std::string& what,
                   std::optional<uint64_t> start, std::optional<uint64_t> end) {
  if (ref.issue_cycles() == dut.issue_cycles()) return;
  throw std::runtime_error(fmt::format("lockstep mismatch at {}: cycles to the next command expected {} (tlm), got {} "
                                       "(rtl){}", what, ref.issue_cycles(), dut.issue_cycles(), rtl_where(start, end)));
}
}  // namespace

uint64_t TeLockstep::load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                                     const std::vector<uint8_t>& scales) {
  const uint64_t want = ref_->load_stationary(dtype, k, m, stationary, scales);
  const auto start = rtl_cycle(*dut_);
  const uint64_t got = dut_->load_stationary(dtype, k, m, stationary, scales);
  if (want != got) {
    throw std::runtime_error(fmt::format("lockstep mismatch in load_stationary (k={}, m={}): cycles expected {} "
                                         "(tlm), got {} (rtl){}", k, m, want, got, rtl_where(start, rtl_cycle(*dut_))));
  }
  compare_issue(*ref_, *dut_, "load_stationary", start, rtl_cycle(*dut_));
  return want;
}

uint64_t TeLockstep::multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                                     const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                                     model::PsumWrite& psum_write, uint32_t instr_index) {
  std::vector<uint32_t> got;
  model::PsumWrite got_write = psum_write;
  const uint64_t want_cycles = ref_->multiply_moving(dtype, k, n, moving, scales, out, psum_write, instr_index);
  const auto start = rtl_cycle(*dut_);
  const uint64_t got_cycles = dut_->multiply_moving(dtype, k, n, moving, scales, got, got_write, instr_index);
  const auto end = rtl_cycle(*dut_);
  if (got.size() != out.size()) {
    throw std::runtime_error(fmt::format("lockstep mismatch at instruction {}: result sizes {} (tlm) and {} (rtl){}",
                                         instr_index, out.size(), got.size(), rtl_where(start, end)));
  }
  if (got_write != psum_write) {
    throw std::runtime_error(fmt::format("lockstep mismatch at instruction {}: PSUM write-back mode expected {} "
                                         "(tlm), got {} (rtl){}",
                                         instr_index, model::psum_write_name(psum_write),
                                         model::psum_write_name(got_write), rtl_where(start, end)));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != got[i]) {
      throw std::runtime_error(fmt::format(
          "lockstep mismatch at instruction {}: element [m={}, n={}] expected 0x{:08x} (tlm), got 0x{:08x} (rtl){}",
          instr_index, i / size_t(n), i % size_t(n), out[i], got[i], rtl_where(start, end)));
    }
  }
  if (want_cycles != got_cycles) {
    throw std::runtime_error(fmt::format("lockstep mismatch at instruction {}: cycles expected {} (tlm), got {} (rtl){}",
                                         instr_index, want_cycles, got_cycles, rtl_where(start, end)));
  }
  compare_issue(*ref_, *dut_, fmt::format("instruction {}", instr_index), start, end);
  return want_cycles;
}


}  // namespace trnsim::cosim
