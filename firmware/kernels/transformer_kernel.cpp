// A GPT-2 transformer block as a sequence of programs (transformer_kernel.h).
#include "firmware/kernels/transformer_kernel.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "firmware/kernels/attention_kernel.h"
#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/ln_gemm_kernel.h"
#include "firmware/kernels/mlp_kernel.h"
#include "firmware/kernels/norm_kernel.h"

namespace trnsim::kernels {

namespace {
void check_shape(const TransformerShape& s) {
  if (s.seq < 1 || s.d_model < 1 || s.heads < 1 || s.d_ff < 1 || s.d_model % s.heads != 0) {
    throw std::invalid_argument(fmt::format(
        "transformer block: seq {}, d_model {}, heads {}, d_ff {}: every size must be >= 1 and d_model a multiple "
        "of heads", s.seq, s.d_model, s.heads, s.d_ff));
  }
}

/// The block's LayerNorm of all [seq, d_model] FP32 rows `in` (gamma g, beta b) -> BF16; no output fields set (the
/// fused step's moving operand, ln_gemm_kernel.h, or layernorm_step_layout's rows).
LayerNormLayout fused_ln(const TransformerShape& s, uint64_t in, uint64_t g, uint64_t b) {
  LayerNormLayout ln;
  ln.rows = s.seq;
  ln.cols = s.d_model;
  ln.in_hbm = in;
  ln.gamma_hbm = g;
  ln.beta_hbm = b;
  ln.eps = s.ln_eps;
  ln.in_type = isa::DataType::kFp32;
  ln.out_type = isa::DataType::kBf16;
  return ln;
}
/// Rows [r0, r0 + n) of `whole` as one program of the LayerNorm step: into `out` [seq, d_model], or with te_transpose
/// transposed into columns [r0, r0 + n) of `outT` [d_model, seq].
LayerNormLayout layernorm_step_layout(const TransformerShape& s, LayerNormLayout ln, int r0, int n, uint64_t out,
                                      uint64_t outT) {
  const uint64_t row = uint64_t(r0) * uint64_t(s.d_model);
  ln.rows = n;
  ln.in_hbm += row * 4;
  ln.out_hbm = s.te_transpose ? outT + uint64_t(r0) * 2 : out + row * 2;
  ln.transposed_out = s.te_transpose;
  ln.out_ld = s.seq;
  return ln;
}
/// LayerNorm of [seq, d_model] FP32 -> BF16, its rows split over the cores, then its [d_model, seq] transpose (the
/// GEMMs' moving operand). With te_transpose one step: each core's LayerNorm transposes its rows on the TE and
/// writes its columns of outT (LayerNormLayout::transposed_out; `out` is not written). Else the LayerNorm into `out`
/// and a step of strided DMA copies.
KernelSequence layernorm_steps(const driver::DeviceInfo& info, const std::string& name, const TransformerShape& s,
                               uint64_t in, uint64_t g, uint64_t b, uint64_t out, uint64_t outT) {
  const LayerNormLayout whole = fused_ln(s, in, g, b);
  KernelSequence seq = row_split_steps(name, s.seq, int(info.sbuf_partitions), s.cores, [&](int r0, int n) {
    return KernelStep{"", make_layernorm_program(info, layernorm_step_layout(s, whole, r0, n, out, outT)), 0};
  });
  if (!s.te_transpose) {  // one copy out[r, c] -> outT[c, r]
    seq.push_back({name + " transpose",
                   dma_program(info, {transpose_copy(out, isa::DataType::kBf16, outT, isa::DataType::kBf16, s.seq,
                                                     s.d_model)}),
                   0});
  }
  return seq;
}
/// LN1 into the QKV GEMM (+ b_qkv per row, cast to BF16 in its drain) into qkvT: the moving operand is ln1T.
LnGemmLayout ln1_qkv(const TransformerShape& s, const TransformerInputs& in, const TransformerBuffers& b) {
  GemmEpilogue bias;
  bias.kind = GemmEpilogue::Kind::kRowBiasAct;
  bias.bias_hbm = in.b_qkv;
  bias.func = isa::ActFunc::kIdentity;
  return {fused_ln(s, in.x, in.ln1_g, in.ln1_b),
          bf16_gemm(s.d_model, 3 * s.d_model, s.seq, in.w_qkv, b.ln1T, b.qkvT, isa::DataType::kBf16, bias)};
}
/// Whether the LayerNorm `l.ln` runs in the programs of the GEMM that reads it (ln_gemm_steps): where the Pipeline's
/// cost model finds the fused step's largest block shorter than the LayerNorm step's largest program and the GEMM
/// step's largest piece one after the other (on trn2 over 8 cores at seq 128 to 2048, each core then normalising the
/// rows its block reads; docs/kernels.md "Transformer block").
bool fuse_layernorm(const driver::DeviceInfo& info, const TransformerShape& s, const LnGemmLayout& l) {
  double fused = 0.0;
  try {
    fused = ln_gemm_split(info, l, s.cores).estimate;
  } catch (const std::invalid_argument&) {
    return false;
  }
  // The LayerNorm step's first core (layernorm_steps; te_transpose, so into the GEMM's moving operand).
  const LayerNormLayout ln = layernorm_step_layout(
      s, l.ln, 0, std::min(s.seq, rows_per_core(s.seq, int(info.sbuf_partitions), s.cores)), 0, l.gemm.moving_hbm);
  Pipeline gemm(info);  // the GEMM step's largest piece as gemm_steps builds it
  add_gemm(gemm, info, with_best_wave_pieces(info, split_gemm(info, l.gemm, s.cores).front().layout));
  return fused < layernorm_estimate(info, ln) + gemm.estimated_cycles();
}
/// The block's attention (step 5) on the row blocks of qkvT.
AttentionLayout block_attention(const TransformerShape& s, const TransformerBuffers& b) {
  const uint64_t D = uint64_t(s.d_model), T = uint64_t(s.seq);
  AttentionLayout at;
  at.seq = s.seq;
  at.heads = s.heads;
  at.head_dim = s.head_dim();
  at.causal = s.causal;
  at.te_transpose = s.te_transpose;
  at.cores = s.cores;
  at.qT_hbm = b.qkvT;
  at.kT_hbm = b.qkvT + D * T * 2;
  at.v_hbm = b.v;
  at.vT_hbm = b.qkvT + 2 * D * T * 2;  // the pieces read V^T where it is
  at.scores_hbm = b.scores;
  at.probs_hbm = b.probs;
  at.probsT_hbm = b.probsT;
  at.outT_hbm = b.attnT;
  at.out_type = isa::DataType::kBf16;  // the pv GEMMs' drains cast
  at.fused_softmax = true;             // the scores stay in PSUM where a row of keys fits a block
  at.fused_pieces = true;              // and P in SBUF, where a head's piece fits the core
  return at;
}
/// The block's MLP (step 7) on ln2T, with the residual h1, into out.
MlpLayout block_mlp(const TransformerShape& s, const TransformerInputs& in, const TransformerBuffers& b,
                    uint64_t out_hbm) {
  MlpLayout m;
  m.tokens = s.seq;
  m.d_model = s.d_model;
  m.d_ff = s.d_ff;
  m.cores = s.cores;
  m.xT_hbm = b.ln2T;
  m.w1_hbm = in.w1;
  m.b1_hbm = in.b1;
  m.w2_hbm = in.w2;
  m.b2_hbm = in.b2;
  m.gT_hbm = b.mlp_gT;
  m.residual = true;
  m.residual_hbm = b.h1;
  m.out_hbm = out_hbm;
  return m;
}
/// The projection (x + attn @ W_o + b_o per column, in the GEMM's drain) into h1; with `r` resident, W_o (the moving
/// operand) where the attention left it in SBUF.
GemmLayout block_proj(const TransformerShape& s, const TransformerInputs& in, const TransformerBuffers& b,
                      const TransformerResidency& r) {
  GemmEpilogue bias;
  bias.kind = GemmEpilogue::Kind::kColBiasAdd;
  bias.bias_hbm = in.b_o;
  bias.residual = true;
  bias.residual_hbm = in.x;
  GemmLayout g = bf16_gemm(s.d_model, s.seq, s.d_model, b.attnT, in.w_o, b.h1, isa::DataType::kFp32, bias);
  if (r.resident) {
    g.moving_in_sbuf = true;
    g.moving_sbuf = r.w_o;
    g.moving_sbuf_tile_bytes = sbuf_operand_tile_bytes(g.dtype, g.n);
    g.sbuf_limit = r.sbuf_end;
  }
  return g;
}
/// LN2 into the MLP's up GEMM (+ b1, GELU) into g^T, below `r`'s weights; with `r` resident, W1 (the stationary)
/// where the attention left it in SBUF.
LnGemmLayout block_up(const TransformerShape& s, const TransformerInputs& in, const TransformerBuffers& b,
                      const MlpLayout& mlp, const TransformerResidency& r) {
  LnGemmLayout up{fused_ln(s, b.h1, in.ln2_g, in.ln2_b), mlp_gemms(mlp).first, r.g > 0 ? r.g : r.sbuf_end};
  if (r.resident) {
    up.gemm.stationary_in_sbuf = true;
    up.gemm.stationary_sbuf = r.w1;
    up.gemm.stationary_sbuf_tile_bytes = sbuf_operand_tile_bytes(up.gemm.dtype, up.gemm.m);
  }
  return up;
}
/// W2's copies to where `r` keeps it, cut into the prefetch pieces the programs carry it in (prefetch_pieces of
/// kW2PieceLatencies engines' start-latency bytes): the attention pieces take the first ones, the projection + ln2 +
/// up GEMM programs the last w2_up (w2_up_pieces).
constexpr double kW2PieceLatencies = 4.0;
std::vector<isa::CopyFields> w2_pieces(const driver::DeviceInfo& info, const TransformerShape& s,
                                       const TransformerInputs& in, const TransformerResidency& r) {
  const isa::Dtype bf16 = isa::Dtype::kBf16;
  return prefetch_pieces(info,
                         sbuf_operand_copies(info, bf16, in.w2, s.d_ff, s.d_model, r.w2,
                                             sbuf_operand_tile_bytes(bf16, s.d_model)),
                         kW2PieceLatencies);
}
/// The projection's SBUF share in front of the fused ln2 + up GEMM of the same program (make_gemm_ln_gemm_program),
/// as fractions of the bytes below g^T: the one whose program the Pipeline estimates shortest.
constexpr double kProjSbufShares[] = {0.25, 0.375, 0.5};

/// From the projection to the down GEMM with g^T kept on chip (TransformerResidency::g), one piece per core over the
/// same tokens each: the projection's GEMM into h1 and the fused ln2 + up GEMM in one program
/// (make_gemm_ln_gemm_program: the projection keeps its h1 rows in SBUF as well as storing them, and the LayerNorm
/// reads each M tile there once its epilogue is done), the up GEMM's GELU output staying in SBUF at r.g, where the
/// down GEMM reads it as its stationary.
struct OnChipMlp {
  std::vector<GemmLayout> proj;
  std::vector<LnGemmLayout> up;
  std::vector<GemmLayout> down;
};
/// `up` (SBUF from its sbuf_base to its sbuf_end) behind `proj` in one program: proj's bytes from 0 within the share
/// of kProjSbufShares whose program the Pipeline estimates shortest, then its output kept for ln2 (h1's rows of the
/// piece, an M tile each), then up's. Throws std::invalid_argument when no share fits them.
void share_sbuf(const driver::DeviceInfo& info, GemmLayout* proj, LnGemmLayout* up) {
  double best = -1.0;
  GemmLayout best_proj = *proj;
  LnGemmLayout best_up = *up;
  std::string last_error = "no share of the SBUF below g^T fits the projection and the up GEMM";
  for (const double share : kProjSbufShares) {
    GemmLayout p = *proj;
    LnGemmLayout u = *up;
    p.sbuf_base = 0;
    p.sbuf_limit = uint32_t(double(up->sbuf_end) * share) / 64 * 64;
    p.out_kept_in_sbuf = true;
    p.out_sbuf = p.sbuf_limit;  // past the GEMM's own bytes
    p.out_sbuf_tile_bytes = uint32_t(ceil_div(uint64_t(p.n) * 4, 64) * 64);
    const uint64_t m_tiles = ceil_div(uint64_t(p.m), std::min(info.te_cols, info.psum_partitions));
    u.sbuf_base = uint32_t(p.out_sbuf + m_tiles * p.out_sbuf_tile_bytes);
    try {
      const double cycles = gemm_ln_gemm_estimate(info, p, u).cycles;
      if (best < 0 || cycles < best) best = cycles, best_proj = p, best_up = u;
    } catch (const std::invalid_argument& e) {
      last_error = e.what();
    }
  }
  if (best < 0) throw std::invalid_argument(last_error);
  *proj = best_proj, *up = best_up;
}
/// The pieces, the up programs each carrying the last `w2_up` of W2's prefetch pieces (w2_pieces).
OnChipMlp on_chip_mlp(const driver::DeviceInfo& info, const TransformerShape& s, const TransformerInputs& in,
                      const TransformerBuffers& b, const MlpLayout& mlp, const TransformerResidency& r, int w2_up) {
  const LnGemmLayout up = block_up(s, in, b, mlp, r);
  const GemmLayout down = mlp_down_gemm(mlp, r.w2, r.g);
  const std::vector<isa::CopyFields> w2 = w2_pieces(info, s, in, r);
  OnChipMlp o;
  for (const GemmPiece& p : split_gemm_grid(block_proj(s, in, b, r), r.g_tokens, s.d_model)) {  // M: the tokens
    o.proj.push_back(p.layout);
  }
  for (const GemmPiece& p : split_gemm_grid(up.gemm, up.gemm.m, r.g_tokens)) {  // N: the tokens
    LnGemmLayout l = ln_gemm_piece(up, p);
    l.prefetch.assign(w2.end() - std::clamp<std::ptrdiff_t>(w2_up, 0, std::ptrdiff_t(w2.size())), w2.end());
    l.gemm.out_in_sbuf = true;
    l.gemm.out_sbuf = r.g;
    l.gemm.out_sbuf_tile_bytes = r.g_tile_bytes;
    share_sbuf(info, &o.proj[o.up.size()], &l);
    o.up.push_back(l);
  }
  for (const GemmPiece& p : split_gemm_grid(down, r.g_tokens, down.n)) {  // M: the tokens
    GemmLayout g = p.layout;
    g.stationary_in_sbuf = true;  // the core's own tokens of g^T, from its column 0
    g.stationary_sbuf = r.g;
    g.stationary_sbuf_tile_bytes = r.g_tile_bytes;
    o.down.push_back(g);
  }
  return o;
}
/// on_chip_mlp's programs, piece i's projection and ln2 + up GEMM in one, pinned to core i, and its down GEMM.
KernelSequence mlp_on_chip_steps(const driver::DeviceInfo& info, const TransformerShape& s, const TransformerInputs& in,
                                 const TransformerBuffers& b, const MlpLayout& mlp, const TransformerResidency& r,
                                 int w2_up) {
  const OnChipMlp o = on_chip_mlp(info, s, in, b, mlp, r, w2_up);
  KernelSequence seq;
  for (std::size_t i = 0; i < o.up.size(); ++i) {
    const GemmLayout &p = o.proj[i], &g = o.up[i].gemm;
    const uint64_t macs = uint64_t(p.k) * uint64_t(p.m) * uint64_t(p.n) + uint64_t(g.k) * uint64_t(g.m) * uint64_t(g.n);
    seq.push_back({"proj+ln2+mlp up", make_gemm_ln_gemm_program(info, p, o.up[i]), macs, i > 0, int(i)});
  }
  for (std::size_t i = 0; i < o.down.size(); ++i) {
    const GemmLayout& g = o.down[i];
    const uint64_t macs = uint64_t(g.k) * uint64_t(g.m) * uint64_t(g.n);
    seq.push_back({mlp_down_name(mlp), make_gemm_program(info, g), macs, i > 0, int(i)});
  }
  return seq;
}
/// The copies that put W_o, W1 and all of W2 but its last `w2_up` prefetch pieces (w2_pieces: those the projection
/// + ln2 + up GEMM programs load) where `r` keeps them: the attention's prefetch.
std::vector<isa::CopyFields> block_prefetch(const driver::DeviceInfo& info, const TransformerShape& s,
                                            const TransformerInputs& in, const TransformerResidency& r, int w2_up) {
  const isa::Dtype bf16 = isa::Dtype::kBf16;
  std::vector<isa::CopyFields> c =
      sbuf_operand_copies(info, bf16, in.w_o, s.d_model, s.d_model, r.w_o, sbuf_operand_tile_bytes(bf16, s.d_model));
  const std::vector<isa::CopyFields> w2 = w2_pieces(info, s, in, r);
  c.insert(c.end(), w2.begin(), w2.end() - std::clamp<std::ptrdiff_t>(w2_up, 0, std::ptrdiff_t(w2.size())));
  const std::vector<isa::CopyFields> w1 =
      sbuf_operand_copies(info, bf16, in.w1, s.d_model, s.d_ff, r.w1, sbuf_operand_tile_bytes(bf16, s.d_ff));
  c.insert(c.end(), w1.begin(), w1.end());
  return c;
}
/// How many of W2's prefetch pieces (w2_pieces, the last ones) the projection + ln2 + up GEMM programs load instead
/// of the attention pieces (g^T on chip; else none): W2 dealt between them as the attention deals its prefetch over
/// its pieces (deal_prefetch), by the time their DMA engines are idle by the Pipeline's cost figures: an up program's
/// (gemm_ln_gemm_estimate's dma_idle, its first piece) against a core's attention pieces' (attention_dma_idle, the
/// least of any core). W_o and W1 stay with the attention: the programs that read them are the up programs.
int w2_up_pieces(const driver::DeviceInfo& info, const TransformerShape& s, const TransformerBuffers& b,
                 const MlpLayout& mlp, const TransformerResidency& r) {
  if (!r.resident || r.g == 0) return 0;
  const OnChipMlp o = on_chip_mlp(info, s, {}, b, mlp, r, 0);
  if (o.up.empty()) return 0;
  const double up_idle = std::max(0.0, gemm_ln_gemm_estimate(info, o.proj.front(), o.up.front()).dma_idle);
  AttentionLayout at = block_attention(s, b);
  at.sbuf_end = r.sbuf_end;
  at.prefetch = block_prefetch(info, s, {}, r, 0);
  const double attention_idle = attention_dma_idle(info, at);
  const double n = double(w2_pieces(info, s, {}, r).size());
  return up_idle + attention_idle > 0 ? int(std::llround(n * up_idle / (up_idle + attention_idle))) : 0;
}
}  // namespace

TransformerFusion transformer_fusion(const driver::DeviceInfo& info, const TransformerShape& shape) {
  check_shape(shape);
  const TransformerBuffers b = transformer_buffers(shape, 0);
  const MlpLayout mlp = block_mlp(shape, {}, b, 0);
  TransformerFusion f;
  if (!shape.te_transpose) return f;
  f.ln1_qkv = fuse_layernorm(info, shape, ln1_qkv(shape, {}, b));
  f.ln2_up = !mlp_in_rows(info, mlp) &&
             fuse_layernorm(info, shape, {fused_ln(shape, b.h1, 0, 0), mlp_gemms(mlp).first});
  return f;
}

bool transformer_mlp_in_rows(const driver::DeviceInfo& info, const TransformerShape& shape) {
  check_shape(shape);
  return mlp_in_rows(info, block_mlp(shape, {}, transformer_buffers(shape, 0), 0));
}

bool transformer_attention_in_pieces(const driver::DeviceInfo& info, const TransformerShape& shape) {
  check_shape(shape);
  return attention_pieces(info, block_attention(shape, transformer_buffers(shape, 0))) > 0;
}

TransformerBuffers transformer_buffers(const TransformerShape& s, uint64_t scratch) {
  check_shape(s);
  const uint64_t T = s.seq, D = s.d_model, H = s.heads, F = s.d_ff;
  uint64_t at = (scratch + 63) / 64 * 64;
  auto take = [&](uint64_t bytes) {
    const uint64_t a = at;
    at = (at + bytes + 63) / 64 * 64;
    return a;
  };
  TransformerBuffers b;
  b.ln1 = take(T * D * 2);
  b.ln1T = take(D * T * 2);
  b.qkvT = take(3 * D * T * 2);
  b.v = take(D * T * 2);
  b.scores = take(H * T * T * 4);
  b.probs = take(H * T * T * 2);
  b.probsT = take(H * T * T * 2);
  b.attnT = take(D * T * 2);
  b.h1 = take(T * D * 4);
  b.ln2 = take(T * D * 2);
  b.ln2T = take(D * T * 2);
  b.mlp_gT = take(F * T * 2);
  b.end = at;
  return b;
}

namespace {
/// Where the weights and g^T would lie for `s` on `info` (the offsets, by their sizes), with resident false where the
/// block cannot keep them: a TE K tile beyond the SBUF's partitions, ln2 not fused into the up GEMM (`fused`), the
/// weights larger than a partition, or fewer attention pieces than cores. g 0 where g^T does not fit below the
/// weights or the up GEMM's M tile is not the TE's K tile. The kernels' own fit checks are transformer_residency's.
TransformerResidency residency_layout(const driver::DeviceInfo& info, const TransformerShape& s,
                                      const TransformerFusion& fused) {
  const uint64_t kt = isa::te_max_k(isa::Dtype::kBf16, info.te_rows), pb = info.sbuf_partition_bytes;
  if (kt < 1 || kt > info.sbuf_partitions || !fused.ln2_up) return {};
  // W_o [D, D] and W2 [F, D]: D columns per K tile; W1 [D, F]: F.
  const uint64_t tile = sbuf_operand_tile_bytes(isa::Dtype::kBf16, s.d_model);
  const uint64_t wo_bytes = ceil_div(uint64_t(s.d_model), kt) * tile, w2_bytes = ceil_div(uint64_t(s.d_ff), kt) * tile;
  const uint64_t w1_bytes = ceil_div(uint64_t(s.d_model), kt) * sbuf_operand_tile_bytes(isa::Dtype::kBf16, s.d_ff);
  const uint64_t bytes = wo_bytes + w2_bytes + w1_bytes;
  if (bytes >= pb) return {};
  TransformerResidency r;
  r.resident = true;
  r.sbuf_end = uint32_t((pb - bytes) / 64 * 64);
  r.w_o = r.sbuf_end;
  r.w2 = uint32_t(r.w_o + wo_bytes);
  r.w1 = uint32_t(r.w2 + w2_bytes);
  // g^T below them: each core's tokens (the down GEMM's M split) in F / K-tile M tiles of the up GEMM, which must be
  // the down GEMM's K tiles.
  const int tokens = std::min(s.seq, rows_per_core(s.seq, int(std::max<uint32_t>(1, info.te_cols)), s.cores));
  const uint64_t g_tile = (uint64_t(tokens) * 2 + 63) / 64 * 64, g_bytes = ceil_div(uint64_t(s.d_ff), kt) * g_tile;
  if (std::min(info.te_cols, info.psum_partitions) == kt && g_bytes < r.sbuf_end) {
    r.g = uint32_t((r.sbuf_end - g_bytes) / 64 * 64);
    r.g_tile_bytes = uint32_t(g_tile);
    r.g_tokens = tokens;
  }
  // The attention pieces load the weights: every core needs one at least.
  AttentionLayout at = block_attention(s, transformer_buffers(s, 0));
  at.sbuf_end = r.sbuf_end;
  const int pieces = attention_pieces(info, at);
  if (pieces == 0 || int64_t(pieces) * s.heads < s.cores) return {};
  return r;
}
}  // namespace

TransformerResidency transformer_residency(const driver::DeviceInfo& info, const TransformerShape& s,
                                           bool by_estimate) {
  check_shape(s);
  TransformerResidency r = residency_layout(info, s, transformer_fusion(info, s));
  if (!r.resident) return {};
  const TransformerBuffers b = transformer_buffers(s, 0);
  const MlpLayout mlp = block_mlp(s, {}, b, 0);
  try {
    // The fused ln2 + up GEMM must fit below the weights (and, behind the projection, below g^T: else g^T is not
    // kept); then what the three GEMM steps save against what the loads add to the attention's busiest core, by the
    // Pipeline's estimates.
    if (r.g > 0) {
      bool fits = true;
      try {
        const OnChipMlp o = on_chip_mlp(info, s, {}, b, mlp, r, 0);  // on_chip_mlp fits the projection and up pieces
        for (const GemmLayout& g : o.down) plan_gemm(info, g);
      } catch (const std::invalid_argument&) {
        fits = false;
      }
      if (!fits) r.g = r.g_tile_bytes = 0, r.g_tokens = 0;
    }
    const double up = ln_gemm_split(info, block_up(s, {}, b, mlp, r), s.cores).estimate;
    if (!by_estimate) return r;
    AttentionLayout at = block_attention(s, b);
    at.sbuf_end = r.sbuf_end;
    at.prefetch = block_prefetch(info, s, {}, r, w2_up_pieces(info, s, b, mlp, r));
    const double saved = ln_gemm_split(info, block_up(s, {}, b, mlp, {}), s.cores).estimate - up +
                         gemm_steps_estimate(info, block_proj(s, {}, b, {}), s.cores) -
                         gemm_steps_estimate(info, block_proj(s, {}, b, r), s.cores) +
                         gemm_steps_estimate(info, mlp_down_gemm(mlp), s.cores) -
                         gemm_steps_estimate(info, mlp_down_gemm(mlp, r.w2, r.sbuf_end), s.cores);
    if (attention_prefetch_cost(info, at) >= saved) return {};
  } catch (const std::invalid_argument&) {
    return {};
  }
  return r;
}

KernelSequence make_transformer_programs(const driver::DeviceInfo& info, const TransformerShape& s,
                                         const TransformerInputs& in, const TransformerBuffers& b,
                                         uint64_t out_hbm) {
  // W_o, W2 and W1 resident in SBUF where transformer_residency finds that shorter.
  return make_transformer_programs(info, s, in, b, out_hbm, transformer_residency(info, s));
}

KernelSequence make_transformer_programs(const driver::DeviceInfo& info, const TransformerShape& s,
                                         const TransformerInputs& in, const TransformerBuffers& b,
                                         uint64_t out_hbm, const TransformerResidency& resident) {
  check_shape(s);
  // Each LayerNorm in the programs of the GEMM that reads it (ln_gemm_kernel.h) where transformer_fusion finds that
  // shorter: ln1T (ln2T) then stays in SBUF.
  const TransformerFusion fused = transformer_fusion(info, s);
  if (resident.resident) {  // the layout the shape takes (g^T kept or not); the kernels check their own fit
    const TransformerResidency want = residency_layout(info, s, fused);
    const bool g_ok = resident.g == 0 || (resident.g == want.g && resident.g_tile_bytes == want.g_tile_bytes &&
                                          resident.g_tokens == want.g_tokens);
    if (!want.resident || want.sbuf_end != resident.sbuf_end || want.w_o != resident.w_o ||
        want.w2 != resident.w2 || want.w1 != resident.w1 || !g_ok) {
      throw std::invalid_argument(fmt::format(
          "transformer block: weights resident from SBUF offset {} (W_o at {}, W2 at {}, W1 at {}, g^T at {}) are not "
          "what the shape takes on this device ({})",
          resident.sbuf_end, resident.w_o, resident.w2, resident.w1, resident.g,
          want.resident ? fmt::format("from {}, g^T at {}", want.sbuf_end, want.g) : "none"));
    }
  }
  const uint64_t T = s.seq, D = s.d_model, d = s.head_dim();
  KernelSequence seq;
  const LnGemmLayout qkv = ln1_qkv(s, in, b);
  if (fused.ln1_qkv) {
    append(&seq, ln_gemm_steps(info, "ln1+qkv gemm+bias", qkv, s.cores));
  } else {
    append(&seq, layernorm_steps(info, "ln1", s, in.x, in.ln1_g, in.ln1_b, b.ln1, b.ln1T));
    const GemmLayout& g = qkv.gemm;
    append(&seq, gemm_steps(info, "qkv gemm+bias", g.k, g.m, g.n, g.stationary_hbm, g.moving_hbm, g.out_hbm, s.cores,
                            g.out_type, g.epilogue));
  }

  // V^T (rows 2D.. of qkvT) -> V_h [T, d] per head: one transposing copy per head, the heads split over the cores
  // (a DMA-only step: one core's engines alone took 30 k cycles at T = 2048). Attention pieces read V^T themselves
  // (transposing loads, AttentionLayout::vT_hbm): no step then.
  AttentionLayout at = block_attention(s, b);
  const MlpLayout mlp = block_mlp(s, in, b, out_hbm);
  // W2's prefetch pieces that the projection + ln2 + up GEMM programs load (g^T on chip), the rest the attention's.
  const int w2_up = w2_up_pieces(info, s, b, mlp, resident);
  if (resident.resident) {  // the pieces load W_o, W2 (or a share of it) and W1 above their own bytes
    at.sbuf_end = resident.sbuf_end;
    at.prefetch = block_prefetch(info, s, in, resident, w2_up);
  }
  if (attention_pieces(info, at) == 0) {
    append(&seq, row_split_steps("v heads", s.heads, 1, s.cores, [&](int h0, int n) {
      std::vector<isa::CopyFields> vcopies;
      for (int h = h0; h < h0 + n; ++h) {
        vcopies.push_back(transpose_copy(b.qkvT + (2 * D + h * d) * T * 2, isa::DataType::kBf16, b.v + h * T * d * 2,
                                         isa::DataType::kBf16, static_cast<int>(d), s.seq));
      }
      return KernelStep{"v heads", dma_program(info, vcopies), 0};
    }));
  }
  append(&seq, make_attention_programs(info, at));

  if (fused.ln2_up && resident.g > 0) {  // the projection in the programs of ln2 + the up GEMM
    append(&seq, mlp_on_chip_steps(info, s, in, b, mlp, resident, w2_up));
    return seq;
  }
  append(&seq, gemm_steps(info, "proj gemm+bias+residual", block_proj(s, in, b, resident), s.cores));
  if (fused.ln2_up) {
    append(&seq, ln_gemm_steps(info, "ln2+mlp up gemm+gelu", block_up(s, in, b, mlp, resident), s.cores));
    append(&seq, mlp_down_steps(info, mlp, resident.w2, resident.sbuf_end));
  } else {
    append(&seq, layernorm_steps(info, "ln2", s, b.h1, in.ln2_g, in.ln2_b, b.ln2, b.ln2T));
    append(&seq, make_mlp_programs(info, mlp));
  }
  return seq;
}

}  // namespace trnsim::kernels
