// A NeuronLink torus of verilated routers, wired and clocked from C++. See noc_rtl.h.
#include "cosim/noc/noc_rtl.h"
#include "cosim/rtl_coverage.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <type_traits>
#include <utility>

#include <fmt/core.h>
#include <verilated.h>
#if VM_TRACE
#include "cosim/wave_fst.h"
#endif

#if TRNSIM_HAVE_NOC_ROUTER_D2V2
#include "Vtrn_noc_router_d2v2.h"
#endif
#if TRNSIM_HAVE_NOC_ROUTER_D2V4
#include "Vtrn_noc_router_d2v4.h"
#endif
#if TRNSIM_HAVE_NOC_ROUTER_D3V4G2
#include "Vtrn_noc_router_d3v4g2.h"
#endif
#if TRNSIM_HAVE_NOC_ROUTER_D2V4B8
#include "Vtrn_noc_router_d2v4b8.h"
#endif

namespace trnsim::cosim::noc {

std::string RouterBuild::str() const {
  return fmt::format("{} (NDIM={} NUM_VC={} VC_GROUPS={} DEPTH={})", name, ndim, num_vc, vc_groups, depth);
}

namespace {

// ---- Port access: Verilator maps a packed port to CData/SData/IData/QData or VlWide<N> by width. ---------------
uint64_t low_mask(unsigned width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

// A wide port is an array of 32-bit words, least significant first. A field of up to 64 bits spans at most three of
// them: get_bits and set_bits move the (up to) three words as one 128-bit value, about a tenth of the instructions of
// a loop over 32-bit pieces (these run for every link port of every router every cycle).
template <class T>
constexpr unsigned words_of() {
  return static_cast<unsigned>(sizeof(T) / sizeof(uint32_t));
}

template <class T>
unsigned __int128 load_words(const T& port, unsigned w) {
  unsigned __int128 v = 0;
  for (unsigned k = 0; k < 3 && w + k < words_of<T>(); ++k) v |= static_cast<unsigned __int128>(port[w + k]) << (32 * k);
  return v;
}

/// Bits [lsb, lsb + width) of a port, width 1..64.
template <class T>
uint64_t get_bits(const T& port, unsigned lsb, unsigned width) {
  if constexpr (std::is_integral_v<T>) {
    return (static_cast<uint64_t>(port) >> lsb) & low_mask(width);
  } else {
    return static_cast<uint64_t>(load_words(port, lsb / 32) >> (lsb % 32)) & low_mask(width);
  }
}

/// Sets bits [lsb, lsb + width) of a port to the low `width` bits of value, width 1..64.
template <class T>
void set_bits(T& port, unsigned lsb, unsigned width, uint64_t value) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t mask = low_mask(width) << lsb;
    port = static_cast<T>((static_cast<uint64_t>(port) & ~mask) | ((value << lsb) & mask));
  } else {
    const unsigned w = lsb / 32, off = lsb % 32;
    const unsigned __int128 mask = static_cast<unsigned __int128>(low_mask(width)) << off;
    unsigned __int128 v = load_words(port, w);
    v = (v & ~mask) | ((static_cast<unsigned __int128>(value) << off) & mask);
    for (unsigned k = 0; k < 3 && w + k < words_of<T>(); ++k) port[w + k] = static_cast<uint32_t>(v >> (32 * k));
  }
}

}  // namespace

// One verilated router behind a type-erased interface.
class NocNetwork::Router {
 public:
  virtual ~Router() = default;
  virtual void set_clk(bool v) = 0;
  virtual void set_rst_n(bool v) = 0;
  virtual void eval() = 0;
  virtual void final() = 0;
  virtual void add_to_trace(VerilatedFstC* trace) = 0;
  virtual uint64_t params() const = 0;
  virtual void set_straps(uint32_t me, uint32_t max) = 0;
  virtual void set_rx_fwd(int l, const FwdBeat& b) = 0;
  virtual FwdBeat tx_fwd(int l) const = 0;
  virtual void set_tx_bwd(int l, BwdBeat b) = 0;
  virtual BwdBeat rx_bwd(int l) const = 0;
  virtual bool inj_ready() const = 0;
  virtual void set_inj(bool valid, const Flit& f) = 0;
  virtual bool ej_valid() const = 0;
  virtual Flit ej_flit() const = 0;
  virtual void set_ej_ready(bool r) = 0;
  virtual uint32_t link_up() const = 0;
  virtual uint32_t link_err() const = 0;
  virtual int link_err_cause(int l) const = 0;
  virtual LinkCfg peer_cfg(int l) const = 0;
  virtual LinkCfg peer_hello(int l) const = 0;
  // Link-retry events of the last clock edge (registered outputs), a bit per link port.
  virtual uint32_t crc_err() const = 0;
  virtual uint32_t replay() const = 0;
  virtual uint32_t bwd_err() const = 0;

