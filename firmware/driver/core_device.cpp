#include "firmware/driver/core_device.h"

#include <stdexcept>

#include <fmt/core.h>

#include "spec/trn_regs.h"

namespace trnsim::driver {

CoreDevice::CoreDevice(Device& chip, uint32_t core) : chip_(chip), core_(core) {
  const uint32_t cores = chip.read_reg(regs::CHIP_CORES);
  if (core >= cores || core >= regs::MAX_CORES) {
    throw std::out_of_range(fmt::format("core {}: the chip has {} (CHIP_CORES)", core, cores));
  }
}

uint32_t CoreDevice::reg(uint32_t offset) const {
  if (offset >= regs::CHIP_BASE) return offset;
  if (offset >= regs::CORE_STRIDE) {
    throw std::out_of_range(fmt::format("register offset 0x{:x}: past core {}'s block of 0x{:x} bytes", offset, core_,
                                        regs::CORE_STRIDE));
  }
  return core_ * regs::CORE_STRIDE + offset;
}

uint64_t CoreDevice::addr(uint64_t a) const {
  const uint64_t window = uint64_t{regs::CORE_MEM_STRIDE};
  for (const uint64_t base : {regs::SBUF_BASE, regs::PSUM_BASE}) {
    if (a >= base && a - base < window) return a + uint64_t{core_} * regs::CORE_MEM_STRIDE;
  }
  return a;
}

uint32_t CoreDevice::read_reg(uint32_t offset) { return chip_.read_reg(reg(offset)); }
void CoreDevice::write_reg(uint32_t offset, uint32_t value) { chip_.write_reg(reg(offset), value); }
void CoreDevice::write_mem(uint64_t device_addr, const void* data, std::size_t bytes) {
  chip_.write_mem(addr(device_addr), data, bytes);
}
void CoreDevice::read_mem(uint64_t device_addr, void* data, std::size_t bytes) {
  chip_.read_mem(addr(device_addr), data, bytes);
}

bool CoreDevice::wait_interrupt(uint64_t max_cycles) {
  chip_.write_reg(regs::CHIP_INT_ENABLE, 1u << core_);
  return chip_.wait_interrupt(max_cycles);
}

}  // namespace trnsim::driver
