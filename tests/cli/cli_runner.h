// Runs the built `trnsim` binary as a user would, for the command-line tests: captures exit code, stdout and stderr.
// TRNSIM_BIN and TRNSIM_CLI_TMP_DIR are compile definitions set by tests/cli/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trnsim::test {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Path of a scratch file unique to the running test (tests run in parallel under ctest -j).
/// Parameterised test names ("Suite/Test.Name/3") have their slashes replaced.
inline std::string scratch(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return std::string(TRNSIM_CLI_TMP_DIR) + "/" + name + suffix;
}

/// A fresh scratch path on every call within one test: `<test>.<n><suffix>`.
inline std::string next_scratch(const std::string& suffix) {
  static int counter = 0;
  return scratch("." + std::to_string(counter++) + suffix);
}

/// Writes `text` to a fresh scratch file (`<test>.<n>.tv`, a new one on every call) and returns its path.
inline std::string write_file(const std::string& text) {
  const std::string path = next_scratch(".tv");
  std::ofstream(path) << text;
  return path;
}

/// `err` without the three lines AddressSanitizer prints once per process when SystemC switches to a coroutine stack
/// ("WARNING: ASan is ignoring requested __asan_handle_no_return ...", "False positive error reports may follow",
/// "For details see https://github.com/google/sanitizers/issues/189"): a note of the sanitizer build's runtime, not
/// output of trnsim (docs/verification.md, "Sanitizers"). Anything else ASan prints stays.
inline std::string without_sanitizer_notes(const std::string& err) {
  std::istringstream in(err);
  std::string kept;
  for (std::string l; std::getline(in, l);) {
    const bool note = l.find("WARNING: ASan is ignoring requested __asan_handle_no_return") != std::string::npos ||
                      l == "False positive error reports may follow" ||
                      l == "For details see https://github.com/google/sanitizers/issues/189";
    if (!note) kept += l + "\n";
  }
  if (!err.empty() && err.back() != '\n' && !kept.empty()) kept.pop_back();
  return kept;
}

/// Runs `command` through the shell and captures its exit code, stdout and stderr.
inline Result run_command(const std::string& command) {
  const std::string out = scratch(".stdout");
  const std::string err = scratch(".stderr");
  const std::string cmd = command + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
#if defined(__SANITIZE_ADDRESS__)
  r.err = without_sanitizer_notes(r.err);
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  r.err = without_sanitizer_notes(r.err);
#endif
#endif
  return r;
}

/// Runs `trnsim <args>` (args are passed through the shell: keep them free of quotes). `shell_prefix`: shell
/// commands run first in the same shell, e.g. "ulimit -f 1; " to limit the sizes of the files trnsim writes.
inline Result run(const std::string& args, const std::string& shell_prefix = "") {
  return run_command(shell_prefix + "'" + TRNSIM_BIN + "' " + args);
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

inline std::string last_line(const std::string& text) {
  const auto lines = lines_of(text);
  return lines.empty() ? "" : lines.back();
}

}  // namespace trnsim::test
