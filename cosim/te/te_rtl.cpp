// Cycle-level driver of the verilated Tensor Engine. See te_rtl.h.
#include "cosim/te/te_rtl.h"
#include "cosim/rtl_coverage.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>
#include <type_traits>

#include <fmt/core.h>
#include <verilated.h>

#include "spec/isa_spec.h"
#if VM_TRACE
#include "cosim/wave_fst.h"
#endif

// The flat sizes' root headers: accp_q__VforceEn/Val (rtl/te/trn_te_force.vlt) for TeRtlOptions::force_out_acc_beat.
#if TRNSIM_HAVE_TE_4X4
#include "Vtrn_te_4x4.h"
#include "Vtrn_te_4x4___024root.h"
#endif
#if TRNSIM_HAVE_TE_8X4
#include "Vtrn_te_8x4.h"
#include "Vtrn_te_8x4___024root.h"
#endif
#if TRNSIM_HAVE_TE_8X8
#include "Vtrn_te_8x8.h"
#include "Vtrn_te_8x8___024root.h"
#endif
#if TRNSIM_HAVE_TE_16X16
#include "Vtrn_te_16x16.h"
#include "Vtrn_te_16x16___024root.h"
#endif
#if TRNSIM_HAVE_TE_64X64
#include "Vtrn_te_64x64.h"
#endif
#if TRNSIM_HAVE_TE_128X128
#include "Vtrn_te_128x128.h"
#endif

namespace trnsim::cosim {
namespace {

constexpr int kNMax = isa::kMaxMovingN;  // = rtl/te/trn_te_pkg.sv NMAX: both from spec/isa.json

// ---- Port access: Verilator maps a packed port to CData/SData/IData/QData or VlWide<N> by width. -------------
// Fields are 16 or 32 bits at multiples of their width, so a field never straddles a 32-bit word.
template <class T>
void put_field(T& port, unsigned lsb, unsigned width, uint32_t value) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t mask = ((width >= 64) ? ~uint64_t{0} : ((uint64_t{1} << width) - 1)) << lsb;
    port = static_cast<T>((static_cast<uint64_t>(port) & ~mask) | ((static_cast<uint64_t>(value) << lsb) & mask));
  } else {
    EData& word = port[lsb / 32];
    const unsigned shift = lsb % 32;
    const uint32_t mask = (width >= 32 ? 0xFFFFFFFFu : ((1u << width) - 1u)) << shift;
    word = (word & ~mask) | ((value << shift) & mask);
  }
}

template <class T>
uint32_t get_field(const T& port, unsigned lsb, unsigned width) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint32_t>((static_cast<uint64_t>(port) >> lsb) &
                                 ((width >= 32) ? 0xFFFFFFFFull : ((uint64_t{1} << width) - 1)));
  } else {
    const uint32_t word = port[lsb / 32] >> (lsb % 32);
    return width >= 32 ? word : (word & ((1u << width) - 1u));
  }
}

// "a, TOP.b" -> {"TOP.a", "TOP.b"}: the scopes of --wave-scope as Verilator names them (the model is named TOP).
std::vector<std::string> split_scopes(const std::string& text) {
  std::vector<std::string> scopes = split_wave_scopes<TeRtlError>(text, "trn_te.u_array.g_row[2]");
  for (std::string& s : scopes) {
    if (s.rfind("TOP.", 0) == 0) s.erase(0, 4);
    if (s != "TOP" && s != "trn_te" && s.rfind("trn_te.", 0) != 0) {
      throw TeRtlError(fmt::format("--wave-scope '{}': not in the Tensor Engine's hierarchy, which starts at trn_te "
                                   "(e.g. trn_te.u_array.g_row[2])",
                                   s));
    }
    s = "TOP." + s;
  }
  return scopes;
}

