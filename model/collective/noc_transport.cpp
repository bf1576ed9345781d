// Collective messages as packets through a NeuronLink router network. See noc_transport.h.
#include "model/collective/noc_transport.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

namespace trnsim::model::collective {
namespace {

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

NocShape noc_shape(const Topology& topology) {
  NocShape s;
  s.ndim = topology.num_dims();
  for (int d = 0; d < s.ndim; ++d) {
    const int k = topology.dim(d);
    if (k < 2 || k > noc::kMaxSize) {
      throw std::invalid_argument(fmt::format("a router network needs 2..{} routers per dimension, dimension {} of "
                                              "this system has {}", noc::kMaxSize, d, k));
    }
    s.size[size_t(d)] = k;
  }
  return s;
}

noc::TlmOptions tlm_options_for(const Topology& topology) {
  const NocShape s = noc_shape(topology);
  noc::TlmOptions o;
  o.ndim = s.ndim;
  o.size = s.size;
  o.num_vc = s.ndim == 3 ? 4 : 2;
  o.vc_groups = s.ndim == 3 ? 2 : 1;
  return o;
}

NocTransport::NocTransport(const Topology& topology, std::unique_ptr<noc::NocPorts> network,
                           NocTransportOptions options)
    : topo_(topology), o_(options), net_(std::move(network)), endpoints_(*net_),
      ns_per_cycle_(options.flit_bytes / options.link_gbytes_per_s),
      host0_(net_->step_seconds()), link_flits0_(net_->link_flits()), link0_(net_->link_stats()), active_(size_t(topology.chips())),
      in_network_(size_t(topology.chips()), 0), link_flits_(size_t(topology.num_links()), 0),
      per_link_bytes_(size_t(topology.num_links()), 0), chips_(size_t(topology.chips())) {
  const NocShape s = noc_shape(topology);
  for (int d = 0; d < noc::kMaxDim; ++d) {
    if (net_->size(d) != s.size[size_t(d)] || (d >= s.ndim) != (d >= net_->ndim())) {
      throw std::invalid_argument(fmt::format("the router network ({} routers, {}-D) does not have the shape of the "
                                              "{}-chip system", net_->nodes(), net_->ndim(), topology.chips()));
    }
  }
  if (o_.max_packet_words < 1 || o_.max_packet_words > (1 << 20) || o_.window_packets < 1 || o_.mclass > 3 ||
      !(o_.flit_bytes > 0) || !(o_.link_gbytes_per_s > 0)) {
    throw std::invalid_argument("NocTransportOptions: a field out of range");
  }
  endpoints_.on_delivered([this](const noc::NocMessage& m) { arrived_.push_back(m); });
}

NocTransport::~NocTransport() = default;

void NocTransport::at(double t_ns, std::function<void()> fn) {
  const auto c = uint64_t(std::max(0.0, std::ceil(t_ns / ns_per_cycle_ - 1e-9)));
  events_.push({std::max(c, cycle_), seq_++, std::move(fn)});
}

void NocTransport::send(int src, int dst, std::vector<uint8_t> payload, double t_ns, Delivered on_delivered) {
  if (src < 0 || src >= topo_.chips() || dst < 0 || dst >= topo_.chips()) {
    throw std::out_of_range(fmt::format("router network: send from chip {} to chip {} ({} chips)", src, dst,
                                        topo_.chips()));
  }
  if (t_ns <= now()) {
    start(src, dst, std::move(payload), std::move(on_delivered));
    return;
  }
  auto p = std::make_shared<std::vector<uint8_t>>(std::move(payload));
  at(t_ns, [this, src, dst, p, cb = std::move(on_delivered)]() mutable { start(src, dst, std::move(*p), cb); });
}

void NocTransport::start(int src, int dst, std::vector<uint8_t> payload, Delivered on_delivered) {
  const uint64_t packet_bytes = uint64_t(o_.max_packet_words) * 8;
  Message m;
  m.src = src;
  m.dst = dst;
  m.packets = std::max<size_t>(1, size_t((payload.size() + packet_bytes - 1) / packet_bytes));
  m.received.assign(payload.size(), 0);
  m.sent = std::move(payload);
  m.on_delivered = std::move(on_delivered);
  // Link figures from the dimension-order route the routers take (Topology::route is the same routing function, tie
  // split included; CollectiveNoc.TopologyRouteIsTheLinksTheRouterModelUses checks it pair by pair).
  const uint64_t flits = (m.sent.size() + 7) / 8 + m.packets;
  for (const LinkId& l : topo_.route(src, dst)) {
    link_flits_[size_t(topo_.link_index(l))] += flits;
    per_link_bytes_[size_t(topo_.link_index(l))] += m.sent.size();
    link_bytes_ += m.sent.size();
  }
  ++messages_sent_;
  chips_[size_t(src)].messages += 1;
  chips_[size_t(src)].bytes += m.sent.size();
  const uint64_t id = next_message_++;
  messages_.emplace(id, std::move(m));
  active_[size_t(src)].push(id);
}

void NocTransport::feed() {
  const uint64_t packet_bytes = uint64_t(o_.max_packet_words) * 8;
  for (size_t s = 0; s < active_.size(); ++s) {
    std::queue<uint64_t>& q = active_[s];
    while (!q.empty() && in_network_[s] < o_.window_packets) {
      const uint64_t id = q.front();
      q.pop();
      Message& m = messages_.at(id);
      const size_t i = m.handed++;
      const uint64_t lo = i * packet_bytes, hi = std::min<uint64_t>(m.sent.size(), lo + packet_bytes);
      std::vector<uint64_t> words(size_t((hi - lo + 7) / 8), 0);
      for (uint64_t b = lo; b < hi; ++b) words[size_t((b - lo) / 8)] |= uint64_t(m.sent[b]) << (8 * ((b - lo) % 8));
      packets_[endpoints_.inject(m.src, m.dst, o_.mclass, std::move(words))] = {id, i};
      ++in_network_[s];
      ++packets_out_;
      if (m.handed < m.packets) {
        q.push(id);  // round robin over this source's messages
      } else {
        m.sent = {};
      }
    }
  }
}

void NocTransport::arrive(const noc::NocMessage& nm) {
  const auto it = packets_.find(nm.id);
  if (it == packets_.end()) {
    throw noc::NocError(fmt::format("router network: router {} delivered packet {}, which this transport did not "
                                    "send", nm.dst, nm.id));
  }
  const auto [id, index] = it->second;
  packets_.erase(it);
  --packets_out_;
  Message& m = messages_.at(id);
  --in_network_[size_t(m.src)];
  std::vector<uint64_t> words = nm.payload;  // what the destination router ejected (NocEndpoints checks each flit)
  if (hook_) hook_(m.src, m.dst, words);
  const uint64_t lo = uint64_t(index) * uint64_t(o_.max_packet_words) * 8;
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint64_t b = 0; b < 8 && lo + w * 8 + b < m.received.size(); ++b) {
      m.received[size_t(lo + w * 8 + b)] = uint8_t(words[w] >> (8 * b));
    }
  }
  ++fig_.packets;
  fig_.flits += words.size() + 1;
  const uint64_t latency = nm.delivered - nm.injected;
  latency_sum_ += latency;
  fig_.max_latency_cycles = std::max(fig_.max_latency_cycles, latency);
  ChipTraffic& at_dst = chips_[size_t(m.dst)];
  ++at_dst.packets;
  at_dst.flits += words.size() + 1;
  at_dst.latency_sum_cycles += latency;
  at_dst.latency_max_cycles = std::max(at_dst.latency_max_cycles, latency);
  last_delivery_ = cycle_;
  if (++m.arrived < m.packets) return;
  auto data = std::make_shared<std::vector<uint8_t>>(std::move(m.received));
  Delivered cb = std::move(m.on_delivered);
  messages_.erase(id);
  events_.push({cycle_, seq_++, [this, data, cb = std::move(cb)] { cb(now(), std::move(*data)); }});
}

