// The one abstract device interface of the trnsim driver (BRIEF section 6, tt-umd style; section 7).
//
// Every backend -- the in-process SystemC model, a model in another process, the RTL co-simulation, the unit-test
// mock -- is an adapter behind this interface. The driver reaches the device only through it: 32-bit MMIO registers,
// byte-addressed device memory and the interrupt line. Register offsets and device addresses are those of the
// generated register map (spec/trn_regs.h, docs/registers.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace trnsim::driver {

/// A simulated (or real) trnsim device.
///
/// Addresses: `offset` is a byte offset in the MMIO space (regs::ID, regs::queue_reg(q, ...), ...), 4-byte aligned.
/// `device_addr` is a 64-bit device address: regs::SBUF_BASE + partition * SBUF_PARTITION_BYTES + offset,
/// regs::PSUM_BASE + ..., or regs::HBM_BASE + HBM byte address.
/// Errors: backends throw std::out_of_range for a memory access that is not inside one mapped space and for a
/// register offset outside the map (offset + 4 > regs::MMIO_SIZE) or not 4-byte aligned; other failures
/// of the transport (a dead co-simulation process, ...) are std::runtime_error.
class Device {
 public:
  virtual ~Device() = default;

  /// Reads the 32-bit register at byte offset `offset` (a hole in the map reads 0).
  virtual uint32_t read_reg(uint32_t offset) = 0;
  /// Writes the 32-bit register at byte offset `offset` (a write to a hole or an RO register has no effect).
  virtual void write_reg(uint32_t offset, uint32_t value) = 0;
  /// Copies `bytes` bytes from host memory `data` to device memory at `device_addr`.
  virtual void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) = 0;
  /// Copies `bytes` bytes of device memory at `device_addr` to host memory `data`.
  virtual void read_mem(uint64_t device_addr, void* data, std::size_t bytes) = 0;
  /// Lets the device run until its interrupt line is high or `max_cycles` TE clock cycles have passed.
  /// Returns true if the interrupt line is high (it may already be high on entry: then no time passes).
  virtual bool wait_interrupt(uint64_t max_cycles) = 0;
};

}  // namespace trnsim::driver
