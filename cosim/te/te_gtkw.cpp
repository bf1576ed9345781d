// GTKWave layout for Tensor Engine waveforms. See write_te_gtkw() in te_rtl.h.
//
// Save-file syntax (GTKWave 3.3 manual, "Save file format"): '[dumpfile]' names the dump, '@<hex>' sets display
// flags for the lines that follow (0x22 = hex, 0x28 = binary, 0x24 = decimal), '@800200' opens a named group
// ('-Name' follows) and '@1000200' closes it; a signal line is a full hierarchical path.
#include <fstream>
#include <string>

#include <fmt/core.h>

#include "cosim/te/te_rtl.h"

namespace trnsim::cosim {
namespace {

constexpr const char* kTop = "TOP.trn_te.";

// $clog2 as SystemVerilog defines it: the number of bits needed to address `n` values.
int clog2(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}

class GtkwWriter {
 public:
  explicit GtkwWriter(const std::string& path) : out_(path) {
    if (!out_) throw TeRtlError(fmt::format("cannot write GTKWave layout '{}'", path));
  }
  void line(const std::string& s) { out_ << s << '\n'; }
  // A group is a pair of named blank traces: a start ('@800200', or '@c00200' collapsed) and an end ('@1000200',
  // or '@1400200' collapsed), each followed by its '-Name' line.
  void group(const std::string& name, bool open = true) {
    line(open ? "@800200" : "@c00200");
    line("-" + name);
    open_name_ = name;
    open_ = open;
  }
  void end_group() {
    line(open_ ? "@1000200" : "@1400200");
    line("-" + open_name_);
  }
  void hex() { line("@22"); }
  void bin() { line("@28"); }
  void dec() { line("@24"); }
  void signal(const std::string& path) { line(kTop + path); }

 private:
  std::ofstream out_;
  std::string open_name_;
  bool open_ = true;
};

}  // namespace

void write_te_gtkw(const std::string& gtkw_path, const std::string& fst_path, int rows, int cols) {
  GtkwWriter w(gtkw_path);
  w.line("[*] trnsim Tensor Engine layout (" + std::to_string(rows) + "x" + std::to_string(cols) +
         "), written by trnsim");
  w.line("[dumpfile] \"" + fst_path + "\"");
  w.line("[savefile] \"" + gtkw_path + "\"");
  w.line("[timestart] 0");
  w.line("[size] 1600 900");
  w.line("[signals_width] 320");
  w.line("[sst_expanded] 1");
  w.line("[treeopen] TOP.");
  w.line("[treeopen] TOP.trn_te.");

  w.group("Control");
  w.bin();
  w.signal("clk_i");
  w.signal("rst_ni");
  w.signal("busy_o");
  w.signal("err_o");
  w.bin();
  w.signal("ld_busy_q");
  w.signal("mv_busy_q");
  w.signal("swap_pend_q");
  w.signal("mv_swap_q");
  w.dec();
  w.signal("ld_count_q[9:0]");
  w.signal("mv_count_q[9:0]");
  w.signal(fmt::format("inflight_q[{}:0]", clog2(rows + cols + 2) - 1));
  w.bin();
  w.signal(fmt::format("swap_q[{}:0]", rows + cols - 2));
  w.signal(fmt::format("row_act0_q[{}:0]", rows - 1));
  w.signal(fmt::format("row_act1_q[{}:0]", rows - 1));
  w.end_group();

  w.group("Command stream");
  w.bin();
  w.signal("cmd_valid_i");
  w.signal("cmd_ready_o");
  w.signal("cmd_op_i");
  w.dec();
  w.signal("cmd_dtype_i[2:0]");
  w.signal(fmt::format("cmd_k_i[{}:0]", clog2(2 * rows + 1) - 1));
  w.signal("cmd_n_i[9:0]");
  w.bin();
  w.signal("cmd_acc_i");
  w.end_group();

  w.group("Stationary stream");
  w.bin();
  w.signal("stat_valid_i");
  w.signal("stat_ready_o");
  w.hex();
  w.signal(fmt::format("stat_data_i[{}:0]", cols * 16 - 1));
  w.end_group();

  w.group("Moving stream");
  w.bin();
  w.signal("mov_valid_i");
  w.signal("mov_ready_o");
  w.hex();
  w.signal(fmt::format("mov_data_i[{}:0]", rows * 16 - 1));
  w.end_group();

  w.group("Result stream");
  w.bin();
  w.signal("out_valid_o");
  w.signal("out_ready_i");
  w.signal("out_last_o");
  w.signal("out_acc_o");
  w.hex();
  w.signal(fmt::format("out_data_o[{}:0]", cols * 32 - 1));
  w.end_group();

  // One closed group per PE row: each PE's stationary values, moving values (the second of each used by FP8
  // double-row: the row's partitions 2r and 2r + 1) and partial sum. The
  // hierarchically verilated engines (64x64 and up) trace only the rows' ports: the row's moving input, its partial
  // sums in and out (psum_o holds the row's PE sum registers, column c in bits [32c+31:32c]) and its controls.
  const bool pe_registers = TeRtl::traces_pe_registers(rows, cols);
  for (int r = 0; r < rows; ++r) {
    w.group(fmt::format("PE row {} (partition {}; FP8 {} and {})", r, r, 2 * r, 2 * r + 1), false);
    const std::string row = fmt::format("u_array.g_row[{}].u_row.", r);
    if (pe_registers) {
      w.hex();
      for (int c = 0; c < cols; ++c) {
        const std::string pe = row + fmt::format("g_col[{}].u_pe.", c);
        w.signal(pe + "w0_q[31:0]");
        w.signal(pe + "w1_q[31:0]");
        w.signal(pe + "mov0_q[31:0]");
        w.signal(pe + "mov1_q[31:0]");
        w.signal(pe + "psum_q[31:0]");
      }
    } else {
      w.bin();
      w.signal(row + "act0_i");
      w.signal(row + "act1_i");
      w.signal(row + "w_we_i");
      w.hex();
      w.signal(row + "mov0_i[31:0]");
      w.signal(row + "mov1_i[31:0]");
      w.signal(row + fmt::format("psum_i[{}:0]", cols * 32 - 1));
      w.signal(row + fmt::format("psum_o[{}:0]", cols * 32 - 1));
    }
    w.end_group();
  }

  // One closed group per array column: the column's partial sum leaving the last PE row into the de-skew line, and
  // the de-skewed result that goes out as bits [32c+31:32c] of out_data_o.
  for (int c = 0; c < cols; ++c) {
    w.group(fmt::format("Column {} (de-skew, result)", c), false);
    w.hex();
    const std::string deskew = fmt::format("g_deskew[{}].u_deskew.", c);
    w.signal(deskew + "data_i[31:0]");
    w.signal(deskew + "data_o[31:0]");
    w.end_group();
  }
}

}  // namespace trnsim::cosim
