// Cycle-accurate transaction-level model of a NeuronLink network: the routers of rtl/noc/trn_noc_router.sv and the
// links between them, in plain C++.
//
// Same behaviour as the RTL, cycle for cycle: the flit format of trn_noc_pkg, dimension-order routing with dateline
// VC classes and message-class VC groups, wormhole switching, per-VC credits with the link bring-up exchange,
// separable input-first round-robin VC and switch allocation with the RTL's arbiter pointers, DEPTH-flit VC buffers,
// the injection and ejection spill registers, the output register and link pipes of any latency. On the same
// injected traffic it takes and ejects the same flits in the same cycles as NocNetwork (cosim/noc/noc_rtl.h); the
// lockstep tests (tests/noc/noc_lockstep_test.cpp) compare every local port every cycle. docs/neuronlink.md ("The
// TLM model") says why it is plain C++ and not SystemC processes, and how it is made fast.
//
// Beyond the RTL: a mesh (no wrap-around links), 1-D rings, and any VC count / depth / group count within the flit
// format, so the same model serves studies the three verilated builds do not cover.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/noc/noc_link.h"
#include "model/noc/noc_ports.h"
#include "model/noc/step_pool.h"

namespace trnsim::model::noc {

/// trn_prim_spill_reg: two registers, A (input side) and B (parks A's beat when the consumer stalls). in_ready()
/// and valid() are register outputs; edge() is the clock edge with this cycle's inputs.
struct SpillReg {
  bool a_full = false, b_full = false;
  Flit a, b;
  bool valid() const { return a_full || b_full; }
  bool in_ready() const { return !a_full || !b_full; }
  const Flit& out() const { return b_full ? b : a; }
  void edge(bool in_valid, const Flit& in, bool out_ready) {
    const bool a_fill = in_valid && in_ready();
    const bool a_drain = a_full && !b_full;
    const bool b_fill = a_drain && !out_ready;
    const bool b_drain = b_full && out_ready;
    if (b_fill) b = a;
    if (a_fill) a = in;
    if (a_fill || a_drain) a_full = a_fill;
    if (b_fill || b_drain) b_full = b_fill;
  }
};

struct LinkFwd;  // noc_tlm.cpp: one beat of each channel of a link
struct LinkBwd;

/// Parameters of a TLM network (the RTL router's parameters plus the topology).
struct TlmOptions {
  int ndim = 2;                      ///< 1..3
  std::array<int, 3> size{4, 4, 1}; ///< routers per dimension, 2..16 (the 4-bit coordinates); 1 beyond ndim
  bool torus = true;                 ///< false: mesh, no wrap-around links (then every VC of a group is usable)
  int num_vc = 2;                    ///< VCs per port, 2..8, a multiple of 2 * vc_groups (NUM_VC)
  int vc_groups = 1;                 ///< message-class groups (VC_GROUPS)
  int depth = 4;                     ///< flit slots per VC buffer, 1..63 (DEPTH)
  int link_latency = 0;              ///< register stages a link adds beyond the router's output register, 0..32
  RetryParams retry;                 ///< link-level retry (REPLAY_TIMEOUT, REPLAY_LIMIT, REFRESH)
  LinkErrors errors;                 ///< faults injected on the links at run time
  /// Keep every link's replay buffer and replay timer even when no replay can start (fault-free links, a replay
  /// timeout above the acknowledgement's round trip): for tests that compare this with the fast evaluation.
  bool exact_links = false;
  /// Host threads that evaluate the routers, 1..StepPool::kMaxThreads (more than the routers are not started): each
  /// takes a contiguous range of routers every cycle (model/noc/step_pool.h); the results do not depend on it.
  int threads = 1;
  /// Throws NocError naming the first illegal field.
  void validate() const;
  /// "4x4 torus, 2 VCs (1 group) x 4 flits, link latency 0"
  std::string str() const;
};

class TlmNetwork final : public NocPorts {
 public:
  /// Builds the network, resets it and runs the link bring-up (every connected link up; as the RTL, this takes
  /// link_latency + 2 cycles, so cycle() counts the same as NocNetwork's). Throws NocError for bad options.
  explicit TlmNetwork(const TlmOptions& options);
  ~TlmNetwork() override;
  TlmNetwork(const TlmNetwork&) = delete;
  TlmNetwork& operator=(const TlmNetwork&) = delete;

