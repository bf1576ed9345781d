#include "cosim/device/sim_system.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "cosim/device/sim_device.h"
#include "model/collective/collective_hub.h"
#include "model/core/chip.h"
#include "model/te/te_functional.h"

namespace trnsim::cosim {

using namespace sc_core;

/// One chip's view of the system behind the driver's Device interface.
class SimSystem::ChipDevice : public driver::Device {
 public:
  ChipDevice(SimSystem& system, int chip) : system_(system), model_(*system.chips_[size_t(chip)]), chip_(chip) {}

  uint32_t read_reg(uint32_t offset) override { return model_.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t value) override { model_.write_reg(offset, value); }
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override {
    model_.write_mem(device_addr, data, bytes);
  }
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override {
    model_.read_mem(device_addr, data, bytes);
  }
  bool wait_interrupt(uint64_t max_cycles) override {
    if (system_.distributed()) return system_.run_windows(chip_, max_cycles);
    return system_.run_until([this] { return model_.irq(); }, max_cycles);
  }

 private:
  SimSystem& system_;
  model::Chip& model_;
  int chip_;
};

SimSystem::SimSystem(const model::ChipConfig& config) : SimSystem(config, model::collective::Topology::from_config(config)) {}

void SimSystem::add_chip(const model::ChipConfig& config, int c, bool pause_on_irq) {
  chips_[size_t(c)] = std::make_unique<model::Chip>(fmt::format("chip{}", c).c_str(), config, [&](int) {
    return std::make_unique<model::TeFunctional>(config.te_rows, config.te_cols);
  });
  if (pause_on_irq) chips_[size_t(c)]->on_core_irq([] { sc_pause(); });
  for (int k = 1; k < chips_[size_t(c)]->cores(); ++k) chips_[size_t(c)]->core(k).cc.refuse_collectives(c);
  cycle_ = core(c).control.cycle_time();
}

model::NeuronCore& SimSystem::core(int chip) { return chips_.at(size_t(chip))->core(0); }

SimSystem::SimSystem(const model::ChipConfig& config, const model::collective::Topology& topology,
                     model::collective::TransportFactory transport) {
  claim_elaboration("SimSystem");
  std::vector<model::CoreControl*> controls;
  std::vector<model::Memory*> hbms;
  chips_.resize(size_t(topology.chips()));
  for (int c = 0; c < topology.chips(); ++c) {
    add_chip(config, c, /*pause_on_irq=*/true);
    controls.push_back(&core(c).control);
    hbms.push_back(&chips_[size_t(c)]->hbm);
  }
  hub_ = std::make_unique<model::collective::CollectiveHub>("hub", topology, controls, hbms);
  if (transport) hub_->system().set_transport(std::move(transport));
  for (int c = 0; c < topology.chips(); ++c) {
    core(c).cc.attach(hub_.get(), c);
    devices_.push_back(std::make_unique<ChipDevice>(*this, c));
  }
  // Finish elaboration so that the host reaches registers and memory before any simulated time passes.
  sc_start(SC_ZERO_TIME);
}

SimSystem::SimSystem(const model::ChipConfig& config, const model::collective::Topology& topology,
                     const model::collective::Partition& partition, model::collective::RankExchange& exchange)
    : distributed_(true) {
  claim_elaboration("SimSystem");
  const int n = topology.chips();
  std::vector<model::CoreControl*> controls(size_t(n), nullptr);
  std::vector<model::Memory*> hbms(size_t(n), nullptr);
  chips_.resize(size_t(n));
  devices_.resize(size_t(n));
  for (int c = partition.first_chip(partition.rank()); c < partition.end_chip(partition.rank()); ++c) {
    add_chip(config, c, /*pause_on_irq=*/false);  // the hosts look at window ends
    controls[size_t(c)] = &core(c).control;
    hbms[size_t(c)] = &chips_[size_t(c)]->hbm;
  }
  window_ = cycle_ * std::floor(topology.min_link_latency_ns() * 1e-9 / cycle_.to_seconds());
  if (window_ < cycle_) {
    throw std::invalid_argument(fmt::format("a distributed system needs link latencies of at least one TE cycle "
                                            "(its window, the lookahead); this one's shortest is {} ns",
                                            topology.min_link_latency_ns()));
  }
  hub_ = std::make_unique<model::collective::CollectiveHub>("hub", topology, controls, hbms, partition, exchange);
  for (int c = 0; c < n; ++c) {
    if (!chips_[size_t(c)]) continue;
    core(c).cc.attach(hub_.get(), c);
    devices_[size_t(c)] = std::make_unique<ChipDevice>(*this, c);
  }
  sc_start(SC_ZERO_TIME);
}

bool SimSystem::run_windows(int chip, uint64_t max_cycles) {
  if (!distributed_) throw std::logic_error("SimSystem::run_windows: not a distributed system");
  const auto done = [&] {
    for (int c = 0; c < chips(); ++c) {
      if ((chip < 0 || c == chip) && !hub_->irq(c)) return false;
    }
    return true;
  };
  // What the hosts' register writes started runs first; the hubs then agree on it.
  if (sc_pending_activity_at_current_time()) run_kernel(SC_ZERO_TIME);
  hub_->sync();
  if (done() || max_cycles == 0) return done();
  const sc_time deadline = sc_time_stamp() + cycle_ * double(max_cycles);
  while (sc_time_stamp() < deadline) {
    const sc_time now = sc_time_stamp();
    const sc_time next = std::min(window_ * (std::floor(now / window_) + 1), deadline);
    run_kernel(next - now);
    hub_->sync();
    if (on_window_) on_window_();
    if (done()) return true;
  }
  return done();
}

SimSystem::~SimSystem() = default;

driver::Device& SimSystem::device(int chip) {
  if (!devices_.at(size_t(chip))) throw std::out_of_range(fmt::format("chip {} belongs to another rank", chip));
  return *devices_[size_t(chip)];
}

bool SimSystem::run_until(const std::function<bool()>& done, uint64_t max_cycles) {
  if (done()) return true;
  if (max_cycles == 0) return false;
  if (sc_pending_activity_at_current_time()) run_kernel(SC_ZERO_TIME);  // starts pending from register writes first
  hub_->rethrow_failure();
  const sc_time deadline = sc_time_stamp() + cycle_ * double(max_cycles);
  // Every chip's interrupt pauses the kernel (and so does a failure the hub keeps); keep going until ours (or all)
  // is up or the time is over.
  while (!done() && sc_time_stamp() < deadline) {
    run_kernel(deadline - sc_time_stamp());
    hub_->rethrow_failure();
  }
  return done();
}

bool SimSystem::wait_all(uint64_t max_cycles) {
  if (distributed_) return run_windows(-1, max_cycles);
  return run_until(
      [this] {
        for (const auto& c : chips_) {
          if (!c->irq()) return false;
        }
        return true;
      },
      max_cycles);
}

uint64_t SimSystem::resident_bytes() const {
  uint64_t total = 0;
  for (const auto& c : chips_) {
    if (c) total += c->resident_bytes();
  }
  return total;
}

}  // namespace trnsim::cosim
