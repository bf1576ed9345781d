// Runs the planned runs as child processes, N at a time: one process per (entry, seed), TRNSIM_SEED in its
// environment, stdout and stderr to a log file; a row per finished run; timeouts kill the run's process group.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tools/regress/regress.h"

namespace trnsim::regress {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int sig) { g_stop = sig; }

struct Active {
  size_t index;
  pid_t pid;
  Clock::time_point start;
  bool timed_out = false;
};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The test name after a GoogleTest status tag ("[  FAILED  ] Suite.Name (3 ms)", "..., where GetParam() = ...").
std::string tagged_name(const std::string& line, size_t tag_len) {
  std::string rest = line.substr(tag_len);
  const size_t end = rest.find_first_of(" ,");
  if (end != std::string::npos) rest.erase(end);
  return rest;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// What a finished run's log says.
struct LogFacts {
  std::vector<std::string> failed;  // failed test names, in order, once each
  std::string running;              // the last test started and not finished (crash, timeout)
  bool summary = false;             // "[  PASSED  ] N tests." seen
  int passed = 0, skipped = 0;
  std::string excerpt;              // each failing test's output, then the log's last lines
  std::string wave_from, wave_to;   // the waveform window of the first failing test's "[ fail-at  ]" line (RTL
                                    // failures); a passing test's (an error provoked on purpose) does not count
  bool exec_failed = false;
};

LogFacts read_log(const std::string& path) {
  LogFacts f;
  std::ifstream in(path);
  std::vector<std::string> block, tail;
  std::set<std::string> seen;
  std::string block_from, block_to;  // the first "[ fail-at  ]" window of the running test
  const auto take_block_window = [&] {
    if (f.wave_from.empty()) {
      f.wave_from = block_from;
      f.wave_to = block_to;
    }
  };
  const size_t kMaxExcerpt = 16000, kTail = 25;
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "[ RUN      ] ")) {
      f.running = tagged_name(line, 13);
      block.clear();
      block_from.clear();
      block_to.clear();
    }
    if (!f.running.empty() && block.size() < 400) block.push_back(line);
    if (starts_with(line, "[  SKIPPED ] ") && all_digits(tagged_name(line, 13))) {
      f.skipped = std::max(f.skipped, std::atoi(line.c_str() + 13));  // "[  SKIPPED ] 2 tests, listed below:"
    } else if (starts_with(line, "[       OK ] ") || starts_with(line, "[  SKIPPED ] ")) {
      if (tagged_name(line, 13) == f.running) f.running.clear();
    } else if (starts_with(line, "[  FAILED  ] ")) {
      const std::string name = tagged_name(line, 13);
      if (!all_digits(name) && seen.insert(name).second) f.failed.push_back(name);
      if (name == f.running) {
        for (const std::string& b : block)
          if (f.excerpt.size() < kMaxExcerpt) f.excerpt += b + "\n";
        take_block_window();
        f.running.clear();
      }
    } else if (starts_with(line, "[  PASSED  ] ")) {
      f.summary = true;
      f.passed = std::atoi(line.c_str() + 13);
    } else if (starts_with(line, "trnsim_regress: cannot execute ")) {
      f.exec_failed = true;
    } else if (starts_with(line, "[ fail-at  ] ") && block_from.empty()) {
      // "[ fail-at  ] block=te 8x4 cycle=57 wave-from=0 wave-to=77" (cosim/wave_window.h, print_fail_at)
      const auto field = [&line](const std::string& key) {
        const size_t at = line.find(" " + key + "=");
        if (at == std::string::npos) return std::string();
        const size_t from = at + key.size() + 2;
        const std::string v = line.substr(from, line.find(' ', from) - from);
        return all_digits(v) ? v : std::string();
      };
      block_from = field("wave-from");
      block_to = field("wave-to");
      if (block_to.empty()) block_from.clear();
    }
    tail.push_back(line);
    if (tail.size() > kTail) tail.erase(tail.begin());
  }
  if (!f.running.empty()) {  // the run stopped inside this test
    for (const std::string& b : block)
      if (f.excerpt.size() < kMaxExcerpt) f.excerpt += b + "\n";
    take_block_window();
  }
  f.excerpt += "---- last lines of " + path + " ----\n";
  for (const std::string& t : tail) f.excerpt += t + "\n";
  return f;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string rerun_command(const Run& r, const std::string& filter, const RunOptions& opts, const LogFacts& f) {
  std::string cmd;
  if (r.entry->wave) {
    cmd += "TRNSIM_WAVE=" +
           shell_quote(display_path(opts.out_dir + "/" + r.entry->name + ".seed" + std::to_string(r.seed) + ".fst")) +
           " ";
    // The window around the failing cycle that the failing engine printed.
    if (!f.wave_from.empty()) cmd += "TRNSIM_WAVE_FROM=" + f.wave_from + " TRNSIM_WAVE_TO=" + f.wave_to + " ";
  }
  cmd += "TRNSIM_SEED=" + std::to_string(r.seed) + " " + shell_quote(display_path(opts.bin_dir + "/" + r.entry->binary)) +
         " --gtest_filter=" + shell_quote(filter);
  return cmd;
}

