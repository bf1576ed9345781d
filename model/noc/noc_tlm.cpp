// Cycle-accurate TLM of a NeuronLink network. See noc_tlm.h; every step below names the RTL module and signal it
// mirrors (rtl/noc/*.sv), because exact agreement with the RTL is the point of this model.
#include "model/noc/noc_tlm.h"

#include <algorithm>

#include <fmt/core.h>

namespace trnsim::model::noc {

namespace {

constexpr int kMaxPorts = 1 + 2 * kMaxDim;  // 7
constexpr int kMaxIn = kMaxPorts * kMaxVc;  // 56 input VCs: masks fit in 64 bits

// trn_prim_rr_arb: grant the lowest request at or above the pointer, else the lowest request; the pointer moves to
// the granted index + 1 (0 after the last) when the grant is acknowledged.
inline int rr_pick(uint64_t req, int ptr) {
  const uint64_t hi = req & (~uint64_t{0} << ptr);
  return __builtin_ctzll(hi != 0 ? hi : req);
}
inline uint8_t rr_next(int idx, int n) { return static_cast<uint8_t>(idx + 1 < n ? idx + 1 : 0); }

// The link transmitter's checks of a backward beat (trn_noc_link_tx's assertions), shared by the exact and the
// fault-free evaluation: cold, so the evaluation keeps only the compares. `at` is "cycle C router R port P".
[[noreturn, gnu::cold, gnu::noinline]] void bad_credit_vc(const std::string& at, int vc, int num_vc) {
  throw NocError(fmt::format("{}: credit count for VC {}, only {} VCs", at, vc, num_vc));
}
[[noreturn, gnu::cold, gnu::noinline]] void bad_ack(const std::string& at, unsigned ack, unsigned una, unsigned seq) {
  throw NocError(fmt::format("{}: acknowledgement up to sequence number {}, but only {} .. {} are unacknowledged", at,
                             ack, una, seq));
}
[[noreturn, gnu::cold, gnu::noinline]] void bad_credits(const std::string& at, int vc, unsigned delta, int credits,
                                                        int depth) {
  throw NocError(fmt::format("{}: VC {}: {} credits returned with {} credits already (above the buffer depth {})", at,
                             vc, delta, credits, depth));
}

}  // namespace

// One beat on each channel of a link (link_fwd_t / link_bwd_t without the configuration bits: every router of a
// TLM network has the same parameters, so the bring-up exchange cannot mismatch). The CRC is not carried: a beat
// is right unless the fault injector changed it, and then crc_ok says whether its CRC still matches (noc_link.h).
struct LinkFwd {
  bool valid = false;
  bool init = false;
  bool crc_ok = true;
  uint16_t seq = 0;
  Flit flit;
};
struct LinkBwd {
  bool valid = false;
  bool init = false;
  bool nak = false;
  bool crc_ok = true;
  uint8_t vc = 0;
  uint8_t fc = 0;
  uint16_t ack = 0;
};

constexpr unsigned kSeqMask = (1u << kSeqBits) - 1;
constexpr unsigned kFcMask = (1u << kFcBits) - 1;

// The sending end of a link (trn_noc_link_tx): bring-up, credits, sequence numbers, replay buffer, output register.
struct TxLink {
  bool up = false, down = false;
  std::array<uint8_t, kMaxVc> crd{};  // crd_q
  uint8_t crd_mask = 0;               // bit v: crd_q[v] != 0 (crd_avail_o, outside a replay)
  std::array<uint8_t, kMaxVc> fc{};   // fc_q
  uint16_t seq = 0, una = 0;          // seq_q, una_q
  bool rp = false;                    // rp_q
  uint16_t rp_seq = 0;                // rp_seq_q
  int tmr = 0, rty = 0;               // tmr_q, rty_q
  std::vector<Flit> rb;               // rb_q
  LinkFwd out;                        // out_valid_q, out_seq_q, out_flit_q (init low, crc_ok: as sent)
  bool idle() const { return seq == una && !rp && !out.valid; }
};

// The receiving end (trn_noc_link_rx): bring-up, expected sequence number, error episode, freed counts, the
// backward register.
struct RxLink {
  bool up = false;
  uint16_t exp = 0;                   // exp_q
  bool nak = false;                   // nak_q
  std::array<uint8_t, kMaxVc> fc{};   // fc_q
  LinkBwd out;                        // bwd_q
};

// One input VC (trn_noc_input_port: FIFO, active_q / oport_q / ovc_q).
struct InVc {
  uint8_t rd = 0, count = 0;
  bool active = false;
  uint8_t oport = 0, ovc = 0;
  bool in_open = false;  // in_open_q of a_arrival_order: a head arrived and its tail not yet
  // route() and va_mask of the head flit at the front, computed the first cycle it asks for an output VC and kept
  // while it waits (a function of the flit, the input VC and the router only); routed is cleared when the front
  // changes.
  bool routed = false;
  uint8_t route_oport = 0, route_mask = 0;
};

struct TlmNetwork::Router {
  Coord me;
  std::array<int, 2 * kMaxDim> nb{};  // neighbour per link port, -1 = not connected (mesh boundary)
  std::vector<Flit> buf;  // input VC i's FIFO at [i * depth, (i + 1) * depth)
  std::array<InVc, kMaxIn> vc{};
  int flits = 0;          // flits in the FIFOs
  // Input VCs by what they ask of the allocators (bit i = input VC i), kept with count and active so that the
  // allocators visit only the VCs that request: va_req = a packet waits for an output VC (count != 0, !active),
  // sa_req = a packet holds one and has a flit for the switch (count != 0, active). Each change of count or
  // active below moves the VC's bit as that change can (a push sets one, a grant moves it from va_req to sa_req,
  // a pop clears it or, after a tail, moves it back).
  uint64_t va_req = 0, sa_req = 0;
  std::array<uint8_t, kMaxPorts> busy{};     // trn_noc_vc_alloc busy_q, per output port
  std::array<uint8_t, kMaxIn> va1_ptr{};     // VC allocation stage 1, per input VC (over NUM_VC)
  std::array<uint8_t, kMaxIn> va2_ptr{};     // stage 2, per output VC o * NUM_VC + w (over all input VCs)
  std::array<uint8_t, kMaxPorts> sa1_ptr{};  // switch allocation stage 1, per input port (over NUM_VC)
  std::array<uint8_t, kMaxPorts> sa2_ptr{};  // stage 2, per output port (over input ports)
  std::array<TxLink, 2 * kMaxDim> tx;  // per link port
  std::array<RxLink, 2 * kMaxDim> rx;
  std::array<uint64_t, 2 * kMaxDim> sent{};  // flits sent per link port (statistics, not RTL state)
  std::array<Flit, kMaxPorts> xbar;          // eval_router's scratch: the flit crossing to each output port
  bool boot = false;   // boot_q
  bool hello = false;  // hello_q (link_tx) = init_q (link_rx): the bring-up beats go out this cycle
};

void TlmOptions::validate() const {
  if (ndim < 1 || ndim > kMaxDim) throw NocError(fmt::format("{} dimensions: 1..{} supported", ndim, kMaxDim));
  for (int d = 0; d < kMaxDim; ++d) {
    const int s = size[static_cast<size_t>(d)];
    if (d < ndim && (s < 2 || s > kMaxSize)) {
      throw NocError(fmt::format("size {} in dimension {}: every dimension needs 2..{} routers (4-bit coordinates "
                                 "in the header)",
                                 s, d, kMaxSize));
    }
    if (d >= ndim && s != 1) throw NocError(fmt::format("a {}-D network has size 1 in dimension {}, not {}", ndim, d, s));
  }
  if (vc_groups < 1 || num_vc < 2 || num_vc > kMaxVc || num_vc % (2 * vc_groups) != 0) {
    throw NocError(fmt::format("{} VCs in {} groups: need 2..{} VCs, a multiple of 2 x groups (two dateline classes "
                               "per group)",
                               num_vc, vc_groups, kMaxVc));
  }
  if (vc_groups > 4) throw NocError(fmt::format("{} VC groups: at most 4 (2-bit message class)", vc_groups));
  if (depth < 1 || depth > 63) throw NocError(fmt::format("buffer depth {} outside 1..63 flits", depth));
  if (link_latency < 0 || link_latency > 32) throw NocError(fmt::format("link latency {} outside 0..32", link_latency));
  retry.validate();
  errors.validate();
  if (threads < 1 || threads > StepPool::kMaxThreads) {
    throw NocError(fmt::format("{} host threads: outside 1..{}", threads, StepPool::kMaxThreads));
  }
}

std::string TlmOptions::str() const {
  std::string dims;
  for (int d = 0; d < ndim; ++d) dims += (d ? "x" : "") + std::to_string(size[static_cast<size_t>(d)]);
  return fmt::format("{} {}, {} VCs ({} group{}) x {} flits, link latency {}", dims, torus ? "torus" : "mesh", num_vc,
                     vc_groups, vc_groups > 1 ? "s" : "", depth, link_latency);
}

TlmNetwork::TlmNetwork(const TlmOptions& options) : o_(options), faults_((options.validate(), options.errors)) {
  nport_ = 1 + 2 * o_.ndim;
  nin_ = nport_ * o_.num_vc;
  class_vcs_ = o_.num_vc / (2 * o_.vc_groups);
  for (int i = 0; i < nin_; ++i) {
    in_port_[size_t(i)] = static_cast<uint8_t>(i / o_.num_vc);
    in_dclass_[size_t(i)] = static_cast<uint8_t>((i % o_.num_vc / class_vcs_) % 2);
  }
  pipe_wr_ = size_t(o_.link_latency) + 1;
  // va_mask by message class: the group's VCs of dateline class 0, of class 1, and of both.
  for (unsigned mc = 0; mc < class_mask_.size(); ++mc) {
    const int group = int(mc) % o_.vc_groups;
    const unsigned set1 = (1u << class_vcs_) - 1;
    for (int dclass = 0; dclass < 2; ++dclass) {
      class_mask_[mc][size_t(dclass)] = static_cast<uint8_t>(set1 << ((2 * group + dclass) * class_vcs_));
    }
    class_mask_[mc][2] = static_cast<uint8_t>(class_mask_[mc][0] | class_mask_[mc][1]);
  }
  // route()'s table: from coordinate b towards a in dimension d. Hops in the positive direction on a torus when
  // that way is shorter; a tie (exactly half the ring) goes + from an even coordinate, - from an odd one
  // (trn_noc_input_port route()). On a mesh, the only minimal direction.
  for (int d = 0; d < kMaxDim; ++d) {
    const int sz = o_.size[size_t(d)];
    for (int b = 0; b < kMaxSize; ++b) {
      for (int a = 0; a < kMaxSize; ++a) {
        uint8_t h = 0;
        if (a >= sz || b >= sz) {
          h = kHopOutside;
        } else if (a != b) {
          bool minus;
          if (o_.torus) {
            const int delta = a >= b ? a - b : a + sz - b;
            minus = 2 * delta == sz ? (b & 1) != 0 : 2 * delta > sz;
          } else {
            minus = a < b;
          }
          // Leaving in the + direction, the way wraps iff dst lies below; in the - direction, iff above.
          const bool wraps = minus ? a > b : a < b;
          h = static_cast<uint8_t>((1 + 2 * d + (minus ? 1 : 0)) | (wraps ? kHopWraps : 0));
        }
        hop_[size_t(d)][size_t(b)][size_t(a)] = h;
      }
    }
  }
  // Without injected faults every flit arrives intact and in order, and its acknowledgement is back 2 latency + 2
  // edges after it was sent; the replay timer, counting the edges in between, reaches at most 2 latency. A timeout
  // above that never fires, so no replay can start (noc_tlm.h, fast_links_).
  fast_links_ = !faults_.enabled() && o_.retry.replay_timeout > 2 * o_.link_latency + 1 && !o_.exact_links;
  // The common shapes get their own eval_router (the verilated builds' and the CLI defaults', and 8 VCs).
  const int shape = o_.ndim * 16 + o_.num_vc;
  eval_ = shape == 0x12 ? &TlmNetwork::eval_routers<1, 2>
        : shape == 0x14 ? &TlmNetwork::eval_routers<1, 4>
        : shape == 0x22 ? &TlmNetwork::eval_routers<2, 2>
        : shape == 0x24 ? &TlmNetwork::eval_routers<2, 4>
        : shape == 0x28 ? &TlmNetwork::eval_routers<2, 8>
        : shape == 0x34 ? &TlmNetwork::eval_routers<3, 4>
        : shape == 0x38 ? &TlmNetwork::eval_routers<3, 8>
                        : &TlmNetwork::eval_routers<0, 0>;
  const int n_nodes = nodes();
  const int threads = std::min(o_.threads, n_nodes);
  if (threads > 1) pool_ = std::make_unique<StepPool>(threads);
  fault_fwd_.resize(size_t(threads) * 2 * kMaxDim);
  fault_bwd_.resize(size_t(threads) * 2 * kMaxDim);
  tallies_.resize(size_t(threads));
  for (size_t t = 0; t < tallies_.size(); ++t) {
    tallies_[t].fault_fwd = &fault_fwd_[t * 2 * kMaxDim];
    tallies_[t].fault_bwd = &fault_bwd_[t * 2 * kMaxDim];
  }
  const int nl = nport_ - 1;
  routers_.resize(static_cast<size_t>(n_nodes));
  local_.resize(static_cast<size_t>(n_nodes));
  links_ = size_t(n_nodes * nl);
  fwd_.assign(links_ * (size_t(o_.link_latency) + 2), LinkFwd{});
  bwd_.assign(links_ * (size_t(o_.link_latency) + 2), LinkBwd{});
  for (int n = 0; n < n_nodes; ++n) {
    Router& r = routers_[static_cast<size_t>(n)];
    r.me = coord(n);
    r.buf.resize(static_cast<size_t>(nin_ * o_.depth));
    // trn_noc_link_tx RB_DEPTH: NUM_VC * DEPTH rounded up to a power of two (NUM_VC >= 2).
    const int rb_bits = 32 - __builtin_clz(unsigned(o_.num_vc * o_.depth - 1));
    for (TxLink& t : r.tx) {
      t.rb.resize(size_t{1} << rb_bits);
      t.crd.fill(static_cast<uint8_t>(o_.depth));  // trn_noc_link_tx holds DEPTH per VC until the link is up
    }
    for (int l = 0; l < nl; ++l) {
      const int d = l / 2, s = size(d);
      Coord c = r.me;
      const bool neg = l % 2;
      const bool edge = neg ? c[d] == 0 : c[d] == s - 1;
      c[d] = (c[d] + (neg ? s - 1 : 1)) % s;
      r.nb[static_cast<size_t>(l)] = (!o_.torus && edge) ? -1 : node(c);
    }
  }
  bring_up();
}

TlmNetwork::~TlmNetwork() = default;

void TlmNetwork::bring_up() {
  const int nl = nport_ - 1;
  for (;;) {
    bool up = true;
    for (const Router& r : routers_) {
      for (int l = 0; l < nl; ++l) up = up && (r.nb[size_t(l)] < 0 || (r.tx[size_t(l)].up && r.rx[size_t(l)].up));
    }
    if (up) return;
    if (cycle_ > 200) throw NocError(fmt::format("links not up {} cycles after reset", cycle_));
    step();
  }
}

bool TlmNetwork::link_up(int n, int l) const {
  const Router& r = routers_.at(static_cast<size_t>(n));
  return r.nb.at(static_cast<size_t>(l)) >= 0 && r.tx[size_t(l)].up && !r.tx[size_t(l)].down && r.rx[size_t(l)].up;
}

uint64_t TlmNetwork::flits_in_network() const {
  uint64_t f = 0;
  for (const Router& r : routers_) {
    const LocalPort& lp = local_[size_t(&r - routers_.data())];
    f += uint64_t(r.flits) + lp.inj.a_full + lp.inj.b_full + lp.ej.a_full + lp.ej.b_full;
    // A flit counts on its link from the edge that sends it first to the edge its receiver accepts it: the sender's
    // next sequence number minus the one the receiver expects (copies on the wire and replays are not extra flits).
    for (int l = 0; l < nport_ - 1; ++l) {
      const int nb = r.nb[size_t(l)];
      if (nb >= 0) f += (r.tx[size_t(l)].seq - routers_[size_t(nb)].rx[size_t(l ^ 1)].exp) & kSeqMask;
    }
  }
  return f;
}

int TlmNetwork::credits(int n, int l, int vc) const {
  return routers_.at(size_t(n)).tx.at(size_t(l)).crd.at(size_t(vc));
}

int TlmNetwork::unacknowledged(int n, int l) const {
  const TxLink& t = routers_.at(size_t(n)).tx.at(size_t(l));
  return int((t.seq - t.una) & kSeqMask);
}

uint64_t TlmNetwork::link_port_flits(int n, int l) const {
  if (l < 0 || l >= nport_ - 1) throw NocError(fmt::format("link port {}: a {}-D router has 0..{}", l, o_.ndim, nport_ - 2));
  return routers_.at(static_cast<size_t>(n)).sent[size_t(l)];
}

std::string TlmNetwork::port_at(int n, int l) const {
  return fmt::format("cycle {} router {} port {}", cycle_, node_name(n), link_port_name(l));
}

void TlmNetwork::step() {
  const double t0 = step_clock_seconds();
  // trn_noc_link_rx: a refresh beat at every REFRESH-th edge since reset, for VC (edge / REFRESH) mod NUM_VC.
  const uint64_t refresh = uint64_t(o_.retry.refresh);
  refresh_tick_ = (cycle_ & (refresh - 1)) == refresh - 1;
  refresh_vc_ = static_cast<uint8_t>((cycle_ / refresh) % uint64_t(o_.num_vc));
  if (pool_) {
    pool_->run([this](int t) {
      const auto [begin, end] = StepPool::range(nodes(), pool_->threads(), t);
      (this->*eval_)(begin, end, tallies_[size_t(t)]);
    });
  } else {
    (this->*eval_)(0, nodes(), tallies_[0]);
  }
  for (Tally& t : tallies_) {
    stats_ += t.stats;
    t.stats = LinkStats{};
    link_flits_ += t.link_flits;
    t.link_flits = 0;
    down_.insert(down_.end(), t.down.begin(), t.down.end());
    t.down.clear();
  }
  const size_t slots = size_t(o_.link_latency) + 2;
  pipe_head_ = pipe_head_ + 1 == slots ? 0 : pipe_head_ + 1;
  pipe_wr_ = pipe_wr_ + 1 == slots ? 0 : pipe_wr_ + 1;
  ++cycle_;
  step_seconds_ += step_clock_seconds() - t0;
  if (!down_.empty()) {
    std::vector<LinkEnd> ends;
    for (const auto& [n, l] : down_) ends.push_back({node_name(n), l, node_name(routers_[size_t(n)].nb[size_t(l)])});
    throw NocError(link_down_error(cycle_, ends, o_.retry.replay_limit));
  }
}

void TlmNetwork::head_lost(int n, int i) const {
  throw NocError(fmt::format("cycle {} router {} input VC {}: a body/tail flit at the front of an idle VC (head lost)",
                             cycle_, node_name(n), i));
}

void TlmNetwork::dst_outside(int n, const Flit& head) const {
  throw NocError(fmt::format("cycle {} router {}: head flit for router {} outside the {} network", cycle_,
                             node_name(n), header_dst(head.data).str(kMaxDim), o_.str()));
}

// trn_noc_input_port route() and va_mask for the head flit at the front of input VC i of router r (node n): the
// output port and the output VCs it may ask for, kept in the VC until its front changes. kNdim as in eval_router.
template <int kNdim>
void TlmNetwork::route(Router& r, int n, int i) const {
  InVc& s = r.vc[size_t(i)];
  const Flit& hf = r.buf[size_t(i * o_.depth + s.rd)];
  if (!hf.head) head_lost(n, i);
  const int nd = kNdim != 0 ? kNdim : o_.ndim;
  const uint32_t dst = static_cast<uint32_t>(hf.data >> 52);  // coord_t: 4 bits per dimension
  // Dimension order: the first dimension where dst differs decides (visited last to first, so that it is the
  // last one kept: selects, not branches, since destinations are random); every coordinate must lie in the network.
  unsigned hop = 0, any = (dst >> (kCoordBits * nd)) != 0 ? kHopOutside : 0;
  for (int d = nd - 1; d >= 0; --d) {
    const uint8_t h = hop_[size_t(d)][size_t(r.me[d])][dst >> (kCoordBits * d) & (kMaxSize - 1)];
    any |= h;
    hop = (h & kHopPort) != 0 ? h : hop;
  }
  if (any & kHopOutside) dst_outside(n, hf);
  const int oport = static_cast<int>(hop & kHopPort);
  // Dateline class chosen on entering a ring (1 iff the way to dst takes the wrap-around link), kept along it: a
  // packet continues along a ring when it leaves on the link port opposite the one it came in on. Ejection, and
  // every hop of a mesh, may use both classes.
  const int p = in_port_[size_t(i)];
  const bool cont = p != 0 && ((p - 1) ^ 1) == oport - 1;
  const int dclass = cont ? in_dclass_[size_t(i)] : ((hop & kHopWraps) != 0 ? 1 : 0);
  const uint8_t mask = class_mask_[header_mclass(hf.data)][size_t(oport == 0 || !o_.torus ? 2 : dclass)];
  s.routed = true;
  s.route_oport = static_cast<uint8_t>(oport);
  s.route_mask = mask;
}

// One router, one cycle: the combinational logic on this cycle's inputs and registers, then the clock edge, then
// its outputs into the link pipes. kNdim and kVc, when not 0, are the network's dimensions and VC count as
// compile-time constants: the compiler then unrolls the loops over link ports and VCs and folds the index
// arithmetic (TlmNetwork's constructor picks the instance; 0 reads them from the options).
template <int kNdim, int kVc>
void TlmNetwork::eval_router(int n, Tally& tally) {
  Router& r = routers_[static_cast<size_t>(n)];
  LocalPort& lp = local_[static_cast<size_t>(n)];
  const int V = kVc != 0 ? kVc : o_.num_vc, D = o_.depth;
  const int NL = 2 * (kNdim != 0 ? kNdim : o_.ndim), NP = NL + 1;
  const size_t rd_base = pipe_head_ * links_, wr_base = pipe_wr_ * links_;
  const uint8_t all_vcs = static_cast<uint8_t>((1u << V) - 1);

  // ---- Inputs from the links ----
  // The beats are read in place (no router writes a pipe's read slot in this step); a beat the fault injector
  // changes is read from a copy.
  static const LinkFwd kNoFwd{};
  static const LinkBwd kNoBwd{};
  std::array<const LinkFwd*, 2 * kMaxDim> rxin;
  std::array<const LinkBwd*, 2 * kMaxDim> txin;
  const bool fast = fast_links_;
  uint32_t arriving = 0;  // bit l: a flit arrives at link port l (after the fault injector)
  for (int l = 0; l < NL; ++l) {
    const int nb = r.nb[size_t(l)];
    if (nb < 0) {
      rxin[size_t(l)] = &kNoFwd;
      txin[size_t(l)] = &kNoBwd;
      continue;
    }
    const LinkFwd& fi = fwd_[rd_base + size_t(nb * NL + (l ^ 1))];
    const LinkBwd& bi = bwd_[rd_base + size_t(nb * NL + (l ^ 1))];
    rxin[size_t(l)] = &fi;
    txin[size_t(l)] = &bi;
    if (faults_.enabled()) {
      if (fi.valid) {
        tally.fault_fwd[l] = fi;
        inject(tally.fault_fwd[l], uint64_t(nb * NL + (l ^ 1)), tally.stats);
        rxin[size_t(l)] = &tally.fault_fwd[l];
      }
      if (bi.valid) {
        tally.fault_bwd[l] = bi;
        inject(tally.fault_bwd[l], uint64_t(n * NL + l), tally.stats);
        txin[size_t(l)] = &tally.fault_bwd[l];
      }
    }
    arriving |= rxin[size_t(l)]->valid ? 1u << l : 0u;
  }
  const bool tick = refresh_tick_;
  // A router with nothing buffered, nothing arriving, nothing to send or acknowledge keeps every register (no
  // arbiter has a request, no counter moves): only its idle outputs need writing. The links are looked at only when
  // the rest is idle.
  const auto link_activity = [&] {
    for (int l = 0; l < NL; ++l) {
      if (r.nb[size_t(l)] < 0) continue;
      const LinkFwd& fi = *rxin[size_t(l)];
      const LinkBwd& bi = *txin[size_t(l)];
      if (fi.valid || fi.init || bi.valid || bi.init ||
          (fast ? r.tx[size_t(l)].out.valid : !r.tx[size_t(l)].idle()) || r.rx[size_t(l)].out.valid) {
        return true;
      }
    }
    return false;
  };
  if (!tick && r.flits == 0 && !lp.inj.valid() && !lp.inj_valid_in && !lp.ej.valid() && r.boot && !r.hello &&
      !link_activity()) {
    for (int l = 0; l < NL; ++l) {
      const int nb = r.nb[size_t(l)];
      if (nb < 0) continue;
      fwd_[wr_base + size_t(n * NL + l)] = LinkFwd{};
      bwd_[wr_base + size_t(n * NL + l)] = LinkBwd{};
    }
    return;
  }

  // ---- Local injection (trn_noc_router u_inj, inj_ready / push[0]) ----
  const bool inj_out_valid = lp.inj.valid();
  const Flit inj_out = lp.inj.out();
  const bool inj_vc_ok = inj_out.vc < V;
  if (inj_out_valid && !inj_vc_ok) {
    throw NocError(fmt::format("cycle {} router {}: injected flit names VC {}, the router has {} VCs", cycle_,
                               node_name(n), inj_out.vc, V));
  }
  const bool inj_ready_int = inj_vc_ok ? r.vc[inj_out.vc].count != D : true;
  const bool push0 = inj_out_valid && inj_ready_int && inj_vc_ok;

  // ---- Output ports that may be allocated (port_ok) and room downstream (room) ----
  uint32_t port_ok = 1;
  std::array<uint8_t, kMaxPorts> room{};
  room[0] = lp.ej.in_ready() ? all_vcs : 0;
  for (int l = 0; l < NL; ++l) {
    const TxLink& t = r.tx[size_t(l)];
    if (!t.up || t.down) continue;
    port_ok |= 1u << (l + 1);
    if (t.rp) continue;  // crd_avail_o is low during a replay
    room[size_t(l + 1)] = t.crd_mask;
  }

  // ---- VC allocation (trn_noc_input_port route(), va_mask; trn_noc_vc_alloc) ----
  std::array<uint64_t, kMaxIn> req2;  // per output VC o * V + w: the input VCs that picked it
  std::array<uint8_t, kMaxIn> touched_list;
  int touched = 0;
  uint64_t touched_mask = 0;  // bit k: k is in touched_list
  std::array<uint8_t, kMaxIn> pick_w, req_oport;
  for (uint64_t m = r.va_req; m != 0; m &= m - 1) {
    const int i = __builtin_ctzll(m);
    InVc& s = r.vc[size_t(i)];
    if (!s.routed) route<kNdim>(r, n, i);
    const int oport = s.route_oport;
    req_oport[size_t(i)] = static_cast<uint8_t>(oport);
    if (!(port_ok >> oport & 1)) continue;
    const uint8_t mask = s.route_mask;
    const uint8_t cand = mask & static_cast<uint8_t>(~r.busy[size_t(oport)]);
    if (cand == 0) continue;
    const int w = rr_pick(cand, r.va1_ptr[size_t(i)]);
    pick_w[size_t(i)] = static_cast<uint8_t>(w);
    const int k = oport * V + w;
    if (!(touched_mask >> k & 1)) {
      touched_mask |= uint64_t{1} << k;
      touched_list[size_t(touched++)] = static_cast<uint8_t>(k);
      req2[size_t(k)] = 0;
    }
    req2[size_t(k)] |= uint64_t{1} << i;
  }
  std::array<uint8_t, kMaxIn> va_gnt_list;  // granted input VCs; the output VC is pick_w, the port req_oport
  int va_gnts = 0;
  for (int t = 0; t < touched; ++t) {
    const int k = touched_list[size_t(t)];
    const int i = rr_pick(req2[size_t(k)], r.va2_ptr[size_t(k)]);
    r.va2_ptr[size_t(k)] = rr_next(i, NP * V);
    r.va1_ptr[size_t(i)] = rr_next(pick_w[size_t(i)], V);
    va_gnt_list[size_t(va_gnts++)] = static_cast<uint8_t>(i);
  }

  // ---- Switch allocation (trn_noc_sw_alloc) ----
  std::array<uint8_t, kMaxPorts> pick_vc;
  std::array<uint32_t, kMaxPorts> want;  // per output port: the input ports whose stage-1 winner wants it
  uint32_t wanted = 0;                   // the output ports with a bit in want (only their entries are written)
  // Stage 1 visits only the input ports with a VC in sa_req, stage 2 only the output ports some winner wants.
  for (uint64_t rest = r.sa_req; rest != 0;) {
    const int p = __builtin_ctzll(rest) / V;
    const uint32_t vcs = static_cast<uint32_t>(rest >> (p * V)) & all_vcs;
    rest &= ~(uint64_t{all_vcs} << (p * V));
    uint32_t req = 0;
    for (uint32_t m = vcs; m != 0; m &= m - 1) {
      const int v = __builtin_ctz(m);
      const InVc& s = r.vc[size_t(p * V + v)];
      if (room[s.oport] >> s.ovc & 1) req |= 1u << v;
    }
    if (req == 0) continue;
    const int v = rr_pick(req, r.sa1_ptr[size_t(p)]);
    pick_vc[size_t(p)] = static_cast<uint8_t>(v);
    const int o = r.vc[size_t(p * V + v)].oport;
    want[size_t(o)] = ((wanted >> o & 1) ? want[size_t(o)] : 0) | 1u << p;
    wanted |= 1u << o;
  }
  std::array<bool, kMaxPorts> out_valid{};
  std::array<Flit, kMaxPorts>& out_flit = r.xbar;  // valid where out_valid is
  uint32_t free = 0;  // bit l: input port l + 1 sent a flit on, so its receiver frees a slot of VC free_vc[l]
  std::array<uint8_t, 2 * kMaxDim> free_vc;
  for (uint32_t wm = wanted; wm != 0; wm &= wm - 1) {
    const int o = __builtin_ctz(wm);
    const int p = rr_pick(want[size_t(o)], r.sa2_ptr[size_t(o)]);
    r.sa2_ptr[size_t(o)] = rr_next(p, NP);
    const int v = pick_vc[size_t(p)];
    r.sa1_ptr[size_t(p)] = rr_next(v, V);
    // Traversal: the front flit, relabelled with its output VC; the input VC pops it.
    InVc& s = r.vc[size_t(p * V + v)];
    Flit f = r.buf[size_t((p * V + v) * D + s.rd)];
    f.vc = s.ovc;
    out_valid[size_t(o)] = true;
    out_flit[size_t(o)] = f;
    s.rd = static_cast<uint8_t>(s.rd + 1 == D ? 0 : s.rd + 1);
    s.routed = false;  // a new front
    --s.count;
    --r.flits;
    if (f.tail) {
      r.busy[s.oport] &= static_cast<uint8_t>(~(1u << s.ovc));  // release_vc
      s.active = false;
    }
    const uint64_t bit = uint64_t{1} << (p * V + v);  // was in sa_req
    if (s.count == 0) {
      r.sa_req &= ~bit;
    } else if (!s.active) {
      r.sa_req &= ~bit;
      r.va_req |= bit;
    }
    if (p > 0) {  // trn_noc_link_rx free_i: a credit goes back next cycle
      free |= 1u << (p - 1);
      free_vc[size_t(p - 1)] = static_cast<uint8_t>(v);
    }
  }

  // ---- Clock edge ----
  // VC grants take effect (active_q, oport_q, ovc_q; busy_q |= alloc).
  for (int t = 0; t < va_gnts; ++t) {
    const int i = va_gnt_list[size_t(t)];
    InVc& s = r.vc[size_t(i)];
    s.active = true;
    s.oport = req_oport[size_t(i)];
    s.ovc = pick_w[size_t(i)];
    r.busy[s.oport] |= static_cast<uint8_t>(1u << s.ovc);
    r.va_req &= ~(uint64_t{1} << i);  // count != 0: it asked
    r.sa_req |= uint64_t{1} << i;
  }
  // Buffer writes: the pops above moved rd and count together, so rd + count is still the write slot.
  auto push = [&](int p, const Flit& f) __attribute__((always_inline)) {
    if (f.vc >= V) {
      throw NocError(fmt::format("cycle {} router {} port {}: flit on VC {}, only {} VCs", cycle_, node_name(n), p,
                                 f.vc, V));
    }
    InVc& s = r.vc[size_t(p * V + f.vc)];
    // trn_noc_router a_inj_whole_packet: one packet at a time per injection port. A flit of another VC while a
    // packet is open there could wait in the spill register in front of that packet's tail for ever (its own VC's
    // buffer full, its packet waiting for the output VC the open one holds): the port would never drain.
    for (int u = 0; p == 0 && u < V; ++u) {
      if (u != f.vc && r.vc[size_t(u)].in_open) {
        throw NocError(fmt::format("cycle {} router {} port 0: flit on VC {} injected while the packet on VC {} is "
                                   "open (one packet at a time per injection port: its tail first)",
                                   cycle_, node_name(n), f.vc, u));
      }
    }
    if (f.head == s.in_open) {  // trn_noc_input_port a_arrival_order
      throw NocError(fmt::format("cycle {} router {} port {} VC {}: {} flit arrived while a packet was {} (flits must "
                                 "arrive in order, packets contiguous per VC)",
                                 cycle_, node_name(n), p, f.vc, f.head ? "head" : "body/tail",
                                 s.in_open ? "in progress" : "not started"));
    }
    s.in_open = !f.tail;
    if (s.count == D) {
      throw NocError(fmt::format("cycle {} router {} port {} VC {}: flit arrived with the buffer full ({} flits): "
                                 "sent without a credit",
                                 cycle_, node_name(n), p, f.vc, D));
    }
    const int w = s.rd + s.count;
    r.buf[size_t((p * V + f.vc) * D + (w >= D ? w - D : w))] = f;
    if (s.count == 0) s.routed = false;  // a new front
    ++s.count;
    ++r.flits;
    (s.active ? r.sa_req : r.va_req) |= uint64_t{1} << (p * V + f.vc);
  };
  if (push0) push(0, inj_out);
  // trn_noc_link_rx arrival check: accept (accept_o: the input port stores the flit), drop, NAK.
  const uint32_t rx_valid = arriving;  // bit l: link port l's arrival
  uint32_t rx_accept = 0, rx_nak = 0;  // bit l: accepted, NAKed
  for (uint32_t m = arriving; m != 0; m &= m - 1) {
    const int l = __builtin_ctz(m);
    const LinkFwd& in = *rxin[size_t(l)];
    RxLink& x = r.rx[size_t(l)];
    if (!x.up) {
      throw NocError(fmt::format("cycle {} router {} port {}: flit arrived before the link came up", cycle_,
                                 node_name(n), link_port_name(l)));
    }
    const unsigned ahead = (in.seq - x.exp) & kSeqMask;
    const bool accept = in.crc_ok && ahead == 0;
    const bool drop_err = !in.crc_ok || (ahead != 0 && ahead < (kSeqMask + 1) / 2);
    rx_accept |= accept ? 1u << l : 0u;
    rx_nak |= drop_err && !x.nak ? 1u << l : 0u;
    if (!in.crc_ok) ++tally.stats.crc_errors;
    if (accept) push(l + 1, in.flit);
  }
  lp.inj.edge(lp.inj_valid_in, lp.inj_in, inj_ready_int);
  lp.ej.edge(out_valid[0], out_flit[0], lp.ej_ready_in);
  const uint8_t rvc = refresh_vc_;
  const bool hello = !r.boot;  // the bring-up beats go out after this edge (the second cycle after reset)
  for (int l = 0; l < NL; ++l) {
    const size_t L = size_t(l);
    if (r.nb[L] < 0) continue;
    const bool send = out_valid[L + 1];
    TxLink& t = r.tx[L];
    const LinkBwd& bi = *txin[L];
    // trn_noc_link_tx: the backward beat, credits, acknowledgements, replay.
    if (!t.up) {
      if (bi.init) {  // the credits are DEPTH already
        t.up = true;
        t.crd_mask = all_vcs;
      }
    } else if (t.down) {
      t.out.valid = false;  // crd_avail_o low, no replay: nothing leaves
    } else if (!bi.valid && !send && (fast || (t.seq == t.una && !t.rp))) {
      // Quiet: no backward beat, nothing to send, nothing unacknowledged. Of the registers below only the output
      // register (empty) and the replay timer (0: not waiting) change. On fault-free links (fast) the timer and
      // what is unacknowledged do not matter (TlmNetwork::fast_links_).
      t.out.valid = false;
      t.tmr = 0;
    } else if (fast) {
      // A fault-free link (fast_links_): no replay can start, so only the credits, the sequence numbers and the
      // output register move; the replay buffer and the timer are not kept.
      if (bi.valid) {
        const unsigned outstanding = (t.seq - t.una) & kSeqMask;
        const unsigned ack_adv = (bi.ack - t.una) & kSeqMask;
        if (bi.vc >= V) bad_credit_vc(port_at(n, l), bi.vc, V);
        if (ack_adv > outstanding) bad_ack(port_at(n, l), bi.ack, t.una, t.seq);
        if (bi.nak) {  // only a damaged or lost flit makes a receiver NAK
          throw NocError(fmt::format("{}: NAK on a fault-free link (model error)", port_at(n, l)));
        }
        const unsigned delta = (bi.fc - t.fc[bi.vc]) & kFcMask;
        if (t.crd[bi.vc] + delta > unsigned(D)) bad_credits(port_at(n, l), bi.vc, delta, t.crd[bi.vc], D);
        t.crd[bi.vc] = static_cast<uint8_t>(t.crd[bi.vc] + delta);
        if (t.crd[bi.vc] != 0) t.crd_mask |= static_cast<uint8_t>(1u << bi.vc);
        t.fc[bi.vc] = bi.fc;
        t.una = bi.ack;
      }
      t.out.valid = send;
      if (send) {  // room[] guaranteed a credit
        const Flit& f = out_flit[L + 1];
        if (--t.crd[size_t(f.vc)] == 0) t.crd_mask &= static_cast<uint8_t>(~(1u << f.vc));
        t.out.seq = t.seq;
        t.out.flit = f;
        t.seq = static_cast<uint16_t>((t.seq + 1) & kSeqMask);
        ++tally.link_flits;
        ++r.sent[L];
      }
    } else {
      const bool bwd_valid = bi.valid;
      const bool beat = bwd_valid && bi.crc_ok;
      if (bwd_valid && !bi.crc_ok) ++tally.stats.bwd_errors;
      const unsigned outstanding = (t.seq - t.una) & kSeqMask;
      const unsigned ack_adv = (bi.ack - t.una) & kSeqMask;
      if (beat && bi.vc >= V) bad_credit_vc(port_at(n, l), bi.vc, V);
      if (beat && ack_adv > outstanding) bad_ack(port_at(n, l), bi.ack, t.una, t.seq);
      const bool progress = beat && ack_adv != 0;
      const uint16_t una_d = beat ? bi.ack : t.una;
      const bool waiting = outstanding != 0 && !t.rp;
      const bool timeout = waiting && !progress && t.tmr == o_.retry.replay_timeout - 1;
      const bool replay = (beat && bi.nak && una_d != t.seq) || timeout;
      // Credits (g_crd): + what the receiver freed on the beat's VC, - a new flit.
      if (beat) {
        const unsigned delta = (bi.fc - t.fc[bi.vc]) & kFcMask;
        if (t.crd[bi.vc] + delta > unsigned(D)) bad_credits(port_at(n, l), bi.vc, delta, t.crd[bi.vc], D);
        t.crd[bi.vc] = static_cast<uint8_t>(t.crd[bi.vc] + delta);
        if (t.crd[bi.vc] != 0) t.crd_mask |= static_cast<uint8_t>(1u << bi.vc);
        t.fc[bi.vc] = bi.fc;
      }
      if (send) {  // room[] guaranteed a credit
        const int v = out_flit[L + 1].vc;
        if (--t.crd[size_t(v)] == 0) t.crd_mask &= static_cast<uint8_t>(~(1u << v));
      }
      // Output register: a replayed flit, else the new one (read the replay buffer before this edge's write).
      const bool replaying = t.rp && !replay;
      const size_t rb_mask = t.rb.size() - 1;
      if (replaying) {
        t.out.valid = true;
        t.out.seq = t.rp_seq;
        t.out.flit = t.rb[t.rp_seq & rb_mask];
        ++tally.stats.replayed;
      } else {
        t.out.valid = send;
        if (send) {
          t.out.seq = t.seq;
          t.out.flit = out_flit[L + 1];
        }
      }
      if (send) {
        t.rb[t.seq & rb_mask] = out_flit[L + 1];
        t.seq = static_cast<uint16_t>((t.seq + 1) & kSeqMask);
      }
      if (t.out.valid) {
        ++tally.link_flits;
        ++r.sent[L];
      }
      t.tmr = (!waiting || progress || replay) ? 0 : t.tmr + 1;
      if (replay) {
        t.rp = true;
        t.rp_seq = una_d;
        ++tally.stats.replays;
      } else if (t.rp) {
        t.rp = ((t.rp_seq + 1) & kSeqMask) != t.seq;
        t.rp_seq = static_cast<uint16_t>((t.rp_seq + 1) & kSeqMask);
      }
      const int base = progress ? 0 : t.rty;
      if (replay && base == o_.retry.replay_limit) {
        t.down = true;
        t.rp = false;
        tally.down.push_back({n, l});
      } else if (replay) {
        t.rty = base + 1;
      } else if (progress) {
        t.rty = 0;
      }
      t.una = una_d;
    }
    // trn_noc_link_rx: expected sequence number, error episode, freed counts, the backward register.
    RxLink& x = r.rx[L];
    if (x.up && !((free | rx_valid) >> l & 1) && !tick) {
      x.out.valid = false;  // quiet: no beat to send back, nothing else changes (the idle beat's fields are unused)
    } else {
      const bool freed = free >> l & 1, arrived = rx_valid >> l & 1, accepted = rx_accept >> l & 1,
                 naked = rx_nak >> l & 1;
      const bool was_up = x.up;
      if (!x.up && rxin[L]->init) x.up = true;
      if (accepted) x.exp = static_cast<uint16_t>((x.exp + 1) & kSeqMask);
      if (accepted) {
        x.nak = false;
      } else if (naked) {
        x.nak = true;
      }
      if (freed) x.fc[free_vc[L]] = static_cast<uint8_t>((x.fc[free_vc[L]] + 1) & kFcMask);
      const uint8_t bvc = freed ? free_vc[L] : rvc;
      x.out.valid = was_up && (freed || arrived || tick);
      x.out.vc = bvc;
      x.out.fc = x.fc[bvc];
      x.out.ack = x.exp;
      x.out.nak = naked;
    }

    // ---- Outputs (register values after the edge) into the link pipes ----
    LinkFwd& f = fwd_[wr_base + size_t(n * NL + l)];
    LinkBwd& b = bwd_[wr_base + size_t(n * NL + l)];
    if (!hello) {  // the registers as they are (their init low, crc_ok set)
      f = t.out;
      b = x.out;
    } else {  // the bring-up beats, nothing valid
      f = LinkFwd{};
      f.init = true;
      b = LinkBwd{};
      b.init = true;
    }
  }
  r.hello = hello;
  r.boot = true;
}

template <int kNdim, int kVc>
void TlmNetwork::eval_routers(int begin, int end, Tally& tally) {
  for (int n = begin; n < end; ++n) eval_router<kNdim, kVc>(n, tally);
}

// The fault injector's beat, as the verilated routers see it: the raw bits with their CRC, the faults applied, the
// CRC checked as the receiver checks it.
void TlmNetwork::inject(LinkFwd& in, uint64_t link, LinkStats& stats) {
  const BeatFault f = faults_.forward(link, cycle_);
  if (!f.any()) return;
  if (f.drop) {
    in.valid = false;
    ++stats.injected_drops;
    return;
  }
  ++stats.injected_flips;
  const FwdBeat b = apply_fault(fwd_beat(in.flit, in.seq), f);
  in.flit = b.flit();
  in.seq = static_cast<uint16_t>(b.seq());
  in.crc_ok = crc_ok(b);
}

void TlmNetwork::inject(LinkBwd& in, uint64_t link, LinkStats& stats) {
  const BeatFault f = faults_.backward(link, cycle_);
  if (!f.any()) return;
  ++stats.injected_flips;
  const BwdBeat b = apply_fault(bwd_beat(in.vc, in.fc, in.ack, in.nak), f);
  in.vc = static_cast<uint8_t>(b.vc());
  in.fc = static_cast<uint8_t>(b.fc());
  in.ack = static_cast<uint16_t>(b.ack());
  in.nak = b.nak();
  in.crc_ok = crc_ok(b);
}

}  // namespace trnsim::model::noc
