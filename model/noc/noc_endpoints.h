// Message-level access to a NeuronLink network (any NocPorts: the TLM network, the verilated one, or both in
// lockstep), for endpoints such as DMA or collective engines: queue a message at its source router, step the
// network, and get a callback for every message that arrives.
//
// A message becomes one packet: a head flit (destination, message class, and the message id in the 50 endpoint
// bits) followed by one flit per 64-bit payload word; the last flit is the tail (a message without payload is a
// single-flit packet). Each source injects its queued messages in order, one flit per cycle when the router takes
// it; each destination's sink always takes ejected flits (the consumption assumption of the deadlock-freedom
// argument, docs/neuronlink.md).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "model/noc/noc_ports.h"

namespace trnsim::model::noc {

struct NocMessage {
  uint64_t id = 0;                 ///< assigned by inject(), unique per NocEndpoints
  int src = 0, dst = 0;            ///< router indices (NocPorts::node())
  unsigned mclass = 0;             ///< message class 0..3 (VC group mclass % VC_GROUPS)
  std::vector<uint64_t> payload;   ///< one flit per word
  uint64_t tag = 0;                ///< the caller's; kept beside the message, not sent
  uint64_t queued = 0;             ///< cycle inject() was called
  uint64_t injected = 0;           ///< cycle the head flit was taken by the source router
  uint64_t delivered = 0;          ///< cycle the tail flit was ejected at the destination
};

class NocEndpoints {
 public:
  using Delivered = std::function<void(const NocMessage&)>;

  /// `net` must outlive this object; nothing else may drive its local ports.
  explicit NocEndpoints(NocPorts& net);

  /// Queues a message at router `src` for router `dst` (src == dst is allowed: it loops through the router).
  /// Returns its id. Throws NocError for a router outside the network or a class above 3.
  uint64_t inject(int src, int dst, unsigned mclass, std::vector<uint64_t> payload, uint64_t tag = 0);
  /// Called once per delivered message, from step(), with its payload as received.
  void on_delivered(Delivered cb) { delivered_cb_ = std::move(cb); }
  /// Drives every local port for one cycle and steps the network. Throws NocError on a malformed arrival (a flit
  /// of an unknown message, a payload that differs from what was sent) or from the network.
  void step();
  /// Steps until no message is queued or in flight, at most `max_cycles`; returns false if that was not enough.
  bool drain(uint64_t max_cycles);
  /// Messages queued or in the network.
  uint64_t outstanding() const { return messages_.size(); }
  NocPorts& network() { return net_; }

 private:
  struct Source {
    std::deque<uint64_t> queue;  // message ids
    size_t next = 0;             // flit index of the front message
  };
  struct Sink {
    bool open = false;
    uint64_t id = 0;
    size_t next = 0;
  };
  NocPorts& net_;
  uint64_t next_id_ = 0;
  std::unordered_map<uint64_t, NocMessage> messages_;
  std::vector<Source> sources_;
  std::vector<std::vector<Sink>> sinks_;  // per router, per ejection VC
  Delivered delivered_cb_;
};

}  // namespace trnsim::model::noc
