// One NeuronCore of a chip as a driver::Device of its own, over the chip's Device (any backend): what a Driver for
// core c talks to (docs/driver.md, "Cores").
//
// Register offsets below regs::CORE_STRIDE are the core's (offset + c * CORE_STRIDE on the chip); offsets from
// regs::CHIP_BASE up are the chip's, passed on unchanged; the rest is outside the view (std::out_of_range). Device
// addresses in SBUF and PSUM are the core's (moved by c * CORE_MEM_STRIDE); HBM and host addresses are the chip's.
// wait_interrupt() waits for this core's interrupt only: it points CHIP_INT_ENABLE at the core first, so another
// core that finished (its interrupt still latched) does not end the wait. Views of several cores take turns in one
// host thread: start every core, then wait for each (Driver::start, Driver::wait).
#pragma once

#include <cstdint>

#include "firmware/driver/device.h"

namespace trnsim::driver {

class CoreDevice : public Device {
 public:
  /// Core `core` of the chip `chip` (which must outlive the view). std::out_of_range naming the count when the chip
  /// (CHIP_CORES) has no such core.
  CoreDevice(Device& chip, uint32_t core);

  uint32_t core() const { return core_; }
  Device& chip() const { return chip_; }

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override;
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override;
  bool wait_interrupt(uint64_t max_cycles) override;

 private:
  uint32_t reg(uint32_t offset) const;
  uint64_t addr(uint64_t device_addr) const;

  Device& chip_;
  uint32_t core_;
};

}  // namespace trnsim::driver
