// Collective programs for the collective engine (queue cc, format "cc" in docs/isa.md) of a multi-chip system, and
// the launch of one program per chip through each chip's driver.
//
//   - make_collective_program: one all_reduce / all_gather / reduce_scatter on the cc queue, the same on every chip.
//   - make_gemm_allreduce_program: a data-parallel step, "compute beside collectives": each chip's TE and DMA queues
//     compute a GEMM into HBM (make_gemm_program) and its cc queue, released by the GEMM's drain semaphore,
//     all-reduces the FP32 output over the chips (docs/neuronlink.md "Collective instructions").
//   - run_on_chips: start() every chip's driver, then wait() each; a fault of one chip does not stop the others'
//     collection (the collective engines turn a stopped peer into CC_PEER_STOPPED faults, never a hang).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/gemm_kernel.h"

namespace trnsim::kernels {

/// An all_reduce / all_gather / reduce_scatter instruction (format "cc"). Throws std::invalid_argument for an opcode
/// that is not one of those three.
isa::Instruction cc_collective(isa::Opcode op, isa::DataType dtype, isa::CcAlgorithm algorithm, uint64_t hbm_addr,
                               uint64_t count);
/// send / recv of `bytes` bytes at `hbm_addr` to / from chip `peer`.
isa::Instruction cc_send(uint32_t peer, uint64_t hbm_addr, uint64_t bytes);
isa::Instruction cc_recv(uint32_t peer, uint64_t hbm_addr, uint64_t bytes);

/// Queue cc: {collective, halt}. The program of every chip of the system.
isa::Program make_collective_program(isa::Opcode op, isa::DataType dtype, isa::CcAlgorithm algorithm,
                                     uint64_t hbm_addr, uint64_t count);

/// The GEMM's ops (add_gemm) and, on queue cc after all of its drains (the Pipeline's semaphore wait), the
/// all_reduce of the FP32 output [M, N] at layout.out_hbm; every queue ends with halt. Throws like
/// make_gemm_program().
isa::Program make_gemm_allreduce_program(const driver::DeviceInfo& info, const GemmLayout& layout,
                                         isa::CcAlgorithm algorithm);

/// What one chip's run ended with: its RunResult, or the one-line error (a DeviceFault's what(), a DriverTimeout's)
/// and, for a device fault, its registers.
struct ChipRun {
  std::optional<driver::RunResult> result;
  std::string error;
  uint32_t err_code = 0, err_queue = 0, err_index = 0, err_info = 0;  ///< the DeviceFault's, 0 otherwise
};

/// Starts every driver's loaded program (Driver::start), then waits for each in chip order (Driver::wait with
/// `timeout_cycles`; the system runs every chip while it waits for one). Throws DriverError only for a driver with
/// no program.
/// `wait_all`, when given, runs after the starts and before the per-chip waits (a distributed host's system-wide
/// wait: workloads::HostGroup::wait_all).
std::vector<ChipRun> run_on_chips(const std::vector<driver::Driver*>& drivers, uint64_t timeout_cycles,
                                  const std::function<void()>& wait_all = {});

}  // namespace trnsim::kernels