// kForceable: the model was verilated with rtl/te/trn_te_force.vlt (the flat sizes), so out_acc_o can be forced
// (TeRtlOptions::force_out_acc_beat).
template <class VTop, bool kForceable>
class TeRtlImpl final : public TeRtl {
 public:
  TeRtlImpl(int rows, int cols, const TeRtlOptions& options)
      : rows_(rows), cols_(cols), options_(options), rng_(options.seed), context_(std::make_unique<VerilatedContext>()) {
    context_->fatalOnError(false);  // assertion failures become TeRtlError, so waveforms close cleanly
    context_->timeunit(-12);        // 1 ps: see dump()
    context_->timeprecision(-12);
    context_->randReset(0);
#if VM_TRACE
    if (!options_.wave_path.empty()) context_->traceEverOn(true);
#endif
    top_ = std::make_unique<VTop>(context_.get(), "TOP");
    // A first evaluation in reset runs the initial blocks. A hierarchically verilated engine (64x64 and up,
    // rtl/CMakeLists.txt) creates its row models there, in the thread's current Verilator context (set here, so
    // their time and errors are this engine's), and they must exist before trace() reaches them.
    Verilated::threadContextp(context_.get());
    drive_idle();
    top_->clk_i = 0;
    top_->rst_ni = 0;
    top_->eval();
#if VM_TRACE
    if (!options_.wave_path.empty()) {
      check_wave_window<TeRtlError>(options_.wave_from, options_.wave_to);
      // --wave-scope: Verilator's $dumpvars-like filter, set before the trace is attached and opened. The clock is
      // always recorded (cosim/wave_fst.h).
      wave_ = std::make_unique<WindowedFst>(options_.wave_path, WaveWindow{options_.wave_from, options_.wave_to},
                                            split_scopes(options_.wave_scope), std::vector<std::string>{"TOP.clk_i"});
      top_->trace(&wave_->trace(), 99);  // scope: rtl/te/trn_te_trace.vlt
      wave_->open<TeRtlError>(fmt::format("the {}x{} Tensor Engine", rows, cols));
    }
#else
    if (!options_.wave_path.empty()) throw TeRtlError("this build has no waveform support (VM_TRACE=0)");
#endif
    if (options_.force_out_acc_beat >= 0 && !kForceable) {
      throw TeRtlError(fmt::format("force_out_acc_beat: out_acc_o of the {}x{} Tensor Engine cannot be forced (only "
                                   "the flat-verilated sizes have rtl/te/trn_te_force.vlt)", rows, cols));
    }
    reset();
  }

  ~TeRtlImpl() override {
    // The model's scopes unregister from the thread's current context: make it this engine's, which outlives them
    // here, and not another engine's that may be gone already (several engines in one process hung here).
    Verilated::threadContextp(context_.get());
    top_->final();
    write_rtl_coverage(*context_, "te");  // coverage builds only
#if VM_TRACE
    if (wave_) wave_->close(cycle_);
    wave_.reset();
#endif
    top_.reset();
  }

  int rows() const override { return rows_; }
  int cols() const override { return cols_; }
  uint64_t cycle() const override { return cycle_; }
  bool error_flag() const override { return top_->err_o != 0; }

  void idle(uint64_t cycles) override {
    drive_idle();
    for (uint64_t i = 0; i < cycles; ++i) {
      top_->eval();
      tick();
    }
  }

