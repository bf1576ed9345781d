// Helpers of the regression runner's tests: run a shell command capturing exit code, stdout and stderr; scratch
// paths per test; count substrings. REGRESS_TMP_DIR is a compile definition (tests/regress/CMakeLists.txt).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace trnsim::regress_test {

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

/// A directory unique to the running test (emptied first): REGRESS_TMP_DIR/<Suite.Test>.
inline std::string scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  const std::string dir = std::string(REGRESS_TMP_DIR) + "/" + name;
  static std::string made;
  if (made != dir) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    made = dir;
  }
  return dir;
}

/// Runs `cmd` with /bin/sh; stdout and stderr captured separately.
inline Result sh(const std::string& cmd) {
  static int n = 0;
  const std::string base = scratch_dir() + "/cmd" + std::to_string(n++);
  const std::string full = "( " + cmd + " ) >'" + base + ".out' 2>'" + base + ".err'";
  const int status = std::system(full.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  return r;
}

inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

inline std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

}  // namespace trnsim::regress_test
