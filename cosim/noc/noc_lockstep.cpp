// RTL/TLM lockstep of a NeuronLink network. See noc_lockstep.h.
#include "cosim/noc/noc_lockstep.h"

#include <fmt/core.h>

namespace trnsim::cosim::noc {

namespace {
std::string flit_str(const Flit& f) {
  return fmt::format("{{head {} tail {} vc {} data {:#018x}}}", int(f.head), int(f.tail), int(f.vc), f.data);
}
}  // namespace

model::noc::TlmOptions tlm_options_for(const NocNetwork& rtl) {
  const NocOptions& o = rtl.options();
  if (!o.node_router.empty()) throw NocError("lockstep needs one router build for every node (the TLM is uniform)");
  const RouterBuild& b = rtl.build(0);
  model::noc::TlmOptions t;
  t.ndim = o.ndim;
  t.size = o.size;
  t.torus = true;
  t.num_vc = b.num_vc;
  t.vc_groups = b.vc_groups;
  t.depth = b.depth;
  t.link_latency = o.link_latency;
  t.retry = b.retry;
  t.errors = o.errors;
  // The TLM side stays on one thread: it takes a tenth of the RTL's time, and a second pool's workers would spin
  // beside the RTL's threads.
  return t;
}

LockstepNetwork::LockstepNetwork(const NocOptions& rtl_options)
    : rtl_(std::make_unique<NocNetwork>(rtl_options)),
      tlm_(std::make_unique<model::noc::TlmNetwork>(tlm_options_for(*rtl_))) {
  if (rtl_->cycle() != tlm_->cycle()) {
    throw NocError(fmt::format("lockstep: link bring-up took {} cycles in the RTL, {} in the TLM", rtl_->cycle(),
                               tlm_->cycle()));
  }
  compare();
}

LockstepNetwork::~LockstepNetwork() = default;

void LockstepNetwork::drive_inject(int node, const Flit* flit) {
  rtl_->drive_inject(node, flit);
  tlm_->drive_inject(node, flit);
}

void LockstepNetwork::drive_eject_ready(int node, bool ready) {
  rtl_->drive_eject_ready(node, ready);
  tlm_->drive_eject_ready(node, ready);
}

void LockstepNetwork::step() {
  rtl_->step();
  tlm_->step();
  compare();
}

void LockstepNetwork::compare() {
  const uint64_t c = rtl_->cycle();
  for (int n = 0; n < nodes(); ++n) {
    if (rtl_->inj_ready(n) != tlm_->inj_ready(n)) {
      mismatch(fmt::format("lockstep mismatch at cycle {} router {}: inj_ready RTL {} TLM {}", c, node_name(n),
                           int(rtl_->inj_ready(n)), int(tlm_->inj_ready(n))));
    }
    const bool rv = rtl_->ej_valid(n), tv = tlm_->ej_valid(n);
    if (rv != tv || (rv && !(rtl_->ej_flit(n) == tlm_->ej_flit(n)))) {
      mismatch(fmt::format("lockstep mismatch at cycle {} router {}: ejection RTL {} TLM {}", c, node_name(n),
                           rv ? flit_str(rtl_->ej_flit(n)) : "idle", tv ? flit_str(tlm_->ej_flit(n)) : "idle"));
    }
    comparisons_ += 3;
  }
  if (rtl_->link_flits() != tlm_->link_flits()) {
    mismatch(fmt::format("lockstep mismatch at cycle {}: {} flits carried by links in the RTL so far, {} in the TLM",
                         c, rtl_->link_flits(), tlm_->link_flits()));
  }
  const LinkStats rs = rtl_->link_stats(), ts = tlm_->link_stats();
  if (rs != ts) {
    mismatch(fmt::format("lockstep mismatch at cycle {}: link layer so far: RTL {}; TLM {}", c, rs.str(), ts.str()));
  }
  comparisons_ += 2;
}

void LockstepNetwork::mismatch(const std::string& what) {
  throw NocError(fmt::format("{}\n  {}", what, rtl_->failure_rerun(rtl_->cycle(), "noc-lockstep")));
}

NocNetwork* rtl_network(NocPorts& net) {
  if (auto* rtl = dynamic_cast<NocNetwork*>(&net)) return rtl;
  if (auto* lockstep = dynamic_cast<LockstepNetwork*>(&net)) return &lockstep->rtl();
  return nullptr;
}

}  // namespace trnsim::cosim::noc
