// Workloads as sequences of programs (kernel_sequence.h).
#include "firmware/kernels/kernel_sequence.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/gemm_kernel.h"
#include "firmware/kernels/pipeline.h"
#include "spec/trn_regs.h"

namespace trnsim::kernels {

void append(KernelSequence* seq, KernelSequence more) {
  for (auto& s : more) seq->push_back(std::move(s));
}

SequenceRun run_sequence(const std::vector<driver::Driver*>& cores, const KernelSequence& seq,
                         uint64_t timeout_cycles, const std::function<void(const StepRun&)>& on_step,
                         std::size_t* failed_step) {
  if (cores.empty()) throw std::invalid_argument("run_sequence: no cores");
  SequenceRun total;
  total.core_runs.assign(cores.size(), {});
  total.core_macs.assign(cores.size(), 0);
  const auto record = [&](StepRun r) {
    total.macs += r.macs;
    total.instructions += r.instructions;
    driver::RunResult& c = total.core_runs[size_t(r.core)];
    c.cycles += r.run.cycles;
    total.core_macs[size_t(r.core)] += r.macs;
    for (std::size_t q = 0; q < total.retired.size(); ++q) {
      total.retired[q] += r.run.retired[q];
      c.retired[q] += r.run.retired[q];
    }
    if (on_step) on_step(r);
    total.steps.push_back(std::move(r));
  };
  for (std::size_t i = 0; i < seq.size(); ++i) {
    if (seq[i].core >= int(cores.size())) {
      throw std::invalid_argument(fmt::format("run_sequence: step {} ({}) is pinned to core {} of a run on {} cores",
                                              i, seq[i].name, seq[i].core, cores.size()));
    }
  }
  for (std::size_t first = 0; first < seq.size();) {
    std::size_t end = first + 1;  // the wave: [first, end)
    while (end < seq.size() && seq[end].with_previous) ++end;
    // Per core: the step it runs (or none) and, counted from the wave's start, when that step ends. A core whose
    // step ends takes its next step of the wave at once (its doorbell rings in the cycle the host learns of the
    // end), so its steps run back to back and their ends are the sums of their cycles.
    std::vector<std::size_t> running(cores.size(), seq.size());
    std::vector<uint64_t> ends(cores.size(), 0);
    std::vector<bool> started(end - first, false);
    std::size_t busy = 0;
    // Starts core c's next step of the wave (the first not started that is not pinned elsewhere), if any.
    const auto launch = [&](std::size_t c) {
      for (std::size_t i = first; i < end; ++i) {
        if (started[i - first] || (seq[i].core >= 0 && std::size_t(seq[i].core) != c)) continue;
        cores[c]->load_program(seq[i].program);
        cores[c]->start();
        started[i - first] = true;
        running[c] = i;
        ++busy;
        return;
      }
    };
    for (std::size_t c = 0; c < cores.size(); ++c) launch(c);
    uint64_t span = 0;  // the wave's time so far: the latest end
    while (busy > 0) {
      // The busy cores, and the cycles until the first of their steps reaches its timeout (each counts from its own
      // doorbell: CYCLE; one core alone has just started its step).
      std::vector<driver::Driver*> waiting;
      std::vector<std::size_t> waiting_core;
      uint64_t wait_cycles = timeout_cycles, most = 0;
      std::size_t c = cores.size();  // the busy core whose step has run longest (the lowest on a tie)
      for (std::size_t w = 0; w < cores.size(); ++w) {
        if (running[w] == seq.size()) continue;
        waiting.push_back(cores[w]);
        waiting_core.push_back(w);
        const uint64_t ran = cores.size() == 1 ? 0 : cores[w]->read_reg64(regs::CYCLE_LO, regs::CYCLE_HI);
        wait_cycles = std::min(wait_cycles, timeout_cycles - std::min(ran, timeout_cycles));
        if (c == cores.size() || ran > most) most = ran, c = w;
      }
      // One busy core: its own wait (with the driver's progress lines). Several: the first of them to end; when none
      // ends before the earliest timeout, the longest-running step's wait reports it.
      if (busy > 1) {
        const int first_done = driver::Driver::wait_first(waiting, wait_cycles);
        if (first_done >= 0) c = waiting_core[std::size_t(first_done)];
      }
      const std::size_t i = running[c];
      if (failed_step) *failed_step = i;
      StepRun r;
      r.name = seq[i].name;
      r.index = i;
      r.macs = seq[i].macs;
      r.core = int(c);
      for (const auto& q : seq[i].program.queues) r.instructions += q.size();
      try {
        r.run = cores[c]->wait(busy > 1 ? 0 : wait_cycles);
      } catch (const driver::DriverTimeout& e) {
        throw driver::DriverTimeout(timeout_cycles, e.device_cycles(), e.queues(), e.core());
      }
      running[c] = seq.size();
      --busy;
      ends[c] += r.run.cycles;
      r.elapsed = ends[c] > span ? ends[c] - span : 0;
      span = std::max(span, ends[c]);
      launch(c);
      record(std::move(r));
    }
    if (std::find(started.begin(), started.end(), false) != started.end()) {  // cannot happen: every step has a core
      throw std::logic_error("run_sequence: a wave ended with steps that never started");
    }
    total.cycles += span;
    first = end;
  }
  return total;
}

SequenceRun run_sequence(driver::Driver& drv, const KernelSequence& seq, uint64_t timeout_cycles,
                         const std::function<void(const StepRun&)>& on_step, std::size_t* failed_step) {
  return run_sequence(std::vector<driver::Driver*>{&drv}, seq, timeout_cycles, on_step, failed_step);
}

int rows_per_core(int rows, int tile, int cores) {
  const int tiles = (rows + tile - 1) / tile;
  return (tiles + cores - 1) / cores * tile;
}

KernelSequence row_split_steps(const std::string& name, int rows, int tile, int cores,
                               const std::function<KernelStep(int r0, int n)>& make) {
  if (cores < 1 || tile < 1) {
    throw std::invalid_argument(fmt::format("{}: {} cores, tiles of {} rows", name, cores, tile));
  }
  const int per = rows_per_core(rows, tile, cores);
  KernelSequence seq;
  for (int r0 = 0; r0 < rows; r0 += per) {
    seq.push_back(make(r0, std::min(per, rows - r0)));
    seq.back().name = name;
    seq.back().with_previous = r0 > 0;
  }
  return seq;
}

std::vector<GemmPiece> split_gemm(const driver::DeviceInfo& info, const GemmLayout& whole, int cores) {
  const int m = whole.m, n = whole.n;
  if (cores < 1 || m < 1 || n < 1 || whole.k < 1) {
    throw std::invalid_argument(fmt::format("split_gemm: {} cores, K {}, M {}, N {}", cores, whole.k, m, n));
  }
  // M is cut in whole TE-column tiles, N in multiples of kGemmSplitColumns, and N only into pieces whose share of
  // the moving operand is at least a quarter of what the DMA engines move in one start latency (a smaller piece
  // mostly adds a start latency: a per-head scores GEMM at T = 128, 16 KiB of moving, cut in two took 25 k cycles
  // instead of 17 k; the block's c_proj at T = 128, 1.2 MB, took 15 k in 8 pieces, 22 k in 2, 38 k in 1).
  const int tile = int(std::max<uint32_t>(1, info.te_cols));
  const int m_tiles = (m + tile - 1) / tile;
  const uint64_t es = isa::dtype_bits(whole.dtype) / 8, ob = isa::data_type_bytes(whole.out_type);
  const double latency_bytes = dma_latency_bytes(info);
  const double moving_bytes = double(whole.k) * double(n) * double(es);
  const bool rows_whole = whole.epilogue.kind == GemmEpilogue::Kind::kSoftmax;  // a softmax needs whole rows
  const int max_n_parts = rows_whole ? 1 : std::max(1, std::min(cores, int(4.0 * moving_bytes / latency_bytes)));
  // Of the grids m_parts x n_parts <= cores, the one whose largest piece has the fewest TE cycles (K tiles x M
  // tiles x N columns: the parallel work), then the fewest operand and output bytes per core (every core loads its M
  // rows of the stationary operand and its N columns of the moving one: a 4 x 2 grid of a 4096^3 GEMM moves 2/3 of
  // what 8 x 1 moves, over the core's DMA engines and the shared HBM, and its first moving panel is half as wide),
  // then the most M parts.
  const uint32_t te_rows = std::max<uint32_t>(1, info.te_rows);
  const double k_tiles = double((uint64_t(whole.k) + te_rows - 1) / te_rows);
  struct Grid {
    int m_per = 0, n_per = 0;
    double te = 0, bytes = 0;
  };
  Grid best;
  for (int mp = std::min(cores, m_tiles); mp >= 1; --mp) {
    for (int np = 1; np <= max_n_parts && mp * np <= cores; ++np) {
      Grid g;
      g.m_per = rows_per_core(m, tile, mp);
      g.n_per = rows_per_core(n, kGemmSplitColumns, np);
      const double pm = std::min(g.m_per, m), pn = std::min(g.n_per, n);
      g.te = k_tiles * std::ceil(pm / tile) * pn;
      g.bytes = double(whole.k) * double(es) * (pm + pn) + pm * pn * double(ob);
      if (best.m_per == 0 || g.te < best.te || (g.te == best.te && g.bytes < best.bytes)) best = g;
    }
  }
  return split_gemm_grid(whole, best.m_per, best.n_per);
}

std::vector<GemmPiece> split_gemm_grid(const GemmLayout& whole, int m_per, int n_per) {
  const int m = whole.m, n = whole.n;
  if (m_per < 1 || n_per < 1 || m < 1 || n < 1) {
    throw std::invalid_argument(fmt::format("split_gemm_grid: blocks of {} x {} of M {}, N {}", m_per, n_per, m, n));
  }
  const uint64_t es = isa::dtype_bits(whole.dtype) / 8, ob = isa::data_type_bytes(whole.out_type);
  const int s_ld = whole.stationary_stride(), m_ld = whole.moving_stride(), o_ld = whole.out_stride();
  const bool mx = isa::is_mx(whole.dtype);
  std::vector<GemmPiece> pieces;
  for (int m0 = 0; m0 < m; m0 += m_per) {
    for (int n0 = 0; n0 < n; n0 += n_per) {
      GemmPiece piece{m0, n0, whole};
      GemmLayout& g = piece.layout;
      g.m = std::min(m_per, m - m0);
      g.n = std::min(n_per, n - n0);
      g.stationary_ld = s_ld, g.moving_ld = m_ld, g.out_ld = o_ld;
      g.stationary_hbm += uint64_t(m0) * es;  // columns [m0, m0 + m) of every row (and of the MX scales' rows)
      g.moving_hbm += uint64_t(n0) * es;      // columns [n0, n0 + n)
      if (mx) {
        g.stationary_scales_hbm += uint64_t(m0);
        g.moving_scales_hbm += uint64_t(n0);
      }
      const uint64_t corner = uint64_t(m0) * uint64_t(o_ld) + uint64_t(n0);  // element (m0, n0) of out and residual
      g.out_hbm += corner * ob;
      if (g.epilogue.kind == GemmEpilogue::Kind::kRowBiasAct) g.epilogue.bias_hbm += uint64_t(m0) * 4;
      if (g.epilogue.kind == GemmEpilogue::Kind::kColBiasAdd) g.epilogue.bias_hbm += uint64_t(n0) * 4;
      if (g.epilogue.residual) g.epilogue.residual_hbm += corner * 4;
      if (g.epilogue.kind == GemmEpilogue::Kind::kSoftmax) g.epilogue.causal_offset += m0;  // row m0 is row 0
      // An operand in SBUF (on every core that runs a piece): the piece's columns of it where they lie.
      if (g.stationary_in_sbuf) g.stationary_sbuf += uint32_t(isa::te_sbuf_row_bytes(g.dtype, uint64_t(m0)));
      if (g.moving_in_sbuf) g.moving_sbuf += uint32_t(isa::te_sbuf_row_bytes(g.dtype, uint64_t(n0)));
      pieces.push_back(std::move(piece));
    }
  }
  return pieces;
}

GemmLayout bf16_gemm(int k, int m, int n, uint64_t stationary_hbm, uint64_t moving_hbm, uint64_t out_hbm,
                     isa::DataType out_type, const GemmEpilogue& epilogue) {
  GemmLayout whole;
  whole.dtype = isa::Dtype::kBf16;
  whole.k = k, whole.m = m, whole.n = n;
  whole.stationary_hbm = stationary_hbm, whole.moving_hbm = moving_hbm, whole.out_hbm = out_hbm;
  whole.out_type = out_type;
  whole.epilogue = epilogue;
  return whole;
}

KernelSequence gemm_steps(const driver::DeviceInfo& info, const std::string& name, int k, int m, int n,
                          uint64_t stationary_hbm, uint64_t moving_hbm, uint64_t out_hbm, int cores,
                          isa::DataType out_type, const GemmEpilogue& epilogue) {
  return gemm_steps(info, name, bf16_gemm(k, m, n, stationary_hbm, moving_hbm, out_hbm, out_type, epilogue), cores);
}

namespace {
/// gemm_steps' pieces of `whole`, each layout final (wave pieces, an SBUF operand's columns).
std::vector<GemmPiece> gemm_step_pieces(const driver::DeviceInfo& info, const std::string& name,
                                        const GemmLayout& whole, int cores) {
  if (cores < 1) throw std::invalid_argument(fmt::format("{}: {} cores", name, cores));
  std::vector<GemmPiece> pieces;
  if (whole.moving_in_sbuf) {  // every core holds the moving operand: only the stationary's loads to share
    pieces = split_gemm_grid(whole, rows_per_core(whole.m, int(std::max<uint32_t>(1, info.te_cols)), cores), whole.n);
  } else if (whole.stationary_in_sbuf) {
    pieces = split_gemm_grid(whole, whole.m, rows_per_core(whole.n, kGemmSplitColumns, cores));
  } else {
    pieces = split_gemm(info, whole, cores);
  }
  // The wave pieces the first (largest) piece's estimate finds shortest, for every piece.
  const double pieces_of = with_best_wave_pieces(info, pieces.front().layout).wave_piece_latencies;
  for (GemmPiece& p : pieces) p.layout.wave_piece_latencies = pieces_of;
  return pieces;
}
}  // namespace

KernelSequence gemm_steps(const driver::DeviceInfo& info, const std::string& name, const GemmLayout& whole,
                          int cores) {
  KernelSequence seq;
  for (const GemmPiece& p : gemm_step_pieces(info, name, whole, cores)) {
    const GemmLayout& g = p.layout;
    const uint64_t macs = uint64_t(g.k) * uint64_t(g.m) * uint64_t(g.n);
    seq.push_back({name, make_gemm_program(info, g), macs, !seq.empty()});
  }
  return seq;
}

double gemm_steps_estimate(const driver::DeviceInfo& info, const GemmLayout& whole, int cores) {
  Pipeline pipe(info);
  add_gemm(pipe, info, gemm_step_pieces(info, "gemm", whole, cores).front().layout);
  return pipe.estimated_cycles();
}

uint32_t sbuf_operand_tile_bytes(isa::Dtype dtype, int n) {
  return uint32_t((isa::te_sbuf_row_bytes(dtype, uint64_t(std::max(n, 0))) + 63) / 64 * 64);
}

std::vector<isa::CopyFields> sbuf_operand_copies(const driver::DeviceInfo& info, isa::Dtype dtype, uint64_t hbm,
                                                 int k, int n, uint32_t sbuf, uint32_t tile_bytes) {
  const int kt = int(isa::te_max_k(dtype, info.te_rows));
  if (k < 1 || n < 1 || kt < 1 || (dtype != isa::Dtype::kBf16 && dtype != isa::Dtype::kFp16) ||
      tile_bytes < isa::te_sbuf_row_bytes(dtype, uint64_t(n))) {
    throw std::invalid_argument(fmt::format("an SBUF operand [{}, {}] of {} in K tiles of {} bytes: sizes must be >= 1, "
                                            "the type bf16 or fp16 and a tile at least one row",
                                            k, n, isa::dtype_name(dtype), tile_bytes));
  }
  const uint64_t row = uint64_t(n) * 2, full = uint64_t(k / kt);
  std::vector<isa::CopyFields> copies;
  if (full > 0) {
    copies = te_operand_copies(info, dtype, hbm, row, kt, n, int(full), row * uint64_t(kt), sbuf, tile_bytes);
  }
  if (k % kt != 0) {  // the ragged last K tile
    const std::vector<isa::CopyFields> last = te_operand_copies(info, dtype, hbm + full * uint64_t(kt) * row, row,
                                                                k % kt, n, 1, 0, sbuf + full * tile_bytes, 0);
    copies.insert(copies.end(), last.begin(), last.end());
  }
  return copies;
}

void check_prefetch(const driver::DeviceInfo& info, const char* kernel, const std::vector<isa::CopyFields>& copies,
                    uint32_t sbuf_end) {
  const uint64_t pb = info.sbuf_partition_bytes;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const isa::CopyFields& c = copies[i];
    // The bytes each partition's row of the copy spans: the dimensions that do not step whole partitions.
    uint64_t span = isa::data_type_bytes(c.dst_type);
    bool ok = c.dst_space == isa::MemSpace::kSbuf && sbuf_end > 0;
    for (int d = 0; d < isa::kApDims; ++d) {
      const int32_t stride = c.dst_stride[std::size_t(d)];
      ok = ok && stride >= 0;
      if (c.count[std::size_t(d)] > 1 && stride > 0 && uint64_t(stride) % pb != 0) {
        span += uint64_t(c.count[std::size_t(d)] - 1) * uint64_t(stride);
      }
    }
    const uint64_t off = pb > 0 ? c.dst_addr % pb : 0;
    if (!ok || off < sbuf_end || off + span > pb) {
      throw std::invalid_argument(fmt::format(
          "{}: prefetch copy {} must go to SBUF at or above sbuf_end {} within the partition's {} bytes (it starts at "
          "offset {} and spans {} bytes of each partition)",
          kernel, i, sbuf_end, pb, off, span));
    }
  }
}

