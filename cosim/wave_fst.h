// The FST writer of the verilated harnesses (cosim/te/te_rtl.cpp, cosim/noc/noc_rtl.cpp): records only the clock
// edges inside a window of cycles and only the scopes asked for; refuses a scope that matches no signal and warns
// about a window that starts after the run ended. Include it only where Verilator's headers are (targets linking
// trn_rtl, which builds with VM_TRACE=1) and link trn_wave_read (the scopes are checked with the project's one FST
// reader, tools/wave/vcd_declarations.h: Verilator 5.050 ships an FST writer without GTKWave's reader).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <verilated_fst_c.h>

#include "cosim/wave_window.h"
#include "tools/wave/vcd_declarations.h"

namespace trnsim::cosim {

class WindowedFst {
 public:
  /// `scopes`: hierarchy paths as Verilator names them ("TOP.trn_te.u_array.g_row[2]", "node_1_0.trn_noc_router"),
  /// each recorded with every level below it; empty = everything. `always`: signals recorded whenever `scopes` is
  /// not empty (a clock), because Verilator 5.006's FST writer crashes when the filter leaves no signal at all.
  /// Attach the models to trace() (model->trace(&trace(), 99)), then open<Error>(what).
  WindowedFst(std::string path, WaveWindow window, std::vector<std::string> scopes,
              const std::vector<std::string>& always)
      : path_(std::move(path)), window_(window), scopes_(std::move(scopes)), trace_(std::make_unique<VerilatedFstC>()) {
    for (const std::string& scope : scopes_) trace_->dumpvars(99, scope);
    if (!scopes_.empty()) {
      for (const std::string& signal : always) trace_->dumpvars(1, signal);
    }
  }
  WindowedFst(const WindowedFst&) = delete;
  WindowedFst& operator=(const WindowedFst&) = delete;
  ~WindowedFst() {
    if (trace_->isOpen()) trace_->close();
  }

  VerilatedFstC& trace() { return *trace_; }
  const std::string& path() const { return path_; }
  /// Opens the file. Throws Error "cannot open waveform file" if it cannot be written, and Error naming --wave-scope
  /// and `what` (the design, e.g. "the 16x16 Tensor Engine") for a scope that matches no signal, before anything is
  /// recorded and with no file left behind: the declarations are written once, read back and then written again.
  /// Without GTKWave's fst2vcd the scopes cannot be read back: a warning on stderr says they were not checked.
  template <class Error>
  void open(const std::string& what) {
    // Whether the file can be written is checked here: Verilator 5.050's FST writer reports no failure to open.
    if (std::FILE* const f = std::fopen(path_.c_str(), "wb")) {
      std::fclose(f);
    } else {
      throw Error(fmt::format("cannot open waveform file '{}'", path_));
    }
    trace_->open(path_.c_str());
    if (!trace_->isOpen()) throw Error(fmt::format("cannot open waveform file '{}'", path_));
    if (scopes_.empty()) return;
    // One time step makes the declarations readable: Verilator 5.050's FST writer leaves a file without any value
    // block that GTKWave's reader refuses. The file is written again below.
    trace_->dump(0);
    trace_->close();
    const std::vector<std::string> empty = empty_scopes();
    if (!empty.empty()) {
      std::remove(path_.c_str());
      std::string names;
      for (const std::string& s : empty) names += (names.empty() ? "" : ", ") + shown(s);
      throw Error(fmt::format("--wave-scope {}: matched no signal of {} (a recording without "
                              "--wave-scope shows the hierarchy)", names, what));
    }
    trace_->open(path_.c_str());
    if (!trace_->isOpen()) throw Error(fmt::format("cannot open waveform file '{}'", path_));
  }
  /// Whether `cycle` is inside the window.
  bool in_window(uint64_t cycle) const { return cycle >= window_.from && cycle <= window_.to; }

  /// Records the current values at `time` when `record` (this edge is inside the window). On the first edge after
  /// the window, flushes: what the window recorded is on disk even if the process dies later.
  void dump(uint64_t time, bool record) {
    if (!trace_->isOpen()) return;
    if (record) {
      trace_->dump(time);
      dumped_ = true;
    } else if (dumped_) {
      trace_->flush();
      dumped_ = false;
    }
  }
  void flush() {
    if (trace_->isOpen()) trace_->flush();
  }

  /// Closes the file (once; later calls do nothing). `last_cycle`: the last cycle the run simulated; a window that
  /// starts after it recorded nothing, which a warning on stderr says.
  void close(uint64_t last_cycle) {
    if (!trace_->isOpen()) return;
    trace_->close();
    if (window_.from > last_cycle) {
      std::fprintf(stderr, "trnsim: warning: --wave-from %llu is after the last cycle of the run (%llu): %s holds no "
                   "window\n", static_cast<unsigned long long>(window_.from),
                   static_cast<unsigned long long>(last_cycle), path_.c_str());
    }
  }

 private:
  // The scopes under which the closed FST declares no signal (none when the file cannot be read back: warned).
  std::vector<std::string> empty_scopes() const {
    const std::optional<std::vector<wave::VcdSignal>> declared = wave::read_fst_declarations(path_);
    if (!declared) {
      std::fprintf(stderr, "trnsim: warning: --wave-scope not checked against %s: GTKWave's fst2vcd is not "
                   "installed\n", path_.c_str());
      return {};
    }
    std::vector<bool> hit(scopes_.size(), false);
    for (const wave::VcdSignal& signal : *declared) {
      const std::string name = signal.full_name();
      for (size_t i = 0; i < scopes_.size(); ++i) {
        const std::string& sc = scopes_[i];
        if (name.rfind(sc, 0) == 0 && (name.size() == sc.size() || name[sc.size()] == '.' ||
                                       name[sc.size()] == '[')) {
          hit[i] = true;
        }
      }
    }
    std::vector<std::string> empty;
    for (size_t i = 0; i < scopes_.size(); ++i) {
      if (!hit[i]) empty.push_back(scopes_[i]);
    }
    return empty;
  }

  // A scope as the user wrote it: the TE's model is named TOP.
  static std::string shown(const std::string& scope) { return scope.rfind("TOP.", 0) == 0 ? scope.substr(4) : scope; }

  const std::string path_;
  const WaveWindow window_;
  const std::vector<std::string> scopes_;
  std::unique_ptr<VerilatedFstC> trace_;
  bool dumped_ = false;  // the last edge was recorded
};

}  // namespace trnsim::cosim
