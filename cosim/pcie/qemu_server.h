// pcie::QemuServer: the device as the remote PCI function of a QEMU guest (QEMU 7.2's multi-process protocol,
// mpqemu.h; `-device x-pci-proxy-dev,fd=N` in the guest's QEMU), in front of any driver::Device through a
// PcieFunction. `trnsim serve --qemu SOCKET` is a thin shell around it; docs/linux-driver.md tells how to boot a guest.
//
// One thread. It listens on a UNIX-domain socket and serves one QEMU at a time (a second connection is closed with a
// log line). Configuration and BAR accesses are answered at once, in arrival order, while simulated time stands
// still; between messages, while the device is busy (STATUS.BUSY) and its interrupt line low, it runs the device in
// slices of some 10-40 ms of host time (so a guest access waits at most one slice), and after 16 rounds in a row
// with messages a slice runs anyway (a guest that polls without pause cannot stop the device's time). When the INTx level rises it
// writes the irqfd QEMU passed (SET_IRQFD); QEMU's KVM irqchip holds the level until the guest's EOI and then signals
// the resample eventfd, after which a level still high is signalled again. Without KVM (TCG) QEMU's proxy connects
// no irqfd: the guest must poll (docs/linux-driver.md). Guest RAM announced by SYNC_SYSMEM is mapped for the
// device's bus-master accesses (host_memory()). A malformed message closes the connection (logged); the server
// itself never stops for a client's fault.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cosim/pcie/mpqemu.h"
#include "cosim/pcie/pcie_function.h"
#include "firmware/driver/device.h"
#include "firmware/driver/unix_socket.h"
#include "model/core/host_memory.h"

namespace trnsim::pcie {

/// Guest RAM the device can reach (mapped from the fds of the last SYNC_SYSMEM).
class GuestMemory {
 public:
  struct Region {
    uint64_t gpa = 0, size = 0;
    uint8_t* host = nullptr;  ///< mmap()ed
  };
  GuestMemory() = default;
  ~GuestMemory();
  GuestMemory(const GuestMemory&) = delete;
  GuestMemory& operator=(const GuestMemory&) = delete;
  /// Replaces the mapping with the regions of `m` (a checked SYNC_SYSMEM). Regions that cannot be mapped are left
  /// out and named in the returned text (empty when all were mapped).
  std::string sync(const mpqemu::Message& m);
  void clear();
  /// The host pointer of guest-physical [gpa, gpa + bytes) when one region holds it all, else nullptr.
  uint8_t* find(uint64_t gpa, uint64_t bytes) const;
  const std::vector<Region>& regions() const { return regions_; }

 private:
  std::vector<Region> regions_;
};

/// The device's bus-master view of guest RAM (model::HostMemory): GuestMemory, gated by the function's Bus Master
/// Enable (Command bit 2), as a PCI function's DMA is.
class BusMaster final : public model::HostMemory {
 public:
  BusMaster(const GuestMemory& ram, const PcieFunction& function) : ram_(ram), function_(function) {}
  bool read(uint64_t addr, void* data, uint64_t bytes, std::string* why) override;
  bool write(uint64_t addr, const void* data, uint64_t bytes, std::string* why) override;

 private:
  uint8_t* reach(uint64_t addr, uint64_t bytes, std::string* why) const;
  const GuestMemory& ram_;
  const PcieFunction& function_;
};

class QemuServer {
 public:
  struct Options {
    /// serve() returns when the first QEMU disconnects.
    bool once = false;
    /// One line per event (connection, protocol error, unsupported request); empty: silent.
    std::function<void(const std::string&)> log;
  };

  /// Listens on `socket_path` (wire::ListeningSocket's rules; WireError naming the path).
  QemuServer(driver::Device& device, std::string socket_path, Options options);
  ~QemuServer();
  QemuServer(const QemuServer&) = delete;
  QemuServer& operator=(const QemuServer&) = delete;

  /// Serves until stop() (or, with Options::once, until the first QEMU leaves).
  void serve();
  /// Makes serve() return soon; safe from a signal handler and from another thread.
  void stop();

  const std::string& socket_path() const { return listener_.path(); }
  PcieFunction& function() { return function_; }
  const GuestMemory& host_memory() const { return guest_; }
  /// What the device's DMA reaches host memory through (attach it to the model: SimDevice::attach_host_memory).
  model::HostMemory& bus_master() { return bus_master_; }

 private:
  void accept_one();
  /// Handles one message of the connection; false when it is closed.
  bool handle();
  void close_conn(const std::string& why);
  void run_slice();
  /// Some core of the chip is running a program (its STATUS.BUSY) and its interrupt line (CHIP_INT_SUMMARY &
  /// CHIP_INT_ENABLE) is low: simulated time must move.
  bool any_core_busy();
  void update_intx();
  void say(const std::string& line) const;

  driver::Device& device_;
  PcieFunction function_;
  Options options_;
  wire::ListeningSocket listener_;
  uint32_t cores_;  ///< CHIP_CORES, read once
  mpqemu::Fd conn_, irqfd_, resample_;
  mpqemu::Fd wake_read_, wake_write_;
  std::atomic<bool> stop_{false};
  GuestMemory guest_;
  BusMaster bus_master_{guest_, function_};
  bool irq_signalled_ = false;  ///< the level was written to the irqfd and no resample came since
  bool served_one_ = false;
  uint64_t slice_cycles_ = 1024;
  int deferred_ = 0;  ///< serve rounds in a row with a message while the device was busy
  uint64_t messages_ = 0, unsupported_ = 0;
};

}  // namespace trnsim::pcie
