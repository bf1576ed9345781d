#include "model/collective/fabric.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace trnsim::model::collective {

Fabric::Fabric(const Topology& topology)
    : topo_(topology), free_at_(size_t(topology.num_links()), 0.0), stats_(size_t(topology.num_links())),
      chips_(size_t(topology.chips())) {}

void Fabric::at(double t_ns, std::function<void()> fn) {
  events_.push({std::max(t_ns, now_), seq_++, std::move(fn)});
}

void Fabric::send(int src, int dst, uint64_t bytes, double t_ns, std::function<void(double)> on_delivered) {
  if (src < 0 || src >= topo_.chips() || dst < 0 || dst >= topo_.chips()) {
    throw std::out_of_range("fabric: send from chip " + std::to_string(src) + " to chip " + std::to_string(dst) +
                            " (" + std::to_string(topo_.chips()) + " chips)");
  }
  ++messages_;
  chips_[size_t(src)].messages += 1;
  chips_[size_t(src)].bytes += bytes;
  auto m = std::make_shared<Message>(Message{topo_.route(src, dst), bytes, std::move(on_delivered)});
  if (m->route.empty()) {
    at(t_ns, [m, this] { m->on_delivered(now_); });
    return;
  }
  at(t_ns, [m, this] { hop(m, 0, -1.0); });
}

void Fabric::send(int src, int dst, std::vector<uint8_t> payload, double t_ns, Delivered on_delivered) {
  const uint64_t bytes = payload.size();
  send(src, dst, bytes, t_ns, [p = std::move(payload), cb = std::move(on_delivered)](double t) mutable {
    cb(t, std::move(p));
  });
}

TransportStats Fabric::stats() const {
  TransportStats s;
  s.messages = messages_;
  for (const LinkStats& l : stats_) {
    s.link_bytes += l.bytes;
    s.max_link_busy_ns = std::max(s.max_link_busy_ns, l.busy_ns);
    s.links.push_back({l.bytes, l.busy_ns, 0});
  }
  s.chips = chips_;
  return s;
}

void Fabric::hop(std::shared_ptr<Message> m, size_t i, double prev_end) {
  const LinkId l = m->route[i];
  const size_t li = size_t(topo_.link_index(l));
  const double lat = topo_.link_latency_ns(l.dim);
  const double start = std::max(now_, free_at_[li]);
  const double occupancy = double(m->bytes) / topo_.gbytes_per_s(l.dim);  // GB/s = bytes per ns
  // The tail leaves this link no earlier than it arrived from the previous one.
  const double end = std::max(start + occupancy, prev_end < 0 ? 0.0 : prev_end + lat);
  free_at_[li] = end;
  LinkStats& s = stats_[li];
  ++s.messages;
  s.bytes += m->bytes;
  s.busy_ns += end - start;
  if (i + 1 == m->route.size()) {
    at(end + lat, [m, this] { m->on_delivered(now_); });
  } else {
    at(start + lat, [m, i, end, this] { hop(m, i + 1, end); });
  }
}

double Fabric::run() {
  while (!events_.empty()) {
    Event e = events_.top();
    events_.pop();
    now_ = e.t;
    e.fn();
  }
  return now_;
}

}  // namespace trnsim::model::collective
