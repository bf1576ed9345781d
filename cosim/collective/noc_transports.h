// The networks a CollectiveSystem can run its collectives on (docs/neuronlink.md "Collectives", "Transports"): the
// message-level Fabric, or NocTransport over the C++ router model, the verilated routers, or both in lockstep.
// Header-only; users link trn_model and trn_cosim_noc.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "cosim/noc/noc_lockstep.h"
#include "cosim/noc/noc_rtl.h"
#include "model/collective/noc_transport.h"
#include "model/noc/noc_tlm.h"

namespace trnsim::cosim::collective {

namespace mc = model::collective;

/// message: Fabric; tlm: the C++ router model; rtl: the verilated routers (2-D: build d2v2, 3-D: d3v4g2);
/// lockstep: both, every local port compared every cycle.
enum class FabricKind { kMessage, kTlm, kRtl, kLockstep };

inline const char* fabric_name(FabricKind k) {
  switch (k) {
    case FabricKind::kMessage: return "message";
    case FabricKind::kTlm: return "tlm";
    case FabricKind::kRtl: return "rtl";
    case FabricKind::kLockstep: return "lockstep";
  }
  return "?";
}

/// Throws std::invalid_argument for another name.
inline FabricKind fabric_kind(const std::string& name) {
  for (FabricKind k : {FabricKind::kMessage, FabricKind::kTlm, FabricKind::kRtl, FabricKind::kLockstep}) {
    if (name == fabric_name(k)) return k;
  }
  throw std::invalid_argument("fabric " + name + ": message, tlm, rtl or lockstep");
}

/// The router network of `kind` (not kMessage) with the topology's shape, `errors` injected on its links. Throws
/// std::invalid_argument for a shape the router network cannot have, model::noc::NocError if a network does not
/// come up or `errors` is out of range.
inline std::unique_ptr<model::noc::NocPorts> router_network(FabricKind kind, const mc::Topology& topology,
                                                             const model::noc::LinkErrors& errors = {}) {
  if (kind == FabricKind::kTlm) {
    model::noc::TlmOptions t = mc::tlm_options_for(topology);
    t.errors = errors;
    return std::make_unique<model::noc::TlmNetwork>(t);
  }
  const mc::NocShape shape = mc::noc_shape(topology);
  noc::NocOptions o;
  o.ndim = shape.ndim;
  o.size = shape.size;
  o.errors = errors;
  if (kind == FabricKind::kRtl) return std::make_unique<noc::NocNetwork>(o);
  if (kind == FabricKind::kLockstep) return std::make_unique<noc::LockstepNetwork>(o);
  throw std::invalid_argument("the message fabric is not a router network");
}

/// A factory for CollectiveSystem::set_transport(): empty for kMessage (the Fabric), else a NocTransport on a
/// fresh router network per call, handed to `setup` (progress reports, test hooks) before use.
inline mc::TransportFactory transport_factory(FabricKind kind, mc::NocTransportOptions options = {},
                                              std::function<void(mc::NocTransport&)> setup = {}) {
  if (kind == FabricKind::kMessage) return {};
  return [kind, options, setup](const mc::Topology& t) -> std::unique_ptr<mc::Transport> {
    auto tr = std::make_unique<mc::NocTransport>(t, router_network(kind, t, options.link_errors), options);
    if (setup) setup(*tr);
    return tr;
  };
}

}  // namespace trnsim::cosim::collective
