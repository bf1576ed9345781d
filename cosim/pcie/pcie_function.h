// The device as a PCI function (docs/registers.md "The PCIe function", docs/linux-driver.md): a type-0
// configuration header with the IDs of the register map, two 32-bit memory BARs (BAR0: the registers; BAR2: a
// window onto device memory at PCIE_WIN) and legacy INTx, in front of any driver::Device. A transport (the QEMU
// multi-process proxy, qemu_server.h) hands it configuration and BAR accesses as a host bridge would.
//
// Facts from the PCI Local Bus Specification 3.0, section 6 (configuration space): the header layout; Command bits
// 1 (memory space), 2 (bus master) and 10 (interrupt disable); Status bit 3 (interrupt status); BAR sizing by
// writing all ones and reading back the size mask; Interrupt Pin 1 = INTA#.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "firmware/driver/device.h"

namespace trnsim::pcie {

class PcieFunction {
 public:
  /// `device` is not owned and outlives the function.
  explicit PcieFunction(driver::Device& device);

  /// Reads `len` (1, 2 or 4) bytes of configuration space at `offset`, little-endian; offsets past the 256-byte
  /// header read 0, and so does a length other than 1, 2 or 4.
  uint32_t config_read(uint32_t offset, int len);
  /// Writes them: only the bits the header defines as writable change (BARs: the address bits above the BAR's size).
  void config_write(uint32_t offset, uint32_t value, int len);

  /// A memory access of `size` bytes at bus address `addr` (a BAR's base + offset). Returns false, with the reason
  /// in last_error(), for an unsupported request: no enabled BAR holds it, a BAR0 access other than 4 bytes at a
  /// multiple of 4 or 8 at a multiple of 8, a BAR2 access the device does not map. (Reads of an unsupported request
  /// return all ones: the caller's job.)
  bool bar_read(uint64_t addr, unsigned size, uint64_t* value);
  bool bar_write(uint64_t addr, unsigned size, uint64_t value);

  /// The INTx level: the device's interrupt line (INT_STATUS & INT_ENABLE), unless Command.INTERRUPT_DISABLE.
  bool intx();
  /// Function reset (PCI reset, QEMU's device reset): the header and the window to their reset values, the device
  /// soft-reset (CTRL.SOFT_RESET) and its interrupt enables cleared.
  void reset();

  /// Device address BAR2 offset 0 reaches (PCIE_WIN_HI:LO).
  uint64_t window() const { return window_; }
  /// The base address the guest programmed into BAR `bar` (0 when none).
  uint32_t bar_base(int bar) const;
  bool memory_enabled() const;
  bool bus_master() const;
  const std::string& last_error() const { return error_; }

 private:
  /// Which BAR (0 or 2) holds [addr, addr + size), or -1.
  int decode(uint64_t addr, unsigned size) const;
  bool reg_read(uint32_t offset, uint32_t* value);
  void reg_write(uint32_t offset, uint32_t value);

  driver::Device& device_;
  std::array<uint8_t, 256> cfg_{};
  std::array<uint8_t, 256> writable_{};  ///< per byte: the bits a configuration write may change
  uint64_t window_ = 0;
  std::string error_;
};

}  // namespace trnsim::pcie
