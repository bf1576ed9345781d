// Multi-head attention as a sequence of programs (attention_kernel.h).
#include "firmware/kernels/attention_kernel.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/gemm_kernel.h"
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

/// How append_heads orders a wave of the heads' pieces.
enum class PieceOrder { kByHead, kLastFirst, kFirstFirst };

/// The order of a wave of the heads' pieces (`pieces[h]`: head h's count), as (head, piece) pairs: head by head, or
/// piece by piece, the last (or the first) piece of every head first. Causal, a piece of later query rows has more
/// live columns, so the longer pieces go first and the sequence runner's work list fills the cores' gaps with the
/// shorter ones (docs/kernels.md "Sequences over cores").
std::vector<std::pair<int, int>> wave_order(const std::vector<int>& pieces, PieceOrder order) {
  std::vector<std::pair<int, int>> wave;
  const int heads = int(pieces.size());
  if (order == PieceOrder::kByHead) {
    for (int h = 0; h < heads; ++h) {
      for (int p = 0; p < pieces[std::size_t(h)]; ++p) wave.emplace_back(h, p);
    }
  } else {
    const int n = heads > 0 ? pieces.front() : 0;
    for (int i = 0; i < n; ++i) {
      const int p = order == PieceOrder::kLastFirst ? n - 1 - i : i;
      for (int h = 0; h < heads; ++h) {
        if (p < pieces[std::size_t(h)]) wave.emplace_back(h, p);
      }
    }
  }
  return wave;
}

/// Appends the heads' pieces to `seq` as one wave in wave_order.
void append_heads(KernelSequence* seq, std::vector<KernelSequence> heads, PieceOrder order) {
  std::vector<int> counts;
  for (const KernelSequence& head : heads) counts.push_back(int(head.size()));
  KernelSequence wave;
  for (const auto& [h, p] : wave_order(counts, order)) wave.push_back(std::move(heads[std::size_t(h)][std::size_t(p)]));
  for (size_t i = 0; i < wave.size(); ++i) wave[i].with_previous = i > 0;
  append(seq, std::move(wave));
}
}  // namespace

namespace {
/// Head h's piece of queries [q0, q0 + n) (make_attention_piece_program).
AttentionPieceLayout piece_layout(const AttentionLayout& l, int h, int q0, int n) {
  const uint64_t T = l.seq, d = l.head_dim;
  AttentionPieceLayout a;
  a.seq = l.seq;
  a.head_dim = l.head_dim;
  a.query0 = q0;
  a.queries = n;
  a.causal = l.causal;
  a.scale = attention_scale(l.head_dim);
  a.qT_hbm = l.qT_hbm + h * d * T * 2;
  a.kT_hbm = l.kT_hbm + h * d * T * 2;
  a.v_hbm = l.vT_hbm ? l.vT_hbm + h * d * T * 2 : l.v_hbm + h * T * d * 2;
  a.v_ld = l.vT_hbm ? l.seq : 0;
  a.outT_hbm = l.outT_hbm + h * d * T * isa::data_type_bytes(l.out_type);
  a.out_type = l.out_type;
  a.sbuf_end = l.sbuf_end;
  return a;
}

/// The TE's work in a piece: S over the live keys, then PV over every key tile (causal: each query tile over the
/// key tiles up to its own).
uint64_t piece_macs(const AttentionLayout& l, int R, int q0, int n) {
  const uint64_t T = l.seq, d = l.head_dim;
  const uint64_t live = l.causal ? std::min(T, uint64_t(q0 + n)) : T;
  uint64_t macs = uint64_t(n) * d * live;
  for (int t0 = q0; t0 < q0 + n; t0 += R) {
    const uint64_t rows = uint64_t(std::min(R, q0 + n - t0));
    macs += rows * d * (l.causal ? std::min(T, uint64_t(t0 + R)) : T);
  }
  return macs;
}

/// When the sequence runner's work list runs `costs` in order over `cores` cores (each core takes the next as it
/// frees), the time the last one ends.
double list_end(const std::vector<double>& costs, int cores) {
  std::vector<double> t(std::size_t(std::max(1, cores)), 0.0);
  for (const double c : costs) *std::min_element(t.begin(), t.end()) += c;
  return *std::max_element(t.begin(), t.end());
}

/// Queries of each head's first piece when the heads are cut in two: of the cuts at a query tile whose two pieces
/// fit, the one whose 2 H pieces, longest first, end soonest on the cores by the Pipeline's estimates
/// (attention_piece_estimate; the heads are alike, so head 0's pieces stand for all); the equal cut unless another is
/// shorter. A causal head's equal halves differ most (its later queries see more keys): on trn2 at seq 2048, 12
/// heads on 8 cores, the cut after 6 of 16 query tiles (docs/kernels.md "Sequences over cores"). 0 when no cut
/// fits.
int two_piece_cut(const driver::DeviceInfo& info, const AttentionLayout& l, bool* first_longer,
                  double* end_cycles = nullptr) {
  const int R = transpose_tile_rows(info);
  const int tiles = (l.seq + R - 1) / R;
  const int equal = rows_per_core(l.seq, R, 2);
  int best = 0;
  double best_end = 0.0;
  for (int c = 1; c < tiles; ++c) {
    const int n0 = c * R, n1 = l.seq - n0;
    if (!attention_piece_fits(info, l.seq, n0, l.head_dim, l.sbuf_end) ||
        !attention_piece_fits(info, l.seq, n1, l.head_dim, l.sbuf_end)) {
      continue;
    }
    const double e0 = attention_piece_estimate(info, piece_layout(l, 0, 0, n0));
    const double e1 = attention_piece_estimate(info, piece_layout(l, 0, n0, n1));
    std::vector<double> costs(std::size_t(l.heads), std::max(e0, e1));
    costs.insert(costs.end(), std::size_t(l.heads), std::min(e0, e1));
    const double end = list_end(costs, l.cores);
    if (best == 0 || end < best_end || (end == best_end && n0 == equal)) {
      best = n0, best_end = end;
      *first_longer = e0 > e1;
    }
  }
  if (end_cycles) *end_cycles = best_end;
  return best;
}

/// When the heads' pieces of `p` pieces each (the cut of piece_wave: two_piece_cut for 2, equal pieces else), longest
/// first, end on the cores by the Pipeline's estimates (head 0's pieces standing for all). For the choice between one
/// piece per head and pieces_per_head's count, which counts rounds of equal pieces: a short sequence cuts into
/// unequal ones (seq 129: 128 queries and 1), each paying a program's start.
double wave_estimate(const driver::DeviceInfo& info, const AttentionLayout& l, int p) {
  if (p == 2) {
    bool first_longer = false;
    double end = 0.0;
    return two_piece_cut(info, l, &first_longer, &end) > 0 ? end : std::numeric_limits<double>::infinity();
  }
  const int per = rows_per_core(l.seq, transpose_tile_rows(info), p);
  std::vector<double> costs;
  for (int q0 = 0; q0 < l.seq; q0 += per) {
    costs.insert(costs.end(), std::size_t(l.heads),
                 attention_piece_estimate(info, piece_layout(l, 0, q0, std::min(per, l.seq - q0))));
  }
  std::sort(costs.begin(), costs.end(), std::greater<double>());
  return list_end(costs, l.cores);
}

/// One step of the wave of pieces (piece_wave).
struct PieceJob {
  int head = 0;
  AttentionPieceLayout layout;
  int core = -1;     ///< KernelStep::core
  double cost = 0;   ///< the piece's estimate without its prefetch (with a prefetch only)
  double idle = 0;   ///< of it, the time an average DMA engine is free (cost less Pipeline::dma_engine_cycles)
};

/// A piece's estimate (attention_piece_estimate) and the part of it an average DMA engine is idle, without prefetch.
std::pair<double, double> piece_cost(const driver::DeviceInfo& info, const AttentionPieceLayout& l);

/// The sizes the prefetch is cut into, in DMA engines' start-latency bytes (latency_engines), of which the
/// attention takes the one whose pieces the Pipeline's estimates lengthen least (prefetch_choice): smaller ones spend
/// more of each engine's time on start latencies, larger ones hold an engine longer against the piece's own stores.
constexpr double kPrefetchPieceChoices[] = {2.0, 3.0, 4.0, 6.0};

/// The wave of the heads' `fused` pieces each (attention_pieces > 0), in the order the sequence runs them: pieces of
/// equal queries, or, cut in two, where the list schedule of the estimated pieces ends soonest (two_piece_cut); a
/// causal head's later queries see more keys, so the wave takes the longer pieces first (wave_order). With a
/// prefetch every piece is pinned to the core the work list would give it on the pieces' estimates (each to the core
/// that frees first, the lowest on a tie), and carries its cost (piece_cost); deal_prefetch then shares the prefetch
/// out. Throws std::invalid_argument when a core gets no piece to carry its prefetch.
std::vector<PieceJob> piece_wave(const driver::DeviceInfo& info, const AttentionLayout& l, int fused) {
  const int R = transpose_tile_rows(info);
  int cut = 0;
  bool first_longer = false;
  if (fused == 2) cut = two_piece_cut(info, l, &first_longer);
  std::vector<std::pair<int, int>> cuts;  // each head's pieces as (first query, queries)
  if (cut > 0) {
    cuts = {{0, cut}, {cut, l.seq - cut}};
  } else {  // row_split_steps' equal pieces
    const int per = rows_per_core(l.seq, R, fused);
    for (int q0 = 0; q0 < l.seq; q0 += per) cuts.emplace_back(q0, std::min(per, l.seq - q0));
  }
  std::vector<std::pair<double, double>> cost(cuts.size());
  if (!l.prefetch.empty()) {  // the heads are alike: head 0's pieces stand for all
    for (std::size_t p = 0; p < cuts.size(); ++p) {
      cost[p] = piece_cost(info, piece_layout(l, 0, cuts[p].first, cuts[p].second));
    }
  }
  std::vector<PieceJob> wave;
  for (const auto& [h, p] :
       wave_order(std::vector<int>(std::size_t(l.heads), int(cuts.size())),
                  !l.causal ? PieceOrder::kByHead : first_longer ? PieceOrder::kFirstFirst : PieceOrder::kLastFirst)) {
    const auto [q0, n] = cuts[std::size_t(p)];
    wave.push_back({h, piece_layout(l, h, q0, n), -1, cost[std::size_t(p)].first, cost[std::size_t(p)].second});
  }
  if (l.prefetch.empty()) return wave;
  std::vector<double> free_at(std::size_t(l.cores), 0.0);
  std::vector<int> pieces(std::size_t(l.cores), 0);
  for (PieceJob& job : wave) {
    const auto c = std::size_t(std::min_element(free_at.begin(), free_at.end()) - free_at.begin());
    free_at[c] += job.cost;
    job.core = int(c);
    ++pieces[c];
  }
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    if (pieces[c] == 0) {
      throw std::invalid_argument(fmt::format("attention kernel: {} pieces leave core {} of {} none to carry the "
                                              "prefetch", wave.size(), c, l.cores));
    }
  }
  return wave;
}

