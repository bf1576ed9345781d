// Multi-head attention as a sequence of programs (attention_kernel.h).
#include "firmware/kernels/attention_kernel.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/softmax_kernel.h"
#include "firmware/kernels/transpose_kernel.h"

namespace trnsim::kernels {

float attention_scale(int head_dim) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))); }

namespace {
/// Pieces each head's step is cut into so that the H x p pieces fill the rounds of `cores` cores best: the p in
/// 1 .. cores with the least ceil(H p / cores) / p (a round is one piece's time), the smallest on a tie.
int pieces_per_head(int heads, int cores) {
  const auto rounds = [&](int q) { return (int64_t(heads) * q + cores - 1) / cores; };
  int best = 1;
  for (int p = 2; p <= cores; ++p) {
    if (rounds(p) * best < rounds(best) * p) best = p;
  }
  return best;
}

/// Appends one head's pieces to `seq`: the first one joins the wave of the heads before it (h > 0).
void append_head(KernelSequence* seq, KernelSequence pieces, int h) {
  pieces.front().with_previous = h > 0;
  append(seq, std::move(pieces));
}
}  // namespace

KernelSequence make_attention_programs(const driver::DeviceInfo& info, const AttentionLayout& l) {
  if (l.seq < 1 || l.heads < 1 || l.head_dim < 1 || l.cores < 1) {
    throw std::invalid_argument(fmt::format("attention kernel: seq, heads, head_dim and cores must be >= 1 (got {}, "
                                            "{}, {}, {})", l.seq, l.heads, l.head_dim, l.cores));
  }
  const uint64_t T = l.seq, d = l.head_dim;
  const uint64_t qk_head = d * T * 2;  // bytes of Q_h^T / K_h^T (BF16)
  const uint64_t tt = T * T;           // elements of one head's score matrix
  // The heads are independent: one wave per step kind, each head's scores and softmax cut into `pieces` by query
  // rows, so that 12 heads on 8 cores take 1.5 rounds of a whole head, not 2.
  const int pieces = pieces_per_head(l.heads, l.cores);
  KernelSequence seq;
  SoftmaxLayout sm;
  sm.cols = l.seq;
  sm.scale = attention_scale(l.head_dim);
  sm.in_type = isa::DataType::kFp32;
  sm.out_type = isa::DataType::kBf16;
  sm.causal = l.causal;
  if (l.fused_softmax && softmax_epilogue_fits(info, l.seq)) {
    // The softmax in the scores GEMM's drain: the same operations on the scores in PSUM (each piece's rows keep
    // their causal offset, split_gemm).
    GemmEpilogue epi;
    epi.kind = GemmEpilogue::Kind::kSoftmax;
    epi.scale = sm.scale;
    epi.causal = l.causal;
    for (int h = 0; h < l.heads; ++h) {
      append_head(&seq, gemm_steps(info, fmt::format("head {} scores+softmax", h), l.head_dim, l.seq, l.seq,
                                   l.qT_hbm + h * qk_head, l.kT_hbm + h * qk_head, l.probs_hbm + h * tt * 2, pieces,
                                   isa::DataType::kBf16, epi),
                  h);
    }
  } else {
    for (int h = 0; h < l.heads; ++h) {
      append_head(&seq, gemm_steps(info, fmt::format("head {} scores", h), l.head_dim, l.seq, l.seq,
                                   l.qT_hbm + h * qk_head, l.kT_hbm + h * qk_head, l.scores_hbm + h * tt * 4, pieces),
                  h);
    }
    if (l.causal) {  // the mask depends on the query row, so one program per head (per piece of its rows)
      for (int h = 0; h < l.heads; ++h) {
        append_head(&seq, row_split_steps(fmt::format("head {} softmax", h), l.seq, int(info.sbuf_partitions), pieces,
                                          [&](int r0, int n) {
                                            SoftmaxLayout part = sm;
                                            part.rows = n;
                                            part.causal_offset = r0;  // row i of the piece is query r0 + i
                                            part.in_hbm = l.scores_hbm + (h * tt + uint64_t(r0) * T) * 4;
                                            part.out_hbm = l.probs_hbm + (h * tt + uint64_t(r0) * T) * 2;
                                            return KernelStep{"", make_softmax_program(info, part), 0};
                                          }),
                    h);
      }
    } else {
      sm.rows = l.seq * l.heads;
      sm.in_hbm = l.scores_hbm;
      sm.out_hbm = l.probs_hbm;
      seq.push_back({"softmax", make_softmax_program(info, sm), 0});
    }
  }
  if (l.te_transpose) {
    // Each head's transpose cut into the same pieces, by whole row tiles of P_h (keys' columns of P_h^T).
    for (int h = 0; h < l.heads; ++h) {
      append_head(&seq, row_split_steps(fmt::format("head {} transpose", h), l.seq, transpose_tile_rows(info), pieces,
                                        [&](int r0, int n) {
                                          TransposeLayout t;
                                          t.rows = n;
                                          t.cols = l.seq;
                                          t.in_hbm = l.probs_hbm + (h * tt + uint64_t(r0) * T) * 2;
                                          t.out_hbm = l.probsT_hbm + (h * tt + uint64_t(r0)) * 2;
                                          t.out_ld = l.seq;
                                          t.dtype = isa::Dtype::kBf16;
                                          t.out_type = isa::DataType::kBf16;
                                          return KernelStep{"", make_transpose_program(info, t), 0};
                                        }),
                  h);
    }
  } else {
    std::vector<isa::CopyFields> copies;
    for (int h = 0; h < l.heads; ++h) {
      copies.push_back(transpose_copy(l.probs_hbm + h * tt * 2, isa::DataType::kBf16, l.probsT_hbm + h * tt * 2,
                                      isa::DataType::kBf16, l.seq, l.seq));
    }
    seq.push_back({"probs transpose", dma_program(info, copies), 0});
  }
  for (int h = 0; h < l.heads; ++h) {
    // O_h^T = V_h^T P_h^T has M = d (one TE tile at d = 64): one program per head. (Cut by N into the heads'
    // pieces it got slower: at T = 2048 on trn2 182 k -> 238 k cycles, every K batch's load paying the DMA start
    // latency for half the bytes.)
    append_head(&seq, gemm_steps(info, fmt::format("head {} pv", h), l.seq, l.head_dim, l.seq,
                                 l.v_hbm + h * T * d * 2, l.probsT_hbm + h * tt * 2,
                                 l.outT_hbm + h * d * T * isa::data_type_bytes(l.out_type), 1, l.out_type),
                h);
  }
  return seq;
}

}  // namespace trnsim::kernels
