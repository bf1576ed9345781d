// Reading FST waveforms back in tests, through GTKWave's fst2vcd: the declared signals (full dotted names) and the
// timestamps of the value changes. Used by the waveform tests (tests/te, tests/regress).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools/wave/vcd_declarations.h"

namespace trnsim::test {

/// Runs a shell command and returns its standard output (empty if it cannot start).
inline std::string capture(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, got);
  return out;
}

struct VcdDump {
  std::set<std::string> signals;  ///< full dotted names, e.g. "TOP.trn_te.out_data_o"
  std::vector<uint64_t> times;    ///< every timestamp (#T) after the header, in order
  std::string text;               ///< what fst2vcd printed (for failure messages)
};

/// Parses VCD text: the declarations (tools/wave/vcd_declarations.h) as dotted names, then the timestamps (lines
/// "#T").
inline VcdDump parse_vcd(const std::string& text) {
  VcdDump v;
  v.text = text;
  for (const wave::VcdSignal& sig : wave::parse_vcd_declarations(text)) v.signals.insert(sig.full_name());
  std::istringstream in(text);
  for (std::string tok; in >> tok && tok != "$enddefinitions";) {
  }
  // A timestamp is a line "#T"; a vector change "b0101 #8" (signal id "#8", common with many signals) is not one.
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 1 && line[0] == '#' && line.find_first_not_of("0123456789", 1) == std::string::npos) {
      v.times.push_back(std::stoull(line.substr(1)));
    }
  }
  return v;
}

/// Reads an FST with fst2vcd.
inline VcdDump read_fst(const std::string& path) { return parse_vcd(capture("fst2vcd '" + path + "' 2>&1")); }

}  // namespace trnsim::test
