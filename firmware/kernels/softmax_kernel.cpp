// Softmax kernel (softmax_kernel.h); tiling and pipeline: docs/kernels.md "Softmax".
#include "firmware/kernels/softmax_kernel.h"

#include <fmt/format.h>

#include <algorithm>
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

  // Causal (docs/kernels.md "Softmax"): in a tile of p rows from r0, the columns [0, a) are unmasked in every row
  // (a = min(C, r0 + offset + 1)), the window [a, w) holds the diagonal block (w = min(C, r0 + offset + p)) and
  // [w, C) is masked in every row. A group computes columns [0, W), W the w of its last tile: tile t's masked columns
  // inside [0, W) are [a_t, W), where column a_t + c is masked in partition q iff c >= q, the same pattern for every
  // tile, so one predicate tile [pt, pw] (1.0 where c < q) serves them all. Columns [W, C) are neither loaded nor
  // computed: they are stored as +0 from a zero column.
  const int C = l.cols;
  const int64_t off = l.causal_offset;
  std::vector<int> width(static_cast<std::size_t>(ngroups), C);
  int64_t pw = 0;
  bool zero_fill = false;
  auto tile_a = [&](const RowGroup& grp, int t) {
    return int(std::min<int64_t>(C, int64_t(grp.row0) + int64_t(t) * grp.p + off + 1));
  };
  if (l.causal) {
    for (int j = 0; j < ngroups; ++j) {
      const RowGroup& grp = groups[std::size_t(j)];
      const int w = int(std::min<int64_t>(C, int64_t(grp.row0) + int64_t(grp.g - 1) * grp.p + off + grp.p));
      width[std::size_t(j)] = w;
      zero_fill = zero_fill || w < C;
      pw = std::max<int64_t>(pw, w - tile_a(grp, 0));
    }
  }
  require(pw <= 0xFFFF, "causal mask wider than 65535 elements");

  PartitionArena arena(pb);
  const bool consts = pw > 0 || zero_fill;
  const uint32_t pred_off = pw > 0 ? arena.take(uint64_t(pw) * 4, "softmax causal mask") : 0;
  const uint32_t const_off = consts ? arena.take(8, "softmax constants") : 0;  // +0, then -inf
  const uint32_t zero_off = const_off, ninf_off = const_off + 4;
  const std::vector<RowBuffer> buf =
      take_row_buffers(arena, kWantedBuffers, ngroups, l.cols, groups.front().g, "softmax kernel");
  const int nbuf = static_cast<int>(buf.size());

  Pipeline pipe(info);
  Pipeline::OpId const_op = -1;
  if (consts) const_op = pipe.add(Engine::kVec, causal_softmax_constants(pt, const_off, pred_off, int(pw)));
  const isa::Operand pred = operand(pred_off), ninf = operand(ninf_off, DataType::kFp32, {0, 0}),
                     zero = operand(zero_off, DataType::kFp32, {0, 0});

  std::vector<Pipeline::OpId> store(static_cast<std::size_t>(ngroups), -1);
  for (int j = 0; j < ngroups; ++j) {
    const RowGroup& grp = groups[std::size_t(j)];
    const RowBuffer& b = buf[std::size_t(j % nbuf)];
    const uint32_t mx = b.column[0], nbias = b.column[1], sum_off = b.column[2], rcp = b.column[3];
    const int p = grp.p, g = grp.g, w = width[std::size_t(j)];
    // The group's tiles as [p, w, g] (tile t at free offset t * C), and its column blocks as [p, g].
    const isa::Operand x = operand(b.x, DataType::kFp32, {1, static_cast<int16_t>(C)});
    // Tile t's masked columns inside [0, w): select with the predicate (before the max: -inf; after: +0).
    auto window = [&](const isa::Operand& fill, std::vector<isa::Instruction>* out) {
      for (int t = 0; t < g && l.causal; ++t) {
        const int a = tile_a(grp, t);
        if (a >= w) continue;
        const isa::Operand xw = operand(b.x + uint32_t((int64_t(t) * C + a) * 4));
        out->push_back(select(p, w - a, xw, pred, xw, fill));
      }
    };
    const Pipeline::OpId load = load_rows(pipe, info, l.in_hbm, l.in_type, grp, C, b.x,
                                          {j >= nbuf ? store[std::size_t(j - nbuf)] : -1}, w);
    std::vector<isa::Instruction> vmax;
    window(ninf, &vmax);
    const bool masked = !vmax.empty();
    vmax.push_back(tensor_reduce_rows(AluOp::kMax, p, w, g, operand(mx), x));
    vmax.push_back(
        tensor_scalar(AluOp::kMultiply, l.scale, AluOp::kMultiply, -1.0f, p, g, operand(nbias), operand(mx)));
    const Pipeline::OpId vmax_op = pipe.add(Engine::kVec, std::move(vmax), {load, masked ? const_op : -1});
    std::vector<isa::Instruction> exps;
    for (int t = 0; t < g; ++t) {
      const isa::Operand xt = operand(b.x + uint32_t(t * C * 4)), nb = column(nbias + 4 * t),
                         sum = column(sum_off + 4 * t);
      exps.push_back(activation(ActFunc::kExp, p, w, xt, xt, l.scale, 0.0f, &nb, &sum));
    }
    const Pipeline::OpId exp_op = pipe.add(Engine::kAct, std::move(exps), {vmax_op});
    std::vector<isa::Instruction> norm{
        tensor_scalar(AluOp::kRdivide, 1.0f, AluOp::kNone, 0.0f, p, g, operand(rcp), operand(sum_off)),
        tensor_tensor(AluOp::kMultiply, p, w, x, x, operand(rcp, DataType::kFp32, {0, 1}), g)};
    window(zero, &norm);
    const Pipeline::OpId norm_op = pipe.add(Engine::kVec, std::move(norm), {exp_op});
    store[std::size_t(j)] = store_rows(pipe, info, l.out_hbm, l.out_type, grp, C, b.x, {norm_op}, w);
    if (w < C) {  // columns [w, C) of the group's rows: +0, repeated from the zero column
      const uint64_t eo = eout;
      // The FP32 +0's first bytes read as out_type are its +0, so the copy moves out_type bytes.
      isa::CopyFields z = copy_rows(MemSpace::kSbuf, zero_off, l.out_type, 0, MemSpace::kHbm,
                                    l.out_hbm + (uint64_t(grp.row0) * uint64_t(C) + uint64_t(w)) * eo, l.out_type,
                                    int64_t(uint64_t(C) * eo), p, C - w);
      z.src_stride[0] = 0;
      if (g > 1) {
        z.count[2] = static_cast<uint16_t>(g);
        z.src_stride[2] = 0;
        z.dst_stride[2] = static_cast<int32_t>(uint64_t(p) * uint64_t(C) * eo);
      }
      pipe.add(Engine::kDma, dma_pieces(z, info.num_dma_engines), {const_op});
    }
  }
  return pipe.build();
}

}  // namespace trnsim::kernels
