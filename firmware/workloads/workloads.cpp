// The workload registry and run_and_check (workloads.h). The composite workloads are sequences of kernel programs
// (firmware/kernels/*_kernel.h) checked against the golden composites (firmware/golden/*_golden.h); the GEMM ones
// are one tiled GEMM program checked against golden::gemm.
#include "firmware/workloads/workloads.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/nn_golden.h"
#include "firmware/golden/transformer_golden.h"
#include "firmware/kernels/attention_kernel.h"
#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/gemm_kernel.h"
#include "firmware/kernels/gemm_launch.h"
#include "firmware/kernels/mlp_kernel.h"
#include "firmware/kernels/norm_kernel.h"
#include "firmware/kernels/softmax_kernel.h"
#include "firmware/kernels/transformer_kernel.h"

namespace trnsim::workloads {

uint64_t elements(const Shape& s) {
  uint64_t n = 1;
  for (auto d : s) n *= uint64_t(d);
  return n;
}

std::string shape_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

namespace {

using isa::DataType;
using Addrs = std::map<std::string, uint64_t>;

uint64_t alloc(driver::Driver& drv, const Shape& s, DataType t) { return drv.alloc(elements(s) * isa::data_type_bytes(t)); }

std::string step_group(const std::string& name) {
  // "head 3 scores" -> "head * scores"
  if (name.rfind("head ", 0) == 0) {
    const auto sp = name.find(' ', 5);
    if (sp != std::string::npos) return "head * " + name.substr(sp + 1);
  }
  return name;
}

// What a composite workload's shape is made of: the options it reads and the weights it holds. Only those are
// checked and named (layernorm has no --heads, --d-ff or weight matrix, so their defaults must not reject its shape).
struct ShapeUse {
  bool heads = false;         ///< splits d_model into --heads heads (softmax, attention, transformer-block)
  bool attn_weights = false;  ///< W_qkv, W_o: 4 d_model^2 elements
  bool d_ff = false;          ///< the MLP's W1, W2: 2 d_model d_ff elements
};

void check_shape(const Params& o, const ShapeUse& use) {
  const auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.seq < 1 || o.d_model < 1 || o.heads < 1 || o.d_ff < 1) bad("--seq, --d-model, --heads, --d-ff must be >= 1");
  if (use.heads && o.d_model % o.heads) {
    bad(fmt::format("--d-model {} is not a multiple of --heads {}", o.d_model, o.heads));
  }
  const uint64_t scores = uint64_t(use.heads ? o.heads : 1) * o.seq * o.seq;
  const uint64_t weights = (use.attn_weights ? 4ull * o.d_model * o.d_model : 0) +
                           (use.d_ff ? 2ull * o.d_model * o.d_ff : 0);
  if (o.seq > 4096 || o.d_model > 16384 || (use.d_ff && o.d_ff > 65535) || (use.heads && scores > (1ull << 26)) ||
      weights > (1ull << 28)) {
    std::string given = fmt::format("--seq {} --d-model {}", o.seq, o.d_model);
    std::string limits = "seq <= 4096, d_model <= 16384";
    if (use.heads) given += fmt::format(" --heads {}", o.heads), limits += ", heads x seq^2 <= 2^26";
    if (use.d_ff) given += fmt::format(" --d-ff {}", o.d_ff), limits += ", d_ff <= 65535";
    if (use.attn_weights || use.d_ff) limits += ", weights <= 2^28 elements";
    bad(fmt::format("{}: too large for this command ({}: the host keeps several copies of each tensor for the "
                    "golden check)", given, limits));
  }
}

std::string gpt2_dims(const Params& o) {
  return fmt::format("seq {}, d_model {}, heads {} x {}, d_ff {}", o.seq, o.d_model, o.heads, o.d_model / o.heads,
                     o.d_ff);
}

Workload softmax_instance(const Params& o) {
  const int rows = o.heads * o.seq, cols = o.seq, d = o.d_model / o.heads;
  const float scale = kernels::attention_scale(d);
  Workload w;
  w.title = fmt::format("softmax along rows of attention scores [{} = heads x seq, {}] FP32, scale 1/sqrt({})",
                        rows, cols, d);
  w.inputs = {{"x", {rows, cols}, DataType::kFp32, 0.0f, std::sqrt(float(d)), "scores"}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    const uint64_t x = in.at("x"), out = alloc(drv, {rows, cols}, DataType::kFp32);
    // Rows are independent: split over the cores in whole row tiles.
    *seq = kernels::row_split_steps("softmax", rows, int(drv.info().sbuf_partitions), o.cores, [&](int r0, int n) {
      kernels::SoftmaxLayout l;
      l.rows = n;
      l.cols = cols;
      l.in_hbm = x + uint64_t(r0) * uint64_t(cols) * 4;
      l.out_hbm = out + uint64_t(r0) * uint64_t(cols) * 4;
      l.scale = scale;
      return kernels::KernelStep{"", kernels::make_softmax_program(drv.info(), l), 0};
    });
    outs->push_back({"out", {rows, cols}, DataType::kFp32, out});
  };
  w.golden = [=](const Tensors& in, const driver::DeviceInfo&) {
    golden::SoftmaxSpec s;
    s.rows = rows;
    s.cols = cols;
    s.scale = scale;
    return Tensors{{"out", golden::softmax_rows(s, in.at("x"))}};
  };
  return w;
}

Workload norm_instance(const Params& o, bool rms) {
  const int rows = o.seq, cols = o.d_model;
  Workload w;
  w.title = fmt::format("{} of [{} tokens, {}] FP32", rms ? "RMSNorm" : "LayerNorm", rows, cols);
  w.inputs = {{"x", {rows, cols}, DataType::kFp32, 0.0f, 1.0f, ""},
              {"gamma", {cols}, DataType::kFp32, 1.0f, 0.1f, ""}};
  if (!rms) w.inputs.push_back({"beta", {cols}, DataType::kFp32, 0.0f, 0.1f, ""});
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    const uint64_t out = alloc(drv, {rows, cols}, DataType::kFp32);
    // Rows are independent: split over the cores in whole row tiles.
    *seq = kernels::row_split_steps(rms ? "rmsnorm" : "layernorm", rows, int(drv.info().sbuf_partitions), o.cores,
                                    [&](int r0, int n) {
      const uint64_t row = uint64_t(r0) * uint64_t(cols) * 4;
      if (rms) {
        kernels::RmsNormLayout l;
        l.rows = n, l.cols = cols, l.in_hbm = in.at("x") + row, l.out_hbm = out + row, l.gamma_hbm = in.at("gamma");
        return kernels::KernelStep{"", kernels::make_rmsnorm_program(drv.info(), l), 0};
      }
      kernels::LayerNormLayout l;
      l.rows = n, l.cols = cols, l.in_hbm = in.at("x") + row, l.out_hbm = out + row, l.gamma_hbm = in.at("gamma");
      l.beta_hbm = in.at("beta");
      return kernels::KernelStep{"", kernels::make_layernorm_program(drv.info(), l), 0};
    });
    outs->push_back({"out", {rows, cols}, DataType::kFp32, out});
  };
  w.golden = [=](const Tensors& in, const driver::DeviceInfo&) {
    golden::NormSpec s;
    s.rows = rows;
    s.cols = cols;
    if (rms) {
      s.eps = kernels::RmsNormLayout{}.eps;
      return Tensors{{"out", golden::rmsnorm_rows(s, in.at("x"), in.at("gamma"))}};
    }
    s.eps = kernels::LayerNormLayout{}.eps;
    return Tensors{{"out", golden::layernorm_rows(s, in.at("x"), in.at("gamma"), in.at("beta"))}};
  };
  return w;
}