void classify(Run& r, int status, bool timed_out, const RunOptions& opts) {
  const LogFacts f = read_log(r.log_path);
  // The re-run command runs exactly what the regression ran (same filter, so the same tests in the same order in
  // one process: a failure that depends on an earlier test still reproduces); the reason names the failing tests.
  const std::string& filter = r.entry->filter;
  const int timeout = opts.timeout_override_s > 0 ? opts.timeout_override_s : r.entry->timeout_s;
  const std::string where = f.running.empty() ? "" : " in " + f.running;
  if (timed_out) {
    r.status = Run::Status::kTimeout;
    r.reason = "timed out after " + std::to_string(timeout) + " s" + where + " (killed)";
  } else if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    r.status = Run::Status::kCrash;
    r.reason = std::string("killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")" + where;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    if (!f.summary) {
      r.status = Run::Status::kError;
      r.reason = "exited 0 without a GoogleTest summary line";
    } else if (f.passed == 0 && f.skipped > 0) {
      r.status = Run::Status::kSkip;
      r.reason = "every test skipped";
    } else {
      r.status = Run::Status::kPass;
    }
  } else if (f.exec_failed) {
    r.status = Run::Status::kError;
    r.reason = "could not execute " + r.entry->binary;
  } else {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.status = Run::Status::kFail;
    r.reason = !f.failed.empty() ? "failed: " + join(f.failed, ", ")
                                 : "exit code " + std::to_string(code) + where + " (no failed test named in the log)";
  }
  if (is_failure(r.status)) {
    r.rerun = rerun_command(r, filter, opts, f);
    r.log_excerpt = f.excerpt;
  }
}

pid_t launch(const Run& r, const RunOptions& opts) {
  const std::string bin = opts.bin_dir + "/" + r.entry->binary;
  const std::string filter = "--gtest_filter=" + r.entry->filter;
  const std::string seed = std::to_string(r.seed);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    // A runner killed outright (SIGKILL: a CI job's timeout) cannot stop its tests: the kernel does, as the runner
    // dies; a runner gone before this line leaves the test its new parent, so it stops at once.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    const int fd = open(r.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    setenv("TRNSIM_SEED", seed.c_str(), 1);
    setenv("GTEST_COLOR", "no", 1);
    if (r.entry->wave) unsetenv("TRNSIM_WAVE");  // a regression records no waveform; the re-run command asks
    char* argv[] = {const_cast<char*>(bin.c_str()), const_cast<char*>(filter.c_str()), nullptr};
    execv(bin.c_str(), argv);
    std::fprintf(stderr, "trnsim_regress: cannot execute %s: %s\n", bin.c_str(), std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so that a kill right after fork reaches the group
  return pid;
}

std::string fmt_seconds(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  }
  return buf;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("_-./=:,+@%", c) != nullptr;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string display_path(const std::string& p) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  const fs::path abs = fs::path(p).lexically_normal();
  if (ec || !abs.is_absolute()) return p;
  const std::string c = cwd.string() + "/";
  const std::string a = abs.string();
  if (a.rfind(c, 0) == 0) return a.substr(c.size());
  return a;
}