/// `wave` (piece_wave's, pinned) with `l`'s prefetch cut into pieces of `latencies` engines' start-latency bytes
/// (prefetch_pieces) and dealt over each core's pieces in order, each a share by the time its DMA engines are idle
/// (PieceJob::idle).
std::vector<PieceJob> deal_prefetch(const driver::DeviceInfo& info, const AttentionLayout& l, std::vector<PieceJob> wave,
                                    double latencies) {
  const std::vector<isa::CopyFields> parts = prefetch_pieces(info, l.prefetch, latencies);
  for (int c = 0; c < l.cores; ++c) {
    double idle = 0.0, before = 0.0;
    int count = 0;
    for (const PieceJob& job : wave) {
      if (job.core == c) idle += std::max(0.0, job.idle), ++count;
    }
    for (PieceJob& job : wave) {
      if (job.core != c) continue;
      const double share = idle > 0 ? std::max(0.0, job.idle) / idle : 1.0 / double(count);
      const auto cut = [&](double at) { return std::ptrdiff_t(std::llround(double(parts.size()) * std::min(1.0, at))); };
      job.layout.prefetch.assign(parts.begin() + cut(before), parts.begin() + cut(before + share));
      before += share;
    }
  }
  return wave;
}

/// The prefetch's piece size (kPrefetchPieceChoices) and what it adds to the attention: per core, its pieces'
/// estimates with their shares less without (pieces of the same queries and share estimate alike), the most of any
/// core; the size that adds least (the first of equals).
struct PrefetchChoice {
  double latencies = 0;
  double cost = 0;
};
PrefetchChoice prefetch_choice(const driver::DeviceInfo& info, const AttentionLayout& l,
                               const std::vector<PieceJob>& wave) {
  PrefetchChoice best;
  for (const double latencies : kPrefetchPieceChoices) {
    std::map<std::tuple<int, int, std::size_t>, double> added;
    std::vector<double> per_core(std::size_t(l.cores), 0.0);
    for (const PieceJob& job : deal_prefetch(info, l, wave, latencies)) {
      const auto key = std::make_tuple(job.layout.query0, job.layout.queries, job.layout.prefetch.size());
      auto it = added.find(key);
      if (it == added.end()) it = added.emplace(key, attention_piece_estimate(info, job.layout) - job.cost).first;
      per_core[std::size_t(job.core)] += it->second;
    }
    const double cost = *std::max_element(per_core.begin(), per_core.end());
    if (best.latencies == 0 || cost < best.cost) best = {latencies, cost};
  }
  return best;
}
}  // namespace

int attention_pieces(const driver::DeviceInfo& info, const AttentionLayout& l) {
  // Pieces of fewer queries than pieces_per_head's where a head's share of a core does not fit (the accumulator and
  // the transposes' slots share PSUM with the scores): each count planned once, the first that fits, down to one
  // query tile per piece. Where that is more than one and a whole head fits one piece, the one the estimates end
  // sooner (wave_estimate; one piece on a tie), unless a prefetch needs a piece on every core and there are fewer
  // heads than cores.
  const int R = transpose_tile_rows(info);
  if (!l.fused_pieces || !l.te_transpose || R < 1 || l.seq < 1 || l.heads < 1 || l.head_dim < 1 || l.cores < 1) {
    return 0;
  }
  for (int p = pieces_per_head(l.heads, l.cores);; ++p) {
    const int per = std::min(rows_per_core(l.seq, R, p), l.seq);
    if (attention_piece_fits(info, l.seq, per, l.head_dim, l.sbuf_end)) {
      if (per < l.seq && (l.prefetch.empty() || l.heads >= l.cores) &&
          attention_piece_fits(info, l.seq, l.seq, l.head_dim, l.sbuf_end) &&
          wave_estimate(info, l, 1) <= wave_estimate(info, l, p)) {
        return 1;
      }
      return p;
    }
    if (p >= (l.seq + R - 1) / R) return 0;
  }
}

