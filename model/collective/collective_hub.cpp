#include "model/collective/collective_hub.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

struct CollectiveHub::Waiter {
  int chip = 0;
  uint32_t index = 0;
  isa::Instruction instr;
  uint64_t epoch = 0;
  std::optional<Fault> fault;
};

struct CollectiveHub::Slot {
  std::vector<Waiter> waiters;
  bool finished = false;
  sc_time end;
  sc_event done;
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
  for (int d = 0; d < topo.num_dims(); ++d) {
    for (const bool positive : {true, false}) {
      const size_t li = size_t(topo.link_index({chip, d, positive}));
      if (li >= r.links.size()) continue;
      CcLinkCounters& l = (*out)[size_t(2 * d + (positive ? 0 : 1))];
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
    : sc_module(name), system_(topology, std::move(hbms)), controls_(std::move(controls)) {
  if (controls_.size() != size_t(system_.chips())) {
    throw std::invalid_argument(fmt::format("CollectiveHub: {} control blocks for {} chips", controls_.size(),
                                            system_.chips()));
  }
  next_k_.assign(controls_.size(), 0);
  if (topology.num_dims() > 3) throw std::invalid_argument("CollectiveHub: a torus of more than 3 dimensions");
  for (int r = 0; r < topology.chips(); ++r) {  // CHIP_ID, TORUS, HOP_LATENCY_NS, LINK_BW_MBPS
    SystemPlace p;
    p.chip = uint32_t(r);
    p.torus = {0, 0, 0};
    for (int d = 0; d < topology.num_dims(); ++d) {
      p.torus[size_t(d)] = uint32_t(topology.dim(d));
      p.link_mbps[size_t(d)] = uint32_t(std::llround(topology.gbytes_per_s(d) * 1000.0));
    }
    p.hop_latency_ns = uint32_t(std::llround(topology.hop_latency_ns()));
    controls_[size_t(r)]->set_system_place(p);
  }
  SC_METHOD(apply_link_traffic);
  sensitive << links_due_;
  dont_initialize();
  SC_METHOD(stop_watch);
  for (CoreControl* c : controls_) sensitive << c->stop_event();
  sensitive << changed_;
  dont_initialize();
}

CollectiveHub::~CollectiveHub() = default;

void CollectiveHub::on_start(int chip) { next_k_.at(size_t(chip)) = 0; }

void CollectiveHub::on_halt(int /*chip*/) { changed_.notify(SC_ZERO_TIME); }

void CollectiveHub::stop_watch() { reevaluate(); }

void CollectiveHub::schedule_link_traffic(const Result& r, sc_time delay) {
  for (int c = 0; c < chips(); ++c) {
    CcLinks links{};
    if (links_of(r, topology(), c, &links)) pending_links_.push_back({sc_time_stamp() + delay, c, links});
  }
  links_due_.notify(delay);
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
  const CoreControl& c = *controls_[size_t(chip)];
  if (c.stopped()) return false;
  const uint32_t st = c.queue(kCc).state;
  return st == regs::QSTATE_RUNNING || st == regs::QSTATE_WAITING;
}

void CollectiveHub::finish(const std::shared_ptr<Slot>& slot, const std::optional<Fault>& all, sc_time delay) {
  if (all) {
    for (Waiter& w : slot->waiters) w.fault = all;
  }
  slot->finished = true;
  slot->end = sc_time_stamp() + delay;
  slot->done.notify(delay);
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
  const Waiter me{chip, index, instr, ctl.epoch(), std::nullopt};
  drop(chip);
  std::shared_ptr<Slot> slot;
  if (!is_p2p(instr.op)) {
    const uint64_t k = next_k_[size_t(chip)]++;
    auto& s = collectives_[k];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
    slot->waiters.push_back(me);
    waiting_.push_back(slot);
    guarded([&] { try_match_collective(k); });
  } else {
    const int peer = int(instr.cc.peer);
    const bool send = instr.op == isa::Opcode::kSend;
    slot = std::make_shared<Slot>();
    slot->waiters.push_back(me);
    waiting_.push_back(slot);
    (send ? sends_ : recvs_)[send ? std::pair{chip, peer} : std::pair{peer, chip}].push_back(slot);
    guarded([&] { try_match_p2p(send ? chip : peer, send ? peer : chip); });
  }
  reevaluate();
  // Wait for the rendezvous, then for the collective's time; leave when this chip is stopped or reset.
  while (!(slot->finished && sc_time_stamp() >= slot->end)) {
    if (slot->finished) {
      wait(slot->end - sc_time_stamp(), ctl.stop_event());
    } else {
      wait(slot->done | ctl.stop_event());
    }
    if (ctl.stopped() || ctl.epoch() != me.epoch) {
      if (!slot->finished) {
        drop(chip);
        reevaluate();
      }
      return std::nullopt;
    }
  }
  for (const Waiter& w : slot->waiters) {
    if (w.chip != chip) continue;
    if (!w.fault) ctl.add_cc(share_of(slot->result, chip, slot->end - slot->start));
    return w.fault;
  }
  return std::nullopt;
}

sc_time CollectiveHub::whole_cycles(double ns) const {
  const sc_time cycle = controls_.front()->cycle_time();
  return cycle * std::ceil(ns * 1e-9 / cycle.to_seconds());
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

void CollectiveHub::try_match_collective(uint64_t k) {
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
    finish(slot, std::nullopt, SC_ZERO_TIME);
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
  slot->start = sc_time_stamp();
  schedule_link_traffic(r, delay);
  completed_.push_back({ref.instr.op, call.count * elem_bytes(call.type), sc_time_stamp(), sc_time_stamp() + delay, r});
  finish(slot, std::nullopt, delay);
}

void CollectiveHub::try_match_p2p(int src, int dst) {
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
      finish(s, Fault{regs::ERR_CC_MISMATCH, uint32_t(isa::field_id("bytes")), text}, SC_ZERO_TIME);
      finish(r, Fault{regs::ERR_CC_MISMATCH, uint32_t(isa::field_id("bytes")), text}, SC_ZERO_TIME);
      continue;
    }
    sc_time delay = SC_ZERO_TIME;
    Result res;
    if (ws.instr.cc.count > 0) {
      res = system_.send_recv(src, ws.instr.cc.hbm_addr, dst, wr.instr.cc.hbm_addr, ws.instr.cc.count);
      delay = whole_cycles(res.time_ns);
    }
    completed_.push_back({isa::Opcode::kSend, ws.instr.cc.count, sc_time_stamp(), sc_time_stamp() + delay, res});
    for (const auto& slot : {s, r}) {
      slot->result = res;
      slot->start = sc_time_stamp();
    }
    schedule_link_traffic(res, delay);
    finish(s, std::nullopt, delay);
    finish(r, std::nullopt, delay);
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
      if (missing < 0 || (controls_[size_t(missing)]->stopped() && !controls_[size_t(c)]->stopped())) missing = c;
    }
    if (missing < 0 || slot->finished) {
      ++it;
      continue;
    }
    const uint32_t st = controls_[size_t(missing)]->queue(kCc).state;
    for (Waiter& w : slot->waiters) {
      w.fault = Fault{regs::ERR_CC_PEER_STOPPED, uint32_t(missing),
                      fmt::format("chip {} instruction {} waits in collective {} of the launch for chip {}, whose cc "
                                  "queue is {}{}", w.chip, w.index, it->first, missing, regs::queue_state_name(st),
                                  controls_[size_t(missing)]->stopped() ? " (its device stopped with an error)" : "")};
    }
    finish(slot, std::nullopt, SC_ZERO_TIME);
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
                                    regs::queue_state_name(controls_[size_t(peer)]->queue(kCc).state),
                                    send ? "recv" : "send")};
        finish(slot, std::nullopt, SC_ZERO_TIME);
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
    finish(slot, std::nullopt, SC_ZERO_TIME);
  }
  collectives_.clear();
  sends_.clear();
  recvs_.clear();
}

}  // namespace trnsim::model::collective
