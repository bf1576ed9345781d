// QEMU's side of one x-pci-proxy-dev connection, for tests that play QEMU against pcie::QemuServer (mpqemu.h):
// configuration and BAR accesses answered by RET, and what QEMU and the guest's firmware do to bring the function up.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cosim/pcie/mpqemu.h"

namespace trnsim::pcie::test {

/// Where bring_up() places the BARs (32-bit memory, as QEMU's i440fx firmware would).
inline constexpr uint32_t kBar0At = 0xFE000000, kBar2At = 0xF8000000;

class FakeQemu {
 public:
  explicit FakeQemu(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) throw std::runtime_error("connect");
  }
  ~FakeQemu() { ::close(fd_); }
  FakeQemu(const FakeQemu&) = delete;
  FakeQemu& operator=(const FakeQemu&) = delete;
  int fd() const { return fd_; }

  /// Sends `cmd` and returns the RET's value; std::runtime_error when the server closed the connection instead.
  uint64_t ask(mpqemu::Cmd cmd, const std::vector<uint8_t>& data) {
    mpqemu::send(fd_, int32_t(cmd), data);
    mpqemu::Message r;
    if (!mpqemu::receive(fd_, &r, 10000)) throw std::runtime_error("the server closed the connection");
    EXPECT_EQ(r.cmd, int32_t(mpqemu::Cmd::kRet));
    uint64_t v = 0;
    std::memcpy(&v, r.data.data(), std::min<std::size_t>(8, r.data.size()));
    return v;
  }
  uint32_t cfg_read(uint32_t addr, int len) {
    return uint32_t(ask(mpqemu::Cmd::kPciCfgRead, mpqemu::encode(mpqemu::PciConf{addr, 0, len})));
  }
  void cfg_write(uint32_t addr, uint32_t val, int len) {
    ask(mpqemu::Cmd::kPciCfgWrite, mpqemu::encode(mpqemu::PciConf{addr, val, len}));
  }
  uint64_t bar_read(uint64_t addr, uint32_t size) {
    return ask(mpqemu::Cmd::kBarRead, mpqemu::encode(mpqemu::BarAccess{addr, 0, size, true}));
  }
  void bar_write(uint64_t addr, uint64_t val, uint32_t size) {
    ask(mpqemu::Cmd::kBarWrite, mpqemu::encode(mpqemu::BarAccess{addr, val, size, true}));
  }
  /// What QEMU's proxy does when it realizes the device (size every BAR: write all ones, read the mask back, restore),
  /// then what the firmware does: place BAR0 and BAR2, enable memory decoding and bus mastering.
  void bring_up() {
    for (uint32_t bar = 0; bar < 7; ++bar) {
      const uint32_t off = 0x10 + 4 * bar;
      const uint32_t orig = cfg_read(off, 4);
      cfg_write(off, 0xFFFFFFFF, 4);
      sizes[bar] = ~(cfg_read(off, 4) & 0xFFFFFFF0u) + 1;
      cfg_write(off, orig, 4);
    }
    cfg_write(0x10, kBar0At, 4);
    cfg_write(0x18, kBar2At, 4);
    cfg_write(0x04, 0x0006, 2);  // memory space + bus master
  }
  std::array<uint32_t, 7> sizes{};  ///< bring_up(): each BAR's size (0: none)

 private:
  int fd_ = -1;
};

}  // namespace trnsim::pcie::test
