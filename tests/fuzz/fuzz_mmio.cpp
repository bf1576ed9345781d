// Fuzz target: register and memory access sequences into the device model (cosim::SimDevice, the SystemC
// NeuronCore of `trnsim run`, config tiny, TLM Tensor Engine) through driver::Device, as a driver or a client of
// `trnsim serve` reaches it.
//
// The input is a list of operations (tests/fuzz/corpus/README.md has the byte layout): write a register of the map
// (or any offset), read one, write or read device memory (SBUF, PSUM, HBM, MMIO, host; in range or not), let the
// device run for up to 65,535 cycles (at most 8 times an input). Queue registers, a doorbell and instruction bytes written to HBM make the device run programs,
// well-formed or not. Documented outcomes: std::out_of_range for a memory access outside the mapped spaces;
// anything the device does not like it latches as an error (STATUS.ERROR with an ERR_CODE) or ignores (holes, RO
// registers); a register offset outside the map or unaligned is std::out_of_range too. Oracles: no other exception; a device that says ERROR names a defined ERR_CODE, one that says DONE
// or idle has none; every wait returns (the cycle bound). The device is reset (driver::reset_device) after
// every input, so inputs do not depend on each other.
#include <memory>
#include <stdexcept>
#include <vector>

#include "cosim/device/sim_device.h"
#include "firmware/driver/driver.h"
#include "firmware/driver/register_names.h"
#include "spec/trn_regs.h"
#include "tests/fuzz/fuzz_support.h"

using namespace trnsim;

namespace {

cosim::SimDevice& device() {
  static const std::unique_ptr<cosim::SimDevice> dev =
      std::make_unique<cosim::SimDevice>(model::chip_config("tiny"), cosim::SimDeviceOptions{});
  return *dev;
}

/// Every register offset of the map (blocks and arrays included), found once.
const std::vector<uint32_t>& register_offsets() {
  static const std::vector<uint32_t> offsets = [] {
    std::vector<uint32_t> v;
    for (uint32_t off = 0; off < regs::MMIO_SIZE; off += regs::kRegBytes) {
      if (!driver::register_name(off).empty()) v.push_back(off);
    }
    return v;
  }();
  return offsets;
}

/// u8 space (0 SBUF, 1 PSUM, 2 HBM, 3 MMIO, 4 host, otherwise any address), then u32 offset in the space, or u64
/// address for "any".
uint64_t take_address(fuzz::Reader& in) {
  static const uint64_t kBases[] = {regs::SBUF_BASE, regs::PSUM_BASE, regs::HBM_BASE, regs::MMIO_BASE,
                                    regs::HOST_BASE};
  const unsigned space = in.take<uint8_t>();
  return space < std::size(kBases) ? kBases[space] + in.take<uint32_t>() : in.take<uint64_t>();
}

void check_status(driver::Device& dev) {
  const uint32_t status = dev.read_reg(regs::STATUS);
  const uint32_t code = dev.read_reg(regs::ERR_CODE);
  if (status & regs::STATUS_ERROR_MASK) {
    if (code == 0 || regs::err_code_name(code) == "unknown") fuzz::fail("mmio: STATUS.ERROR with ERR_CODE {}", code);
  } else if (code != 0) {
    fuzz::fail("mmio: ERR_CODE {} ({}) without STATUS.ERROR", code, regs::err_code_name(code));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cosim::SimDevice& dev = device();
  const std::vector<uint32_t>& offsets = register_offsets();
  fuzz::Reader in(data, size);
  int waits = 0;
  while (!in.empty()) {
    switch (in.below(6)) {
      case 0: {  // u16 register index (in map order, modulo the count), u32 value
        const uint32_t off = offsets[in.take<uint16_t>() % offsets.size()];
        dev.write_reg(off, in.take<uint32_t>());
        break;
      }
      case 1: {  // u32 offset (any), u32 value; outside the map or unaligned: std::out_of_range (driver/device.h)
        const uint32_t off = in.take<uint32_t>();
        const uint32_t value = in.take<uint32_t>();
        const bool outside = uint64_t{off} + regs::kRegBytes > regs::MMIO_SIZE || off % regs::kRegBytes != 0;
        try {
          dev.write_reg(off, value);
          if (outside) fuzz::fail("mmio: a register write at offset {:#x} (unaligned or outside the map) was taken", off);
        } catch (const std::out_of_range& e) {
          if (!outside) fuzz::fail("mmio: a register write at offset {:#x} failed: {}", off, e.what());
        }
        break;
      }
      case 2:  // u16 register index
        dev.read_reg(offsets[in.take<uint16_t>() % offsets.size()]);
        break;
      case 3: {  // address, u16 byte count (1..4096), the bytes
        const uint64_t addr = take_address(in);
        std::vector<uint8_t> bytes = in.bytes(in.take<uint16_t>() % 4096 + 1);
        if (bytes.empty()) break;
        try {
          dev.write_mem(addr, bytes.data(), bytes.size());
        } catch (const std::out_of_range&) {
        }
        break;
      }
      case 4: {  // address, u16 byte count (1..4096)
        const uint64_t addr = take_address(in);
        std::vector<uint8_t> bytes(in.take<uint16_t>() % 4096 + 1);
        try {
          dev.read_mem(addr, bytes.data(), bytes.size());
        } catch (const std::out_of_range&) {
        }
        break;
      }
      case 5: {  // u16 cycles
        const uint16_t cycles = in.take<uint16_t>();
        if (++waits > 8) break;
        dev.wait_interrupt(cycles);
        check_status(dev);
        break;
      }
    }
  }
  check_status(dev);
  driver::reset_device(dev);
  return 0;
}
