// driver::LinuxDevice: the trnsim device inside a Linux guest, through the module's /dev/trn0 (trn_ioctl.h): the
// same driver::Device as every other backend, so the project's Driver, kernels and workloads run in the guest
// unchanged. Registers and device memory go through the module's ioctls (BAR0, the BAR2 window); waiting polls
// INT_STATUS & INT_ENABLE and the cycle counter (the module has no interrupt under TCG: docs/linux-driver.md).
// Plus DMA buffers in guest RAM for the device's space host (bus-master DMA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "firmware/driver/device.h"

namespace trnsim::driver {

class LinuxDevice final : public Device {
 public:
  /// A buffer in guest RAM the device reaches as host:bus_addr; mapped here at `data`.
  struct DmaBuffer {
    uint8_t* data = nullptr;
    uint64_t bus_addr = 0;
    uint64_t bytes = 0;
  };

  /// Opens `path` (/dev/trn0). std::runtime_error naming the path and errno when it cannot be opened or is not the
  /// trnsim module's device (ioctl version).
  explicit LinuxDevice(const std::string& path = "/dev/trn0");
  ~LinuxDevice() override;
  LinuxDevice(const LinuxDevice&) = delete;
  LinuxDevice& operator=(const LinuxDevice&) = delete;

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override;
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override;
  /// Polls until the chip's interrupt line (CHIP_INT_SUMMARY & CHIP_INT_ENABLE) is high (true), `max_cycles` device
  /// cycles passed since entry or no enabled core is busy (false). std::runtime_error when the enabled cores' cycle
  /// counters stand still for 60 s of wall time while one is busy.
  bool wait_interrupt(uint64_t max_cycles) override;

  /// A DMA-coherent buffer of `bytes` (the module's TRN_IOC_DMA_ALLOC, mmap()ed); freed with the device.
  DmaBuffer dma_alloc(uint64_t bytes);
  /// The open /dev/trn0, for the module's other ioctls (trn_ioctl.h).
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::vector<DmaBuffer> buffers_;
};

}  // namespace trnsim::driver
