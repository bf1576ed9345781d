#include "model/collective/collective_hub.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include <fmt/core.h>

namespace trnsim::model::collective {

using namespace sc_core;

namespace {
constexpr int kCc = static_cast<int>(isa::Engine::kCc);

bool is_p2p(isa::Opcode op) { return op == isa::Opcode::kSend || op == isa::Opcode::kRecv; }

Op op_of(isa::Opcode op) {
  return op == isa::Opcode::kAllGather ? Op::kAllGather
         : op == isa::Opcode::kReduceScatter ? Op::kReduceScatter
                                             : Op::kAllReduce;
}

/// Bytes an instruction's buffer covers, or nullopt when count x element size overflows.
std::optional<uint64_t> buffer_bytes(const isa::Instruction& in) {
  if (is_p2p(in.op)) return in.cc.count;
  const uint64_t es = isa::data_type_bytes(in.cc.dtype);
  if (in.cc.count > UINT64_MAX / es) return std::nullopt;
  return in.cc.count * es;
}
}  // namespace

/// What the waiting cc engine thread of a local chip gets: the end of its rendezvous, its fault or its share.
struct CollectiveHub::Ticket {
  bool finished = false;
  sc_time end;
  sc_event done;
  std::optional<Fault> fault;
  CcCounters share;
};

struct CollectiveHub::Waiter {
  int chip = 0;
  uint32_t index = 0;
  isa::Instruction instr;
  std::optional<Fault> fault;
  std::shared_ptr<Ticket> ticket;  ///< null for a chip of another rank
};

struct CollectiveHub::Slot {
  std::vector<Waiter> waiters;
  bool finished = false;
  Result result;  ///< the completed call's figures (every participant takes its share)
  sc_time start;  ///< when the last participant arrived
};

namespace {

/// Chip `chip`'s part of a completed call's figures (the CC_ and NET_ registers it adds to).
CcCounters share_of(const Result& r, int chip, sc_time duration) {
  CcCounters s;
  s.ops = 1;
  s.time = duration;
  if (size_t(chip) < r.chips.size()) {
    const ChipTraffic& c = r.chips[size_t(chip)];
    s.messages = c.messages;
    s.bytes = c.bytes;
    s.net_packets = c.packets;
    s.net_flits = c.flits;
    s.net_latency_sum = c.latency_sum_cycles;
    s.net_latency_max = c.latency_max_cycles;
  }
  if (size_t(chip) < r.chip_steps.size()) s.last_steps = uint32_t(r.chip_steps[size_t(chip)]);
  s.net_cycles = r.network.cycles;
  s.net_replays = r.network.link.replays;
  s.net_crc_errors = r.network.link.crc_errors;
  return s;
}

/// What chip `chip`'s output links carried in a completed call; false if nothing.
bool links_of(const Result& r, const Topology& topo, int chip, CcLinks* out) {
  bool any = false;
  const int dims = topo.num_dims() + (topo.pods() > 1 ? 1 : 0);  // the torus's, then EFA (LINK blocks 6 and 7)
  for (int d = 0; d < dims; ++d) {
    for (const bool positive : {true, false}) {
      const size_t li = size_t(topo.link_index({chip, d, positive}));
      if (li >= r.links.size()) continue;
      const int block = d == topo.num_dims() ? 6 : 2 * d;
      CcLinkCounters& l = (*out)[size_t(block + (positive ? 0 : 1))];
      l.busy = sc_time(r.links[li].busy_ns, SC_NS);
      l.bytes = r.links[li].bytes;
      l.flits = r.links[li].flits;
      any = any || l.bytes || l.flits || l.busy > SC_ZERO_TIME;
    }
  }
  return any;
}

}  // namespace

CollectiveHub::CollectiveHub(const sc_module_name& name, const Topology& topology, std::vector<CoreControl*> controls,
                             std::vector<Memory*> hbms)
    : sc_module(name), system_(topology, std::move(hbms)), controls_(std::move(controls)),
      part_(topology.chips(), 1, 0) {
  init(topology);
  SC_METHOD(stop_watch);
  for (CoreControl* c : controls_) sensitive << c->stop_event();
  sensitive << changed_;
  dont_initialize();
}

CollectiveHub::CollectiveHub(const sc_module_name& name, const Topology& topology, std::vector<CoreControl*> controls,
                             std::vector<Memory*> hbms, const Partition& partition, RankExchange& exchange)
    : sc_module(name), system_(topology, std::move(hbms), partition, exchange), controls_(std::move(controls)),
      part_(partition), exchange_(&exchange) {
  init(topology);
  event_seq_.assign(controls_.size(), 0);
  states_.resize(controls_.size());
}

void CollectiveHub::init(const Topology& topology) {
  if (controls_.size() != size_t(system_.chips())) {
    throw std::invalid_argument(fmt::format("CollectiveHub: {} control blocks for {} chips", controls_.size(),
                                            system_.chips()));
  }
  next_k_.assign(controls_.size(), 0);
  if (topology.num_dims() > 3) throw std::invalid_argument("CollectiveHub: a torus of more than 3 dimensions");
  for (int r = 0; r < topology.chips(); ++r) {
    if ((controls_[size_t(r)] != nullptr) != part_.local(r)) {
      throw std::invalid_argument(fmt::format("CollectiveHub: chip {} needs a control block exactly when it is local",
                                              r));
    }
  }
  for (int r = 0; r < topology.chips(); ++r) {  // CHIP_ID, TORUS, HOP_LATENCY_NS, LINK_BW_MBPS, PODS, EFA_*
    if (!controls_[size_t(r)]) continue;
    cycle_ = controls_[size_t(r)]->cycle_time();
    SystemPlace p;
    p.chip = uint32_t(r);
    p.torus = {0, 0, 0};
    for (int d = 0; d < topology.num_dims(); ++d) {
      p.torus[size_t(d)] = uint32_t(topology.dim(d));
      p.link_mbps[size_t(d)] = uint32_t(std::llround(topology.gbytes_per_s(d) * 1000.0));
    }
    p.hop_latency_ns = uint32_t(std::llround(topology.hop_latency_ns()));
    p.pods = uint32_t(topology.pods());
    if (topology.pods() > 1) {
      p.efa_mbps = uint32_t(std::llround(topology.gbytes_per_s(topology.num_dims()) * 1000.0));
      p.efa_latency_ns = uint32_t(std::llround(topology.efa_latency_ns()));
    }
    controls_[size_t(r)]->set_system_place(p);
  }
  SC_METHOD(apply_link_traffic);
  sensitive << links_due_;
  dont_initialize();
}

CollectiveHub::~CollectiveHub() = default;

void CollectiveHub::on_start(int chip) {
  if (distributed()) {
    Event e;
    e.kind = Event::kStart;
    e.chip = chip;
    record(e);
    return;
  }
  next_k_.at(size_t(chip)) = 0;
}

void CollectiveHub::on_halt(int /*chip*/) {
  if (!distributed()) changed_.notify(SC_ZERO_TIME);  // distributed: every sync() reevaluates
}

void CollectiveHub::record(Event e) {
  e.time_ps = sc_time_stamp().value();
  e.seq = event_seq_[size_t(e.chip)]++;
  events_.push_back(std::move(e));
}

bool CollectiveHub::irq(int chip) const {
  return distributed() ? states_.at(size_t(chip)).irq : controls_.at(size_t(chip))->irq();
}

CollectiveHub::ChipState CollectiveHub::state(int chip) const {
  if (distributed()) return states_[size_t(chip)];
  const CoreControl& c = *controls_[size_t(chip)];
  return {c.stopped(), c.queue(kCc).state, c.irq()};
}

void CollectiveHub::stop_watch() { reevaluate(); }

void CollectiveHub::schedule_link_traffic(const Result& r, sc_time due) {
  for (int c = 0; c < chips(); ++c) {
    CcLinks links{};
    if (controls_[size_t(c)] && links_of(r, topology(), c, &links)) pending_links_.push_back({due, c, links});
  }
  links_due_.notify(due > sc_time_stamp() ? due - sc_time_stamp() : SC_ZERO_TIME);
}

void CollectiveHub::apply_link_traffic() {
  for (auto it = pending_links_.begin(); it != pending_links_.end();) {
    if (it->due > sc_time_stamp()) {
      ++it;
      continue;
    }
    controls_[size_t(it->chip)]->add_link_traffic(it->links);
    it = pending_links_.erase(it);
  }
}

bool CollectiveHub::can_join(int chip) const {
  const ChipState c = state(chip);
  return !c.stopped && (c.cc_state == regs::QSTATE_RUNNING || c.cc_state == regs::QSTATE_WAITING);
}

void CollectiveHub::finish(const std::shared_ptr<Slot>& slot, const std::optional<Fault>& all, sc_time at,
                           sc_time delay) {
  if (all) {
    for (Waiter& w : slot->waiters) w.fault = all;
  }
  slot->finished = true;
  const sc_time end = at + delay, now = sc_time_stamp();
  for (Waiter& w : slot->waiters) {
    if (!w.ticket) continue;
    Ticket& t = *w.ticket;
    t.finished = true;
    t.end = end;
    t.fault = w.fault;
    if (!w.fault) t.share = share_of(slot->result, w.chip, end - slot->start);
    t.done.notify(end > now ? end - now : SC_ZERO_TIME);
  }
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), slot), waiting_.end());
}