  TeRunResult run(const std::vector<TeCommand>& commands) override {
    validate(commands);
    // Several engines may live in one process (one per NeuronCore): the thread's Verilator context is this one's
    // while it runs, so what a hierarchically verilated row reports is this engine's.
    Verilated::threadContextp(context_.get());
    // Stream schedules: the beats of every LoadStationary and MultiplyMoving, in command order.
    struct Beat {
      size_t command;
      size_t index;
    };
    std::vector<Beat> stat_beats, mov_beats;
    std::vector<size_t> mm_commands;  // command index of each MultiplyMoving, in order
    size_t expected_out = 0;
    for (size_t i = 0; i < commands.size(); ++i) {
      const TeCommand& c = commands[i];
      auto& beats = c.op == TeCommand::Op::kLoadStationary ? stat_beats : mov_beats;
      for (int b = 0; b < beat_count(c); ++b) beats.push_back({i, static_cast<size_t>(b)});
      if (c.op == TeCommand::Op::kMultiplyMoving) {
        mm_commands.push_back(i);
        expected_out += static_cast<size_t>(c.count);
      }
    }

    TeRunResult result;
    result.timing.resize(commands.size());
    result.results.resize(mm_commands.size());
    result.out_acc.resize(mm_commands.size());
    for (size_t j = 0; j < mm_commands.size(); ++j) {
      result.results[j].reserve(static_cast<size_t>(commands[mm_commands[j]].count) * static_cast<size_t>(cols_));
      result.out_acc[j].reserve(static_cast<size_t>(commands[mm_commands[j]].count));
    }

    size_t next_cmd = 0, next_stat = 0, next_mov = 0, outs = 0, out_mm = 0;
    bool cmd_presented = false, stat_presented = false, mov_presented = false;
    const uint64_t start = cycle_;
    uint64_t last_progress = cycle_;
    std::bernoulli_distribution gap(options_.in_gap_prob), stall(options_.out_stall_prob);

    while (next_cmd < commands.size() || next_stat < stat_beats.size() || next_mov < mov_beats.size() ||
           outs < expected_out || top_->busy_o) {
      // Drive this cycle's inputs. A presented beat stays presented, unchanged, until taken (handshake rule).
      // With break_hold_rule, a beat that was presented and not taken is withdrawn instead (negative tests).
      const auto present = [&](bool pending, bool was_presented, unsigned stream) {
        const bool withdraw = options_.break_hold_rule || (options_.break_hold_streams & stream) != 0;
        return pending && (was_presented ? !withdraw : !gap(rng_));
      };
      cmd_presented = present(next_cmd < commands.size(), cmd_presented, 1u);
      top_->cmd_valid_i = cmd_presented;
      if (cmd_presented) {
        const TeCommand& c = commands[next_cmd];
        top_->cmd_op_i = static_cast<uint8_t>(c.op);
        top_->cmd_dtype_i = c.dtype_code & 0x7u;
        top_->cmd_k_i = c.op == TeCommand::Op::kLoadStationary ? static_cast<uint32_t>(c.count) : 0u;
        top_->cmd_n_i = c.op == TeCommand::Op::kMultiplyMoving ? static_cast<uint32_t>(c.count) : 0u;
        top_->cmd_acc_i = c.accumulate;
      }
      stat_presented = present(next_stat < stat_beats.size(), stat_presented, 2u);
      top_->stat_valid_i = stat_presented;
      if (stat_presented) {
        const Beat& b = stat_beats[next_stat];
        const uint16_t* row = &commands[b.command].beats[b.index * static_cast<size_t>(cols_)];
        for (int c = 0; c < cols_; ++c) put_field(top_->stat_data_i, 16u * c, 16, row[c]);
        const std::vector<uint8_t>& sc = commands[b.command].scales;
        for (int c = 0; c < cols_; ++c) {
          put_field(top_->stat_scale_i, 8u * c, 8, sc.empty() ? 0u : sc[b.index * size_t(cols_) + c]);
        }
      }
      mov_presented = present(next_mov < mov_beats.size(), mov_presented, 4u);
      top_->mov_valid_i = mov_presented;
      if (mov_presented) {
        const Beat& b = mov_beats[next_mov];
        const uint16_t* col = &commands[b.command].beats[b.index * static_cast<size_t>(rows_)];
        for (int r = 0; r < rows_; ++r) put_field(top_->mov_data_i, 16u * r, 16, col[r]);
        const std::vector<uint8_t>& sc = commands[b.command].scales;
        for (int r = 0; r < rows_; ++r) {
          put_field(top_->mov_scale_i, 8u * r, 8, sc.empty() ? 0u : sc[b.index * size_t(rows_) + r]);
        }
      }
      top_->out_ready_i = !stall(rng_);

      // Settle the combinational outputs, then note which handshakes the coming edge completes.
      top_->eval();
      const uint64_t now = cycle_ - start;
      if (top_->cmd_valid_i && top_->cmd_ready_o) {
        result.timing[next_cmd].cmd_cycle = now;
        ++next_cmd;
        cmd_presented = false;
        last_progress = cycle_;
      }
      if (top_->stat_valid_i && top_->stat_ready_o) {
        TeCommandTiming& t = result.timing[stat_beats[next_stat].command];
        t.last_beat_cycle = t.last_out_cycle = now;
        ++next_stat;
        stat_presented = false;
        last_progress = cycle_;
      }
      if (top_->mov_valid_i && top_->mov_ready_o) {
        result.timing[mov_beats[next_mov].command].last_beat_cycle = now;
        ++next_mov;
        mov_presented = false;
        last_progress = cycle_;
      }
      if (top_->out_valid_o && top_->out_ready_i) {
        if (outs >= expected_out) fail(fmt::format("cycle {}: unexpected result beat", cycle_));
        std::vector<uint32_t>& dst = result.results[out_mm];
        for (int c = 0; c < cols_; ++c) dst.push_back(get_field(top_->out_data_o, 32u * c, 32));
        result.out_acc[out_mm].push_back(top_->out_acc_o);
        ++outs;
        const size_t cmd = mm_commands[out_mm];
        const bool last = dst.size() == static_cast<size_t>(commands[cmd].count) * static_cast<size_t>(cols_);
        if (static_cast<bool>(top_->out_last_o) != last) {
          fail(fmt::format("cycle {}: out_last_o={} on result beat {} of command #{} (N={})", cycle_,
                           int{top_->out_last_o}, dst.size() / cols_ - 1, cmd, commands[cmd].count));
        }
        if (static_cast<bool>(top_->out_acc_o) != commands[cmd].accumulate) {
          const auto mode = [](bool acc) { return acc ? "add to PSUM" : "overwrite PSUM"; };
          fail(fmt::format("cycle {}: out_acc_o={} ({}) on result beat {} of command #{}, a MultiplyMoving taken "
                           "with cmd_acc_i={} ({})",
                           cycle_, int{top_->out_acc_o}, mode(top_->out_acc_o), dst.size() / cols_ - 1, cmd,
                           int{commands[cmd].accumulate}, mode(commands[cmd].accumulate)));
        }
        if (last) {
          result.timing[cmd].last_out_cycle = now;
          ++out_mm;
        }
        last_progress = cycle_;
      }

      // A force reaches out_acc_o at the coming clock edge (the forced flop is re-read when it is clocked), so it is
      // set for the beat presented after the edge: beat #outs, or a bubble (no harm: out_acc_o is only checked with
      // out_valid_o). force_out_acc_late: only once beat #outs has been presented and not taken.
      if (kForceable && options_.force_out_acc_beat >= 0) {
        const bool target = outs == static_cast<size_t>(options_.force_out_acc_beat) && out_mm < mm_commands.size();
        force_out_acc(target && (!options_.force_out_acc_late || top_->out_valid_o),
                      target && commands[mm_commands[out_mm]].accumulate);
      }
      tick();
      if (top_->err_o) {
        fail(fmt::format("cycle {}: engine raised err_o (illegal command field) after command #{}", cycle_,
                         next_cmd == 0 ? 0 : next_cmd - 1));
      }
      if (cycle_ - last_progress > options_.watchdog_cycles) {
        fail(fmt::format(
            "watchdog: no handshake for {} cycles at cycle {} (commands {}/{}, stationary beats {}/{}, moving "
            "beats {}/{}, results {}/{})",
            options_.watchdog_cycles, cycle_, next_cmd, commands.size(), next_stat, stat_beats.size(), next_mov,
            mov_beats.size(), outs, expected_out));
      }
    }
    drive_idle();
    result.cycles = cycle_ - start;
    return result;
  }

