// Building blocks of the multi-engine kernels (softmax, norms, transpose, ...): a Pipeline turns a dependency graph
// of "ops" (a few instructions for one engine queue each) into an isa::Program whose queues overlap, with every
// cross-queue dependency carried by a semaphore; plus small instruction constructors.
//
// How a Pipeline orders and synchronises (docs/kernels.md "Pipelines"):
//   - ops are list-scheduled on estimated costs (the device's cost figures, docs/isa.md "Costs"): repeatedly the
//     ready op (all its dependencies placed) that can start earliest is appended to its queue; the resulting global
//     order is topological, so no queue can wait for something that comes later: the program cannot deadlock;
//   - the te, act, vec and cc queues signal one semaphore each, first_sem + q, by 1 after each op that another queue
//     depends on; a consumer waits for the producer's count (waits already implied by an earlier wait are left out);
//   - a dma op that another queue depends on is published as its copies land: each copy carries a completion
//     semaphore (dma_copy done_sem=, one of kLandingSems taken in turn) and its consumers wait for that semaphore's
//     count at the op's last copy. No barrier: the dma queue goes on issuing. Before it issues the next op on the same
//     semaphore the dma queue waits for the op before to have landed (copies land in any order: so the counts tell the
//     ops apart), which keeps at most kLandingSems published ops in flight. (A sem_signal on the dma queue would wait
//     for every copy issued before it, a barrier that leaves the DMA engines idle between waves.);
//   - on the te, act and vec queues an instruction completes before the next starts, so dependencies inside these
//     queues need nothing; a dma op that depends on an earlier dma op (a buffer reused after its store) gets a
//     sem_signal (a barrier) in front of it unless one came since;
//   - every queue ends with halt.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/kernels/dma_copies.h"
#include "firmware/isa/isa.h"

namespace trnsim::kernels {

/// ceil(a / b) for b > 0.
inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

class Pipeline {
 public:
  using OpId = int;

  /// Completion semaphores of the published dma ops, taken in turn: at most this many such ops are in flight.
  static constexpr int kLandingSems = 4;

  /// `first_sem`: the semaphores first_sem .. first_sem + kNumQueues - 1 (one per queue) and the kLandingSems after
  /// them belong to the program. Throws std::invalid_argument when they do not fit the device's 32.
  explicit Pipeline(const driver::DeviceInfo& info, uint8_t first_sem = 0);

  /// Adds an op of `instrs` (no semaphores, no halt) on `engine`'s queue that may start only when every op in
  /// `after` (ids returned earlier; negative ids are ignored) has completed. Returns its id.
  OpId add(isa::Engine engine, std::vector<isa::Instruction> instrs, const std::vector<OpId>& after = {});

  /// The program (see the file comment). Throws std::logic_error for a dependency on an op not added before or a dma
  /// op without copies that another queue depends on.
  isa::Program build() const;

  /// Estimated TE cycles of the program: the list schedule with each op timed by the cost figures above and the
  /// TE's two sequencers (a load overlaps the multiply before it, docs/architecture.md "In a stream"; its order can
  /// differ a little from build()'s). A planning aid, not a promise (the DMA is timed without the HBM's sharing).
  double estimated_cycles() const;

  /// TE cycles each DMA engine is busy on average with the copies of the dma ops (each copy's start latency plus its
  /// bytes at one engine's rate, summed and divided by the engines; the cost figures of estimated_cycles): what
  /// the program leaves of its length for other copies.
  double dma_engine_cycles() const;

  int size() const { return static_cast<int>(ops_.size()); }

 private:
  struct Op {
    isa::Engine engine;
    std::vector<isa::Instruction> instrs;
    std::vector<OpId> deps;
    bool cross_users = false;  ///< another queue depends on it: publish it
  };
  /// The global order of the list schedule, and its estimated length. te_streams: the TE's commands overlap as its
  /// two sequencers allow; else each in series (the order build() takes: it measured as good or better, and the
  /// estimate then overstates each K tile by its load's beats).
  std::vector<OpId> schedule(double* cycles, bool te_streams) const;

  driver::DeviceInfo info_;
  uint8_t first_sem_;
  std::vector<Op> ops_;
};

/// Bump allocation of the bytes of every SBUF (or PSUM) partition, 64-byte aligned.
class PartitionArena {
 public:
  explicit PartitionArena(uint64_t partition_bytes) : limit_(partition_bytes) {}
  /// Returns the offset of `bytes` new bytes per partition, or throws std::invalid_argument naming `what`.
  uint32_t take(uint64_t bytes, const char* what);
  uint64_t used() const { return used_; }
  uint64_t left() const { return limit_ - used_; }