std::optional<Fault> check_cc(const isa::Instruction& instr, int chip, int chips, uint64_t hbm) {
  const int n = chips;
  const auto bytes = buffer_bytes(instr);
  if (!bytes || instr.cc.hbm_addr > hbm || *bytes > hbm - instr.cc.hbm_addr) {
    return Fault{regs::ERR_HBM_RANGE, uint32_t(isa::field_id(is_p2p(instr.op) ? "bytes" : "count")),
                 fmt::format("chip {}: {} buffer [{:#x}, +{} bytes) is not inside HBM ({} bytes)", chip,
                             *isa::opcode_name(instr.op), instr.cc.hbm_addr,
                             bytes ? fmt::format("{}", *bytes) : std::string("2^64 or more"), hbm)};
  }
  if (is_p2p(instr.op) && (instr.cc.peer >= uint32_t(n) || instr.cc.peer == uint32_t(chip))) {
    return Fault{regs::ERR_BAD_FIELD, uint32_t(isa::field_id("peer")),
                 fmt::format("chip {}: {} peer {} is not another chip of this {}-chip system", chip,
                             *isa::opcode_name(instr.op), instr.cc.peer, n)};
  }
  if (!is_p2p(instr.op) && instr.cc.algorithm == isa::CcAlgorithm::kRhd && (n & (n - 1)) != 0) {
    return Fault{regs::ERR_CC_UNSUPPORTED, uint32_t(isa::field_id("algorithm")),
                 fmt::format("chip {}: algorithm rhd (recursive halving-doubling) needs a power-of-two chip count, "
                             "this system has {} chips; use ring", chip, n)};
  }
  return std::nullopt;
}

