#include "cosim/device/sim_system.h"

#include <fmt/core.h>

#include "cosim/device/sim_device.h"
#include "model/collective/collective_hub.h"
#include "model/core/neuron_core.h"
#include "model/te/te_functional.h"

namespace trnsim::cosim {

using namespace sc_core;

/// One chip's view of the system behind the driver's Device interface.
class SimSystem::ChipDevice : public driver::Device {
 public:
  ChipDevice(SimSystem& system, int chip) : system_(system), core_(*system.cores_[size_t(chip)]) {}

  uint32_t read_reg(uint32_t offset) override {
    uint32_t v = 0;
    core_.host.read(regs::MMIO_BASE + offset, &v, 4);
    return v;
  }
  void write_reg(uint32_t offset, uint32_t value) override { core_.host.write(regs::MMIO_BASE + offset, &value, 4); }
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override {
    core_.host.write(device_addr, data, bytes);
  }
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override {
    core_.host.read(device_addr, data, bytes);
  }
  bool wait_interrupt(uint64_t max_cycles) override {
    return system_.run_until([this] { return core_.control.irq(); }, max_cycles);
  }

 private:
  SimSystem& system_;
  model::NeuronCore& core_;
};

SimSystem::SimSystem(const model::ChipConfig& config) : SimSystem(config, model::collective::Topology::from_config(config)) {}

SimSystem::SimSystem(const model::ChipConfig& config, const model::collective::Topology& topology,
                     model::collective::TransportFactory transport) {
  claim_elaboration("SimSystem");
  std::vector<model::CoreControl*> controls;
  std::vector<model::Memory*> hbms;
  for (int c = 0; c < topology.chips(); ++c) {
    cores_.push_back(std::make_unique<model::NeuronCore>(fmt::format("chip{}", c).c_str(), config,
                                                         std::make_unique<model::TeFunctional>(config.te_rows,
                                                                                               config.te_cols)));
    cores_.back()->control.on_irq([] { sc_pause(); });
    controls.push_back(&cores_.back()->control);
    hbms.push_back(&cores_.back()->hbm);
  }
  hub_ = std::make_unique<model::collective::CollectiveHub>("hub", topology, controls, hbms);
  if (transport) hub_->system().set_transport(std::move(transport));
  for (int c = 0; c < topology.chips(); ++c) {
    cores_[size_t(c)]->cc.attach(hub_.get(), c);
    devices_.push_back(std::make_unique<ChipDevice>(*this, c));
  }
  // Finish elaboration so that the host reaches registers and memory before any simulated time passes.
  sc_start(SC_ZERO_TIME);
}

SimSystem::~SimSystem() = default;

driver::Device& SimSystem::device(int chip) { return *devices_.at(size_t(chip)); }

bool SimSystem::run_until(const std::function<bool()>& done, uint64_t max_cycles) {
  if (done()) return true;
  if (max_cycles == 0) return false;
  if (sc_pending_activity_at_current_time()) run_kernel(SC_ZERO_TIME);  // starts pending from register writes first
  hub_->rethrow_failure();
  const sc_time deadline = sc_time_stamp() + cores_.front()->control.cycle_time() * double(max_cycles);
  // Every chip's interrupt pauses the kernel (and so does a failure the hub keeps); keep going until ours (or all)
  // is up or the time is over.
  while (!done() && sc_time_stamp() < deadline) {
    run_kernel(deadline - sc_time_stamp());
    hub_->rethrow_failure();
  }
  return done();
}

bool SimSystem::wait_all(uint64_t max_cycles) {
  return run_until(
      [this] {
        for (const auto& c : cores_) {
          if (!c->control.irq()) return false;
        }
        return true;
      },
      max_cycles);
}

uint64_t SimSystem::resident_bytes() const {
  uint64_t total = 0;
  for (const auto& c : cores_) total += c->hbm.resident_bytes() + c->sbuf.resident_bytes() + c->psum.resident_bytes();
  return total;
}

}  // namespace trnsim::cosim
