// Traffic generators and the end-to-end checker for any NeuronLink network behind NocPorts (the verilated
// NocNetwork, the TLM network of model/noc, or both in lockstep).
//
// Every router's local port gets an open-loop source (Bernoulli packet arrivals at a given flit injection rate, an
// unbounded source queue) and a sink. Each packet carries its source, sequence number and length in the head flit
// and a keyed hash of (source, sequence, index) in every other flit, so the sink checks each packet arrives exactly
// once, at the right router, complete, with intact payload and its flits in order. A watchdog fails the run when
// nothing moves anywhere (no injection, ejection or link transfer) for watchdog_cycles cycles while packets are
// outstanding: a deadlock or a lost credit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cosim/noc/noc_rtl.h"

namespace trnsim::cosim::noc {

/// Destination patterns (Dally & Towles, "Principles and Practices of Interconnection Networks", ch. 3.2),
/// applied per coordinate so they work on any torus size.
enum class Pattern {
  kUniform,    ///< any other router, uniformly
  kTranspose,  ///< coordinate d := coordinate ndim-1-d (mod size); routers that map to themselves stay silent
  kBitComp,    ///< coordinate d := size - 1 - coordinate d; a router that maps to itself stays silent
  kHotspot,    ///< hotspot_fraction of the packets go to hotspot_node, the rest uniformly
  kNeighbor,   ///< coordinate d := coordinate d + 1 (mod size) in every dimension
};
std::string to_string(Pattern p);
/// "uniform", "transpose", "bitcomp", "hotspot", "neighbor"; throws NocError otherwise.
Pattern parse_pattern(const std::string& s);

struct TrafficOptions {
  Pattern pattern = Pattern::kUniform;
  double rate = 0.1;               ///< offered load per sending router, flits per cycle (0..1)
  int min_len = 1;                 ///< packet length in flits, uniform in [min_len, max_len], 1..15
  int max_len = 4;
  uint64_t seed = 1;
  uint64_t inject_cycles = 2000;   ///< sources create packets during this many cycles, then the network drains
  uint64_t watchdog_cycles = 1000; ///< no progress anywhere for this long = failure (NocError)
  uint64_t drain_limit = 200000;   ///< cycles allowed after injection stops before it is a failure
  int hotspot_node = 0;
  double hotspot_fraction = 0.25;
  double eject_stall_prob = 0.0;   ///< per router and cycle, probability the sink does not take a flit
  int num_classes = 4;             ///< message classes used, uniformly 0..num_classes-1
  /// Inject each (destination, class) on a fixed local VC and check that packets between a pair of routers are
  /// delivered in order: only meaningful when every router has one VC per (class group, dateline class).
  bool check_order = false;
  /// Keep one PacketRecord per delivered packet in TrafficResult::packets (lockstep and TLM-vs-RTL comparisons).
  bool record_packets = false;
  /// false: the watchdog, the drain limit and a NocError from the network (assertion, TLM check, lockstep mismatch)
  /// end the run with TrafficResult::failure set instead of throwing.
  bool throw_on_stall = true;
  /// Called every progress_cycles cycles (0: never) with the cycle count since the start and the result so far
  /// (counters only), for progress reports on long runs.
  uint64_t progress_cycles = 0;
  std::function<void(uint64_t, const struct TrafficResult&)> progress;
};

/// One delivered packet: who sent it, when it was created, injected (head taken) and delivered (tail ejected).
struct PacketRecord {
  int src = 0;
  uint64_t seq = 0;  ///< per source, in creation order
  int dst = 0;
  int len = 0;
  uint64_t created = 0, injected = 0, delivered = 0;  ///< cycles
  bool operator==(const PacketRecord& o) const {
    return src == o.src && seq == o.seq && dst == o.dst && len == o.len && created == o.created &&
           injected == o.injected && delivered == o.delivered;
  }
};

struct TrafficResult {
  uint64_t packets_created = 0;
  uint64_t packets_injected = 0;   ///< head flit taken by the source router
  uint64_t packets_delivered = 0;  ///< tail flit ejected, packet complete and intact
  uint64_t flits_injected = 0;
  uint64_t flits_delivered = 0;
  uint64_t lost = 0;               ///< created but never delivered (counted at the end)
  uint64_t duplicated = 0;         ///< a packet (or a flit of one) delivered again
  uint64_t corrupted = 0;          ///< wrong payload, length, head/tail flags or router
  uint64_t out_of_order = 0;       ///< flits of a packet out of order, or (check_order) packets of a pair
  std::vector<std::string> errors; ///< the first few violations, readable
  double avg_latency = 0;          ///< cycles from packet creation to tail ejection (source queueing included)
  double avg_network_latency = 0;  ///< cycles from head injection to tail ejection
  uint64_t p50_latency = 0, p99_latency = 0, max_latency = 0;
  double offered = 0;              ///< flits created per sending router per cycle
  double accepted = 0;             ///< flits delivered per sending router per cycle during the injection window
  uint64_t cycles = 0;             ///< cycles the run took, injection plus drain
  double sim_seconds = 0;          ///< time inside NocNetwork::step()
  double cycles_per_second = 0;
  std::vector<PacketRecord> packets;  ///< record_packets only: in delivery order
  std::string failure;                ///< throw_on_stall == false: why the run stopped early ("" = it drained)
  bool ok() const { return lost == 0 && duplicated == 0 && corrupted == 0 && out_of_order == 0; }
  std::string summary() const;     ///< one line of the figures
};

/// Runs the traffic on the network until every created packet is delivered. Violations are counted in the result
/// (and the first few described); throws NocError on the watchdog or the drain limit (unless throw_on_stall is
/// false), an RTL assertion, a TLM check, a lockstep mismatch or a link error.
TrafficResult run_traffic(NocPorts& net, const TrafficOptions& options);

/// The payload a flit `index` of packet (src, seq) carries (index >= 1; the head carries the header).
uint64_t flit_payload(int src, uint64_t seq, int index);

}  // namespace trnsim::cosim::noc
