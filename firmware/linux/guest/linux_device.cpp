// driver::LinuxDevice (linux_device.h).
#include "firmware/linux/guest/linux_device.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

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
  // The device's interrupt line is the chip's: CHIP_INT_SUMMARY & CHIP_INT_ENABLE (docs/registers.md), which a
  // driver::CoreDevice points at its core. The cores it may come from are the enabled ones; their registers are at
  // core * CORE_STRIDE.
  const uint32_t cores = std::min<uint32_t>(32, std::max<uint32_t>(1, read_reg(regs::CHIP_CORES)));
  const uint32_t enabled = read_reg(regs::CHIP_INT_ENABLE) & uint32_t((uint64_t{1} << cores) - 1);
  const auto reg = [&](uint32_t core, uint32_t offset) { return read_reg(core * regs::CORE_STRIDE + offset); };
  const auto busy = [&] {
    for (uint32_t c = 0; c < cores; ++c) {
      if ((enabled >> c & 1) && (reg(c, regs::STATUS) & regs::STATUS_BUSY_MASK)) return true;
    }
    return false;
  };
  auto counter = [&](uint32_t c) {
    for (;;) {  // HI, LO, HI: the counter runs while we read it
      const uint32_t hi = reg(c, regs::CYCLE_HI), lo = reg(c, regs::CYCLE_LO);
      if (reg(c, regs::CYCLE_HI) == hi) return (uint64_t(hi) << 32) | lo;
    }
  };
  std::vector<uint64_t> start(cores, 0);
  for (uint32_t c = 0; c < cores; ++c) {
    if (enabled >> c & 1) start[c] = counter(c);
  }
  auto elapsed = [&] {  // the cycles the furthest enabled core ran since entry
    uint64_t most = 0;
    for (uint32_t c = 0; c < cores; ++c) {
      if (!(enabled >> c & 1)) continue;
      const uint64_t v = counter(c);  // a counter below its start (reset under us) has not run
      if (v > start[c]) most = std::max(most, v - start[c]);
    }
    return most;
  };
  uint64_t last = 0;
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    if ((read_reg(regs::CHIP_INT_SUMMARY) & enabled) != 0) return true;
    if (!busy()) return false;
    const uint64_t now = elapsed();
    if (now >= max_cycles) return false;
    if (now != last) {
      last = now;
      last_progress = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(60)) {
      throw std::runtime_error(fmt::format("{}: the device is busy but its cycle counters stood still for 60 s, {} "
                                           "cycles after the wait began", path_, now));
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
