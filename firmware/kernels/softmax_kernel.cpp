// Softmax kernel (softmax_kernel.h); tiling and pipeline: docs/kernels.md "Softmax".
#include "firmware/kernels/softmax_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {
namespace {

using isa::ActFunc;
using isa::AluOp;
using isa::DataType;
using isa::Engine;
using isa::MemSpace;

constexpr int kWantedBuffers = 3;
/// Row groups: at least this many (so that loads, compute and stores of different groups overlap), each at most
/// this many bytes of rows per partition (so that groups of short rows share one DMA copy and one instruction).
constexpr int kMinGroups = 3;
constexpr uint64_t kGroupBytes = 16 * 1024;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("softmax kernel: " + what);
}

}  // namespace

isa::Program make_softmax_program(const driver::DeviceInfo& info, const SoftmaxLayout& l) {
  require(l.rows >= 1 && l.cols >= 1, fmt::format("rows and cols must be >= 1 (got {}, {})", l.rows, l.cols));
  require(l.cols <= 0xFFFF, fmt::format("cols {} exceeds the 65535 elements of one instruction", l.cols));
  require(std::isfinite(l.scale) && l.scale > 0.0f, fmt::format("scale {} must be finite and > 0", l.scale));
  require(l.causal_offset >= 0, fmt::format("causal_offset {} must be >= 0", l.causal_offset));
  require(info.sbuf_partitions >= 1, "the device has no SBUF");
  const uint64_t ein = isa::data_type_bytes(l.in_type), eout = isa::data_type_bytes(l.out_type);
  const uint64_t elems = uint64_t(l.rows) * uint64_t(l.cols);
  check_hbm_tensor(info, "softmax kernel", "in", l.in_hbm, elems * ein);
  check_hbm_tensor(info, "softmax kernel", "out", l.out_hbm, elems * eout);

  const int pt = static_cast<int>(std::min<uint32_t>(info.sbuf_partitions, uint32_t(l.rows)));
  const uint64_t pb = info.sbuf_partition_bytes;
  const std::vector<RowGroup> groups = plan_row_groups(l.rows, pt, l.cols, kMinGroups, kGroupBytes);
  const int ngroups = static_cast<int>(groups.size());

  // Causal mask: one [pt, W] tile of -inf / -0 built once; the tile with first row r0 adds its window starting at
  // column rmo - r0 (masked iff c > r0 + q + offset in partition q). A group needs the mask when its first tile
  // does (r0 + offset + 1 < cols); rmo is the first row of the last tile of those groups.
  int masked_groups = 0;
  if (l.causal) {
    while (masked_groups < ngroups && int64_t(groups[std::size_t(masked_groups)].row0) + l.causal_offset + 1 < l.cols) {
      ++masked_groups;
    }
  }
  int64_t rmo = 0;
  if (masked_groups > 0) {
    const RowGroup& last = groups[std::size_t(masked_groups - 1)];
    rmo = int64_t(last.row0) + int64_t(last.g - 1) * last.p;
  }
  const int64_t mask_width = masked_groups > 0 ? l.cols + rmo : 0;
  require(mask_width <= 0xFFFF, "causal mask wider than 65535 elements");

  PartitionArena arena(pb);
  const uint32_t mask_off = masked_groups > 0 ? arena.take(uint64_t(mask_width) * 4, "softmax causal mask") : 0;
  const std::vector<RowBuffer> buf =
      take_row_buffers(arena, kWantedBuffers, ngroups, l.cols, groups.front().g, "softmax kernel");
  const int nbuf = static_cast<int>(buf.size());

  Pipeline pipe(info);
  Pipeline::OpId mask_op = -1;
  if (masked_groups > 0) {
    isa::Instruction iota;
    iota.op = isa::Opcode::kIota;
    iota.vec.partitions = static_cast<uint16_t>(pt);
    iota.vec.free = {static_cast<uint16_t>(mask_width), 1};
    iota.vec.out = operand(mask_off, DataType::kFp32, {int16_t(mask_width > 1 ? 1 : 0), 0});
    iota.vec.base = static_cast<int32_t>(-(rmo + l.causal_offset));
    iota.vec.pstep = -1;
    iota.vec.step = {1, 0};
    const isa::Operand m = operand(mask_off);
    // v > 0 (masked) -> 1 -> -FLT_MAX -> -inf; else 0 -> -0 -> -0.
    mask_op = pipe.add(Engine::kVec,
                       {iota, tensor_scalar(AluOp::kIsGt, 0.0f, AluOp::kMultiply, -FLT_MAX, pt, int(mask_width), m, m),
                        tensor_scalar(AluOp::kMultiply, 2.0f, AluOp::kNone, 0.0f, pt, int(mask_width), m, m)});
  }

  std::vector<Pipeline::OpId> store(static_cast<std::size_t>(ngroups), -1);
  for (int j = 0; j < ngroups; ++j) {
    const RowGroup& grp = groups[std::size_t(j)];
    const RowBuffer& b = buf[std::size_t(j % nbuf)];
    const uint32_t mx = b.column[0], nbias = b.column[1], sum_off = b.column[2], rcp = b.column[3];
    const int p = grp.p, g = grp.g, cols = l.cols;
    // The group's tiles as [p, cols, g] (tile t at free offset t * cols), and its column blocks as [p, g].
    const isa::Operand x = operand(b.x, DataType::kFp32, {1, static_cast<int16_t>(cols)});
    const Pipeline::OpId load =
        load_rows(pipe, info, l.in_hbm, l.in_type, grp, cols, b.x, {j >= nbuf ? store[std::size_t(j - nbuf)] : -1});
    std::vector<isa::Instruction> vmax;
    if (j < masked_groups) {
      // Tile t's window starts p columns further left than tile t-1's.
      const isa::Operand mask =
          operand(mask_off + uint32_t(rmo - grp.row0) * 4, DataType::kFp32, {1, static_cast<int16_t>(-p)});
      vmax.push_back(tensor_tensor(AluOp::kAdd, p, cols, x, x, mask, g));
    }
    vmax.push_back(tensor_reduce_rows(AluOp::kMax, p, cols, g, operand(mx), x));
    vmax.push_back(
        tensor_scalar(AluOp::kMultiply, l.scale, AluOp::kMultiply, -1.0f, p, g, operand(nbias), operand(mx)));
    const Pipeline::OpId vmax_op = pipe.add(Engine::kVec, std::move(vmax), {load, j < masked_groups ? mask_op : -1});
    std::vector<isa::Instruction> exps;
    for (int t = 0; t < g; ++t) {
      const isa::Operand xt = operand(b.x + uint32_t(t * cols * 4)), nb = column(nbias + 4 * t),
                         sum = column(sum_off + 4 * t);
      exps.push_back(activation(ActFunc::kExp, p, cols, xt, xt, l.scale, 0.0f, &nb, &sum));
    }
    const Pipeline::OpId exp_op = pipe.add(Engine::kAct, std::move(exps), {vmax_op});
    const Pipeline::OpId norm_op =
        pipe.add(Engine::kVec,
                 {tensor_scalar(AluOp::kRdivide, 1.0f, AluOp::kNone, 0.0f, p, g, operand(rcp), operand(sum_off)),
                  tensor_tensor(AluOp::kMultiply, p, cols, x, x, operand(rcp, DataType::kFp32, {0, 1}), g)},
                 {exp_op});
    store[std::size_t(j)] = store_rows(pipe, info, l.out_hbm, l.out_type, grp, cols, b.x, {norm_op});
  }
  return pipe.build();
}

}  // namespace trnsim::kernels
