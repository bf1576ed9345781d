// The device as the remote PCI function of a QEMU guest (qemu_server.h).
#include "cosim/pcie/qemu_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "firmware/driver/wire.h"
#include "spec/trn_regs.h"

namespace trnsim::pcie {
namespace {

constexpr int kIdlePollMs = 50;  ///< poll bound while nothing runs (stop() and accept stay prompt)
constexpr double kSliceMinMs = 10.0, kSliceMaxMs = 40.0;
constexpr uint64_t kMaxSliceCycles = 1ull << 30;
constexpr int kMaxDeferredSlices = 16;  ///< rounds with a message while busy before a slice runs anyway

}  // namespace

GuestMemory::~GuestMemory() { clear(); }

void GuestMemory::clear() {
  for (const Region& r : regions_) ::munmap(r.host, r.size);
  regions_.clear();
}

std::string GuestMemory::sync(const mpqemu::Message& m) {
  const mpqemu::SyncSysmem s = mpqemu::sync_sysmem(m);
  clear();
  std::string missed;
  for (std::size_t i = 0; i < s.regions.size(); ++i) {
    const auto& r = s.regions[i];
    void* p = r.size == 0 ? MAP_FAILED
                          : ::mmap(nullptr, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, m.fds[i].get(), r.offset);
    if (p == MAP_FAILED) {
      missed += fmt::format("{}region {} (gpa {:#x}, {} bytes): {}", missed.empty() ? "" : "; ", i, r.gpa, r.size,
                            r.size == 0 ? "empty" : std::strerror(errno));
      continue;
    }
    regions_.push_back({r.gpa, r.size, static_cast<uint8_t*>(p)});
  }
  return missed;
}

uint8_t* GuestMemory::find(uint64_t gpa, uint64_t bytes) const {
  for (const Region& r : regions_) {
    if (gpa >= r.gpa && bytes <= r.size && gpa - r.gpa <= r.size - bytes) return r.host + (gpa - r.gpa);
  }
  return nullptr;
}

uint8_t* BusMaster::reach(uint64_t addr, uint64_t bytes, std::string* why) const {
  if (!function_.bus_master()) {
    *why = "the PCI function's Bus Master Enable (Command bit 2) is off";
    return nullptr;
  }
  uint8_t* p = ram_.find(addr, bytes);
  if (p == nullptr) {
    *why = fmt::format("the guest maps no RAM at bus addresses [{:#x}, +{} bytes) ({} region{} mapped)", addr, bytes,
                       ram_.regions().size(), ram_.regions().size() == 1 ? "" : "s");
  }
  return p;
}

bool BusMaster::read(uint64_t addr, void* data, uint64_t bytes, std::string* why) {
  const uint8_t* p = reach(addr, bytes, why);
  if (p != nullptr) std::memcpy(data, p, bytes);
  return p != nullptr;
}

bool BusMaster::write(uint64_t addr, const void* data, uint64_t bytes, std::string* why) {
  uint8_t* p = reach(addr, bytes, why);
  if (p != nullptr) std::memcpy(p, data, bytes);
  return p != nullptr;
}

QemuServer::QemuServer(driver::Device& device, std::string socket_path, Options options)
    : device_(device), function_(device), options_(std::move(options)), listener_(std::move(socket_path)),
      cores_(std::max<uint32_t>(1, device.read_reg(regs::CHIP_CORES))) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) throw wire::WireError(fmt::format("pipe(): {}", std::strerror(errno)));
  wake_read_ = mpqemu::Fd(p[0]);
  wake_write_ = mpqemu::Fd(p[1]);
}

QemuServer::~QemuServer() = default;

void QemuServer::stop() {
  stop_ = true;
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_write_.get(), &b, 1);
}

