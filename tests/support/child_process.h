// Child processes for the tests that need a server (BRIEF: a test starts what it needs itself): a shell command in
// the background with its output in files, and `trnsim serve` up once it printed its "listening on PATH" line.
// Used by the CLI tests (tests/cli/serve_cli_test.cpp) and the served device suites (tests/kernels/device/).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace trnsim::test {

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A child process running `sh -c cmd` with stdout/stderr to files; killed (SIGKILL) if still running at the end.
class Proc {
 public:
  Proc(const std::string& cmd, const std::string& out, const std::string& err) : out_(out), err_(err) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Proc() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void signal(int sig) { ::kill(pid_, sig); }
  /// Exit code, or -1 when it did not end within `seconds` (or died of a signal).
  int wait(double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    do {
      int status = 0;
      if (!done_ && ::waitpid(pid_, &status, WNOHANG) == pid_) {
        done_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      if (done_) return code_;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (seconds_since(t0) < seconds);
    return -1;
  }
  /// True once the process has ended (reaped by wait()).
  bool exited() {
    wait(0);
    return done_;
  }
  std::string out() const { return read_text_file(out_); }
  std::string err() const { return read_text_file(err_); }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  int code_ = -1;
  std::string out_, err_;
};

/// `trnsim` (the binary `trnsim_bin`) serving on `socket` with `args`, up once it printed "listening on SOCKET";
/// killed at the end if still running. Throws std::runtime_error when it does not come up within 60 s.
class ServeProcess {
 public:
  /// `listen_flag`: --socket (the wire protocol) or --qemu (a QEMU guest's PCI function).
  ServeProcess(const std::string& trnsim_bin, const std::string& socket, const std::string& args,
               const std::string& out, const std::string& err, const std::string& listen_flag = "--socket")
      : socket_(socket), proc_("'" + trnsim_bin + "' serve " + listen_flag + " " + socket + " " + args, out, err) {
    const auto t0 = std::chrono::steady_clock::now();
    while (proc_.out().find("listening on " + socket) == std::string::npos) {
      if (seconds_since(t0) > 60 || proc_.exited()) {
        throw std::runtime_error("trnsim serve did not come up:\n" + proc_.out() + proc_.err());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  Proc& proc() { return proc_; }
  const std::string& path() const { return socket_; }

 private:
  std::string socket_;
  Proc proc_;
};

}  // namespace trnsim::test
