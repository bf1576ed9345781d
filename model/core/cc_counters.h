// The chip's place in its multi-chip system and the counters of its collective engine and output links: what the
// registers CHIP_ID, TORUS, HOP_LATENCY_NS, LINK_BW_MBPS, CC_*, NET_* and the LINK block hold (docs/registers.md
// "Collective counters"). The collective hub fills them in; CoreControl decodes the registers.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include <systemc>

namespace trnsim::model {

/// Links per chip: two per torus dimension (towards +1 and -1), at most three dimensions, then the EFA link to the
/// switch and the switch's back (systems of several UltraServers). Link l of dimension d and direction positive is
/// l = 2 * d + (positive ? 0 : 1); EFA out is 6, in is 7: the LINK block's index.
constexpr int kLinksPerChip = 8;

/// Where a chip sits in its system (a chip on its own: rank 0 of a 1-chip "torus" with no links).
struct SystemPlace {
  uint32_t chip = 0;                       ///< CHIP_ID: rank x + X * (y + Y * z)
  std::array<uint32_t, 3> torus{1, 0, 0};  ///< TORUS: chips per dimension, 0 past the torus's dimensions
  uint32_t hop_latency_ns = 0;             ///< HOP_LATENCY_NS
  std::array<uint32_t, 3> link_mbps{};     ///< LINK_BW_MBPS[d], MB/s, 0 past the torus's dimensions
  uint32_t pods = 1;                       ///< PODS: UltraServers joined by EFA
  uint32_t efa_mbps = 0;                   ///< EFA_BW_MBPS
  uint32_t efa_latency_ns = 0;             ///< EFA_LATENCY_NS
};

/// What one output link carried.
struct CcLinkCounters {
  sc_core::sc_time busy;  ///< reserved (message model) or carrying flits (router network)
  uint64_t bytes = 0;     ///< payload bytes
  uint64_t flits = 0;     ///< router network flits
};

/// What one chip's output links carried (index: see kLinksPerChip).
using CcLinks = std::array<CcLinkCounters, kLinksPerChip>;

/// Adds `more` to `links`, link by link.
inline void add_links(CcLinks& links, const CcLinks& more) {
  for (size_t l = 0; l < links.size(); ++l) {
    links[l].busy += more[l].busy;
    links[l].bytes += more[l].bytes;
    links[l].flits += more[l].flits;
  }
}

/// The collective engine's counters, or one completed collective's share of them (this chip's part).
struct CcCounters {
  uint64_t ops = 0;                  ///< collectives, sends and recvs completed
  sc_core::sc_time time;             ///< rendezvous to completion, summed
  uint64_t messages = 0, bytes = 0;  ///< messages this chip sent and their payload bytes
  uint32_t last_steps = 0;           ///< the last collective's longest step chain of this chip's flows
  uint64_t net_cycles = 0;           ///< router cycles the network ran
  uint64_t net_packets = 0, net_flits = 0;  ///< ejected at this chip
  uint64_t net_latency_sum = 0;      ///< router cycles, over the packets ejected here
  uint64_t net_latency_max = 0;
  uint64_t net_replays = 0, net_crc_errors = 0;  ///< link-level retry, the whole network

  /// Adds `one` (a completed collective's share): sums, the latency's maximum, and its steps as the last ones.
  void add(const CcCounters& one) {
    ops += one.ops;
    time += one.time;
    messages += one.messages;
    bytes += one.bytes;
    last_steps = one.last_steps;
    net_cycles += one.net_cycles;
    net_packets += one.net_packets;
    net_flits += one.net_flits;
    net_latency_sum += one.net_latency_sum;
    net_latency_max = std::max(net_latency_max, one.net_latency_max);
    net_replays += one.net_replays;
    net_crc_errors += one.net_crc_errors;
  }
};

}  // namespace trnsim::model