  RouterBuild build;
};

namespace {

template <class V>
class RouterImpl final : public NocNetwork::Router {
 public:
  RouterImpl(VerilatedContext* ctx, const std::string& name) : m_(std::make_unique<V>(ctx, name.c_str())) {
    rx_fwd_held_.fill(FwdBeat{~uint64_t{0}, ~uint64_t{0}});
    tx_bwd_held_.fill(~uint64_t{0});
  }
  void set_clk(bool v) override { m_->clk_i = v; }
  void set_rst_n(bool v) override { m_->rst_ni = v; }
  void eval() override { m_->eval(); }
  void final() override { m_->final(); }
  void add_to_trace(VerilatedFstC* trace) override {
#if VM_TRACE
    m_->trace(trace, 99);
#else
    (void)trace;
#endif
  }
  uint64_t params() const override { return m_->params_o; }
  void set_straps(uint32_t me, uint32_t max) override {
    m_->my_coord_i = me;
    m_->dim_max_i = max;
  }
  void set_rx_fwd(int l, const FwdBeat& b) override {
    FwdBeat& held = rx_fwd_held_[static_cast<size_t>(l)];
    if (b.data == held.data && b.ctl == held.ctl) return;  // the port holds it already (an idle link, mostly)
    held = b;
    const unsigned base = static_cast<unsigned>(l) * kLinkFwdBits;
    set_bits(m_->rx_fwd_i, base, 64, b.data);
    set_bits(m_->rx_fwd_i, base + 64, kLinkFwdBits - 64, b.ctl);
  }
  FwdBeat tx_fwd(int l) const override {
    const unsigned base = static_cast<unsigned>(l) * kLinkFwdBits;
    return FwdBeat{get_bits(m_->tx_fwd_o, base, 64), get_bits(m_->tx_fwd_o, base + 64, kLinkFwdBits - 64)};
  }
  void set_tx_bwd(int l, BwdBeat b) override {
    uint64_t& held = tx_bwd_held_[static_cast<size_t>(l)];
    if (b.bits == held) return;
    held = b.bits;
    set_bits(m_->tx_bwd_i, static_cast<unsigned>(l) * kLinkBwdBits, kLinkBwdBits, b.bits);
  }
  BwdBeat rx_bwd(int l) const override {
    const unsigned lsb = static_cast<unsigned>(l) * kLinkBwdBits;
    return BwdBeat{get_bits(m_->rx_bwd_o, lsb, kLinkBwdBits)};
  }
  bool inj_ready() const override { return m_->inj_ready_o; }
  void set_inj(bool valid, const Flit& f) override {
    m_->inj_valid_i = valid;
    if (valid) {
      set_bits(m_->inj_flit_i, 0, 64, f.data);
      set_bits(m_->inj_flit_i, 64, 5, FwdBeat::flit_ctl_of(f));
    }
  }
  bool ej_valid() const override { return m_->ej_valid_o; }
  Flit ej_flit() const override {
    return FwdBeat{get_bits(m_->ej_flit_o, 0, 64), get_bits(m_->ej_flit_o, 64, 5)}.flit();
  }
  void set_ej_ready(bool r) override { m_->ej_ready_i = r; }
  uint32_t link_up() const override { return m_->link_up_o; }
  uint32_t link_err() const override { return m_->link_err_o; }
  int link_err_cause(int l) const override {
    return static_cast<int>(get_bits(m_->link_err_cause_o, 3u * static_cast<unsigned>(l), 3));
  }
  LinkCfg peer_cfg(int l) const override {
    return LinkCfg::from_bits(
        static_cast<uint32_t>(get_bits(m_->link_peer_cfg_o, kLinkCfgBits * unsigned(l), kLinkCfgBits)));
  }
  LinkCfg peer_hello(int l) const override {
    return LinkCfg::from_bits(
        static_cast<uint32_t>(get_bits(m_->link_peer_hello_o, kLinkCfgBits * unsigned(l), kLinkCfgBits)));
  }
  uint32_t crc_err() const override { return m_->link_crc_err_o; }
  uint32_t replay() const override { return m_->link_replay_o; }
  uint32_t bwd_err() const override { return m_->link_bwd_err_o; }

