// Golden composite workloads (transformer_golden.h), step by step in the device kernels' order.
#include "firmware/golden/transformer_golden.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/nn_golden.h"

namespace trnsim::golden {

namespace {
constexpr uint32_t kOneF32 = 0x3F800000u;

void require_size(const Patterns& v, uint64_t n, const char* what) {
  if (v.size() != n) {
    throw std::invalid_argument(std::string("golden composite: ") + what + " has " + std::to_string(v.size()) +
                                " elements, expected " + std::to_string(n));
  }
}

std::vector<uint16_t> narrow16(const Patterns& v) { return std::vector<uint16_t>(v.begin(), v.end()); }

/// Rows [r0, r0 + n) of a row-major tensor with `cols` columns.
Patterns rows_of(const Patterns& v, uint64_t r0, uint64_t n, uint64_t cols) {
  return Patterns(v.begin() + static_cast<std::ptrdiff_t>(r0 * cols),
                  v.begin() + static_cast<std::ptrdiff_t>((r0 + n) * cols));
}

void put_rows(Patterns* dst, uint64_t r0, const Patterns& src) {
  std::copy(src.begin(), src.end(), dst->begin() + static_cast<std::ptrdiff_t>(r0));
}
}  // namespace

Patterns cast(const Patterns& in, isa::DataType in_type, isa::DataType out_type) {
  Patterns out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = element_from_f32(out_type, element_to_f32(in_type, in[i]), /*saturate=*/true);
  }
  return out;
}

Patterns transpose_cast(int rows, int cols, const Patterns& in, isa::DataType in_type, isa::DataType out_type) {
  require_size(in, uint64_t(rows) * cols, "transpose input");
  Patterns out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      out[size_t(c) * rows + r] =
          element_from_f32(out_type, element_to_f32(in_type, in[size_t(r) * cols + c]), /*saturate=*/true);
    }
  return out;
}

Patterns row_bias_activation(int rows, int cols, const Patterns& in, const Patterns& bias, isa::ActFunc f,
                             isa::DataType out_type) {
  require_size(in, uint64_t(rows) * cols, "bias+activation input");
  require_size(bias, uint64_t(rows), "row bias");
  Patterns out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const size_t i = size_t(r) * cols + c;
      const uint32_t z = activation_input(in[i], kOneF32, bias[size_t(r)]);
      out[i] = element_from_f32(out_type, activation_device(f, z), /*saturate=*/true);
    }
  return out;
}

Patterns col_bias_add(int rows, int cols, const Patterns& in, const Patterns& bias, const Patterns* residual,
                      isa::DataType out_type) {
  require_size(in, uint64_t(rows) * cols, "bias-add input");
  require_size(bias, uint64_t(cols), "column bias");
  if (residual) require_size(*residual, uint64_t(rows) * cols, "residual");
  Patterns out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const size_t i = size_t(r) * cols + c;
      uint32_t v = f32_add(in[i], bias[size_t(c)]);
      if (residual) v = f32_add((*residual)[i], v);
      out[i] = element_from_f32(out_type, v, /*saturate=*/true);
    }
  return out;
}

Patterns gemm_bf16(int k, int m, int n, const Patterns& stationary, const Patterns& moving, int tile_rows) {
  GemmOperands ops;
  ops.dtype = isa::Dtype::kBf16;
  ops.k = k;
  ops.m = m;
  ops.n = n;
  ops.stationary = narrow16(stationary);
  ops.moving = narrow16(moving);
  return gemm(ops, tile_rows);
}

MlpResult mlp(int tokens, int d_model, int d_ff, const Patterns& xT, const MlpParams& p, const Patterns* residual,
              int tile_rows) {
  require_size(xT, uint64_t(d_model) * tokens, "mlp xT");
  MlpResult r;
  r.hT = gemm_bf16(d_model, d_ff, tokens, p.w1, xT, tile_rows);
  r.gT = row_bias_activation(d_ff, tokens, r.hT, p.b1, isa::ActFunc::kGeluTanh, isa::DataType::kBf16);
  r.y = gemm_bf16(d_ff, tokens, d_model, r.gT, p.w2, tile_rows);
  r.out = col_bias_add(tokens, d_model, r.y, p.b2, residual, isa::DataType::kFp32);
  return r;
}

