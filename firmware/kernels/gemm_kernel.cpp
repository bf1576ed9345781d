// The tiled GEMM kernel (gemm_kernel.h); tiling and semaphore protocol: docs/driver.md, "The GEMM kernel".
#include "firmware/kernels/gemm_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/softmax_kernel.h"

namespace trnsim::kernels {
namespace {

// The DMA cost figures the tiling is sized for come from the device (DeviceInfo::dma_latency_ns, dma_bytes_per_ns:
// each copy pays a start latency, then moves bytes at one engine's bandwidth). They only steer the choice of batch
// size; correctness never depends on them.
/// SBUF batch buffers wanted: the waves in flight (one being read, the others landing). A later wave is cut into
/// pieces of at least one engine's start-latency bytes (latency_engines), so each keeps only a few of the DMA
/// engines busy: with 3 buffers a DMA-bound GEMM left engines idle. Measured (trnsim run --config trn2 --te tlm,
/// 2026-12-06): 3 -> 6 buffers, 2048^3 on one core 569,545 -> 562,746 cycles, 4096^3 on 8 cores 587,841 ->
/// 583,483, the block's qkv GEMM at seq 2048 54,689 -> 50,060, no workload slower; 7 or 8 cut the K batches of the
/// block's MLP down GEMM and made it slower (75,370 -> 81,047).
constexpr int kWantedSbufBuffers = 6;
/// TE time of a batch should exceed this many times the estimated DMA time of its wave.
constexpr double kBatchSlack = 2.0;

constexpr uint64_t kFp32Bytes = 4;
/// Partial row maxima a softmax epilogue slot holds (one per PSUM bank of a block cut by bank; 4 + 12 FP32 columns
/// make the slot's 64 bytes).
constexpr int kSoftmaxPartials = 12;

uint64_t align_up(uint64_t v, uint64_t a) { return ceil_div(v, a) * a; }

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("gemm kernel: " + what);
}

int32_t stride(uint64_t bytes, const char* what) {
  require(bytes <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max()),
          fmt::format("{} stride of {} bytes does not fit the ISA's 32-bit strides", what, bytes));
  return static_cast<int32_t>(bytes);
}

bool fits_stride(uint64_t bytes) { return bytes <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max()); }

/// One output block: an M tile x a group of N tiles, accumulated in one PSUM buffer.
struct Block {
  int m0 = 0, rows = 0;        ///< output rows [m0, m0 + rows)
  int n0 = 0, cols = 0;        ///< output columns [n0, n0 + cols)
  int ntiles = 0;              ///< N tiles (banks) in the block
  int group = 0;               ///< its group of N tiles (blocks group * m_tiles .. are the group's M tiles)
  int psum_buffer = 0;
  int epi_slot = 0;  ///< its epilogue slot (GemmPlan::epilogue_slots)
  int first_batch = 0, last_batch = 0;
};

/// One DMA load wave: K tiles [kt0, kt0 + nkt) of one block: the stationary tiles into one stationary slot, and the
/// moving tiles into one moving slot unless they are already there (a resident panel: load_moving false).
struct Batch {
  int block = 0;
  int kt0 = 0, nkt = 0;
  int stationary_slot = 0, moving_slot = 0;
  bool load_moving = true;
  /// Double-buffered panels: K tiles [prefetch_kt0, prefetch_kt0 + prefetch_nkt) of the next group's moving panel,
  /// loaded with this wave into the other panel.
  int prefetch_kt0 = 0, prefetch_nkt = 0;
};

class GemmBuilder {
 public:
  GemmBuilder(const driver::DeviceInfo& info, const GemmLayout& l, const GemmPlan& plan,
              const std::vector<Pipeline::OpId>& te_after)
      : info_(info), l_(l), plan_(plan), te_after_(te_after) {
    es_ = isa::dtype_bits(l.dtype) / 8;
    dtype_ = static_cast<isa::DataType>(static_cast<uint8_t>(l.dtype));
    bank_bytes_ = info.psum_bank_bytes();
    const GemmPlan& p = plan_;
    // Blocks sweep the M tiles of one group of N tiles before the next group, so that a resident moving panel (the
    // group's columns, all K) serves every M tile.
    for (int g = 0; g < p.n_groups; ++g) {
      for (int mt = 0; mt < p.m_tiles; ++mt) {
        Block b;
        b.m0 = mt * p.m_tile;
        b.rows = std::min(p.m_tile, l.m - b.m0);
        const int t0 = g * p.banks_per_block;
        const int t1 = std::min(p.n_tiles, t0 + p.banks_per_block);
        b.n0 = t0 * p.n_tile;
        b.cols = std::min(l.n, t1 * p.n_tile) - b.n0;
        b.ntiles = t1 - t0;
        b.group = g;
        b.psum_buffer = static_cast<int>(blocks_.size()) % p.psum_buffers;
        b.epi_slot = static_cast<int>(blocks_.size()) % std::max(1, p.epilogue_slots);
        b.first_batch = static_cast<int>(batches_.size());
        for (int kb = 0; kb < p.batches_per_block; ++kb) {
          Batch batch;
          batch.block = static_cast<int>(blocks_.size());
          batch.kt0 = kb * p.ktiles_per_batch;
          batch.nkt = std::min(p.ktiles_per_batch, p.k_tiles - batch.kt0);
          if (batch.nkt <= 0) break;
          const int j = static_cast<int>(batches_.size());
          batch.stationary_slot = j % p.sbuf_buffers;
          batch.moving_slot = p.moving_resident ? (g % std::max(1, p.moving_panels)) * p.batches_per_block + kb
                                                : j % p.sbuf_buffers;
          // A resident panel is loaded with its group's first M tile, unless the group before prefetched it.
          batch.load_moving =
              !l.moving_in_sbuf && (!p.moving_resident || (mt == 0 && (p.moving_panels < 2 || g == 0)));
          batches_.push_back(batch);
        }
        b.last_batch = static_cast<int>(batches_.size()) - 1;
        blocks_.push_back(b);
      }
      // Double-buffered panels: the waves of this group's M tiles after the first (the group before is done with
      // the other panel by then) share the next group's panel load, K tiles in order.
      if (p.moving_panels == 2 && g + 1 < p.n_groups) {
        const int first = blocks_[blocks_.size() - size_t(p.m_tiles) + 1].first_batch;
        const int waves = static_cast<int>(batches_.size()) - first;
        for (int i = 0; i < waves; ++i) {
          Batch& w = batches_[size_t(first + i)];
          w.prefetch_kt0 = int(int64_t(p.k_tiles) * i / waves);
          w.prefetch_nkt = int(int64_t(p.k_tiles) * (i + 1) / waves) - w.prefetch_kt0;
        }
      }
    }
  }

