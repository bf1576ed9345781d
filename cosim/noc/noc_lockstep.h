// The verilated NeuronLink network and the TLM network (model/noc/noc_tlm.h) in lockstep: both get the same local
// port inputs every cycle, and after every cycle every router's injection ready, ejection valid and ejected flit,
// and the count of flits on links, must agree. The first difference throws NocError naming the cycle, the router
// and both values, so a run that completes proves the TLM model took and delivered the same flits in the same
// cycles as the RTL (hence the same packets with the same latency). The message ends with the command that re-runs
// the same network with a waveform of the cycles around the mismatch (NocOptions::rerun_command).
#pragma once

#include <memory>
#include <string>

#include "cosim/noc/noc_rtl.h"
#include "model/noc/noc_tlm.h"

namespace trnsim::cosim::noc {

/// TLM options with the same parameters as an RTL network: its router build's NUM_VC / VC_GROUPS / DEPTH (read
/// back from the routers), its size and link latency. Throws NocError for per-node builds (the TLM is uniform).
model::noc::TlmOptions tlm_options_for(const NocNetwork& rtl);

class LockstepNetwork final : public NocPorts {
 public:
  /// Builds both networks; their bring-up must end on the same cycle.
  explicit LockstepNetwork(const NocOptions& rtl_options);
  ~LockstepNetwork() override;

  NocNetwork& rtl() { return *rtl_; }
  model::noc::TlmNetwork& tlm() { return *tlm_; }

  int ndim() const override { return rtl_->ndim(); }
  int size(int d) const override { return rtl_->size(d); }
  int num_vc(int node) const override { return rtl_->num_vc(node); }
  bool inj_ready(int node) const override { return rtl_->inj_ready(node); }
  void drive_inject(int node, const Flit* flit) override;
  bool ej_valid(int node) const override { return rtl_->ej_valid(node); }
  Flit ej_flit(int node) const override { return rtl_->ej_flit(node); }
  void drive_eject_ready(int node, bool ready) override;
  /// Steps both networks and compares them; throws NocError on the first difference.
  void step() override;
  uint64_t cycle() const override { return rtl_->cycle(); }
  uint64_t link_flits() const override { return rtl_->link_flits(); }
  double step_seconds() const override { return rtl_->step_seconds() + tlm_->step_seconds(); }
  std::string backend() const override { return "lockstep"; }
  LinkStats link_stats() const override { return rtl_->link_stats(); }

  /// Port values compared so far (3 per router per cycle, plus the link flit count and the link-layer counters).
  uint64_t comparisons() const { return comparisons_; }

 private:
  void compare();
  /// Throws NocError: `what`, then the re-run command with a waveform around this cycle (NocNetwork::failure_rerun).
  [[noreturn]] void mismatch(const std::string& what);
  std::unique_ptr<NocNetwork> rtl_;
  std::unique_ptr<model::noc::TlmNetwork> tlm_;
  uint64_t comparisons_ = 0;
};

/// The verilated routers of `net`: itself (NocNetwork), those of a LockstepNetwork, or nullptr (the TLM).
NocNetwork* rtl_network(NocPorts& net);

}  // namespace trnsim::cosim::noc
