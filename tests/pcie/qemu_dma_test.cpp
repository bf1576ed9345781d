// Bus-master DMA end to end without QEMU: the test plays QEMU's proxy (mpqemu.h) against `QemuServer` serving the
// SystemC model, gives it guest RAM (a memfd, as QEMU's memory-backend-memfd), writes a program through the BAR2
// window and runs it: dma_copy host -> HBM -> host must move the guest's bytes; a copy of space host with no RAM at
// the address, or with Bus Master Enable off, must stop the device with HOST_ACCESS naming the field, the address
// and the reason (ERR_DETAIL).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cosim/device/sim_device.h"
#include "cosim/pcie/mpqemu.h"
#include "cosim/pcie/qemu_server.h"
#include "tests/pcie/fake_qemu.h"
#include "firmware/isa/isa.h"
#include "model/config/chip_config.h"
#include "spec/trn_regs.h"
#include "tests/driver/backends.h"
#include "tests/support/test_seed.h"

namespace trnsim::pcie {
namespace {

using mpqemu::Cmd;
constexpr uint64_t kBar0 = test::kBar0At, kBar2 = test::kBar2At;
constexpr uint64_t kRamBytes = 2 << 20;

/// The model and its QemuServer, both made and run in one thread (the SystemC kernel stays on it).
class ServedModel {
 public:
  ServedModel() {
    thread_ = std::thread([this] {
      cosim::SimDevice dev(model::chip_config("tiny"), cosim::SimDeviceOptions{});
      QemuServer server(dev, dir_.path() + "/q.sock", QemuServer::Options{});
      dev.attach_host_memory(&server.bus_master());
      {
        std::lock_guard<std::mutex> l(m_);
        server_ = &server;
      }
      ready_.notify_all();
      server.serve();
      dev.attach_host_memory(nullptr);
    });
    std::unique_lock<std::mutex> l(m_);
    ready_.wait(l, [this] { return server_ != nullptr; });
  }
  ~ServedModel() {
    server_->stop();
    thread_.join();
  }
  std::string path() const { return dir_.path() + "/q.sock"; }

