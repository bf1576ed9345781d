// Message-level, event-driven model of the chip-to-chip links (docs/neuronlink.md "Collectives", "Link model").
//
// A message reserves every link of its dimension-order route in turn. On each link it waits until the link is
// free (first come, first served by head arrival: contention serialises), occupies it for bytes / bandwidth, and
// its head reaches the next chip one link latency after it started (cut-through: a long message is on several links
// at once). Its tail cannot leave a link before it arrived there. It is delivered one link latency after its tail
// left the last link. Time is in ns of simulated time. Between UltraServers the route is the sender's EFA link to
// the switch and the switch's to the receiver, each at the EFA bandwidth and latency.
//
// This is the fabric the collective engines run on; model/noc/ has the flit-level router model that is checked
// against the router RTL. This one trades flits, virtual channels and credits for speed: a 64 MB all-reduce on 64
// chips is a few thousand messages.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include "model/collective/topology.h"
#include "model/collective/transport.h"

namespace trnsim::model::collective {

class Fabric final : public Transport {
 public:
  /// What one directed link carried.
  struct LinkStats {
    uint64_t messages = 0;
    uint64_t bytes = 0;
    double busy_ns = 0;  ///< time the link was reserved (sum of the messages' occupancy)
  };

  explicit Fabric(const Topology& topology);

  /// Runs `fn` at simulated time `t_ns` (>= now(); events at equal times run in the order they were scheduled).
  void at(double t_ns, std::function<void()> fn) override;
  /// Sends `bytes` from chip src to chip dst, its head leaving src at `t_ns` (>= now()); `on_delivered(t)` runs at
  /// the delivery time t. src == dst delivers at t_ns (no link). Throws std::out_of_range for a chip outside.
  void send(int src, int dst, uint64_t bytes, double t_ns, std::function<void(double)> on_delivered);
  /// Transport: the same timing for payload.size() bytes; the payload travels with the message.
  void send(int src, int dst, std::vector<uint8_t> payload, double t_ns, Delivered on_delivered) override;
  /// Runs events until none is left. Returns the time of the last one.
  double run() override;
  double now() const override { return now_; }
  /// Messages, bytes over links and the busiest link's reserved time (network figures: none).
  TransportStats stats() const override;

  const Topology& topology() const { return topo_; }
  const LinkStats& link_stats(const LinkId& l) const { return stats_[size_t(topo_.link_index(l))]; }
  uint64_t messages() const { return messages_; }

 private:
  struct Event {
    double t;
    uint64_t seq;
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
  };
  struct Message {
    std::vector<LinkId> route;
    uint64_t bytes;
    std::function<void(double)> on_delivered;
  };
  /// Hop `hop` of `m`: its head is at the link's sending end at now(); its tail left the previous link at prev_end.
  void hop(std::shared_ptr<Message> m, size_t hop, double prev_end);

  const Topology& topo_;
  std::vector<double> free_at_;  ///< per directed link: when its current reservation ends
  std::vector<LinkStats> stats_;
  std::vector<ChipTraffic> chips_;  ///< what each chip sent
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t seq_ = 0;
  uint64_t messages_ = 0;
  double now_ = 0;
};

}  // namespace trnsim::model::collective
