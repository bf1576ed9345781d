// LayerNorm and RMSNorm kernels (norm_kernel.h); tiling and pipeline: docs/kernels.md "LayerNorm and RMSNorm".
#include "firmware/kernels/norm_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "firmware/kernels/pipeline.h"
#include "firmware/kernels/transpose_kernel.h"

namespace trnsim::kernels {
namespace {

using isa::ActFunc;
using isa::AluOp;
using isa::DataType;
using isa::Engine;
using isa::MemSpace;

constexpr int kWantedBuffers = 3;
/// Row groups (pipeline.h): at least this many, each at most this many bytes of rows per partition.
constexpr int kMinGroups = 3;
constexpr uint64_t kGroupBytes = 2 * 1024;  // longer rows: one tile per group (their three act passes are long)
constexpr float kMinusZero = -0.0f;

/// What differs between the two norms; everything else is shared.
struct NormJob {
  const char* name;
  bool layernorm;
  int rows, cols;
  uint64_t in_hbm, out_hbm, gamma_hbm, beta_hbm;
  float eps;
  DataType in_type, out_type;
  bool transposed = false;
  int out_ld = 0;
  bool out_in_sbuf = false;  ///< transposed into SBUF (LayerNormLayout::out_in_sbuf)
  uint32_t out_sbuf = 0, out_sbuf_tile_bytes = 0, sbuf_base = 0, sbuf_end = 0;
  double load_piece_latencies = 0;  ///< LayerNormLayout::load_piece_latencies
  std::vector<std::vector<Pipeline::OpId>> in_after = {};  ///< add_layernorm's in_after
  std::vector<Pipeline::OpId> psum_after = {};              ///< add_layernorm's psum_after
  bool in_in_sbuf = false;                      ///< LayerNormLayout::in_in_sbuf, in_sbuf, in_sbuf_tile_bytes
  uint32_t in_sbuf = 0, in_sbuf_tile_bytes = 0;
};

void require(const NormJob& n, bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(fmt::format("{} kernel: {}", n.name, what));
}

/// Transposes row tiles that lie in SBUF (rows on partitions 0.., `cols` elements of a TE input type) into an HBM
/// output [cols, out_ld]: per tile of at most kt rows and column chunk of at most mt columns one identity matmul into
/// a slot of a TransposeSlots ring (te_transpose_tile), consecutive slots of a tile drained by one DMA copy
/// (transpose_drain_copy). A slot is written again after its drain. With an SBUF output (out_sbuf) each slot is
/// copied by the Scalar engine to column chunk c / mt at out_sbuf + (c / mt) * tile_bytes, the rows as its columns.
class Transposer {
 public:
  /// `type`: bf16 or fp16 (the TE dtype of the same code); kt 0: a Transposer that is never used. `sbuf_out`: the
  /// output goes to SBUF at out_hbm (an SBUF offset then) in chunks `sbuf_tile_bytes` apart.
  Transposer(const driver::DeviceInfo& info, Pipeline& pipe, DataType type, uint64_t out_hbm, uint64_t out_ld, int kt,
             Pipeline::OpId ident_op, uint32_t ident_off, bool sbuf_out = false, uint64_t sbuf_tile_bytes = 0,
             std::vector<Pipeline::OpId> psum_after = {})
      : info_(info), pipe_(pipe), type_(type), dtype_(static_cast<isa::Dtype>(static_cast<uint8_t>(type))),
        out_(out_hbm), eo_(isa::data_type_bytes(type)), out_ld_(out_ld), ring_(info, kt), ident_op_(ident_op),
        ident_off_(ident_off), mt_(int(std::min<uint64_t>(info.te_cols, info.psum_partitions))),
        stride_fits_(uint64_t(mt_) * out_ld * eo_ <= uint64_t(INT32_MAX)),
        slot_drain_(std::size_t(std::max(0, ring_.count)), -1), sbuf_out_(sbuf_out),
        sbuf_tile_bytes_(sbuf_tile_bytes), psum_after_(std::move(psum_after)) {}

