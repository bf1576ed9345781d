// pcie::QemuServer and PcieFunction without QEMU: the test plays QEMU's x-pci-proxy-dev over the socket (the
// messages of mpqemu.h, as QEMU 7.2 sends them) against the mock device, and checks the configuration header, BAR
// sizing and decode, the register BAR, the memory window, guest RAM mapping, INTx through the irqfd with its
// resample, device reset, unsupported requests and malformed messages (which close the connection, never the
// server).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "cosim/pcie/mpqemu.h"
#include "cosim/pcie/qemu_server.h"
#include "tests/pcie/fake_qemu.h"
#include "spec/trn_regs.h"
#include "tests/driver/backends.h"
#include "tests/driver/mock_device.h"

namespace trnsim::pcie {
namespace {

using mpqemu::Cmd;

using test::FakeQemu;
using test::kBar0At;
using test::kBar2At;

/// The server in a thread.
class Served {
 public:
  explicit Served(driver::Device& dev) {
    QemuServer::Options o;
    o.log = [this](const std::string& l) { lines_ += l + "\n"; };
    server_ = std::make_unique<QemuServer>(dev, dir_.path() + "/q.sock", o);
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~Served() { stop(); }
  /// Stops the server; it stays inspectable (server(), log()).
  void stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    thread_.join();
  }
  std::string path() const { return dir_.path() + "/q.sock"; }
  QemuServer& server() { return *server_; }
  const std::string& log() const { return lines_; }  // read only after stop()

 private:
  trnsim::test::TempDir dir_;
  std::string lines_;
  std::unique_ptr<QemuServer> server_;
  std::thread thread_;
};

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

TEST(PcieFunction, TheHeaderHasTheMapsIdsAndSizesItsBars) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  FakeQemu q(s.path());
  EXPECT_EQ(q.cfg_read(0x00, 2), 0x1AF4u);  // Red Hat / Qumranet: the experimental 10f0 device
  EXPECT_EQ(q.cfg_read(0x02, 2), 0x10F0u);
  EXPECT_EQ(q.cfg_read(0x00, 4), 0x10F01AF4u);
  EXPECT_EQ(q.cfg_read(0x08, 4), 0x12000001u);  // class 0x12 (processing accelerator), revision 1
  EXPECT_EQ(q.cfg_read(0x2C, 4), 0x10F01AF4u);  // subsystem
  EXPECT_EQ(q.cfg_read(0x3D, 1), 1u);           // INTA#
  EXPECT_EQ(q.cfg_read(0x0E, 1), 0u);           // header type 0, single function
  EXPECT_EQ(q.cfg_read(0x34, 1), 0u);           // no capabilities
  q.bring_up();
  EXPECT_EQ(q.sizes[0], 1024u * 1024);      // the register map: every core's block and the chip's
  EXPECT_EQ(q.sizes[2], 64u * 1024 * 1024);  // the window
  for (const int unused : {1, 3, 4, 5, 6}) EXPECT_EQ(q.sizes[std::size_t(unused)], 0u) << "BAR " << unused;
  EXPECT_EQ(q.cfg_read(0x10, 4), kBar0At);
  EXPECT_EQ(q.cfg_read(0x18, 4), kBar2At);
  q.cfg_write(0x10, 0xFE00ABCD, 4);  // the bits below the size are not writable
  EXPECT_EQ(q.cfg_read(0x10, 4), 0xFE000000u);
  q.cfg_write(0x00, 0xFFFFFFFF, 4);  // read-only
  EXPECT_EQ(q.cfg_read(0x00, 4), 0x10F01AF4u);
  q.cfg_write(0x3C, 11, 1);  // interrupt line: written by the firmware, kept
  EXPECT_EQ(q.cfg_read(0x3C, 1), 11u);
  EXPECT_EQ(q.cfg_read(0x04, 2), 0x0006u);
  EXPECT_EQ(q.cfg_read(0x100, 4), 0u);  // past the header
}

TEST(PcieFunction, Bar0IsTheRegisterMapAndBar2AWindowOntoDeviceMemory) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  FakeQemu q(s.path());
  q.bring_up();
  EXPECT_EQ(q.bar_read(kBar0At + regs::ID, 4), regs::kIdValue);
  EXPECT_EQ(q.bar_read(kBar0At + regs::HBM_BYTES_LO, 8), 1ull << 30);  // LO and HI in one 8-byte read
  q.bar_write(kBar0At + regs::INT_ENABLE, 3, 4);
  EXPECT_EQ(q.bar_read(kBar0At + regs::INT_ENABLE, 4), 3u);
  // The window shows HBM from 0 at reset; move it to HBM byte 1 MiB + 4 KiB and write through it.
  EXPECT_EQ(q.bar_read(kBar0At + regs::PCIE_WIN_HI, 4), regs::PCIE_WIN_HI_RESET);
  EXPECT_EQ(q.bar_read(kBar0At + regs::PCIE_WIN_LO, 4), 0u);
  q.bar_write(kBar2At + 16, 0x1122334455667788ull, 8);
  q.bar_write(kBar0At + regs::PCIE_WIN_LO, (1u << 20) + 4096 + 5, 4);  // the low 12 bits are not kept
  EXPECT_EQ(q.bar_read(kBar0At + regs::PCIE_WIN_LO, 4), (1u << 20) + 4096);
  q.bar_write(kBar2At + 8, 0xA5A5A5A5u, 4);
  q.bar_write(kBar2At + 12, 0x7Eu, 1);
  EXPECT_EQ(q.bar_read(kBar2At + 8, 4), 0xA5A5A5A5u);
  s.stop();
  uint64_t first = 0;
  std::memcpy(&first, dev.peek_mem(regs::HBM_BASE + 16, 8).data(), 8);
  EXPECT_EQ(first, 0x1122334455667788ull);
  EXPECT_EQ(dev.peek_mem(regs::HBM_BASE + (1u << 20) + 4096 + 8, 5),
            (std::vector<uint8_t>{0xA5, 0xA5, 0xA5, 0xA5, 0x7E}));
}

