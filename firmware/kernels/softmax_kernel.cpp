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

SoftmaxOps softmax_ops(const SoftmaxTiles& s) {
  const uint32_t yb = uint32_t(isa::data_type_bytes(s.y_type));
  const isa::Operand x = operand(s.x, DataType::kFp32, {1, static_cast<int16_t>(s.stride)}, s.space);
  const isa::Operand z = operand(s.z, s.z_type, {1, static_cast<int16_t>(s.stride)}, s.z_space);
  const isa::Operand y = operand(s.y, s.y_type, {1, static_cast<int16_t>(s.stride)});
  const isa::Operand zero = operand(s.consts, DataType::kFp32, {0, 0}),
                     ninf = operand(s.consts + 4, DataType::kFp32, {0, 0});
  SoftmaxOps ops;
  // Tile t's masked columns inside [c0, c1) (c1 <= w), selected with the predicate: in x before the max (-inf), in
  // y after the products (+0). Column a + d of the window takes predicate column d.
  auto window = [&](bool out, std::vector<isa::Instruction>* list, int c0, int c1) {
    for (int t = 0; t < s.g && t < int(s.window.size()); ++t) {
      const int a = std::max(s.window[std::size_t(t)], c0);
      if (a >= c1) continue;
      const uint32_t at = uint32_t(t * s.stride + a);
      const isa::Operand v = out ? operand(s.y + at * yb, s.y_type)
                                 : operand(s.x + at * 4, DataType::kFp32, {1, 0}, s.space);
      const isa::Operand pd = operand(s.pred + uint32_t(a - s.window[std::size_t(t)]) * 4);
      list->push_back(select(s.p, c1 - a, v, pd, v, out ? zero : ninf));
      ops.masked = true;
    }
  };
  if (s.bank_cols > 0 && s.g == 1 && s.w > s.bank_cols) {
    const int banks = (s.w + s.bank_cols - 1) / s.bank_cols;
    for (int k = 0; k < banks; ++k) {
      const int c0 = k * s.bank_cols, c1 = std::min(s.w, c0 + s.bank_cols);
      std::vector<isa::Instruction> bank;
      window(false, &bank, c0, c1);
      bank.push_back(tensor_reduce_rows(AluOp::kMax, s.p, c1 - c0, 1, operand(s.partials + uint32_t(4 * k)),
                                        operand(s.x + uint32_t(c0) * 4, DataType::kFp32, {1, 0}, s.space)));
      ops.vmax_banks.push_back(std::move(bank));
    }
    ops.vmax.push_back(tensor_reduce_rows(AluOp::kMax, s.p, banks, 1, operand(s.mx), operand(s.partials)));
  } else {
    window(false, &ops.vmax, 0, s.w);
    ops.vmax.push_back(tensor_reduce_rows(AluOp::kMax, s.p, s.w, s.g, operand(s.mx), x));
  }
  ops.vmax.push_back(
      tensor_scalar(AluOp::kMultiply, s.scale, AluOp::kMultiply, -1.0f, s.p, s.g, operand(s.nbias), operand(s.mx)));
  for (int t = 0; t < s.g; ++t) {
    const isa::Operand xt = operand(s.x + uint32_t(t * s.stride * 4), DataType::kFp32, {1, 0}, s.space),
                       zt = operand(s.z + uint32_t(t * s.stride) * uint32_t(isa::data_type_bytes(s.z_type)),
                                    s.z_type, {1, 0}, s.z_space),
                       nb = column(s.nbias + 4 * t), sum = column(s.sum + 4 * t);
    if (!ops.vmax_banks.empty()) {  // g = 1: bank by bank, the sums continued
      const uint32_t zb = uint32_t(isa::data_type_bytes(s.z_type));
      for (int c0 = 0; c0 < s.w; c0 += s.bank_cols) {
        isa::Instruction e = activation(ActFunc::kExp, s.p, std::min(s.bank_cols, s.w - c0),
                                        operand(s.z + uint32_t(c0) * zb, s.z_type, {1, 0}, s.z_space),
                                        operand(s.x + uint32_t(c0) * 4, DataType::kFp32, {1, 0}, s.space), s.scale,
                                        0.0f, &nb, &sum);
        e.act.sum_acc = c0 > 0;
        ops.exps_banks.push_back({e});
      }
      continue;
    }
    ops.exps.push_back(activation(ActFunc::kExp, s.p, s.w, zt, xt, s.scale, 0.0f, &nb, &sum));
  }
  if (!s.normalise) return ops;
  ops.norm = {tensor_scalar(AluOp::kRdivide, 1.0f, AluOp::kNone, 0.0f, s.p, s.g, operand(s.rcp), operand(s.sum)),
              tensor_tensor(AluOp::kMultiply, s.p, s.w, y, z, operand(s.rcp, DataType::kFp32, {0, 1}), s.g)};
  window(true, &ops.norm, 0, s.w);
  return ops;
}

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
  const uint32_t zero_off = const_off;  // +0, then -inf
  const std::vector<RowBuffer> buf =
      take_row_buffers(arena, kWantedBuffers, ngroups, l.cols, groups.front().g, "softmax kernel");
  const int nbuf = static_cast<int>(buf.size());

  Pipeline pipe(info);
  Pipeline::OpId const_op = -1;
  if (consts) const_op = pipe.add(Engine::kVec, causal_softmax_constants(pt, const_off, pred_off, int(pw)));
  std::vector<Pipeline::OpId> store(static_cast<std::size_t>(ngroups), -1);
  for (int j = 0; j < ngroups; ++j) {
    const RowGroup& grp = groups[std::size_t(j)];
    const RowBuffer& b = buf[std::size_t(j % nbuf)];
    const int p = grp.p, g = grp.g, w = width[std::size_t(j)];
    // The group's tiles as [p, w, g] (tile t at free offset t * C), normalised in place.
    SoftmaxTiles st;
    st.p = p, st.w = w, st.g = g, st.stride = C, st.x = st.y = st.z = b.x, st.scale = l.scale;
    st.pred = pred_off, st.consts = const_off;
    st.mx = b.column[0], st.nbias = b.column[1], st.sum = b.column[2], st.rcp = b.column[3];
    for (int t = 0; t < g && l.causal; ++t) st.window.push_back(tile_a(grp, t));
    SoftmaxOps ops = softmax_ops(st);
    const Pipeline::OpId load = load_rows(pipe, info, l.in_hbm, l.in_type, grp, C, b.x,
                                          {j >= nbuf ? store[std::size_t(j - nbuf)] : -1}, w);
    const Pipeline::OpId vmax_op = pipe.add(Engine::kVec, std::move(ops.vmax), {load, ops.masked ? const_op : -1});
    const Pipeline::OpId exp_op = pipe.add(Engine::kAct, std::move(ops.exps), {vmax_op});
    const Pipeline::OpId norm_op = pipe.add(Engine::kVec, std::move(ops.norm), {exp_op});
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
