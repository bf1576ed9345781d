// Subcommands of the `trnsim` tool. Each `add_*` registers a CLI11 subcommand on `app` and returns the action to
// run when that subcommand was chosen; the action returns the process exit code (BRIEF section 4):
// 0 success and golden match, 1 mismatch or failed check, 2 bad input or usage.
#pragma once

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace trnsim::tool {

using Action = std::function<int()>;

/// Bad input (file, flag, field): reported as one line on stderr, exit code 2.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitBadInput = 2;

/// An input file the command reads whole (a program, vectors, a .npy): BadInput naming `what` ("--program p.s",
/// "p.s") when it is a directory, missing, or not a regular file (a pipe would block the read, a device such as
/// /dev/zero never end it).
inline void check_input_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return;
  throw BadInput(what + ": " + (std::filesystem::is_directory(path, ec) ? "is a directory"
                                : std::filesystem::exists(path, ec)     ? "is not a regular file (a pipe or a device)"
                                                                        : "no such file"));
}

/// "1 element", "2 elements": a count and its noun, singular for 1 (report and error lines).
inline std::string counted(uint64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// Check of the unsigned options (seeds, cycle counts): a negative value is bad input (CLI11 would wrap "-1" to
/// 2^64 - 1). Error: "--seed: -1 is negative (an unsigned value)".
/// The --round / --seed pair of the commands that cast (fpcheck, matmul): true for `stochastic`, false for `rne`;
/// BadInput for any other rounding, or a --seed given without --round stochastic.
inline bool stochastic_rounding(const std::string& round, bool seed_given) {
  const bool stochastic = round == "stochastic";
  if (round != "rne" && !stochastic) {
    throw BadInput("--round: unknown rounding '" + round + "' (expected rne or stochastic)");
  }
  if (seed_given && !stochastic) throw BadInput("--seed applies to --round stochastic only");
  return stochastic;
}

// Refuses a negative number for an unsigned option (CLI11 would wrap it) and one past 2^64 - 1 (CLI11 would clamp it
// to 18446744073709551615). No description of its own: the option's type name (UINT) already says it, and a
// description would print as "UINT:UINT" in --help.
inline const CLI::Validator kNonNegative(
    [](std::string& v) {
      const size_t first = v.find_first_not_of(" \t");
      if (first == std::string::npos) return std::string();  // CLI11's own conversion refuses it
      if (v[first] == '-') return v + " is negative (an unsigned value)";
      uint64_t value = 0;
      const char* end = v.data() + v.size();
      const auto [ptr, ec] = std::from_chars(v.data() + first, end, value);
      return ec == std::errc::result_out_of_range ? v + " is out of range (at most 18446744073709551615)"
                                                  : std::string();
    },
    "");

/// `trnsim fpcheck`: TestFloat vectors through the model's or the RTL's FP units.
Action add_fpcheck(CLI::App& app);

/// `trnsim run`: a workload on the simulated device, checked against the golden host kernels.
Action add_run(CLI::App& app);

/// `trnsim matmul`: O = S^T @ M from .npy files on the simulated device, checked against the golden GEMM.
Action add_matmul(CLI::App& app);

/// `trnsim asm FILE.s -o FILE.bin`: program text to binary program file (docs/isa.md).
Action add_asm(CLI::App& app);

/// `trnsim disasm FILE.bin [-o FILE.s]`: binary program file to canonical program text.
Action add_disasm(CLI::App& app);

/// `trnsim serve --socket PATH`: one simulated device served over a UNIX-domain socket.
Action add_serve(CLI::App& app);

/// `trnsim attach PATH`: status, registers by name and memory dumps of a served device, beside its driver.
Action add_attach(CLI::App& app);

/// `trnsim qemu --socket PATH --initrd FILE`: a QEMU guest whose PCI function is the device `serve --qemu` serves.
Action add_qemu(CLI::App& app);

/// `trnsim noc`: synthetic traffic on a NeuronLink network (TLM, --rtl or --lockstep); exit 1 if packets are lost.
Action add_noc(CLI::App& app);

}  // namespace trnsim::tool