TEST(PcieFunction, UnsupportedRequestsReadAllOnesAndAreLogged) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  FakeQemu q(s.path());
  q.bring_up();
  EXPECT_EQ(q.bar_read(kBar0At + regs::ID + 1, 2), ~0ull);  // registers take 4 aligned bytes
  EXPECT_EQ(q.bar_read(kBar0At + 0x100000, 4), ~0ull);      // past BAR0
  q.bar_write(kBar0At + regs::PCIE_WIN_HI, 0x0, 4);          // the window onto device address 0 .. 64 MiB: MMIO,
  q.bar_write(kBar0At + regs::PCIE_WIN_LO, 0x100000, 4);     // then a hole of the device map
  EXPECT_EQ(q.bar_read(kBar2At, 4), ~0ull);
  q.cfg_write(0x04, 0x0000, 2);  // memory decoding off: nothing answers
  EXPECT_EQ(q.bar_read(kBar0At + regs::ID, 4), ~0ull);
  q.cfg_write(0x04, 0x0002, 2);
  EXPECT_EQ(q.bar_read(kBar0At + regs::ID, 4), regs::kIdValue);  // the connection lives on
  s.stop();
  EXPECT_NE(s.log().find("registers take 4 (or 8) aligned bytes"), std::string::npos) << s.log();
  EXPECT_NE(s.log().find("no enabled BAR holds it"), std::string::npos) << s.log();
  EXPECT_NE(s.log().find("BAR2 read at window offset 0x0 (device address 0x100000)"), std::string::npos) << s.log();
}

