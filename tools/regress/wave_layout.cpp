// trnsim_wave_layout: writes a GTKWave save file (.gtkw) for an FST that trnsim wrote, with the signals grouped per
// block in a sensible order (scripts/wave runs it, then GTKWave; docs/verification.md, "Waveform debugging").
//
//   trnsim_wave_layout FILE.fst OUT.gtkw
//
// The signals come from the file itself (its declarations, read with GTKWave's fst2vcd), so the layout matches any
// engine size, router build or --wave-scope. Groups:
//   Tensor Engine (TOP.trn_te): Control (clock, reset, state, counters) | Command / Stationary / Moving / Result
//     stream | Input skew | one closed group per PE row (partition) | Output de-skew, one closed group per column
//   NeuronLink router (<node>.trn_noc_router, one per torus node): per router: Local port (straps, injection,
//     ejection) | Links (link ports' wires, link_up/err) | Allocation (VC and switch allocators) | one closed group per
//     input port, and inside it one per VC (buffer, route) | Link port l (tx/rx ends: credits, bring-up)
//   anything else: one group per scope.
// Save-file syntax: TOOLCHAIN.md "GTKWave" (@800200 / @1000200 open and close a group, @c00200 / @1400200 a closed
// one, -Name names it, @22 hex, @28 binary).
// Exit status 0, 2 on bad usage or when the FST cannot be read.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tools/wave/vcd_declarations.h"

namespace {

struct Signal {
  std::string scope;  // dotted, e.g. "TOP.trn_te.u_array.g_row[0].u_row.g_col[1].u_pe"
  std::string name;   // with its range, e.g. "psum_q[31:0]"
  int width = 1;
};

using trnsim::wave::shell_quote;

// The declarations of an FST (tools/wave/vcd_declarations.h), each name with its range as GTKWave shows it.
bool read_signals(const std::string& fst, std::vector<Signal>& out) {
  for (const trnsim::wave::VcdSignal& v : trnsim::wave::read_fst_declarations(fst).value_or(
           std::vector<trnsim::wave::VcdSignal>{})) {
    Signal s{v.scope, v.name, v.width};
    if (v.name.find('[') == std::string::npos) {
      if (!v.range.empty() && v.range[0] == '[') s.name += v.range;
      else if (s.width > 1) s.name += "[" + std::to_string(s.width - 1) + ":0]";
    }
    out.push_back(s);
  }
  return !out.empty();
}

// Natural order: "g_row[10]" after "g_row[9]".
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const unsigned long long x = std::stoull(a.substr(i, i2 - i)), y = std::stoull(b.substr(j, j2 - j));
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// The index in "g_row[12]..." after `prefix` ("g_row["), or "".
std::string index_after(const std::string& s, const std::string& prefix) {
  const size_t at = s.find(prefix);
  if (at == std::string::npos) return "";
  const size_t from = at + prefix.size();
  return s.substr(from, s.find(']', from) - from);
}

// A group path: outer group names, outermost first; `closed` groups start collapsed. `order` sorts groups.
struct Placement {
  std::vector<std::string> groups;
  std::string order;
  bool closed = false;
};

// Tensor Engine: `rel` is the scope below TOP.trn_te ("" for the engine's own signals).
Placement place_te(const std::string& rel, const std::string& name) {
  if (rel.empty()) {
    if (starts_with(name, "cmd_")) return {{"Command stream"}, "1"};
    if (starts_with(name, "stat_")) return {{"Stationary stream"}, "2"};
    if (starts_with(name, "mov_")) return {{"Moving stream"}, "3"};
    if (starts_with(name, "out_")) return {{"Result stream"}, "4"};
    return {{"Control"}, "0"};
  }
  if (starts_with(rel, "g_skew[")) return {{"Input skew (partition rows)"}, "5", true};
  if (starts_with(rel, "u_array.g_row[")) {
    const std::string r = index_after(rel, "g_row[");
    return {{"PE row " + r + " (partition " + r + ")"}, "6:" + r, true};
  }
  if (starts_with(rel, "g_deskew[")) {
    const std::string c = index_after(rel, "g_deskew[");
    return {{"Output de-skew", "Column " + c}, "7:" + c, true};
  }
  return {{"Tensor Engine: " + rel}, "8:" + rel, true};
}

// NeuronLink router: `router` is the node ("node_1_0"), `rel` the scope below its trn_noc_router.
Placement place_noc(const std::string& router, const std::string& rel, const std::string& name) {
  const std::string top = "Router " + router;
  const std::string ord = router + ":";
  if (rel.empty()) {
    if (starts_with(name, "rx_") || starts_with(name, "tx_") || starts_with(name, "link_"))
      return {{top, "Links (every link port)"}, ord + "1"};
    if (starts_with(name, "push") || starts_with(name, "full") || starts_with(name, "head_") ||
        starts_with(name, "active") || starts_with(name, "oport") || starts_with(name, "ovc") ||
        starts_with(name, "va_") || starts_with(name, "sa_") || starts_with(name, "pop") ||
        starts_with(name, "out_") || starts_with(name, "room") || starts_with(name, "release") ||
        starts_with(name, "crd_") || starts_with(name, "port_ok"))
      return {{top, "Allocation and switch"}, ord + "2"};
    return {{top, "Local port and straps"}, ord + "0"};
  }
  if (starts_with(rel, "u_inj") || starts_with(rel, "u_ej")) return {{top, "Local port and straps"}, ord + "0"};
  if (starts_with(rel, "u_va") || starts_with(rel, "u_sa")) return {{top, "Allocation and switch"}, ord + "2", true};
  if (starts_with(rel, "g_in[")) {
    const std::string p = index_after(rel, "g_in[");
    const std::string port = "Input port " + p + (p == "0" ? " (local)" : " (link " + std::to_string(std::atoi(p.c_str()) - 1) + ")");
    std::string v = index_after(rel, "g_vc[");
    if (v.empty()) v = index_after(rel, "g_route[");
    if (!v.empty()) return {{top, port, "VC " + v}, ord + "3:" + p + ":" + v, true};
    return {{top, port}, ord + "3:" + p, true};
  }
  if (starts_with(rel, "g_link[")) {
    const std::string l = index_after(rel, "g_link[");
    return {{top, "Link port " + l + " (credits, bring-up)"}, ord + "4:" + l, true};
  }
  return {{top, rel}, ord + "5:" + rel, true};
}

Placement place(const Signal& s) {
  const std::string te = "TOP.trn_te";
  if (s.scope == te || starts_with(s.scope, te + ".")) {
    return place_te(s.scope.size() > te.size() ? s.scope.substr(te.size() + 1) : "", s.name);
  }
  const std::string marker = ".trn_noc_router";
  const size_t at = s.scope.find(marker);
  if (at != std::string::npos) {
    const std::string router = s.scope.substr(0, at);
    const size_t end = at + marker.size();
    const std::string rel = s.scope.size() > end ? s.scope.substr(end + 1) : "";
    return place_noc(router, rel, s.name);
  }
  return {{s.scope}, "9:" + s.scope, true};
}

int usage(const char* why) {
  std::fprintf(stderr, "trnsim_wave_layout: %s\nusage: trnsim_wave_layout FILE.fst OUT.gtkw\n", why);
  return 2;
}

// A file that cannot be read or written: the error alone (the usage line is for wrong arguments).
int fail(const std::string& why) {
  std::fprintf(stderr, "trnsim_wave_layout: %s\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("usage: trnsim_wave_layout FILE.fst OUT.gtkw\nWrites a GTKWave layout grouping the FST's signals "
                "per block (Tensor Engine streams, PE rows, columns; router ports and VCs).\n");
    return 0;
  }
  if (argc != 3) return usage("expected two arguments");
  const std::string fst = argv[1], gtkw = argv[2];
  if (std::FILE* f = std::fopen(fst.c_str(), "rb")) {
    std::fclose(f);
  } else {
    return fail("cannot read " + fst);
  }
  std::vector<Signal> signals;
  if (!read_signals(fst, signals)) return fail("no signals in " + fst + " (is it an FST? is fst2vcd installed?)");