template <class Match>
void CollectiveHub::guarded(Match&& match) {
  if (distributed()) {  // sync() runs outside the kernel: its caller gets the exception
    match();
    return;
  }
  try {
    match();
  } catch (const std::exception&) {
    failure_ = std::current_exception();
    sc_pause();
  }
}

void CollectiveHub::rethrow_failure() {
  if (!failure_) return;
  std::exception_ptr e = std::move(failure_);
  failure_ = nullptr;
  std::rethrow_exception(e);
}

std::optional<Fault> CollectiveHub::execute(int chip, uint32_t index, const isa::Instruction& instr) {
  CoreControl& ctl = *controls_.at(size_t(chip));
  if (auto fault = check_cc(instr, chip, chips(), ctl.config().hbm_bytes)) return fault;
  const uint64_t epoch = ctl.epoch();
  const auto ticket = std::make_shared<Ticket>();
  if (distributed()) {
    Event e;
    e.kind = Event::kArrive;
    e.chip = chip;
    e.index = index;
    e.instr = instr;
    record(e);
    arriving_[{chip, events_.back().seq}] = ticket;
  } else {
    arrive(chip, index, instr, ticket, sc_time_stamp());
    reevaluate();
  }
  // Wait for the rendezvous, then for the collective's time; leave when this chip is stopped or reset.
  while (!(ticket->finished && sc_time_stamp() >= ticket->end)) {
    if (ticket->finished) {
      wait(ticket->end - sc_time_stamp(), ctl.stop_event());
    } else {
      wait(ticket->done | ctl.stop_event());
    }
    if (ctl.stopped() || ctl.epoch() != epoch) {
      if (!ticket->finished) {
        if (distributed()) {
          Event e;
          e.kind = Event::kLeave;
          e.chip = chip;
          record(e);
        } else {
          drop(chip);
          reevaluate();
        }
      }
      return std::nullopt;
    }
  }
  if (!ticket->fault) ctl.add_cc(ticket->share);
  return ticket->fault;
}

