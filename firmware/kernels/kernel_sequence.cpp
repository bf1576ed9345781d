// Workloads as sequences of programs (kernel_sequence.h).
#include "firmware/kernels/kernel_sequence.h"

#include "firmware/kernels/gemm_kernel.h"

namespace trnsim::kernels {

void append(KernelSequence* seq, KernelSequence more) {
  for (auto& s : more) seq->push_back(std::move(s));
}

SequenceRun run_sequence(driver::Driver& drv, const KernelSequence& seq, uint64_t timeout_cycles,
                         const std::function<void(const StepRun&)>& on_step, std::size_t* failed_step) {
  SequenceRun total;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const KernelStep& step = seq[i];
    if (failed_step) *failed_step = i;
    StepRun r;
    r.name = step.name;
    r.macs = step.macs;
    for (const auto& q : step.program.queues) r.instructions += q.size();
    drv.load_program(step.program);
    r.run = drv.run(timeout_cycles);
    total.cycles += r.run.cycles;
    total.macs += r.macs;
    total.instructions += r.instructions;
    for (std::size_t q = 0; q < total.retired.size(); ++q) total.retired[q] += r.run.retired[q];
    if (on_step) on_step(r);
    total.steps.push_back(std::move(r));
  }
  return total;
}

KernelStep gemm_step(const driver::DeviceInfo& info, std::string name, int k, int m, int n, uint64_t stationary_hbm,
                     uint64_t moving_hbm, uint64_t out_hbm) {
  GemmLayout g;
  g.dtype = isa::Dtype::kBf16;
  g.k = k;
  g.m = m;
  g.n = n;
  g.stationary_hbm = stationary_hbm;
  g.moving_hbm = moving_hbm;
  g.out_hbm = out_hbm;
  return {std::move(name), make_gemm_program(info, g), uint64_t(k) * uint64_t(m) * uint64_t(n)};
}

}  // namespace trnsim::kernels