 private:
  std::unique_ptr<V> m_;
  // What set_rx_fwd / set_tx_bwd last wrote into each link port's input: a beat equal to it is not written again.
  // All ones (no beat has them) until the first write.
  std::array<FwdBeat, 2 * kMaxDim> rx_fwd_held_;
  std::array<uint64_t, 2 * kMaxDim> tx_bwd_held_;
};

using Factory = std::function<std::unique_ptr<NocNetwork::Router>(VerilatedContext*, const std::string&)>;

// The router builds compiled in (rtl/noc/trn_noc.cmake), by name.
const std::vector<std::pair<std::string, Factory>>& factories() {
  static const std::vector<std::pair<std::string, Factory>> list = [] {
    std::vector<std::pair<std::string, Factory>> l;
#define TRNSIM_NOC_ROUTER(NAME)                                                                    \
  l.emplace_back(#NAME, [](VerilatedContext* c, const std::string& n) -> std::unique_ptr<NocNetwork::Router> { \
    return std::make_unique<RouterImpl<Vtrn_noc_router_##NAME>>(c, n);                              \
  });
#if TRNSIM_HAVE_NOC_ROUTER_D2V2
    TRNSIM_NOC_ROUTER(d2v2)
#endif
#if TRNSIM_HAVE_NOC_ROUTER_D2V4
    TRNSIM_NOC_ROUTER(d2v4)
#endif
#if TRNSIM_HAVE_NOC_ROUTER_D3V4G2
    TRNSIM_NOC_ROUTER(d3v4g2)
#endif
#if TRNSIM_HAVE_NOC_ROUTER_D2V4B8
    TRNSIM_NOC_ROUTER(d2v4b8)
#endif
#undef TRNSIM_NOC_ROUTER
    return l;
  }();
  return list;
}

// router_params_t (trn_noc_pkg).
RouterBuild decode_params(const std::string& name, uint64_t p) {
  RouterBuild b{name, int(p >> 24 & 0xFF), int(p >> 16 & 0xFF), int(p >> 8 & 0xFF), int(p & 0xFF), {}};
  b.retry.replay_timeout = int(p >> 48 & 0xFFFF);
  b.retry.replay_limit = int(p >> 40 & 0xFF);
  b.retry.refresh = int(p >> 32 & 0xFF);
  return b;
}