void CollectiveHub::arrive(int chip, uint32_t index, const isa::Instruction& instr, std::shared_ptr<Ticket> ticket,
                           sc_time at) {
  Waiter me{chip, index, instr, std::nullopt, std::move(ticket)};
  drop(chip);
  std::shared_ptr<Slot> slot;
  if (!is_p2p(instr.op)) {
    const uint64_t k = next_k_[size_t(chip)]++;
    auto& s = collectives_[k];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
    slot->waiters.push_back(std::move(me));
    waiting_.push_back(slot);
    guarded([&] { try_match_collective(k, at); });
  } else {
    const int peer = int(instr.cc.peer);
    const bool send = instr.op == isa::Opcode::kSend;
    slot = std::make_shared<Slot>();
    slot->waiters.push_back(std::move(me));
    waiting_.push_back(slot);
    (send ? sends_ : recvs_)[send ? std::pair{chip, peer} : std::pair{peer, chip}].push_back(slot);
    guarded([&] { try_match_p2p(send ? chip : peer, send ? peer : chip, at); });
  }
}

void CollectiveHub::sync() {
  // This rank's chips' cc states and events, then every rank's.
  ByteWriter w;
  w.put(uint32_t(part_.end_chip(part_.rank()) - part_.first_chip(part_.rank())));
  for (int c = part_.first_chip(part_.rank()); c < part_.end_chip(part_.rank()); ++c) {
    const CoreControl& ctl = *controls_[size_t(c)];
    w.put(uint32_t(c));
    w.put(uint8_t(ctl.stopped()));
    w.put(uint32_t(ctl.queue(kCc).state));
    w.put(uint8_t(ctl.irq()));
  }
  w.put(uint32_t(events_.size()));
  for (const Event& e : events_) {
    w.put(uint8_t(e.kind));
    w.put(e.time_ps);
    w.put(uint32_t(e.chip));
    w.put(e.seq);
    w.put(e.index);
    const auto bytes = isa::encode(e.instr);
    w.put_bytes(bytes.data(), bytes.size());
  }
  events_.clear();
  std::vector<Event> all;
  const std::vector<std::vector<uint8_t>> gathered = exchange_->all_gather(w.bytes);
  for (size_t q = 0; q < gathered.size(); ++q) {
    ByteReader rd(gathered[q]);
    const auto nstates = rd.get<uint32_t>();
    for (uint32_t i = 0; i < nstates; ++i) {
      const auto c = rd.get<uint32_t>();
      if (c >= states_.size()) throw std::runtime_error(fmt::format("hub sync: rank {} names chip {}", q, c));
      states_[c].stopped = rd.get<uint8_t>() != 0;
      states_[c].cc_state = rd.get<uint32_t>();
      states_[c].irq = rd.get<uint8_t>() != 0;
    }
    const auto nevents = rd.get<uint32_t>();
    for (uint32_t i = 0; i < nevents; ++i) {
      Event e;
      e.kind = Event::Kind(rd.get<uint8_t>());
      e.time_ps = rd.get<uint64_t>();
      e.chip = int(rd.get<uint32_t>());
      e.seq = rd.get<uint64_t>();
      e.index = rd.get<uint32_t>();
      std::array<uint8_t, isa::kInstrBytes> bytes{};
      rd.take(bytes.data(), bytes.size());
      if (e.kind > Event::kLeave || e.chip < 0 || e.chip >= chips() || part_.owner(e.chip) != int(q) ||
          isa::decode(bytes.data(), &e.instr)) {
        throw std::runtime_error(fmt::format("hub sync: rank {} sent a malformed event", q));
      }
      all.push_back(std::move(e));
    }
  }
  // One order on every rank: time, then chip, then the chip's own order.
  std::sort(all.begin(), all.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time_ps, a.chip, a.seq) < std::tie(b.time_ps, b.chip, b.seq);
  });
  for (const Event& e : all) {
    switch (e.kind) {
      case Event::kStart: next_k_[size_t(e.chip)] = 0; break;
      case Event::kLeave: drop(e.chip); break;
      case Event::kArrive: {
        std::shared_ptr<Ticket> ticket;
        if (part_.local(e.chip)) {
          const auto it = arriving_.find({e.chip, e.seq});
          if (it == arriving_.end()) throw std::logic_error("hub sync: a local arrival without its waiter");
          ticket = std::move(it->second);
          arriving_.erase(it);
        }
        arrive(e.chip, e.index, e.instr, std::move(ticket), sc_time::from_value(e.time_ps));
        break;
      }
    }
  }
  reevaluate();
}