std::vector<isa::CopyFields> prefetch_pieces(const driver::DeviceInfo& info, const std::vector<isa::CopyFields>& copies,
                                             double latencies) {
  const double piece_bytes =
      std::max(1.0, latencies * dma_latency_bytes(info) / std::max<uint32_t>(1, info.num_dma_engines));
  std::vector<isa::CopyFields> pieces;
  for (const isa::CopyFields& c : copies) {
    for (const isa::Instruction& in :
         dma_pieces(c, std::max<uint64_t>(1, uint64_t(std::ceil(double(copy_bytes(c)) / piece_bytes))))) {
      pieces.push_back(in.copy);
    }
  }
  return pieces;
}

void add_prefetch(Pipeline& pipe, const driver::DeviceInfo& info, const char* kernel,
                  const std::vector<isa::CopyFields>& copies, uint32_t sbuf_end,
                  const std::vector<Pipeline::OpId>& after) {
  if (copies.empty()) return;
  check_prefetch(info, kernel, copies, sbuf_end);
  std::vector<isa::Instruction> pieces;
  for (const isa::CopyFields& c : copies) {
    const std::vector<isa::Instruction> one = dma_pieces(c, 1);
    pieces.insert(pieces.end(), one.begin(), one.end());
  }
  const std::size_t n = pieces.size(), shares = std::max<std::size_t>(1, after.size());
  for (std::size_t i = 0; i < shares; ++i) {
    std::vector<isa::Instruction> share(pieces.begin() + std::ptrdiff_t(i * n / shares),
                                        pieces.begin() + std::ptrdiff_t((i + 1) * n / shares));
    if (!share.empty()) pipe.add(isa::Engine::kDma, std::move(share), {after.empty() ? -1 : after[i]});
  }
}

}  // namespace trnsim::kernels