  /// The ops that wrote the output (DMA drains or SBUF copies): all of them, once every tile is added.
  const std::vector<Pipeline::OpId>& writes() const { return writes_; }

  /// The rows [row0, row0 + k) of the input, at SBUF offset `sbuf` of partitions 0..k-1, after op `after`. Returns
  /// the TE ops (they read the SBUF rows).
  std::vector<Pipeline::OpId> tile(uint32_t sbuf, int row0, int k, int cols, Pipeline::OpId after) {
    std::vector<Pipeline::OpId> te;
    for (int r = 0; r < k; r += ring_.kt) {
      const int kr = std::min(ring_.kt, k - r);
      const uint64_t base = uint64_t(r) * info_.sbuf_partition_bytes + sbuf;
      std::vector<Pipeline::OpId> group;
      int group_slot = 0, group_c0 = 0;
      auto drain = [&] {
        if (group.empty()) return;
        const int g = int(group.size()), m = std::min(mt_, cols - group_c0);
        const Pipeline::OpId d = pipe_.add(
            isa::Engine::kDma,
            dma_pieces(transpose_drain_copy(info_, ring_, group_slot, g, m, kr, mt_, out_, out_ld_, type_,
                                            uint64_t(group_c0), uint64_t(row0 + r)),
                       info_.num_dma_engines),
            group);
        for (int s = group_slot; s < group_slot + g; ++s) slot_drain_[std::size_t(s)] = d;
        writes_.push_back(d);
        group.clear();
      };
      for (int c = 0; c < cols; c += mt_) {
        const int m = std::min(mt_, cols - c), s = next_;
        next_ = (next_ + 1) % ring_.count;
        if (sbuf_out_) {  // the slot's [m, kr] FP32 -> chunk c / mt's columns row0 + r .. (exact: TE-transposed values)
          const Pipeline::OpId op =
              pipe_.add(isa::Engine::kTe, te_transpose_tile(dtype_, base + uint64_t(c) * eo_, kr, m, ident_off_,
                                                            ring_.offset(s)),
                        te_after(after, s));
          te.push_back(op);
          const uint64_t dst = out_ + uint64_t(c / mt_) * sbuf_tile_bytes_ + uint64_t(row0 + r) * eo_;
          const Pipeline::OpId copy = pipe_.add(
              isa::Engine::kAct,
              {activation(isa::ActFunc::kIdentity, m, kr, operand(uint32_t(dst), type_),
                          operand(ring_.offset(s), DataType::kFp32, {1, 0}, MemSpace::kPsum), 1.0f, 0.0f, nullptr,
                          nullptr)},
              {op});
          slot_drain_[std::size_t(s)] = copy;
          writes_.push_back(copy);
          continue;
        }
        if (!group.empty() && !ring_.joins(group_slot, int(group.size()), s, m, mt_, stride_fits_)) drain();
        if (group.empty()) {
          group_slot = s;
          group_c0 = c;
        }
        const Pipeline::OpId op =
            pipe_.add(isa::Engine::kTe, te_transpose_tile(dtype_, base + uint64_t(c) * eo_, kr, m, ident_off_,
                                                          ring_.offset(s)),
                      te_after(after, s));
        te.push_back(op);
        group.push_back(op);
        if (m < mt_) drain();
      }
      drain();
    }
    return te;
  }

 private:
  const driver::DeviceInfo& info_;
  Pipeline& pipe_;
  DataType type_;
  isa::Dtype dtype_;
  uint64_t out_, eo_, out_ld_;
  TransposeSlots ring_;
  Pipeline::OpId ident_op_;
  uint32_t ident_off_;
  int mt_, next_ = 0;
  bool stride_fits_;
  std::vector<Pipeline::OpId> slot_drain_;  // per PSUM slot: the drain that last read it
  bool sbuf_out_;
  uint64_t sbuf_tile_bytes_;
  std::vector<Pipeline::OpId> psum_after_;  // earlier users of the PSUM that every transpose waits for
  std::vector<Pipeline::OpId> writes_;