 private:
  void validate(const std::vector<TeCommand>& commands) const {
    for (size_t i = 0; i < commands.size(); ++i) {
      const TeCommand& c = commands[i];
      const bool load = c.op == TeCommand::Op::kLoadStationary;
      const size_t width = static_cast<size_t>(load ? cols_ : rows_);
      const int beats = beat_count(c);
      if (c.count < 0 || c.beats.size() != static_cast<size_t>(beats) * width) {
        throw std::invalid_argument(fmt::format("command #{}: {} beats of {} elements need {} values, got {}", i,
                                                beats, width, static_cast<size_t>(std::max(beats, 0)) * width,
                                                c.beats.size()));
      }
    }
  }

  // Every engine failure: the message, plus the waveform window around this cycle for a re-run, and a
  // "[ fail-at  ]" line on stderr that the regression runner reads to put the same window into its re-run command.
  [[noreturn]] void fail(const std::string& what) {
    const WaveWindow w = wave_window_around(cycle_);
    print_fail_at(fmt::format("te {}x{}", rows_, cols_), cycle_, w);
#if VM_TRACE
    if (wave_) wave_->flush();
#endif
    throw TeRtlError(fmt::format("{} (Tensor Engine {}x{}; re-run with a waveform around it: --wave-from {} "
                                 "--wave-to {}, or TRNSIM_WAVE=te.fst TRNSIM_WAVE_FROM={} TRNSIM_WAVE_TO={} for a "
                                 "test)",
                                 what, rows_, cols_, w.from, w.to, w.from, w.to));
  }

