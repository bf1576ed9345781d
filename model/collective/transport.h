// What the collective engines need from the chip-to-chip network (docs/neuronlink.md "Collectives", "Transports"):
// a clock with scheduled callbacks, and messages whose payload bytes travel from one chip to another and are handed
// to the receiver as delivered. Two implementations:
//   Fabric        (fabric.h)         message-level, event-driven link model at the BRIEF's link figures;
//   NocTransport  (noc_transport.h)  packets of flits through a router network behind model::noc::NocPorts (the
//                                     C++ router model, the verilated routers, or both in lockstep).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/collective/topology.h"
#include "model/noc/noc_link.h"

namespace trnsim::model::collective {

/// Figures of the flit-level transports (all 0 on the message fabric).
struct NetworkFigures {
  uint64_t cycles = 0;              ///< router clock cycles the run took (the network's own clock)
  double ns_per_cycle = 0;          ///< the conversion used for simulated time (flit bytes / link GB/s)
  uint64_t packets = 0;             ///< packets delivered
  uint64_t flits = 0;               ///< flits delivered (head flits included)
  uint64_t link_flits = 0;          ///< flits carried by links (every hop counts)
  double mean_latency_cycles = 0;   ///< per packet, head injection to tail ejection
  uint64_t max_latency_cycles = 0;
  double host_seconds = 0;          ///< CPU seconds inside the network model's step()
  noc::LinkStats link;              ///< the link layer's counters over the run (replays, CRC errors, ...)
};

/// What one chip sent, and (router network only) what its router ejected.
struct ChipTraffic {
  uint64_t messages = 0;            ///< messages the chip sent
  uint64_t bytes = 0;               ///< their payload bytes
  uint64_t packets = 0;             ///< packets ejected at the chip (router network)
  uint64_t flits = 0;               ///< their flits, head flits included
  uint64_t latency_sum_cycles = 0;  ///< their head-injection-to-tail-ejection latencies, summed
  uint64_t latency_max_cycles = 0;
};

/// What one directed link carried.
struct LinkTraffic {
  uint64_t bytes = 0;   ///< payload bytes
  double busy_ns = 0;   ///< reserved (message fabric) or carrying flits (router network)
  uint64_t flits = 0;   ///< router network flits (0 on the message fabric)
};

/// What a transport carried.
struct TransportStats {
  uint64_t messages = 0;        ///< messages sent
  uint64_t link_bytes = 0;      ///< payload bytes summed over links (a 2-hop message counts twice)
  double max_link_busy_ns = 0;  ///< the busiest directed link's busy time
  NetworkFigures network;
  std::vector<ChipTraffic> chips;  ///< per chip (rank)
  std::vector<LinkTraffic> links;  ///< per directed link, Topology::link_index order
};

class Transport {
 public:
  /// Called at the delivery time (now() == t_ns) with the payload as it arrived.
  using Delivered = std::function<void(double t_ns, std::vector<uint8_t> payload)>;

  virtual ~Transport() = default;
  /// Runs `fn` at simulated time `t_ns` (clamped to now(); events at equal times run in the order scheduled).
  virtual void at(double t_ns, std::function<void()> fn) = 0;
  /// Sends `payload` from chip src to chip dst, leaving src at `t_ns` (>= now()). Throws std::out_of_range for a
  /// chip outside the system.
  virtual void send(int src, int dst, std::vector<uint8_t> payload, double t_ns, Delivered on_delivered) = 0;
  /// Runs until no event is scheduled and no message is in flight; returns the time of the last event (ns).
  virtual double run() = 0;
  /// Simulated time, ns.
  virtual double now() const = 0;
  virtual TransportStats stats() const = 0;
};

/// Makes a fresh transport for one collective (every run starts at time 0 on an idle network).
using TransportFactory = std::function<std::unique_ptr<Transport>(const Topology&)>;

}  // namespace trnsim::model::collective