double attention_prefetch_cost(const driver::DeviceInfo& info, const AttentionLayout& l) {
  const int fused = attention_pieces(info, l);
  if (fused == 0 || l.prefetch.empty()) return 0.0;
  return prefetch_choice(info, l, piece_wave(info, l, fused)).cost;
}

double attention_dma_idle(const driver::DeviceInfo& info, const AttentionLayout& l) {
  const int fused = attention_pieces(info, l);
  if (fused == 0 || l.prefetch.empty()) return 0.0;
  std::vector<double> idle(std::size_t(l.cores), 0.0);
  for (const PieceJob& job : piece_wave(info, l, fused)) idle[std::size_t(job.core)] += std::max(0.0, job.idle);
  return *std::min_element(idle.begin(), idle.end());
}

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
  // Every step of a head in one program per piece of its queries, P kept in SBUF (make_attention_piece_program).
  const int R = transpose_tile_rows(info);
  const int fused = attention_pieces(info, l);
  if (fused > 0) {
    std::vector<PieceJob> wave = piece_wave(info, l, fused);
    if (!l.prefetch.empty()) wave = deal_prefetch(info, l, wave, prefetch_choice(info, l, wave).latencies);
    for (const PieceJob& job : wave) {
      seq.push_back({fmt::format("head {} attention", job.head), make_attention_piece_program(info, job.layout),
                     piece_macs(l, R, job.layout.query0, job.layout.queries), !seq.empty(), job.core});
    }
    return seq;
  }
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
    std::vector<KernelSequence> heads;
    for (int h = 0; h < l.heads; ++h) {
      heads.push_back(gemm_steps(info, fmt::format("head {} scores+softmax", h), l.head_dim, l.seq, l.seq,
                                 l.qT_hbm + h * qk_head, l.kT_hbm + h * qk_head, l.probs_hbm + h * tt * 2, pieces,
                                 isa::DataType::kBf16, epi));
    }
    append_heads(&seq, std::move(heads), l.causal ? PieceOrder::kLastFirst : PieceOrder::kByHead);
  } else {
    for (int h = 0; h < l.heads; ++h) {
      append_head(&seq, gemm_steps(info, fmt::format("head {} scores", h), l.head_dim, l.seq, l.seq,
                                   l.qT_hbm + h * qk_head, l.kT_hbm + h * qk_head, l.scores_hbm + h * tt * 4, pieces),
                  h);
    }
    if (l.causal) {  // the mask depends on the query row, so one program per head (per piece of its rows)
      std::vector<KernelSequence> heads;
      for (int h = 0; h < l.heads; ++h) {
        heads.push_back(row_split_steps(fmt::format("head {} softmax", h), l.seq, int(info.sbuf_partitions), pieces,
                                        [&](int r0, int n) {
                                          SoftmaxLayout part = sm;
                                          part.rows = n;
                                          part.causal_offset = r0;  // row i of the piece is query r0 + i
                                          part.in_hbm = l.scores_hbm + (h * tt + uint64_t(r0) * T) * 4;
                                          part.out_hbm = l.probs_hbm + (h * tt + uint64_t(r0) * T) * 2;
                                          return KernelStep{"", make_softmax_program(info, part), 0};
                                        }));
      }
      append_heads(&seq, std::move(heads), PieceOrder::kLastFirst);
    } else {
      sm.rows = l.seq * l.heads;
      sm.in_hbm = l.scores_hbm;
      sm.out_hbm = l.probs_hbm;
      seq.push_back({"softmax", make_softmax_program(info, sm), 0});
    }
  }
  // With the softmax fused and the TE transpose: each head's transpose and PV in one program per piece of queries,
  // P^T kept in SBUF (make_transpose_pv_program), where the pieces fit.
  const int q_per = rows_per_core(l.seq, transpose_tile_rows(info), pieces);
  if (l.fused_softmax && l.te_transpose && transpose_pv_fits(info, std::min(q_per, l.seq), l.head_dim)) {
    std::vector<KernelSequence> heads;
    for (int h = 0; h < l.heads; ++h) {
      heads.push_back(row_split_steps(fmt::format("head {} transpose+pv", h), l.seq, transpose_tile_rows(info),
                                      pieces, [&](int q0, int n) {
                                        TransposePvLayout t;
                                        t.keys = l.seq;
                                        t.queries = n;
                                        t.head_dim = l.head_dim;
                                        t.p_ld = l.seq;
                                        t.out_ld = l.seq;
                                        t.p_hbm = l.probs_hbm + (h * tt + uint64_t(q0) * T) * 2;
                                        t.v_hbm = l.v_hbm + h * T * d * 2;
                                        t.out_hbm = l.outT_hbm +
                                                    (h * d * T + uint64_t(q0)) * isa::data_type_bytes(l.out_type);
                                        t.out_type = l.out_type;
                                        t.causal = l.causal;  // P's masked keys are +0
                                        t.query0 = q0;
                                        const uint64_t macs = uint64_t(n) * T * d;
                                        return KernelStep{"", make_transpose_pv_program(info, t), macs};
                                      }));
    }
    // Causal: a later piece has fewer +0 key tiles to skip, so it is the longer one (append_heads).
    append_heads(&seq, std::move(heads), l.causal ? PieceOrder::kLastFirst : PieceOrder::kByHead);
    return seq;
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

namespace {
constexpr uint64_t kBf16Bytes = 2, kFp32Bytes = 4;

/// The tiling of make_transpose_pv_program on a device: tiles of r queries / keys, PSUM's first half the
/// accumulator (acc_banks banks of n_tile FP32), its second half the transposes' slots ([r keys, r FP32] each).
struct TransposePvPlan {
  int r = 0, n_tile = 0, acc_banks = 0, slots = 0;
  uint64_t bank_bytes = 0;
};

TransposePvPlan transpose_pv_plan(const driver::DeviceInfo& info) {
  TransposePvPlan p;
  p.r = transpose_tile_rows(info);
  p.bank_bytes = info.psum_bank_bytes();
  p.n_tile = int(std::min<uint64_t>(isa::kMaxMovingN, p.bank_bytes / kFp32Bytes));
  p.acc_banks = int(info.psum_banks / 2);
  p.slots = p.r > 0 ? int((info.psum_banks - uint32_t(p.acc_banks)) * (p.bank_bytes / (uint64_t(p.r) * kFp32Bytes)))
                    : 0;
  return p;
}
}  // namespace

bool transpose_pv_fits(const driver::DeviceInfo& info, int queries, int head_dim) {
  const TransposePvPlan p = transpose_pv_plan(info);
  const int q_tiles = p.r > 0 ? (queries + p.r - 1) / p.r : 0;
  return p.r >= 1 && queries >= 1 && head_dim >= 1 && uint32_t(head_dim) <= info.te_cols &&
         uint32_t(head_dim) <= info.psum_partitions &&
         uint32_t(p.r) <= info.te_cols && uint32_t(p.r) <= info.psum_partitions && p.acc_banks >= 1 &&
         uint64_t(p.n_tile) * kFp32Bytes == p.bank_bytes &&         // the slots run on across banks
         uint64_t(queries) <= uint64_t(p.acc_banks) * p.n_tile &&  // the accumulator holds the piece's queries
         q_tiles <= p.slots && (p.bank_bytes % (uint64_t(p.r) * kFp32Bytes)) == 0;
}

namespace {
/// V [keys, d] BF16 from HBM into SBUF: key tile t (keys t * R .., R = transpose_tile_rows) on partitions 0..R-1 at
/// v_off + t * d * 2; every full tile in one copy, the ragged one alone. `v_ld` > 0: v_hbm is V^T [d, *] with rows
/// v_ld elements apart, read transposed (each element its own 2 bytes, as the strided DMA transposes of
/// dma_copies.h).
std::vector<isa::CopyFields> v_tile_copies(const driver::DeviceInfo& info, uint64_t v_hbm, int keys, int d,
                                           uint32_t v_off, int v_ld = 0) {
  const int R = transpose_tile_rows(info), k_tiles = (keys + R - 1) / R, full_k = keys / R;
  const auto bf16 = isa::DataType::kBf16;
  const int64_t pb = int64_t(info.sbuf_partition_bytes);
  // Bytes from one key to the next and from one of its d elements to the next: token-major V [keys, d], or V^T.
  const int64_t key_bytes = v_ld > 0 ? 2 : int64_t(d) * 2, elem_bytes = v_ld > 0 ? int64_t(v_ld) * 2 : 2;
  auto tiles = [&](int t0, int kk, int n) {  // n tiles of kk keys from tile t0, one copy
    isa::CopyFields c = copy_rows(isa::MemSpace::kHbm, v_hbm + uint64_t(int64_t(t0) * R * key_bytes), bf16,
                                  key_bytes, isa::MemSpace::kSbuf, v_off + uint32_t(t0 * d * 2), bf16, pb, kk, d);
    if (d > 1) c.src_stride[0] = int32_t(elem_bytes);
    if (n > 1) {
      c.count[2] = static_cast<uint16_t>(n);
      c.src_stride[2] = int32_t(int64_t(R) * key_bytes);
      c.dst_stride[2] = int32_t(int64_t(d) * 2);
    }
    return c;
  };
  std::vector<isa::CopyFields> v;
  if (full_k > 0) v.push_back(tiles(0, R, full_k));
  if (full_k < k_tiles) v.push_back(tiles(full_k, keys - full_k * R, 1));
  return v;
}

/// load_stationary of V's key tile kt (kk keys, at v_off + kt * d * 2) for the PV product.
isa::Instruction pv_load(int kt, int kk, int d, uint32_t v_off) {
  isa::Instruction ls;
  ls.op = isa::Opcode::kLoadStationary;
  ls.te.dtype = isa::Dtype::kBf16;
  ls.te.sbuf_addr = v_off + uint64_t(kt) * d * 2;
  ls.te.k = static_cast<uint16_t>(kk);
  ls.te.free_size = static_cast<uint16_t>(d);
  return ls;
}

/// multiply_moving of n columns of P^T (kk keys, from SBUF `pt`) into PSUM `psum`, accumulating from key tile 1 on.
isa::Instruction pv_multiply(int kt, int kk, int n, uint64_t pt, uint64_t psum) {
  isa::Instruction mm;
  mm.op = isa::Opcode::kMultiplyMoving;
  mm.te.dtype = isa::Dtype::kBf16;
  mm.te.accumulate = kt > 0;
  mm.te.sbuf_addr = pt;
  mm.te.psum_addr = psum;
  mm.te.k = static_cast<uint16_t>(kk);
  mm.te.free_size = static_cast<uint16_t>(n);
  return mm;
}

/// O^T[d, nq] (+)= V[k0 .. k0 + kk, d]^T @ P^T[k0 .., nq] (V's tile kt at v_off + kt * d * 2, the P^T tile at `pt`):
/// one load_stationary, one multiply_moving per PSUM bank of the accumulator (bank b holds queries b * n_tile ..),
/// accumulating from the second key tile on.
std::vector<isa::Instruction> pv_tile_instrs(const TransposePvPlan& plan, int kt, int kk, int d, int nq,
                                             uint32_t v_off, uint32_t pt) {
  std::vector<isa::Instruction> mul{pv_load(kt, kk, d, v_off)};
  for (int b = 0, c0 = 0; c0 < nq; ++b, c0 += plan.n_tile) {
    mul.push_back(pv_multiply(kt, kk, std::min(plan.n_tile, nq - c0), pt + uint64_t(c0) * 2,
                              uint64_t(b) * plan.bank_bytes));
  }
  return mul;
}

/// The accumulator [d, nq] FP32 (from bank acc_bank0) -> O^T out_type in HBM, rows out_ld elements apart (one
/// rounding, rule 6).
std::vector<isa::CopyFields> pv_drain_copies(const driver::DeviceInfo& info, const TransposePvPlan& plan, int d,
                                             int nq, int acc_bank0, uint64_t out_hbm, int out_ld,
                                             isa::DataType out_type) {
  const uint64_t eo = isa::data_type_bytes(out_type);
  std::vector<isa::CopyFields> drain;
  for (int c0 = 0, bank = acc_bank0; c0 < nq; c0 += plan.n_tile, ++bank) {
    drain.push_back(copy_rows(isa::MemSpace::kPsum, uint64_t(bank) * plan.bank_bytes, isa::DataType::kFp32,
                              int64_t(info.psum_partition_bytes), isa::MemSpace::kHbm, out_hbm + uint64_t(c0) * eo,
                              out_type, int64_t(out_ld) * int64_t(eo), d, std::min(plan.n_tile, nq - c0)));
  }
  return drain;
}
}  // namespace

isa::Program make_transpose_pv_program(const driver::DeviceInfo& info, const TransposePvLayout& l) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("transpose+pv kernel: " + what);
  };
  require(l.keys >= 1 && l.queries >= 1 && l.head_dim >= 1,
          fmt::format("keys, queries and head_dim must be >= 1 (got {}, {}, {})", l.keys, l.queries, l.head_dim));
  require(l.p_ld >= l.keys && l.out_ld >= l.queries,
          fmt::format("p_ld {} must be >= keys {} and out_ld {} >= queries {}", l.p_ld, l.keys, l.out_ld, l.queries));
  require(l.query0 >= 0, fmt::format("query0 {} must be >= 0", l.query0));
  require(transpose_pv_fits(info, l.queries, l.head_dim),
          fmt::format("{} queries of head_dim {} do not fit the device's PSUM and TE", l.queries, l.head_dim));
  const TransposePvPlan plan = transpose_pv_plan(info);
  const int R = plan.r, d = l.head_dim, nq = l.queries;
  const int q_tiles = (nq + R - 1) / R, k_tiles = (l.keys + R - 1) / R;
  const uint64_t eo = isa::data_type_bytes(l.out_type), pb = info.sbuf_partition_bytes;
  check_hbm_tensor(info, "transpose+pv kernel", "P", l.p_hbm, (uint64_t(nq - 1) * l.p_ld + l.keys) * kBf16Bytes);
  check_hbm_tensor(info, "transpose+pv kernel", "V", l.v_hbm, uint64_t(l.keys) * d * kBf16Bytes);
  check_hbm_tensor(info, "transpose+pv kernel", "out", l.out_hbm, (uint64_t(d - 1) * l.out_ld + nq) * eo);

  // SBUF: the identity, V (key tile t at t * d), two P buffers ([R queries, q_tiles x R keys]: query tile i at
  // i * R) and two P^T buffers ([R keys, nq queries]).
  PartitionArena arena(pb);
  const uint32_t iota_off = arena.take(uint64_t(R) * kFp32Bytes, "transpose+pv identity");
  const uint32_t ident_off = arena.take(uint64_t(R) * kBf16Bytes, "transpose+pv identity");
  const uint32_t v_off = arena.take(uint64_t(k_tiles) * d * kBf16Bytes, "transpose+pv V");
  const std::array<uint32_t, 2> p_buf{arena.take(uint64_t(q_tiles) * R * kBf16Bytes, "transpose+pv P"),
                                      arena.take(uint64_t(q_tiles) * R * kBf16Bytes, "transpose+pv P")};
  const std::array<uint32_t, 2> pt_buf{arena.take(uint64_t(nq) * kBf16Bytes, "transpose+pv P^T"),
                                       arena.take(uint64_t(nq) * kBf16Bytes, "transpose+pv P^T")};
  // Causal: key tiles from `zero_kt` on are +0 in every query of the piece: one +0 P^T tile serves them. In a key
  // tile before it, the query tiles before `first_live(k0)` are +0 (all their queries are before the tile's first
  // key).
  const int zero_kt = l.causal ? std::min(k_tiles, (l.query0 + nq + R - 1) / R) : k_tiles;
  auto first_live = [&](int k0) {
    int i = 0;
    while (l.causal && i < q_tiles && l.query0 + std::min((i + 1) * R, nq) - 1 < k0) ++i;
    return i;
  };
  const uint32_t zero_pt = zero_kt < k_tiles ? arena.take(uint64_t(nq) * kBf16Bytes, "transpose+pv +0 P^T") : 0;
  auto slot_addr = [&](int s) {  // PSUM's second half, slots of [R keys, R FP32] run on across its banks
    return uint32_t(uint64_t(plan.acc_banks) * plan.bank_bytes + uint64_t(s) * R * kFp32Bytes);
  };
  const auto bf16 = isa::DataType::kBf16;

  auto pv_tile = [&](int kt, int kk, uint32_t pt) { return pv_tile_instrs(plan, kt, kk, d, nq, v_off, pt); };

  Pipeline pipe(info);
  const Pipeline::OpId ident = pipe.add(isa::Engine::kVec, te_identity(R, iota_off, ident_off, bf16));
  const Pipeline::OpId v_load =
      pipe.add(isa::Engine::kDma, spread_copies(v_tile_copies(info, l.v_hbm, l.keys, d, v_off), info.num_dma_engines));

  const auto nk = static_cast<std::size_t>(k_tiles);
  std::vector<Pipeline::OpId> load(nk, -1), trans(nk, -1), copy(nk, -1), pv(nk, -1);
  std::array<int, 2> zeroed{0, 0};  // per P^T buffer: its first columns known to hold +0
  const Pipeline::OpId zero =
      zero_kt < k_tiles ? pipe.add(isa::Engine::kVec, {memset_op(R, nq, operand(zero_pt, bf16), 0.0f)}) : -1;
  const int full_q = nq / R;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int k0 = kt * R, kk = std::min(R, l.keys - k0), b = kt % 2;
    if (kt >= zero_kt) {
      // A +0 tile: no load, transpose or copy (the zero tiles are the last ones). After the tile before it: the
      // drain's one dependency, on the last tile, must cover every multiply's PSUM write (a TE op's semaphore says
      // its own results have landed, not those of the multiplies before it).
      pv[std::size_t(kt)] =
          pipe.add(isa::Engine::kTe, pv_tile(kt, kk, zero_pt), {zero, v_load, pv[std::size_t(kt - 1)]});
      continue;
    }
    const int i0 = first_live(k0);  // query tiles [i0, q_tiles) have a live key in this tile
    // P's columns [k0, k0 + kk) of those queries: query tile i -> partitions (its queries), at p_buf + i * R * 2.
    std::vector<isa::CopyFields> p_copies;
    const int64_t p_row = int64_t(l.p_ld) * 2;
    if (full_q > i0) {
      isa::CopyFields c = copy_rows(isa::MemSpace::kHbm, l.p_hbm + (uint64_t(i0) * R * l.p_ld + k0) * 2, bf16, p_row,
                                    isa::MemSpace::kSbuf, p_buf[std::size_t(b)] + uint32_t(i0 * R * 2), bf16,
                                    int64_t(pb), R, kk);
      c.count[2] = static_cast<uint16_t>(full_q - i0);
      c.src_stride[2] = int32_t(int64_t(R) * p_row);
      c.dst_stride[2] = int32_t(int64_t(R) * 2);
      p_copies.push_back(c);
    }
    if (full_q < q_tiles) {
      p_copies.push_back(copy_rows(isa::MemSpace::kHbm, l.p_hbm + (uint64_t(full_q) * R * l.p_ld + k0) * 2, bf16,
                                   p_row, isa::MemSpace::kSbuf, p_buf[std::size_t(b)] + uint32_t(full_q * R * 2),
                                   bf16, int64_t(pb), nq - full_q * R, kk));
    }
    load[std::size_t(kt)] = pipe.add(isa::Engine::kDma, spread_copies(p_copies, info.num_dma_engines),
                                     {kt >= 2 ? trans[std::size_t(kt - 2)] : -1});
    // Transposes: query tile i [qr queries, kk keys] -> slot i [kk keys, qr queries] (transpose_te's row tiles).
    std::vector<isa::Instruction> te;
    for (int i = i0; i < q_tiles; ++i) {
      const int qr = std::min(R, nq - i * R);
      const uint64_t tile = p_buf[std::size_t(b)] + uint64_t(i) * R * 2;
      for (const isa::Instruction& in : te_transpose_tile(isa::Dtype::kBf16, tile, qr, kk, ident_off, slot_addr(i))) {
        te.push_back(in);
      }
    }
    trans[std::size_t(kt)] = pipe.add(isa::Engine::kTe, std::move(te),
                                      {load[std::size_t(kt)], ident, kt >= 1 ? copy[std::size_t(kt - 1)] : -1});
    // The slots -> P^T buffer [kk keys, nq queries] BF16 (identity activation: exact, the values are BF16's).
    std::vector<isa::Instruction> act;
    if (nq % R == 0) {  // the slots are one run of FP32 per partition
      act.push_back(activation(isa::ActFunc::kIdentity, kk, nq - i0 * R,
                               operand(pt_buf[std::size_t(b)] + uint32_t(i0 * R * 2), bf16),
                               operand(slot_addr(i0), isa::DataType::kFp32, {1, 0}, isa::MemSpace::kPsum), 1.0f, 0.0f,
                               nullptr, nullptr));
    } else {
      for (int i = i0; i < q_tiles; ++i) {
        const int qr = std::min(R, nq - i * R);
        const isa::Operand out = operand(pt_buf[std::size_t(b)] + uint32_t(i * R * 2), bf16);
        act.push_back(activation(isa::ActFunc::kIdentity, kk, qr, out,
                                 operand(slot_addr(i), isa::DataType::kFp32, {1, 0}, isa::MemSpace::kPsum), 1.0f,
                                 0.0f, nullptr, nullptr));
      }
    }
    copy[std::size_t(kt)] =
        pipe.add(isa::Engine::kAct, std::move(act), {trans[std::size_t(kt)], kt >= 2 ? pv[std::size_t(kt - 2)] : -1});
    // The +0 query tiles' columns of P^T: those this buffer does not hold as +0 already (after its last reader).
    Pipeline::OpId zeros = -1;
    if (i0 * R > zeroed[std::size_t(b)]) {
      const int z0 = zeroed[std::size_t(b)];
      zeros = pipe.add(isa::Engine::kVec,
                       {memset_op(kk, i0 * R - z0, operand(pt_buf[std::size_t(b)] + uint32_t(z0 * 2), bf16), 0.0f)},
                       {kt >= 2 ? pv[std::size_t(kt - 2)] : -1});
      zeroed[std::size_t(b)] = i0 * R;
    }
    pv[std::size_t(kt)] = pipe.add(isa::Engine::kTe, pv_tile(kt, kk, pt_buf[std::size_t(b)]),
                                   {copy[std::size_t(kt)], v_load, zeros});
  }
  pipe.add(isa::Engine::kDma,
           spread_copies(pv_drain_copies(info, plan, d, nq, 0, l.out_hbm, l.out_ld, l.out_type), info.num_dma_engines),
           {pv.back()});
  return pipe.build();
}

