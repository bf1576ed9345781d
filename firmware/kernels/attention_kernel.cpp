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

KernelSequence make_attention_programs(const driver::DeviceInfo& info, const AttentionLayout& l) {
  if (l.seq < 1 || l.heads < 1 || l.head_dim < 1) {
    throw std::invalid_argument(fmt::format("attention kernel: seq, heads and head_dim must be >= 1 (got {}, {}, {})",
                                            l.seq, l.heads, l.head_dim));
  }
  const uint64_t T = l.seq, d = l.head_dim;
  const uint64_t qk_head = d * T * 2;  // bytes of Q_h^T / K_h^T (BF16)
  const uint64_t tt = T * T;           // elements of one head's score matrix
  KernelSequence seq;
  for (int h = 0; h < l.heads; ++h) {
    seq.push_back(gemm_step(info, fmt::format("head {} scores", h), l.head_dim, l.seq, l.seq, l.qT_hbm + h * qk_head,
                            l.kT_hbm + h * qk_head, l.scores_hbm + h * tt * 4));
    seq.back().with_previous = h > 0;  // the heads are independent: one wave per step kind
  }
  SoftmaxLayout sm;
  sm.cols = l.seq;
  sm.scale = attention_scale(l.head_dim);
  sm.in_type = isa::DataType::kFp32;
  sm.out_type = isa::DataType::kBf16;
  sm.causal = l.causal;
  if (l.causal) {  // the mask depends on the query row, so one program per head
    sm.rows = l.seq;
    for (int h = 0; h < l.heads; ++h) {
      sm.in_hbm = l.scores_hbm + h * tt * 4;
      sm.out_hbm = l.probs_hbm + h * tt * 2;
      seq.push_back({fmt::format("head {} softmax", h), make_softmax_program(info, sm), 0, h > 0});
    }
  } else {
    sm.rows = l.seq * l.heads;
    sm.in_hbm = l.scores_hbm;
    sm.out_hbm = l.probs_hbm;
    seq.push_back({"softmax", make_softmax_program(info, sm), 0});
  }
  if (l.te_transpose) {
    for (int h = 0; h < l.heads; ++h) {
      TransposeLayout t;
      t.rows = t.cols = l.seq;
      t.in_hbm = l.probs_hbm + h * tt * 2;
      t.out_hbm = l.probsT_hbm + h * tt * 2;
      t.dtype = isa::Dtype::kBf16;
      t.out_type = isa::DataType::kBf16;
      seq.push_back({fmt::format("head {} transpose", h), make_transpose_program(info, t), 0, h > 0});
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
    seq.push_back(gemm_step(info, fmt::format("head {} pv", h), l.seq, l.head_dim, l.seq, l.v_hbm + h * T * d * 2,
                            l.probsT_hbm + h * tt * 2, l.outT_hbm + h * d * T * 4));
    seq.back().with_previous = h > 0;
  }
  return seq;
}

}  // namespace trnsim::kernels
