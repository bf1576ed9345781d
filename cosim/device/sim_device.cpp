#include "cosim/device/sim_device.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "cosim/te/te_rtl_compute.h"
#include "model/core/chip.h"
#include "model/te/te_functional.h"

namespace trnsim::cosim {

std::optional<TeMode> parse_te_mode(std::string_view name) {
  if (name == "tlm") return TeMode::kTlm;
  if (name == "rtl") return TeMode::kRtl;
  if (name == "lockstep") return TeMode::kLockstep;
  return std::nullopt;
}

void claim_elaboration(const char* who) {
  static bool claimed = false;
  if (claimed) {
    throw std::logic_error(std::string(who) + ": SystemC elaborates once per process; create one device or "
                           "system per process");
  }
  claimed = true;
  setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
}

namespace {

// Core `core`'s Tensor Engine datapath: every core gets the backend `o.te` names (one verilated engine each for rtl
// and lockstep); the waveform, when asked for, is core 0's.
std::unique_ptr<model::TeCompute> make_te(const model::ChipConfig& c, const SimDeviceOptions& o, int core) {
  auto tlm = std::make_unique<model::TeFunctional>(c.te_rows, c.te_cols);
  if (o.te == TeMode::kTlm) return tlm;
  TeRtlOptions rtl_options;
  if (core == 0) {
    rtl_options.wave_path = o.wave_path;
    rtl_options.wave_from = o.wave_from;
    rtl_options.wave_to = o.wave_to;
    rtl_options.wave_scope = o.wave_scope;
  }
  // TeRtlError (a size this binary lacks, an FST that cannot be opened) propagates with the RTL's message.
  std::unique_ptr<model::TeCompute> rtl = std::make_unique<TeRtlCompute>(c.te_rows, c.te_cols, rtl_options);
  if (o.te == TeMode::kRtl) return rtl;
  return std::make_unique<TeLockstep>(std::move(tlm), std::move(rtl));
}
}  // namespace

SimDevice::SimDevice(const model::ChipConfig& config, const SimDeviceOptions& options) : options_(options) {
  // The datapaths first: a size this binary lacks fails before SystemC elaborates.
  std::vector<std::unique_ptr<model::TeCompute>> tes;
  for (int c = 0; c < std::max(1, config.cores); ++c) tes.push_back(make_te(config, options, c));
  claim_elaboration("SimDevice");
  chip_ = std::make_unique<model::Chip>("chip", config, [&](int c) { return std::move(tes.at(size_t(c))); });
  chip_->on_core_irq([] { sc_core::sc_pause(); });
  for (int c = 0; c < chip_->cores(); ++c) {
    model::NeuronCore& core = chip_->core(c);
    if (c == 0) core.control.set_observer(options.observer);  // the observer's events carry no core: core 0's
    if (options.check_uninit) {
      core.sbuf.set_fill(0xFF);  // NaN in FP32, BF16, FP16, FP8 E4M3 and E5M2
      core.psum.set_fill(0xFF);
    }
    core.control.enable_checks(options.check_hazards, options.check_uninit);
  }
  // Finish elaboration (the interconnect's multi-sockets bind their callbacks then), so that the host can reach
  // registers and memory before any simulated time passes.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

model::NeuronCore& SimDevice::core(int c) { return chip_->core(c); }

SimDevice::~SimDevice() = default;

void run_kernel(const sc_core::sc_time& duration) {
  try {
    sc_core::sc_start(duration);
  } catch (const sc_core::sc_report& r) {
    const char* process = r.get_process_name();
    throw std::runtime_error(fmt::format("{} (SystemC process {}, at {})", r.get_msg(),
                                         process && *process ? process : "?", sc_core::sc_time_stamp().to_string()));
  }
}

namespace {
void check_register_offset(const char* what, uint32_t offset) {
  if (uint64_t{offset} + regs::kRegBytes > regs::MMIO_SIZE) {
    throw std::out_of_range(fmt::format("register {} at offset 0x{:x}: outside the {} KiB register map", what, offset,
                                        regs::MMIO_SIZE / 1024));
  }
  if (offset % regs::kRegBytes != 0) {
    throw std::out_of_range(fmt::format("register {} at offset 0x{:x}: not {}-byte aligned", what, offset,
                                        regs::kRegBytes));
  }
}
}  // namespace

uint32_t SimDevice::read_reg(uint32_t offset) {
  check_register_offset("read", offset);
  return chip_->read_reg(offset);
}

void SimDevice::write_reg(uint32_t offset, uint32_t value) {
  check_register_offset("write", offset);
  chip_->write_reg(offset, value);
}

void SimDevice::write_mem(uint64_t device_addr, const void* data, std::size_t bytes) {
  chip_->write_mem(device_addr, data, bytes);
}

void SimDevice::read_mem(uint64_t device_addr, void* data, std::size_t bytes) {
  chip_->read_mem(device_addr, data, bytes);
}

bool SimDevice::wait_interrupt(uint64_t max_cycles) {
  if (chip_->irq()) return true;
  if (max_cycles == 0) return false;
  // Runs until the interrupt callback pauses the kernel, or the time is up. sc_start(0) would only run deltas,
  // so a start pending from a register write runs first (only when one is pending: SystemC warns, W571, of an
  // sc_start(0) with nothing to do, which the driver's sliced waits would otherwise hit every slice). Every core's
  // rising line pauses the kernel; one the chip does not pass on (CHIP_INT_ENABLE) lets it go on.
  if (sc_core::sc_pending_activity_at_current_time()) run_kernel(sc_core::SC_ZERO_TIME);
  const sc_core::sc_time deadline =
      sc_core::sc_time_stamp() + chip_->core(0).control.cycle_time() * double(max_cycles);
  while (!chip_->irq() && sc_core::sc_time_stamp() < deadline) run_kernel(deadline - sc_core::sc_time_stamp());
  return chip_->irq();
}

void SimDevice::attach_host_memory(model::HostMemory* memory) {
  for (int c = 0; c < chip_->cores(); ++c) chip_->core(c).host_port.attach(memory);
}

std::string SimDevice::te_name() const { return chip_->core(0).te.compute().name(); }
std::string SimDevice::fault_detail() const { return chip_->core(0).control.fault_detail(); }
uint64_t SimDevice::resident_bytes() const { return chip_->resident_bytes(); }

}  // namespace trnsim::cosim