  /// What a transpose into slot s of the rows written by `after` waits for.
  std::vector<Pipeline::OpId> te_after(Pipeline::OpId after, int s) const {
    std::vector<Pipeline::OpId> deps{after, ident_op_, slot_drain_[std::size_t(s)]};
    deps.insert(deps.end(), psum_after_.begin(), psum_after_.end());
    return deps;
  }
};

/// The norm's ops added to `pipe`; returns the ops after which the output is complete (the stores, or the SBUF
/// copies), and in *sbuf_end the end of the SBUF bytes it uses per partition.
std::vector<Pipeline::OpId> add_norm(Pipeline& pipe, const driver::DeviceInfo& info, const NormJob& n,
                                     uint64_t* sbuf_end) {
  require(n, n.rows >= 1 && n.cols >= 1, fmt::format("rows and cols must be >= 1 (got {}, {})", n.rows, n.cols));
  require(n, n.cols <= 0xFFFF, fmt::format("cols {} exceeds the 65535 elements of one instruction", n.cols));
  require(n, std::isfinite(n.eps) && n.eps >= 0.0f, fmt::format("eps {} must be finite and >= 0", n.eps));
  require(n, info.sbuf_partitions >= 1, "the device has no SBUF");
  const uint64_t elems = uint64_t(n.rows) * uint64_t(n.cols);
  const uint64_t eo = isa::data_type_bytes(n.out_type);
  if (!n.in_in_sbuf) check_hbm_tensor(info, n.name, "in", n.in_hbm, elems * isa::data_type_bytes(n.in_type));
  uint64_t out_ld = uint64_t(n.rows);
  if (n.transposed) {
    require(n, n.out_type == DataType::kBf16 || n.out_type == DataType::kFp16,
            fmt::format("a transposed output goes through the Tensor Engine: out_type bf16 or fp16, not {}",
                        isa::data_type_name(n.out_type)));
    require(n, n.out_ld == 0 || n.out_ld >= n.rows, fmt::format("out_ld {} is smaller than rows {}", n.out_ld, n.rows));
    if (n.out_ld > 0) out_ld = uint64_t(n.out_ld);
    if (!n.out_in_sbuf) {
      check_hbm_tensor(info, n.name, "out", n.out_hbm, ((uint64_t(n.cols) - 1) * out_ld + uint64_t(n.rows)) * eo);
    }
  } else {
    check_hbm_tensor(info, n.name, "out", n.out_hbm, elems * eo);
  }
  check_hbm_tensor(info, n.name, "gamma", n.gamma_hbm, uint64_t(n.cols) * 4);
  if (n.layernorm) check_hbm_tensor(info, n.name, "beta", n.beta_hbm, uint64_t(n.cols) * 4);

  const int pt = static_cast<int>(std::min<uint32_t>(info.sbuf_partitions, uint32_t(n.rows)));
  const std::vector<RowGroup> groups = plan_row_groups(n.rows, pt, n.cols, kMinGroups, kGroupBytes);
  const int ngroups = static_cast<int>(groups.size());
  const uint64_t pb = info.sbuf_partition_bytes, row_bytes = uint64_t(n.cols) * 4;
  const float cols_f = static_cast<float>(n.cols);

  // SBUF (from sbuf_base): gamma (and beta) replicated in every partition, a junk row for the squares' elementwise
  // output (only their sum is wanted), then per buffer a row tile and four [P, 1] columns.
  require(n, std::isfinite(n.load_piece_latencies) && (n.load_piece_latencies == 0 || n.load_piece_latencies >= 1),
          fmt::format("load_piece_latencies {} must be 0 or a finite value >= 1", n.load_piece_latencies));
  const uint64_t limit = n.sbuf_end > 0 ? n.sbuf_end : pb;
  require(n, n.sbuf_base % 64 == 0 && n.sbuf_base < limit && limit <= pb,
          fmt::format("sbuf_base {} must be a multiple of 64 below sbuf_end {}, and that within the partition's {} "
                      "bytes", n.sbuf_base, limit, pb));
  const uint64_t tiles = ceil_div(uint64_t(n.rows), uint64_t(pt));  // row tiles
  require(n, n.in_after.size() <= 1 || n.in_after.size() == tiles,
          fmt::format("in_after has {} lists: one, or one per row tile ({})", n.in_after.size(), tiles));
  if (n.in_in_sbuf) {  // row tile t (rows t * pt ..) on partitions 0.. at in_sbuf + t * in_sbuf_tile_bytes, FP32
    const uint64_t end = uint64_t(n.in_sbuf) + (tiles - 1) * n.in_sbuf_tile_bytes + row_bytes;
    require(n, n.layernorm && n.in_type == DataType::kFp32,
            "only a LayerNorm of FP32 rows reads its input from SBUF (its first pass copies the rows)");
    require(n, n.in_sbuf_tile_bytes >= row_bytes && end <= pb && (end <= n.sbuf_base || n.in_sbuf >= limit),
            fmt::format("the SBUF input at {} ({} tiles of {} bytes, rows of {}) must lie within the partition's {} "
                        "bytes and outside the kernel's [{}, {})",
                        n.in_sbuf, tiles, n.in_sbuf_tile_bytes, row_bytes, pb, n.sbuf_base, limit));
  }
  PartitionArena arena(limit);
  arena.take(n.sbuf_base, "");  // the bytes below belong to others
  const uint32_t gamma = arena.take(row_bytes, "gamma");
  const uint32_t beta = n.layernorm ? arena.take(row_bytes, "beta") : 0;
  const uint32_t junk = arena.take(row_bytes, "squares");
  // Transposed output: the TE's identity (and its FP32 iota scratch), and per buffer the group cast to out_type.
  const DataType te_type = n.out_type;
  const int kt = n.transposed ? std::min(transpose_tile_rows(info), pt) : 0;  // (within the partitions it uses)
  uint32_t iota = 0, ident = 0;
  if (n.transposed) {
    require(n, kt >= 1 && info.te_cols >= 1 && info.psum_partitions >= 1, "the device's PSUM holds no tile");
    iota = arena.take(uint64_t(kt) * 4, "transpose identity");
    ident = arena.take(uint64_t(kt) * eo, "transpose identity");
  }
  const uint64_t cast_bytes = uint64_t(n.cols) * uint64_t(groups.front().g) * eo;
  std::vector<RowBuffer> buf;
  std::vector<uint32_t> cast;  // transposed: per buffer, the group's rows in out_type
  for (int want = kWantedBuffers;; --want) {
    PartitionArena a = arena;
    buf = take_row_buffers(a, want, ngroups, n.cols, groups.front().g, n.name);
    if (!n.transposed || a.left() >= buf.size() * ((cast_bytes + 63) / 64 * 64)) {
      for (std::size_t b = 0; n.transposed && b < buf.size(); ++b) cast.push_back(a.take(cast_bytes, "cast rows"));
      arena = a;
      break;
    }
    require(n, want > 1, fmt::format("{} columns of out_type do not fit the SBUF beside the FP32 rows", n.cols));
  }
  const int nbuf = static_cast<int>(buf.size());
  const int mt = int(std::min<uint64_t>(info.te_cols, info.psum_partitions));
  if (n.out_in_sbuf) {  // column chunk t of mt features: [mt partitions, rows] at out_sbuf + t * tile bytes
    const uint64_t chunks = ceil_div(uint64_t(n.cols), uint64_t(std::max(mt, 1))), row = uint64_t(n.rows) * eo;
    const uint64_t end = uint64_t(n.out_sbuf) + (chunks - 1) * n.out_sbuf_tile_bytes + row;
    require(n, n.transposed, "an output kept in SBUF is the transposed one");
    require(n, uint32_t(mt) <= info.sbuf_partitions && n.out_sbuf_tile_bytes >= row && end <= pb &&
                   (end <= n.sbuf_base || n.out_sbuf >= arena.used()),
            fmt::format("the SBUF output at {} ({} chunks of {} bytes, {} rows each) must lie within the partition "
                        "and outside the kernel's bytes [{}, {})",
                        n.out_sbuf, chunks, n.out_sbuf_tile_bytes, n.rows, n.sbuf_base, arena.used()));
  }
  if (sbuf_end) *sbuf_end = arena.used();
  // gamma / beta [cols] -> every partition (source rows 0 bytes apart: a broadcast read).
  std::vector<isa::CopyFields> params;
  for (const auto& [hbm, off, wanted] :
       {std::tuple{n.gamma_hbm, gamma, true}, std::tuple{n.beta_hbm, beta, n.layernorm}}) {
    if (!wanted) continue;
    params.push_back(copy_rows(MemSpace::kHbm, hbm, DataType::kFp32, 0, MemSpace::kSbuf, off, DataType::kFp32,
                               int64_t(pb), pt, n.cols));
  }
  // The loads of the groups that have a buffer at the start go first, then gamma and beta, which only the last
  // steps of a group need: the first sums (Scalar engine) start that much earlier (on trn2 gamma and beta are as many
  // bytes as 256 rows of x). The other loads wait for the store that frees their buffer.
  std::vector<Pipeline::OpId> store(static_cast<std::size_t>(ngroups), -1);
  std::vector<Pipeline::OpId> loads(static_cast<std::size_t>(ngroups), -1);
  // The ops a group's rows wait for (in_after: one list for every row tile, or one per row tile).
  const auto rows_after = [&](const RowGroup& grp) {
    std::vector<Pipeline::OpId> after;
    for (int t = 0; t < grp.g && !n.in_after.empty(); ++t) {
      const auto& a = n.in_after[n.in_after.size() == 1 ? 0 : std::size_t(grp.row0 / pt + t)];
      after.insert(after.end(), a.begin(), a.end());
    }
    return after;
  };
  // The first group over every DMA engine; with load_piece_latencies the later ones in fewer, larger pieces
  // (latency_engines), which spend less of the engines' time on start latencies.
  // What group j's first write into its buffer waits for: its rows, and the buffer's previous group.
  const auto group_after = [&](int j) {
    std::vector<Pipeline::OpId> after = rows_after(groups[std::size_t(j)]);
    after.push_back(j >= nbuf ? store[std::size_t(j - nbuf)] : -1);
    return after;
  };
  const auto add_load = [&](int j) {
    if (n.in_in_sbuf) return;  // the first pass reads the rows where they are
    loads[std::size_t(j)] = load_rows(pipe, info, n.in_hbm, n.in_type, groups[std::size_t(j)], n.cols,
                                      buf[std::size_t(j % nbuf)].x, group_after(j), 0,
                                      j == 0 ? 0.0 : n.load_piece_latencies);
  };
  for (int j = 0; j < nbuf; ++j) add_load(j);
  const Pipeline::OpId params_op = pipe.add(Engine::kDma, spread_copies(params, info.num_dma_engines));

  const Pipeline::OpId ident_op = n.transposed ? pipe.add(Engine::kVec, te_identity(kt, iota, ident, te_type)) : -1;
  Transposer tr(info, pipe, te_type, n.out_in_sbuf ? n.out_sbuf : n.out_hbm, out_ld, kt, ident_op, ident,
                n.out_in_sbuf, n.out_sbuf_tile_bytes, n.psum_after);
  std::vector<std::vector<Pipeline::OpId>> cast_readers(static_cast<std::size_t>(nbuf));  // TE ops reading cast[b]
  for (int j = 0; j < ngroups; ++j) {
    const RowGroup& grp = groups[std::size_t(j)];
    const RowBuffer& b = buf[std::size_t(j % nbuf)];
    const int p = grp.p, g = grp.g, cols = n.cols;
    // The group's tiles as [p, cols, g] (tile t at free offset t * cols); tile t alone; its column blocks [p, g].
    const isa::Operand x = operand(b.x, DataType::kFp32, {1, static_cast<int16_t>(cols)});
    auto tile = [&](int t) { return operand(b.x + uint32_t(t * cols * 4)); };
    const uint32_t sum = b.column[0], neg_mean = b.column[1], sq = b.column[2], rstd = b.column[3];
    if (j >= nbuf) add_load(j);
    const Pipeline::OpId load = loads[std::size_t(j)];
    Pipeline::OpId centred = load;
    if (n.layernorm) {
      // s = sum x (identity with bias -0 rewrites x unchanged; with the input in SBUF it copies the rows into the
      // buffer, the same bits as a load and this pass); -mean = (s / cols) * -1; c = x + -mean.
      std::vector<isa::Instruction> sums, centre;
      for (int t = 0; t < g; ++t) {
        const isa::Operand s_col = column(sum + 4 * t), m_col = column(neg_mean + 4 * t);
        const isa::Operand src =
            n.in_in_sbuf ? operand(n.in_sbuf + uint32_t(uint64_t(grp.row0 / pt + t) * n.in_sbuf_tile_bytes)) : tile(t);
        sums.push_back(activation(ActFunc::kIdentity, p, cols, tile(t), src, 1.0f, kMinusZero, nullptr, &s_col));
        centre.push_back(activation(ActFunc::kIdentity, p, cols, tile(t), tile(t), 1.0f, 0.0f, &m_col, nullptr));
      }
      // With the input in SBUF this pass is the group's load.
      const Pipeline::OpId s_op =
          pipe.add(Engine::kAct, std::move(sums), n.in_in_sbuf ? group_after(j) : std::vector<Pipeline::OpId>{load});
      const Pipeline::OpId m_op = pipe.add(
          Engine::kVec,
          {tensor_scalar(AluOp::kDivide, cols_f, AluOp::kMultiply, -1.0f, p, g, operand(neg_mean), operand(sum))},
          {s_op});
      centred = pipe.add(Engine::kAct, std::move(centre), {m_op});
    }
    // q = sum c^2; v = q / cols + eps; r = rsqrt(v).
    std::vector<isa::Instruction> squares;
    for (int t = 0; t < g; ++t) {
      const isa::Operand q_col = column(sq + 4 * t);
      squares.push_back(
          activation(ActFunc::kSquare, p, cols, operand(junk), tile(t), 1.0f, kMinusZero, nullptr, &q_col));
    }
    const Pipeline::OpId q_op = pipe.add(Engine::kAct, std::move(squares), {centred});
    const Pipeline::OpId v_op =
        pipe.add(Engine::kVec,
                 {tensor_scalar(AluOp::kDivide, cols_f, AluOp::kAdd, n.eps, p, g, operand(sq), operand(sq))}, {q_op});
    const Pipeline::OpId r_op = pipe.add(
        Engine::kAct,
        {activation(ActFunc::kRsqrt, p, g, operand(rstd), operand(sq), 1.0f, kMinusZero, nullptr, nullptr)}, {v_op});
    // out = (c * r) * gamma (+ beta): separate ops, so that the short steps of the next group can go in between.
    const isa::Operand r_bcast = operand(rstd, DataType::kFp32, {0, 1}),
                       gamma_rows = operand(gamma, DataType::kFp32, {1, 0});
    Pipeline::OpId y_op = pipe.add(Engine::kVec, {tensor_tensor(AluOp::kMultiply, p, cols, x, x, r_bcast, g)}, {r_op});
    y_op = pipe.add(Engine::kVec, {tensor_tensor(AluOp::kMultiply, p, cols, x, x, gamma_rows, g)}, {y_op, params_op});
    // The last step writes the output: in place (FP32, the store casts) or, transposed, cast to out_type in SBUF
    // (the same single rounding, rule 6) after the TE is done with that buffer's previous group.
    const std::size_t bi = std::size_t(j % nbuf);
    const isa::Operand y = n.transposed ? operand(cast[bi], te_type, {1, static_cast<int16_t>(cols)}) : x;
    std::vector<Pipeline::OpId> last_after{y_op};
    if (n.transposed) last_after.insert(last_after.end(), cast_readers[bi].begin(), cast_readers[bi].end());
    if (n.layernorm) {
      const isa::Operand beta_rows = operand(beta, DataType::kFp32, {1, 0});
      y_op = pipe.add(Engine::kVec, {tensor_tensor(AluOp::kAdd, p, cols, y, x, beta_rows, g)}, last_after);
    }
    if (!n.transposed) {
      store[std::size_t(j)] = store_rows(pipe, info, n.out_hbm, n.out_type, grp, cols, b.x, {y_op});
      continue;
    }
    store[std::size_t(j)] = y_op;  // the FP32 rows are read for the last time
    cast_readers[bi].clear();
    for (int t = 0; t < g; ++t) {
      const std::vector<Pipeline::OpId> te =
          tr.tile(cast[bi] + uint32_t(uint64_t(t) * cols * eo), grp.row0 + t * p, p, cols, y_op);
      cast_readers[bi].insert(cast_readers[bi].end(), te.begin(), te.end());
    }
  }
  return n.transposed ? tr.writes() : store;
}

isa::Program build_norm(const driver::DeviceInfo& info, const NormJob& n) {
  Pipeline pipe(info);
  add_norm(pipe, info, n, nullptr);
  return pipe.build();
}

NormJob layernorm_job(const LayerNormLayout& l) {
  NormJob n{"layernorm", true, l.rows, l.cols, l.in_hbm, l.out_hbm, l.gamma_hbm, l.beta_hbm, l.eps, l.in_type,
            l.out_type, l.transposed_out, l.out_ld, l.out_in_sbuf, l.out_sbuf, l.out_sbuf_tile_bytes,
            l.sbuf_base, l.sbuf_end, l.load_piece_latencies};
  n.in_in_sbuf = l.in_in_sbuf, n.in_sbuf = l.in_sbuf, n.in_sbuf_tile_bytes = l.in_sbuf_tile_bytes;
  return n;
}
}  // namespace

isa::Program make_layernorm_program(const driver::DeviceInfo& info, const LayerNormLayout& l) {
  if (l.out_in_sbuf) {
    throw std::invalid_argument("layernorm kernel: an output kept in SBUF needs a program that reads it "
                                "(add_layernorm)");
  }
  if (l.in_in_sbuf) {
    throw std::invalid_argument("layernorm kernel: an input in SBUF needs a program that writes it (add_layernorm)");
  }
  return build_norm(info, layernorm_job(l));
}

double layernorm_estimate(const driver::DeviceInfo& info, const LayerNormLayout& l) {
  Pipeline pipe(info);
  add_norm(pipe, info, layernorm_job(l), nullptr);
  return pipe.estimated_cycles();
}

LayerNormOps add_layernorm(Pipeline& pipe, const driver::DeviceInfo& info, const LayerNormLayout& l,
                           const std::vector<std::vector<Pipeline::OpId>>& in_after,
                           const std::vector<Pipeline::OpId>& psum_after) {
  NormJob job = layernorm_job(l);
  job.in_after = in_after;
  job.psum_after = psum_after;
  LayerNormOps ops;
  ops.done = add_norm(pipe, info, job, &ops.sbuf_end);
  return ops;
}

isa::Program make_rmsnorm_program(const driver::DeviceInfo& info, const RmsNormLayout& l) {
  return build_norm(info, NormJob{"rmsnorm", false, l.rows, l.cols, l.in_hbm, l.out_hbm, l.gamma_hbm, 0, l.eps,
                                  l.in_type, l.out_type});
}

}  // namespace trnsim::kernels
