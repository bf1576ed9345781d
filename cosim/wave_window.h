// What every verilated harness (the Tensor Engine, cosim/te/te_rtl.h; the NeuronLink network, cosim/noc/noc_rtl.h)
// shares about its FST waveform: the window of cycles, the --wave-scope list, the TRNSIM_WAVE* environment hook and
// the window around a failing cycle that re-run commands carry (docs/verification.md, "Waveform debugging").
// Free of Verilator headers; the FST writing itself is cosim/wave_fst.h.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <unistd.h>

namespace trnsim::cosim {

/// A window of cycles, both ends inclusive.
struct WaveWindow {
  uint64_t from = 0;
  uint64_t to = 0;
};

/// The window of a re-run command around `cycle`: [cycle - before, cycle + after], clamped at 0.
inline WaveWindow wave_window_around(uint64_t cycle, uint64_t before = 200, uint64_t after = 20) {
  return {cycle > before ? cycle - before : 0, cycle + after};
}

/// Checks a waveform window: `from` <= `to`. Throws Error naming both otherwise.
template <class Error>
void check_wave_window(uint64_t from, uint64_t to) {
  if (from > to) throw Error(fmt::format("waveform window: --wave-from {} is after --wave-to {}", from, to));
}

/// Splits a --wave-scope list ("a, b") into its scopes, blanks trimmed, empty entries dropped. Throws Error for a
/// wildcard, naming the scope and `example` (a valid path of the harness).
template <class Error>
std::vector<std::string> split_wave_scopes(const std::string& text, const char* example) {
  std::vector<std::string> scopes;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string s = text.substr(pos, comma - pos);
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    if (s.find_first_of("*?") != std::string::npos) {
      throw Error(fmt::format("--wave-scope '{}': wildcards are not supported; give a hierarchy path such as {}", s,
                              example));
    }
    if (!s.empty()) scopes.push_back(s);
    pos = comma + 1;
  }
  return scopes;
}

/// TRNSIM_WAVE's file for the next harness of this process that takes it: `path` for the first, FILE.n.fst for the
/// n-th after it (every kind of harness counts, so a process with several never writes one file twice).
inline std::string numbered_wave_path(const std::string& path) {
  static std::atomic<unsigned> harnesses{0};  // an inline function: one counter in the whole program
  const unsigned n = harnesses++;
  if (n == 0) return path;
  const size_t dot = path.rfind('.');
  const bool ext = dot != std::string::npos && path.find('/', dot) == std::string::npos;
  return ext ? fmt::format("{}.{}{}", path.substr(0, dot), n, path.substr(dot)) : fmt::format("{}.{}", path, n);
}

/// The TRNSIM_WAVE* variables, read and checked: `path` empty when TRNSIM_WAVE is unset or empty. Throws Error
/// naming the variable for a name that does not end in .fst, a directory that does not exist or cannot be written,
/// a malformed cycle number or a window whose start is after its end, so that a command can check them before it
/// simulates anything (tools/trnsim/collective_cmd.cpp does).
struct WaveEnv {
  std::string path;
  uint64_t from = 0;
  uint64_t to = UINT64_MAX;
  const char* scope = nullptr;
};
template <class Error>
WaveEnv read_wave_env() {
  WaveEnv env;
  const char* path = std::getenv("TRNSIM_WAVE");
  if (path == nullptr || *path == '\0') return env;
  env.path = path;
  const size_t n = env.path.size();
  if (n < 5 || env.path.compare(n - 4, 4, ".fst") != 0) {
    throw Error(fmt::format("TRNSIM_WAVE={}: trnsim writes waveforms as FST, give a FILE.fst name", env.path));
  }
  const size_t slash = env.path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : env.path.substr(0, slash));
  if (::access(dir.c_str(), W_OK) != 0) {
    throw Error(fmt::format("TRNSIM_WAVE={}: cannot write in directory '{}' ({})", env.path, dir,
                            std::strerror(errno)));
  }
  const auto cycle_of = [](const char* name, uint64_t fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || *text == '-') {
      throw Error(fmt::format("{}='{}' is not a cycle number", name, text));
    }
    return static_cast<uint64_t>(v);
  };
  env.from = cycle_of("TRNSIM_WAVE_FROM", 0);
  env.to = cycle_of("TRNSIM_WAVE_TO", UINT64_MAX);
  if (env.from > env.to) {
    throw Error(fmt::format("TRNSIM_WAVE_FROM={} is after TRNSIM_WAVE_TO={}", env.from, env.to));
  }
  env.scope = std::getenv("TRNSIM_WAVE_SCOPE");
  return env;
}

/// Fills the waveform fields of `options` (wave_path, wave_from, wave_to, wave_scope: TeRtlOptions, NocOptions)
/// from the environment when `options.wave_path` is empty, so that any test can be re-run with a waveform:
/// TRNSIM_WAVE=FILE.fst, TRNSIM_WAVE_FROM=CYCLE, TRNSIM_WAVE_TO=CYCLE, TRNSIM_WAVE_SCOPE=PATH. The n-th harness of a
/// process (n >= 1, counting every kind) that takes it writes FILE.n.fst instead, and each prints
/// "[ wave     ] FILE" to stderr. Throws Error as read_wave_env does.
template <class Error, class Options>
Options& apply_wave_env(Options& options) {
  if (!options.wave_path.empty()) return options;
  const WaveEnv env = read_wave_env<Error>();
  if (env.path.empty()) return options;
  const std::string file = numbered_wave_path(env.path);
  options.wave_path = file;
  options.wave_from = env.from;
  options.wave_to = env.to;
  if (env.scope) options.wave_scope = env.scope;
  std::fprintf(stderr, "[ wave     ] %s\n", file.c_str());
  return options;
}

/// Prints the line the regression runner (tools/regress) reads to put a window into its re-run command:
/// "[ fail-at  ] block=BLOCK cycle=C wave-from=A wave-to=B", on stderr, flushed.
inline void print_fail_at(const std::string& block, uint64_t cycle, WaveWindow w) {
  std::fprintf(stderr, "[ fail-at  ] block=%s cycle=%llu wave-from=%llu wave-to=%llu\n", block.c_str(),
               static_cast<unsigned long long>(cycle), static_cast<unsigned long long>(w.from),
               static_cast<unsigned long long>(w.to));
  std::fflush(stderr);
}

}  // namespace trnsim::cosim
