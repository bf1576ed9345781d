#include "cosim/device/sim_device.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "cosim/te/te_rtl_compute.h"
#include "model/core/neuron_core.h"
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

std::unique_ptr<model::TeCompute> make_te(const model::ChipConfig& c, const SimDeviceOptions& o) {
  auto tlm = std::make_unique<model::TeFunctional>(c.te_rows, c.te_cols);
  if (o.te == TeMode::kTlm) return tlm;
  TeRtlOptions rtl_options;
  rtl_options.wave_path = o.wave_path;
  rtl_options.wave_from = o.wave_from;
  rtl_options.wave_to = o.wave_to;
  rtl_options.wave_scope = o.wave_scope;
  // TeRtlError (a size this binary lacks, an FST that cannot be opened) propagates with the RTL's message.
  std::unique_ptr<model::TeCompute> rtl = std::make_unique<TeRtlCompute>(c.te_rows, c.te_cols, rtl_options);
  if (o.te == TeMode::kRtl) return rtl;
  return std::make_unique<TeLockstep>(std::move(tlm), std::move(rtl));
}
}  // namespace

SimDevice::SimDevice(const model::ChipConfig& config, const SimDeviceOptions& options) : options_(options) {
  auto te = make_te(config, options);
  claim_elaboration("SimDevice");
  core_ = std::make_unique<model::NeuronCore>("core", config, std::move(te));
  core_->control.on_irq([] { sc_core::sc_pause(); });
  core_->control.set_observer(options.observer);
  if (options.check_uninit) {
    core_->sbuf.set_fill(0xFF);  // NaN in FP32, BF16, FP16, FP8 E4M3 and E5M2
    core_->psum.set_fill(0xFF);
  }
  core_->control.enable_checks(options.check_hazards, options.check_uninit);
  // Finish elaboration (the interconnect's multi-sockets bind their callbacks then), so that the host can reach
  // registers and memory before any simulated time passes.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

SimDevice::~SimDevice() = default;

uint32_t SimDevice::read_reg(uint32_t offset) {
  uint32_t v = 0;
  core_->host.read(regs::MMIO_BASE + offset, &v, 4);
  return v;
}

void SimDevice::write_reg(uint32_t offset, uint32_t value) { core_->host.write(regs::MMIO_BASE + offset, &value, 4); }

void SimDevice::write_mem(uint64_t device_addr, const void* data, std::size_t bytes) {
  core_->host.write(device_addr, data, bytes);
}

void SimDevice::read_mem(uint64_t device_addr, void* data, std::size_t bytes) {
  core_->host.read(device_addr, data, bytes);
}

bool SimDevice::wait_interrupt(uint64_t max_cycles) {
  if (core_->control.irq()) return true;
  if (max_cycles == 0) return false;
  // Runs until the interrupt callback pauses the kernel, or the time is up. sc_start(0) would only run deltas,
  // so a start pending from a register write runs first.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  if (!options_.progress) {
    if (!core_->control.irq()) sc_core::sc_start(core_->control.cycle_time() * double(max_cycles));
    return core_->control.irq();
  }
  // With progress reports: run in slices and report between them, at most every progress_interval_s.
  using clock = std::chrono::steady_clock;
  constexpr uint64_t kSliceCycles = 20000;
  auto last = clock::now();
  for (uint64_t left = max_cycles; left > 0 && !core_->control.irq();) {
    const uint64_t slice = std::min(left, kSliceCycles);
    sc_core::sc_start(core_->control.cycle_time() * double(slice));
    left -= slice;
    if (std::chrono::duration<double>(clock::now() - last).count() >= options_.progress_interval_s &&
        !core_->control.irq()) {
      options_.progress({core_->control.cycles(), te_busy_cycles(), te_macs()});
      last = clock::now();
    }
  }
  return core_->control.irq();
}

std::string SimDevice::te_name() const { return core_->te.compute().name(); }
std::string SimDevice::fault_detail() const { return core_->control.fault_detail(); }
uint64_t SimDevice::te_busy_cycles() const { return core_->te.busy_cycles(); }
uint64_t SimDevice::te_macs() const { return core_->te.macs(); }
UsageReport SimDevice::usage() const {
  const auto us = [](const sc_core::sc_time& t) { return t.to_seconds() * 1e6; };
  UsageReport r;
  r.elapsed_us = us(sc_core::sc_time_stamp());
  r.te_cycle_us = us(core_->control.cycle_time());
  const model::ChipConfig& c = core_->config();
  const auto queue = [&](const model::QueueEngine& e, const char* title, uint32_t mhz) {
    const auto& st = e.stats();
    EngineUsage u;
    u.name = std::string(isa::engine_name(e.engine()));
    u.title = title;
    u.clock_mhz = mhz;
    u.busy_us = us(st.active - st.sem_wait - st.dma_wait);
    u.sem_wait_us = us(st.sem_wait);
    u.dma_wait_us = us(st.dma_wait);
    u.count = st.retired;
    r.queues.push_back(u);
  };
  queue(core_->te, "Tensor Engine", c.te_clock_mhz);
  queue(core_->dma, "DMA queue", c.te_clock_mhz);
  queue(core_->act, "Scalar engine", c.scalar_clock_mhz);
  queue(core_->vec, "Vector engine", c.vector_clock_mhz);
  queue(core_->cc, "Collective engine", c.te_clock_mhz);
  const auto& busy = core_->dma.engine_busy();
  for (size_t e = 0; e < busy.size(); ++e) {
    EngineUsage u;
    u.name = "dma" + std::to_string(e);
    u.title = "DMA engine " + std::to_string(e);
    u.clock_mhz = c.te_clock_mhz;
    u.busy_us = us(busy[e]);
    u.count = core_->dma.engine_copies()[e];
    r.dma_engines.push_back(u);
  }
  return r;
}

uint64_t SimDevice::resident_bytes() const {
  return core_->hbm.resident_bytes() + core_->sbuf.resident_bytes() + core_->psum.resident_bytes();
}

}  // namespace trnsim::cosim