void QemuServer::say(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void QemuServer::accept_one() {
  mpqemu::Fd fd(listener_.accept());
  if (fd.get() < 0) return;
  if (conn_.get() >= 0) {
    say("a second QEMU connected while one is served: closed it (one guest per device)");
    return;
  }
  conn_ = std::move(fd);
  function_.reset();
  irqfd_ = mpqemu::Fd();
  resample_ = mpqemu::Fd();
  irq_signalled_ = false;
  messages_ = unsupported_ = 0;
  say("QEMU connected; the function and the device are reset");
}

void QemuServer::close_conn(const std::string& why) {
  say(fmt::format("QEMU connection closed: {} ({} messages, {} unsupported requests)", why, messages_, unsupported_));
  conn_ = mpqemu::Fd();
  irqfd_ = mpqemu::Fd();
  resample_ = mpqemu::Fd();
  guest_.clear();
  served_one_ = true;
}

bool QemuServer::handle() {
  using mpqemu::Cmd;
  mpqemu::Message m;
  try {
    if (!mpqemu::receive(conn_.get(), &m)) {
      close_conn("QEMU closed it");
      return false;
    }
    ++messages_;
    switch (Cmd(m.cmd)) {
      case Cmd::kSyncSysmem: {
        const std::string missed = guest_.sync(m);
        if (!missed.empty()) say(fmt::format("sync_sysmem: guest RAM not mapped: {}", missed));
        return true;  // no answer: QEMU does not wait for one
      }
      case Cmd::kSetIrqfd:
        mpqemu::check(m);
        irqfd_ = std::move(m.fds[0]);
        resample_ = std::move(m.fds[1]);
        irq_signalled_ = false;
        return true;  // no answer
      case Cmd::kPciCfgRead: {
        const mpqemu::PciConf c = mpqemu::pci_conf(m);
        mpqemu::send_ret(conn_.get(), function_.config_read(c.addr, c.len));
        return true;
      }
      case Cmd::kPciCfgWrite: {
        const mpqemu::PciConf c = mpqemu::pci_conf(m);
        function_.config_write(c.addr, c.val, c.len);
        mpqemu::send_ret(conn_.get(), 0);
        return true;
      }
      case Cmd::kBarRead:
      case Cmd::kBarWrite: {
        const mpqemu::BarAccess b = mpqemu::bar_access(m);
        uint64_t value = 0;
        const bool ok = !b.memory ? false
                        : Cmd(m.cmd) == Cmd::kBarRead ? function_.bar_read(b.addr, b.size, &value)
                                                      : function_.bar_write(b.addr, b.size, b.val);
        if (!ok) {
          ++unsupported_;
          value = ~0ull;
          say(fmt::format("unsupported request: {}", b.memory ? function_.last_error() : "an I/O-space access"));
        }
        mpqemu::send_ret(conn_.get(), Cmd(m.cmd) == Cmd::kBarRead ? value : 0);
        return true;
      }
      case Cmd::kDeviceReset:
        mpqemu::check(m);
        function_.reset();
        irq_signalled_ = false;
        mpqemu::send_ret(conn_.get(), 0);
        return true;
      case Cmd::kRet:
        throw mpqemu::ProtocolError("ret: an answer from QEMU, which only asks");
    }
    mpqemu::check(m);  // throws: unknown command
  } catch (const mpqemu::ProtocolError& e) {
    close_conn(fmt::format("protocol error: {}", e.what()));
    return false;
  } catch (const std::exception& e) {  // the device failed: the guest must not take the server down
    close_conn(fmt::format("device error: {}", e.what()));
    return false;
  }
  return true;
}

void QemuServer::run_slice() {
  const auto t0 = std::chrono::steady_clock::now();
  device_.wait_interrupt(slice_cycles_);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (ms < kSliceMinMs && slice_cycles_ < kMaxSliceCycles) slice_cycles_ *= 2;
  if (ms > kSliceMaxMs && slice_cycles_ > 64) slice_cycles_ /= 2;
}

void QemuServer::update_intx() {
  if (irqfd_.get() < 0 || irq_signalled_ || !function_.intx()) return;
  const uint64_t one = 1;
  if (::write(irqfd_.get(), &one, sizeof one) == sizeof one) irq_signalled_ = true;
}

bool QemuServer::any_core_busy() {
  const uint32_t raised = device_.read_reg(regs::CHIP_INT_SUMMARY) & device_.read_reg(regs::CHIP_INT_ENABLE);
  for (uint32_t c = 0; c < cores_; ++c) {
    if ((raised >> c) & 1) continue;  // its raised line waits for the guest
    if (device_.read_reg(c * regs::CORE_STRIDE + regs::STATUS) & regs::STATUS_BUSY_MASK) return true;
  }
  return false;
}

void QemuServer::serve() {
  while (!stop_ && !(options_.once && served_one_)) {
    // Time moves while a core runs whose interrupt line is low (a raised line waits for the guest; a guest may
    // drive core 1 through its register block while core 0's line is raised).
    const bool busy = conn_.get() >= 0 && any_core_busy();
    std::vector<pollfd> fds{{wake_read_.get(), POLLIN, 0}, {listener_.fd(), POLLIN, 0}};
    if (conn_.get() >= 0) fds.push_back({conn_.get(), POLLIN, 0});
    if (resample_.get() >= 0) fds.push_back({resample_.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), busy ? 0 : kIdlePollMs) < 0) {
      if (errno == EINTR) continue;
      throw wire::WireError(fmt::format("poll(): {}", std::strerror(errno)));
    }
    if (fds[0].revents & POLLIN) break;
    if (fds[1].revents & POLLIN) accept_one();
    bool spoke = false;
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == resample_.get()) {
        uint64_t n = 0;
        [[maybe_unused]] const ssize_t r = ::read(resample_.get(), &n, sizeof n);
        irq_signalled_ = false;  // the guest's EOI ended the level KVM held: signal again if still high
      } else if (fds[i].fd == conn_.get()) {
        spoke = true;
        handle();
      }
    }
    if (conn_.get() < 0) continue;
    // Messages first: simulated time moves while the guest waits for nothing from the device; a guest that polls
    // without pause still lets a slice run every kMaxDeferredSlices rounds.
    deferred_ = spoke && busy ? deferred_ + 1 : 0;
    if (busy && (!spoke || deferred_ >= kMaxDeferredSlices)) {
      run_slice();
      deferred_ = 0;
    }
    update_intx();
  }
}

}  // namespace trnsim::pcie