  /// The GEMM's ops (file comment of gemm_kernel.h); returns the ops that drain the blocks.
  std::vector<Pipeline::OpId> add_to(Pipeline& pipe) const {
    const GemmPlan& p = plan_;
    const std::size_t nbatches = batches_.size(), nbuf = std::size_t(p.sbuf_buffers);
    std::vector<Pipeline::OpId> load(nbatches), compute(nbatches), drain(blocks_.size(), -1);
    std::vector<int> moving_reader(std::size_t(p.moving_slots), -1);  // the last batch that read each moving slot
    std::vector<std::vector<Pipeline::OpId>> prefetched(std::size_t(p.moving_slots));  // loads into a slot ahead
    auto drain_op = [&](std::size_t bi, const std::vector<Pipeline::OpId>& after) {
      std::vector<isa::CopyFields> out;
      psum_block_copies(blocks_[bi], /*drain=*/true, &out);
      drain[bi] = pipe.add(isa::Engine::kDma, spread_copies(out, info_.num_dma_engines), after);
    };
    // With an epilogue a block leaves PSUM through the act or vec queue: drain[bi] is then the epilogue op (its PSUM
    // buffer is free once it completes) and stored[bi] the op that copies its staging slot to HBM. The DMA queue
    // runs in order, so a copy that waits for an epilogue would hold back the loads behind it: block b's store rides
    // in the load wave of batch last_b + nbuf + 1 (it waits for the TE's next batch, by when the epilogue is done),
    // and a column epilogue's bias/residual load of block b in the same wave as the store of the slot's previous
    // block (b - slots), or in the block's first wave when the slot is fresh. Past the last wave, or when the
    // epilogue that needs them comes first, they are ops of their own.
    const bool epi = has_epilogue();
    const int slots = std::max(1, p.epilogue_slots);  // block b's epilogue slot is b % slots
    const bool col_loads = epi && l_.epilogue.kind == GemmEpilogue::Kind::kColBiasAdd;
    std::vector<Pipeline::OpId> stored(blocks_.size(), -1), epi_loads(blocks_.size(), -1);
    std::vector<std::vector<int>> wave_stores(nbatches), wave_eloads(nbatches);  // blocks carried by each wave
    // The epilogue's constants: the softmax's +0, -inf and causal predicate (Vector engine), or a row epilogue's
    // biases, loaded after the first wave (which the TE waits for; the first epilogue comes after the TE's batch).
    Pipeline::OpId epi_consts =
        epi && l_.epilogue.kind == GemmEpilogue::Kind::kSoftmax ? add_softmax_constants(pipe) : -1;
    auto carry_to = [&](std::vector<std::vector<int>>& waves, std::size_t wave, int bi) {
      if (wave < nbatches) waves[wave].push_back(bi);
    };
    if (col_loads) {
      // A fresh slot's loads ride in its block's first wave; block 0's in the second, so that the first wave, which
      // the TE waits for, carries operands only.
      for (int bi = 0; bi < std::min(slots, int(blocks_.size())); ++bi) {
        const std::size_t first = std::size_t(blocks_[std::size_t(bi)].first_batch);
        carry_to(wave_eloads, bi == 0 && nbatches > 1 ? 1 : first, bi);
      }
    }
    // Block bi's store as an op of its own (when no wave carried it), over at least `engines` DMA engines and no
    // fewer than latency_engines of its bytes.
    auto store_op = [&](int bi, uint32_t engines) {
      std::vector<isa::CopyFields> copy;
      staging_stores(blocks_[std::size_t(bi)], &copy);
      engines = std::max(engines, latency_engines(info_, copy_bytes(copy)));
      stored[std::size_t(bi)] = pipe.add(isa::Engine::kDma, spread_copies(copy, engines), {drain[std::size_t(bi)]});
    };
    // The blocks whose epilogues must be done before block bi's loads: the slot's previous block, and for a
    // group's first block (which loads the group's bias row) the last block of the group that used that bias row.
    auto eload_waits_for = [&](int bi) -> std::pair<int, int> {
      const Block& b = blocks_[std::size_t(bi)];
      const int bias_prev = b.m0 == 0 && b.group >= 2 ? (b.group - 1) * p.m_tiles - 1 : -1;
      return {bi >= slots ? bi - slots : -1, bias_prev};
    };
    // A column epilogue's loads past the last wave: an op of their own, cut like a later wave (the TE is busy by then,
    // and a piece below one engine's start-latency bytes spends most of its time on that latency).
    auto eload_op = [&](int bi) {
      std::vector<isa::CopyFields> in;
      epilogue_load_copies(blocks_[std::size_t(bi)], &in);
      if (in.empty()) return;  // no residual, and not its group's first block: nothing to load
      const auto [slot_prev, bias_prev] = eload_waits_for(bi);
      epi_loads[std::size_t(bi)] =
          pipe.add(isa::Engine::kDma,
                   spread_copies(in, latency_engines(info_, copy_bytes(in), l_.wave_piece_latencies)),
                   {slot_prev >= 0 ? drain[std::size_t(slot_prev)] : -1,
                    bias_prev >= 0 ? drain[std::size_t(bias_prev)] : -1});
    };
    // A softmax kept in SBUF with two epilogue slots defers each block's normalisation (see epilogue_ops).
    const bool deferred_norm =
        l_.epilogue.kind == GemmEpilogue::Kind::kSoftmax && l_.out_in_sbuf && p.epilogue_slots >= 2;
    struct PendingNorm {
      int block = -1;
      Pipeline::OpId exp = -1;
      std::vector<isa::Instruction> instrs;
    } pending_norm;
    auto flush_norm = [&](Pipeline::OpId also_after) {
      if (pending_norm.block < 0) return;
      stored[std::size_t(pending_norm.block)] =
          pipe.add(isa::Engine::kVec, std::move(pending_norm.instrs), {pending_norm.exp, also_after});
      pending_norm = {};
    };
    // A softmax block whose exponentials leave PSUM bank by bank (into SBUF: out_in_sbuf) frees each bank on its own:
    // a later block of one batch (its bank-by-bank TE ops write nothing before its last batch) that reuses the PSUM
    // buffer writes bank k as soon as the exponentials of that block's bank k are out.
    std::vector<std::vector<Pipeline::OpId>> bank_drain(blocks_.size());
    // bank_te: a softmax block's last batch cut by bank (te_batch_by_bank), the TE op that completes each bank.
    auto epilogue_ops = [&](std::size_t bi, const std::vector<Pipeline::OpId>& bank_te) {
      const Block& b = blocks_[bi];
      const int prev = int(bi) >= slots ? int(bi) - slots : -1;  // the slot's previous block
      if (prev >= 0 && stored[std::size_t(prev)] < 0) store_op(prev, info_.num_dma_engines);  // its wave is to come
      if (col_loads && epi_loads[bi] < 0) eload_op(int(bi));
      // A column epilogue also reads its group's bias row, loaded with the group's first block.
      const Pipeline::OpId group_bias =
          col_loads ? epi_loads[std::size_t(b.group) * std::size_t(p.m_tiles)] : Pipeline::OpId(-1);
      const std::vector<Pipeline::OpId> after{compute[std::size_t(b.last_batch)], epi_consts, epi_loads[bi],
                                              group_bias, prev >= 0 ? stored[std::size_t(prev)] : -1};
      Pipeline::OpId done = -1;
      if (l_.epilogue.kind == GemmEpilogue::Kind::kSoftmax) {
        SoftmaxEpilogue e = add_softmax_epilogue(pipe, b, after, bank_te);
        if (l_.out_in_sbuf) bank_drain[bi] = e.exp_banks;
        if (!l_.epilogue.normalise) {  // the exponentials and their sums are the block's output
          drain[bi] = stored[bi] = e.exp;
          return;
        }
        if (deferred_norm) {
          // The block before is normalised after this block's row maxima: the Vector engine takes the maxima as
          // soon as the TE has the scores (the next exponentials wait for them), and normalises while the Scalar
          // engine computes the exponentials. Its slot is the other one, so nothing waits for this order.
          flush_norm(e.vmax);
          drain[bi] = e.exp;  // PSUM's last reader
          pending_norm = {int(bi), e.exp, std::move(e.norm)};
          return;
        }
        done = pipe.add(isa::Engine::kVec, std::move(e.norm), {e.exp});
        drain[bi] = l_.out_in_sbuf ? e.exp : done;
      } else {
        drain[bi] = done = pipe.add(epilogue_engine(), epilogue_instrs(b), after);
      }
      if (l_.out_in_sbuf) {  // the epilogue wrote the block's place: no store; its slot is free after the epilogue
        stored[bi] = done;
        return;
      }
      const std::size_t wave = std::size_t(b.last_batch) + nbuf + 1;
      carry_to(wave_stores, wave, int(bi));
      if (col_loads && bi + std::size_t(slots) < blocks_.size()) carry_to(wave_eloads, wave, int(bi) + slots);
    };
    for (std::size_t j = 0; j < nbatches; ++j) {
      const Batch& batch = batches_[j];
      const std::size_t bi = std::size_t(batch.block);
      const Block& b = blocks_[bi];
      const bool first = int(j) == b.first_batch;
      // The block that used this PSUM buffer before (its drain must be complete before the buffer is rewritten).
      const int reuse = first && batch.block >= p.psum_buffers ? batch.block - p.psum_buffers : -1;
      // The batch that freed this SBUF buffer may have completed a block: its drain joins this wave (one spread
      // over the engines: one start latency per engine, not two)...
      int carry = -1;
      if (j >= nbuf && !epi) {
        const int done = batches_[j - nbuf].block;
        if (blocks_[std::size_t(done)].last_batch == int(j - nbuf) && drain[std::size_t(done)] < 0) carry = done;
      }
      // ... unless this batch rewrites a PSUM buffer whose drain is not yet an op: then that drain is an op of its
      // own now (the TE must wait for it, and with accumulate_into this wave's P copy must follow it).
      if (!epi && reuse >= 0 && drain[std::size_t(reuse)] < 0 && (reuse != carry || l_.accumulate_into)) {
        drain_op(std::size_t(reuse), {compute[std::size_t(blocks_[std::size_t(reuse)].last_batch)]});
        if (carry == reuse) carry = -1;
      }
      std::vector<isa::CopyFields> wave;
      std::vector<Pipeline::OpId> load_after;
      if (j >= nbuf) load_after.push_back(compute[j - nbuf]);  // its stationary slot (and moving, unless resident)
      const int moving_prev = moving_reader[std::size_t(batch.moving_slot)];
      if (batch.load_moving && moving_prev >= 0) load_after.push_back(compute[std::size_t(moving_prev)]);
      moving_reader[std::size_t(batch.moving_slot)] = int(j);
      if (carry >= 0) psum_block_copies(blocks_[std::size_t(carry)], /*drain=*/true, &wave);
      // Epilogue stores and bias/residual loads carried by this wave (each after the epilogue it follows).
      for (int sb : wave_stores[j]) {
        if (stored[std::size_t(sb)] >= 0) continue;  // made an op of its own already
        staging_stores(blocks_[std::size_t(sb)], &wave);
        load_after.push_back(drain[std::size_t(sb)]);
      }
      std::vector<int> carried_eloads;
      for (int lb : wave_eloads[j]) {
        if (epi_loads[std::size_t(lb)] >= 0) continue;
        const auto [slot_prev, bias_prev] = eload_waits_for(lb);
        if (bias_prev >= 0 && drain[std::size_t(bias_prev)] < 0) {  // that epilogue is still to come: a later wave
          carry_to(wave_eloads, std::size_t(blocks_[std::size_t(bias_prev)].last_batch) + nbuf + 1, lb);
          continue;
        }
        epilogue_load_copies(blocks_[std::size_t(lb)], &wave);
        carried_eloads.push_back(lb);
        if (slot_prev >= 0) load_after.push_back(drain[std::size_t(slot_prev)]);
        if (bias_prev >= 0) load_after.push_back(drain[std::size_t(bias_prev)]);
      }
      if (l_.accumulate_into && first) {
        if (reuse >= 0) load_after.push_back(drain[std::size_t(reuse)]);  // P -> PSUM overwrites that buffer
        psum_block_copies(b, /*drain=*/false, &wave);
      }
      if (batch.load_moving) {
        tile_stack_copies(l_.moving_hbm, l_.moving_stride(), b.n0, b.cols, batch.kt0, batch.nkt,
                          moving_addr(batch.moving_slot, 0), p.moving_row_bytes, &wave);
      }
      // The next group's panel share, slot by slot (a slot holds P K tiles), after that slot's last reader.
      std::vector<int> prefetch_slots;
      for (int t = batch.prefetch_kt0; t < batch.prefetch_kt0 + batch.prefetch_nkt;) {
        const int g = int(bi) / p.m_tiles;                                  // this block's group
        const Block& next = blocks_[std::size_t(g + 1) * std::size_t(p.m_tiles)];  // the next group's first block
        const int kb = t / p.ktiles_per_batch, off = t % p.ktiles_per_batch;
        const int n = std::min(p.ktiles_per_batch - off, batch.prefetch_kt0 + batch.prefetch_nkt - t);
        const int slot = ((g + 1) % 2) * p.batches_per_block + kb;
        const int prev = moving_reader[std::size_t(slot)];
        if (prev >= 0) load_after.push_back(compute[std::size_t(prev)]);
        tile_stack_copies(l_.moving_hbm, l_.moving_stride(), next.n0, next.cols, t, n, moving_addr(slot, off),
                          p.moving_row_bytes, &wave);
        if (isa::is_mx(l_.dtype)) {
          scale_stack_copies(l_.moving_scales_hbm, l_.moving_stride(), next.n0, next.cols, t, n, moving_scale_addr(slot, off),
                             p.moving_scale_bytes, &wave);
        }
        prefetch_slots.push_back(slot);
        t += n;
      }
      if (!l_.stationary_in_sbuf) {
        tile_stack_copies(l_.stationary_hbm, l_.stationary_stride(), b.m0, b.rows, batch.kt0, batch.nkt,
                          stationary_addr(batch.stationary_slot, 0), p.stationary_row_bytes, &wave);
      }
      if (isa::is_mx(l_.dtype)) {
        if (batch.load_moving) {
          scale_stack_copies(l_.moving_scales_hbm, l_.moving_stride(), b.n0, b.cols, batch.kt0, batch.nkt,
                             moving_scale_addr(batch.moving_slot, 0), p.moving_scale_bytes, &wave);
        }
        scale_stack_copies(l_.stationary_scales_hbm, l_.stationary_stride(), b.m0, b.rows, batch.kt0, batch.nkt,
                           stationary_scale_addr(batch.stationary_slot, 0), p.stationary_scale_bytes, &wave);
      }
      // The first wave over every engine (the TE waits for it), unless the TE also waits for ops of the same program
      // before it (te_after: a LayerNorm whose output is the moving operand), which take longer; the later ones land
      // while the TE works, and several are in flight (completion semaphores, pipeline.h), so their pieces are cut no
      // smaller than what one engine moves in one start latency: more pieces would spend more engine time on start
      // latencies than they save.
      const uint32_t engines =
          j == 0 && te_after_.empty() ? info_.num_dma_engines
                                      : latency_engines(info_, copy_bytes(wave), l_.wave_piece_latencies);
      // (A batch of a stationary in SBUF whose moving panel is already there loads nothing.)
      load[j] = wave.empty() ? -1 : pipe.add(isa::Engine::kDma, spread_copies(wave, engines), load_after);
      if (j == 0 && epi && l_.epilogue.kind == GemmEpilogue::Kind::kRowBiasAct) epi_consts = add_row_bias_load(pipe);
      for (int slot : prefetch_slots) prefetched[std::size_t(slot)].push_back(load[j]);
      if (carry >= 0) drain[std::size_t(carry)] = load[j];
      for (int sb : wave_stores[j]) {
        if (stored[std::size_t(sb)] < 0) stored[std::size_t(sb)] = load[j];
      }
      for (int lb : carried_eloads) epi_loads[std::size_t(lb)] = load[j];
      // The TE takes the batches in order: a block's K tiles accumulate into PSUM in increasing K (rule 4).
      // With both operands in SBUF a wave carries only the stores and bias/residual loads that ride in it (and P ->
      // PSUM with accumulate_into): then it does not hold the TE back.
      const bool te_needs_wave = !(l_.stationary_in_sbuf && l_.moving_in_sbuf) || (l_.accumulate_into && first);
      std::vector<Pipeline::OpId> compute_after{te_needs_wave ? load[j] : -1};
      if (!batch.load_moving) {  // a prefetched panel slot: after the waves that filled it
        auto& ahead = prefetched[std::size_t(batch.moving_slot)];
        compute_after.insert(compute_after.end(), ahead.begin(), ahead.end());
        ahead.clear();
      }
      if (j > 0) compute_after.push_back(compute[j - 1]);
      if (j == 0) compute_after.insert(compute_after.end(), te_after_.begin(), te_after_.end());
      // Bank by bank (bank_drain): the one-batch block's bank k waits for the exponentials of the reused buffer's
      // bank k only (none past that block's live banks: nothing but the TE, in order, touched them).
      const std::vector<Pipeline::OpId>* reuse_banks = nullptr;
      if (reuse >= 0 && first && int(j) == b.last_batch && softmax_banks(b) > 1 &&
          !bank_drain[std::size_t(reuse)].empty()) {
        reuse_banks = &bank_drain[std::size_t(reuse)];
      } else if (reuse >= 0) {
        compute_after.push_back(drain[std::size_t(reuse)]);
      }
      // A softmax block's last batch goes bank by bank, so that the row maxima of a bank start as soon as the TE
      // has written it (add_softmax_epilogue).
      std::vector<Pipeline::OpId> bank_te;
      if (int(j) == b.last_batch && softmax_banks(b) > 1) {
        for (std::vector<isa::Instruction>& piece : te_batch_by_bank(batch)) {
          // Ops are list-scheduled (pipeline.h): each piece names the one before.
          std::vector<Pipeline::OpId> piece_after =
              bank_te.empty() ? compute_after : std::vector<Pipeline::OpId>{bank_te.back()};
          if (reuse_banks && bank_te.size() < reuse_banks->size()) {
            piece_after.push_back((*reuse_banks)[bank_te.size()]);
          }
          bank_te.push_back(pipe.add(isa::Engine::kTe, std::move(piece), piece_after));
        }
        compute[j] = bank_te.back();
      } else {
        compute[j] = pipe.add(isa::Engine::kTe, te_batch(batch), compute_after);
      }
      if (epi && int(j) == b.last_batch) epilogue_ops(bi, bank_te);
    }
    if (epi) {
      flush_norm(-1);
      // Past the last wave: the stores of the last blocks, which come out one after another at the end. Each gets
      // its share of the engines, and no less than latency_engines: over every engine, several small stores in a
      // row would queue behind each other in pieces that are mostly start latency. The last block's store, which
      // nothing follows, goes over every engine: the program ends when it lands (the block's qkv GEMM piece at
      // seq 2048: 4 pieces of 32 KiB, 2.7 us, became 16 of 8 KiB, 1.7 us).
      const auto tail = uint32_t(std::count(stored.begin(), stored.end(), Pipeline::OpId(-1)));
      const auto share = uint32_t(ceil_div(info_.num_dma_engines, std::max(1u, tail)));
      for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
        if (stored[bi] < 0) store_op(int(bi), bi + 1 == blocks_.size() ? info_.num_dma_engines : share);
      }
      // A kept output is in SBUF once its epilogue is done (its stores land before the program ends).
      return l_.out_kept_in_sbuf ? drain : stored;
    }
    // The blocks no later wave carried.
    for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
      if (drain[bi] < 0) drain_op(bi, {compute[std::size_t(blocks_[bi].last_batch)]});
    }
    return drain;
  }

 private:
  // ---- SBUF layout (space addresses at partition 0): the moving slots, then the stationary slots; a slot holds
  // its P K tiles' rows, then their MX scales.
  uint64_t moving_addr(int slot, int t) const {
    return l_.sbuf_base + uint64_t(slot) * plan_.moving_slot_bytes + uint64_t(t) * plan_.moving_row_bytes;
  }
  uint64_t moving_scale_addr(int slot, int t) const {
    return moving_addr(slot, plan_.ktiles_per_batch) + uint64_t(t) * plan_.moving_scale_bytes;
  }
  uint64_t stationary_addr(int slot, int t) const {
    return l_.sbuf_base + uint64_t(plan_.moving_slots) * plan_.moving_slot_bytes +
           uint64_t(slot) * plan_.stationary_slot_bytes + uint64_t(t) * plan_.stationary_row_bytes;
  }
  uint64_t stationary_scale_addr(int slot, int t) const {
    return stationary_addr(slot, plan_.ktiles_per_batch) + uint64_t(t) * plan_.stationary_scale_bytes;
  }
  uint64_t psum_addr(int psum_buffer, int bank) const {
    return (uint64_t(psum_buffer) * plan_.banks_per_block + bank) * bank_bytes_;
  }
  int tile_rows(int kt) const { return std::min(plan_.k_tile, l_.k - kt * plan_.k_tile); }

  // ---- Epilogue (GemmEpilogue): per PSUM buffer a slot at epilogue_offset: the staging of a block's outputs
  // (out_type), then for a column epilogue its bias row and residual (FP32); a row epilogue's bias columns (one FP32
  // per partition and M tile) follow the slots.
  bool has_epilogue() const { return l_.epilogue.kind != GemmEpilogue::Kind::kNone; }
  isa::Engine epilogue_engine() const {
    return l_.epilogue.kind == GemmEpilogue::Kind::kRowBiasAct ? isa::Engine::kAct : isa::Engine::kVec;
  }
  uint32_t block_cols_max() const {
    return uint32_t(std::min<int64_t>(l_.n, int64_t(plan_.banks_per_block) * plan_.n_tile));
  }
  /// out_in_sbuf: block b's output, in place of its staging slot (whole rows: the softmax epilogue's blocks).
  uint32_t out_sbuf_addr(const Block& b) const {
    return l_.out_sbuf + uint32_t(b.m0 / plan_.m_tile) * l_.out_sbuf_tile_bytes;
  }
  /// Where a row or column epilogue writes block b's output in out_type: its staging slot, or (out_in_sbuf,
  /// out_kept_in_sbuf) its columns of its place in SBUF.
  uint32_t out_stage_addr(const Block& b) const {
    if (!l_.out_in_sbuf && !l_.out_kept_in_sbuf) return staging_addr(b.epi_slot);
    return out_sbuf_addr(b) + uint32_t(b.n0) * isa::data_type_bytes(l_.out_type);
  }
  uint32_t staging_addr(int slot) const {
    return l_.sbuf_base + plan_.epilogue_offset + uint32_t(slot) * plan_.epilogue_slot_bytes;
  }
  /// A column epilogue's bias row of group g (two rows, by the group's parity, after the slots).
  uint32_t col_bias_addr(int group) const {
    const uint64_t row = align_up(uint64_t(block_cols_max()) * kFp32Bytes, 64);
    return staging_addr(plan_.epilogue_slots) + uint32_t(group % 2) * uint32_t(row);
  }
  /// Bytes per element of a slot's staging area: out_type's, or FP32 (the softmax's exponentials, out_in_sbuf), or
  /// none (an unnormalised softmax writes its exponentials to its place in SBUF).
  uint64_t stage_bytes() const {
    if (!l_.out_in_sbuf) return isa::data_type_bytes(l_.out_type);
    return l_.epilogue.kind == GemmEpilogue::Kind::kSoftmax && l_.epilogue.normalise ? kFp32Bytes : 0;
  }
  uint32_t residual_addr(int slot) const {
    return staging_addr(slot) + uint32_t(align_up(uint64_t(block_cols_max()) * stage_bytes(), 64));
  }
  uint32_t row_bias_addr(int m_tile_index) const {
    return staging_addr(plan_.epilogue_slots) + uint32_t(m_tile_index) * uint32_t(kFp32Bytes);
  }

  /// A row epilogue's biases, one FP32 per partition and M tile: the whole M tiles in one copy (bias element
  /// mt * m_tile + p to partition p at row_bias_addr(mt)), a ragged last tile in another, on as few engines as their
  /// bytes are worth (latency_engines): each copy pays a start latency, however few its bytes (a 2304-row bias:
  /// 2 copies, 18 before).
  Pipeline::OpId add_row_bias_load(Pipeline& pipe) const {
    if (l_.epilogue.kind != GemmEpilogue::Kind::kRowBiasAct) return -1;
    std::vector<isa::CopyFields> copies;
    const int whole = l_.m / plan_.m_tile;
    auto tile_copy = [&](int mt, int rows) {
      return copy_rows(isa::MemSpace::kHbm, l_.epilogue.bias_hbm + uint64_t(mt) * plan_.m_tile * kFp32Bytes,
                       isa::DataType::kFp32, kFp32Bytes, isa::MemSpace::kSbuf, row_bias_addr(mt),
                       isa::DataType::kFp32, info_.sbuf_partition_bytes, rows, 1);
    };
    if (whole > 0) {
      isa::CopyFields c = tile_copy(0, plan_.m_tile);
      c.count[2] = static_cast<uint16_t>(whole);
      c.src_stride[2] = whole > 1 ? int32_t(uint64_t(plan_.m_tile) * kFp32Bytes) : 0;
      c.dst_stride[2] = whole > 1 ? int32_t(kFp32Bytes) : 0;
      copies.push_back(c);
    }
    if (l_.m % plan_.m_tile != 0) copies.push_back(tile_copy(whole, l_.m % plan_.m_tile));
    return pipe.add(isa::Engine::kDma, spread_copies(copies, latency_engines(info_, copy_bytes(copies))));
  }

  /// A column epilogue's loads for block b: for a group's first block (its first M tile) the group's bias[n0 .. n0 +
  /// cols) into every row of the group's bias row (source rows 0 bytes apart; the M tile's rows, the most any block
  /// has), and residual rows [m0, m0 + rows), columns [n0, n0 + cols), into the block's slot.
  void epilogue_load_copies(const Block& b, std::vector<isa::CopyFields>* out) const {
    const int64_t pb = info_.sbuf_partition_bytes;
    if (b.m0 == 0) {
      out->push_back(copy_rows(isa::MemSpace::kHbm, l_.epilogue.bias_hbm + uint64_t(b.n0) * kFp32Bytes,
                               isa::DataType::kFp32, 0, isa::MemSpace::kSbuf, col_bias_addr(b.group),
                               isa::DataType::kFp32, pb, b.rows, b.cols));
    }
    if (l_.epilogue.residual) {
      out->push_back(copy_rows(isa::MemSpace::kHbm,
                               l_.epilogue.residual_hbm + (uint64_t(b.m0) * l_.out_stride() + uint64_t(b.n0)) * kFp32Bytes,
                               isa::DataType::kFp32, stride(uint64_t(l_.out_stride()) * kFp32Bytes, "residual row"),
                               isa::MemSpace::kSbuf, residual_addr(b.epi_slot), isa::DataType::kFp32, pb, b.rows,
                               b.cols));
    }
  }

  /// The epilogue of block b, bank by bank (the operations of make_row_bias_activation_program or
  /// make_col_bias_add_program, in their order): PSUM -> staging slot in out_type. The column epilogue adds the
  /// bias in place in PSUM, then the residual.
  std::vector<isa::Instruction> epilogue_instrs(const Block& b) const {
    std::vector<isa::Instruction> out;
    const uint32_t oes = isa::data_type_bytes(l_.out_type);
    for (int g = 0; g < b.ntiles; ++g) {
      const int c0 = g * plan_.n_tile, cols = std::min(plan_.n_tile, b.cols - c0);
      const isa::Operand sum = operand(uint32_t(psum_addr(b.psum_buffer, g)), isa::DataType::kFp32, {1, 0},
                                       isa::MemSpace::kPsum);
      const isa::Operand dst = operand(out_stage_addr(b) + uint32_t(c0) * oes, l_.out_type);
      if (l_.epilogue.kind == GemmEpilogue::Kind::kRowBiasAct) {
        const isa::Operand bias = column(row_bias_addr(b.m0 / plan_.m_tile));
        out.push_back(activation(l_.epilogue.func, b.rows, cols, dst, sum, 1.0f, 0.0f, &bias, nullptr));
        continue;
      }
      const isa::Operand bias = operand(col_bias_addr(b.group) + uint32_t(c0) * uint32_t(kFp32Bytes));
      if (!l_.epilogue.residual) {
        out.push_back(tensor_tensor(isa::AluOp::kAdd, b.rows, cols, dst, sum, bias));
        continue;
      }
      const isa::Operand res = operand(residual_addr(b.epi_slot) + uint32_t(c0) * uint32_t(kFp32Bytes));
      out.push_back(tensor_tensor(isa::AluOp::kAdd, b.rows, cols, sum, sum, bias));
      out.push_back(tensor_tensor(isa::AluOp::kAdd, b.rows, cols, dst, res, sum));
    }
    return out;
  }

  /// Block b's staging slot -> its rows and columns of out_hbm (out_type on both sides: the cast was the epilogue's).
  /// A causal softmax stores its live columns and writes +0 past them (from the zero constant, source strides 0).
  void staging_stores(const Block& b, std::vector<isa::CopyFields>* out) const {
    const uint64_t ob = isa::data_type_bytes(l_.out_type);
    const int w = live_columns(b);
    const uint64_t row = uint64_t(b.m0) * l_.out_stride() + uint64_t(b.n0);
    const int32_t row_stride = stride(uint64_t(l_.out_stride()) * ob, "output row");
    out->push_back(copy_rows(isa::MemSpace::kSbuf, out_stage_addr(b), l_.out_type,
                             info_.sbuf_partition_bytes, isa::MemSpace::kHbm, l_.out_hbm + row * ob, l_.out_type,
                             row_stride, b.rows, w));
    if (w < b.cols) {
      // The FP32 +0's first bytes read as out_type are its +0: the copy then moves out_type bytes (a copy costs
      // its larger element size).
      isa::CopyFields z = copy_rows(isa::MemSpace::kSbuf, softmax_zero_addr(), l_.out_type, 0,
                                    isa::MemSpace::kHbm, l_.out_hbm + (row + uint64_t(w)) * ob, l_.out_type,
                                    row_stride, b.rows, b.cols - w);
      z.src_stride[0] = 0;
      out->push_back(z);
    }
  }

  // ---- Softmax epilogue (the operations of make_softmax_program, docs/kernels.md "Softmax", on a block of whole
  // rows in PSUM). Causal: in a block of p rows whose first row is r0 (+ causal_offset), columns [0, a) are every
  // row's, the window [a, w) the diagonal block's, and [w, N) masked in every row (a = min(N, r0 + 1),
  // w = min(N, r0 + p)); column a + c is masked in partition q iff c >= q, whatever the block.
  int live_columns(const Block& b) const {
    if (l_.epilogue.kind != GemmEpilogue::Kind::kSoftmax || !l_.epilogue.causal) return b.cols;
    return int(std::min<int64_t>(b.cols, int64_t(b.m0) + l_.epilogue.causal_offset + b.rows));
  }
  int unmasked_columns(const Block& b) const {
    if (!l_.epilogue.causal) return b.cols;
    return int(std::min<int64_t>(b.cols, int64_t(b.m0) + l_.epilogue.causal_offset + 1));
  }
  uint32_t softmax_zero_addr() const { return staging_addr(plan_.epilogue_slots); }  // +0, then -inf
  uint32_t softmax_pred_addr() const { return softmax_zero_addr() + 64; }
  uint32_t softmax_column(int slot, int c) const {  // max, bias, sum, reciprocal
    return staging_addr(slot) +
           uint32_t(align_up(uint64_t(block_cols_max()) * stage_bytes(), 64)) + uint32_t(4 * c);
  }

  /// +0 and -inf (0 -> 1 -> -FLT_MAX -> -inf), and the predicate [m_tile, m_tile - 1]: 1.0 where c < q.
  Pipeline::OpId add_softmax_constants(Pipeline& pipe) const {
    return pipe.add(isa::Engine::kVec, causal_softmax_constants(plan_.m_tile, softmax_zero_addr(), softmax_pred_addr(),
                                                                plan_.m_tile - 1));
  }

  /// Block b's softmax: (window -> -inf) max, bias on vec; exp with its sum on act, in place in PSUM (out_in_sbuf:
  /// into the slot's staging area, so that PSUM is free after it): the ops vmax and exp. Then the normalisation:
  /// reciprocal, the product into the staging slot in out_type (out_in_sbuf: into the block's place in SBUF),
  /// (window -> +0) on vec: its instructions, an op the caller adds after exp.
  struct SoftmaxEpilogue {
    Pipeline::OpId vmax = -1, exp = -1;
    /// With the exponentials cut by bank (SoftmaxOps::exps_banks): each bank's op, its PSUM bank's last reader.
    std::vector<Pipeline::OpId> exp_banks;
    std::vector<isa::Instruction> norm;
  };
  /// The PSUM banks a softmax block's row maxima go over one by one (its live columns' banks; 0 without a softmax,
  /// and with more than the slot's 12 partial columns).
  int softmax_banks(const Block& b) const {
    if (l_.epilogue.kind != GemmEpilogue::Kind::kSoftmax) return 0;
    const int banks = int(ceil_div(uint64_t(live_columns(b)), uint64_t(plan_.n_tile)));
    return banks <= kSoftmaxPartials ? banks : 0;
  }
  /// With bank_te (the TE op that completes each bank of the block, softmax_banks > 1) the maxima go bank by bank,
  /// bank k's after bank_te[k], into partial columns; `after`'s first entry (the block's last TE op) is then
  /// replaced by bank_te[0].
  SoftmaxEpilogue add_softmax_epilogue(Pipeline& pipe, const Block& b, std::vector<Pipeline::OpId> after,
                                       const std::vector<Pipeline::OpId>& bank_te) const {
    SoftmaxTiles st;
    st.p = b.rows, st.w = live_columns(b), st.g = 1, st.stride = 0;
    st.space = isa::MemSpace::kPsum;
    st.x = uint32_t(psum_addr(b.psum_buffer, 0));
    st.z = l_.out_in_sbuf ? staging_addr(b.epi_slot) : st.x;
    st.z_space = l_.out_in_sbuf ? isa::MemSpace::kSbuf : isa::MemSpace::kPsum;
    st.y = l_.out_in_sbuf ? out_sbuf_addr(b) : staging_addr(b.epi_slot);
    st.y_type = l_.out_type;
    st.normalise = l_.epilogue.normalise;
    if (!st.normalise) st.z = st.y, st.z_type = st.y_type;  // the exponentials are the output
    st.scale = l_.epilogue.scale;
    if (l_.epilogue.causal) st.window = {unmasked_columns(b)};
    st.pred = softmax_pred_addr(), st.consts = softmax_zero_addr();
    st.mx = softmax_column(b.epi_slot, 0), st.nbias = softmax_column(b.epi_slot, 1);
    st.sum = st.normalise ? softmax_column(b.epi_slot, 2) : l_.epilogue.sums_sbuf + uint32_t(4 * (b.m0 / plan_.m_tile));
    st.rcp = softmax_column(b.epi_slot, 3);
    if (!bank_te.empty()) st.bank_cols = plan_.n_tile, st.partials = softmax_column(b.epi_slot, 4);
    SoftmaxOps ops = softmax_ops(st);
    SoftmaxEpilogue e;
    for (std::size_t k = 0; k < ops.vmax_banks.size(); ++k) {  // each after its bank and the bank before
      if (k == 0) {
        after.front() = bank_te.front();
      } else {
        after = {bank_te.at(k), after.front()};
      }
      after.front() = pipe.add(isa::Engine::kVec, std::move(ops.vmax_banks[k]), after);
      after.resize(1);
    }
    e.vmax = pipe.add(isa::Engine::kVec, std::move(ops.vmax), after);
    for (std::vector<isa::Instruction>& bank : ops.exps_banks) {  // in bank order: each continues the sums
      e.exp = pipe.add(isa::Engine::kAct, std::move(bank), {e.vmax, e.exp});
      e.exp_banks.push_back(e.exp);
    }
    if (e.exp_banks.empty()) e.exp = pipe.add(isa::Engine::kAct, std::move(ops.exps), {e.vmax});
    e.norm = std::move(ops.norm);
    return e;
  }

  // ---- TE ops

  /// te_batch cut after each bank's last multiply_moving (the last K tile's, in bank order): the first piece ends
  /// with bank 0's, then one piece per later bank, each with the last K tile's load_stationary again: the list
  /// scheduler may put other TE ops of the program (which load their own stationary) between the pieces.
  std::vector<std::vector<isa::Instruction>> te_batch_by_bank(const Batch& batch) const {
    std::vector<isa::Instruction> all = te_batch(batch);
    const std::size_t banks = std::size_t(blocks_[std::size_t(batch.block)].ntiles);
    const isa::Instruction& last_load = all[all.size() - banks - 1];
    std::vector<std::vector<isa::Instruction>> pieces;
    pieces.emplace_back(all.begin(), all.end() - std::ptrdiff_t(banks - 1));
    for (std::size_t g = 1; g < banks; ++g) pieces.push_back({last_load, all[all.size() - banks + g]});
    return pieces;
  }

  /// One batch on the TE: per K tile one load_stationary, then one multiply_moving per bank of the block.
  std::vector<isa::Instruction> te_batch(const Batch& batch) const {
    const GemmPlan& p = plan_;
    const Block& b = blocks_[std::size_t(batch.block)];
    std::vector<isa::Instruction> te;
    for (int t = 0; t < batch.nkt; ++t) {
      const int kt = batch.kt0 + t;
      isa::Instruction ls;
      ls.op = isa::Opcode::kLoadStationary;
      ls.te.dtype = l_.dtype;
      ls.te.sbuf_addr = l_.stationary_in_sbuf ? l_.stationary_sbuf + uint64_t(kt) * l_.stationary_sbuf_tile_bytes +
                                                    isa::te_sbuf_row_bytes(l_.dtype, uint64_t(b.m0))
                                              : stationary_addr(batch.stationary_slot, t);
      ls.te.k = static_cast<uint16_t>(tile_rows(kt));
      ls.te.free_size = static_cast<uint16_t>(b.rows);
      if (isa::is_mx(l_.dtype)) ls.te.scale_addr = stationary_scale_addr(batch.stationary_slot, t);
      te.push_back(ls);
      for (int g = 0; g < b.ntiles; ++g) {
        isa::Instruction mm;
        mm.op = isa::Opcode::kMultiplyMoving;
        mm.te.dtype = l_.dtype;
        mm.te.accumulate = l_.accumulate_into || kt > 0;
        mm.te.sbuf_addr =
            l_.moving_in_sbuf
                ? l_.moving_sbuf + uint64_t(kt) * l_.moving_sbuf_tile_bytes +
                      isa::te_sbuf_row_bytes(l_.dtype, uint64_t(b.n0) + uint64_t(g) * p.n_tile)
                : moving_addr(batch.moving_slot, t) + isa::te_sbuf_row_bytes(l_.dtype, uint64_t(g) * p.n_tile);
        mm.te.psum_addr = psum_addr(b.psum_buffer, g);
        mm.te.k = static_cast<uint16_t>(tile_rows(kt));
        mm.te.free_size = static_cast<uint16_t>(std::min(p.n_tile, b.cols - g * p.n_tile));
        if (isa::is_mx(l_.dtype)) {
          mm.te.scale_addr = moving_scale_addr(batch.moving_slot, t) + uint64_t(g) * p.n_tile;
        }
        te.push_back(mm);
      }
    }
    return te;
  }

  // ---- DMA copies

  /// Copies of one [rows, cols] tile stack: K tiles [kt0, kt0 + nkt) of a row-major [K, width] HBM tensor,
  /// columns [c0, c0 + cols), into SBUF at `dst` (partition 0) with `row_bytes` between K tiles, in the TE operand
  /// layout (te_operand_copies; FP8 pairs two K rows per partition).

  void tile_stack_copies(uint64_t tensor, int width, int c0, int cols, int kt0, int nkt, uint64_t dst,
                         uint32_t row_bytes, std::vector<isa::CopyFields>* out) const {
    const uint64_t R = static_cast<uint64_t>(plan_.k_tile);
    const uint64_t row = uint64_t(width) * es_;
    int nfull = nkt;
    if (tile_rows(kt0 + nkt - 1) < plan_.k_tile) --nfull;  // the ragged last K tile gets its own copy
    auto add = [&](int t, int rows, int tiles) {
      const uint64_t src = tensor + (uint64_t(kt0 + t) * R * width + uint64_t(c0)) * es_;
      for (const isa::CopyFields& c : te_operand_copies(info_, l_.dtype, src, stride(row, "row"), rows, cols, tiles,
                                                        R * row, dst + uint64_t(t) * row_bytes, row_bytes)) {
        out->push_back(c);
      }
    };
    if (nfull > 0) {
      if (nfull == 1 || fits_stride(R * row)) {
        add(0, plan_.k_tile, nfull);
      } else {
        for (int t = 0; t < nfull; ++t) add(t, plan_.k_tile, 1);
      }
    }
    if (nfull < nkt) add(nfull, tile_rows(kt0 + nkt - 1), 1);
  }

  /// The MX scale copies of the same tile stack: scales [ceil(K / 32), width] at `scales`, columns [c0, c0 + cols),
  /// one byte per column and SBUF row (te_scale_copies), tile t at `dst + t * row_bytes`.
  void scale_stack_copies(uint64_t scales, int width, int c0, int cols, int kt0, int nkt, uint64_t dst,
                          uint32_t row_bytes, std::vector<isa::CopyFields>* out) const {
    int nfull = nkt;
    if (tile_rows(kt0 + nkt - 1) < plan_.k_tile) --nfull;  // the ragged last K tile gets its own copies
    auto add = [&](int t, int tiles) {
      for (const isa::CopyFields& c : te_scale_copies(info_, scales, width, c0, cols, (kt0 + t) * plan_.k_tile,
                                                      tile_rows(kt0 + t), tiles, plan_.k_tile,
                                                      dst + uint64_t(t) * row_bytes, row_bytes)) {
        out->push_back(c);
      }
    };
    if (nfull > 0) add(0, nfull);
    if (nfull < nkt) add(nfull, 1);
  }

  /// The copy between a block's rows/columns of out_hbm and its PSUM buffer (drain: PSUM -> HBM; else HBM -> PSUM).
  void psum_block_copies(const Block& b, bool drain, std::vector<isa::CopyFields>* out) const {
    const uint64_t nt = static_cast<uint64_t>(plan_.n_tile);
    const bool contiguous = nt * kFp32Bytes == bank_bytes_;
    auto make = [&](int col0, int cols, int tiles) {
      isa::CopyFields c;
      c.src_type = c.dst_type = isa::DataType::kFp32;
      if (drain) {  // the output cast (rule 6, or rule 9 with out_sr), FP8 saturating
        c.dst_type = l_.out_type;
        c.sr = l_.out_sr;
      }
      const uint64_t ob = isa::data_type_bytes(l_.out_type);  // bytes per output element in HBM
      const uint64_t hbm = l_.out_hbm + (uint64_t(b.m0) * l_.out_stride() + uint64_t(b.n0 + col0)) * ob;
      const uint64_t psum = psum_addr(b.psum_buffer, 0) + (uint64_t(col0) / nt) * bank_bytes_ +
                            (uint64_t(col0) % nt) * kFp32Bytes;
      const int32_t hbm_row = stride(uint64_t(l_.out_stride()) * ob, "output row");
      const int32_t psum_row = static_cast<int32_t>(info_.psum_partition_bytes);
      c.count = {static_cast<uint16_t>(cols), static_cast<uint16_t>(b.rows), static_cast<uint16_t>(tiles), 1};
      std::array<int32_t, isa::kApDims> hbm_stride{int32_t(ob), b.rows > 1 ? hbm_row : 0, 0, 0};
      std::array<int32_t, isa::kApDims> psum_stride{4, b.rows > 1 ? psum_row : 0, 0, 0};
      if (tiles > 1) {
        hbm_stride[2] = static_cast<int32_t>(nt * ob);
        psum_stride[2] = static_cast<int32_t>(bank_bytes_);
      }
      if (drain) {
        c.src_space = isa::MemSpace::kPsum;
        c.dst_space = isa::MemSpace::kHbm;
        c.src_addr = psum;
        c.dst_addr = hbm;
        c.src_stride = psum_stride;
        c.dst_stride = hbm_stride;
      } else {
        c.src_space = isa::MemSpace::kHbm;
        c.dst_space = isa::MemSpace::kPsum;
        c.src_addr = hbm;
        c.dst_addr = psum;
        c.src_stride = hbm_stride;
        c.dst_stride = psum_stride;
      }
      return c;
    };
    if (contiguous || b.ntiles == 1) {
      out->push_back(make(0, b.cols, 1));
      return;
    }
    const int full = b.cols / plan_.n_tile;
    if (full > 0) out->push_back(make(0, plan_.n_tile, full));
    if (full * plan_.n_tile < b.cols) out->push_back(make(full * plan_.n_tile, b.cols - full * plan_.n_tile, 1));
  }

  const driver::DeviceInfo& info_;
  const GemmLayout& l_;
  GemmPlan plan_;
  std::vector<Pipeline::OpId> te_after_;
  unsigned es_ = 2;
  isa::DataType dtype_ = isa::DataType::kBf16;
  uint64_t bank_bytes_ = 0;
  std::vector<Block> blocks_;
  std::vector<Batch> batches_;
};

}  // namespace