AttentionResult attention(int seq, int heads, int head_dim, bool causal, bool te_transpose, const Patterns& qT,
                          const Patterns& kT, const Patterns& v, int tile_rows, bool piece_order) {
  const uint64_t T = seq, H = heads, d = head_dim, tt = T * T;
  require_size(qT, H * d * T, "attention qT");
  require_size(kT, H * d * T, "attention kT");
  require_size(v, H * T * d, "attention v");
  AttentionResult r;
  r.scores.resize(H * tt);
  r.probs.resize(H * tt);
  r.probsT.resize(H * tt);
  r.outT.resize(H * d * T);
  for (uint64_t h = 0; h < H; ++h) {
    put_rows(&r.scores, h * tt,
             gemm_bf16(head_dim, seq, seq, rows_of(qT, h * d, d, T), rows_of(kT, h * d, d, T), tile_rows));
  }
  SoftmaxSpec sm;
  sm.cols = seq;
  sm.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  sm.causal = causal;
  sm.in_type = isa::DataType::kFp32;
  sm.out_type = isa::DataType::kBf16;
  sm.normalise = !piece_order;
  Patterns recip;  // [H, T]: each query's 1 / s
  if (causal) {
    sm.rows = seq;
    for (uint64_t h = 0; h < H; ++h) {
      Patterns rh;
      put_rows(&r.probs, h * tt, softmax_rows(sm, rows_of(r.scores, h * T, T, T), &rh));
      recip.insert(recip.end(), rh.begin(), rh.end());
    }
  } else {
    sm.rows = seq * heads;
    r.probs = softmax_rows(sm, r.scores, &recip);
  }
  for (uint64_t h = 0; h < H; ++h) {
    const Patterns ph = rows_of(r.probs, h * T, T, T);
    put_rows(&r.probsT, h * tt,
             te_transpose ? transpose_te(isa::Dtype::kBf16, seq, seq, ph, tile_rows, isa::DataType::kBf16)
                          : transpose_cast(seq, seq, ph, isa::DataType::kBf16, isa::DataType::kBf16));
  }
  // O_h^T = V_h^T P_h^T; causal in piece order, each tile of queries over the key tiles up to its own.
  const uint64_t R = uint64_t(std::max(1, tile_rows));
  for (uint64_t h = 0; h < H; ++h) {
    const Patterns vh = rows_of(v, h * T, T, d), pt = rows_of(r.probsT, h * T, T, T);
    if (!(piece_order && causal)) {
      put_rows(&r.outT, h * d * T, gemm_bf16(seq, head_dim, seq, vh, pt, tile_rows));
      continue;
    }
    for (uint64_t q0 = 0; q0 < T; q0 += R) {
      const uint64_t n = std::min(R, T - q0), keys = std::min(T, q0 + R);
      Patterns ptq(keys * n);  // P^T[0 .. keys, q0 .. q0 + n)
      for (uint64_t k = 0; k < keys; ++k) {
        for (uint64_t j = 0; j < n; ++j) ptq[k * n + j] = pt[k * T + q0 + j];
      }
      const Patterns o = gemm_bf16(int(keys), head_dim, int(n), rows_of(v, h * T, keys, d), ptq, tile_rows);
      for (uint64_t c = 0; c < d; ++c) {
        for (uint64_t j = 0; j < n; ++j) r.outT[(h * d + c) * T + q0 + j] = o[c * n + j];
      }
    }
  }
  if (piece_order) {  // O^T[h*d + c, q] * (1 / s of head h's query q): one FP32 multiply each
    for (uint64_t h = 0; h < H; ++h) {
      for (uint64_t c = 0; c < d; ++c) {
        for (uint64_t q = 0; q < T; ++q) {
          uint32_t& o = r.outT[(h * d + c) * T + q];
          o = alu(isa::AluOp::kMultiply, o, recip[h * T + q]);
        }
      }
    }
  }
  return r;
}

TransformerResult transformer_block(const TransformerSpec& s, const Patterns& x, const TransformerParams& p,
                                    int tile_rows) {
  if (s.seq < 1 || s.d_model < 1 || s.heads < 1 || s.d_ff < 1 || s.d_model % s.heads) {
    throw std::invalid_argument("golden transformer block: bad shape");
  }
  const uint64_t T = s.seq, D = s.d_model, H = s.heads, d = D / H;
  require_size(x, T * D, "x");
  auto transpose = [&](const Patterns& in, int rows, int cols) {
    return s.te_transpose ? transpose_te(isa::Dtype::kBf16, rows, cols, in, tile_rows, isa::DataType::kBf16)
                          : transpose_cast(rows, cols, in, isa::DataType::kBf16, isa::DataType::kBf16);
  };
  NormSpec ln;
  ln.rows = s.seq;
  ln.cols = s.d_model;
  ln.eps = s.ln_eps;
  ln.in_type = isa::DataType::kFp32;
  ln.out_type = isa::DataType::kBf16;

  TransformerResult r;
  r.ln1 = layernorm_rows(ln, x, p.ln1_g, p.ln1_b);
  r.ln1T = transpose(r.ln1, s.seq, s.d_model);
  r.qkvT32 = gemm_bf16(s.d_model, 3 * s.d_model, s.seq, p.w_qkv, r.ln1T, tile_rows);
  r.qkvT = row_bias_activation(3 * s.d_model, s.seq, r.qkvT32, p.b_qkv, isa::ActFunc::kIdentity,
                               isa::DataType::kBf16);
  r.v.resize(D * T);
  for (uint64_t h = 0; h < H; ++h) {
    put_rows(&r.v, h * T * d,
             transpose_cast(int(d), s.seq, rows_of(r.qkvT, 2 * D + h * d, d, T), isa::DataType::kBf16,
                            isa::DataType::kBf16));
  }
  r.attn = attention(s.seq, s.heads, int(d), s.causal, s.te_transpose, rows_of(r.qkvT, 0, D, T),
                     rows_of(r.qkvT, D, D, T), r.v, tile_rows, s.piece_order);
  r.attnT32 = r.attn.outT;
  r.attnT = cast(r.attnT32, isa::DataType::kFp32, isa::DataType::kBf16);
  r.proj = gemm_bf16(s.d_model, s.seq, s.d_model, r.attnT, p.w_o, tile_rows);
  r.h1 = col_bias_add(s.seq, s.d_model, r.proj, p.b_o, &x, isa::DataType::kFp32);
  r.ln2 = layernorm_rows(ln, r.h1, p.ln2_g, p.ln2_b);
  r.ln2T = transpose(r.ln2, s.seq, s.d_model);
  r.mlp = mlp(s.seq, s.d_model, s.d_ff, r.ln2T, p.mlp, &r.h1, tile_rows);
  return r;
}

}  // namespace trnsim::golden
