// The FST writer of the verilated harnesses (cosim/te/te_rtl.cpp, cosim/noc/noc_rtl.cpp): records only the clock
// edges inside a window of cycles and only the scopes asked for, and after closing names the scopes that matched
// no signal. Include it only where Verilator's headers are (targets linking trn_rtl, which builds with VM_TRACE=1).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <verilated_fst_c.h>

#include "cosim/wave_window.h"

namespace trnsim::cosim {

class WindowedFst {
 public:
  /// `scopes`: hierarchy paths as Verilator names them ("TOP.trn_te.u_array.g_row[2]", "node_1_0.trn_noc_router"),
  /// each recorded with every level below it; empty = everything. `always`: signals recorded whenever `scopes` is
  /// not empty (a clock), because Verilator 5.006's FST writer crashes when the filter leaves no signal at all.
  /// Attach the models to trace() (model->trace(&trace(), 99)), then open().
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
  ~WindowedFst() { close(); }

  VerilatedFstC& trace() { return *trace_; }
  const std::string& path() const { return path_; }
  /// Opens the file; false if it cannot be written.
  bool open() {
    trace_->open(path_.c_str());
    return trace_->isOpen();
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

  /// Closes the file (once; later calls do nothing) and returns the scopes under which it declares no signal.
  std::vector<std::string> close() {
    if (!trace_->isOpen()) return {};
    trace_->close();
    return empty_scopes();
  }

 private:
  // The scopes under which the closed FST declares no signal (read back with the FST reader that Verilator's FST
  // writer is built with).
  std::vector<std::string> empty_scopes() const {
    std::vector<bool> hit(scopes_.size(), false);
    void* const reader = fstReaderOpen(path_.c_str());
    if (!reader) return {};
    std::vector<std::string> stack;
    while (const fstHier* h = fstReaderIterateHier(reader)) {
      if (h->htyp == FST_HT_SCOPE) {
        stack.push_back(h->u.scope.name);
      } else if (h->htyp == FST_HT_UPSCOPE) {
        if (!stack.empty()) stack.pop_back();
      } else if (h->htyp == FST_HT_VAR) {
        std::string name;
        for (const std::string& part : stack) name += part + ".";
        name += h->u.var.name;
        for (size_t i = 0; i < scopes_.size(); ++i) {
          const std::string& sc = scopes_[i];
          if (name.rfind(sc, 0) == 0 && (name.size() == sc.size() || name[sc.size()] == '.' ||
                                         name[sc.size()] == ' ' || name[sc.size()] == '[')) {
            hit[i] = true;
          }
        }
      }
    }
    fstReaderClose(reader);
    std::vector<std::string> empty;
    for (size_t i = 0; i < scopes_.size(); ++i) {
      if (!hit[i]) empty.push_back(scopes_[i]);
    }
    return empty;
  }

  const std::string path_;
  const WaveWindow window_;
  const std::vector<std::string> scopes_;
  std::unique_ptr<VerilatedFstC> trace_;
  bool dumped_ = false;  // the last edge was recorded
};

}  // namespace trnsim::cosim
