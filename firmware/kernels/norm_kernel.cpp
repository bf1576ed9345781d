// LayerNorm and RMSNorm kernels (norm_kernel.h); tiling and pipeline: docs/kernels.md "LayerNorm and RMSNorm".
#include "firmware/kernels/norm_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
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
};

void require(const NormJob& n, bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(fmt::format("{} kernel: {}", n.name, what));
}

isa::Program build_norm(const driver::DeviceInfo& info, const NormJob& n) {
  require(n, n.rows >= 1 && n.cols >= 1, fmt::format("rows and cols must be >= 1 (got {}, {})", n.rows, n.cols));
  require(n, n.cols <= 0xFFFF, fmt::format("cols {} exceeds the 65535 elements of one instruction", n.cols));
  require(n, std::isfinite(n.eps) && n.eps >= 0.0f, fmt::format("eps {} must be finite and >= 0", n.eps));
  require(n, info.sbuf_partitions >= 1, "the device has no SBUF");
  const uint64_t elems = uint64_t(n.rows) * uint64_t(n.cols);
  check_hbm_tensor(info, n.name, "in", n.in_hbm, elems * isa::data_type_bytes(n.in_type));
  check_hbm_tensor(info, n.name, "out", n.out_hbm, elems * isa::data_type_bytes(n.out_type));
  check_hbm_tensor(info, n.name, "gamma", n.gamma_hbm, uint64_t(n.cols) * 4);
  if (n.layernorm) check_hbm_tensor(info, n.name, "beta", n.beta_hbm, uint64_t(n.cols) * 4);

  const int pt = static_cast<int>(std::min<uint32_t>(info.sbuf_partitions, uint32_t(n.rows)));
  const std::vector<RowGroup> groups = plan_row_groups(n.rows, pt, n.cols, kMinGroups, kGroupBytes);
  const int ngroups = static_cast<int>(groups.size());
  const uint64_t pb = info.sbuf_partition_bytes, row_bytes = uint64_t(n.cols) * 4;
  const float cols_f = static_cast<float>(n.cols);

  // SBUF: gamma (and beta) replicated in every partition, a junk row for the squares' elementwise output (only
  // their sum is wanted), then per buffer a row tile and four [P, 1] columns.
  PartitionArena arena(pb);
  const uint32_t gamma = arena.take(row_bytes, "gamma");
  const uint32_t beta = n.layernorm ? arena.take(row_bytes, "beta") : 0;
  const uint32_t junk = arena.take(row_bytes, "squares");
  const std::vector<RowBuffer> buf = take_row_buffers(arena, kWantedBuffers, ngroups, n.cols, groups.front().g, n.name);
  const int nbuf = static_cast<int>(buf.size());

  Pipeline pipe(info);
  // gamma / beta [cols] -> every partition (source rows 0 bytes apart: a broadcast read).
  std::vector<isa::CopyFields> params;
  for (const auto& [hbm, off, wanted] :
       {std::tuple{n.gamma_hbm, gamma, true}, std::tuple{n.beta_hbm, beta, n.layernorm}}) {
    if (!wanted) continue;
    params.push_back(copy_rows(MemSpace::kHbm, hbm, DataType::kFp32, 0, MemSpace::kSbuf, off, DataType::kFp32,
                               int64_t(pb), pt, n.cols));
  }
  const Pipeline::OpId params_op = pipe.add(Engine::kDma, spread_copies(params, info.num_dma_engines));

  std::vector<Pipeline::OpId> store(static_cast<std::size_t>(ngroups), -1);
  for (int j = 0; j < ngroups; ++j) {
    const RowGroup& grp = groups[std::size_t(j)];
    const RowBuffer& b = buf[std::size_t(j % nbuf)];
    const int p = grp.p, g = grp.g, cols = n.cols;
    // The group's tiles as [p, cols, g] (tile t at free offset t * cols); tile t alone; its column blocks [p, g].
    const isa::Operand x = operand(b.x, DataType::kFp32, {1, static_cast<int16_t>(cols)});
    auto tile = [&](int t) { return operand(b.x + uint32_t(t * cols * 4)); };
    const uint32_t sum = b.column[0], neg_mean = b.column[1], sq = b.column[2], rstd = b.column[3];
    const Pipeline::OpId load =
        load_rows(pipe, info, n.in_hbm, n.in_type, grp, cols, b.x, {j >= nbuf ? store[std::size_t(j - nbuf)] : -1});
    Pipeline::OpId centred = load;
    if (n.layernorm) {
      // s = sum x (identity with bias -0 rewrites x unchanged); -mean = (s / cols) * -1; c = x + -mean.
      std::vector<isa::Instruction> sums, centre;
      for (int t = 0; t < g; ++t) {
        const isa::Operand s_col = column(sum + 4 * t), m_col = column(neg_mean + 4 * t);
        sums.push_back(activation(ActFunc::kIdentity, p, cols, tile(t), tile(t), 1.0f, kMinusZero, nullptr, &s_col));
        centre.push_back(activation(ActFunc::kIdentity, p, cols, tile(t), tile(t), 1.0f, 0.0f, &m_col, nullptr));
      }
      const Pipeline::OpId s_op = pipe.add(Engine::kAct, std::move(sums), {load});
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
    if (n.layernorm) {
      const isa::Operand beta_rows = operand(beta, DataType::kFp32, {1, 0});
      y_op = pipe.add(Engine::kVec, {tensor_tensor(AluOp::kAdd, p, cols, x, x, beta_rows, g)}, {y_op});
    }
    store[std::size_t(j)] = store_rows(pipe, info, n.out_hbm, n.out_type, grp, cols, b.x, {y_op});
  }
  return pipe.build();
}

}  // namespace

isa::Program make_layernorm_program(const driver::DeviceInfo& info, const LayerNormLayout& l) {
  return build_norm(info, NormJob{"layernorm", true, l.rows, l.cols, l.in_hbm, l.out_hbm, l.gamma_hbm, l.beta_hbm,
                                  l.eps, l.in_type, l.out_type});
}

isa::Program make_rmsnorm_program(const driver::DeviceInfo& info, const RmsNormLayout& l) {
  return build_norm(info, NormJob{"rmsnorm", false, l.rows, l.cols, l.in_hbm, l.out_hbm, l.gamma_hbm, 0, l.eps,
                                  l.in_type, l.out_type});
}

}  // namespace trnsim::kernels
