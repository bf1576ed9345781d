// `trnsim qemu`: boots a QEMU guest whose PCI function is the device that `trnsim serve --qemu SOCKET` serves
// (docs/linux-driver.md). It connects to the socket, starts qemu-system-x86_64 with that connection as the
// x-pci-proxy-dev's fd and guest RAM in a shared memfd (the device maps it for bus-master DMA), shows the guest's
// serial console on stdout, and ends with QEMU: exit 0 when the guest powered off, 1 when QEMU failed or the guest did
// not power off within --timeout-s (QEMU is killed then), 2 for bad input.
#include <fmt/core.h>
#include <glob.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "firmware/driver/unix_socket.h"
#include "firmware/driver/wire.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
namespace {

struct QemuOptions {
  std::string socket, kernel, initrd;
  // no_timer_check: under TCG on a loaded host the guest kernel's IO-APIC timer check can miss its ticks and panic
  // ("IO-APIC + timer doesn't work!"), seen with two test processes on 2 cores; the check is for real boards.
  std::string append = "console=ttyS0 quiet panic=-1 no_timer_check";
  std::string accel = "tcg";
  std::string qemu = "qemu-system-x86_64";
  uint64_t memory_mib = 256;
  uint64_t timeout_s = 300;
};

/// The newest Debian kernel image in /boot (by version order of the file names), or "".
std::string newest_kernel() {
  glob_t g{};
  std::vector<std::string> found;
  if (::glob("/boot/vmlinuz-*", 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return ::strverscmp(a.c_str(), b.c_str()) < 0;
  });
  return found.empty() ? "" : found.back();
}

bool readable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

int connect_to(const std::string& path) {
  sockaddr_un a{};
  try {
    a = wire::unix_address(path);
  } catch (const wire::WireError& e) {
    throw BadInput(fmt::format("--socket: {}", e.what()));
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);  // inherited by QEMU: no close-on-exec
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw BadInput(fmt::format("--socket {}: no `trnsim serve --qemu {}` answers there ({})", path, path,
                               std::strerror(err)));
  }
  return fd;
}

int boot(const QemuOptions& o) {
  if (!readable_file(o.initrd)) throw BadInput(fmt::format("--initrd {}: not a readable file", o.initrd));
  if (o.accel != "tcg" && o.accel != "kvm") throw BadInput(fmt::format("--accel {}: tcg or kvm", o.accel));
  if (o.memory_mib < 64 || o.memory_mib > 65536) {
    throw BadInput(fmt::format("--memory-mib {}: must be 64 .. 65536", o.memory_mib));
  }
  const std::string kernel = o.kernel.empty() ? newest_kernel() : o.kernel;
  if (kernel.empty()) {
    throw BadInput("--kernel: no /boot/vmlinuz-* here; give one, or install Debian's linux-image-amd64 (make deps)");
  }
  if (!readable_file(kernel)) throw BadInput(fmt::format("--kernel {}: not a readable file", kernel));
  const int fd = connect_to(o.socket);
  const std::string mem = fmt::format("{}M", o.memory_mib);
  std::vector<std::string> args = {o.qemu,
                                   "-accel", o.accel,
                                   "-machine", "pc,memory-backend=trnsim-ram",
                                   "-object", "memory-backend-memfd,id=trnsim-ram,share=on,size=" + mem,
                                   "-m", mem,
                                   "-smp", "1",
                                   "-nographic", "-no-reboot", "-net", "none",
                                   "-kernel", kernel,
                                   "-initrd", o.initrd,
                                   "-append", o.append,
                                   "-device", fmt::format("x-pci-proxy-dev,id=trn0,fd={}", fd)};
  fmt::print(stderr, "trnsim qemu: booting {} with {} ({}, {} MiB) against {}\n", kernel, o.initrd, o.accel,
             o.memory_mib, o.socket);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork(): {}", std::strerror(errno)));
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    fmt::print(stderr, "trnsim qemu: cannot run {}: {} (install Debian's qemu-system-x86: make deps)\n", o.qemu,
               std::strerror(errno));
    ::_exit(127);
  }
  ::close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(o.timeout_s)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      fmt::print(stderr, "\ntrnsim qemu: the guest did not power off within {} s (--timeout-s): QEMU killed\n",
                 o.timeout_s);
      return kExitFail;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return kExitOk;
  fmt::print(stderr, "\ntrnsim qemu: QEMU ended with {}\n",
             WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status))
                               : fmt::format("signal {}", WTERMSIG(status)));
  return kExitFail;
}

}  // namespace

Action add_qemu(CLI::App& app) {
  auto o = std::make_shared<QemuOptions>();
  CLI::App* cmd = app.add_subcommand(
      "qemu", "Boot a QEMU guest whose PCI function is the device `trnsim serve --qemu SOCKET` serves");
  cmd->add_option("--socket", o->socket, "The socket of `trnsim serve --qemu`")->required();
  cmd->add_option("--initrd", o->initrd, "The guest's initramfs (its /init runs the guest's work)")->required();
  cmd->add_option("--kernel", o->kernel, "Guest kernel image (default: the newest /boot/vmlinuz-*)");
  cmd->add_option("--append", o->append, "Kernel command line")->capture_default_str();
  cmd->add_option("--accel", o->accel,
                  "tcg (software, everywhere) or kvm; QEMU 7.2's proxy raises INTx only through KVM's irqchip "
                  "(docs/linux-driver.md)")
      ->capture_default_str();
  cmd->add_option("--memory-mib", o->memory_mib, "Guest RAM, MiB (a shared memfd the device maps)")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--timeout-s", o->timeout_s, "Kill QEMU when the guest has not powered off after this long")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--qemu-binary", o->qemu, "The QEMU to run")->capture_default_str();
  return [o] { return boot(*o); };
}

}  // namespace trnsim::tool
