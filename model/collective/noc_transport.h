// The collectives' messages as packets of flits through a NeuronLink router network (docs/neuronlink.md
// "Collectives", "Transports"): any model::noc::NocPorts, i.e. the C++ router model (model/noc/noc_tlm.h), the
// verilated routers (cosim/noc/noc_rtl.h) or both in lockstep (cosim/noc/noc_lockstep.h), through
// model::noc::NocEndpoints.
//
// - Chip r is router r: Topology's rank x + X (y + Y z) and NocPorts' node index x + X (y + Y z) use the same
//   coordinate order (the constructor checks the sizes; tests check every coordinate).
// - A message of B bytes becomes ceil(B / (8 max_packet_words)) packets (at least one: an empty message is a lone
//   head flit), each a head flit and up to max_packet_words payload flits of 8 bytes, little-endian, the last one
//   zero-padded. The bound keeps wormhole switching fair: a packet holds its virtual channel on every link of its
//   path until its tail passes, so one long message would lock the other flows out of a shared link (the 2-D
//   build has one VC per dateline class) for its whole length; with 32-word packets another flow waits at most
//   33 cycles per packet, at a header cost of 1/33 of the flits.
// - Each source hands its messages' packets to the network round robin over its messages, at most
//   window_packets packets in the network per source, so messages sent together share the injection port.
// - The receiver places each packet's payload, as delivered, at the packet's offset in the message (packets may
//   arrive in any order; they are identified by the id the head flit carried) and the message is delivered when
//   its last packet's tail is ejected.
// - Time: the network runs in router cycles; simulated time is cycles x flit_bytes / link_gbytes_per_s (8 bytes
//   per cycle at 160 GB/s: 0.05 ns per cycle, the link bandwidth of trn2's x and y links). Every link of the
//   network has this one bandwidth, so the 64 GB/s Z links of trn2-64 are not modelled here (its busbw figures come
//   from the message fabric), nor is the BRIEF's 1.5 us per hop (a hop is the router's 3 cycles). The point of
//   this transport is that the data crosses the router RTL flit by flit.
// - Deadlock freedom: all messages use one message class (the collective's, class 0) and every sink always takes
//   its ejected flits (NocEndpoints' consumption assumption), which with dimension-order routing and dateline VCs
//   makes the network deadlock-free (docs/neuronlink.md "Why it cannot deadlock"); a watchdog still throws if no
//   packet is delivered for watchdog_cycles while some are outstanding.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "model/collective/transport.h"
#include "model/noc/noc_endpoints.h"
#include "model/noc/noc_ports.h"
#include "model/noc/noc_tlm.h"

namespace trnsim::model::collective {

struct NocTransportOptions {
  int max_packet_words = 32;        ///< payload flits per packet, 1..2^20 (the head flit comes on top)
  double flit_bytes = 8;            ///< payload bytes per flit (the flit's 64 data bits)
  double link_gbytes_per_s = 160;   ///< one flit per cycle on a link at this bandwidth sets the clock
  int window_packets = 8;           ///< packets per source in the network (queued or in flight) at once, >= 1
  uint64_t watchdog_cycles = 100000;  ///< cycles without a delivered packet while some are outstanding: NocError
  unsigned mclass = 0;              ///< message class of every packet (0..3)
  noc::LinkErrors link_errors;      ///< faults on the router network's links (router_network(), trnsim run --ber)
};

/// The network's shape for a topology: ndim = its dimension count, size per dimension (1 beyond). Throws
/// std::invalid_argument for a dimension outside 2..16 routers (the flit format's 4-bit coordinates).
struct NocShape {
  int ndim = 0;
  std::array<int, 3> size{1, 1, 1};
};
NocShape noc_shape(const Topology& topology);
/// The C++ router model with the parameters of the default RTL build for the dimension count (2-D: d2v2, 2 VCs
/// in 1 group; 3-D: d3v4g2, 4 VCs in 2 groups; 4-flit buffers, link latency 0).
noc::TlmOptions tlm_options_for(const Topology& topology);

class NocTransport final : public Transport {
 public:
  /// The network must be idle and have the topology's shape (throws std::invalid_argument otherwise). Time 0 is
  /// the network's cycle now.
  NocTransport(const Topology& topology, std::unique_ptr<noc::NocPorts> network, NocTransportOptions options = {});
  ~NocTransport() override;

  void at(double t_ns, std::function<void()> fn) override;
  void send(int src, int dst, std::vector<uint8_t> payload, double t_ns, Delivered on_delivered) override;
  /// Steps the network until every message is delivered and no event is left. Throws model::noc::NocError from
  /// the network (an RTL assertion, a TLM check, a lockstep difference, a flit that differs from what was sent)
  /// or from the watchdog.
  double run() override;
  double now() const override { return double(cycle_) * ns_per_cycle_; }
  TransportStats stats() const override;

  double ns_per_cycle() const { return ns_per_cycle_; }
  noc::NocPorts& network() { return *net_; }
  /// Calls `cb` from run() at most every `every_seconds` of host time (checked every 1024 cycles) with the figures
  /// so far and the packets not yet delivered.
  void on_progress(std::function<void(const NetworkFigures&, uint64_t outstanding_packets)> cb, double every_seconds);
  /// Test hook: sees (and may change) every packet's payload words as delivered, before the receiver uses them.
  void on_packet_delivered(std::function<void(int src, int dst, std::vector<uint64_t>& words)> hook) {
    hook_ = std::move(hook);
  }

 private:
  struct Message {
    int src = 0, dst = 0;
    std::vector<uint8_t> sent;      ///< the sender's bytes, until every packet is handed to the network
    std::vector<uint8_t> received;  ///< the receiver's buffer, filled from delivered packets only
    size_t packets = 0, handed = 0, arrived = 0;
    Delivered on_delivered;
  };
  struct Event {
    uint64_t cycle;
    uint64_t seq;
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.cycle != b.cycle ? a.cycle > b.cycle : a.seq > b.seq;
    }
  };
  void start(int src, int dst, std::vector<uint8_t> payload, Delivered on_delivered);
  void feed();
  void arrive(const noc::NocMessage& m);
  NetworkFigures figures() const;

  const Topology& topo_;
  NocTransportOptions o_;
  std::unique_ptr<noc::NocPorts> net_;
  noc::NocEndpoints endpoints_;
  double ns_per_cycle_;
  uint64_t cycle_ = 0, seq_ = 0, next_message_ = 0, last_delivery_ = 0;
  double host0_;
  uint64_t link_flits0_;
  noc::LinkStats link0_;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  std::unordered_map<uint64_t, Message> messages_;
  std::unordered_map<uint64_t, std::pair<uint64_t, size_t>> packets_;  ///< NocEndpoints id -> (message, index)
  std::vector<std::queue<uint64_t>> active_;                           ///< per source: messages with packets left
  std::vector<int> in_network_;                                        ///< per source: packets handed, not arrived
  std::vector<noc::NocMessage> arrived_;
  std::vector<uint64_t> link_flits_;                                   ///< per Topology link index
  std::vector<uint64_t> per_link_bytes_;                               ///< per Topology link index
  std::vector<ChipTraffic> chips_;                                     ///< per chip: sent, ejected
  uint64_t messages_sent_ = 0, link_bytes_ = 0, packets_out_ = 0;
  NetworkFigures fig_;
  uint64_t latency_sum_ = 0;
  std::function<void(const NetworkFigures&, uint64_t)> progress_;
  double progress_every_ = 0, progress_last_ = 0;
  std::function<void(int, int, std::vector<uint64_t>&)> hook_;
};

}  // namespace trnsim::model::collective