double NocTransport::run() {
  for (;;) {
    while (!events_.empty() && events_.top().cycle <= cycle_) {
      Event e = events_.top();
      events_.pop();
      e.fn();
    }
    feed();
    if (packets_out_ == 0) {
      if (events_.empty()) break;
      cycle_ = events_.top().cycle;  // the network is idle until then
      last_delivery_ = cycle_;
      continue;
    }
    endpoints_.step();
    ++cycle_;
    for (const noc::NocMessage& m : arrived_) arrive(m);
    arrived_.clear();
    if (cycle_ - last_delivery_ > o_.watchdog_cycles) {
      throw noc::NocError(fmt::format("router network: no packet delivered for {} cycles (cycle {}), {} packets "
                                      "outstanding", o_.watchdog_cycles, cycle_, packets_out_));
    }
    if (progress_ && cycle_ % 1024 == 0) {
      const double t = wall_seconds();
      if (t - progress_last_ >= progress_every_) {
        progress_last_ = t;
        progress_(figures(), packets_out_);
      }
    }
  }
  return now();
}

void NocTransport::on_progress(std::function<void(const NetworkFigures&, uint64_t)> cb, double every_seconds) {
  progress_ = std::move(cb);
  progress_every_ = every_seconds;
  progress_last_ = wall_seconds();
}

NetworkFigures NocTransport::figures() const {
  NetworkFigures f = fig_;
  f.cycles = cycle_;
  f.ns_per_cycle = ns_per_cycle_;
  f.link_flits = net_->link_flits() - link_flits0_;
  f.link = net_->link_stats().since(link0_);
  f.mean_latency_cycles = f.packets ? double(latency_sum_) / double(f.packets) : 0.0;
  f.host_seconds = net_->step_seconds() - host0_;
  return f;
}

TransportStats NocTransport::stats() const {
  TransportStats s;
  s.messages = messages_sent_;
  s.link_bytes = link_bytes_;
  s.max_link_busy_ns = double(*std::max_element(link_flits_.begin(), link_flits_.end())) * ns_per_cycle_;
  s.network = figures();
  for (size_t l = 0; l < link_flits_.size(); ++l) {
    s.links.push_back({per_link_bytes_[l], double(link_flits_[l]) * ns_per_cycle_, link_flits_[l]});
  }
  s.chips = chips_;
  return s;
}

}  // namespace trnsim::model::collective
