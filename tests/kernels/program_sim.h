// Test-side analysis of device programs, independent of the model: a happens-before race checker, a bounds
// checker, a semaphore/deadlock check, a functional reference execution and a timing estimate.
//
// Semantics assumed (the device's execution contract, docs/driver.md "Device execution semantics"):
//   - each queue runs its instructions in program order; the te, dma, act and vec queues run concurrently;
//   - a TE, Vector (vec) or Scalar (act) instruction reads and writes its memory while it runs and has finished
//     before the next one of its queue starts; the operands of vec/act instructions are their tensor and column
//     operands in SBUF or PSUM (docs/isa.md "Tensor operands");
//   - a dma_copy only *issues* in order: its reads and writes complete at an unknown later time, before the next
//     sem_signal or halt of the dma queue (those wait for every copy issued before them); a copy with a completion
//     semaphore (done_sem) adds 1 to it when it lands, in any order with the other copies;
//   - sem_wait blocks until the counter >= value; counters start at 0 and only grow.
// Two accesses to the same byte, at least one a write, race unless one is known complete before the other starts
// through program order (te), a dma barrier, or a signal -> wait chain. The check covers every timing, not one run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::test {

/// A memory area a program may touch: partitions [p0, p1) x byte offsets [lo, hi) of one space (HBM: p0 = 0,
/// p1 = 1, offsets are HBM addresses).
struct Area {
  isa::MemSpace space = isa::MemSpace::kHbm;
  uint32_t p0 = 0, p1 = 1;
  uint64_t lo = 0, hi = 0;
  bool readable = true, writable = true;
  std::string name;
};

struct ProgramCheckOptions {
  std::vector<Area> areas;  ///< every access must lie inside an area that allows it (empty: only device bounds)
  int max_errors = 10;
};

/// Result of check_program(): problems in program order, at most max_errors of them (plus a count).
struct ProgramCheck {
  std::vector<std::string> errors;
  uint64_t error_count = 0;
  uint64_t instructions = 0;
  uint64_t access_runs = 0;  ///< contiguous byte runs examined
  bool ok() const { return error_count == 0; }
  std::string summary() const;  ///< the errors, one per line
};

/// Checks a program without running it on a device: isa::validate and engine_accepts of every instruction, halt
/// at the end of every non-empty queue, one signalling queue per semaphore (or only copies, as their done_sem, in
/// batches the dma queue waits for before the next: program_sim.cpp, Untimed), device limits (TE shape, PSUM banks,
/// memory bounds, the Vector/Scalar quadrant rule), `options.areas`, that every sem_wait is eventually satisfied
/// (no deadlock under any timing), and that no two accesses race.
ProgramCheck check_program(const driver::DeviceInfo& info, const isa::Program& program,
                           const ProgramCheckOptions& options = {});

/// Memories of the functional reference machine (all bytes, little-endian).
struct RefMemory {
  std::vector<uint8_t> hbm;   ///< HBM [0, hbm.size()); accesses past it throw
  std::vector<uint8_t> sbuf;  ///< partitions x partition bytes
  std::vector<uint8_t> psum;
};

/// Executes a (race-free, checked) program functionally in the numerics of BRIEF section 3 and returns the final
/// memories. `hbm` is the initial HBM image. Uses golden widening/narrowing and host FP32 arithmetic (no FMA); the
/// Vector and Scalar instructions through the golden engine functions (golden::alu, reduce, activation_device...).
/// Throws std::runtime_error on a deadlock or an access outside the memories.
RefMemory run_reference(const driver::DeviceInfo& info, const isa::Program& program, std::vector<uint8_t> hbm);

/// The areas of a program that carries a prefetch (docs/kernels.md "Weights resident in SBUF"): all of HBM and PSUM,
/// its own SBUF bytes below `sbuf_end` (read and write), and above it only the prefetch's writes.
ProgramCheckOptions prefetch_areas(const driver::DeviceInfo& info, uint32_t sbuf_end);

/// The rows of a [k, n] BF16/FP16 operand (HBM `src`, rows dense) that `mem`'s SBUF does not hold where
/// sbuf_operand_copies puts them (K tile t of `k_tile` rows on partitions 0.. at `sbuf` + t * `tile_bytes`, columns
/// dense): a prefetch's landing, checked on the reference machine. Returns the first few such row indices.
std::vector<int> operand_rows_missing(const driver::DeviceInfo& info, const RefMemory& mem,
                                      const std::vector<uint8_t>& hbm, uint64_t src, int k, int n, int k_tile,
                                      uint32_t sbuf, uint32_t tile_bytes);

/// Bytes the DMA copies of `program` read from HBM addresses [lo, hi) (by each copy's first source byte): what a
/// step loads of a tensor it should find elsewhere.
uint64_t hbm_bytes_read(const isa::Program& program, uint64_t lo, uint64_t hi);

/// Cost figures of the timing estimate beyond the device's own (DeviceInfo: clocks, DMA latency and bandwidth).
struct CostModel {
  uint64_t issue_cycles = 1;       ///< every instruction, before it executes (a copy: before it is handed over)
};

struct TimingEstimate {
  uint64_t cycles = 0;         ///< until every queue halted
  uint64_t te_busy = 0;        ///< cycles the TE spent in load_stationary / multiply_moving
  uint64_t te_stall = 0;       ///< cycles the te queue waited on semaphores
  uint64_t macs = 0;           ///< multiply-accumulates of multiply_moving (k * M * N each)
  uint64_t dma_copies = 0;
  uint64_t dma_bytes = 0;
  double te_utilization() const { return cycles == 0 ? 0.0 : double(te_busy) / double(cycles); }
  double mac_utilization(const driver::DeviceInfo& info) const {
    return cycles == 0 ? 0.0 : double(macs) / (double(cycles) * info.te_rows * info.te_cols);
  }
};

/// Estimates the run time of a program under the device's execution semantics: every instruction 1 issue cycle,
/// then the TE's two sequencers (isa::TeStream): a load_stationary is taken once the previous load is done and the
/// swapping multiply took its first column, its k beats (FP8: ceil(k / 2)) follow, beat j no earlier than cols + 1 +
/// j cycles after that column and the last no earlier than rows + cols; a multiply_moving is taken once both are
/// idle, streams N columns, its results rows + cols + 1 cycles behind; an instruction retires when taken, the te
/// queue's halt (and a signal to another core) waits for all of it, its sem_signal of its own core lands when all of
/// it is done while the queue goes on; Vector/Scalar instructions
/// their docs/isa.md costs in TE cycles, each copy latency + bytes / bandwidth
/// (bytes of the wider element type) on the earliest free of num_dma_engines engines (the dma queue stalls while
/// all are busy). Throws on a deadlock.
TimingEstimate estimate_timing(const driver::DeviceInfo& info, const isa::Program& program,
                               const CostModel& cost = {});

}  // namespace trnsim::test