 private:
  uint64_t limit_;
  uint64_t used_ = 0;
};

/// A group of row tiles the row-wise kernels process together: rows row0 + t * p + q (tile t < g, partition
/// q < p) sit in SBUF partition q at free offset t * cols, so one DMA copy and one Vector instruction (free [cols, g])
/// cover g tiles. On small partition counts this divides the number of copies (each paying the DMA start latency)
/// and of Vector instructions by g.
struct RowGroup {
  int row0 = 0;  ///< first row
  int p = 0;     ///< rows per tile (partitions)
  int g = 0;     ///< tiles
};
/// Cuts `rows` into groups: tiles of `pt` rows (the last, ragged tile alone in its own group), g tiles per group
/// such that a tile's row fits `group_bytes` per partition and there are at least `min_groups` groups to pipeline.
std::vector<RowGroup> plan_row_groups(int rows, int pt, int cols, int min_groups, uint64_t group_bytes);

/// One buffer of the row-wise kernels: a [P, g * cols] FP32 group of tiles and four [P, g] FP32 column blocks.
struct RowBuffer {
  uint32_t x = 0;                    ///< offset of the tiles
  std::array<uint32_t, 4> column{};  ///< offsets of the column blocks (per-row scalars: max, sum, ...)
};
/// Takes up to `wanted` (and at most `groups`) buffers for groups of `g` tiles of `cols` FP32 from what `arena` has
/// left, at least one (else std::invalid_argument naming `kernel`): several let loads, compute and stores of
/// different groups overlap.
std::vector<RowBuffer> take_row_buffers(PartitionArena& arena, int wanted, int groups, int cols, int g,
                                        const char* kernel);

/// Throws std::invalid_argument("KERNEL: TENSOR ...") unless [addr, addr + bytes) lies inside the device's HBM.
void check_hbm_tensor(const driver::DeviceInfo& info, const char* kernel, const char* tensor, uint64_t addr,
                      uint64_t bytes);

// ---- instruction constructors (partition 0 based; offsets in bytes inside the partition)

/// A [P, n0, n1] SBUF/PSUM operand at `offset` of partition `partition`, strides in elements.
isa::Operand operand(uint32_t offset, isa::DataType type = isa::DataType::kFp32, std::array<int16_t, 2> stride = {1, 0},
                     isa::MemSpace space = isa::MemSpace::kSbuf, uint16_t partition = 0);
/// A [P, 1] column (a per-partition scalar) at `offset`, FP32; as an in1 operand it broadcasts (strides 0).
isa::Operand column(uint32_t offset);

/// Element-wise Vector instructions over free [n0, n1] (operand strides as given; a count of 1 gets stride 0).
isa::Instruction tensor_tensor(isa::AluOp op, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0,
                               const isa::Operand& in1, int n1 = 1);
/// The constants of a causal softmax (softmax_kernel.h, GemmEpilogue::kSoftmax), on `partitions` partitions: +0
/// and -inf (FP32) at `const_off` and const_off + 4, and, for pred_width > 0, the predicate [partitions, pred_width]
/// FP32 at `pred_off`: 1.0 where column c < partition q (unmasked in a causal window), else 0.0. Vector engine.
std::vector<isa::Instruction> causal_softmax_constants(int partitions, uint32_t const_off, uint32_t pred_off,
                                                       int pred_width);
/// select over free [n0, n1]: out = pred != +-0 ? in1 : in2 (a NaN pred selects in1).
isa::Instruction select(int partitions, int n0, const isa::Operand& out, const isa::Operand& pred,
                        const isa::Operand& in1, const isa::Operand& in2, int n1 = 1);
isa::Instruction tensor_scalar(isa::AluOp op, float imm0, isa::AluOp op1, float imm1, int partitions, int n0,
                               const isa::Operand& out, const isa::Operand& in0, int n1 = 1);
/// tensor_copy over free [n0, n1]: out = in0, cast once to out's type (rule 6; -0 and NaN payloads as the cast keeps
/// them).
isa::Instruction tensor_copy(int partitions, int n0, const isa::Operand& out, const isa::Operand& in0, int n1 = 1);
/// tensor_reduce of all n0 elements into a [P, 1] column.
/// iota: out[p, i] = p * pstep + i * step (FP32 at SBUF offset `out`, i < n), on `partitions` partitions.
isa::Instruction iota_op(int partitions, int n, uint32_t out, int16_t pstep, int32_t step);
/// memset: out[P, n0] = value (an FP32 immediate cast to out's type).
isa::Instruction memset_op(int partitions, int n0, const isa::Operand& out, float value);
/// Vector transpose: out[j, i] = in0[i, j] of in0 [P, n0] (P, n0 <= 32, docs/isa.md "transpose"); `out` has n0
/// partitions from its start and walks i with its stride[0]. An in0 stride of 0 broadcasts each partition's element:
/// out[j, i] = in0[i, 0] for every j.
isa::Instruction transpose_op(int partitions, int n0, const isa::Operand& out, const isa::Operand& in0);
isa::Instruction tensor_reduce(isa::AluOp op, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0);
/// tensor_reduce of each of the n1 rows of n0 elements (axis inner) into a [P, n1] block of consecutive FP32.
isa::Instruction tensor_reduce_rows(isa::AluOp op, int partitions, int n0, int n1, const isa::Operand& out,
                                    const isa::Operand& in0);
/// activation func(in0 * scale + bias) with the bias an immediate (bias_column = nullptr) or a column, and the
/// free-axis sum written to `sum_column` when given.
isa::Instruction activation(isa::ActFunc func, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0,
                            float scale, float bias, const isa::Operand* bias_column, const isa::Operand* sum_column);

/// Adds a dma op copying the rows of `group` of a row-major [*, cols] HBM tensor of `type` into SBUF partitions
/// 0..p-1 at `sbuf_offset` (tile t at + t * cols * 4) as FP32 (exact widening), after `after`; over every DMA
/// engine, or with `piece_latencies` >= 1 in pieces of at least that many engines' start-latency bytes
/// (latency_engines). `width` > 0: only columns [0, width) of each row (the SBUF layout unchanged).
Pipeline::OpId load_rows(Pipeline& pipe, const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type,
                         const RowGroup& group, int cols, uint32_t sbuf_offset,
                         const std::vector<Pipeline::OpId>& after, int width = 0, double piece_latencies = 0);
/// The reverse: FP32 SBUF rows -> HBM rows of `type` (one rounding, rule 6; FP8 saturating).
Pipeline::OpId store_rows(Pipeline& pipe, const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type,
                          const RowGroup& group, int cols, uint32_t sbuf_offset,
                          const std::vector<Pipeline::OpId>& after, int width = 0);

}  // namespace trnsim::kernels
