// driver::LinuxDevice (linux_device.h).
#include "firmware/linux/guest/linux_device.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "firmware/linux/trn/trn_ioctl.h"
#include "spec/trn_regs.h"

namespace trnsim::driver {

namespace {
[[noreturn]] void fail(const std::string& path, const char* what) {
  throw std::runtime_error(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}
}  // namespace

LinuxDevice::LinuxDevice(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) fail(path, "cannot open (is the trn module loaded?)");
  trn_info info{};
  if (::ioctl(fd_, TRN_IOC_INFO, &info) != 0) fail(path, "TRN_IOC_INFO");
  if (info.ioctl_version != TRN_IOCTL_VERSION) {
    ::close(fd_);
    throw std::runtime_error(fmt::format("{}: the module speaks ioctl version {}, this program {}", path,
                                         info.ioctl_version, TRN_IOCTL_VERSION));
  }
}

LinuxDevice::~LinuxDevice() {
  for (const DmaBuffer& b : buffers_) ::munmap(b.data, b.bytes);
  if (fd_ >= 0) ::close(fd_);  // the module frees the DMA buffers
}

uint32_t LinuxDevice::read_reg(uint32_t offset) {
  trn_reg r{offset, 0};
  if (::ioctl(fd_, TRN_IOC_READ_REG, &r) != 0) fail(path_, "TRN_IOC_READ_REG");
  return r.value;
}

void LinuxDevice::write_reg(uint32_t offset, uint32_t value) {
  trn_reg r{offset, value};
  if (::ioctl(fd_, TRN_IOC_WRITE_REG, &r) != 0) fail(path_, "TRN_IOC_WRITE_REG");
}

void LinuxDevice::write_mem(uint64_t device_addr, const void* data, std::size_t bytes) {
  trn_mem m{device_addr, reinterpret_cast<uint64_t>(data), bytes};
  if (::ioctl(fd_, TRN_IOC_WRITE_MEM, &m) != 0) fail(path_, "TRN_IOC_WRITE_MEM");
}

void LinuxDevice::read_mem(uint64_t device_addr, void* data, std::size_t bytes) {
  trn_mem m{device_addr, reinterpret_cast<uint64_t>(data), bytes};
  if (::ioctl(fd_, TRN_IOC_READ_MEM, &m) != 0) fail(path_, "TRN_IOC_READ_MEM");
}

bool LinuxDevice::wait_interrupt(uint64_t max_cycles) {
  // The core to wait for: the one CHIP_INT_ENABLE names when it names exactly one (a driver::CoreDevice points it at
  // its core), else core 0, whose registers are the device's own. Its registers are at core * CORE_STRIDE.
  const uint32_t enabled = read_reg(regs::CHIP_INT_ENABLE);
  const uint32_t core = enabled != 0 && (enabled & (enabled - 1)) == 0 ? uint32_t(__builtin_ctz(enabled)) : 0;
  const auto reg = [&](uint32_t offset) { return read_reg(core * regs::CORE_STRIDE + offset); };
  auto cycles = [&] {
    for (;;) {  // HI, LO, HI: the counter runs while we read it
      const uint32_t hi = reg(regs::CYCLE_HI), lo = reg(regs::CYCLE_LO);
      if (reg(regs::CYCLE_HI) == hi) return (uint64_t(hi) << 32) | lo;
    }
  };
  const uint64_t start = cycles();
  uint64_t last = start;
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    if ((reg(regs::INT_STATUS) & reg(regs::INT_ENABLE)) != 0) return true;
    if ((reg(regs::STATUS) & regs::STATUS_BUSY_MASK) == 0) return false;
    const uint64_t now = cycles();
    if (now - start >= max_cycles) return false;
    if (now != last) {
      last = now;
      last_progress = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(60)) {
      throw std::runtime_error(fmt::format("{}: the device is busy but its cycle counter stood still for 60 s at {}",
                                           path_, now));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

LinuxDevice::DmaBuffer LinuxDevice::dma_alloc(uint64_t bytes) {
  trn_dma_buf d{bytes, 0, 0};
  if (::ioctl(fd_, TRN_IOC_DMA_ALLOC, &d) != 0) fail(path_, "TRN_IOC_DMA_ALLOC");
  const uint64_t mapped = (bytes + 4095) / 4096 * 4096;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off_t(d.mmap_offset));
  if (p == MAP_FAILED) fail(path_, "mmap of a DMA buffer");
  buffers_.push_back({static_cast<uint8_t*>(p), d.bus_addr, mapped});
  return {static_cast<uint8_t*>(p), d.bus_addr, bytes};
}

}  // namespace trnsim::driver