std::string built_names() {
  std::string s;
  for (const auto& [name, f] : factories()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace

std::vector<RouterBuild> built_routers() {
  std::vector<RouterBuild> out;
  VerilatedContext ctx;
  for (const auto& [name, make] : factories()) {
    auto r = make(&ctx, "probe");
    r->eval();
    out.push_back(decode_params(name, r->params()));
    r->final();
  }
  return out;
}

namespace {
// "node_1_0" for router (1, 0): the name each verilated router model is created with, the root of its signals.
std::string instance_name(const Coord& c, int ndim) {
  std::string name = "node";
  for (int d = 0; d < ndim; ++d) name += "_" + std::to_string(c[d]);
  return name;
}

// "4x4", "2x2x2": the routers per dimension.
std::string dims_str(const NocOptions& o) {
  std::string dims;
  for (int d = 0; d < o.ndim; ++d) dims += (d ? "x" : "") + std::to_string(o.size[static_cast<size_t>(d)]);
  return dims;
}

// Whether `root` is the instance name of a router of the network `o` describes.
bool is_router_name(const std::string& root, const NocOptions& o) {
  if (root.rfind("node", 0) != 0) return false;
  size_t pos = 4;
  for (int d = 0; d < o.ndim; ++d) {
    if (pos >= root.size() || root[pos] != '_') return false;
    const size_t end = std::min(root.find('_', pos + 1), root.size());
    const std::string digits = root.substr(pos + 1, end - pos - 1);
    if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string::npos ||
        (digits.size() > 1 && digits[0] == '0') || std::stoi(digits) >= o.size[static_cast<size_t>(d)]) {
      return false;
    }
    pos = end;
  }
  return pos == root.size();
}
}  // namespace

std::vector<std::string> wave_scopes(const NocOptions& o) {
  std::vector<std::string> scopes = split_wave_scopes<NocError>(o.wave_scope, "node_1_0.trn_noc_router.g_in[1]");
  for (const std::string& s : scopes) {
    const std::string root = s.substr(0, s.find_first_of(".["));
    if (!is_router_name(root, o)) {
      Coord last;
      for (int d = 0; d < o.ndim; ++d) last[d] = o.size[static_cast<size_t>(d)] - 1;
      throw NocError(fmt::format("--wave-scope '{}': no router '{}' in the {} torus; its routers are {} .. {}, and a "
                                 "scope is one of them or a part of one (e.g. {}.trn_noc_router.g_in[1])",
                                 s, root, dims_str(o), instance_name(Coord{}, o.ndim), instance_name(last, o.ndim),
                                 instance_name(last, o.ndim)));
    }
  }
  return scopes;
}

WaveWindow noc_wave_window(uint64_t cycle) { return wave_window_around(cycle, 50, 10); }

// One direction of one link: the flits that leave router `src` through link port `l` towards router `dst` (entering
// at its link port l ^ 1), and the credits that come back. Each direction of the link is a ring of latency + 1
// register stages, written after the rising edge and read before the next one.
struct NocNetwork::Pipe {
  int src = 0, l = 0, dst = 0;
  std::vector<FwdBeat> fwd;
  std::vector<BwdBeat> bwd;
  size_t head = 0;
  // Faults acting on this link.
  std::vector<LinkFault> faults;
  std::vector<bool> fault_done;
  bool has_last = false;  // a flit has been carried: `last` is the most recent one
  FwdBeat last;
  BwdBeat last_bwd;       // the most recent valid backward beat (kExtraCredit, kBadAck build on it)
  std::array<unsigned, kMaxVc> last_fc{};  // the freed-slot count per VC it last carried
  unsigned next_seq = 0;  // sequence number of the next new flit: a lower one on the wire is a replay
};

NocNetwork::NocNetwork(const NocOptions& options) : options_(options), injector_(options.errors) {
  const int nd = options_.ndim;
  if (nd < 1 || nd > kMaxDim) throw NocError(fmt::format("ndim {} outside 1..{}", nd, kMaxDim));
  for (int d = 0; d < kMaxDim; ++d) {
    const int s = options_.size[static_cast<size_t>(d)];
    if (d < nd && (s < 2 || s > kMaxSize)) {
      throw NocError(fmt::format("torus size {} in dimension {} outside 2..{}", s, d, kMaxSize));
    }
    if (d >= nd && s != 1) throw NocError(fmt::format("a {}-D torus has size 1 in dimension {}, not {}", nd, d, s));
  }
  if (options_.link_latency < 0 || options_.link_latency > 32) {
    throw NocError(fmt::format("link latency {} outside 0..32", options_.link_latency));
  }
  if (options_.threads < 1 || options_.threads > model::noc::StepPool::kMaxThreads) {
    throw NocError(fmt::format("{} host threads: outside 1..{}", options_.threads,
                               model::noc::StepPool::kMaxThreads));
  }
  const std::string default_build = options_.router.empty() ? (nd == 3 ? "d3v4g2" : "d2v2") : options_.router;
  apply_wave_env<NocError>(options_);  // TRNSIM_WAVE: any test or tool re-run with a waveform
  std::vector<std::string> scopes;
  if (!options_.wave_path.empty()) {
    check_wave_window<NocError>(options_.wave_from, options_.wave_to);
    scopes = wave_scopes(options_);
  }

  context_ = std::make_unique<VerilatedContext>();
  context_->fatalOnError(false);  // assertion failures become NocError, so waveforms close cleanly
  context_->timeunit(-12);
  context_->timeprecision(-12);
  context_->randReset(0);
  context_->assertOn(options_.assertions);
#if VM_TRACE
  if (!options_.wave_path.empty()) context_->traceEverOn(true);
#else
  if (!options_.wave_path.empty()) throw NocError("this build has no waveform support (VM_TRACE=0)");
#endif

  const int n_nodes = options_.size[0] * options_.size[1] * options_.size[2];
  for (int n = 0; n < n_nodes; ++n) {
    auto it = options_.node_router.find(n);
    const std::string& bname = it != options_.node_router.end() ? it->second : default_build;
    const Factory* make = nullptr;
    for (const auto& [name, f] : factories()) {
      if (name == bname) make = &f;
    }
    if (!make) throw NocError(fmt::format("no router build '{}' in this binary (built: {})", bname, built_names()));
    auto r = (*make)(context_.get(), instance_name(coord(n), nd));
    r->eval();
    r->build = decode_params(bname, r->params());
    if (r->build.ndim != nd) {
      throw NocError(fmt::format("router build {} is for a {}-D torus, the network is {}-D", r->build.str(),
                                 r->build.ndim, nd));
    }
    routers_.push_back(std::move(r));
  }
  if (const int threads = std::min(options_.threads, n_nodes); threads > 1) {
    pool_ = std::make_unique<model::noc::StepPool>(threads);
  }
  for (const LinkFault& f : options_.faults) {
    if (f.node < 0 || f.node >= n_nodes || f.link < 0 || f.link >= 2 * nd) {
      throw NocError(fmt::format("fault on node {} link {}: no such link", f.node, f.link));
    }
  }

  for (int n = 0; n < n_nodes; ++n) {
    for (int l = 0; l < 2 * nd; ++l) {
      Pipe p;
      p.src = n;
      p.l = l;
      p.dst = neighbour(n, l);
      p.fwd.assign(static_cast<size_t>(options_.link_latency) + 1, FwdBeat{});
      p.bwd.assign(static_cast<size_t>(options_.link_latency) + 1, BwdBeat{});
      for (const LinkFault& f : options_.faults) {
        // A cut link is cut in both directions.
        const bool mine = (f.node == n && f.link == l) ||
                          (f.kind == LinkFault::Kind::kCut && f.node == p.dst && f.link == (l ^ 1));
        if (mine) p.faults.push_back(f);
      }
      p.fault_done.assign(p.faults.size(), false);
      pipes_.push_back(std::move(p));
    }
  }

#if VM_TRACE
  if (!options_.wave_path.empty()) {
    // --wave-scope: Verilator's $dumpvars-like filter, set before the routers are attached. The clock of every
    // router a scope names is always recorded (cosim/wave_fst.h).
    std::vector<std::string> clocks;
    for (const std::string& scope : scopes) clocks.push_back(scope.substr(0, scope.find_first_of(".[")) + ".clk_i");
    wave_ = std::make_unique<WindowedFst>(options_.wave_path, WaveWindow{options_.wave_from, options_.wave_to},
                                          std::move(scopes), clocks);
    for (auto& r : routers_) r->add_to_trace(&wave_->trace());
    wave_->open<NocError>(fmt::format("the {} router network", dims_str(options_)));
  }
#endif

  try {
    reset();
    // Bring-up: every link exchanges its beats within link latency + a few cycles; the routers' own timeout
    // (LINK_TIMEOUT = 64 cycles) reports a link that never does.
    const uint32_t all_up = (1u << (2 * nd)) - 1;
    for (;;) {
      bool settled = true;
      for (auto& r : routers_) settled = settled && (r->link_up() | r->link_err()) == all_up;
      if (settled) break;
      if (cycle_ > 200) throw NocError(fmt::format("links not up {} cycles after reset (no error reported)", cycle_));
      step();
    }
  } catch (...) {
#if VM_TRACE
    if (wave_) wave_->close(cycle_);
#endif
    throw;
  }
}

NocNetwork::~NocNetwork() {
  // The models' scopes unregister from the thread's current context (Verilator 5.006, VerilatedScope's destructor):
  // make it this network's, which outlives them, not the last one built, which may be gone (as in TeRtl's).
  Verilated::threadContextp(context_.get());
  for (auto& r : routers_) r->final();
  write_rtl_coverage(*context_, "noc");  // coverage builds only
#if VM_TRACE
  if (wave_) wave_->close(cycle_);
#endif
}

const RouterBuild& NocNetwork::build(int n) const { return routers_.at(static_cast<size_t>(n))->build; }

FwdBeat NocNetwork::tx_beat(int n, int l) const { return routers_.at(static_cast<size_t>(n))->tx_fwd(l); }
BwdBeat NocNetwork::rx_beat(int n, int l) const { return routers_.at(static_cast<size_t>(n))->rx_bwd(l); }

int NocNetwork::neighbour(int n, int l) const {
  Coord c = coord(n);
  const int d = l / 2, s = options_.size[static_cast<size_t>(d)];
  c[d] = (c[d] + (l % 2 ? s - 1 : 1)) % s;
  return node(c);
}

bool NocNetwork::inj_ready(int n) const { return routers_[static_cast<size_t>(n)]->inj_ready(); }
void NocNetwork::drive_inject(int n, const Flit* flit) {
  routers_[static_cast<size_t>(n)]->set_inj(flit != nullptr, flit ? *flit : Flit{});
}
bool NocNetwork::ej_valid(int n) const { return routers_[static_cast<size_t>(n)]->ej_valid(); }
Flit NocNetwork::ej_flit(int n) const { return routers_[static_cast<size_t>(n)]->ej_flit(); }
void NocNetwork::drive_eject_ready(int n, bool ready) { routers_[static_cast<size_t>(n)]->set_ej_ready(ready); }
bool NocNetwork::link_up(int n, int l) const { return routers_[static_cast<size_t>(n)]->link_up() >> l & 1; }
int NocNetwork::link_err_cause(int n, int l) const { return routers_[static_cast<size_t>(n)]->link_err_cause(l); }
LinkCfg NocNetwork::link_peer_cfg(int n, int l) const { return routers_[static_cast<size_t>(n)]->peer_cfg(l); }

void NocNetwork::reset() {
  const Coord max{{options_.size[0] - 1, options_.size[1] - 1, options_.size[2] - 1}};
  for (int n = 0; n < nodes(); ++n) {
    Router& r = *routers_[static_cast<size_t>(n)];
    r.set_straps(coord(n).bits(), max.bits());
    r.set_inj(false, Flit{});
    r.set_ej_ready(true);
    r.set_clk(false);
    r.set_rst_n(false);
    r.eval();
  }
  // Hold reset over several edges before release (TOOLCHAIN.md, "Reset"); the links carry nothing meanwhile.
  for (int i = 0; i < 4; ++i) {
    for (auto& r : routers_) {
      r->set_clk(true);
      r->eval();
    }
    for (auto& r : routers_) {
      r->set_clk(false);
      r->eval();
    }
  }
  for (auto& r : routers_) {
    r->set_rst_n(true);
    r->eval();
  }
  cycle_ = 0;
}

// Half a clock period per edge in the waveform: 1 GHz link clock (an assumption; the figure matters only for the
// time axis).
static constexpr uint64_t kHalfPeriodPs = 500;

void NocNetwork::step() {
  const double t0 = step_clock_seconds();
  // Deliver what each link carries this cycle.
  for (Pipe& p : pipes_) {
    FwdBeat f = p.fwd[p.head];
    BwdBeat b = p.bwd[p.head];
    for (size_t i = 0; i < p.faults.size(); ++i) {
      const LinkFault& ft = p.faults[i];
      if (p.fault_done[i] || cycle_ < ft.cycle) continue;
      switch (ft.kind) {
        case LinkFault::Kind::kDuplicateFlit:
          if (p.has_last && !f.valid() && !f.init()) {
            f = p.last;
            p.fault_done[i] = true;
          }
          break;
        case LinkFault::Kind::kDropFlit:
          if (f.valid()) {
            f = FwdBeat{};
            p.fault_done[i] = true;
          }
          break;
        case LinkFault::Kind::kExtraCredit:
          if (!b.valid() && !b.init()) {
            b = bwd_beat(0, p.last_fc[0] + 1, p.last_bwd.ack(), false);
            p.fault_done[i] = true;
          }
          break;
        case LinkFault::Kind::kBadAck:
          if (!b.valid() && !b.init() && p.last_bwd.valid()) {
            const BwdBeat& l = p.last_bwd;
            b = bwd_beat(l.vc(), l.fc(), (p.next_seq + 5) & 0x3FF, false);
            p.fault_done[i] = true;
          }
          break;
        case LinkFault::Kind::kDropCredit:
          if (b.valid()) {
            b = BwdBeat{};
            p.fault_done[i] = true;
          }
          break;
        case LinkFault::Kind::kPartnerCfg:
          if (b.init()) {
            b = b.with_cfg(ft.cfg);
            p.fault_done[i] = true;
          }
          break;
        case LinkFault::Kind::kCut:
          f = FwdBeat{};
          b = BwdBeat{};
          break;
      }
    }
    if (f.valid()) {
      p.last = f;
      p.has_last = true;
    }
    if (b.valid()) {
      p.last_bwd = b;
      p.last_fc[size_t(b.vc())] = b.fc();
    }
    if (injector_.enabled()) {
      const uint64_t link = uint64_t(p.src) * uint64_t(2 * options_.ndim) + uint64_t(p.l);
      if (f.valid()) {
        const BeatFault ff = injector_.forward(link, cycle_);
        stats_.injected_drops += ff.drop;
        stats_.injected_flips += !ff.drop && ff.any();
        f = apply_fault(f, ff);
      }
      if (b.valid()) {
        const BeatFault bf = injector_.backward(link, cycle_);
        stats_.injected_flips += bf.any();
        b = apply_fault(b, bf);
      }
    }
    routers_[static_cast<size_t>(p.dst)]->set_rx_fwd(p.l ^ 1, f);
    routers_[static_cast<size_t>(p.src)]->set_tx_bwd(p.l, b);
  }

  // Settle every router on this cycle's inputs with the clock low. This eval also takes the values that the
  // assertions sample at the coming edge (Verilator's preponed values), so it must see the new inputs; the falling
  // edge of the previous cycle needs no eval of its own.
  eval_all(false);
#if VM_TRACE
  if (wave_) wave_->dump(time_ps_, wave_->in_window(cycle_));
#endif
  time_ps_ += kHalfPeriodPs;
  context_->time(time_ps_);

  eval_all(true);
  for (auto& r : routers_) {
    // Link-retry events of the edge just taken (registered event outputs).
    stats_.crc_errors += uint64_t(__builtin_popcount(r->crc_err()));
    stats_.replays += uint64_t(__builtin_popcount(r->replay()));
    stats_.bwd_errors += uint64_t(__builtin_popcount(r->bwd_err()));
  }
#if VM_TRACE
  if (wave_) wave_->dump(time_ps_, wave_->in_window(cycle_));
#endif
  time_ps_ += kHalfPeriodPs;
  context_->time(time_ps_);

  // Capture what the routers put on their links after the edge.
  for (Pipe& p : pipes_) {
    const FwdBeat f = routers_[static_cast<size_t>(p.src)]->tx_fwd(p.l);
    p.fwd[p.head] = f;
    p.bwd[p.head] = routers_[static_cast<size_t>(p.dst)]->rx_bwd(p.l ^ 1);
    if (f.valid()) {
      ++link_flits_;
      if (f.seq() == p.next_seq) {
        p.next_seq = (p.next_seq + 1) & 0x3FF;
      } else {
        ++stats_.replayed;
      }
    }
    p.head = p.head + 1 == p.fwd.size() ? 0 : p.head + 1;
  }
  ++cycle_;
  step_seconds_ += step_clock_seconds() - t0;
  check_errors();
}

void NocNetwork::eval_all(bool clk) {
  // Assertion messages and the error count go to the thread's context (Verilated::threadContextp): this network's,
  // also when several are alive.
  VerilatedContext* const context = context_.get();
  const auto eval_range = [&](int begin, int end) {
    Verilated::threadContextp(context);
    for (int n = begin; n < end; ++n) {
      Router& r = *routers_[static_cast<size_t>(n)];
      r.set_clk(clk);
      r.eval();
    }
  };
  if (!pool_) {
    eval_range(0, nodes());
    return;
  }
  pool_->run([&](int t) {
    const auto [begin, end] = model::noc::StepPool::range(nodes(), pool_->threads(), t);
    eval_range(begin, end);
  });
}

bool NocNetwork::rtl_error() const { return context_->gotError(); }

bool NocNetwork::any_link_error() const {
  for (const auto& r : routers_) {
    if (r->link_err() != 0) return true;
  }
  return false;
}

void NocNetwork::check_errors() {
  if (!options_.fail_on_errors) return;
  std::string links;
  std::vector<LinkEnd> down;
  for (int n = 0; n < nodes(); ++n) {
    const uint32_t err = routers_[static_cast<size_t>(n)]->link_err();
    for (int l = 0; err != 0 && l < 2 * options_.ndim; ++l) {
      if (!(err >> l & 1)) continue;
      if (link_err_cause(n, l) == 4) {
        down.push_back({node_name(n), l, node_name(neighbour(n, l))});
      } else {
        links += "\n  " + describe_link_error(n, l);
      }
    }
  }
  const bool rtl_error = context_->gotError();
  if (!links.empty()) {
    fail(fmt::format("cycle {}: link bring-up failed:{}{}", cycle_, links,
                     rtl_error ? "\n  (RTL assertions fired too: messages above)" : ""));
  }
  // A link that went down: one line, as the TLM says it (the re-run line follows, as for every RTL failure).
  if (!down.empty()) fail(link_down_error(cycle_, down, routers_.front()->build.retry.replay_limit));
  if (rtl_error) fail(fmt::format("cycle {}: RTL assertion failed (message above)", cycle_));
}

void NocNetwork::fail(const std::string& what) {
  throw NocError(fmt::format("{}\n  {}", what, failure_rerun(cycle_, "noc")));
}

std::string NocNetwork::failure_rerun(uint64_t cycle, const std::string& block) {
  const WaveWindow w = noc_wave_window(cycle);
  print_fail_at(fmt::format("{} {}", block, dims_str(options_)), cycle, w);
#if VM_TRACE
  if (wave_) wave_->flush();
#endif
  if (options_.rerun_command.empty()) {
    return fmt::format("re-run with a waveform around it: TRNSIM_WAVE=noc.fst TRNSIM_WAVE_FROM={} TRNSIM_WAVE_TO={} "
                       "(for a test)",
                       w.from, w.to);
  }
  return fmt::format("re-run with a waveform around it: {} --wave noc-fail.fst --wave-from {} --wave-to {}",
                     options_.rerun_command, w.from, w.to);
}

std::string NocNetwork::describe_link_error(int n, int l) const {
  const Router& r = *routers_[static_cast<size_t>(n)];
  const int peer = neighbour(n, l);
  const std::string where = link_where(node_name(n), l, node_name(peer));
  const RouterBuild& b = r.build;
  switch (r.link_err_cause(l)) {
    case 4:
      return link_down_message(node_name(n), l, node_name(peer), b.retry.replay_limit);
    case 1: {
      const LinkCfg c = r.peer_cfg(l);
      return fmt::format("{}: flow-control mismatch: the receiver at the far end advertises {} VCs x {} flits per VC "
                         "buffer, this router sends for {} VCs x {} flits (build {})",
                         where, c.num_vc, c.depth, b.num_vc, b.depth, b.name);
    }
    case 2: {
      const LinkCfg c = r.peer_hello(l);
      return fmt::format("{}: flow-control mismatch: the sender at the far end is built for {} VCs x {} flits per VC "
                         "buffer, this router receives into {} VCs x {} flits (build {})",
                         where, c.num_vc, c.depth, b.num_vc, b.depth, b.name);
    }
    case 3:
      return fmt::format("{}: no bring-up beat from the far end within the router's LINK_TIMEOUT (64 cycles) of "
                         "reset: link not connected?",
                         where);
    default:
      return fmt::format("{}: error with no cause", where);
  }
}

}  // namespace trnsim::cosim::noc