  // Forces out_acc_o (the last stage of trn_te's accp_q) to the wrong mode from the next clock edge on while `on`
  // (see TeRtlOptions::force_out_acc_beat; `right` is the mode the beat should carry), releases it otherwise.
  void force_out_acc(bool on, bool right) {
    if constexpr (kForceable) {
      const unsigned stage = static_cast<unsigned>(rows_ + cols_);  // CTRL_DEPTH - 1 (rtl/te/trn_te.sv)
      put_field(top_->rootp->trn_te__DOT__accp_q__VforceEn, stage, 1, on ? 1u : 0u);
      put_field(top_->rootp->trn_te__DOT__accp_q__VforceVal, stage, 1, right ? 0u : 1u);
    } else {
      static_cast<void>(on);
      static_cast<void>(right);
    }
  }

  void drive_idle() {
    top_->cmd_valid_i = 0;
    top_->stat_valid_i = 0;
    top_->mov_valid_i = 0;
    top_->out_ready_i = 1;
  }

  // One rising and one falling clock edge; inputs were set and evaluated by the caller.
  void tick() {
    dump();
    top_->clk_i = 1;
    top_->eval();
    dump();
    top_->clk_i = 0;
    if (trace_on()) top_->eval();  // only needed so the falling edge shows in the waveform
    ++cycle_;
    if (context_->gotError()) {
      fail(fmt::format("cycle {}: RTL assertion failed (message above)", cycle_));
    }
  }

  void reset() {
    drive_idle();
    top_->clk_i = 0;
    top_->rst_ni = 0;
    top_->eval();
    // Hold reset over several edges before release (TOOLCHAIN.md, "Reset").
    in_reset_ = true;
    for (int i = 0; i < 4; ++i) tick();
    in_reset_ = false;
    top_->rst_ni = 1;
    top_->eval();
    cycle_ = 0;
  }

  // Whether this edge is inside the waveform window: cycles [wave_from, wave_to] after reset release, and the reset
  // itself when the window starts at 0.
  bool in_wave_window() const {
    if (in_reset_) return options_.wave_from == 0;
    return cycle_ >= options_.wave_from && cycle_ <= options_.wave_to;
  }

  bool trace_on() const {
#if VM_TRACE
    return wave_ != nullptr;
#else
    return false;
#endif
  }