  const TlmOptions& options() const { return o_; }
  int ndim() const override { return o_.ndim; }
  int size(int d) const override { return o_.size[static_cast<size_t>(d)]; }
  bool torus() const override { return o_.torus; }
  int num_vc(int) const override { return o_.num_vc; }

  // The local ports, inline: a traffic generator that knows it drives a TlmNetwork calls them without a virtual
  // call (cosim/noc/noc_traffic.cpp).
  bool inj_ready(int node) const override { return local_[size_t(node)].inj.in_ready(); }
  void drive_inject(int node, const Flit* flit) override {
    LocalPort& p = local_[size_t(node)];
    p.inj_valid_in = flit != nullptr;
    if (flit) p.inj_in = *flit;
  }
  bool ej_valid(int node) const override { return local_[size_t(node)].ej.valid(); }
  Flit ej_flit(int node) const override { return local_[size_t(node)].ej.out(); }
  void drive_eject_ready(int node, bool ready) override { local_[size_t(node)].ej_ready_in = ready; }

  /// One cycle. Throws NocError if a flit would overflow a VC buffer, a credit count would leave 0..DEPTH, an
  /// acknowledgement falls outside the sender's window, a head flit names a destination outside the network, a
  /// VC's flits break packet order, an injection port gets a flit of another VC while a packet is open there (the
  /// checks the RTL makes with assertions), or a link goes down (REPLAY_LIMIT replays in a row unacknowledged).
  void step() override;
  uint64_t cycle() const override { return cycle_; }
  uint64_t link_flits() const override { return link_flits_; }
  double step_seconds() const override { return step_seconds_; }
  std::string backend() const override { return "tlm"; }
  /// Host threads evaluating the routers (TlmOptions::threads, at most one per router).
  int threads() const { return pool_ ? pool_->threads() : 1; }
  LinkStats link_stats() const override {  // flits: the link flit count this class keeps anyway
    LinkStats s = stats_;
    s.flits = link_flits_;
    return s;
  }

  /// The links skip the replay buffer and timer: no fault is injected, the replay timeout exceeds the
  /// acknowledgement's round trip (2 link_latency + 1 edges) and TlmOptions::exact_links is off.
  bool fast_links() const { return fast_links_; }
  /// Link port `link` of `node` is up (both directions). False for the missing boundary links of a mesh.
  bool link_up(int node, int link) const;
  /// Flits in the network: in VC buffers and spill registers, and sent on a link but not yet accepted by its
  /// receiver (in flight, or waiting in a replay buffer to be sent again).
  uint64_t flits_in_network() const;
  /// Flits router `node` has sent on link port `link` (0 = +x, 1 = -x, 2 = +y, ...) since reset: which way packets
  /// went (tests of the routing rules).
  uint64_t link_port_flits(int node, int link) const;

  /// Credits router `node`'s sender on link port `link` holds for VC `vc` (DEPTH when the far buffer is empty), and
  /// the flits it has sent there that are not acknowledged yet (held in its replay buffer).
  int credits(int node, int link, int vc) const;
  int unacknowledged(int node, int link) const;

  struct Router;  // noc_tlm.cpp

 private:
  // What the routers one thread evaluates count in a step, added to the network's totals after it (the threads'
  // link-down lists in router order, so the error names the links as one thread would).
  struct alignas(64) Tally {  // a cache line of its own: the threads count into theirs every flit
    LinkStats stats;
    uint64_t link_flits = 0;
    std::vector<std::pair<int, int>> down;  // links that went down in this step: (node, link port)
    LinkFwd* fault_fwd = nullptr;  // scratch, 2 * kMaxDim beats each (in fault_fwd_ / fault_bwd_): copies of the
    LinkBwd* fault_bwd = nullptr;  // beats the injector changed, per link port
  };
  template <int kNdim, int kVc>
  [[gnu::always_inline]] inline void eval_router(int n, Tally& tally);
  // Routers begin .. end - 1, one after the other: the loop around eval_router in one function per shape, so that
  // what does not change between routers (the shape, the pipe slots, the options) is read once per step.
  template <int kNdim, int kVc>
  void eval_routers(int begin, int end, Tally& tally);
  void (TlmNetwork::*eval_)(int, int, Tally&) = nullptr;  // the eval_routers instance for this network's shape
  void bring_up();
  // route() and va_mask of the head flit at the front of router n's input VC i, kept in the VC (noc_tlm.cpp).
  template <int kNdim>
  void route(Router& r, int n, int i) const;
  [[noreturn, gnu::cold, gnu::noinline]] void head_lost(int n, int i) const;  // route()'s errors
  [[noreturn, gnu::cold, gnu::noinline]] void dst_outside(int n, const Flit& head) const;
  std::string port_at(int n, int l) const;  // "cycle C router R port P", for error messages
  void inject(LinkFwd& beat, uint64_t link, LinkStats& stats);  // the fault injector's changes to a beat read
  void inject(LinkBwd& beat, uint64_t link, LinkStats& stats);  // from a pipe

