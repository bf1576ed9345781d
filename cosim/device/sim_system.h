// A simulated multi-chip system in one process: N chips (model/core/chip.h: the config's NeuronCores sharing an HBM;
// the SystemC model, TLM Tensor Engine datapath), the collective engines of their cores 0 joined by one
// CollectiveHub over the system's torus (docs/neuronlink.md "Collective instructions"), and one driver::Device per
// chip, so that a driver per chip (or per core) loads programs and data through the registers.
//
// SystemC elaborates once per process: a process holds one SimSystem or one SimDevice (std::logic_error otherwise).
// Simulated time passes only inside a chip device's wait_interrupt() or wait_all(), and it passes for every chip:
// a chip waiting for a peer lets the peer run.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <systemc>

#include "firmware/driver/device.h"
#include "model/collective/partition.h"
#include "model/collective/topology.h"
#include "model/collective/transport.h"
#include "model/config/chip_config.h"

namespace trnsim::model {
class Chip;
class NeuronCore;
namespace collective {
class CollectiveHub;
}
}  // namespace trnsim::model

namespace trnsim::cosim {

class SimSystem {
 public:
  /// The system of `config`: Topology::from_config (chips and torus_dims of trn2-16, trn2-64), every chip `config`.
  explicit SimSystem(const model::ChipConfig& config);
  /// Chips of `config` connected as `topology` (e.g. a 2- or 4-chip ring of tiny chips in tests); their collectives
  /// move data over the network `transport` makes (empty: the message-level link model; transport.h).
  SimSystem(const model::ChipConfig& config, const model::collective::Topology& topology,
            model::collective::TransportFactory transport = {});
  /// One rank's part of a system simulated by several processes (docs/distributed.md): elaborates only the chips
  /// `partition` makes local (their collectives meet every rank's through `exchange`, which outlives this). Time
  /// then passes only in run_windows(), which every rank calls with the same arguments in the same order.
  /// Throws std::invalid_argument for a hop latency below one TE cycle (the window, the lookahead, is one hop).
  SimSystem(const model::ChipConfig& config, const model::collective::Topology& topology,
            const model::collective::Partition& partition, model::collective::RankExchange& exchange);
  ~SimSystem();
  SimSystem(const SimSystem&) = delete;
  SimSystem& operator=(const SimSystem&) = delete;

  int chips() const { return int(chips_.size()); }
  /// Chip r's device (registers, memory, interrupt line; the chip's whole map). wait_interrupt() runs the whole
  /// system until this chip's line is high or the cycles (of this chip's TE clock) have passed. Distributed: local chips only, and their
  /// wait_interrupt() is run_windows(chip, ...) (std::out_of_range for another rank's chip).
  driver::Device& device(int chip);
  /// Distributed: runs every rank's chips, in windows of window() ending on multiples of it from time 0 (and at the
  /// deadline), until chip `chip`'s interrupt line is high (-1: every chip's) or `max_cycles` TE cycles have passed;
  /// the hubs sync() at the end of every window and once before the first. True when the line(s) are high. The
  /// hosts see the lines at window ends only, never between.
  bool run_windows(int chip, uint64_t max_cycles);
  /// Distributed: `fn` runs after every window's sync (e.g. progress lines); empty: nothing.
  void on_window(std::function<void()> fn) { on_window_ = std::move(fn); }
  /// The window of a distributed run: the shortest link latency (the hop latency) rounded down to whole TE cycles.
  sc_core::sc_time window() const { return window_; }
  bool distributed() const { return distributed_; }
  /// Chip `chip`'s core 0: the one whose collective engine takes part in the system's collectives.
  model::NeuronCore& core(int chip);
  model::Chip& chip(int chip) { return *chips_.at(size_t(chip)); }
  model::collective::CollectiveHub& hub() { return *hub_; }
  /// Runs the system until every chip's interrupt line is high (each chip done or stopped with an error) or
  /// `max_cycles` TE cycles have passed; true when every line is high.
  bool wait_all(uint64_t max_cycles);
  /// Host memory held by every chip's memories (touched pages), in bytes.
  uint64_t resident_bytes() const;

 private:
  class ChipDevice;
  bool run_until(const std::function<bool()>& done, uint64_t max_cycles);
  /// Elaborates chip c (its cores with the TLM Tensor Engine datapath).
  void add_chip(const model::ChipConfig& config, int c, bool pause_on_irq);
  std::vector<std::unique_ptr<model::Chip>> chips_;  ///< null for another rank's
  std::unique_ptr<model::collective::CollectiveHub> hub_;
  std::vector<std::unique_ptr<ChipDevice>> devices_;  ///< per chip; null for another rank's
  bool distributed_ = false;
  sc_core::sc_time window_;
  sc_core::sc_time cycle_;
  std::function<void()> on_window_;
};

}  // namespace trnsim::cosim