namespace {

/// The PSUM banks `l` may use (GemmLayout::psum_bank_limit).
uint32_t psum_banks_of(const driver::DeviceInfo& info, const GemmLayout& l) {
  return l.psum_bank_limit > 0 ? std::min(l.psum_bank_limit, info.psum_banks) : info.psum_banks;
}

/// The tiling with at most `max_g` banks per block; with `panels` = 2, double-buffered moving panels when they fit
/// (GemmPlan::moving_panels tells).
GemmPlan plan_with_groups(const driver::DeviceInfo& info, const GemmLayout& l, int max_g, int panels) {
  require(l.k >= 1 && l.m >= 1 && l.n >= 1, fmt::format("K, M and N must be >= 1 (got {}, {}, {})", l.k, l.m, l.n));
  require(info.te_rows >= 1 && info.te_cols >= 1, "the device has no Tensor Engine rows/columns");
  require(info.sbuf_partitions >= info.te_rows,
          fmt::format("{} SBUF partitions cannot feed {} TE rows", info.sbuf_partitions, info.te_rows));
  require(info.psum_partitions >= 1 && info.psum_banks >= 1, "the device has no PSUM");
  const uint64_t bank_bytes = info.psum_bank_bytes();
  require(bank_bytes >= kFp32Bytes, fmt::format("PSUM banks of {} bytes hold no FP32", bank_bytes));
  const uint64_t es = isa::dtype_bits(l.dtype) / 8;
  const bool narrow_out = l.out_type != isa::DataType::kFp32;
  require(!narrow_out || isa::is_narrow(l.out_type), "the output type must be fp32 or a narrow type");
  require(!(narrow_out && l.accumulate_into), "accumulate_into needs an FP32 output (P is FP32 in out_hbm)");
  require(!l.out_sr || narrow_out, "stochastic rounding of the output needs a narrow output type");
  const GemmEpilogue::Kind epi = l.epilogue.kind;
  const bool has_epi = epi != GemmEpilogue::Kind::kNone;
  require(!has_epi || (!l.accumulate_into && !l.out_sr), "an epilogue needs accumulate_into and out_sr false");
  require(epi == GemmEpilogue::Kind::kNone || epi == GemmEpilogue::Kind::kRowBiasAct ||
              epi == GemmEpilogue::Kind::kColBiasAdd || epi == GemmEpilogue::Kind::kSoftmax,
          fmt::format("epilogue kind {} is not one of none, row bias + activation, column bias add, softmax",
                      int(epi)));
  require(std::isfinite(l.wave_piece_latencies) && l.wave_piece_latencies >= 1.0,
          fmt::format("wave_piece_latencies {} must be finite and >= 1", l.wave_piece_latencies));
  const bool softmax = epi == GemmEpilogue::Kind::kSoftmax;
  require(!softmax || (std::isfinite(l.epilogue.scale) && l.epilogue.scale > 0.0f && l.epilogue.causal_offset >= 0),
          fmt::format("a softmax epilogue needs a finite scale > 0 (got {}) and causal_offset >= 0 (got {})",
                      l.epilogue.scale, l.epilogue.causal_offset));
  require(!softmax || softmax_epilogue_fits(info, l.n),
          fmt::format("a softmax epilogue needs whole rows of N {} in one block of at most {} PSUM banks of 512 FP32",
                      l.n, std::max<uint32_t>(1, info.psum_banks / 2)));

  GemmPlan p;
  p.k_tile = static_cast<int>(isa::te_max_k(l.dtype, info.te_rows));  // 2 * te_rows for FP8 (rule 8)
  p.m_tile = static_cast<int>(std::min(info.te_cols, info.psum_partitions));
  p.n_tile = static_cast<int>(std::min<uint64_t>(isa::kMaxMovingN, bank_bytes / kFp32Bytes));
  require(p.k_tile <= 0xFFFF && p.m_tile <= 0xFFFF, "TE array larger than the ISA's 16-bit sizes");
  p.k_tiles = static_cast<int>(ceil_div(uint64_t(l.k), uint64_t(p.k_tile)));
  p.m_tiles = static_cast<int>(ceil_div(uint64_t(l.m), uint64_t(p.m_tile)));
  p.n_tiles = static_cast<int>(ceil_div(uint64_t(l.n), uint64_t(p.n_tile)));
  // Row strides of the tensors must fit the ISA's int32 strides.
  require(l.moving_ld == 0 || l.moving_ld >= l.n, fmt::format("moving_ld {} is smaller than N {}", l.moving_ld, l.n));
  require(l.out_ld == 0 || l.out_ld >= l.n, fmt::format("out_ld {} is smaller than N {}", l.out_ld, l.n));
  stride(uint64_t(l.moving_stride()) * es, "moving row");
  require(l.stationary_ld == 0 || l.stationary_ld >= l.m,
          fmt::format("stationary_ld {} is smaller than M {}", l.stationary_ld, l.m));
  stride(uint64_t(l.stationary_stride()) * es, "stationary row");
  stride(uint64_t(l.out_stride()) * kFp32Bytes, "output row");

  // Latency and bandwidth of one DMA engine in TE cycles.
  const double mhz = info.te_clock_mhz == 0 ? 2400.0 : static_cast<double>(info.te_clock_mhz);
  const double latency = info.dma_latency_ns * mhz / 1000.0;
  const double bytes_per_cycle = info.dma_bytes_per_ns * 1000.0 / mhz;
  const double engines = std::max(1.0, static_cast<double>(info.num_dma_engines) - 1.0);
  const uint64_t base = l.sbuf_base;
  require(base < info.sbuf_partition_bytes,
          fmt::format("sbuf_base {} is past the SBUF partition's {} bytes", base, info.sbuf_partition_bytes));
  uint64_t pb = info.sbuf_partition_bytes - base;
  if (l.sbuf_limit > 0) pb = std::min<uint64_t>(l.sbuf_limit, pb);
  // A region [at, at + bytes) of every partition that the GEMM reads or writes in place: inside the partition and
  // outside the GEMM's own buffers [base, base + pb).
  auto outside = [&](uint64_t at, uint64_t bytes) {
    return at + bytes <= info.sbuf_partition_bytes && (at + bytes <= base || at >= base + pb);
  };
  require(!(l.out_in_sbuf && l.out_kept_in_sbuf), "out_in_sbuf and out_kept_in_sbuf exclude each other");
  require(!l.out_kept_in_sbuf || epi == GemmEpilogue::Kind::kRowBiasAct || epi == GemmEpilogue::Kind::kColBiasAdd,
          "an output kept in SBUF as well as stored needs a row or column bias epilogue");
  if (l.out_in_sbuf || l.out_kept_in_sbuf) {
    const uint64_t m_tile = std::min(info.te_cols, info.psum_partitions);
    const uint64_t tiles = ceil_div(uint64_t(l.m), m_tile);
    require(softmax || epi == GemmEpilogue::Kind::kRowBiasAct || l.out_kept_in_sbuf,
            "an output kept in SBUF needs a softmax or a row bias + activation epilogue");
    require(l.out_sbuf_tile_bytes >= uint64_t(l.n) * isa::data_type_bytes(l.out_type),
            fmt::format("out_sbuf_tile_bytes {} holds no row of {} {} elements", l.out_sbuf_tile_bytes, l.n,
                        isa::data_type_name(l.out_type)));
    const uint64_t out_bytes = (tiles - 1) * l.out_sbuf_tile_bytes + uint64_t(l.n) * isa::data_type_bytes(l.out_type);
    require(outside(l.out_sbuf, out_bytes),
            fmt::format("the SBUF output at {} ({} tiles of {} bytes) is not outside the GEMM's bytes [{}, {}) and "
                        "within the partition's {}",
                        l.out_sbuf, tiles, l.out_sbuf_tile_bytes, base, base + pb, info.sbuf_partition_bytes));
  }
  if (l.stationary_in_sbuf) {
    const uint64_t k_tile = isa::te_max_k(l.dtype, info.te_rows);
    const uint64_t tiles = ceil_div(uint64_t(l.k), k_tile), row = isa::te_sbuf_row_bytes(l.dtype, uint64_t(l.m));
    require(l.dtype == isa::Dtype::kBf16 || l.dtype == isa::Dtype::kFp16,
            fmt::format("a stationary operand kept in SBUF is bf16 or fp16 (a row per partition), not {}",
                        isa::dtype_name(l.dtype)));
    require(l.stationary_sbuf_tile_bytes >= row,
            fmt::format("stationary_sbuf_tile_bytes {} holds no row of {} {} elements", l.stationary_sbuf_tile_bytes,
                        l.m, isa::dtype_name(l.dtype)));
    require(outside(l.stationary_sbuf, (tiles - 1) * l.stationary_sbuf_tile_bytes + row),
            fmt::format("the SBUF stationary at {} ({} K tiles of {} bytes) is not outside the GEMM's bytes [{}, {}) "
                        "and within the partition's {}",
                        l.stationary_sbuf, tiles, l.stationary_sbuf_tile_bytes, base, base + pb,
                        info.sbuf_partition_bytes));
  }
  if (l.moving_in_sbuf) {
    const uint64_t k_tile = isa::te_max_k(l.dtype, info.te_rows);
    const uint64_t tiles = ceil_div(uint64_t(l.k), k_tile), row = isa::te_sbuf_row_bytes(l.dtype, uint64_t(l.n));
    require(l.dtype == isa::Dtype::kBf16 || l.dtype == isa::Dtype::kFp16,
            fmt::format("a moving operand kept in SBUF is bf16 or fp16 (a row per partition), not {}",
                        isa::dtype_name(l.dtype)));
    require(l.moving_sbuf_tile_bytes >= row,
            fmt::format("moving_sbuf_tile_bytes {} holds no row of {} {} elements", l.moving_sbuf_tile_bytes, l.n,
                        isa::dtype_name(l.dtype)));
    require(outside(l.moving_sbuf, (tiles - 1) * l.moving_sbuf_tile_bytes + row),
            fmt::format("the SBUF moving at {} ({} K tiles of {} bytes) is not outside the GEMM's bytes [{}, {}) and "
                        "within the partition's {}",
                        l.moving_sbuf, tiles, l.moving_sbuf_tile_bytes, base, base + pb, info.sbuf_partition_bytes));
  }
  if (!l.epilogue.normalise) {
    const uint64_t tiles = ceil_div(uint64_t(l.m), uint64_t(std::min(info.te_cols, info.psum_partitions)));
    require(softmax && l.out_in_sbuf, "an unnormalised softmax (normalise false) needs its output kept in SBUF");
    require(l.epilogue.sums_sbuf % 4 == 0 && outside(l.epilogue.sums_sbuf, 4 * tiles),
            fmt::format("the row sums' columns at {} ({} of 4 bytes) are not 4-byte aligned outside the GEMM's bytes "
                        "[{}, {}) and within the partition's {}",
                        l.epilogue.sums_sbuf, tiles, base, base + pb, info.sbuf_partition_bytes));
  }
  require(!has_epi || uint64_t(std::min(info.te_cols, info.psum_partitions)) <= info.sbuf_partitions,
          fmt::format("an epilogue needs an SBUF partition per PSUM partition ({} of {})", info.sbuf_partitions,
                      std::min(info.te_cols, info.psum_partitions)));
  // The epilogue's buffers (GemmPlan::epilogue_offset) for blocks of `block_cols` columns and G banks.
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  const uint64_t m_tiles_all = ceil_div(uint64_t(l.m), uint64_t(std::min(info.te_cols, info.psum_partitions)));
  // A slot's staging area holds the block in out_type, or with out_in_sbuf the softmax's exponentials (FP32).
  const uint64_t stage_es = !l.out_in_sbuf ? oes : softmax && l.epilogue.normalise ? kFp32Bytes : 0;
  auto epi_slot = [&](uint64_t block_cols) -> uint64_t {
    if (!has_epi) return 0;
    uint64_t b = align_up(block_cols * stage_es, 64);
    if (softmax) b += 4 * (4 + kSoftmaxPartials);  // max, bias, sum, reciprocal columns, a partial maximum per bank
    if (epi == GemmEpilogue::Kind::kColBiasAdd && l.epilogue.residual) b += align_up(block_cols * kFp32Bytes, 64);
    return b;
  };
  // Epilogue slots for blocks of G banks: one per PSUM buffer; a softmax kept in SBUF with one PSUM buffer gets two,
  // so that a block's exponentials go to one slot while the block before is normalised from the other (the PSUM
  // buffer is free once the exponentials are out).
  auto epi_slots = [&](int g) -> int {
    const int buffers = int(psum_banks_of(info, l) / uint32_t(g));
    return softmax && l.out_in_sbuf && buffers == 1 ? 2 : buffers;
  };
  auto epi_bytes = [&](uint64_t block_cols, int g) -> uint64_t {
    if (!has_epi) return 0;
    uint64_t shared = epi == GemmEpilogue::Kind::kRowBiasAct ? align_up(m_tiles_all * kFp32Bytes, 64) : 0;
    if (epi == GemmEpilogue::Kind::kColBiasAdd) {  // a bias row per group of N tiles, two by parity
      const uint64_t groups = ceil_div(uint64_t(p.n_tiles), uint64_t(g));
      shared = align_up(block_cols * kFp32Bytes, 64) * std::min<uint64_t>(2, groups);
    }
    if (softmax) shared = 64 + align_up(uint64_t(std::min(info.te_cols, info.psum_partitions)) * kFp32Bytes, 64);
    return uint64_t(epi_slots(g)) * epi_slot(block_cols) + shared;
  };

  // Banks per block: half of PSUM (so that two blocks alternate), balanced over the N tiles, and a block's
  // columns must fit a 16-bit count and, for one K tile, an SBUF partition.
  for (int g_limit = std::min(max_g, p.n_tiles); g_limit >= 1; --g_limit) {
    p.n_groups = static_cast<int>(ceil_div(uint64_t(p.n_tiles), uint64_t(g_limit)));
    p.banks_per_block = static_cast<int>(ceil_div(uint64_t(p.n_tiles), uint64_t(p.n_groups)));
    const uint64_t block_cols = std::min<uint64_t>(uint64_t(l.n), uint64_t(p.banks_per_block) * p.n_tile);
    p.moving_row_bytes = l.moving_in_sbuf ? 0  // no buffer: the TE reads it where it is
                                          : static_cast<uint32_t>(std::min<uint64_t>(
                                                isa::te_sbuf_row_bytes(l.dtype, block_cols), 0xFFFFFFFFu));
    p.stationary_row_bytes = l.stationary_in_sbuf ? 0  // no buffer: the TE reads it where it is
                                                  : static_cast<uint32_t>(isa::te_sbuf_row_bytes(
                                                        l.dtype, uint64_t(std::min<int>(l.m, p.m_tile))));
    if (isa::is_mx(l.dtype)) {  // one E8M0 scale per column and SBUF row (rule 10)
      p.moving_scale_bytes = static_cast<uint32_t>(block_cols);
      p.stationary_scale_bytes = static_cast<uint32_t>(std::min<int>(l.m, p.m_tile));
    }
    const uint64_t tile_bytes =
        uint64_t(p.moving_row_bytes) + p.stationary_row_bytes + p.moving_scale_bytes + p.stationary_scale_bytes;
    if (block_cols <= 0xFFFF && tile_bytes + epi_bytes(block_cols, p.banks_per_block) <= pb) break;
    require(g_limit > 1, fmt::format("SBUF partitions of {} bytes cannot hold one K tile", pb));
  }
  p.psum_buffers = static_cast<int>(psum_banks_of(info, l) / uint32_t(p.banks_per_block));
  require(p.psum_buffers >= 1, fmt::format("{} PSUM banks hold no block of {} banks", psum_banks_of(info, l),
                                           p.banks_per_block));
  p.blocks = p.m_tiles * p.n_groups;
  p.epilogue_slots = has_epi ? epi_slots(p.banks_per_block) : 0;
  // The epilogue's buffers come off the top of the partition; the operand slots share what is left.
  const uint64_t group_cols = std::min<uint64_t>(uint64_t(l.n), uint64_t(p.banks_per_block) * p.n_tile);
  p.epilogue_slot_bytes = static_cast<uint32_t>(epi_slot(group_cols));
  const uint64_t epilogue_bytes = epi_bytes(group_cols, p.banks_per_block);
  pb -= epilogue_bytes;

  // K tiles per batch: enough that the TE works on a batch for kBatchSlack times as long as the DMA needs to load
  // the next one (estimated: one start latency, then the wave's bytes over all engines), within SBUF. TE time per K
  // tile, as the engine streams (TeTiming): the load's 1 + beats, then 1 + N per bank; the drains overlap.
  const uint64_t moving_per_ktile = uint64_t(p.moving_row_bytes) + p.moving_scale_bytes;
  const uint64_t stationary_per_ktile = uint64_t(p.stationary_row_bytes) + p.stationary_scale_bytes;
  const uint64_t per_ktile = moving_per_ktile + stationary_per_ktile;
  const double block_cols = std::min<double>(l.n, double(p.banks_per_block) * p.n_tile);
  const double k_parts = isa::te_sbuf_partitions(l.dtype, unsigned(p.k_tile));  // SBUF partitions of a K tile
  const double te_per_ktile = 1.0 + k_parts + block_cols + p.banks_per_block;
  const double dma_per_ktile = k_parts * double(per_ktile) / (engines * bytes_per_cycle);
  int want = p.k_tiles;  // both operands in SBUF (per_ktile 0): nothing to load, a block's K tiles in one batch
  if (per_ktile > 0 && te_per_ktile > kBatchSlack * dma_per_ktile) {
    want = static_cast<int>(std::ceil(kBatchSlack * latency / (te_per_ktile - kBatchSlack * dma_per_ktile)));
  }
  want = std::max(1, std::min(want, p.k_tiles));
  // SBUF bytes per partition of `slots` moving slots and `nbuf` stationary slots of `kt` K tiles each.
  auto layout_bytes = [&](uint64_t slots, uint64_t nbuf, uint64_t kt) {
    return slots * align_up(kt * moving_per_ktile, 64) + nbuf * align_up(kt * stationary_per_ktile, 64);
  };
  const int total_batches_max = p.blocks * p.k_tiles;
  p.sbuf_buffers = std::max(1, std::min(kWantedSbufBuffers, total_batches_max));
  for (;;) {
    const uint64_t nbuf = uint64_t(p.sbuf_buffers);
    int ktiles = static_cast<int>(std::min<uint64_t>(uint64_t(want), per_ktile > 0 ? pb / nbuf / per_ktile : want));
    while (ktiles >= 1 && layout_bytes(nbuf, nbuf, uint64_t(ktiles)) > pb) --ktiles;
    if (ktiles >= 1) {
      p.batches_per_block = static_cast<int>(ceil_div(uint64_t(p.k_tiles), uint64_t(ktiles)));
      p.ktiles_per_batch = static_cast<int>(ceil_div(uint64_t(p.k_tiles), uint64_t(p.batches_per_block)));
      break;
    }
    require(p.sbuf_buffers > 1, fmt::format("SBUF partitions of {} bytes cannot hold one K tile", pb));
    --p.sbuf_buffers;
  }
  p.batches = p.blocks * p.batches_per_block;
  p.sbuf_buffers = std::min(p.sbuf_buffers, p.batches);
  // The moving panel of a group (all its K tiles) stays in SBUF for the group's M tiles when it fits beside the
  // stationary slots: every moving element then crosses the DMA once instead of once per M tile. Two panels, when
  // they fit and there are two groups or more: the next group's loads during this one's M tiles.
  const uint64_t kt = uint64_t(p.ktiles_per_batch), nbuf = uint64_t(p.sbuf_buffers);
  const uint64_t bpb = uint64_t(p.batches_per_block);
  p.moving_resident = !l.moving_in_sbuf && p.m_tiles > 1 && layout_bytes(bpb, nbuf, kt) <= pb;
  p.moving_panels = p.moving_resident ? 1 : 0;
  if (panels == 2 && p.moving_resident && p.n_groups > 1 && layout_bytes(2 * bpb, nbuf, kt) <= pb) {
    p.moving_panels = 2;
  }
  p.moving_slots = p.moving_resident ? p.moving_panels * p.batches_per_block : p.sbuf_buffers;
  p.moving_slot_bytes = static_cast<uint32_t>(align_up(kt * moving_per_ktile, 64));
  p.stationary_slot_bytes = static_cast<uint32_t>(align_up(kt * stationary_per_ktile, 64));
  p.epilogue_offset = static_cast<uint32_t>(layout_bytes(uint64_t(p.moving_slots), nbuf, kt));
  p.sbuf_bytes = static_cast<uint32_t>(p.epilogue_offset + epilogue_bytes);
  // What crosses the DMA (the loads, P -> PSUM and the drains), for the bound beside the TE's.
  const double moving_loads = l.moving_in_sbuf ? 0.0 : p.moving_resident ? 1.0 : double(p.m_tiles);
  // A column epilogue: the residual (FP32), and each group's bias row into the M tile's rows (FP32).
  const bool col_epi = epi == GemmEpilogue::Kind::kColBiasAdd;
  const double epi_in = col_epi && l.epilogue.residual ? 4.0 : 0.0;
  const double bias_rows = col_epi ? double(std::min(l.m, p.m_tile)) * l.n * double(kFp32Bytes) : 0.0;
  const double stationary_loads = l.stationary_in_sbuf ? 0.0 : double(p.n_groups);
  p.dma_bytes = uint64_t(double(l.k) * l.n * double(es) * moving_loads + double(l.k) * l.m * double(es) * stationary_loads +
                         double(l.m) * l.n * ((l.out_in_sbuf ? 0.0 : double(oes)) + (l.accumulate_into ? 4 : 0) +
                                              epi_in) +
                         bias_rows);
  return p;
}

}  // namespace

