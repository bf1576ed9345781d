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
  const int tiles = (l.rows + pt - 1) / pt;
  const uint64_t pb = info.sbuf_partition_bytes;

  // Causal mask: one [pt, W] tile of -inf / -0 built once; row tile j adds its window starting at column
  // rmo - row0_j (masked iff c > row0 + p + offset). Only tiles with row0 + offset + 1 < cols need it.
  int masked_tiles = 0;
  if (l.causal) {
    while (masked_tiles < tiles && int64_t(masked_tiles) * pt + l.causal_offset + 1 < l.cols) ++masked_tiles;
  }
  const int64_t rmo = masked_tiles > 0 ? int64_t(masked_tiles - 1) * pt : 0;
  const int64_t mask_width = masked_tiles > 0 ? l.cols + rmo : 0;
  require(mask_width <= 0xFFFF, "causal mask wider than 65535 elements");

  PartitionArena arena(pb);
  const uint32_t mask_off = masked_tiles > 0 ? arena.take(uint64_t(mask_width) * 4, "softmax causal mask") : 0;
  const std::vector<RowBuffer> buf = take_row_buffers(arena, kWantedBuffers, tiles, l.cols, "softmax kernel");
  const int nbuf = static_cast<int>(buf.size());

  Pipeline pipe(info);
  Pipeline::OpId mask_op = -1;
  if (masked_tiles > 0) {
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

  std::vector<Pipeline::OpId> store(static_cast<std::size_t>(tiles), -1);
  for (int j = 0; j < tiles; ++j) {
    const RowBuffer& b = buf[std::size_t(j % nbuf)];
    const uint32_t mx = b.column[0], nbias = b.column[1], sum_off = b.column[2], rcp = b.column[3];
    const int row0 = j * pt, p = std::min(pt, l.rows - row0);
    const isa::Operand x = operand(b.x);
    const Pipeline::OpId load = load_rows(pipe, info, l.in_hbm, l.in_type, row0, p, l.cols, b.x,
                                          {j >= nbuf ? store[std::size_t(j - nbuf)] : -1});
    std::vector<isa::Instruction> vmax;
    if (j < masked_tiles) {
      vmax.push_back(tensor_tensor(AluOp::kAdd, p, l.cols, x, x, operand(mask_off + uint32_t(rmo - row0) * 4)));
    }
    vmax.push_back(tensor_reduce(AluOp::kMax, p, l.cols, column(mx), x));
    vmax.push_back(tensor_scalar(AluOp::kMultiply, l.scale, AluOp::kMultiply, -1.0f, p, 1, column(nbias), column(mx)));
    const Pipeline::OpId vmax_op = pipe.add(Engine::kVec, std::move(vmax), {load, j < masked_tiles ? mask_op : -1});
    const isa::Operand nb = column(nbias), sum = column(sum_off);
    const Pipeline::OpId exp_op =
        pipe.add(Engine::kAct, {activation(ActFunc::kExp, p, l.cols, x, x, l.scale, 0.0f, &nb, &sum)}, {vmax_op});
    const Pipeline::OpId norm_op =
        pipe.add(Engine::kVec,
                 {tensor_scalar(AluOp::kRdivide, 1.0f, AluOp::kNone, 0.0f, p, 1, column(rcp), column(sum_off)),
                  tensor_tensor(AluOp::kMultiply, p, l.cols, x, x, column(rcp))},
                 {exp_op});
    store[std::size_t(j)] = store_rows(pipe, info, l.out_hbm, l.out_type, row0, p, l.cols, b.x, {norm_op});
  }
  return pipe.build();
}

}  // namespace trnsim::kernels
