#include "model/collective/collective_system.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include <fmt/core.h>

#include "model/fp/fp_ops.h"

namespace trnsim::model::collective {

const char* op_name(Op op) {
  switch (op) {
    case Op::kAllReduce: return "all-reduce";
    case Op::kAllGather: return "all-gather";
    case Op::kReduceScatter: return "reduce-scatter";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) { return a == Algorithm::kRing ? "ring" : "rhd"; }

/// One step of one chip in one flow: send some blocks' parts to a peer, receive other blocks' parts from a peer,
/// then reduce them into (or copy them over) the local buffer. The next step starts when this one's data is in.
struct CollectiveSystem::Step {
  int send_to = 0;
  std::vector<int> send_blocks;
  int recv_from = 0;
  std::vector<int> recv_blocks;
  bool reduce = false;     ///< false: copy the received elements over the local ones
  bool own_first = false;  ///< reduce as own + received (true) or received + own (false)
};

/// steps[flow][chip]: what every chip does in every flow; parts[flow][block]: the element range of the block's
/// share in that flow.
struct CollectiveSystem::Plan {
  std::vector<std::vector<std::vector<Step>>> steps;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> parts;
};

CollectiveSystem::CollectiveSystem(const Topology& topology, uint64_t hbm_bytes)
    : topo_(topology), part_(topo_.chips(), 1, 0) {
  for (int c = 0; c < topo_.chips(); ++c) {
    owned_.push_back(std::make_unique<Memory>(("chip" + std::to_string(c) + "_hbm").c_str(), hbm_bytes));
    hbm_.push_back(owned_.back().get());
  }
}

CollectiveSystem::CollectiveSystem(const Topology& topology, std::vector<Memory*> hbms)
    : topo_(topology), hbm_(std::move(hbms)), part_(topo_.chips(), 1, 0) {
  if (hbm_.size() != size_t(topo_.chips())) {
    throw std::invalid_argument("CollectiveSystem: " + std::to_string(hbm_.size()) + " HBMs for " +
                                std::to_string(topo_.chips()) + " chips");
  }
  for (const Memory* m : hbm_) {
    if (m == nullptr || m->size() != hbm_.front()->size()) {
      throw std::invalid_argument("CollectiveSystem: every chip needs an HBM, all of one size");
    }
  }
}

CollectiveSystem::CollectiveSystem(const Topology& topology, std::vector<Memory*> hbms, const Partition& partition,
                                   RankExchange& exchange)
    : topo_(topology), hbm_(std::move(hbms)), part_(partition), exchange_(&exchange) {
  if (hbm_.size() != size_t(topo_.chips()) || partition.chips() != topo_.chips() ||
      partition.ranks() != exchange.ranks() || partition.rank() != exchange.rank()) {
    throw std::invalid_argument(fmt::format("CollectiveSystem: {} HBMs, a partition of {} chips over {} ranks and an "
                                            "exchange of {} ranks for {} chips", hbm_.size(), partition.chips(),
                                            partition.ranks(), exchange.ranks(), topo_.chips()));
  }
  const Memory* first = nullptr;
  for (int r = 0; r < topo_.chips(); ++r) {
    const Memory* m = hbm_[size_t(r)];
    if ((m != nullptr) != part_.local(r) || (m && first && m->size() != first->size())) {
      throw std::invalid_argument(fmt::format("CollectiveSystem: chip {} needs an HBM exactly when it is local, all "
                                              "of one size", r));
    }
    if (m && !first) first = m;
  }
}

void CollectiveSystem::set_transport(TransportFactory make) {
  if (exchange_ && make) {
    throw std::invalid_argument("CollectiveSystem: a distributed system runs on the message-level fabric only (the "
                                "router networks are not split across ranks yet)");
  }
  make_transport_ = std::move(make);
}

CollectiveSystem::CollectiveSystem(const ChipConfig& c) : CollectiveSystem(Topology::from_config(c), c.hbm_bytes) {}

CollectiveSystem::~CollectiveSystem() = default;

std::vector<RingFlow> CollectiveSystem::ring_flows() const {
  std::vector<double> gbps;
  for (int d = 0; d < topo_.num_dims(); ++d) gbps.push_back(topo_.gbytes_per_s(d));
  std::vector<RingFlow> flows = isa::ring_plan(topo_.dims(), gbps, ring_slices());
  // Several UltraServers: every flow ends its reduce-scatter with a ring over the pods, between the chips of the
  // same torus position, through EFA, and starts its all-gather there (docs/distributed.md "Larger systems").
  if (topo_.pods() > 1) {
    for (RingFlow& f : flows) f.dims.push_back(topo_.num_dims());
  }
  return flows;
}

CollectiveSystem::Plan CollectiveSystem::plan(const Call& call) const {
  const int n = topo_.chips();
  Plan p;
  std::vector<RingFlow> flows;
  int bits = 0;
  if (call.algorithm == Algorithm::kRing) {
    flows = ring_flows();
  } else {
    if (n & (n - 1)) {
      throw CollectiveError("algorithm rhd (recursive halving-doubling) needs a power-of-two chip count, this "
                            "system has " + std::to_string(n) + " chips; use ring");
    }
    while ((1 << bits) < n) ++bits;
    if (n > 1) flows.push_back(RingFlow{});  // one flow carrying everything
  }
  // Blocks and their parts per flow (docs: "Blocks and flows").
  uint64_t total_w = 0;
  for (const RingFlow& f : flows) total_w += f.weight;
  p.parts.assign(flows.size(), std::vector<std::pair<uint64_t, uint64_t>>(size_t(n)));
  for (int b = 0; b < n; ++b) {
    const uint64_t lo = uint64_t((unsigned __int128)call.count * unsigned(b) / unsigned(n));
    const uint64_t hi = uint64_t((unsigned __int128)call.count * unsigned(b + 1) / unsigned(n));
    uint64_t w = 0;
    for (size_t f = 0; f < flows.size(); ++f) {
      const uint64_t a = lo + uint64_t((unsigned __int128)(hi - lo) * w / total_w);
      w += flows[f].weight;
      const uint64_t e = lo + uint64_t((unsigned __int128)(hi - lo) * w / total_w);
      p.parts[f][size_t(b)] = {a, e};
    }
  }
  const bool rs = call.op != Op::kAllGather, ag = call.op != Op::kReduceScatter;
  p.steps.assign(flows.size(), std::vector<std::vector<Step>>(size_t(n)));
  for (size_t fi = 0; fi < flows.size(); ++fi) {
    for (int r = 0; r < n; ++r) {
      std::vector<Step>& steps = p.steps[fi][size_t(r)];
      if (call.algorithm == Algorithm::kRing) {
        const RingFlow& f = flows[fi];
        const int s = f.direction;
        // Blocks held at phase i whose coordinate in that phase's dimension is c.
        auto chunk = [&](size_t i, int c) {
          std::vector<int> blocks;
          for (int b = 0; b < n; ++b) {
            bool in = topo_.coord(b, f.dims[i]) == ((c % topo_.dim(f.dims[i])) + topo_.dim(f.dims[i])) %
                                                        topo_.dim(f.dims[i]);
            for (size_t j = 0; j < i && in; ++j) in = topo_.coord(b, f.dims[j]) == topo_.coord(r, f.dims[j]);
            if (in) blocks.push_back(b);
          }
          return blocks;
        };
        auto ring_phase = [&](size_t i, bool reduce) {
          const int d = f.dims[i], k = topo_.dim(d), pos = topo_.coord(r, d);
          for (int t = 0; t + 1 < k; ++t) {
            Step st;
            st.send_to = topo_.with_coord(r, d, pos + s);
            st.recv_from = topo_.with_coord(r, d, pos - s);
            st.reduce = reduce;
            // Reduce-scatter: chunk c starts at c + s and ends, fully reduced, at c. All-gather: c starts at c.
            st.send_blocks = chunk(i, pos - (t + (reduce ? 1 : 0)) * s);
            st.recv_blocks = chunk(i, pos - (t + (reduce ? 2 : 1)) * s);
            steps.push_back(std::move(st));
          }
        };
        if (rs) {
          for (size_t i = 0; i < f.dims.size(); ++i) ring_phase(i, true);
        }
        if (ag) {
          for (size_t i = f.dims.size(); i-- > 0;) ring_phase(i, false);
        }
      } else {
        // Recursive halving (bits 0, 1, ... of the rank) then recursive doubling (bits in reverse).
        auto held = [&](int upto_bit, int bit, int value) {  // blocks equal to r in bits < upto_bit, bit == value
          std::vector<int> blocks;
          const int mask = (1 << upto_bit) - 1;
          for (int b = 0; b < n; ++b) {
            if ((b & mask) == (r & mask) && ((b >> bit) & 1) == value) blocks.push_back(b);
          }
          return blocks;
        };
        if (rs) {
          for (int k = 0; k < bits; ++k) {
            const int mine = (r >> k) & 1;
            Step st;
            st.send_to = st.recv_from = r ^ (1 << k);
            st.reduce = true;
            st.own_first = mine == 0;  // the lower half of the pair first
            st.send_blocks = held(k, k, 1 - mine);
            st.recv_blocks = held(k, k, mine);
            steps.push_back(std::move(st));
          }
        }
        if (ag) {
          for (int k = bits; k-- > 0;) {
            const int mine = (r >> k) & 1;
            Step st;
            st.send_to = st.recv_from = r ^ (1 << k);
            st.send_blocks = held(k, k, mine);
            st.recv_blocks = held(k, k, 1 - mine);
            steps.push_back(std::move(st));
          }
        }
      }
    }
  }
  return p;
}

namespace {

/// a + b on the collective engine's adder: FP32 RNE; BF16 widened to FP32, added, rounded once to BF16.
inline uint32_t add_elem(ElemType t, uint32_t a, uint32_t b) {
  if (t == ElemType::kFp32) return fp::add(a, b);
  return fp::narrow(isa::Dtype::kBf16,
                    fp::add(fp::widen(isa::Dtype::kBf16, uint16_t(a)), fp::widen(isa::Dtype::kBf16, uint16_t(b))),
                    /*saturate=*/false);
}

}  // namespace

std::unique_ptr<Transport> CollectiveSystem::new_transport() const {
  if (make_transport_) return make_transport_(topo_);
  return std::make_unique<Fabric>(topo_);
}

void CollectiveSystem::read_step(const Call& call, const Plan& plan, size_t f, int r, const Step& st,
                                  std::vector<uint8_t>* payload) const {
  const uint64_t es = elem_bytes(call.type);
  uint64_t bytes = 0;
  for (int b : st.send_blocks) bytes += (plan.parts[f][size_t(b)].second - plan.parts[f][size_t(b)].first) * es;
  payload->resize(bytes);
  size_t off = 0;
  for (int b : st.send_blocks) {
    const auto [lo, hi] = plan.parts[f][size_t(b)];
    hbm_[size_t(r)]->read(call.hbm_addr + lo * es, payload->data() + off, (hi - lo) * es);
    off += (hi - lo) * es;
  }
}

void CollectiveSystem::apply_step(const Call& call, const Plan& plan, size_t f, int r, const Step& st,
                                  const uint8_t* data, size_t size) {
  const uint64_t es = elem_bytes(call.type);
  Memory& mem = *hbm_[size_t(r)];
  size_t off = 0;
  std::vector<uint8_t> local;
  for (int b : st.recv_blocks) {
    const auto [lo, hi] = plan.parts[f][size_t(b)];
    const uint64_t len = (hi - lo) * es, addr = call.hbm_addr + lo * es;
    if (off + len > size) {
      throw std::logic_error(fmt::format("collective: chip {} received {} bytes for a step of {} or more", r, size,
                                         off + len));
    }
    if (st.reduce) {
      local.resize(len);
      mem.read(addr, local.data(), len);
      for (uint64_t e = 0; e < hi - lo; ++e) {
        uint32_t own = 0, got = 0;
        std::memcpy(&own, &local[e * es], es);
        std::memcpy(&got, &data[off + e * es], es);
        const uint32_t sum = st.own_first ? add_elem(call.type, own, got) : add_elem(call.type, got, own);
        std::memcpy(&local[e * es], &sum, es);
      }
      mem.write(addr, local.data(), len);
    } else {
      mem.write(addr, data + off, len);
    }
    off += len;
  }
}

Result CollectiveSystem::execute(const Call& call, const Plan& plan) {
  // On the message-level fabric (its timing depends on message sizes only) the system is timed first, then the data
  // moves step by step (move_data): in process, so that a round's messages need not all be held at once, and
  // distributed, where every rank times the whole system and the ranks exchange the data. The router networks
  // carry the payload in their flits: data and timing together.
  const bool with_data = exchange_ == nullptr && make_transport_;
  std::unique_ptr<Transport> transport = with_data ? new_transport() : nullptr;
  Fabric* sizes = nullptr;
  if (!with_data) {
    transport = std::make_unique<Fabric>(topo_);
    sizes = static_cast<Fabric*>(transport.get());
  }
  Transport& fabric = *transport;
  const uint64_t es = elem_bytes(call.type);
  const size_t nf = plan.steps.size();
  const int n = topo_.chips();
  auto bytes_of = [&](size_t f, const std::vector<int>& blocks) {
    uint64_t e = 0;
    for (int b : blocks) e += plan.parts[f][size_t(b)].second - plan.parts[f][size_t(b)].first;
    return e * es;
  };
  // inbox[f][chip][step]: the data of that step, once delivered.
  std::vector<std::vector<std::vector<std::optional<std::vector<uint8_t>>>>> inbox(nf);
  std::vector<std::vector<size_t>> next(nf, std::vector<size_t>(size_t(n), 0));  // step each chip waits on
  double finish = 0;
  int longest = 0;
  for (size_t f = 0; f < nf; ++f) {
    inbox[f].resize(size_t(n));
    for (int r = 0; r < n; ++r) {
      inbox[f][size_t(r)].resize(plan.steps[f][size_t(r)].size());
      longest = std::max(longest, int(plan.steps[f][size_t(r)].size()));
    }
  }
  std::function<void(size_t, int)> start;
  // Step `next` of (f, r) has started; if its data is in, reduce or copy it and start the following step.
  std::function<void(size_t, int)> try_finish = [&](size_t f, int r) {
    const auto& steps = plan.steps[f][size_t(r)];
    const size_t i = next[f][size_t(r)];
    if (i >= steps.size() || !inbox[f][size_t(r)][i]) return;
    if (with_data) {
      const std::vector<uint8_t>& data = *inbox[f][size_t(r)][i];
      apply_step(call, plan, f, r, steps[i], data.data(), data.size());
    }
    inbox[f][size_t(r)][i].reset();
    finish = std::max(finish, fabric.now());
    ++next[f][size_t(r)];
    start(f, r);
  };
  start = [&](size_t f, int r) {
    const auto& steps = plan.steps[f][size_t(r)];
    const size_t i = next[f][size_t(r)];
    if (i >= steps.size()) return;
    const Step& st = steps[i];
    const int to = st.send_to;
    if (with_data) {
      // The engine reads the blocks to send when the step starts (they are final by then) and sends one message;
      // the receiver reduces or copies the payload as the transport delivered it.
      std::vector<uint8_t> payload;
      read_step(call, plan, f, r, st, &payload);
      fabric.send(r, to, std::move(payload), fabric.now(), [&, f, i, to](double, std::vector<uint8_t> data) {
        inbox[f][size_t(to)][i] = std::move(data);
        try_finish(f, to);
      });
    } else {
      sizes->send(r, to, bytes_of(f, st.send_blocks), fabric.now(), [&, f, i, to](double) {
        inbox[f][size_t(to)][i].emplace();
        try_finish(f, to);
      });
    }
    try_finish(f, r);
  };
  for (size_t f = 0; f < nf; ++f) {
    for (int r = 0; r < n; ++r) fabric.at(0.0, [&, f, r] { start(f, r); });
  }
  fabric.run();
  for (size_t f = 0; f < nf; ++f) {
    for (int r = 0; r < n; ++r) {
      if (next[f][size_t(r)] != plan.steps[f][size_t(r)].size()) {
        throw std::logic_error("collective: chip " + std::to_string(r) + " stopped at step " +
                               std::to_string(next[f][size_t(r)]) + " (a plan whose sends and receives do not match)");
      }
    }
  }
  if (!with_data) move_data(call, plan, longest);
  const TransportStats ts = fabric.stats();
  Result res;
  res.time_ns = finish;
  res.messages = ts.messages;
  res.steps = longest;
  res.link_bytes = ts.link_bytes;
  res.max_link_busy_ns = ts.max_link_busy_ns;
  res.network = ts.network;
  res.chips = ts.chips;
  res.links = ts.links;
  res.chip_steps.assign(size_t(n), 0);
  for (size_t f = 0; f < nf; ++f) {
    for (int r = 0; r < n; ++r) {
      res.chip_steps[size_t(r)] = std::max(res.chip_steps[size_t(r)], int(plan.steps[f][size_t(r)].size()));
    }
  }
  return res;
}

void CollectiveSystem::move_data(const Call& call, const Plan& plan, int rounds) {
  const size_t nf = plan.steps.size();
  const int n = topo_.chips();
  // Round i: every local chip sends step i of every flow (local receivers take it directly, the others' ranks get
  // it in one all-to-all), then applies the step-i message it received. Step i's send reads what step i - 1 left,
  // as in the timed run, so the bits are the same.
  //
  // Host memory: a round's messages together are a large part of every buffer (a ring over a torus dimension of 4
  // chips moves a quarter of it per step), so a message between two chips of this rank is applied as soon as it is
  // read, when that cannot change what the round still reads: within one (flow, step) a chip's received blocks are
  // not the blocks it sends (ring and halving-doubling), and the flows' parts of a block are disjoint. A round
  // where some chip would receive a block it also sends keeps every message until all are read.
  const auto sends_what_it_receives = [&](int i) {
    for (size_t f = 0; f < nf; ++f) {
      for (int r = 0; r < n; ++r) {
        const auto& steps = plan.steps[f][size_t(r)];
        if (size_t(i) >= steps.size()) continue;
        for (int b : steps[size_t(i)].recv_blocks) {
          const auto& sb = steps[size_t(i)].send_blocks;
          if (std::find(sb.begin(), sb.end(), b) != sb.end()) return true;
        }
      }
    }
    return false;
  };
  for (int i = 0; i < rounds; ++i) {
    const bool apply_at_once = !sends_what_it_receives(i);
    // (flow, receiving chip) -> its payload: a local sender's buffer, or a range of a received one.
    std::map<std::pair<size_t, int>, std::pair<const uint8_t*, size_t>> got;
    std::vector<std::vector<uint8_t>> local;  // payloads between chips of this rank
    if (!apply_at_once) local.reserve(nf * size_t(n));
    std::set<std::pair<size_t, int>> applied;
    std::vector<std::vector<uint8_t>> out(size_t(part_.ranks()));
    for (size_t f = 0; f < nf; ++f) {
      for (int r = 0; r < n; ++r) {
        const auto& steps = plan.steps[f][size_t(r)];
        if (!part_.local(r) || size_t(i) >= steps.size()) continue;
        const int to = steps[size_t(i)].send_to;
        std::vector<uint8_t> payload;
        read_step(call, plan, f, r, steps[size_t(i)], &payload);
        if (part_.local(to) && apply_at_once) {
          const auto& theirs = plan.steps[f][size_t(to)];
          if (size_t(i) >= theirs.size()) {
            throw std::logic_error(fmt::format("collective: chip {} flow {} step {}: a message for a step it does "
                                               "not have", to, f, i));
          }
          apply_step(call, plan, f, to, theirs[size_t(i)], payload.data(), payload.size());
          applied.insert({f, to});
          continue;
        }
        if (part_.local(to)) {
          local.push_back(std::move(payload));
          got[{f, to}] = {local.back().data(), local.back().size()};
          continue;
        }
        // Record: u32 flow, u32 receiving chip, u64 bytes, the bytes.
        ByteWriter w;
        w.put(uint32_t(f));
        w.put(uint32_t(to));
        w.put(uint64_t(payload.size()));
        std::vector<uint8_t>& buf = out[size_t(part_.owner(to))];
        buf.insert(buf.end(), w.bytes.begin(), w.bytes.end());
        buf.insert(buf.end(), payload.begin(), payload.end());
      }
    }
    const std::vector<std::vector<uint8_t>> in =
        exchange_ ? exchange_->all_to_all(std::move(out)) : std::vector<std::vector<uint8_t>>{};
    for (const std::vector<uint8_t>& buf : in) {
      ByteReader rd(buf);
      while (!rd.done()) {
        const auto f = rd.get<uint32_t>();
        const auto to = int(rd.get<uint32_t>());
        const auto bytes = rd.get<uint64_t>();
        got[{size_t(f), to}] = {rd.skip(bytes), bytes};
      }
    }
    for (size_t f = 0; f < nf; ++f) {
      for (int r = 0; r < n; ++r) {
        const auto& steps = plan.steps[f][size_t(r)];
        if (!part_.local(r) || size_t(i) >= steps.size() || applied.count({f, r})) continue;
        const auto it = got.find({f, r});
        if (it == got.end()) {
          throw std::logic_error(fmt::format("collective: chip {} flow {} step {}: no message arrived", r, f, i));
        }
        apply_step(call, plan, f, r, steps[size_t(i)], it->second.first, it->second.second);
      }
    }
  }
}

uint64_t CollectiveSystem::hbm_bytes() const {
  for (const Memory* m : hbm_) {
    if (m) return m->size();
  }
  return 0;
}

Result CollectiveSystem::run(const Call& call) {
  const uint64_t es = elem_bytes(call.type);
  const uint64_t size = hbm_bytes();
  if (call.count > size / es || call.hbm_addr > size - call.count * es) {
    throw CollectiveError("collective buffer of " + std::to_string(call.count) + " elements at HBM address " +
                          std::to_string(call.hbm_addr) + " ends past the end of HBM (" + std::to_string(size) +
                          " bytes)");
  }
  const Plan p = plan(call);  // checks the algorithm even for count 0
  if (call.count == 0) return {};
  return execute(call, p);
}

Result CollectiveSystem::send_recv(int src, uint64_t src_addr, int dst, uint64_t dst_addr, uint64_t bytes) {
  const int n = topo_.chips();
  const uint64_t size = hbm_bytes();
  if (src < 0 || src >= n || dst < 0 || dst >= n) {
    throw CollectiveError("send/recv between chips " + std::to_string(src) + " and " + std::to_string(dst) +
                          ": the system has chips 0.." + std::to_string(n - 1));
  }
  if (bytes > size || src_addr > size - bytes || dst_addr > size - bytes) {
    throw CollectiveError("send/recv of " + std::to_string(bytes) + " bytes: a range ends past the end of HBM (" +
                          std::to_string(size) + " bytes)");
  }
  Result res;
  std::unique_ptr<Transport> transport;
  if (!exchange_) {
    transport = new_transport();
    std::vector<uint8_t> data(bytes);
    hbm_[size_t(src)]->read(src_addr, data.data(), bytes);
    transport->send(src, dst, std::move(data), 0.0, [&](double t, std::vector<uint8_t> got) {
      hbm_[size_t(dst)]->write(dst_addr, got.data(), got.size());
      res.time_ns = t;
    });
    transport->run();
  } else {  // distributed: the time on the fabric, then the bytes from src's rank to dst's
    auto fabric = std::make_unique<Fabric>(topo_);
    fabric->send(src, dst, bytes, 0.0, [&](double t) { res.time_ns = t; });
    fabric->run();
    std::vector<uint8_t> data;
    if (part_.local(src)) {
      data.resize(bytes);
      hbm_[size_t(src)]->read(src_addr, data.data(), bytes);
    }
    if (part_.owner(src) != part_.owner(dst)) {
      std::vector<std::vector<uint8_t>> out(size_t(part_.ranks()));
      if (part_.local(src)) out[size_t(part_.owner(dst))] = std::move(data);
      std::vector<std::vector<uint8_t>> in = exchange_->all_to_all(std::move(out));
      if (part_.local(dst)) data = std::move(in[size_t(part_.owner(src))]);
    }
    if (part_.local(dst)) {
      if (data.size() != bytes) {
        throw std::logic_error(fmt::format("send/recv: chip {} received {} of {} bytes", dst, data.size(), bytes));
      }
      hbm_[size_t(dst)]->write(dst_addr, data.data(), bytes);
    }
    transport = std::move(fabric);
  }
  const TransportStats ts = transport->stats();
  res.messages = ts.messages;
  res.steps = 1;
  res.link_bytes = ts.link_bytes;
  res.max_link_busy_ns = ts.max_link_busy_ns;
  res.network = ts.network;
  res.chips = ts.chips;
  res.links = ts.links;
  res.chip_steps.assign(size_t(n), 0);
  res.chip_steps[size_t(src)] = res.chip_steps[size_t(dst)] = 1;
  return res;
}

}  // namespace trnsim::model::collective