  struct Item {
    Placement p;
    Signal s;
  };
  std::vector<Item> items;
  for (const Signal& s : signals) {
    // Parameters (ROWS, CTRL_DEPTH, ...) are constants: left out.
    const std::string base = s.name.substr(0, s.name.find('['));
    const bool constant = std::none_of(base.begin(), base.end(), [](unsigned char c) { return std::islower(c); });
    // The model's own top scope ("TOP", "node_1_0") repeats the top module's ports: left out.
    const bool wrapper = s.scope.find('.') == std::string::npos;
    if (!constant && !wrapper) items.push_back({place(s), s});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.p.order != b.p.order) return natural_less(a.p.order, b.p.order);
    if (a.p.groups != b.p.groups) {
      return std::lexicographical_compare(a.p.groups.begin(), a.p.groups.end(), b.p.groups.begin(), b.p.groups.end(),
                                          natural_less);
    }
    // Clock and reset first, then by scope and name.
    const auto rank = [](const std::string& n) { return starts_with(n, "clk") ? 0 : starts_with(n, "rst") ? 1 : 2; };
    if (rank(a.s.name) != rank(b.s.name)) return rank(a.s.name) < rank(b.s.name);
    if (a.s.scope != b.s.scope) return natural_less(a.s.scope, b.s.scope);
    return false;  // declaration order within a scope
  });

  std::ofstream out(gtkw);
  if (!out) return fail("cannot write " + gtkw);
  out << "[*] trnsim waveform layout of " << fst << ", written by trnsim_wave_layout\n";
  out << "[dumpfile] \"" << fst << "\"\n[savefile] \"" << gtkw << "\"\n[timestart] 0\n[size] 1600 900\n";
  out << "[signals_width] 360\n[sst_expanded] 1\n";
  std::vector<std::string> open_groups;
  std::vector<bool> open_closed;
  const auto close_to = [&](size_t depth) {
    while (open_groups.size() > depth) {
      out << (open_closed.back() ? "@1400200\n" : "@1000200\n") << "-" << open_groups.back() << "\n";
      open_groups.pop_back();
      open_closed.pop_back();
    }
  };
  int last_flags = -1;
  size_t groups_written = 0;
  for (const Item& it : items) {
    size_t common = 0;
    while (common < open_groups.size() && common < it.p.groups.size() && open_groups[common] == it.p.groups[common])
      ++common;
    close_to(common);
    for (size_t g = common; g < it.p.groups.size(); ++g) {
      // The innermost group takes the placement's collapsed state; outer groups stay open.
      const bool closed = it.p.closed && g + 1 == it.p.groups.size();
      out << (closed ? "@c00200\n" : "@800200\n") << "-" << it.p.groups[g] << "\n";
      open_groups.push_back(it.p.groups[g]);
      open_closed.push_back(closed);
      ++groups_written;
      last_flags = -1;
    }
    const int flags = it.s.width > 1 ? 0x22 : 0x28;  // vectors in hex, single bits as binary
    if (flags != last_flags) out << "@" << std::hex << flags << std::dec << "\n";
    last_flags = flags;
    out << it.s.scope << "." << it.s.name << "\n";
  }
  close_to(0);
  if (!out) return fail("cannot write " + gtkw);
  std::printf("%s: %zu signals in %zu groups\n", gtkw.c_str(), items.size(), groups_written);
  return 0;
}