  // Waveform time: one half clock period of the 2.4 GHz TE clock (BRIEF section 2) per edge, 208 ps, so the time
  // axis in GTKWave reads in real units (a 416 ps cycle; 2.404 GHz after rounding to whole picoseconds).
  static constexpr uint64_t kHalfPeriodPs = 208;

  void dump() {
#if VM_TRACE
    if (wave_) wave_->dump(context_->time(), in_wave_window());
#endif
    context_->timeInc(kHalfPeriodPs);
  }

  const int rows_, cols_;
  const TeRtlOptions options_;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<VTop> top_;
#if VM_TRACE
  std::unique_ptr<WindowedFst> wave_;
#endif
  uint64_t cycle_ = 0;
  bool in_reset_ = false;
};

}  // namespace

std::vector<std::string> TeRtl::built_sizes() {
  std::vector<std::string> sizes;
#if TRNSIM_HAVE_TE_4X4
  sizes.emplace_back("4x4");
#endif
#if TRNSIM_HAVE_TE_8X4
  sizes.emplace_back("8x4");
#endif
#if TRNSIM_HAVE_TE_8X8
  sizes.emplace_back("8x8");
#endif
#if TRNSIM_HAVE_TE_16X16
  sizes.emplace_back("16x16");
#endif
#if TRNSIM_HAVE_TE_64X64
  sizes.emplace_back("64x64");
#endif
#if TRNSIM_HAVE_TE_128X128
  sizes.emplace_back("128x128");
#endif
  return sizes;
}

bool TeRtl::traces_pe_registers(int rows, int cols) {
#if TRNSIM_TE_HIER_64X64
  if (rows == 64 && cols == 64) return false;
#endif
#if TRNSIM_TE_HIER_128X128
  if (rows == 128 && cols == 128) return false;
#endif
  return rows > 0 && cols > 0;
}

std::unique_ptr<TeRtl> TeRtl::create(int rows, int cols, const TeRtlOptions& given) {
  TeRtlOptions options = given;
  apply_wave_env<TeRtlError>(options);  // TRNSIM_WAVE: any test or tool re-run with a waveform, unless it asked
#define TRNSIM_TE_CASE(R, C, FORCEABLE)                   \
  if (rows == (R) && cols == (C)) {                       \
    using Impl = TeRtlImpl<Vtrn_te_##R##x##C, FORCEABLE>; \
    return std::make_unique<Impl>(R, C, options);         \
  }
#if TRNSIM_HAVE_TE_4X4
  TRNSIM_TE_CASE(4, 4, true)
#endif
#if TRNSIM_HAVE_TE_8X4
  TRNSIM_TE_CASE(8, 4, true)
#endif
#if TRNSIM_HAVE_TE_8X8
  TRNSIM_TE_CASE(8, 8, true)
#endif
#if TRNSIM_HAVE_TE_16X16
  TRNSIM_TE_CASE(16, 16, true)
#endif
#if TRNSIM_HAVE_TE_64X64
  TRNSIM_TE_CASE(64, 64, false)
#endif
#if TRNSIM_HAVE_TE_128X128
  TRNSIM_TE_CASE(128, 128, false)
#endif
#undef TRNSIM_TE_CASE
  std::string sizes;
  for (const std::string& s : built_sizes()) sizes += (sizes.empty() ? "" : ", ") + s;
  throw TeRtlError(fmt::format("no verilated {}x{} Tensor Engine in this build (built: {}; configure with "
                               "-DTRNSIM_LARGE_TE=ON for 64x64 and 128x128)",
                               rows, cols, sizes));
}

namespace {
// Puts partition kk's narrow pattern into its lane of a beat: the whole lane, or for FP8 its byte of the pair
// (TeCommand::beats).
void put_lane(isa::Dtype dtype, int kk, uint16_t pattern, uint16_t& lane) {
  if (isa::te_pe_partitions(dtype) == 2) {
    lane = uint16_t(lane | (pattern & 0xFFu) << (8 * (kk % 2)));
  } else {
    lane = pattern;
  }
}
}  // namespace

