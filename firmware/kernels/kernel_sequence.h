// Workloads as sequences of programs: each step is one complete program (its engines run in parallel, ordered by
// semaphores, every queue ending in halt) that reads its inputs from HBM and leaves its outputs in HBM; the steps
// are launched one after another through the driver (load_program, run), so every intermediate tensor of a
// workload lives in HBM between two steps. The DMA-only steps workloads need between kernels (transposes, casts and
// re-layouts of HBM tensors by strided copies) are dma_program()s of the copies of dma_copies.h.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::kernels {

/// One program of a workload and what it computes.
struct KernelStep {
  std::string name;       ///< e.g. "qkv gemm", "softmax", "head 3 scores"
  isa::Program program;
  uint64_t macs = 0;      ///< Tensor Engine multiply-accumulates the step performs (for utilization figures)
};

using KernelSequence = std::vector<KernelStep>;

/// Appends `more` to `seq`.
void append(KernelSequence* seq, KernelSequence more);

/// What one launched step did.
struct StepRun {
  std::string name;
  driver::RunResult run;
  std::size_t instructions = 0;  ///< all queues
  uint64_t macs = 0;
};

/// The whole sequence: cycles and retired instructions summed over the steps (each run starts its cycle counter at
/// 0 after the driver's soft reset, so the sum is the device time of the steps back to back).
struct SequenceRun {
  uint64_t cycles = 0;
  uint64_t macs = 0;
  std::size_t instructions = 0;
  std::array<uint64_t, isa::kNumQueues> retired{};
  std::vector<StepRun> steps;
};

/// Loads and runs the steps in order, each with `timeout_cycles`; `on_step` (if set) is called after each step.
/// Throws the driver's errors (DeviceFault, DriverTimeout, ...) as they come; `failed_step` (if set) holds the index
/// of the step being run, so after a throw it names the step that failed.
SequenceRun run_sequence(driver::Driver& drv, const KernelSequence& seq, uint64_t timeout_cycles,
                         const std::function<void(const StepRun&)>& on_step = {}, std::size_t* failed_step = nullptr);

/// A BF16 GEMM step (gemm_kernel.h): out[M, N] FP32 = stationary[K, M]^T @ moving[K, N], row-major in HBM; its
/// MACs K * M * N. Throws like make_gemm_program.
KernelStep gemm_step(const driver::DeviceInfo& info, std::string name, int k, int m, int n, uint64_t stationary_hbm,
                     uint64_t moving_hbm, uint64_t out_hbm);

}  // namespace trnsim::kernels
