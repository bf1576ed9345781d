// Building blocks of the multi-engine kernels (softmax, norms, transpose, ...): a Pipeline turns a dependency graph
// of "ops" (a few instructions for one engine queue each) into an isa::Program whose queues overlap, with every
// cross-queue dependency carried by a semaphore; plus small instruction constructors.
//
// How a Pipeline orders and synchronises (docs/kernels.md "Pipelines"):
//   - ops are list-scheduled on estimated costs (the device's cost figures, docs/isa.md "Costs"): repeatedly the
//     ready op (all its dependencies placed) that can start earliest is appended to its queue; the resulting global
//     order is topological, so no queue can wait for something that comes later: the program cannot deadlock;
//   - every queue q signals one semaphore, first_sem + q, by 1 after each op that another queue depends on; a
//     consumer waits for the producer's count (waits already implied by an earlier wait are left out). On the dma
//     queue a signal also waits for all earlier copies (it means "these copies are done"), so the dma queue defers
//     its signals: copies are issued back to back and one signal publishes them all, placed just before the
//     queue's next wait (a wait never depends on an unpublished copy), before a barrier, or at the end;
//   - on the te, act and vec queues an instruction completes before the next starts, so dependencies inside these
//     queues need nothing; a dma op that depends on an earlier dma op (a buffer reused after its store) gets a
//     signal (a barrier) in front of it unless one came since;
//   - every queue ends with halt.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::kernels {

class Pipeline {
 public:
  using OpId = int;

  /// `first_sem`: the semaphores first_sem .. first_sem + 3 (one per queue) belong to the program.
  explicit Pipeline(const driver::DeviceInfo& info, uint8_t first_sem = 0);

  /// Adds an op of `instrs` (no semaphores, no halt) on `engine`'s queue that may start only when every op in
  /// `after` (ids returned earlier; negative ids are ignored) has completed. Returns its id.
  OpId add(isa::Engine engine, std::vector<isa::Instruction> instrs, const std::vector<OpId>& after = {});

  /// The program (see the file comment). Throws std::logic_error for a dependency on an op not added before.
  isa::Program build() const;

  /// Estimated TE cycles of the schedule build() emits (the cost figures above; a planning aid, not a promise).
  double estimated_cycles() const;

  int size() const { return static_cast<int>(ops_.size()); }

 private:
  struct Op {
    isa::Engine engine;
    std::vector<isa::Instruction> instrs;
    std::vector<OpId> deps;
    bool cross_users = false;  ///< another queue depends on it: signal after it
  };
  /// The global order of the list schedule, and its estimated length.
  std::vector<OpId> schedule(double* cycles) const;

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

/// One row-tile buffer of the row-wise kernels: a [P, cols] FP32 tile and four [P, 1] FP32 columns.
struct RowBuffer {
  uint32_t x = 0;                    ///< offset of the tile
  std::array<uint32_t, 4> column{};  ///< offsets of the columns (per-row scalars: max, sum, ...)
};
/// Takes up to `wanted` (and at most `tiles`) row buffers of `cols` FP32 from what `arena` has left, at least one
/// (else std::invalid_argument naming `kernel`): several let loads, compute and stores of different tiles overlap.
std::vector<RowBuffer> take_row_buffers(PartitionArena& arena, int wanted, int tiles, int cols, const char* kernel);

/// Throws std::invalid_argument("KERNEL: TENSOR ...") unless [addr, addr + bytes) lies inside the device's HBM.
void check_hbm_tensor(const driver::DeviceInfo& info, const char* kernel, const char* tensor, uint64_t addr,
                      uint64_t bytes);

// ---- instruction constructors (partition 0 based; offsets in bytes inside the partition)

/// A [P, n0, n1] SBUF/PSUM operand at `offset` of partition `partition`, strides in elements.
isa::Operand operand(uint32_t offset, isa::DataType type = isa::DataType::kFp32, std::array<int16_t, 2> stride = {1, 0},
                     isa::MemSpace space = isa::MemSpace::kSbuf, uint16_t partition = 0);
/// A [P, 1] column (a per-partition scalar) at `offset`, FP32; as an in1 operand it broadcasts (strides 0).
isa::Operand column(uint32_t offset);

isa::Instruction tensor_tensor(isa::AluOp op, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0,
                               const isa::Operand& in1);
isa::Instruction tensor_scalar(isa::AluOp op, float imm0, isa::AluOp op1, float imm1, int partitions, int n0,
                               const isa::Operand& out, const isa::Operand& in0);
isa::Instruction tensor_reduce(isa::AluOp op, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0);
/// activation func(in0 * scale + bias) with the bias an immediate (bias_column = nullptr) or a column, and the
/// free-axis sum written to `sum_column` when given.
isa::Instruction activation(isa::ActFunc func, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0,
                            float scale, float bias, const isa::Operand* bias_column, const isa::Operand* sum_column);

/// A copy of `rows` rows of `n` elements: source rows `src_row_stride` bytes apart, destination rows
/// `dst_row_stride` bytes apart (one SBUF/PSUM partition per row: the partition bytes), elements dense.
isa::CopyFields copy_rows(isa::MemSpace src_space, uint64_t src_addr, isa::DataType src_type, int64_t src_row_stride,
                          isa::MemSpace dst_space, uint64_t dst_addr, isa::DataType dst_type, int64_t dst_row_stride,
                          int rows, int n);
/// `c` as dma_copy instructions, cut along its outermost dimension into at most `parts` pieces of at least 8 KiB
/// (a copy's start latency dominates smaller ones), so that a large transfer spreads over the DMA engines.
std::vector<isa::Instruction> dma_pieces(const isa::CopyFields& c, uint32_t parts);

/// Adds a dma op copying rows [row0, row0 + p) of a row-major [*, cols] HBM tensor of `type` into SBUF partitions
/// 0..p-1 at `sbuf_offset` as FP32 (exact widening), after `after`; spread over the DMA engines.
Pipeline::OpId load_rows(Pipeline& pipe, const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type, int row0,
                         int p, int cols, uint32_t sbuf_offset, const std::vector<Pipeline::OpId>& after);
/// The reverse: FP32 SBUF rows -> HBM rows of `type` (one rounding, rule 6; FP8 saturating).
Pipeline::OpId store_rows(Pipeline& pipe, const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type, int row0,
                          int p, int cols, uint32_t sbuf_offset, const std::vector<Pipeline::OpId>& after);

}  // namespace trnsim::kernels