// The scale lane of element kk (MX): one code per lane, shared by the two partitions of a pair.
void put_scale(int kk, uint8_t code, uint8_t& lane) {
  if (kk % 2 == 1 && lane != code) {
    throw std::invalid_argument(fmt::format("MX scales: partitions {} and {} share a PE row but have scales {} and "
                                            "{} (a K tile starts at an even partition, blocks are 32)",
                                            kk - 1, kk, lane, code));
  }
  lane = code;
}

TeCommand stationary_command(isa::Dtype dtype, int k, int m, int cols, const std::vector<uint16_t>& stationary,
                             const std::vector<uint8_t>& scales) {
  const unsigned beats = isa::te_sbuf_partitions(dtype, unsigned(k));
  TeCommand load{TeCommand::Op::kLoadStationary, static_cast<uint8_t>(dtype), k,
                 std::vector<uint16_t>(size_t(beats) * size_t(cols), 0)};
  if (!scales.empty()) load.scales.assign(load.beats.size(), 0);
  for (int kk = 0; kk < k; ++kk) {
    const size_t beat = isa::te_sbuf_partition(dtype, unsigned(kk));
    for (int mm = 0; mm < m; ++mm) {
      put_lane(dtype, kk, stationary[size_t(kk) * m + mm], load.beats[beat * cols + mm]);
      if (!scales.empty()) put_scale(kk, scales[size_t(kk) * m + mm], load.scales[beat * cols + mm]);
    }
  }
  return load;
}

TeCommand moving_command(isa::Dtype dtype, int k, int n, int rows, const std::vector<uint16_t>& moving,
                         bool accumulate, const std::vector<uint8_t>& scales) {
  TeCommand mult{TeCommand::Op::kMultiplyMoving, static_cast<uint8_t>(dtype), n,
                 std::vector<uint16_t>(size_t(n) * size_t(rows), 0), accumulate};
  if (!scales.empty()) mult.scales.assign(mult.beats.size(), 0);
  for (int nn = 0; nn < n; ++nn) {
    for (int kk = 0; kk < k; ++kk) {
      const size_t lane = size_t(nn) * rows + isa::te_sbuf_partition(dtype, unsigned(kk));
      put_lane(dtype, kk, moving[size_t(kk) * n + nn], mult.beats[lane]);
      if (!scales.empty()) put_scale(kk, scales[size_t(kk) * n + nn], mult.scales[lane]);
    }
  }
  return mult;
}

std::vector<uint32_t> TeRtl::matmul(isa::Dtype dtype, int k, int m, int n, const std::vector<uint16_t>& stationary,
                                    const std::vector<uint16_t>& moving, std::vector<TeCommandTiming>* timing) {
  const int max_k = int(isa::te_max_k(dtype, unsigned(rows())));
  if (k < 1 || k > max_k || m < 1 || m > cols() || n < 1 || n > kNMax) {
    throw std::invalid_argument(fmt::format("matmul K={} M={} N={} outside K 1..{}, M 1..{}, N 1..{}", k, m, n,
                                            max_k, cols(), kNMax));
  }
  if (stationary.size() != static_cast<size_t>(k) * m || moving.size() != static_cast<size_t>(k) * n) {
    throw std::invalid_argument(fmt::format("matmul: stationary has {} elements (need {}), moving {} (need {})",
                                            stationary.size(), static_cast<size_t>(k) * m, moving.size(),
                                            static_cast<size_t>(k) * n));
  }
  const TeRunResult run_result = run({stationary_command(dtype, k, m, cols(), stationary),
                                      moving_command(dtype, k, n, rows(), moving, false)});
  if (timing) *timing = run_result.timing;
  std::vector<uint32_t> out(static_cast<size_t>(m) * n);
  const std::vector<uint32_t>& beats = run_result.results.at(0);
  for (int mm = 0; mm < m; ++mm)
    for (int nn = 0; nn < n; ++nn) out[mm * n + nn] = beats[nn * cols() + mm];
  return out;
}

}  // namespace trnsim::cosim
