// The NeuronLink flit and link formats live with the TLM model (model/noc/noc_flit.h), which both networks share;
// the cosim code names them in its own namespace.
#pragma once

#include "model/noc/noc_flit.h"
#include "model/noc/noc_ports.h"

namespace trnsim::cosim::noc {
using namespace trnsim::model::noc;  // NOLINT: Flit, Coord, NocError, NocPorts, ... as cosim::noc names
}  // namespace trnsim::cosim::noc