TEST(QemuServer, RaisesIntxThroughTheIrqfdAndAgainAfterTheResample) {
  trnsim::test::MockDevice dev;
  dev.outcome.cycles = 5000;  // the run ends with DONE 5000 cycles after the doorbell
  Served s(dev);
  FakeQemu q(s.path());
  q.bring_up();
  const int irqfd = ::eventfd(0, EFD_CLOEXEC), resample = ::eventfd(0, EFD_CLOEXEC);
  mpqemu::send(q.fd(), int32_t(Cmd::kSetIrqfd), {}, {irqfd, resample});
  q.bar_write(kBar0At + regs::INT_ENABLE, regs::INT_STATUS_DONE_MASK, 4);
  EXPECT_EQ(q.cfg_read(0x06, 2) & 0x8, 0u);  // Status.INTERRUPT: low
  q.bar_write(kBar0At + regs::DOORBELL, 1, 4);
  ASSERT_TRUE(readable(irqfd, 5000)) << "no interrupt within 5 s";
  uint64_t n = 0;
  ASSERT_EQ(::read(irqfd, &n, 8), 8);
  EXPECT_EQ(n, 1u);
  EXPECT_NE(q.cfg_read(0x06, 2) & 0x8, 0u);  // the level shows in the Status register
  EXPECT_NE(q.bar_read(kBar0At + regs::STATUS, 4) & regs::STATUS_DONE_MASK, 0u);
  // The guest EOIs without clearing the status: the resample makes the device signal again.
  const uint64_t one = 1;
  ASSERT_EQ(::write(resample, &one, 8), 8);
  ASSERT_TRUE(readable(irqfd, 5000)) << "a level still high after the resample was not signalled again";
  ASSERT_EQ(::read(irqfd, &n, 8), 8);
  // Now the handler clears it: the next resample signals nothing.
  q.bar_write(kBar0At + regs::INT_STATUS, regs::INT_STATUS_DONE_MASK, 4);
  ASSERT_EQ(::write(resample, &one, 8), 8);
  EXPECT_FALSE(readable(irqfd, 300));
  EXPECT_EQ(q.cfg_read(0x06, 2) & 0x8, 0u);
  // Interrupt Disable masks the level.
  q.cfg_write(0x04, 0x0406, 2);
  q.bar_write(kBar0At + regs::DOORBELL, 1, 4);
  EXPECT_FALSE(readable(irqfd, 300));
  EXPECT_EQ(q.cfg_read(0x06, 2) & 0x8, 0u);
  q.cfg_write(0x04, 0x0006, 2);
  EXPECT_TRUE(readable(irqfd, 5000));
  ::close(irqfd);
  ::close(resample);
}

TEST(QemuServer, MapsGuestRamFromSyncSysmem) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  FakeQemu q(s.path());
  const int ram = ::memfd_create("guest-ram", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(ram, 2 << 20), 0);
  mpqemu::SyncSysmem m;
  m.regions = {{0x0, 1 << 20, 0}, {0x100000000ull, 1 << 20, 1 << 20}};
  mpqemu::send(q.fd(), int32_t(Cmd::kSyncSysmem), mpqemu::encode(m), {ram, ram});
  q.cfg_read(0, 2);  // a round trip: the server has handled the sync before it answers this
  s.stop();
  const auto& regions = s.server().host_memory().regions();
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[1].gpa, 0x100000000ull);
  auto* p = static_cast<uint8_t*>(::mmap(nullptr, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, ram, 0));
  ASSERT_NE(p, MAP_FAILED);
  p[(1 << 20) + 42] = 0x5A;  // the guest writes its RAM at gpa 4 GiB + 42: the device sees it
  const uint8_t* seen = s.server().host_memory().find(0x100000000ull + 42, 1);
  ASSERT_NE(seen, nullptr);
  EXPECT_EQ(*seen, 0x5A);
  EXPECT_EQ(s.server().host_memory().find(0x100000, 16), nullptr);  // between the regions
  EXPECT_EQ(s.server().host_memory().find(0xFFFF8, 16), nullptr);   // across a region's end
  ::munmap(p, 2 << 20);
  ::close(ram);
}

TEST(QemuServer, AMalformedMessageClosesTheConnectionAndTheNextQemuIsServed) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  {
    FakeQemu q(s.path());
    mpqemu::send(q.fd(), 42, {});  // no such command
    mpqemu::Message r;
    EXPECT_FALSE(mpqemu::receive(q.fd(), &r, 5000)) << "the connection should be closed";
  }
  {
    FakeQemu q(s.path());
    mpqemu::send(q.fd(), int32_t(Cmd::kPciCfgRead), {1, 2, 3});  // 3 bytes of a 12-byte message
    mpqemu::Message r;
    EXPECT_FALSE(mpqemu::receive(q.fd(), &r, 5000));
  }
  {
    FakeQemu q(s.path());
    const int one = ::eventfd(0, EFD_CLOEXEC);
    mpqemu::send(q.fd(), int32_t(Cmd::kSetIrqfd), {}, {one});  // needs two fds
    mpqemu::Message r;
    EXPECT_FALSE(mpqemu::receive(q.fd(), &r, 5000));
    ::close(one);
  }
  {
    FakeQemu q(s.path());
    uint8_t h[16] = {};
    const uint64_t huge = 1 << 20;
    std::memcpy(h + 8, &huge, 8);
    ASSERT_EQ(::send(q.fd(), h, sizeof h, MSG_NOSIGNAL), 16);  // a size no message has
    mpqemu::Message r;
    EXPECT_FALSE(mpqemu::receive(q.fd(), &r, 5000));
  }
  FakeQemu q(s.path());
  EXPECT_EQ(q.cfg_read(0x00, 2), 0x1AF4u);
  s.stop();
  EXPECT_NE(s.log().find("unknown command 42"), std::string::npos) << s.log();
  EXPECT_NE(s.log().find("pci_cfgread: 3 bytes of data, the message has 12"), std::string::npos) << s.log();
  EXPECT_NE(s.log().find("set_irqfd: 1 file descriptors, the message carries 2"), std::string::npos) << s.log();
  EXPECT_NE(s.log().find("1048576 bytes of data (at most 192)"), std::string::npos) << s.log();
}

