// Fuzz target: flit streams into the NeuronLink router model (model/noc/noc_tlm.h, TlmNetwork), the network
// behind `trnsim noc` and the collectives.
//
// The input picks a network (dimensions, sizes, VCs, depth, link latency, torus or mesh; some illegal) and then,
// cycle by cycle (layout: tests/fuzz/corpus/README.md), what each local port injects (head/tail bits, VC number and data all from the input, so headers
// name any destination and packets may be left open or interleaved) and whether it takes ejected flits.
// Documented outcomes: NocError (bad options, or a flit stream the RTL's assertions would reject), otherwise the
// network runs. Oracles: flits are conserved every cycle (injected = ejected + in the network); when every packet
// a port sent is closed (its tail injected), the network drains empty within a bound once injection stops and
// every port ejects (dimension-order routing with dateline VCs is deadlock-free: docs/neuronlink.md).
// Link faults: a hash of the whole input (so the layout stays as it was) turns on bit errors (BER up to 1e-3) and
// lost flits (up to 1e-3) on three inputs in four; the link-level retry must keep both oracles true (a link going
// down is a NocError, a documented outcome, and practically never happens at these rates).
#include <map>
#include <memory>
#include <utility>

#include "model/noc/noc_tlm.h"
#include "tests/fuzz/fuzz_support.h"

using namespace trnsim;
using model::noc::Flit;
using model::noc::NocError;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  model::noc::TlmOptions o;
  o.ndim = int(in.below(3)) + 1;
  for (int d = 0; d < 3; ++d) o.size[size_t(d)] = d < o.ndim ? int(in.below(d < 2 ? 5 : 3)) : 1;
  o.torus = in.below(2);
  o.num_vc = int(in.below(9));
  o.vc_groups = int(in.below(2)) + 1;
  o.depth = int(in.below(7));
  o.link_latency = int(in.below(4));
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the input
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  static constexpr double kBer[4] = {0, 1e-5, 1e-4, 1e-3}, kDrop[4] = {0, 0, 1e-4, 1e-3};
  o.errors = model::noc::LinkErrors{kBer[h & 3], kDrop[h >> 2 & 3], h >> 8};
  std::unique_ptr<model::noc::TlmNetwork> net;
  try {
    net = std::make_unique<model::noc::TlmNetwork>(o);
  } catch (const NocError&) {
    return 0;
  }
  const int nodes = net->nodes();
  uint64_t injected = 0, ejected = 0;
  std::map<std::pair<int, int>, bool> open;  // (node, VC) -> a head was injected and its tail not yet
  try {
    // Per cycle, per node: u8 what (bit 0 inject, 1 head, 2 tail, 3 a well-formed header, 4 take ejected flits,
    // 7:5 VC), then for a well-formed header u8 destination node (modulo the count) and u8 message class, else u64
    // data.
    for (int c = 0; c < 2000 && !in.empty(); ++c) {
      for (int n = 0; n < nodes; ++n) {
        const uint8_t what = in.take<uint8_t>();
        Flit f;
        const bool inject = what & 1;
        f.head = what & 2;
        f.tail = what & 4;
        f.vc = uint8_t(what >> 5);
        if (f.head && (what & 8)) {
          const int dst = int(in.take<uint8_t>()) % nodes;
          f.data = model::noc::make_header(net->coord(dst), in.take<uint8_t>(), uint64_t(c));
        } else {
          f.data = in.take<uint64_t>();
        }
        net->drive_inject(n, inject ? &f : nullptr);
        if (inject && net->inj_ready(n)) {
          ++injected;
          if (f.head) open[{n, f.vc}] = true;
          if (f.tail) open[{n, f.vc}] = false;
        }
        const bool ready = what & 16;
        net->drive_eject_ready(n, ready);
        if (ready && net->ej_valid(n)) ++ejected;
      }
      net->step();
      if (injected != ejected + net->flits_in_network()) {
        fuzz::fail("noc: {}, {}: cycle {}: {} injected, {} ejected, {} in the network", o.str(), o.errors.str(),
                   net->cycle(), injected, ejected, net->flits_in_network());
      }
    }
    bool all_closed = true;
    for (const auto& [port, is_open] : open) all_closed = all_closed && !is_open;
    if (!all_closed) return 0;
    // Drain: the network's buffers, pipes and registers hold a few flits per VC per port; every hop takes a few
    // cycles. 100 cycles per flit in the network is far beyond what draining needs.
    // With faults, each link may wait out its replay timeout several times.
    const uint64_t bound = 1000 + 100 * net->flits_in_network() + (o.errors.any() ? 20000 : 0);
    for (int n = 0; n < nodes; ++n) net->drive_inject(n, nullptr);
    for (uint64_t c = 0; c < bound && net->flits_in_network() > 0; ++c) {
      for (int n = 0; n < nodes; ++n) {
        net->drive_eject_ready(n, true);
        if (net->ej_valid(n)) ++ejected;
      }
      net->step();
    }
    if (net->flits_in_network() != 0) {
      fuzz::fail("noc: {} flits left in the network {} cycles after injection stopped ({})",
                 net->flits_in_network(), bound, o.str() + ", " + o.errors.str());
    }
  } catch (const NocError&) {
  }
  return 0;
}