  // A router's local port (trn_noc_router u_inj, u_ej): its spill registers and what drives them this cycle.
  struct LocalPort {
    SpillReg inj, ej;
    bool inj_valid_in = false;
    Flit inj_in;
    bool ej_ready_in = true;
  };

  TlmOptions o_;
  int nport_ = 0, nin_ = 0;
  std::vector<Router> routers_;
  std::vector<LocalPort> local_;  // per router
  // The link pipes: fwd_ i = n * (2 * ndim) + l carries the flits router n sends from link port l, bwd_ i the
  // credits and acknowledgements router n's receiver on port l sends back (so every router writes only its own
  // entries, and the threads of a step share no cache line but at their ranges' ends). A ring of latency + 2
  // slots of every link's beat (slot s of link i at s * links_ + i): written after the edge at (head + latency +
  // 1), read before the next one at head, so a beat is seen latency + 1 cycles later, as through NocNetwork's
  // latency + 1 register stages.
  size_t links_ = 0;
  std::vector<LinkFwd> fwd_;
  std::vector<LinkBwd> bwd_;
  size_t pipe_head_ = 0;        // the pipes' slot read this cycle
  size_t pipe_wr_ = 0;          // and the slot written: (pipe_head_ + link_latency + 1) mod (link_latency + 2)
  int class_vcs_ = 0;           // VCs per dateline class of a group: num_vc / (2 vc_groups)
  // route()'s table: hop_[d][b][a], the way from coordinate b to a in dimension d: 0 (there) or the output port
  // (1 + 2 d, + 1 for the negative direction; bits kHopPort) or'ed with kHopWraps when that way takes the
  // wrap-around link; kHopOutside when a or b is outside the network.
  static constexpr uint8_t kHopPort = 7, kHopWraps = 8, kHopOutside = 16;
  std::array<std::array<std::array<uint8_t, kMaxSize>, kMaxSize>, kMaxDim> hop_{};
  // va_mask by message class (2 bits): the VCs of its group in dateline class 0, in class 1, and in both.
  std::array<std::array<uint8_t, 3>, 4> class_mask_{};
  // Input VC i's port, and the dateline class of its VC.
  std::array<uint8_t, (1 + 2 * kMaxDim) * kMaxVc> in_port_{}, in_dclass_{};
  // No fault is injected and the replay timeout exceeds the acknowledgement's round trip (2 latency + 1), so no
  // replay can start: the links' transmitters skip the replay buffer and timer, and a transmitter with unacknowledged
  // flits but nothing to send lets its router take the idle shortcut. Same cycles and flits as the exact evaluation
  // (tests/noc/noc_tlm_test.cpp compares them, and the lockstep tests the RTL).
  bool fast_links_ = false;
  bool refresh_tick_ = false;  // this cycle's edge sends the receivers' refresh beats (step())
  uint8_t refresh_vc_ = 0;     // for this VC
  uint64_t cycle_ = 0;
  uint64_t link_flits_ = 0;
  double step_seconds_ = 0;
  LinkFaultInjector faults_;
  std::vector<LinkFwd> fault_fwd_;  // the tallies' scratch beats: 2 * kMaxDim per thread
  std::vector<LinkBwd> fault_bwd_;
  std::vector<Tally> tallies_;      // one per thread
  std::unique_ptr<StepPool> pool_;  // threads > 1 only
  LinkStats stats_;
  std::vector<std::pair<int, int>> down_;  // links that went down in this step: (node, link port)
};

}  // namespace trnsim::model::noc
