// The device as a PCI function (pcie_function.h).
#include "cosim/pcie/pcie_function.h"

#include <algorithm>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "spec/trn_regs.h"

namespace trnsim::pcie {
namespace {

// Type-0 header offsets (PCI Local Bus Specification 3.0, figure 6-1).
constexpr uint32_t kVendor = 0x00, kDevice = 0x02, kCommand = 0x04, kStatus = 0x06, kRevision = 0x08,
                   kClass = 0x09, kCacheLine = 0x0C, kLatency = 0x0D, kBar0 = 0x10, kSubVendor = 0x2C,
                   kSubsystem = 0x2E, kIntLine = 0x3C, kIntPin = 0x3D;
constexpr uint16_t kCmdMemory = 1u << 1, kCmdBusMaster = 1u << 2, kCmdParity = 1u << 6, kCmdSerr = 1u << 8,
                   kCmdIntxDisable = 1u << 10;
constexpr uint16_t kStatusInterrupt = 1u << 3;

uint32_t bar_bytes(int bar) {
  if (bar == int(regs::PCI_BAR_MMIO)) return regs::PCI_BAR_MMIO_BYTES;
  if (bar == int(regs::PCI_BAR_WINDOW)) return regs::PCI_BAR_WINDOW_BYTES;
  return 0;
}

}  // namespace

PcieFunction::PcieFunction(driver::Device& device) : device_(device) {
  static_assert((regs::PCI_BAR_MMIO_BYTES & (regs::PCI_BAR_MMIO_BYTES - 1)) == 0, "a BAR's size is a power of two");
  static_assert((regs::PCI_BAR_WINDOW_BYTES & (regs::PCI_BAR_WINDOW_BYTES - 1)) == 0, "a BAR's size: a power of 2");
  static_assert(regs::PCI_BAR_MMIO_BYTES == regs::MMIO_SIZE, "BAR0 is the register map");
  reset();
}

void PcieFunction::reset() {
  cfg_.fill(0);
  writable_.fill(0);
  auto put = [&](uint32_t off, uint32_t v, int len) {
    for (int i = 0; i < len; ++i) cfg_[off + uint32_t(i)] = uint8_t(v >> (8 * i));
  };
  put(kVendor, regs::PCI_VENDOR_ID, 2);
  put(kDevice, regs::PCI_DEVICE_ID, 2);
  put(kRevision, regs::PCI_REVISION_ID, 1);
  put(kClass, regs::PCI_CLASS_CODE, 3);
  put(kSubVendor, regs::PCI_SUBSYSTEM_VENDOR_ID, 2);
  put(kSubsystem, regs::PCI_SUBSYSTEM_ID, 2);
  put(kIntPin, 1, 1);  // INTA#
  const uint16_t cmd_writable = kCmdMemory | kCmdBusMaster | kCmdParity | kCmdSerr | kCmdIntxDisable;
  writable_[kCommand] = uint8_t(cmd_writable);
  writable_[kCommand + 1] = uint8_t(cmd_writable >> 8);
  writable_[kCacheLine] = writable_[kLatency] = writable_[kIntLine] = 0xFF;
  for (int bar = 0; bar < 6; ++bar) {
    const uint32_t mask = bar_bytes(bar) == 0 ? 0 : ~(bar_bytes(bar) - 1);  // 32-bit memory BAR: flag bits 0
    for (uint32_t i = 0; i < 4; ++i) writable_[kBar0 + 4 * uint32_t(bar) + i] = uint8_t(mask >> (8 * i));
  }
  window_ = (uint64_t(regs::PCIE_WIN_HI_RESET) << 32) | regs::PCIE_WIN_LO_RESET;
  error_.clear();
  // Every core: its interrupt enables off, a soft reset (CHIP_RESET; CHIP_INT_ENABLE back to every core).
  const uint32_t cores = std::min<uint32_t>(device_.read_reg(regs::CHIP_CORES), regs::MAX_CORES);
  for (uint32_t c = 0; c < std::max(cores, 1u); ++c) device_.write_reg(c * regs::CORE_STRIDE + regs::INT_ENABLE, 0);
  device_.write_reg(regs::CHIP_RESET, regs::CHIP_RESET_CORES_MASK);
}

uint32_t PcieFunction::config_read(uint32_t offset, int len) {
  if ((len != 1 && len != 2 && len != 4) || offset >= cfg_.size() || offset + uint32_t(len) > cfg_.size()) return 0;
  std::array<uint8_t, 256> view = cfg_;
  if (intx()) view[kStatus] |= kStatusInterrupt;
  uint32_t v = 0;
  for (int i = 0; i < len; ++i) v |= uint32_t(view[offset + uint32_t(i)]) << (8 * i);
  return v;
}

void PcieFunction::config_write(uint32_t offset, uint32_t value, int len) {
  if ((len != 1 && len != 2 && len != 4) || offset >= cfg_.size() || offset + uint32_t(len) > cfg_.size()) return;
  for (int i = 0; i < len; ++i) {
    const uint32_t b = offset + uint32_t(i);
    const auto v = uint8_t(value >> (8 * i));
    cfg_[b] = uint8_t((cfg_[b] & ~writable_[b]) | (v & writable_[b]));
  }
}

uint32_t PcieFunction::bar_base(int bar) const {
  if (bar < 0 || bar > 5) return 0;
  uint32_t v = 0;
  for (uint32_t i = 0; i < 4; ++i) v |= uint32_t(cfg_[kBar0 + 4 * uint32_t(bar) + i]) << (8 * i);
  return v & ~0xFu;
}

bool PcieFunction::memory_enabled() const { return (cfg_[kCommand] & kCmdMemory) != 0; }
bool PcieFunction::bus_master() const { return (cfg_[kCommand] & kCmdBusMaster) != 0; }

bool PcieFunction::intx() {
  const uint16_t cmd = uint16_t(cfg_[kCommand] | (cfg_[kCommand + 1] << 8));
  return (cmd & kCmdIntxDisable) == 0 && device_.wait_interrupt(0);
}


int PcieFunction::decode(uint64_t addr, unsigned size) const {
  if (!memory_enabled()) return -1;
  for (const int bar : {int(regs::PCI_BAR_MMIO), int(regs::PCI_BAR_WINDOW)}) {
    const uint64_t base = bar_base(bar), bytes = bar_bytes(bar);
    if (base != 0 && addr >= base && addr - base + size <= bytes) return bar;
  }
  return -1;
}

bool PcieFunction::reg_read(uint32_t offset, uint32_t* value) {
  if (offset == regs::PCIE_WIN_LO) {
    *value = uint32_t(window_);
  } else if (offset == regs::PCIE_WIN_HI) {
    *value = uint32_t(window_ >> 32);
  } else {
    *value = device_.read_reg(offset);
  }
  return true;
}

void PcieFunction::reg_write(uint32_t offset, uint32_t value) {
  if (offset == regs::PCIE_WIN_LO) {
    window_ = (window_ & ~0xFFFFFFFFull) | (value & ~0xFFFu);
  } else if (offset == regs::PCIE_WIN_HI) {
    window_ = (window_ & 0xFFFFFFFFull) | (uint64_t(value) << 32);
  } else {
    device_.write_reg(offset, value);
  }
}

bool PcieFunction::bar_read(uint64_t addr, unsigned size, uint64_t* value) {
  *value = ~0ull;
  const int bar = decode(addr, size);
  if (bar < 0) {
    error_ = fmt::format("read of {} bytes at bus address {:#x}: no enabled BAR holds it", size, addr);
    return false;
  }
  const uint64_t off = addr - bar_base(bar);
  if (bar == int(regs::PCI_BAR_MMIO)) {
    if (!((size == 4 && off % 4 == 0) || (size == 8 && off % 8 == 0))) {
      error_ = fmt::format("BAR0 read of {} bytes at offset {:#x}: registers take 4 (or 8) aligned bytes", size, off);
      return false;
    }
    uint32_t lo = 0, hi = 0;
    reg_read(uint32_t(off), &lo);
    if (size == 8) reg_read(uint32_t(off + 4), &hi);
    *value = size == 8 ? (uint64_t(hi) << 32) | lo : lo;
    return true;
  }
  if (size == 0 || size > 8) {
    error_ = fmt::format("BAR2 read of {} bytes", size);
    return false;
  }
  uint64_t v = 0;
  try {
    device_.read_mem(window_ + off, &v, size);
  } catch (const std::out_of_range& e) {
    error_ = fmt::format("BAR2 read at window offset {:#x} (device address {:#x}): {}", off, window_ + off, e.what());
    return false;
  }
  *value = v;
  return true;
}

bool PcieFunction::bar_write(uint64_t addr, unsigned size, uint64_t value) {
  const int bar = decode(addr, size);
  if (bar < 0) {
    error_ = fmt::format("write of {} bytes at bus address {:#x}: no enabled BAR holds it", size, addr);
    return false;
  }
  const uint64_t off = addr - bar_base(bar);
  if (bar == int(regs::PCI_BAR_MMIO)) {
    if (!((size == 4 && off % 4 == 0) || (size == 8 && off % 8 == 0))) {
      error_ = fmt::format("BAR0 write of {} bytes at offset {:#x}: registers take 4 (or 8) aligned bytes", size, off);
      return false;
    }
    reg_write(uint32_t(off), uint32_t(value));
    if (size == 8) reg_write(uint32_t(off + 4), uint32_t(value >> 32));
    return true;
  }
  if (size == 0 || size > 8) {
    error_ = fmt::format("BAR2 write of {} bytes", size);
    return false;
  }
  try {
    device_.write_mem(window_ + off, &value, size);
  } catch (const std::out_of_range& e) {
    error_ = fmt::format("BAR2 write at window offset {:#x} (device address {:#x}): {}", off, window_ + off, e.what());
    return false;
  }
  return true;
}

}  // namespace trnsim::pcie
