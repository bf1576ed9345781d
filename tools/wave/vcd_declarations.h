// The signal declarations of a waveform: VCD text up to $enddefinitions, or an FST read through GTKWave's fst2vcd.
// The one reader of them: the GTKWave layout tool (tools/regress/wave_layout.cpp) and the waveform tests use it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trnsim::wave {

/// One declared variable.
struct VcdSignal {
  std::string scope;  ///< dotted, e.g. "TOP.trn_te.u_array.g_row[0].u_row.g_col[1].u_pe"
  std::string name;   ///< as declared, e.g. "psum_q" (or "psum_q[31:0]" when the range is part of the name)
  std::string range;  ///< the declaration's range token, e.g. "[31:0]" (empty if none)
  int width = 1;      ///< bits
  /// scope + "." + name (the name alone at the top).
  std::string full_name() const { return scope.empty() ? name : scope + "." + name; }
};

/// The declarations of VCD `text`, in order, up to $enddefinitions (value changes are not read). Malformed text
/// gives what could be read; it never throws.
std::vector<VcdSignal> parse_vcd_declarations(const std::string& text);

/// The declarations of the FST at `path` (fst2vcd reads only as far as the header): empty when the file is not an
/// FST, std::nullopt when GTKWave's fst2vcd is not installed (the shell cannot find it, exit status 127).
std::optional<std::vector<VcdSignal>> read_fst_declarations(const std::string& path);

/// `s` quoted for /bin/sh.
std::string shell_quote(const std::string& s);

}  // namespace trnsim::wave