sc_time CollectiveHub::whole_cycles(double ns) const {
  return cycle_ * std::ceil(ns * 1e-9 / cycle_.to_seconds());
}

void CollectiveHub::drop(int chip) {
  // A chip has at most one cc instruction in the hub: any other waiter of it is left from a stopped launch.
  for (const auto& slot : std::vector<std::shared_ptr<Slot>>(waiting_)) {
    if (slot->finished) continue;
    auto& ws = slot->waiters;
    ws.erase(std::remove_if(ws.begin(), ws.end(), [&](const Waiter& w) { return w.chip == chip; }), ws.end());
    if (!ws.empty()) continue;
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), slot), waiting_.end());
    for (auto it = collectives_.begin(); it != collectives_.end();) {
      it = it->second == slot ? collectives_.erase(it) : std::next(it);
    }
    for (auto* m : {&sends_, &recvs_}) {
      for (auto& [key, q] : *m) q.erase(std::remove(q.begin(), q.end(), slot), q.end());
    }
  }
}

void CollectiveHub::try_match_collective(uint64_t k, sc_time at) {
  const auto it = collectives_.find(k);
  if (it == collectives_.end()) return;
  const std::shared_ptr<Slot> slot = it->second;
  if (slot->waiters.size() < size_t(chips())) return;
  collectives_.erase(it);
  // The same call everywhere: compare with the first arrival, field by field in byte order.
  const Waiter& ref = slot->waiters.front();
  for (Waiter& w : slot->waiters) {
    const isa::CcFields &a = ref.instr.cc, &b = w.instr.cc;
    const char* field = ref.instr.op != w.instr.op ? "opcode"
                        : a.dtype != b.dtype       ? "dtype"
                        : a.algorithm != b.algorithm ? "algorithm"
                        : a.hbm_addr != b.hbm_addr ? "hbm_addr"
                        : a.count != b.count       ? "count"
                                                   : nullptr;
    if (field == nullptr) continue;
    for (Waiter& x : slot->waiters) {
      const Waiter& other = x.chip == w.chip ? ref : w;
      x.fault = Fault{regs::ERR_CC_MISMATCH, uint32_t(isa::field_id(field)),
                      fmt::format("collective {} of the launch: chip {} instruction {} is '{}' but chip {} "
                                  "instruction {} is '{}' (field {} differs)",
                                  k, x.chip, x.index, isa::disassemble(x.instr), other.chip, other.index,
                                  isa::disassemble(other.instr), field)};
    }
    finish(slot, std::nullopt, at, SC_ZERO_TIME);
    return;
  }
  Call call;
  call.op = op_of(ref.instr.op);
  call.algorithm = ref.instr.cc.algorithm == isa::CcAlgorithm::kRhd ? Algorithm::kRhd : Algorithm::kRing;
  call.type = ref.instr.cc.dtype == isa::DataType::kBf16 ? ElemType::kBf16 : ElemType::kFp32;
  call.count = ref.instr.cc.count;
  call.hbm_addr = ref.instr.cc.hbm_addr;
  const Result r = system_.run(call);  // the checks above leave no CollectiveError
  const sc_time delay = whole_cycles(r.time_ns);
  slot->result = r;
  slot->start = at;
  schedule_link_traffic(r, at + delay);
  completed_.push_back({ref.instr.op, call.count * elem_bytes(call.type), at, at + delay, r});
  finish(slot, std::nullopt, at, delay);
}