GemmPlan plan_gemm(const driver::DeviceInfo& info, const GemmLayout& l) {
  // Banks per block: at most half of PSUM, so that two blocks alternate. Double-buffered panels are preferred: only
  // the first group's panel load is exposed (docs/kernels.md "The GEMM kernel"), so fewer banks per block are taken
  // when that is what lets two panels fit.
  const uint32_t banks = psum_banks_of(info, l);
  int max_g = static_cast<int>(std::max<uint32_t>(1, banks / 2));
  // Whole softmax rows in fewer banks than PSUM has: one block at a time if two do not fit.
  if (l.epilogue.kind == GemmEpilogue::Kind::kSoftmax && banks < info.psum_banks) {
    const uint64_t n_tile = std::min<uint64_t>(isa::kMaxMovingN, info.psum_bank_bytes() / kFp32Bytes);
    if (ceil_div(uint64_t(l.n), std::max<uint64_t>(n_tile, 1)) > uint64_t(max_g)) max_g = int(banks);
  }
  GemmPlan best = plan_with_groups(info, l, max_g, 1);
  if (l.epilogue.kind == GemmEpilogue::Kind::kSoftmax) {  // whole rows in a block
    require(best.n_groups == 1, fmt::format("a softmax epilogue needs whole rows in one block (N {})", l.n));
    return best;
  }
  auto estimate = [&](const GemmPlan& plan) {
    Pipeline pipe(info);
    GemmBuilder(info, l, plan, {}).add_to(pipe);
    return pipe.estimated_cycles();
  };
  if (l.moving_in_sbuf && best.n_tiles > 1) {
    // No moving loads to hide: narrower blocks only shorten the last block's epilogue and store, which nothing
    // follows, at the cost of a stationary load per group. The shortest by the Pipeline's cost model (the widest
    // of equals).
    double best_cycles = estimate(best);
    for (int g = best.banks_per_block - 1; g >= 1; --g) {
      const GemmPlan p = plan_with_groups(info, l, g, 1);
      if (p.n_groups == best.n_groups) continue;
      const double c = estimate(p);
      if (c < best_cycles) best = p, best_cycles = c;
    }
    return best;
  }
  for (int g = std::min(max_g, best.n_tiles); g >= 1 && best.m_tiles > 1 && best.n_tiles > 1; --g) {
    const GemmPlan p = plan_with_groups(info, l, g, 2);
    if (p.moving_panels != 2) continue;
    // Two panels cost a stationary load per group of N tiles; the widest blocks load it once, but the first panel
    // (all of N) is then exposed while the first M tile computes. The shorter by the Pipeline's cost model
    // (Pipeline::estimated_cycles); a tie keeps the two panels.
    if (best.n_groups >= p.n_groups) return p;
    return estimate(best) < estimate(p) ? best : p;
  }
  return best;
}