namespace {
/// An attention piece's resources (make_attention_piece_program). SBUF, bytes per partition: the GEMM's [0, gemm),
/// then P (query tile i at p_addr + i * p_tile, its live keys dense, BF16), then the PV part's buffers (the
/// identity, V, P^T by key tile, a +0 P^T tile). PSUM: the GEMM's first gemm_banks banks (whole rows of scores: two
/// blocks alternating where they fit, else one), then the accumulator O^T [d, queries] (acc_banks), then, from the
/// first slot boundary after its last column, `slots` transposes' slots of [R keys, R queries] FP32.
struct PiecePlan {
  TransposePvPlan tp;
  int q_tiles = 0, k_tiles = 0, live = 0, zero_kt = 0;
  uint64_t gemm = 0, p_addr = 0, p_tile = 0;
  // The PV part's buffers: the identity (FP32 iota, BF16), V and P^T by key tile (the key tiles before zero_kt, the
  // only ones the piece's queries see); the deferred normalisation's: the row sums and their reciprocals
  // (a column per query tile), the reciprocals as rows on min(32, d) partitions ([*, queries] FP32), the output
  // staged for its store ([d, queries], up to 4 bytes each).
  uint32_t iota = 0, ident = 0, v = 0, pt = 0, sums = 0, rcp = 0, rrow = 0, out = 0;
  int gemm_banks = 0, acc_banks = 0, slots = 0;
  uint64_t slots_from = 0;  ///< the first slot's PSUM offset from the accumulator's first bank, bytes per partition
};

PiecePlan piece_plan(const driver::DeviceInfo& info, int seq, int query0, int queries, int head_dim, bool causal,
                     uint32_t sbuf_end) {
  PiecePlan pp;
  pp.tp = transpose_pv_plan(info);
  const int R = std::max(1, pp.tp.r);
  pp.q_tiles = (queries + R - 1) / R;
  pp.k_tiles = (seq + R - 1) / R;
  pp.live = causal ? std::min(seq, query0 + queries) : seq;
  // Key tiles from zero_kt on are +0 in every query of the piece (causal).
  pp.zero_kt = causal ? std::min(pp.k_tiles, (query0 + queries + R - 1) / R) : pp.k_tiles;
  // The PV part's buffers laid out from 0 (64-byte aligned, as PartitionArena takes), then moved above P.
  PartitionArena pv(std::numeric_limits<uint64_t>::max());
  const uint64_t iota = pv.take(uint64_t(R) * kFp32Bytes, ""), ident = pv.take(uint64_t(R) * kBf16Bytes, "");
  const uint64_t v = pv.take(uint64_t(pp.zero_kt) * uint64_t(head_dim) * kBf16Bytes, "");
  const uint64_t pt = pv.take(uint64_t(pp.zero_kt) * uint64_t(queries) * kBf16Bytes, "");
  const uint64_t sums = pv.take(uint64_t(pp.q_tiles) * kFp32Bytes, "");
  const uint64_t rcp = pv.take(uint64_t(pp.q_tiles) * kFp32Bytes, "");
  const uint64_t rrow = pv.take(uint64_t(queries) * kFp32Bytes, ""), out = pv.take(uint64_t(queries) * kFp32Bytes, "");
  pp.p_tile = (uint64_t(pp.live) * kBf16Bytes + 63) / 64 * 64;
  const uint64_t top = uint64_t(pp.q_tiles) * pp.p_tile + pv.used();
  const uint64_t end = sbuf_end > 0 ? std::min<uint64_t>(sbuf_end, info.sbuf_partition_bytes) : info.sbuf_partition_bytes;
  pp.gemm = top < end ? (end - top) / 64 * 64 : 0;
  pp.p_addr = pp.gemm;
  const uint64_t base = pp.p_addr + uint64_t(pp.q_tiles) * pp.p_tile;  // a multiple of 64
  pp.iota = uint32_t(base + iota), pp.ident = uint32_t(base + ident), pp.v = uint32_t(base + v);
  pp.pt = uint32_t(base + pt);
  pp.sums = uint32_t(base + sums), pp.rcp = uint32_t(base + rcp), pp.rrow = uint32_t(base + rrow);
  pp.out = uint32_t(base + out);
  const int n_tile = std::max(1, pp.tp.n_tile);
  pp.acc_banks = (queries + n_tile - 1) / n_tile;
  const int one = (pp.live + n_tile - 1) / n_tile;  // banks of one block of scores (whole rows)
  const int avail = int(info.psum_banks) - pp.acc_banks;
  pp.gemm_banks = avail - 2 * one >= 1 ? 2 * one : one;
  const uint64_t slot_bytes = uint64_t(R) * kFp32Bytes;
  // The slots start after the accumulator's last column, at a slot boundary (a slot never crosses a bank: the bank
  // holds whole slots), so the spare end of its last bank holds slots too.
  pp.slots_from = (uint64_t(queries) * kFp32Bytes + slot_bytes - 1) / slot_bytes * slot_bytes;
  const uint64_t psum_left = uint64_t(int(info.psum_banks) - pp.gemm_banks) * pp.tp.bank_bytes;
  pp.slots = psum_left > pp.slots_from ? int((psum_left - pp.slots_from) / slot_bytes) : 0;
  return pp;
}

GemmLayout piece_gemm(const AttentionPieceLayout& l, const PiecePlan& pp) {
  GemmLayout g;
  g.dtype = isa::Dtype::kBf16;
  g.k = l.head_dim;
  g.m = l.queries;
  g.n = pp.live;
  g.stationary_hbm = l.qT_hbm + uint64_t(l.query0) * kBf16Bytes;
  g.stationary_ld = l.seq;
  g.moving_hbm = l.kT_hbm;
  g.moving_ld = l.seq;
  g.out_type = isa::DataType::kBf16;
  g.epilogue.kind = GemmEpilogue::Kind::kSoftmax;
  g.epilogue.scale = l.scale;
  g.epilogue.causal = l.causal;
  g.epilogue.causal_offset = l.query0;
  g.sbuf_limit = uint32_t(pp.gemm);
  g.psum_bank_limit = uint32_t(pp.gemm_banks);
  g.out_in_sbuf = true;
  g.out_sbuf = uint32_t(pp.p_addr);
  g.out_sbuf_tile_bytes = uint32_t(pp.p_tile);
  g.epilogue.normalise = false;  // P holds the exponentials; the output is normalised (docs/kernels.md "Attention")
  g.epilogue.sums_sbuf = pp.sums;
  return g;
}
}  // namespace

