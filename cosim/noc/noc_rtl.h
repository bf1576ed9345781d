// A NeuronLink torus of verilated routers (rtl/noc/trn_noc_router.sv), wired and clocked from C++.
//
// Every router is its own verilated model; NocNetwork connects their link ports through C++ register pipes (the
// link latency), drives all of them from one clock, and exposes each router's local injection and ejection ports.
// One verilated router serves every torus size (sizes and coordinates are strap inputs), so a network of any size
// costs no extra verilation; docs/neuronlink.md explains the choice. Traffic generation and checking are in
// noc_traffic.h.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cosim/noc/noc_flit.h"

#include "cosim/wave_window.h"
#include "model/noc/step_pool.h"

class VerilatedContext;

namespace trnsim::cosim {
class WindowedFst;
}

namespace trnsim::cosim::noc {

/// The parameters of one verilated router build (read back from the router's params_o port).
struct RouterBuild {
  std::string name;  ///< e.g. "d2v2" (rtl/noc/trn_noc.cmake)
  int ndim = 0;
  int num_vc = 0;
  int vc_groups = 0;
  int depth = 0;
  RetryParams retry;  ///< REPLAY_TIMEOUT, REPLAY_LIMIT, REFRESH
  int vcs_per_class() const { return num_vc / (2 * vc_groups); }
  std::string str() const;  ///< "d2v2 (NDIM=2 NUM_VC=2 VC_GROUPS=1 DEPTH=4)"
};

/// The router builds in this binary.
std::vector<RouterBuild> built_routers();

/// A deliberate fault on one link, for negative tests. It acts on the link that leaves router `node` through link
/// port `link` (its flits) or that comes back into it (its backward beats), at the first eligible beat at or after
/// `cycle` (cycles counted from reset release). The link-level retry recovers from a lost or repeated beat; the
/// others break a protocol rule that an assertion names.
struct LinkFault {
  enum class Kind {
    kDuplicateFlit,  ///< the last flit the link carried (or the first one, if none yet) is delivered once more, in the
                     ///< first free slot at or after `cycle` (the receiver drops it: its sequence number is old)
    kDropFlit,       ///< a flit is not delivered (the receiver NAKs the gap, or the sender's timeout replays it)
    kExtraCredit,    ///< a backward beat with a right CRC returns one slot of VC 0 that was never freed
    kDropCredit,     ///< a backward beat for `node` is lost (the next one carries the same news)
    kPartnerCfg,     ///< the credit-init beat arriving at `node` advertises `cfg` (a receiver built differently)
    kCut,            ///< the link carries nothing in either direction (not connected)
    kBadAck,         ///< a backward beat with a right CRC acknowledges 5 flits beyond the last one sent
  };
  Kind kind = Kind::kExtraCredit;
  int node = 0;
  int link = 0;
  uint64_t cycle = 0;
  LinkCfg cfg;  ///< kPartnerCfg only
};

/// How to build a network.
struct NocOptions {
  int ndim = 2;                       ///< 1..3
  std::array<int, 3> size{4, 4, 1};   ///< routers per dimension, 2..16 (1 beyond ndim)
  std::string router;                 ///< router build; empty = "d2v2" for 2-D, "d3v4g2" for 3-D
  std::map<int, std::string> node_router;  ///< per-node build override (node index -> build name)
  int link_latency = 0;               ///< register stages each link adds beyond the router's output register, 0..32
  /// FST waveform of the routers; empty = none, unless TRNSIM_WAVE names one (cosim/wave_window.h: any test or tool
  /// re-run with a waveform: TRNSIM_WAVE=FILE.fst, TRNSIM_WAVE_FROM, TRNSIM_WAVE_TO, TRNSIM_WAVE_SCOPE).
  std::string wave_path;
  uint64_t wave_from = 0;             ///< first cycle recorded (cycles since reset release; the reset is not recorded)
  uint64_t wave_to = UINT64_MAX;      ///< last cycle recorded, inclusive; the file stays open (and valid) after it
  /// Hierarchy to record: a router ("node_1_0", as node_name() with "node_" before it) or part of one
  /// ("node_1_0.trn_noc_router.g_in[2]"); several separated by commas; empty = every router. The clock of each
  /// router named is always recorded.
  std::string wave_scope;
  /// The command that reproduces this run (e.g. "trnsim noc --dims 4x4 ... --lockstep"): failure messages complete
  /// it with --wave and a window around the failing cycle. Empty: they give the TRNSIM_WAVE variables instead.
  std::string rerun_command;
  std::vector<LinkFault> faults;
  /// Faults on every link at run time (bit errors, lost flits): model/noc/noc_link.h.
  LinkErrors errors;
  /// false: step() and the constructor never throw for RTL assertions or link errors (negative tests inspect
  /// rtl_error() and the link status instead).
  bool fail_on_errors = true;
  /// Host threads that evaluate the routers (1..StepPool::kMaxThreads; more than the routers are not started).
  /// Each takes a contiguous range of routers for both evaluations of every cycle (model/noc/step_pool.h); the
  /// links, faults, waveform and checks stay on the caller's thread, so the results are the same for any count.
  int threads = 1;
  /// false: the routers' assertions are not evaluated (VerilatedContext::assertOn(false), the run-time switch other
  /// simulators call $assertoff), for long runs whose data the traffic checker and the link counters already check;
  /// what it saves is in docs/neuronlink.md, "Measured figures". The same flits in the same cycles.
  bool assertions = true;
};

/// The --wave-scope list of `options` as Verilator names the scopes ("node_1_0.trn_noc_router..."), checked against
/// the routers of the network `options` describes. Throws NocError for a scope that names no router of it (listing
/// them) or that has a wildcard.
std::vector<std::string> wave_scopes(const NocOptions& options);

/// The cycles a re-run command records around a failure at `cycle`: 50 before it, 10 after it.
WaveWindow noc_wave_window(uint64_t cycle);

/// The network: routers, links, one clock. Its local ports follow NocPorts (model/noc/noc_ports.h).
class NocNetwork final : public NocPorts {
 public:
  /// Builds the torus, resets it and runs the link bring-up. Throws NocError naming the router, port and both
  /// parameter sets if a link reports a flow-control mismatch or does not come up, and for unknown builds or bad
  /// sizes.
  explicit NocNetwork(const NocOptions& options);
  ~NocNetwork() override;
  NocNetwork(const NocNetwork&) = delete;
  NocNetwork& operator=(const NocNetwork&) = delete;