 private:
  trnsim::test::TempDir dir_;
  std::mutex m_;
  std::condition_variable ready_;
  QemuServer* server_ = nullptr;
  std::thread thread_;
};

/// The fake QEMU plus the register and memory steps of a driver on top of it.
class Proxy : public test::FakeQemu {
 public:
  using FakeQemu::FakeQemu;
  uint32_t reg(uint32_t offset) { return uint32_t(bar_read(kBar0 + offset, 4)); }
  void set_reg(uint32_t offset, uint32_t v) { bar_write(kBar0 + offset, v, 4); }
  /// `bytes` into HBM at `hbm` through the window (8 bytes per access).
  void write_hbm(uint64_t hbm, const std::vector<uint8_t>& bytes) {
    for (std::size_t i = 0; i < bytes.size(); i += 8) {
      uint64_t v = 0;
      std::memcpy(&v, bytes.data() + i, std::min<std::size_t>(8, bytes.size() - i));
      bar_write(kBar2 + hbm + i, v, 8);
    }
  }
  /// Soft reset, the dma queue's program at HBM 0, doorbell.
  void start(const std::vector<isa::Instruction>& dma) {
    std::vector<uint8_t> bytes;
    for (const auto& in : dma) {
      const auto b = isa::encode(in);
      bytes.insert(bytes.end(), b.begin(), b.end());
    }
    set_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
    write_hbm(0, bytes);
    const uint32_t q = uint32_t(isa::Engine::kDma);
    set_reg(regs::queue_reg(q, regs::Q_BASE_LO), 0);
    set_reg(regs::queue_reg(q, regs::Q_BASE_HI), 0);
    set_reg(regs::queue_reg(q, regs::Q_LEN), uint32_t(dma.size()));
    set_reg(regs::DOORBELL, 1u << q);
  }
  /// start(), then STATUS polled 5 ms apart, at most 10 s, until DONE or ERROR; returns STATUS.
  uint32_t run(const std::vector<isa::Instruction>& dma) {
    start(dma);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      const uint32_t s = reg(regs::STATUS);
      if (s & (regs::STATUS_DONE_MASK | regs::STATUS_ERROR_MASK)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "the program did not end within 10 s";
    return reg(regs::STATUS);
  }
  std::string detail() {
    std::string s;
    const uint32_t len = reg(regs::ERR_DETAIL_LEN);
    for (uint32_t w = 0; 4 * w < len; ++w) {
      const uint32_t v = reg(regs::err_detail_reg(w));
      for (uint32_t b = 0; b < 4 && 4 * w + b < len; ++b) s += char(v >> (8 * b));
    }
    return s;
  }
};

isa::Instruction copy(isa::MemSpace src, uint64_t src_addr, isa::MemSpace dst, uint64_t dst_addr, uint16_t words) {
  isa::Instruction i;
  i.op = isa::Opcode::kDmaCopy;
  i.copy.src_type = i.copy.dst_type = isa::DataType::kFp32;
  i.copy.src_space = src;
  i.copy.dst_space = dst;
  i.copy.src_addr = src_addr;
  i.copy.dst_addr = dst_addr;
  i.copy.count = {words, 1, 1, 1};
  i.copy.src_stride = i.copy.dst_stride = {4, 0, 0, 0};
  return i;
}

isa::Instruction barrier() {
  isa::Instruction i;
  i.op = isa::Opcode::kSemSignal;
  i.sem.sem = 1;
  i.sem.value = 1;
  return i;
}

TEST(QemuDma, TheModelsDmaReachesGuestRamOnlyWithBusMasteringAndWhereRamIs) {
  ServedModel served;
  Proxy q(served.path());
  q.bring_up();  // BARs placed, memory space and bus master on
  using isa::MemSpace;

  // No RAM announced yet: the copy from the host stops the device.
  uint32_t status = q.run({copy(MemSpace::kHost, 0x1000, MemSpace::kHbm, 0x10000, 64), isa::Instruction::halt()});
  ASSERT_NE(status & regs::STATUS_ERROR_MASK, 0u);
  EXPECT_EQ(q.reg(regs::ERR_CODE), regs::ERR_HOST_ACCESS);
  EXPECT_EQ(q.reg(regs::ERR_INFO), uint32_t(isa::field_id("src_addr")));
  EXPECT_EQ(q.reg(regs::ERR_INDEX), 0u);
  EXPECT_NE(q.detail().find("src_addr host:0x1000: the guest maps no RAM"), std::string::npos) << q.detail();

  // Guest RAM: 2 MiB at bus address 0, as QEMU announces it. host -> HBM, barrier, HBM -> host elsewhere.
  const int ram = ::memfd_create("guest-ram", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(ram, kRamBytes), 0);
  auto* guest = static_cast<uint8_t*>(::mmap(nullptr, kRamBytes, PROT_READ | PROT_WRITE, MAP_SHARED, ram, 0));
  ASSERT_NE(guest, MAP_FAILED);
  std::mt19937 rng{static_cast<uint32_t>(trnsim::test::test_seed())};
  for (int i = 0; i < 256; ++i) guest[0x1000 + i] = uint8_t(rng());
  mpqemu::SyncSysmem m;
  m.regions = {{0x0, kRamBytes, 0}};
  mpqemu::send(q.fd(), int32_t(Cmd::kSyncSysmem), mpqemu::encode(m), {ram});
  status = q.run({copy(MemSpace::kHost, 0x1000, MemSpace::kHbm, 0x10000, 64), barrier(),
                  copy(MemSpace::kHbm, 0x10000, MemSpace::kHost, 0x8000, 64), isa::Instruction::halt()});
  ASSERT_NE(status & regs::STATUS_DONE_MASK, 0u) << "ERR_CODE " << q.reg(regs::ERR_CODE) << ": " << q.detail();
  EXPECT_EQ(std::memcmp(guest + 0x8000, guest + 0x1000, 256), 0) << "the round trip through HBM changed the bytes";
  // A flood of accesses does not stop the device's time: 2000 STATUS reads sent back to back after the doorbell by
  // one thread, while another reads the answers, see the program finish. (The server also runs a slice after 16
  // rounds with messages; this flood leaves it gaps enough without that rule.)
  q.start({copy(MemSpace::kHost, 0x1000, MemSpace::kHost, 0x9000, 64), isa::Instruction::halt()});
  constexpr int kBurst = 2000;
  std::thread sender([&] {  // while this thread reads the answers
    for (int i = 0; i < kBurst; ++i) {
      mpqemu::send(q.fd(), int32_t(Cmd::kBarRead),
                   mpqemu::encode(mpqemu::BarAccess{kBar0 + regs::STATUS, 0, 4, true}), {}, 10000);
    }
  });
  int done_at = -1;
  for (int i = 0; i < kBurst; ++i) {
    mpqemu::Message r;
    ASSERT_TRUE(mpqemu::receive(q.fd(), &r, 10000));
    uint64_t v = 0;
    std::memcpy(&v, r.data.data(), 8);
    if (done_at < 0 && (v & regs::STATUS_DONE_MASK)) done_at = i;
  }
  sender.join();
  EXPECT_GE(done_at, 0) << "the device stood still while the guest kept asking";
  EXPECT_EQ(std::memcmp(guest + 0x9000, guest + 0x1000, 256), 0) << "a host -> host copy";

  // Past the end of the RAM: the write side faults and names dst_addr.
  status = q.run({copy(MemSpace::kHbm, 0x10000, MemSpace::kHost, kRamBytes - 128, 64), isa::Instruction::halt()});
  ASSERT_NE(status & regs::STATUS_ERROR_MASK, 0u);
  EXPECT_EQ(q.reg(regs::ERR_CODE), regs::ERR_HOST_ACCESS);
  EXPECT_EQ(q.reg(regs::ERR_INFO), uint32_t(isa::field_id("dst_addr")));
  EXPECT_NE(q.detail().find("dst_addr host:0x1fff80"), std::string::npos) << q.detail();

  // Bus Master Enable off: no DMA at all, however mapped.
  q.cfg_write(0x04, 0x0002, 2);
  status = q.run({copy(MemSpace::kHost, 0x1000, MemSpace::kHbm, 0x10000, 64), isa::Instruction::halt()});
  ASSERT_NE(status & regs::STATUS_ERROR_MASK, 0u);
  EXPECT_EQ(q.reg(regs::ERR_CODE), regs::ERR_HOST_ACCESS);
  EXPECT_NE(q.detail().find("Bus Master Enable (Command bit 2) is off"), std::string::npos) << q.detail();
  ::munmap(guest, kRamBytes);
  ::close(ram);
}

}  // namespace
}  // namespace trnsim::pcie