bool attention_piece_fits(const driver::DeviceInfo& info, int seq, int queries, int head_dim, uint32_t sbuf_end) {
  const TransposePvPlan tp = transpose_pv_plan(info);
  const int R = tp.r;
  if (seq < 1 || queries < 1 || head_dim < 1 || R < 1 || queries > seq) return false;
  if (uint32_t(R) != std::min(info.te_cols, info.psum_partitions)) return false;  // a GEMM M tile = a query tile
  if (uint32_t(head_dim) > info.te_cols || uint32_t(head_dim) > info.psum_partitions) return false;
  if (uint64_t(tp.n_tile) * kFp32Bytes != tp.bank_bytes || !softmax_epilogue_fits(info, seq)) return false;
  if (tp.bank_bytes % (uint64_t(R) * kFp32Bytes) != 0) return false;  // whole transposes' slots in a bank
  const PiecePlan pp = piece_plan(info, seq, 0, queries, head_dim, false, sbuf_end);  // not causal: the most keys
  if (pp.gemm == 0 || pp.slots < 1) return false;
  AttentionPieceLayout l;
  l.seq = seq, l.head_dim = head_dim, l.queries = queries;
  try {
    plan_gemm(info, piece_gemm(l, pp));
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

namespace {
/// A share num / den of an attention piece's P^T copies (PSUM -> SBUF) that the Vector engine makes; the Scalar
/// engine makes the rest.
struct PtShare {
  int num = 0, den = 1;
};
/// The shares a piece chooses from by its estimate (pt_share).
constexpr PtShare kPtShares[] = {{0, 1}, {1, 4}, {1, 3}, {1, 2}, {2, 3}, {3, 4}, {1, 1}};

/// make_attention_piece_program's ops, added to `pipe`, with `share` of the P^T copies on the Vector engine.
void add_attention_piece(Pipeline& pipe, const driver::DeviceInfo& info, const AttentionPieceLayout& l,
                         PtShare share) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("attention piece kernel: " + what);
  };
  const int R = transpose_tile_rows(info);
  require(l.seq >= 1 && l.head_dim >= 1 && l.queries >= 1,
          fmt::format("seq, head_dim and queries must be >= 1 (got {}, {}, {})", l.seq, l.head_dim, l.queries));
  // Whole query tiles but at the end of the rows: a causal P tile then holds every column of the key tiles its
  // transposes read (the GEMM writes a row's columns up to its tile's last live one, a key-tile boundary).
  require(l.query0 >= 0 && l.query0 % std::max(R, 1) == 0 && l.query0 + l.queries <= l.seq &&
              (l.queries % std::max(R, 1) == 0 || l.query0 + l.queries == l.seq),
          fmt::format("query0 {} must be a multiple of {} with query0 + queries {} <= seq {}, and queries a multiple "
                      "of {} unless the piece ends at seq",
                      l.query0, R, l.query0 + l.queries, l.seq, R));
  require(attention_piece_fits(info, l.seq, l.queries, l.head_dim, l.sbuf_end),
          fmt::format("{} queries of head_dim {} over {} keys do not fit the device", l.queries, l.head_dim, l.seq));
  const PiecePlan pp = piece_plan(info, l.seq, l.query0, l.queries, l.head_dim, l.causal, l.sbuf_end);
  const int d = l.head_dim, nq = l.queries;
  check_hbm_tensor(info, "attention piece kernel", "V", l.v_hbm, uint64_t(l.seq) * d * kBf16Bytes);
  check_hbm_tensor(info, "attention piece kernel", "out", l.outT_hbm,
                   (uint64_t(d - 1) * l.seq + l.seq) * isa::data_type_bytes(l.out_type));

  // S, the softmax and P into SBUF: the GEMM's ops; the epilogue of M tile i completes P's query tile i.
  const std::vector<Pipeline::OpId> p_ready = add_gemm(pipe, info, piece_gemm(l, pp));

  // O^T = V^T P^T: each query tile of P is transposed into the P^T tiles of its live keys as soon as it is ready
  // (the TE and the Scalar engine work beside the next tiles' softmax), then the key tiles are multiplied in, in
  // increasing order (make_transpose_pv_program's transposes, copies and multiplies; causal, each query tile's only
  // up to its own key tile), and each bank is normalised on its way out.
  const auto bf16 = isa::DataType::kBf16;
  const uint32_t iota_off = pp.iota, ident_off = pp.ident, v_off = pp.v, pt_off = pp.pt;
  auto pt_tile = [&](int kt) { return pt_off + uint32_t(uint64_t(kt) * nq * kBf16Bytes); };
  const int acc0 = pp.gemm_banks;  // the accumulator's first bank; the slots follow its last column
  auto slot_addr = [&](int s) {
    return uint32_t(uint64_t(acc0) * pp.tp.bank_bytes + pp.slots_from + uint64_t(s) * R * kFp32Bytes);
  };
  // Query tile i has a live key in key tile kt iff its last query is at or past the tile's first key.
  auto live_tiles = [&](int i) {
    const int last_query = l.query0 + std::min((i + 1) * R, nq) - 1;
    return l.causal ? std::min(pp.zero_kt, last_query / R + 1) : pp.k_tiles;
  };

  const Pipeline::OpId ident = pipe.add(isa::Engine::kVec, te_identity(R, iota_off, ident_off, bf16));
  const Pipeline::OpId v_load =
      pipe.add(isa::Engine::kDma, spread_copies(v_tile_copies(info, l.v_hbm, std::min(l.seq, pp.zero_kt * R), d, v_off,
                                                              l.v_ld),
                                                info.num_dma_engines));
  const auto nk = static_cast<std::size_t>(pp.k_tiles);
  // Per P^T tile and query tile: the op that writes its columns (a copy of transposes); causal, only those of the
  // query tiles that see the key tile (live_tiles) are written and read.
  std::vector<std::vector<Pipeline::OpId>> writers(nk, std::vector<Pipeline::OpId>(std::size_t(pp.q_tiles), -1));
  std::vector<Pipeline::OpId> slot_reader(std::size_t(pp.slots), -1);  // the copy that last read each slot
  int next_slot = 0;
  // The deferred normalisation: as soon as query tile i's exponentials and their sums are written, the reciprocals
  // r = 1 / s of its rows, then r as rows of the [min(32, d), queries] block `rrow` (every partition the same row):
  // Vector transposes of r's column broadcast along the free axis, 32 queries each (docs/kernels.md "Attention").
  const int rrow_parts = std::min(32, d);
  std::vector<Pipeline::OpId> rrow_ready(std::size_t(pp.q_tiles), -1);
  for (int i = 0; i < pp.q_tiles; ++i) {
    const int qr = std::min(R, nq - i * R);
    const uint32_t rcp = pp.rcp + uint32_t(4 * i);
    std::vector<isa::Instruction> v{tensor_scalar(isa::AluOp::kRdivide, 1.0f, isa::AluOp::kNone, 0.0f, qr, 1,
                                                  operand(rcp), operand(pp.sums + uint32_t(4 * i)))};
    for (int q0 = 0; q0 < qr; q0 += 32) {
      v.push_back(transpose_op(std::min(32, qr - q0), rrow_parts, operand(pp.rrow + uint32_t(4 * (i * R + q0))),
                               operand(rcp, isa::DataType::kFp32, {0, 0}, isa::MemSpace::kSbuf, uint16_t(q0))));
    }
    rrow_ready[std::size_t(i)] = pipe.add(isa::Engine::kVec, std::move(v), {p_ready[std::size_t(i)]});
  }
  // Each P^T tile on its own: the TE transposes it into the next slot of the ring (once the copy that last read the
  // slot is done) and the Scalar engine, or for `share` of the tiles the Vector engine, copies it out, so the TE
  // transposes the next tile while the last is copied.
  int copies = 0;
  auto transpose_tile_row = [&](int i) {
    const int qr = std::min(R, nq - i * R);
    for (int kt = 0; kt < live_tiles(i); ++kt) {
      const int kk = std::min(R, l.seq - kt * R), s = next_slot;
      next_slot = (next_slot + 1) % pp.slots;
      const uint64_t tile = pp.p_addr + uint64_t(i) * pp.p_tile + uint64_t(kt) * R * kBf16Bytes;
      const Pipeline::OpId trans =
          pipe.add(isa::Engine::kTe, te_transpose_tile(isa::Dtype::kBf16, tile, qr, kk, ident_off, slot_addr(s)),
                   {p_ready[std::size_t(i)], ident, slot_reader[std::size_t(s)]});
      // Copy c goes to the Vector engine when the share's running count steps at it (evenly spread).
      const int c = copies++;
      const bool on_vec = (c + 1) * share.num / share.den > c * share.num / share.den;
      const isa::Operand pt_out = operand(pt_tile(kt) + uint32_t(i * R * 2), bf16);
      const isa::Operand slot_in = operand(slot_addr(s), isa::DataType::kFp32, {1, 0}, isa::MemSpace::kPsum);
      const isa::Instruction out =
          on_vec ? tensor_copy(kk, qr, pt_out, slot_in)
                 : activation(isa::ActFunc::kIdentity, kk, qr, pt_out, slot_in, 1.0f, 0.0f, nullptr, nullptr);
      const Pipeline::OpId copy = pipe.add(on_vec ? isa::Engine::kVec : isa::Engine::kAct, {out}, {trans});
      slot_reader[std::size_t(s)] = copy;
      writers[std::size_t(kt)][std::size_t(i)] = copy;
    }
  };
  // The multiplies, per accumulator bank (its 512 queries) in key order, each after the writes of the P^T columns
  // it reads: a bank's multiplies start once its query tiles are transposed, beside the later tiles' softmax. A key
  // tile goes into the columns of the bank's query tiles that see it (causal: a suffix of them, those whose own key
  // tile is at or past it; query tile i's first multiply, key tile 0, writes, the later ones accumulate), so the
  // masked upper triangle is never multiplied. Each op follows the one before it in its bank, and the
  // normalisation follows every bank's last (a TE op's semaphore says its own results have landed, not those of the
  // multiplies before it).
  const int qt_per_bank = std::max(1, pp.tp.n_tile / R);
  const uint64_t eo = isa::data_type_bytes(l.out_type);
  const uint64_t out_hbm = l.outT_hbm + uint64_t(l.query0) * eo;
  auto bank_ops = [&](int bank) {
    Pipeline::OpId pv = -1;
    const int i_begin = bank * qt_per_bank, i_end = std::min(pp.q_tiles, i_begin + qt_per_bank);
    for (int kt = 0; kt < live_tiles(i_end - 1); ++kt) {
      int i0 = i_begin;  // the bank's first query tile that sees key tile kt
      while (live_tiles(i0) <= kt) ++i0;
      const int kk = std::min(R, l.seq - kt * R), q_first = i0 * R, q_end = std::min(nq, i_end * R);
      const uint64_t psum = uint64_t(acc0 + bank) * pp.tp.bank_bytes + uint64_t(q_first - bank * pp.tp.n_tile) * 4;
      std::vector<Pipeline::OpId> after{v_load, pv};
      for (int i = i0; i < i_end; ++i) after.push_back(writers[std::size_t(kt)][std::size_t(i)]);
      pv = pipe.add(isa::Engine::kTe,
                    {pv_load(kt, kk, d, v_off),
                     pv_multiply(kt, kk, q_end - q_first, pt_tile(kt) + uint64_t(q_first) * 2, psum)},
                    after);
    }
    // The bank's queries normalised: O^T[c, q] * r[q] (FP32, cast once to out_type) into the staging rows, 32
    // partitions of O^T at a time against the r rows; then their store. They follow the bank's last PV (each PV of
    // the bank waits for the one before it) and the r rows of the bank's query tiles.
    const int c0 = bank * pp.tp.n_tile, bn = std::min(pp.tp.n_tile, nq - c0);
    std::vector<Pipeline::OpId> after{pv};
    for (int i = i_begin; i < i_end; ++i) after.push_back(rrow_ready[std::size_t(i)]);
    std::vector<isa::Instruction> scale;
    for (int c = 0; c < d; c += rrow_parts) {
      scale.push_back(tensor_tensor(
          isa::AluOp::kMultiply, std::min(rrow_parts, d - c), bn,
          operand(pp.out + uint32_t(uint64_t(c0) * eo), l.out_type, {1, 0}, isa::MemSpace::kSbuf, uint16_t(c)),
          operand(uint32_t(uint64_t(acc0 + bank) * pp.tp.bank_bytes), isa::DataType::kFp32, {1, 0},
                  isa::MemSpace::kPsum, uint16_t(c)),
          operand(pp.rrow + uint32_t(4 * c0))));
    }
    const Pipeline::OpId scaled = pipe.add(isa::Engine::kVec, std::move(scale), after);
    pipe.add(isa::Engine::kDma,
             spread_copies({copy_rows(isa::MemSpace::kSbuf, pp.out + uint64_t(c0) * eo, l.out_type,
                                      int64_t(info.sbuf_partition_bytes), isa::MemSpace::kHbm,
                                      out_hbm + uint64_t(c0) * eo, l.out_type, int64_t(l.seq) * int64_t(eo), d, bn)},
                           info.num_dma_engines),
             {scaled});
  };
  // Each bank's ops right after the transposes of its last query tile: the Pipeline's list schedule takes the op
  // added first among those that can start as early, so a bank's multiplies go before the later tiles' transposes
  // and fill the TE's gaps beside their softmax, instead of all coming at the end.
  for (int i = 0; i < pp.q_tiles; ++i) {
    transpose_tile_row(i);
    if ((i + 1) % qt_per_bank == 0 || i + 1 == pp.q_tiles) bank_ops(i / qt_per_bank);
  }
  // The prefetch (AttentionPieceLayout::prefetch), a share as the softmax releases each query tile: the piece's own
  // loads are then behind it, its stores still ahead.
  add_prefetch(pipe, info, "attention piece kernel", l.prefetch, l.sbuf_end, p_ready);
}
}  // namespace