void CollectiveHub::try_match_p2p(int src, int dst, sc_time at) {
  auto& sq = sends_[{src, dst}];
  auto& rq = recvs_[{src, dst}];
  while (!sq.empty() && !rq.empty()) {
    const std::shared_ptr<Slot> s = sq.front(), r = rq.front();
    sq.pop_front();
    rq.pop_front();
    const Waiter &ws = s->waiters.front(), &wr = r->waiters.front();
    if (ws.instr.cc.count != wr.instr.cc.count) {
      const std::string text = fmt::format("send on chip {} (instruction {}) of {} bytes is paired with recv on chip {} "
                                           "(instruction {}) of {} bytes", src, ws.index, ws.instr.cc.count, dst,
                                           wr.index, wr.instr.cc.count);
      finish(s, Fault{regs::ERR_CC_MISMATCH, uint32_t(isa::field_id("bytes")), text}, at, SC_ZERO_TIME);
      finish(r, Fault{regs::ERR_CC_MISMATCH, uint32_t(isa::field_id("bytes")), text}, at, SC_ZERO_TIME);
      continue;
    }
    sc_time delay = SC_ZERO_TIME;
    Result res;
    if (ws.instr.cc.count > 0) {
      res = system_.send_recv(src, ws.instr.cc.hbm_addr, dst, wr.instr.cc.hbm_addr, ws.instr.cc.count);
      delay = whole_cycles(res.time_ns);
    }
    completed_.push_back({isa::Opcode::kSend, ws.instr.cc.count, at, at + delay, res});
    for (const auto& slot : {s, r}) {
      slot->result = res;
      slot->start = at;
    }
    schedule_link_traffic(res, at + delay);
    finish(s, std::nullopt, at, delay);
    finish(r, std::nullopt, at, delay);
  }
}

void CollectiveHub::reevaluate() {
  const int n = chips();
  // Rendezvous that need a chip whose cc queue can no longer join.
  for (auto it = collectives_.begin(); it != collectives_.end();) {
    const std::shared_ptr<Slot> slot = it->second;
    // The chip to name: the first that can no longer join, preferring one whose cc queue ended by itself (halted
    // or never started) over one stopped by an error (often itself a waiter that a stopped peer took down).
    int missing = -1;
    for (int c = 0; c < n; ++c) {
      const bool arrived = std::any_of(slot->waiters.begin(), slot->waiters.end(),
                                       [&](const Waiter& w) { return w.chip == c; });
      if (arrived || can_join(c)) continue;
      if (missing < 0 || (state(missing).stopped && !state(c).stopped)) missing = c;
    }
    if (missing < 0 || slot->finished) {
      ++it;
      continue;
    }
    const uint32_t st = state(missing).cc_state;
    for (Waiter& w : slot->waiters) {
      w.fault = Fault{regs::ERR_CC_PEER_STOPPED, uint32_t(missing),
                      fmt::format("chip {} instruction {} waits in collective {} of the launch for chip {}, whose cc "
                                  "queue is {}{}", w.chip, w.index, it->first, missing, regs::queue_state_name(st),
                                  state(missing).stopped ? " (its device stopped with an error)" : "")};
    }
    finish(slot, std::nullopt, sc_time_stamp(), SC_ZERO_TIME);
    it = collectives_.erase(it);
  }
  for (auto* m : {&sends_, &recvs_}) {
    const bool send = m == &sends_;
    for (auto& [key, q] : *m) {
      const int peer = send ? key.second : key.first;
      if (can_join(peer)) continue;
      for (const auto& slot : q) {
        Waiter& w = slot->waiters.front();
        w.fault = Fault{regs::ERR_CC_PEER_STOPPED, uint32_t(peer),
                        fmt::format("chip {} instruction {}: {} chip {}, whose cc queue is {} without the matching {}",
                                    w.chip, w.index, send ? "send to" : "recv from", peer,
                                    regs::queue_state_name(state(peer).cc_state), send ? "recv" : "send")};
        finish(slot, std::nullopt, sc_time_stamp(), SC_ZERO_TIME);
      }
      q.clear();
    }
  }
  // Deadlock: waiters remain and every chip that could still act is itself waiting here.
  if (waiting_.empty()) return;
  std::vector<bool> in_hub(size_t(n), false);
  for (const auto& slot : waiting_) {
    for (const Waiter& w : slot->waiters) in_hub[size_t(w.chip)] = true;
  }
  for (int c = 0; c < n; ++c) {
    if (can_join(c) && !in_hub[size_t(c)]) return;
  }
  for (const auto& slot : std::vector<std::shared_ptr<Slot>>(waiting_)) {
    for (Waiter& w : slot->waiters) {
      w.fault = Fault{regs::ERR_CC_DEADLOCK, 0,
                      fmt::format("chip {} instruction {} ('{}') can never complete: every chip's cc queue waits in "
                                  "a collective, send or recv", w.chip, w.index, isa::disassemble(w.instr))};
    }
    finish(slot, std::nullopt, sc_time_stamp(), SC_ZERO_TIME);
  }
  collectives_.clear();
  sends_.clear();
  recvs_.clear();
}

}  // namespace trnsim::model::collective