std::string format_duration(double s) { return fmt_seconds(s); }

bool execute(std::vector<Run>& runs, const RunOptions& opts) {
  std::error_code ec;
  fs::create_directories(opts.out_dir, ec);
  if (ec) throw UsageError("--out " + opts.out_dir + ": " + ec.message());

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {}, old_hup {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);  // the terminal closed: stop as for SIGTERM (NOT RUN rows, the JUnit file)

  size_t name_w = 4, seed_w = 4;
  for (const Run& r : runs) {
    name_w = std::max(name_w, r.entry->name.size());
    seed_w = std::max(seed_w, std::to_string(r.seed).size());
  }
  const std::string total = std::to_string(runs.size());
  const int idx_w = int(total.size()) * 2 + 1;
  std::printf("  %-*s  %-*s  %-*s  %-7s  %8s\n", idx_w, "run", int(name_w), "test", int(seed_w), "seed", "result",
              "time");
  std::fflush(stdout);

  std::vector<Active> active;
  size_t next = 0, finished = 0;
  auto finish = [&](Active& a, int status) {
    Run& r = runs[a.index];
    r.seconds = std::chrono::duration<double>(Clock::now() - a.start).count();
    classify(r, status, a.timed_out, opts);
    ++finished;
    const std::string idx = std::to_string(finished) + "/" + total;
    std::printf("  %-*s  %-*s  %-*llu  %-7s  %8s\n", idx_w, idx.c_str(), int(name_w), r.entry->name.c_str(),
                int(seed_w), static_cast<unsigned long long>(r.seed), status_name(r.status),
                fmt_seconds(r.seconds).c_str());
    if (is_failure(r.status)) {
      std::printf("  %*s  %s\n  %*s  re-run: %s\n  %*s  log:    %s\n", idx_w, "", r.reason.c_str(), idx_w, "",
                  r.rerun.c_str(), idx_w, "", display_path(r.log_path).c_str());
    }
    std::fflush(stdout);
  };

  while (finished < runs.size()) {
    if (g_stop) break;
    while (active.size() < size_t(opts.jobs) && next < runs.size()) {
      Run& r = runs[next];
      r.log_path = opts.out_dir + "/" + r.entry->name + ".seed" + std::to_string(r.seed) + ".log";
      active.push_back({next, launch(r, opts), Clock::now()});
      ++next;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = std::find_if(active.begin(), active.end(), [&](const Active& a) { return a.pid == pid; });
      if (it != active.end()) {
        finish(*it, status);
        active.erase(it);
      }
      continue;
    }
    const auto now = Clock::now();
    for (Active& a : active) {
      const Run& r = runs[a.index];
      const int limit = opts.timeout_override_s > 0 ? opts.timeout_override_s : r.entry->timeout_s;
      if (!a.timed_out && now - a.start > std::chrono::seconds(limit)) {
        a.timed_out = true;
        kill(-a.pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  const bool interrupted = g_stop != 0;
  if (interrupted) {
    std::printf("\ninterrupted (signal %d): stopping %zu running test process(es)\n", int(g_stop), active.size());
    for (const Active& a : active) kill(-a.pid, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(3);
    while (!active.empty()) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        active.erase(std::remove_if(active.begin(), active.end(), [&](const Active& a) { return a.pid == pid; }),
                     active.end());
        continue;
      }
      if (pid < 0 && errno == ECHILD) break;
      if (Clock::now() > deadline) {
        for (const Active& a : active) kill(-a.pid, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (Run& r : runs) {
      if (r.status == Run::Status::kPending) {
        r.status = Run::Status::kNotRun;
        r.reason = "not run: the regression was interrupted";
        r.rerun = rerun_command(r, r.entry->filter, opts, LogFacts{});
      }
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  return !interrupted;
}

}  // namespace trnsim::regress