bool softmax_epilogue_fits(const driver::DeviceInfo& info, int n) {
  const uint64_t bank = info.psum_bank_bytes();
  const uint64_t n_tile = std::min<uint64_t>(isa::kMaxMovingN, bank / kFp32Bytes);
  return n >= 1 && n_tile >= 1 && n_tile * kFp32Bytes == bank &&
         ceil_div(uint64_t(n), n_tile) <= std::max<uint64_t>(1, info.psum_banks / 2);
}

std::vector<Pipeline::OpId> add_gemm(Pipeline& pipe, const driver::DeviceInfo& info, const GemmLayout& layout,
                                     const std::vector<Pipeline::OpId>& te_after) {
  return GemmBuilder(info, layout, plan_gemm(info, layout), te_after).add_to(pipe);
}

GemmLayout with_best_wave_pieces(const driver::DeviceInfo& info, const GemmLayout& layout) {
  GemmLayout best = layout;
  double best_cycles = -1.0;
  for (const double pieces_of : kWavePieceChoices) {
    GemmLayout l = layout;
    l.wave_piece_latencies = pieces_of;
    Pipeline pipe(info);
    add_gemm(pipe, info, l);
    const double cycles = pipe.estimated_cycles();
    if (best_cycles < 0.0 || cycles < best_cycles) best_cycles = cycles, best = l;
  }
  return best;
}

isa::Program make_gemm_program(const driver::DeviceInfo& info, const GemmLayout& layout) {
  Pipeline pipe(info);
  add_gemm(pipe, info, layout);
  return pipe.build();
}

}  // namespace trnsim::kernels