namespace {
/// The share of the P^T copies on the Vector engine whose piece the Pipeline's estimate finds shortest (the first of
/// kPtShares on a tie), and that estimate in *estimate. The engines' costs come from the device (DeviceInfo's clocks
/// and Vector data path), so a wider Vector engine takes more of the copies.
PtShare pt_share(const driver::DeviceInfo& info, const AttentionPieceLayout& l, double* estimate) {
  PtShare best;
  double best_cycles = 0;
  for (const PtShare& share : kPtShares) {
    Pipeline pipe(info);
    add_attention_piece(pipe, info, l, share);
    const double cycles = pipe.estimated_cycles();
    if (share.num == 0 || cycles < best_cycles) best = share, best_cycles = cycles;
  }
  *estimate = best_cycles;
  return best;
}
}  // namespace

isa::Program make_attention_piece_program(const driver::DeviceInfo& info, const AttentionPieceLayout& l) {
  double estimate = 0;
  const PtShare share = pt_share(info, l, &estimate);
  Pipeline pipe(info);
  add_attention_piece(pipe, info, l, share);
  return pipe.build();
}

double attention_piece_estimate(const driver::DeviceInfo& info, const AttentionPieceLayout& l) {
  double estimate = 0;
  pt_share(info, l, &estimate);
  return estimate;
}

namespace {
std::pair<double, double> piece_cost(const driver::DeviceInfo& info, const AttentionPieceLayout& l) {
  double estimate = 0;
  const PtShare share = pt_share(info, l, &estimate);
  Pipeline pipe(info);
  add_attention_piece(pipe, info, l, share);
  return {estimate, estimate - pipe.dma_engine_cycles()};
}
}  // namespace

}  // namespace trnsim::kernels