  const NocOptions& options() const { return options_; }
  int ndim() const override { return options_.ndim; }
  int size(int d) const override { return options_.size[static_cast<size_t>(d)]; }
  int num_vc(int node) const override { return build(node).num_vc; }
  const RouterBuild& build(int node) const;

  // ---- Local ports, one cycle at a time. Set the inputs, then step(). ----
  /// inj_ready_o of `node` this cycle (a register output: valid until the next step()).
  bool inj_ready(int node) const override;
  /// Drives inj_valid_i / inj_flit_i for the coming edge (nullptr: valid low). The beat is taken iff inj_ready().
  void drive_inject(int node, const Flit* flit) override;
  /// ej_valid_o / ej_flit_o of `node` this cycle.
  bool ej_valid(int node) const override;
  Flit ej_flit(int node) const override;
  /// Drives ej_ready_i for the coming edge. The beat is taken iff ej_valid().
  void drive_eject_ready(int node, bool ready) override;

  /// One clock cycle. Throws NocError if an RTL assertion fired (the message names it on stderr) or a link
  /// reported an error.
  void step() override;
  /// Cycles since reset release.
  uint64_t cycle() const override { return cycle_; }
  /// Flits carried by links so far (every hop counts).
  uint64_t link_flits() const override { return link_flits_; }
  std::string backend() const override { return "rtl"; }
  LinkStats link_stats() const override {  // flits: the link flit count this class keeps anyway
    LinkStats s = stats_;
    s.flits = link_flits_;
    return s;
  }

  // ---- Link status ----
  bool link_up(int node, int link) const;
  int link_err_cause(int node, int link) const;  ///< 0 none, 1 credit-init mismatch, 2 bring-up mismatch, 3 timeout
  LinkCfg link_peer_cfg(int node, int link) const;  ///< what the far receiver advertised to this router's sender
  /// What router `node` drives on link port `link` this cycle: its forward beat (flits, bring-up) and the backward
  /// beat of its receiving end on that port (credits, acknowledgements), as raw bits before any injected fault.
  FwdBeat tx_beat(int node, int link) const;
  BwdBeat rx_beat(int node, int link) const;
  /// Neighbour of `node` through link port `link`.
  int neighbour(int node, int link) const;

  /// An RTL assertion has fired (its message went to stdout/stderr).
  bool rtl_error() const;
  /// A link port of any router reports an error (bring-up failed or the link is down).
  bool any_link_error() const;

  /// How to reproduce a failure at `cycle` with a waveform around it: "re-run with a waveform around it: <command>"
  /// from NocOptions::rerun_command (or the TRNSIM_WAVE variables). Also prints the "[ fail-at  ] block=BLOCK ..."
  /// line that the regression runner reads, and flushes the waveform.
  std::string failure_rerun(uint64_t cycle, const std::string& block);

  /// Seconds spent inside step(), by the monotonic clock (simulation speed figures).
  double step_seconds() const override { return step_seconds_; }
  /// Host threads evaluating the routers (NocOptions::threads, at most one per router).
  int threads() const { return pool_ ? pool_->threads() : 1; }

  class Router;  // one verilated router behind a type-erased interface (noc_rtl.cpp)

 private:
  struct Pipe;   // one direction of one link
  void reset();
  void check_errors();
  void eval_all(bool clk);  // every router: clock input to `clk`, then eval(), over the pool's threads
  [[noreturn]] void fail(const std::string& what);
  std::string describe_link_error(int node, int link) const;

  NocOptions options_;
  std::unique_ptr<VerilatedContext> context_;
  std::vector<std::unique_ptr<Router>> routers_;
  std::vector<Pipe> pipes_;
  std::unique_ptr<WindowedFst> wave_;
  std::unique_ptr<model::noc::StepPool> pool_;
  uint64_t cycle_ = 0;
  uint64_t link_flits_ = 0;
  LinkFaultInjector injector_;
  LinkStats stats_;
  uint64_t time_ps_ = 0;
  double step_seconds_ = 0;
};

}  // namespace trnsim::cosim::noc