Workload mlp_instance(const Params& o) {
  const int T = o.seq, D = o.d_model, F = o.d_ff;
  Workload w;
  w.title = fmt::format("GELU MLP (GPT-2 c_fc, gelu_tanh, c_proj), {} tokens x {} -> {} -> {}", T, D, F, D);
  w.inputs = {{"x", {T, D}, DataType::kFp32, 0.0f, 1.0f, ""},
              {"w1", {D, F}, DataType::kBf16, 0.0f, 0.02f, "c_fc weight"},
              {"b1", {F}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w2", {F, D}, DataType::kBf16, 0.0f, 0.02f, "c_proj weight"},
              {"b2", {D}, DataType::kFp32, 0.0f, 0.02f, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::MlpLayout l;
    l.tokens = T, l.d_model = D, l.d_ff = F, l.cores = o.cores;
    l.xT_hbm = alloc(drv, {D, T}, DataType::kBf16);
    l.w1_hbm = in.at("w1"), l.b1_hbm = in.at("b1"), l.w2_hbm = in.at("w2"), l.b2_hbm = in.at("b2");
    l.gT_hbm = alloc(drv, {F, T}, DataType::kBf16);
    l.out_hbm = alloc(drv, {T, D}, DataType::kFp32);
    seq->push_back({"x transpose", kernels::dma_program(drv.info(), {kernels::transpose_copy(
                                       in.at("x"), DataType::kFp32, l.xT_hbm, DataType::kBf16, T, D)}), 0});
    kernels::append(seq, kernels::make_mlp_programs(drv.info(), l));
    *outs = {{"out", {T, D}, DataType::kFp32, l.out_hbm}, {"xT", {D, T}, DataType::kBf16, l.xT_hbm}};
    // g^T reaches HBM only from the two-GEMM steps (the rows programs keep it in SBUF).
    if (!kernels::mlp_in_rows(drv.info(), l)) outs->push_back({"gT", {F, T}, DataType::kBf16, l.gT_hbm});
  };
  w.golden = [=](const Tensors& in, const driver::DeviceInfo& info) {
    const int te_rows = int(info.te_rows);
    const Patterns xT = golden::transpose_cast(T, D, in.at("x"), DataType::kFp32, DataType::kBf16);
    const golden::MlpParams p{in.at("w1"), in.at("b1"), in.at("w2"), in.at("b2")};
    golden::MlpResult r = golden::mlp(T, D, F, xT, p, nullptr, te_rows);
    return Tensors{{"out", r.out}, {"xT", xT}, {"gT", r.gT}};
  };
  return w;
}

Workload attention_instance(const Params& o) {
  const int T = o.seq, D = o.d_model, H = o.heads, d = D / H;
  const bool te_t = !o.dma_transpose;
  Workload w;
  w.title = fmt::format("causal multi-head attention, {} tokens, {} head{} x {}: softmax(Q K^T / sqrt({})) V", T, H,
                        H == 1 ? "" : "s", d, d);
  w.inputs = {{"q", {T, D}, DataType::kFp32, 0.0f, 1.0f, "head h: columns h*d .."},
              {"k", {T, D}, DataType::kFp32, 0.0f, 1.0f, ""},
              {"v", {T, D}, DataType::kFp32, 0.0f, 1.0f, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::AttentionLayout l;
    l.seq = T, l.heads = H, l.head_dim = d, l.causal = true, l.te_transpose = te_t, l.cores = o.cores;
    l.qT_hbm = alloc(drv, {D, T}, DataType::kBf16);
    l.kT_hbm = alloc(drv, {D, T}, DataType::kBf16);
    l.v_hbm = alloc(drv, {H, T, d}, DataType::kBf16);
    l.scores_hbm = alloc(drv, {H, T, T}, DataType::kFp32);
    l.probs_hbm = alloc(drv, {H, T, T}, DataType::kBf16);
    l.probsT_hbm = alloc(drv, {H, T, T}, DataType::kBf16);
    l.outT_hbm = alloc(drv, {D, T}, DataType::kFp32);
    const uint64_t out = alloc(drv, {T, D}, DataType::kFp32);
    std::vector<isa::CopyFields> prep = {
        kernels::transpose_copy(in.at("q"), DataType::kFp32, l.qT_hbm, DataType::kBf16, T, D),
        kernels::transpose_copy(in.at("k"), DataType::kFp32, l.kT_hbm, DataType::kBf16, T, D)};
    for (int h = 0; h < H; ++h) {  // v[:, h*d ..] -> V_h [T, d] BF16
      isa::CopyFields c;
      c.src_type = DataType::kFp32, c.dst_type = DataType::kBf16;
      c.src_space = c.dst_space = isa::MemSpace::kHbm;
      c.src_addr = in.at("v") + uint64_t(h) * d * 4;
      c.dst_addr = l.v_hbm + uint64_t(h) * T * d * 2;
      c.count = {uint16_t(d), uint16_t(T), 1, 1};
      c.src_stride = {4, int32_t(D) * 4, 0, 0};
      c.dst_stride = {2, int32_t(d) * 2, 0, 0};
      prep.push_back(c);
    }
    seq->push_back({"q k v layout", kernels::dma_program(drv.info(), prep), 0});
    kernels::append(seq, kernels::make_attention_programs(drv.info(), l));
    seq->push_back({"out transpose", kernels::dma_program(drv.info(), {kernels::transpose_copy(
                                         l.outT_hbm, DataType::kFp32, out, DataType::kFp32, D, T)}), 0});
    *outs = {{"out", {T, D}, DataType::kFp32, out},
             {"scores", {H, T, T}, DataType::kFp32, l.scores_hbm},
             {"probs", {H, T, T}, DataType::kBf16, l.probs_hbm}};
  };
  w.golden = [=](const Tensors& in, const driver::DeviceInfo& info) {
    const int te_rows = int(info.te_rows);
    const Patterns qT = golden::transpose_cast(T, D, in.at("q"), DataType::kFp32, DataType::kBf16);
    const Patterns kT = golden::transpose_cast(T, D, in.at("k"), DataType::kFp32, DataType::kBf16);
    Patterns v(size_t(H) * T * d);
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j < d; ++j) {
          v[(size_t(h) * T + t) * d + j] = golden::element_from_f32(
              DataType::kBf16, in.at("v")[size_t(t) * D + size_t(h) * d + j], true);
        }
    golden::AttentionResult r = golden::attention(T, H, d, true, te_t, qT, kT, v, te_rows);
    return Tensors{{"out", golden::transpose_cast(D, T, r.outT, DataType::kFp32, DataType::kFp32)},
                   {"scores", r.scores},
                   {"probs", r.probs}};
  };
  return w;
}

Workload transformer_instance(const Params& o) {
  kernels::TransformerShape sh;
  sh.seq = o.seq, sh.d_model = o.d_model, sh.heads = o.heads, sh.d_ff = o.d_ff, sh.te_transpose = !o.dma_transpose;
  sh.cores = o.cores;
  const int T = o.seq, D = o.d_model, H = o.heads, F = o.d_ff;
  Workload w;
  w.title = fmt::format("GPT-2 transformer block (pre-LN, causal attention, GELU MLP), {}", gpt2_dims(o));
  w.inputs = {{"x", {T, D}, DataType::kFp32, 0.0f, 1.0f, "residual stream"},
              {"ln1_g", {D}, DataType::kFp32, 1.0f, 0.1f, ""},
              {"ln1_b", {D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w_qkv", {D, 3 * D}, DataType::kBf16, 0.0f, 0.02f, "attn c_attn weight, Q | K | V"},
              {"b_qkv", {3 * D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w_o", {D, D}, DataType::kBf16, 0.0f, 0.02f, "attn c_proj weight"},
              {"b_o", {D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"ln2_g", {D}, DataType::kFp32, 1.0f, 0.1f, ""},
              {"ln2_b", {D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w1", {D, F}, DataType::kBf16, 0.0f, 0.02f, "mlp c_fc weight"},
              {"b1", {F}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w2", {F, D}, DataType::kBf16, 0.0f, 0.02f, "mlp c_proj weight"},
              {"b2", {D}, DataType::kFp32, 0.0f, 0.02f, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::TransformerInputs ti;
    ti.x = in.at("x"), ti.ln1_g = in.at("ln1_g"), ti.ln1_b = in.at("ln1_b"), ti.w_qkv = in.at("w_qkv");
    ti.b_qkv = in.at("b_qkv"), ti.w_o = in.at("w_o"), ti.b_o = in.at("b_o"), ti.ln2_g = in.at("ln2_g");
    ti.ln2_b = in.at("ln2_b"), ti.w1 = in.at("w1"), ti.b1 = in.at("b1"), ti.w2 = in.at("w2"), ti.b2 = in.at("b2");
    const uint64_t out = alloc(drv, {T, D}, DataType::kFp32);
    const kernels::TransformerBuffers probe = kernels::transformer_buffers(sh, 0);
    const kernels::TransformerBuffers b = kernels::transformer_buffers(sh, drv.alloc(probe.end));
    const kernels::TransformerResidency resident = kernels::transformer_residency(drv.info(), sh);
    *seq = kernels::make_transformer_programs(drv.info(), sh, ti, b, out, resident);
    *outs = {{"out", {T, D}, DataType::kFp32, out},
             {"qkvT", {3 * D, T}, DataType::kBf16, b.qkvT},
             {"attnT", {D, T}, DataType::kBf16, b.attnT},
             {"h1", {T, D}, DataType::kFp32, b.h1}};
    // A LayerNorm's output stays in SBUF where it runs in its GEMM's program (transformer_fusion).
    const kernels::TransformerFusion fused = kernels::transformer_fusion(drv.info(), sh);
    if (!fused.ln1_qkv) outs->insert(outs->begin() + 1, {"ln1T", {D, T}, DataType::kBf16, b.ln1T});
    if (!fused.ln2_up) outs->push_back({"ln2T", {D, T}, DataType::kBf16, b.ln2T});
    // g^T stays on chip in the MLP's rows programs and where the up GEMM leaves it in SBUF for the down GEMM.
    if (!kernels::transformer_mlp_in_rows(drv.info(), sh) && resident.g == 0) {
      outs->push_back({"gT", {F, T}, DataType::kBf16, b.mlp_gT});
    }
  };
  w.golden = [=](const Tensors& in, const driver::DeviceInfo& info) {
    const int te_rows = int(info.te_rows);
    golden::TransformerSpec s;
    s.seq = T, s.d_model = D, s.heads = H, s.d_ff = F, s.ln_eps = sh.ln_eps, s.causal = sh.causal;
    s.te_transpose = sh.te_transpose;
    s.piece_order = kernels::transformer_attention_in_pieces(info, sh);
    golden::TransformerParams p;
    p.ln1_g = in.at("ln1_g"), p.ln1_b = in.at("ln1_b"), p.w_qkv = in.at("w_qkv"), p.b_qkv = in.at("b_qkv");
    p.w_o = in.at("w_o"), p.b_o = in.at("b_o"), p.ln2_g = in.at("ln2_g"), p.ln2_b = in.at("ln2_b");
    p.mlp = {in.at("w1"), in.at("b1"), in.at("w2"), in.at("b2")};
    golden::TransformerResult r = golden::transformer_block(s, in.at("x"), p, te_rows);
    // The probabilities stay on chip (the attention's pieces keep P in SBUF); the attention workload checks them.
    // The LayerNorms are checked transposed: with TE transposes their row-major output never reaches HBM.
    return Tensors{{"out", r.mlp.out}, {"ln1T", r.ln1T}, {"qkvT", r.qkvT}, {"attnT", r.attnT},
                   {"h1", r.h1},       {"ln2T", r.ln2T}, {"gT", r.mlp.gT}};
  };
  return w;
}

// ---------------------------------------------------------------- GEMM

/// The TE operand type as a data type of the same name (bf16, fp16, fp8e4m3, fp8e5m2).
DataType data_type_of(isa::Dtype d) {
  for (DataType t : {DataType::kBf16, DataType::kFp16, DataType::kFp8E4M3, DataType::kFp8E5M2}) {
    if (isa::data_type_name(t) == isa::dtype_name(d)) return t;
  }
  throw std::invalid_argument(fmt::format("no data type for dtype {}", isa::dtype_name(d)));
}

/// out[M, N] = stationary[K, M]^T @ moving[K, N], one tiled GEMM program; operands N(0, sigma^2) rounded to dtype.
Workload gemm_workload(std::string name, std::string title, isa::Dtype dt, int k, int m, int n, float s_sigma,
                       float m_sigma) {
  const uint64_t total = uint64_t(k) * m + uint64_t(k) * n + uint64_t(m) * n;
  if (total > (uint64_t{1} << 28)) {
    throw std::invalid_argument(fmt::format("-m {} -k {} -n {}: {} operand and result elements, more than this "
                                            "command holds in memory (2^28)", m, k, n, total));
  }
  const DataType t = data_type_of(dt);
  Workload w;
  w.name = std::move(name);
  w.title = fmt::format("{}: out[M={}, N={}] = stationary[K={}, M]^T @ moving[K, N], dtype {}", title, m, n, k,
                        isa::dtype_name(dt));
  w.golden_name = "the golden GEMM";
  w.inputs = {{"stationary", {k, m}, t, 0.0f, s_sigma, ""}, {"moving", {k, n}, t, 0.0f, m_sigma, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::GemmLayout l;
    l.dtype = dt, l.k = k, l.m = m, l.n = n;
    l.stationary_hbm = in.at("stationary");
    l.moving_hbm = in.at("moving");
    l.out_hbm = alloc(drv, {m, n}, DataType::kFp32);
    seq->push_back({"gemm", kernels::make_gemm_program(drv.info(), l), uint64_t(k) * m * n});
    outs->push_back({"out", {m, n}, DataType::kFp32, l.out_hbm});
  };
  w.golden = [=](const Tensors& in, const driver::DeviceInfo& info) {
    const int te_rows = int(info.te_rows);
    const auto narrow = [](const Patterns& p) { return std::vector<uint16_t>(p.begin(), p.end()); };
    return Tensors{{"out", golden::gemm({dt, k, m, n, narrow(in.at("stationary")), narrow(in.at("moving"))},
                                        te_rows)}};
  };
  w.run_cores = [=](const std::vector<driver::Driver*>& cores, const Tensors& in, uint64_t timeout) {
    kernels::GemmHostOperands ops;
    ops.dtype = dt, ops.k = k, ops.m = m, ops.n = n;
    ops.stationary.assign(in.at("stationary").begin(), in.at("stationary").end());
    ops.moving.assign(in.at("moving").begin(), in.at("moving").end());
    kernels::GemmCoresRun r = kernels::run_gemm_cores(cores, ops, timeout);
    Workload::CoresRun out;
    out.outputs.push_back({"out", {m, n}, DataType::kFp32, r.out_hbm});
    out.got["out"] = std::move(r.out);
    out.runs = std::move(r.runs);
    for (size_t c = 0; c < r.pieces.size(); ++c) out.cores.push_back(int(c));
    out.instructions = r.instructions;
    return out;
  };
  return w;
}

Entry model_entry(const std::string& name, const std::string& summary, const ShapeUse& use,
                  std::function<Workload(const Params&)> make) {
  return {name, summary, Entry::kModelShape, [name, make, use](const Params& p) {
            check_shape(p, use);
            Workload w = make(p);
            w.name = name;
            w.golden_name = "the golden host kernels";
            return w;
          }};
}

}  // namespace

const std::vector<Entry>& registry() {
  static const std::vector<Entry> table = {
      // GPT-2 small MLP up-projection (Radford et al. 2019, d_model 768, d_ff 3072) for 128 tokens: y[128, 3072] =
      // x[128, 768] @ W[768, 3072], as stationary = x^T [K=768, M=128 tokens] and moving = W [K=768, N=3072], so
      // the result comes out as y itself. Weights drawn like GPT-2's initialisation (sigma 0.02), activations N(0, 1).
      {"gpt2-mlp-up", "GPT-2 small MLP up-projection, one BF16 GEMM 128x768 -> 3072", Entry::kGemmShape,
       [](const Params&) {
         return gemm_workload("gpt2-mlp-up", "GPT-2 small MLP up-projection, 128 tokens x 768 -> 3072",
                              isa::Dtype::kBf16, 768, 128, 3072, 1.0f, 0.02f);
       }},
      {"gemm", "random GEMM, shape from -m -k -n --dtype", Entry::kGemmShape,
       [](const Params& p) { return gemm_workload("gemm", "random GEMM", p.dtype, p.k, p.m, p.n, 1.0f, 1.0f); }},
      model_entry("softmax", "softmax along keys of attention scores [heads*seq, seq] FP32, scale 1/sqrt(head dim)",
                  ShapeUse{true, false, false}, softmax_instance),
      model_entry("layernorm", "LayerNorm of [seq, d_model] FP32 (gamma, beta)", ShapeUse{},
                  [](const Params& o) { return norm_instance(o, false); }),
      model_entry("rmsnorm", "RMSNorm of [seq, d_model] FP32 (gamma)", ShapeUse{},
                  [](const Params& o) { return norm_instance(o, true); }),
      model_entry("mlp", "GELU MLP: BF16 GEMM d_model->d_ff + bias, gelu_tanh, GEMM d_ff->d_model + bias",
                  ShapeUse{false, false, true},
                  mlp_instance),
      model_entry("attention", "causal multi-head attention softmax(Q K^T / sqrt(d)) V (--heads 1: one head)",
                  ShapeUse{true, false, false},
                  attention_instance),
      model_entry("transformer-block",
                  "GPT-2 block: LN1, QKV, attention, projection + residual, LN2, MLP + residual",
                  ShapeUse{true, true, true},
                  transformer_instance),
  };
  return table;
}

const Entry* find(std::string_view name) {
  for (const Entry& e : registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Tensors make_inputs(const std::vector<InputSpec>& specs, uint64_t seed, const Tensors& given) {
  std::mt19937_64 rng(seed);
  Tensors t;
  for (const InputSpec& s : specs) {
    std::normal_distribution<float> dist(s.mean, s.sigma);
    Patterns f32(elements(s.shape));
    for (auto& x : f32) {
      const float f = dist(rng);
      std::memcpy(&x, &f, 4);
    }
    if (auto it = given.find(s.name); it != given.end()) {
      if (it->second.size() != f32.size()) {
        throw std::invalid_argument(fmt::format("input {}: {} elements given, {} has {}", s.name, it->second.size(),
                                                shape_text(s.shape), f32.size()));
      }
      f32 = it->second;
    }
    Patterns v(f32.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = golden::element_from_f32(s.type, f32[i], /*saturate=*/true);
    t[s.name] = std::move(v);
  }
  return t;
}

namespace {
/// Compares the outputs the golden names with it; sets the checks, mismatches and pass.
void compare_with_golden(const Workload& w, const Tensors& inputs, const driver::DeviceInfo& info, Report* report) {
  Report& rep = *report;
  const Tensors want = w.golden(inputs, info);
  for (const auto& out : rep.outputs) {
    const auto it = want.find(out.name);
    if (it == want.end()) continue;
    const Patterns& g = rep.got.at(out.name);
    Check c{out.name, out.shape, out.type, g.size(), 0, {}};
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] == it->second[i]) continue;
      if (c.first.size() < 5) c.first.push_back({i, g[i], it->second[i]});
      ++c.mismatches;
    }
    rep.mismatches += c.mismatches;
    rep.compared += c.elements;
    rep.checks.push_back(std::move(c));
  }
  rep.pass = rep.mismatches == 0 && !rep.checks.empty();
}
}  // namespace

Report run_and_check(driver::Driver& drv, const Workload& w, const Tensors& inputs, uint64_t timeout_cycles,
                     const OnBuilt& on_built, std::string* failed_step, const OnStep& on_step) {
  return run_and_check(std::vector<driver::Driver*>{&drv}, w, inputs, timeout_cycles, on_built, failed_step, on_step);
}

Report run_and_check(const std::vector<driver::Driver*>& cores, const Workload& w, const Tensors& inputs,
                     uint64_t timeout_cycles, const OnBuilt& on_built, std::string* failed_step,
                     const OnStep& on_step) {
  if (cores.empty()) throw std::invalid_argument("run_and_check: no cores");
  driver::Driver& drv = *cores.front();
  for (driver::Driver* d : cores) d->free_all();
  Report rep;
  rep.workload = w.name;
  rep.title = w.title;
  rep.golden_name = w.golden_name;
  Addrs addrs;
  kernels::KernelSequence seq;
  try {
    for (const InputSpec& in : w.inputs) {
      addrs[in.name] = alloc(drv, in.shape, in.type);
      drv.write_tensor(addrs[in.name], inputs.at(in.name), in.type);
    }
    w.build(drv, addrs, &seq, &rep.outputs);
  } catch (const driver::OutOfDeviceMemory& e) {
    throw std::invalid_argument(fmt::format("the workload's tensors do not fit the device's HBM: {}", e.what()));
  }
  rep.programs = seq.size();
  for (const auto& st : seq)
    for (const auto& q : st.program.queues) rep.instructions += q.size();
  if (on_built) on_built(rep.programs, rep.instructions);

  const auto t0 = std::chrono::steady_clock::now();
  std::size_t failed = 0;
  kernels::SequenceRun r;
  try {
    if (on_step && !seq.empty()) on_step(0, seq.front().name);
    std::size_t done = 0;
    r = kernels::run_sequence(
        cores, seq, timeout_cycles,
        [&](const kernels::StepRun&) {
          if (on_step && ++done < seq.size()) on_step(done, seq[done].name);
        },
        &failed);
  } catch (const driver::DriverError&) {
    if (failed_step) *failed_step = fmt::format("program {} of {} (\"{}\")", failed + 1, seq.size(), seq[failed].name);
    throw;
  }
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.cycles = r.cycles;
  rep.macs = r.macs;
  rep.retired = r.retired;
  for (const auto& out : rep.outputs) rep.got[out.name] = drv.read_tensor(out.hbm, elements(out.shape), out.type);

  for (const auto& st : r.steps) {
    const std::string g = step_group(st.name);
    auto it = std::find_if(rep.steps.begin(), rep.steps.end(), [&](const StepGroup& x) { return x.name == g; });
    if (it == rep.steps.end()) it = rep.steps.insert(rep.steps.end(), StepGroup{g, 0, 0});
    it->programs += 1;
    it->cycles += st.elapsed;
  }
  if (cores.size() > 1) {
    for (size_t c = 0; c < cores.size(); ++c) {
      rep.core_index.push_back(int(c));
      rep.core_runs.push_back(r.core_runs[c]);
      rep.core_macs.push_back(r.core_macs[c]);
    }
  }
  compare_with_golden(w, inputs, drv.info(), &rep);
  return rep;
}

Report run_and_check_cores(const std::vector<driver::Driver*>& cores, const Workload& w, const Tensors& inputs,
                           uint64_t timeout_cycles) {
  if (!w.run_cores) throw std::invalid_argument(fmt::format("--workload {} runs on one core", w.name));
  Report rep;
  rep.workload = w.name;
  rep.title = w.title;
  rep.golden_name = w.golden_name;
  std::vector<uint64_t> macs0;
  for (driver::Driver* d : cores) macs0.push_back(d->read_counters().te_macs);
  const auto t0 = std::chrono::steady_clock::now();
  Workload::CoresRun r;
  try {
    r = w.run_cores(cores, inputs, timeout_cycles);
  } catch (const driver::OutOfDeviceMemory& e) {
    throw std::invalid_argument(fmt::format("the workload's tensors do not fit the device's HBM: {}", e.what()));
  }
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.programs = r.runs.size();
  rep.instructions = r.instructions;
  rep.outputs = std::move(r.outputs);
  rep.got = std::move(r.got);
  rep.core_runs = std::move(r.runs);
  rep.core_index = std::move(r.cores);
  for (size_t i = 0; i < rep.core_runs.size(); ++i) {
    const driver::RunResult& run = rep.core_runs[i];
    rep.cycles = std::max(rep.cycles, run.cycles);
    for (size_t q = 0; q < rep.retired.size(); ++q) rep.retired[q] += run.retired[q];
  }
  for (const int c : rep.core_index) {
    rep.core_macs.push_back(cores[size_t(c)]->read_counters().te_macs - macs0[size_t(c)]);
    rep.macs += rep.core_macs.back();
  }
  compare_with_golden(w, inputs, cores.front()->info(), &rep);
  return rep;
}


}  // namespace trnsim::workloads
