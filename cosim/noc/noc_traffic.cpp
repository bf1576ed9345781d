// Traffic generators and the end-to-end checker for a NocNetwork. See noc_traffic.h.
#include "cosim/noc/noc_traffic.h"
#include "cosim/noc/noc_lockstep.h"
#include "model/noc/noc_tlm.h"

#include <algorithm>
#include <array>
#include <random>
#include <unordered_map>

#include <fmt/core.h>

namespace trnsim::cosim::noc {

std::string to_string(Pattern p) {
  switch (p) {
    case Pattern::kUniform: return "uniform";
    case Pattern::kTranspose: return "transpose";
    case Pattern::kBitComp: return "bitcomp";
    case Pattern::kHotspot: return "hotspot";
    case Pattern::kNeighbor: return "neighbor";
  }
  return "?";
}

Pattern parse_pattern(const std::string& s) {
  for (Pattern p : {Pattern::kUniform, Pattern::kTranspose, Pattern::kBitComp, Pattern::kHotspot, Pattern::kNeighbor}) {
    if (to_string(p) == s) return p;
  }
  throw NocError(fmt::format("unknown traffic pattern '{}' (uniform, transpose, bitcomp, hotspot, neighbor)", s));
}

uint64_t flit_payload(int src, uint64_t seq, int index) {
  // splitmix64 of the flit's identity: any flit moved, duplicated into another packet or altered shows.
  uint64_t z = (uint64_t(unsigned(src)) << 48) ^ (seq << 8) ^ uint64_t(unsigned(index)) ^ 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string TrafficResult::summary() const {
  return fmt::format(
      "{} packets ({} flits) delivered of {} created; lost {}, duplicated {}, corrupted {}, out of order {}; "
      "latency avg {:.1f} (network {:.1f}), p50 {}, p99 {}, max {} cycles; offered {:.3f}, accepted {:.3f} "
      "flits/router/cycle; {} cycles in {:.2f} s = {:.0f} cycles/s",
      packets_delivered, flits_delivered, packets_created, lost, duplicated, corrupted, out_of_order, avg_latency,
      avg_network_latency, p50_latency, p99_latency, max_latency, offered, accepted, cycles, sim_seconds,
      cycles_per_second);
}

namespace {

// Head payload (the 50 endpoint bits of header_t): source router [49:38], length [37:34], sequence [33:0].
uint64_t head_payload(int src, int len, uint64_t seq) {
  return uint64_t(unsigned(src) & 0xFFF) << 38 | uint64_t(unsigned(len) & 0xF) << 34 | (seq & ((1ull << 34) - 1));
}

// kArriving: the head has been ejected, the tail not yet (a second head of the packet is a duplicate).
enum class PState : uint8_t { kQueued, kInFlight, kArriving, kDelivered, kBroken };

struct Packet {
  int dst = 0;
  uint8_t len = 1;
  uint8_t mclass = 0;
  uint8_t vc = 0;  // local injection VC
  PState state = PState::kQueued;
  uint64_t created = 0, injected = 0;
};

// One source's packets from the oldest one not finished yet (delivered or broken) on. Packets are injected in
// the order they were created, so the ones waiting at the source are those from `next_inject` on. Older packets
// need no record (a head flit naming one is a duplicate), so the memory stays bounded by what is outstanding, not
// by the length of the run.
struct Source {
  // Packets base .. end - 1, packet q at ring[q mod ring.size()] (a power of two, doubled when full).
  std::vector<Packet> ring;
  size_t mask = 0;  // ring.size() - 1 (kept: the size is a division by sizeof(Packet))
  uint64_t base = 0, end = 0;
  uint64_t next_inject = 0;  // the packet at the front of the source queue (it may be partly injected)
  int next_flit = 0;         // index of its next flit
  uint64_t created() const { return end; }
  size_t live() const { return size_t(end - base); }
  bool waiting() const { return next_inject < end; }
  Packet& at(uint64_t seq) { return ring[size_t(seq) & mask]; }
  const Packet& at(uint64_t seq) const { return ring[size_t(seq) & mask]; }
  Packet* find(uint64_t seq) { return seq >= base && seq < end ? &at(seq) : nullptr; }
  void push(const Packet& p) {
    if (live() == ring.size()) {
      std::vector<Packet> bigger(std::max<size_t>(16, 2 * ring.size()));
      for (uint64_t q = base; q < end; ++q) bigger[size_t(q) & (bigger.size() - 1)] = at(q);
      ring.swap(bigger);
      mask = ring.size() - 1;
    }
    at(end++) = p;
  }
  // Drops the finished packets at the front.
  void retire() {
    while (base < end && (at(base).state == PState::kDelivered || at(base).state == PState::kBroken)) ++base;
  }
};

struct SinkVc {
  bool open = false;
  bool ghost = false;  // swallowing the rest of a duplicated or broken packet
  int src = 0;
  uint64_t seq = 0;
  int next = 0;
};

// A Bernoulli draw with probability p from one 64-bit output of the engine: true iff x / 2^64 < p. This is
// std::bernoulli_distribution's result as libstdc++ computes it (generate_canonical of one 64-bit draw, rounded to
// double; a p of 1 always true), without its generic conversion loop (the harness draws one or two of these per
// router and cycle).
struct Coin {
  explicit Coin(double prob) : p(prob), below(first_at_or_above(prob * 0x1p64)) {}
  double p = 0;
  // x rounded to double is below p * 2^64 exactly when x < below (the rounding keeps the order, so those x are a
  // prefix of 0 .. 2^64 - 1): the test per draw is an integer compare, with the same results.
  uint64_t below = 0;
  bool operator()(std::mt19937_64& g) const {
    const uint64_t x = g();
    return p >= 1.0 || x < below;
  }
  // The least x whose double is >= limit (2^64 - 1 when there is none: then only p >= 1 is true for every x).
  static uint64_t first_at_or_above(double limit) {
    uint64_t lo = 0, hi = ~uint64_t{0};  // the answer is in [lo, hi]
    if (!(static_cast<double>(hi) >= limit)) return hi;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (static_cast<double>(mid) >= limit) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
};

// A uniform draw from lo..hi; no draw from the engine when lo == hi (a fixed packet length, one message class).
struct Uniform {
  Uniform(int lo, int hi) : dist(lo, hi) {}
  std::uniform_int_distribution<int> dist;
  int operator()(std::mt19937_64& g) { return dist.a() == dist.b() ? dist.a() : dist(g); }
};

// Net: NocPorts, or a final network class whose local ports inline (TlmNetwork), so that the calls per router and
// cycle cost no virtual call.
template <class Net>
class Runner {
 public:
  Runner(Net& net, const TrafficOptions& o)
      : net_(net), o_(o), rng_(o.seed), n_(net.nodes()), sources_(static_cast<size_t>(n_)),
        sinks_(static_cast<size_t>(n_)), hot_(o.hotspot_fraction) {
    if (o.min_len < 1 || o.max_len > 15 || o.min_len > o.max_len) {
      throw NocError(fmt::format("packet length {}..{} outside 1..15", o.min_len, o.max_len));
    }
    if (o.rate < 0 || o.rate > 1) throw NocError(fmt::format("injection rate {} outside 0..1", o.rate));
    if (o.num_classes < 1 || o.num_classes > 4) throw NocError("num_classes outside 1..4");
    if (n_ > 4096) throw NocError("more than 4096 routers");
    for (int s = 0; s < n_; ++s) coords_.push_back(net.coord(s));
    for (int s = 0; s < n_; ++s) {
      if (has_fixed_dest() && fixed_dest(s) == s) continue;
      senders_.push_back(s);
    }
  }

  TrafficResult run() {
    const double mean_len = (o_.min_len + o_.max_len) / 2.0;
    const Coin arrive{std::min(1.0, o_.rate / mean_len)};
    const Coin stall{o_.eject_stall_prob};
    Uniform len(o_.min_len, o_.max_len);
    Uniform cls(0, o_.num_classes - 1);

    const uint64_t start = net_.cycle();
    const uint64_t link_start = net_.link_flits();
    const double sim_start = net_.step_seconds();
    uint64_t last_progress = start, last_links = net_.link_flits();
    uint64_t window_flits = 0;

    for (;;) {
      const uint64_t now = net_.cycle();
      const bool injecting = now - start < o_.inject_cycles;
      bool progress = false;

      // New packets.
      if (injecting) {
        for (int s : senders_) {
          if (!arrive(rng_)) continue;
          Packet p;
          p.dst = dest(s);
          p.len = static_cast<uint8_t>(len(rng_));
          p.mclass = static_cast<uint8_t>(cls(rng_));
          p.created = now;
          const int nvc = net_.num_vc(s);
          Source& src = sources_[size_t(s)];
          p.vc = static_cast<uint8_t>(o_.check_order ? (unsigned(p.dst) * 4u + p.mclass) % unsigned(nvc)
                                                     : src.created() % uint64_t(nvc));
          src.push(p);
          offered_flits_ += p.len;
          ++r_.packets_created;
        }
      }

      // Router by router: injection (the front packet of the source, one flit per cycle), then ejection.
      for (int n = 0; n < n_; ++n) {
        progress = inject_front(n, now) || progress;
        const bool ready = stall.p <= 0 || !stall(rng_);
        net_.drive_eject_ready(n, ready);
        if (ready && net_.ej_valid(n)) {
          progress = true;
          if (injecting) ++window_flits;
          receive(n, net_.ej_flit(n), now);
        }
      }

      if (o_.throw_on_stall) {
        net_.step();
      } else {
        try {
          net_.step();
        } catch (const NocError& e) {
          r_.failure = e.what();
          break;
        }
      }

      if (net_.link_flits() != last_links) progress = true;
      last_links = net_.link_flits();
      if (progress) last_progress = net_.cycle();

      const bool outstanding = r_.packets_delivered + broken_ < r_.packets_created;
      if (!injecting && !outstanding) break;
      if (outstanding && net_.cycle() - last_progress >= o_.watchdog_cycles) {
        r_.failure = fmt::format("watchdog: nothing moved for {} cycles at cycle {} (deadlock or lost flits); {}",
                                 o_.watchdog_cycles, net_.cycle(), describe_outstanding());
      } else if (!injecting && net_.cycle() - start - o_.inject_cycles > o_.drain_limit) {
        r_.failure = fmt::format("drain limit: {} cycles after injection stopped; {}", o_.drain_limit,
                                 describe_outstanding());
      }
      if (!r_.failure.empty()) {
        // On the verilated routers: the re-run command with a waveform where the traffic stopped moving (watchdog)
        // or where the drain limit ran out.
        if (NocNetwork* rtl = rtl_network(net_)) {
          const uint64_t at = net_.cycle() - last_progress >= o_.watchdog_cycles ? last_progress : net_.cycle();
          r_.failure += "\n  " + rtl->failure_rerun(at, net_.backend() == "lockstep" ? "noc-lockstep" : "noc");
        }
        if (o_.throw_on_stall) throw NocError(r_.failure);
        break;
      }
      if (o_.progress && o_.progress_cycles > 0 && (net_.cycle() - start) % o_.progress_cycles == 0) {
        o_.progress(net_.cycle() - start, r_);
      }
    }

    r_.cycles = net_.cycle() - start;
    r_.sim_seconds = net_.step_seconds() - sim_start;
    r_.cycles_per_second = r_.sim_seconds > 0 ? double(r_.cycles) / r_.sim_seconds : 0;
    // A run stopped by the watchdog or the drain limit counts its undelivered packets as lost.
    r_.lost = r_.packets_created - r_.packets_delivered - broken_;
    const double window = double(o_.inject_cycles) * double(std::max<size_t>(senders_.size(), 1));
    r_.offered = double(offered_flits_) / window;
    r_.accepted = double(window_flits) / window;
    const uint64_t delivered = latency_count_;
    if (delivered != 0) {
      r_.avg_latency = double(latency_sum_) / double(delivered);
      r_.avg_network_latency = net_latency_sum_ / double(delivered);
      r_.p50_latency = nth_latency(delivered / 2);
      r_.p99_latency = nth_latency(std::min(delivered - 1, delivered * 99 / 100));
      r_.max_latency = nth_latency(delivered - 1);
    }
    (void)link_start;
    return r_;
  }

 private:
  bool has_fixed_dest() const { return o_.pattern == Pattern::kTranspose || o_.pattern == Pattern::kBitComp; }

  int fixed_dest(int s) const {
    const Coord c = net_.coord(s);
    const int nd = net_.ndim();
    Coord d;
    for (int i = 0; i < nd; ++i) {
      const int size = net_.size(i);
      d[i] = o_.pattern == Pattern::kTranspose ? c[nd - 1 - i] % size : size - 1 - c[i];
    }
    return net_.node(d);
  }

  int uniform_other(int s) {
    std::uniform_int_distribution<int> pick(0, n_ - 2);
    const int d = pick(rng_);
    return d >= s ? d + 1 : d;
  }

  int dest(int s) {
    switch (o_.pattern) {
      case Pattern::kUniform: return uniform_other(s);
      case Pattern::kTranspose:
      case Pattern::kBitComp: return fixed_dest(s);
      case Pattern::kHotspot: {
        if (s != o_.hotspot_node && hot_(rng_)) return o_.hotspot_node;
        return uniform_other(s);
      }
      case Pattern::kNeighbor: {
        Coord c = net_.coord(s);
        for (int i = 0; i < net_.ndim(); ++i) c[i] = (c[i] + 1) % net_.size(i);
        return net_.node(c);
      }
    }
    return 0;
  }

  // Drives source s's front flit into its router's injection port; true if the router takes it at the coming edge.
  bool inject_front(int s, uint64_t now) {
    Source& src = sources_[size_t(s)];
    if (!src.waiting()) {
      net_.drive_inject(s, nullptr);
      return false;
    }
    const uint64_t seq = src.next_inject;
    Packet& p = src.at(seq);
    Flit f;
    f.vc = p.vc;
    f.head = src.next_flit == 0;
    f.tail = src.next_flit == p.len - 1;
    f.data = f.head ? make_header(coords_[size_t(p.dst)], p.mclass, head_payload(s, p.len, seq))
                    : flit_payload(s, seq, src.next_flit);
    net_.drive_inject(s, &f);
    if (!net_.inj_ready(s)) return false;
    ++r_.flits_injected;
    if (f.head) {
      p.state = PState::kInFlight;
      p.injected = now;
      ++r_.packets_injected;
    }
    if (f.tail) {
      ++src.next_inject;
      src.next_flit = 0;
    } else {
      ++src.next_flit;
    }
    return true;
  }

  void violation(uint64_t& counter, const std::string& what) {
    ++counter;
    if (r_.errors.size() < 8) r_.errors.push_back(what);
  }

  void receive(int d, const Flit& f, uint64_t now) {
    if (f.vc >= kMaxVc) {
      violation(r_.corrupted, fmt::format("router {}: ejected flit on VC {}", net_.node_name(d), f.vc));
      return;
    }
    SinkVc& sv = sinks_[size_t(d)][f.vc];
    const auto at = [&] { return fmt::format("cycle {} router {} VC {}", now, net_.node_name(d), f.vc); };
    if (f.head) {
      if (sv.open && !sv.ghost) {
        violation(r_.out_of_order, fmt::format("{}: head flit while packet {}#{} is incomplete ({} flits)", at(),
                                               net_.node_name(sv.src), sv.seq, sv.next));
        mark_broken(sv.src, sv.seq);
      }
      const uint64_t pl = header_payload(f.data);
      const int src = int(pl >> 38 & 0xFFF), len = int(pl >> 34 & 0xF);
      const uint64_t seq = pl & ((1ull << 34) - 1);
      sv = SinkVc{true, false, src, seq, 1};
      if (src >= n_ || seq >= sources_[size_t(src)].created()) {
        violation(r_.corrupted, fmt::format("{}: head flit of a packet nobody sent (source {}, seq {})", at(), src, seq));
        sv.ghost = true;
      } else {
        Packet* const pp = sources_[size_t(src)].find(seq);  // null: finished (delivered or broken) long ago
        const auto id = [&] { return fmt::format("packet {}#{}", net_.node_name(src), seq); };
        if (!pp || pp->state == PState::kDelivered || pp->state == PState::kBroken || pp->state == PState::kArriving) {
          violation(r_.duplicated, fmt::format("{}: {} delivered again", at(), id()));
          sv.ghost = true;
        } else if (pp->dst != d || len != pp->len || header_mclass(f.data) != pp->mclass ||
                   header_dst(f.data) != coords_[size_t(d)]) {
          violation(r_.corrupted, fmt::format("{}: {} for router {} ({} flits, class {}) arrived with header "
                                              "dst {} length {} class {}",
                                              at(), id(), net_.node_name(pp->dst), pp->len, pp->mclass,
                                              header_dst(f.data).str(net_.ndim()), len, header_mclass(f.data)));
          mark_broken(src, seq);
          sv.ghost = true;
        } else {
          pp->state = PState::kArriving;
        }
      }
    } else if (!sv.open) {
      violation(r_.out_of_order, fmt::format("{}: body/tail flit with no packet in progress", at()));
      return;
    } else if (!sv.ghost) {
      const uint64_t want = flit_payload(sv.src, sv.seq, sv.next);
      const Packet& p = sources_[size_t(sv.src)].at(sv.seq);
      if (f.data != want) {
        violation(r_.corrupted, fmt::format("{}: packet {}#{} flit {}: payload {:#018x}, sent {:#018x}", at(),
                                            net_.node_name(sv.src), sv.seq, sv.next, f.data, want));
        mark_broken(sv.src, sv.seq);
        sv.ghost = true;
      } else if (sv.next >= p.len) {
        violation(r_.corrupted, fmt::format("{}: packet {}#{} has more than {} flits", at(), net_.node_name(sv.src),
                                            sv.seq, p.len));
        mark_broken(sv.src, sv.seq);
        sv.ghost = true;
      }
      ++sv.next;
    }
    ++r_.flits_delivered;
    if (!f.tail) return;
    // Tail: the packet is complete.
    sv.open = false;
    if (sv.ghost) return;
    Source& from = sources_[size_t(sv.src)];
    Packet& p = from.at(sv.seq);
    if (sv.next != p.len) {
      violation(r_.corrupted, fmt::format("cycle {} router {}: packet {}#{} ended after {} of {} flits", now,
                                          net_.node_name(d), net_.node_name(sv.src), sv.seq, sv.next, p.len));
      mark_broken(sv.src, sv.seq);
      return;
    }
    p.state = PState::kDelivered;
    ++r_.packets_delivered;
    count_latency(now - p.created);
    if (o_.record_packets) {
      r_.packets.push_back(PacketRecord{sv.src, sv.seq, d, p.len, p.created, p.injected, now});
    }
    net_latency_sum_ += double(now - p.injected);
    const uint8_t mclass = p.mclass;
    from.retire();  // p may be gone
    if (o_.check_order) {
      const uint64_t pair = (uint64_t(unsigned(sv.src)) << 20) | (uint64_t(unsigned(d)) << 4) | mclass;
      auto [it, fresh] = last_seq_.emplace(pair, sv.seq);
      if (!fresh) {
        if (sv.seq < it->second) {
          violation(r_.out_of_order, fmt::format("cycle {}: packet {}#{} to {} (class {}) delivered after #{}", now,
                                                 net_.node_name(sv.src), sv.seq, net_.node_name(d), mclass,
                                                 it->second));
        }
        it->second = std::max(it->second, sv.seq);
      }
    }
  }


  void mark_broken(int src, uint64_t seq) {
    Source& from = sources_[size_t(src)];
    Packet* p = from.find(seq);  // null: finished already
    if (p && p->state != PState::kBroken && p->state != PState::kDelivered) {
      p->state = PState::kBroken;
      ++broken_;
      from.retire();
    }
  }

  // Latencies below kLatencyBins cycles are counted per value, longer ones listed: exact order statistics at the
  // end without keeping one entry per packet.
  static constexpr uint64_t kLatencyBins = 4096;
  void count_latency(uint64_t l) {
    ++latency_count_;
    latency_sum_ += l;
    if (l < kLatencyBins) {
      if (l >= latency_bins_.size()) latency_bins_.resize(size_t(l) + 1);
      ++latency_bins_[size_t(l)];
    } else {
      latency_long_.push_back(l);
    }
  }
  // The k-th smallest latency counted (0-based, k < latency_count_).
  uint64_t nth_latency(uint64_t k) {
    for (size_t l = 0; l < latency_bins_.size(); ++l) {
      if (k < latency_bins_[l]) return l;
      k -= latency_bins_[l];
    }
    std::nth_element(latency_long_.begin(), latency_long_.begin() + std::ptrdiff_t(k), latency_long_.end());
    return latency_long_[size_t(k)];
  }

  std::string describe_outstanding() const {
    uint64_t queued = 0, in_flight = 0;
    std::string list;
    int shown = 0;
    for (int s = 0; s < n_; ++s) {
      const Source& from = sources_[size_t(s)];
      for (uint64_t q = from.base; q < from.end; ++q) {
        const Packet& p = from.at(q);
        if (p.state == PState::kQueued) ++queued;
        if (p.state != PState::kInFlight && p.state != PState::kArriving) continue;
        ++in_flight;
        if (shown++ < 5) {
          list += fmt::format("{}{}#{} -> {} ({} flits, VC {} at the source, injected at cycle {})",
                              list.empty() ? "" : "; ", net_.node_name(s), q, net_.node_name(p.dst), p.len, p.vc,
                              p.injected);
        }
      }
    }
    return fmt::format("{} packets delivered of {} created, {} still queued at their source, {} in the network{}{}",
                       r_.packets_delivered, r_.packets_created, queued, in_flight, list.empty() ? "" : ": ", list);
  }

  Net& net_;
  const TrafficOptions o_;
  std::mt19937_64 rng_;
  const int n_;
  std::vector<Source> sources_;
  std::vector<std::array<SinkVc, kMaxVc>> sinks_;
  std::vector<int> senders_;
  Coin hot_;  // a packet of the hotspot pattern goes to the hotspot router
  std::vector<Coord> coords_;  // router n's coordinates (net_.coord is a virtual call)
  std::unordered_map<uint64_t, uint64_t> last_seq_;
  uint64_t offered_flits_ = 0;  // flits of the packets created
  uint64_t latency_count_ = 0, latency_sum_ = 0;
  std::vector<uint64_t> latency_bins_;  // packets delivered with latency l (cycles), l < kLatencyBins
  std::vector<uint64_t> latency_long_;  // the longer latencies
  double net_latency_sum_ = 0;
  uint64_t broken_ = 0;
  TrafficResult r_;
};

}  // namespace

TrafficResult run_traffic(NocPorts& net, const TrafficOptions& options) {
  if (auto* tlm = dynamic_cast<model::noc::TlmNetwork*>(&net)) return Runner<model::noc::TlmNetwork>(*tlm, options).run();
  return Runner<NocPorts>(net, options).run();
}

}  // namespace trnsim::cosim::noc