TEST(QemuServer, DeviceResetRestoresTheHeaderAndResetsTheDevice) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  FakeQemu q(s.path());
  q.bring_up();
  q.bar_write(kBar0At + regs::PCIE_WIN_LO, 0x5000, 4);
  q.bar_write(kBar0At + regs::INT_ENABLE, 3, 4);
  EXPECT_EQ(q.ask(Cmd::kDeviceReset, {}), 0u);
  EXPECT_EQ(q.cfg_read(0x10, 4), 0u);  // BARs unassigned, decoding off
  EXPECT_EQ(q.cfg_read(0x04, 2), 0u);
  q.bring_up();
  EXPECT_EQ(q.bar_read(kBar0At + regs::PCIE_WIN_LO, 4), 0u);
  EXPECT_EQ(q.bar_read(kBar0At + regs::INT_ENABLE, 4), 0u);
}

TEST(QemuServer, ASecondQemuIsTurnedAwayWhileOneIsServed) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  FakeQemu first(s.path());
  EXPECT_EQ(first.cfg_read(0x00, 2), 0x1AF4u);
  FakeQemu second(s.path());
  bool answered = false;
  try {  // the server closed it: the send fails (EPIPE) or the answer never comes (EOF)
    mpqemu::send(second.fd(), int32_t(Cmd::kPciCfgRead), mpqemu::encode(mpqemu::PciConf{0, 0, 2}));
    mpqemu::Message r;
    answered = mpqemu::receive(second.fd(), &r, 5000);
  } catch (const mpqemu::ProtocolError&) {
  }
  EXPECT_FALSE(answered);
  EXPECT_EQ(first.cfg_read(0x02, 2), 0x10F0u);
  s.stop();
  EXPECT_NE(s.log().find("a second QEMU connected while one is served"), std::string::npos) << s.log();
}

// A message whose data stops short (a header promising 12 bytes, 3 sent, then silence) closes the connection after
// the rest's bound, 2 s (mpqemu::receive), naming what was cut short; the next QEMU is served.
TEST(QemuServer, AMessageCutShortClosesTheConnectionAfterTheBound) {
  trnsim::test::MockDevice dev;
  Served s(dev);
  {
    FakeQemu q(s.path());
    uint8_t h[16 + 3] = {};
    const int32_t cmd = int32_t(Cmd::kPciCfgRead);
    const uint64_t size = 12;
    std::memcpy(h, &cmd, 4);
    std::memcpy(h + 8, &size, 8);
    ASSERT_EQ(::send(q.fd(), h, sizeof h, MSG_NOSIGNAL), ssize_t(sizeof h));
    const auto t0 = std::chrono::steady_clock::now();
    mpqemu::Message r;
    EXPECT_FALSE(mpqemu::receive(q.fd(), &r, 10000)) << "the connection should be closed";
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(waited, 1.5);
    EXPECT_LT(waited, 6.0);
  }
  FakeQemu q(s.path());
  EXPECT_EQ(q.cfg_read(0x00, 2), 0x1AF4u);
  s.stop();
  EXPECT_NE(s.log().find("pci_cfgread cut short: nothing for 2000 ms"), std::string::npos) << s.log();
}

}  // namespace
}  // namespace trnsim::pcie
