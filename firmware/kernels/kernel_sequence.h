// Workloads as sequences of programs: each step is one complete program (its engines run in parallel, ordered by
// semaphores, every queue ending in halt) that reads its inputs from HBM and leaves its outputs in HBM; the steps
// are launched one after another through the driver (load_program, run), so every intermediate tensor of a
// workload lives in HBM between two steps. Steps that do not depend on each other form a wave, whose steps run on
// the cores of a chip at the same time (docs/kernels.md "Sequences over cores"). The DMA-only steps workloads need
// between kernels (transposes, casts and re-layouts of HBM tensors by strided copies) are dma_program()s of the
// copies of dma_copies.h.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/gemm_kernel.h"

namespace trnsim::kernels {

/// One program of a workload and what it computes.
struct KernelStep {
  std::string name;       ///< e.g. "qkv gemm", "softmax", "head 3 scores"
  isa::Program program;
  uint64_t macs = 0;      ///< Tensor Engine multiply-accumulates the step performs (for utilization figures)
  /// The step belongs to the wave of the step before it: it reads nothing an earlier step of the wave writes and
  /// writes nothing such a step reads or writes, so run_sequence may run it on another core at the same time.
  bool with_previous = false;
  /// The core (an index into run_sequence's `cores`) the step must run on, or -1: any. A step that finds data an
  /// earlier step left in its core's SBUF (AttentionLayout::prefetch) is pinned, and so are the steps that leave it.
  int core = -1;
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
  int core = 0;          ///< index into run_sequence's `cores`
  std::size_t index = 0;  ///< the step's index in the sequence
  /// TE cycles the step adds to the sequence's time: how far its end lies past the latest end of the steps of its
  /// wave that ended before it (0 when it ended earlier); over a wave they sum to the wave's time (one core:
  /// run.cycles).
  uint64_t elapsed = 0;
};

/// The whole sequence. Each run starts its cycle counter at 0 after the driver's soft reset; `cycles`, the sum over
/// the waves of each wave's time (from its first doorbell to its last step's end), is the device time of the
/// sequence (one core: the steps back to back). `steps` are in the order they ended.
struct SequenceRun {
  uint64_t cycles = 0;
  uint64_t macs = 0;
  std::size_t instructions = 0;
  std::array<uint64_t, isa::kNumQueues> retired{};
  std::vector<StepRun> steps;
  /// Per core of `cores`: its runs summed (cycles it was busy, instructions it retired) and its MACs.
  std::vector<driver::RunResult> core_runs;
  std::vector<uint64_t> core_macs;
};

/// Runs the steps in order over the cores `cores` (drivers of distinct cores of one chip, each through a CoreDevice
/// view, core 0's first; with several, each allocates from its own region, and every core reads and writes all of
/// HBM). A wave (a step and the KernelStep::with_previous steps after it) runs as a work list: cores[0], cores[1],
/// ... each take the wave's first step they may run (any step not pinned to another core, KernelStep::core) and
/// start it; whenever one of them ends (Driver::wait_first), that core takes its next such step at once. The next wave starts when every step of the wave has ended, so every step sees
/// what earlier waves wrote. A step's timeout is `timeout_cycles` from its doorbell. `on_step` (if set) is called
/// after each step ends. Throws std::invalid_argument for an empty `cores` or a step pinned to a core past them, and
/// the drivers' errors (DeviceFault,
/// DriverTimeout, ...) as they come; `failed_step` (if set) holds the index of the step being collected, so after a
/// throw it names the step that failed.
SequenceRun run_sequence(const std::vector<driver::Driver*>& cores, const KernelSequence& seq,
                         uint64_t timeout_cycles, const std::function<void(const StepRun&)>& on_step = {},
                         std::size_t* failed_step = nullptr);
/// One core: the steps one after another.
SequenceRun run_sequence(driver::Driver& drv, const KernelSequence& seq, uint64_t timeout_cycles,
                         const std::function<void(const StepRun&)>& on_step = {}, std::size_t* failed_step = nullptr);

/// Rows per core when `rows` rows are split over `cores` cores in whole tiles of `tile` rows (a GEMM's M by the TE's
/// columns, an element-wise kernel's rows by the SBUF partitions), spread as evenly as they go: core c takes rows
/// [c * per, min(rows, (c + 1) * per)), so the last cores may take fewer or none (docs/kernels.md "Multi-core GEMM").
int rows_per_core(int rows, int tile, int cores);

/// A row-wise step split over `cores` cores (rows_per_core with tiles of `tile` rows): `make(r0, n)` returns the
/// step of rows [r0, r0 + n) (program and MACs); each gets `name`, and the ones after the first are with_previous.
/// For kernels whose rows are independent and whose row ranges of every tensor are contiguous in HBM.
KernelSequence row_split_steps(const std::string& name, int rows, int tile, int cores,
                               const std::function<KernelStep(int r0, int n)>& make);

/// Columns per piece of a GEMM split by N are a multiple of this (64 bytes of BF16).
constexpr int kGemmSplitColumns = 32;

/// One core's share of a GEMM split over the cores of a chip (split_gemm): output rows [m0, m0 + layout.m) and
/// columns [n0, n0 + layout.n).
struct GemmPiece {
  int m0 = 0, n0 = 0;
  GemmLayout layout;  ///< the block, reading its columns of the operands and writing its block of the output in place
};

/// `whole` split over up to `cores` cores (docs/kernels.md "Multi-core GEMM") into a grid of output blocks,
/// m_parts x n_parts <= cores: M in whole TE-column tiles (rows_per_core), N in multiples of kGemmSplitColumns and
/// only into pieces whose share of the moving operand is at least a quarter of what the DMA engines move in one start
/// latency (dma_latency_bytes; 478 KB on trn2), never for a softmax epilogue (whole rows). Of the grids, the one
/// whose largest block has the fewest TE cycles, then the fewest operand and output bytes per core, then the most M
/// parts. Each piece reads its columns of the stationary and moving tensors and of their MX scales in place
/// (GemmLayout::stationary_ld, moving_ld) and writes its block of the output (out_ld); an epilogue's bias and
/// residual follow the block, a softmax's causal offset its first row. Every element keeps all of K in the one-core
/// order, so the result is bit for bit the whole GEMM's (a K split would change the order: not used). Throws
/// std::invalid_argument for cores < 1 or an empty shape.
std::vector<GemmPiece> split_gemm(const driver::DeviceInfo& info, const GemmLayout& whole, int cores);

/// `whole` cut into the grid of blocks of m_per rows and n_per columns (the last ones ragged), as split_gemm cuts it
/// once it has chosen them, in row-major order of the grid; an operand in SBUF (stationary_in_sbuf, moving_in_sbuf)
/// is read in place like one in HBM, each block's columns of it. Throws std::invalid_argument for sizes < 1.
std::vector<GemmPiece> split_gemm_grid(const GemmLayout& whole, int m_per, int n_per);

/// The layout of a dense BF16 GEMM out[M, N] = stationary[K, M]^T @ moving[K, N] in HBM, with `out_type` and
/// `epilogue` for its drain (GemmLayout): what gemm_steps splits.
GemmLayout bf16_gemm(int k, int m, int n, uint64_t stationary_hbm, uint64_t moving_hbm, uint64_t out_hbm,
                     isa::DataType out_type = isa::DataType::kFp32, const GemmEpilogue& epilogue = {});

/// A BF16 GEMM (bf16_gemm) as split_gemm's pieces, one step each (the steps after the first are with_previous;
/// MACs are each step's own). `out_type` and `epilogue` are the drain's (GemmLayout). Throws
/// std::invalid_argument like split_gemm and make_gemm_program.
KernelSequence gemm_steps(const driver::DeviceInfo& info, const std::string& name, int k, int m, int n,
                          uint64_t stationary_hbm, uint64_t moving_hbm, uint64_t out_hbm, int cores,
                          isa::DataType out_type = isa::DataType::kFp32, const GemmEpilogue& epilogue = {});

/// `whole` (bf16_gemm's layout, or any) as one step per piece over up to `cores` cores (the steps after the first
/// with_previous; MACs each step's own): split_gemm's grid, or, with an operand already in SBUF on every core that
/// runs a step (GemmLayout::moving_in_sbuf / stationary_in_sbuf, loaded by an earlier program: docs/kernels.md
/// "Weights resident in SBUF"), the other operand's dimension alone in whole tiles (M in TE columns, N in
/// kGemmSplitColumns): each core then loads only its share of the operand from HBM and reads its columns of the
/// resident one where they are. Throws std::invalid_argument like split_gemm and make_gemm_program.
KernelSequence gemm_steps(const driver::DeviceInfo& info, const std::string& name, const GemmLayout& whole, int cores);

/// The Pipeline's estimate (TE cycles) of the first, largest step gemm_steps makes of `whole`: the wave's length
/// as a planner sees it. Throws like gemm_steps.
double gemm_steps_estimate(const driver::DeviceInfo& info, const GemmLayout& whole, int cores);

/// Bytes per partition of one K tile of an SBUF operand of `n` columns (GemmLayout's *_sbuf_tile_bytes), 64-byte
/// aligned.
uint32_t sbuf_operand_tile_bytes(isa::Dtype dtype, int n);

/// Copies HBM -> SBUF that put a whole row-major [K, N] operand (bf16 or fp16, at `hbm`) in the layout
/// GemmLayout::stationary_in_sbuf and moving_in_sbuf read: K tile t (the TE's rows, the last one ragged) on
/// partitions 0.. at SBUF offset sbuf + t * tile_bytes, its N columns dense. One copy of the whole tiles and one of a
/// ragged last tile. Throws std::invalid_argument for sizes < 1, another type or a tile smaller than a row.
std::vector<isa::CopyFields> sbuf_operand_copies(const driver::DeviceInfo& info, isa::Dtype dtype, uint64_t hbm,
                                                 int k, int n, uint32_t sbuf, uint32_t tile_bytes);

/// A program's prefetch (copies HBM -> SBUF for the programs after it, docs/kernels.md "Weights resident in SBUF"):
/// throws std::invalid_argument("KERNEL: prefetch copy i ...", naming its offset and span) unless every copy writes
/// SBUF at or above `sbuf_end` (> 0, bytes per partition) and within the partition, with no negative stride: the
/// program's own bytes are below sbuf_end.
void check_prefetch(const driver::DeviceInfo& info, const char* kernel, const std::vector<isa::CopyFields>& copies,
                    uint32_t sbuf_end);

/// `copies` cut into pieces of `latencies` (> 0) DMA engines' start-latency bytes each (dma_latency_bytes / engines;
/// dma_pieces), in order: a prefetch issued piece by piece fills the engines' idle time without holding an engine
/// long against the program's own copies.
std::vector<isa::CopyFields> prefetch_pieces(const driver::DeviceInfo& info, const std::vector<isa::CopyFields>& copies,
                                             double latencies);

/// Adds a program's prefetch `copies` (checked by check_prefetch, naming `kernel`) to `pipe` as dma ops, each copy as
/// it is, in order, in as many even shares as `after` has ops: share i may start once after[i] has completed (the
/// program's own loads are then issued), so the copies fill the DMA engines' idle time as the program goes on.
void add_prefetch(Pipeline& pipe, const driver::DeviceInfo& info, const char* kernel,
                  const std::vector<isa::CopyFields>& copies, uint32_t sbuf_end,
                  const std::vector<Pipeline::OpId>& after);

}  // namespace trnsim::kernels
