// `trnsim noc`: synthetic traffic on a NeuronLink network (docs/neuronlink.md), on the TLM model (model/noc), the
// verilated routers (--rtl, cosim/noc) or both in lockstep (--lockstep). Reports offered and accepted throughput,
// latency, simulation speed, and ends with `injected=X delivered=Y` (packets that entered the network, packets
// delivered); exit 1 when they differ, when the run did not drain (packets still queued at their sources or in the
// network at the drain limit or the watchdog), or a protocol check or the lockstep comparison fails; 2 for bad flags.
// --wave FILE.fst (with --wave-from/--wave-to/--wave-scope) records the routers; a failing RTL run prints the command
// that re-runs it with a waveform around the failing cycle.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cosim/noc/noc_lockstep.h"
#include "cosim/noc/noc_rtl.h"
#include "cosim/noc/noc_traffic.h"
#include "model/noc/noc_tlm.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
namespace {

namespace cn = trnsim::cosim::noc;
namespace mn = trnsim::model::noc;

struct NocFlags {
  std::string topology = "torus";
  std::string dims = "4x4";
  std::string traffic = "uniform";
  double rate = 0.1;
  uint64_t cycles = 10000;
  int vcs = 0;         // set only with vcs_given: otherwise the default for the dimension count
  int vc_groups = 0;   // set only with vc_groups_given: otherwise the default
  bool vcs_given = false;
  bool vc_groups_given = false;
  bool hotspot_fraction_given = false;
  int buf_depth = 4;
  int link_latency = 0;
  std::string packet_flits = "1-5";
  double hotspot_fraction = 0.25;
  uint64_t drain_cycles = 100000;
  uint64_t seed = 1;
  double ber = 0;                  ///< --ber P: bit error probability per link bit
  double drop = 0;                 ///< --drop P: flit loss probability per flit on a link
  uint64_t fault_seed = 1;         ///< --fault-seed S
  bool rtl = false;
  bool lockstep = false;
  std::string wave;                ///< --wave FILE.fst: waveform of the verilated routers
  uint64_t wave_from = 0;          ///< --wave-from CYCLE
  uint64_t wave_to = UINT64_MAX;   ///< --wave-to CYCLE
  std::string wave_scope;          ///< --wave-scope PATH
  int threads = 1;                 ///< --threads N: host threads evaluating the routers (TLM or RTL)
  bool no_assertions = false;      ///< --no-assertions: the routers' assertions off (RTL only)
};

// The command that runs this network and traffic again (the flags that shape them, without the waveform ones), for
// the re-run line of a failure (cosim/noc/noc_rtl.h, NocOptions::rerun_command).
std::string rerun_command(const NocFlags& f) {
  std::string cmd = fmt::format("trnsim noc --dims {} --traffic {} --rate {} --cycles {} --seed {}", f.dims, f.traffic,
                                f.rate, f.cycles, f.seed);
  if (f.vcs_given) cmd += fmt::format(" --vcs {}", f.vcs);
  if (f.vc_groups_given) cmd += fmt::format(" --vc-groups {}", f.vc_groups);
  if (f.buf_depth != NocFlags{}.buf_depth) cmd += fmt::format(" --buf-depth {}", f.buf_depth);
  if (f.link_latency != 0) cmd += fmt::format(" --link-latency {}", f.link_latency);
  if (f.packet_flits != NocFlags{}.packet_flits) cmd += fmt::format(" --packet-flits {}", f.packet_flits);
  if (f.hotspot_fraction_given) cmd += fmt::format(" --hotspot-fraction {}", f.hotspot_fraction);
  if (f.drain_cycles != NocFlags{}.drain_cycles) cmd += fmt::format(" --drain-cycles {}", f.drain_cycles);
  if (f.ber > 0) cmd += fmt::format(" --ber {}", f.ber);
  if (f.drop > 0) cmd += fmt::format(" --drop {}", f.drop);
  if (f.ber > 0 || f.drop > 0) cmd += fmt::format(" --fault-seed {}", f.fault_seed);
  return cmd + (f.lockstep ? " --lockstep" : " --rtl");
}

// The flags of the verilated routers only: --wave and its window (FST only, a window that ends after it starts) and
// --no-assertions.
void check_rtl_only_flags(const NocFlags& f, bool want_rtl) {
  const char* window_flag = f.wave_from != 0 ? "--wave-from" : f.wave_to != UINT64_MAX ? "--wave-to"
                            : !f.wave_scope.empty() ? "--wave-scope" : nullptr;
  if (window_flag && f.wave.empty()) {
    throw BadInput(fmt::format("{} chooses what --wave FILE.fst records: give --wave too", window_flag));
  }
  if (f.no_assertions && !want_rtl) {
    throw BadInput("--no-assertions turns the verilated routers' assertions off: use it with --rtl or --lockstep (the "
                   "TLM model checks its rules in C++ always)");
  }
  if (f.wave.empty()) return;
  if (!want_rtl) {
    throw BadInput("--wave records the verilated routers' signals: use it with --rtl or --lockstep (the TLM model "
                   "has no waveform)");
  }
  if (std::filesystem::path(f.wave).extension() != ".fst") {
    throw BadInput(fmt::format("--wave {}: waveforms are written as FST; give a file name ending in .fst", f.wave));
  }
  if (f.wave_from > f.wave_to) {
    throw BadInput(fmt::format("--wave-from {} is after --wave-to {}", f.wave_from, f.wave_to));
  }
}

// "4x4", "3x5", "2x2x2", "8": sizes per dimension.
std::vector<int> parse_dims(const std::string& s) {
  std::vector<int> dims;
  size_t pos = 0;
  for (;;) {
    const size_t x = s.find('x', pos);
    const std::string part = s.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 3) {
      throw BadInput(fmt::format("--dims {}: expected sizes like 4x4 or 2x2x2", s));
    }
    dims.push_back(std::stoi(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (dims.size() > 3) throw BadInput(fmt::format("--dims {}: {} dimensions, at most 3", s, dims.size()));
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 2 || dims[d] > mn::kMaxSize) {
      throw BadInput(fmt::format("--dims {}: dimension {} has {} routers; every dimension needs 2..{} (a 1-wide "
                                 "dimension is no dimension: leave it out)",
                                 s, d, dims[d], mn::kMaxSize));
    }
  }
  return dims;
}

// "4" or "1-5".
std::pair<int, int> parse_lengths(const std::string& s) {
  int a = 0, b = 0;
  char dash = 0;
  char extra = 0;
  const int got = std::sscanf(s.c_str(), "%d%c%d%c", &a, &dash, &b, &extra);
  if (got == 1) b = a;
  if (!(got == 1 || (got == 3 && dash == '-')) || a < 1 || b > 15 || a > b) {
    throw BadInput(fmt::format("--packet-flits {}: expected N or MIN-MAX flits per packet within 1..15", s));
  }
  return {a, b};
}

std::string build_list(const std::vector<cn::RouterBuild>& builds) {
  std::string s;
  for (const auto& b : builds) {
    s += fmt::format("{}{} ({}-D, {} VCs, {} group{}, depth {})", s.empty() ? "" : ", ", b.name, b.ndim, b.num_vc,
                     b.vc_groups, b.vc_groups > 1 ? "s" : "", b.depth);
  }
  return s.empty() ? "none" : s;
}

int run_noc(const NocFlags& f) {
  // ---- Flags ----
  if (f.topology != "torus" && f.topology != "mesh") {
    throw BadInput(fmt::format("--topology {}: unknown (torus, mesh)", f.topology));
  }
  const bool torus = f.topology == "torus";
  const std::vector<int> dims = parse_dims(f.dims);
  const int ndim = static_cast<int>(dims.size());
  cn::Pattern pattern;
  try {
    pattern = cn::parse_pattern(f.traffic);
  } catch (const cn::NocError&) {
    throw BadInput(fmt::format("--traffic {}: unknown (uniform, transpose, bitcomp, hotspot, neighbor)", f.traffic));
  }
  if (pattern == cn::Pattern::kTranspose) {
    if (ndim == 1) {
      // Coordinate d := coordinate ndim-1-d maps every router of a ring to itself: nothing would be sent.
      throw BadInput(fmt::format("--traffic transpose with --dims {}: a 1-D ring has no transpose (every router "
                                 "would send to itself); give 2 or 3 equal dimensions",
                                 f.dims));
    }
    for (int d : dims) {
      if (d != dims[0]) {
        throw BadInput(fmt::format("--traffic transpose needs the same size in every dimension (a square or cube), "
                                   "not {}",
                                   f.dims));
      }
    }
  }
  if (!(f.rate >= 0 && f.rate <= 1)) throw BadInput(fmt::format("--rate {}: outside [0, 1] flits/node/cycle", f.rate));
  if (f.cycles < 1 || f.cycles > 1000000000) throw BadInput(fmt::format("--cycles {}: outside 1..1e9", f.cycles));
  if (f.hotspot_fraction_given && pattern != cn::Pattern::kHotspot) {
    throw BadInput(fmt::format("--hotspot-fraction does not apply to --traffic {} (only to --traffic hotspot)",
                               f.traffic));
  }
  if (!(f.hotspot_fraction >= 0 && f.hotspot_fraction <= 1)) {
    throw BadInput(fmt::format("--hotspot-fraction {}: outside [0, 1]", f.hotspot_fraction));
  }
  const auto [min_len, max_len] = parse_lengths(f.packet_flits);

  mn::TlmOptions t;
  t.ndim = ndim;
  t.size = {1, 1, 1};
  for (int d = 0; d < ndim; ++d) t.size[size_t(d)] = dims[size_t(d)];
  t.torus = torus;
  // Each parameter is checked as it is applied, so the message names the one flag that is wrong.
  const auto check = [&](const std::string& flag) {
    try {
      t.validate();
    } catch (const mn::NocError& e) {
      throw BadInput(fmt::format("{}: {}", flag, e.what()));
    }
  };
  if (f.vcs_given && (f.vcs < 1 || f.vcs > mn::kMaxVc)) {
    throw BadInput(fmt::format("--vcs {}: outside 2..{} VCs per port", f.vcs, mn::kMaxVc));
  }
  if (f.vc_groups_given && (f.vc_groups < 1 || f.vc_groups > 4)) {
    throw BadInput(fmt::format("--vc-groups {}: outside 1..4 message-class groups (2-bit message class)",
                               f.vc_groups));
  }
  t.num_vc = f.vcs_given ? f.vcs : (ndim == 3 ? 4 : 2);
  t.vc_groups = f.vc_groups_given ? f.vc_groups : (ndim == 3 && t.num_vc % 4 == 0 ? 2 : 1);
  if (t.num_vc % (2 * t.vc_groups) != 0) {
    // The TLM and RTL routers split every VC group into two classes: the dateline classes on a torus. A mesh has
    // no wrap-around link and needs no dateline, but the router keeps the split (both classes are used alike).
    const std::string flag =
        f.vcs_given && f.vc_groups_given
            ? fmt::format("--vcs {} with --vc-groups {}", f.vcs, f.vc_groups)
            : f.vcs_given ? fmt::format("--vcs {}", f.vcs) : fmt::format("--vc-groups {}", f.vc_groups);
    throw BadInput(fmt::format(
        "{}: {} VCs in {} group{} is not a multiple of 2 x groups; every group has two VC classes ({})", flag,
        t.num_vc, t.vc_groups, t.vc_groups > 1 ? "s" : "",
        torus ? "the dateline classes that keep a torus ring deadlock-free"
              : "a mesh needs no dateline, but the router keeps the two classes and uses both alike"));
  }
  check(f.vcs_given ? fmt::format("--vcs {}", f.vcs) : fmt::format("--vc-groups {}", f.vc_groups));
  t.depth = f.buf_depth;
  check(fmt::format("--buf-depth {}", f.buf_depth));
  t.link_latency = f.link_latency;
  check(fmt::format("--link-latency {}", f.link_latency));
  t.errors = mn::LinkErrors{f.ber, 0, f.fault_seed};
  check(fmt::format("--ber {}", f.ber));
  t.errors.drop = f.drop;
  check(fmt::format("--drop {}", f.drop));
  t.threads = f.threads;

  // ---- The network ----
  const bool want_rtl = f.rtl || f.lockstep;
  check_rtl_only_flags(f, want_rtl);
  std::unique_ptr<mn::NocPorts> net;
  std::string what;
  if (want_rtl) {
    const std::string flag = f.lockstep ? "--lockstep" : "--rtl";
    if (!torus) {
      throw BadInput(fmt::format("{} with --topology mesh: the RTL router is built for tori only (wrap-around links, "
                                 "dateline classes); the TLM model (without {}) runs meshes",
                                 flag, flag));
    }
    const std::vector<cn::RouterBuild> builds = cn::built_routers();
    const cn::RouterBuild* pick = nullptr;
    for (const auto& b : builds) {
      if (b.ndim == ndim && b.num_vc == t.num_vc && (!f.vc_groups_given || b.vc_groups == f.vc_groups) &&
          b.depth == t.depth) {
        pick = &b;
        break;
      }
    }
    if (!pick) {
      throw BadInput(fmt::format("{}: no RTL router build for a {}-D torus with {} VCs{} and depth {}; built: {}", flag,
                                 ndim, t.num_vc, f.vc_groups_given ? fmt::format(" in {} groups", f.vc_groups) : "",
                                 t.depth, build_list(builds)));
    }
    cn::NocOptions o;
    o.ndim = ndim;
    o.size = t.size;
    o.router = pick->name;
    o.link_latency = f.link_latency;
    o.errors = t.errors;
    o.wave_path = f.wave;
    o.wave_from = f.wave_from;
    o.wave_to = f.wave_to;
    o.wave_scope = f.wave_scope;
    o.rerun_command = rerun_command(f);
    o.threads = f.threads;
    o.assertions = !f.no_assertions;
    t.vc_groups = pick->vc_groups;
    if (!f.wave.empty()) {
      try {
        cn::wave_scopes(o);
      } catch (const cn::NocError& e) {
        throw BadInput(e.what());
      }
    }
    try {
      if (f.lockstep) {
        net = std::make_unique<cn::LockstepNetwork>(o);
        what = fmt::format("RTL ({}) and TLM in lockstep", pick->name);
      } else {
        net = std::make_unique<cn::NocNetwork>(o);
        what = fmt::format("RTL (verilated router build {})", pick->name);
      }
    } catch (const cn::NocError& e) {
      if (std::string(e.what()).rfind("cannot open waveform file", 0) == 0) {
        throw BadInput(fmt::format("--wave {}: {}", f.wave, e.what()));
      }
      throw;
    }
  } else {
    net = std::make_unique<mn::TlmNetwork>(t);
    what = "TLM";
  }

  cn::TrafficOptions tr;
  tr.pattern = pattern;
  tr.rate = f.rate;
  tr.min_len = min_len;
  tr.max_len = max_len;
  tr.seed = f.seed;
  tr.inject_cycles = f.cycles;
  tr.drain_limit = f.drain_cycles;
  tr.watchdog_cycles = 1000;
  tr.hotspot_fraction = f.hotspot_fraction;
  tr.throw_on_stall = false;
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = mn::thread_cpu_seconds();
  if (f.cycles >= 20000) {
    tr.progress_cycles = f.cycles / 10;
    tr.progress = [&](uint64_t c, const cn::TrafficResult& r) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      fmt::print(stderr, "trnsim noc: cycle {} ({}%), {} of {} packets delivered, {:.1f} s\n", c,
                 c * 100 / f.cycles, r.packets_delivered, r.packets_created, s);
    };
  }

  fmt::print("trnsim noc: {}; {}; {} traffic at {:.3f} flits/node/cycle, packets of {}, {} cycles, seed {}\n",
             t.str(), what, f.traffic, f.rate, min_len == max_len ? counted(min_len, "flit") :
             fmt::format("{}-{} flits", min_len, max_len), f.cycles, f.seed);
  std::fflush(stdout);
  const cn::TrafficResult r = cn::run_traffic(*net, tr);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = mn::thread_cpu_seconds() - cpu0;

  fmt::print("offered:    {:.4f} flits/node/cycle\n", r.offered);
  fmt::print("accepted:   {:.4f} flits/node/cycle\n", r.accepted);
  fmt::print("latency:    mean {:.2f}  p99 {}  max {} cycles (packet creation to tail ejection; from injection: "
             "mean {:.2f})\n",
             r.avg_latency, r.p99_latency, r.max_latency, r.avg_network_latency);
  // The words of the report: created = made by a source (it waits in the source queue); injected = entered the
  // network (head flit accepted by the router's injection port); delivered = tail flit ejected, intact. Nothing is
  // "lost": a run stopped by the drain limit or the watchdog says how many packets were still queued at their
  // sources and how many were in the network (stuck, or dropped by a faulty router: the run cannot tell which).
  const bool drained = r.failure.empty();
  const uint64_t queued = r.packets_created - r.packets_injected;
  // r.lost = created - delivered - broken (corrupted) packets, so those still in the network are r.lost - queued.
  const uint64_t in_network = drained ? 0 : r.lost - std::min(r.lost, queued);
  fmt::print("packets:    {} created, {} injected, {} delivered, {} duplicated, {} corrupted, {} out of order\n",
             r.packets_created, r.packets_injected, r.packets_delivered, r.duplicated, r.corrupted, r.out_of_order);
  if (!drained) fmt::print("not drained: {} queued at sources, {} in the network\n", queued, in_network);
  // The network model's seconds are elapsed time inside step() (NocPorts::step_seconds: the monotonic clock, read
  // cheaply); on a loaded machine they include time the process waited for a CPU, and can exceed the whole run's
  // CPU time printed after them.
  if (f.threads == 1) {
    fmt::print("simulation: {} cycles; network model {:.3f} s elapsed = {:.0f} cycles/s; with traffic generation "
               "and checking {:.3f} s CPU = {:.0f} cycles/s ({:.3f} s wall)\n",
               r.cycles, r.sim_seconds, r.cycles_per_second, cpu, cpu > 0 ? double(r.cycles) / cpu : 0.0, wall);
  } else {
    // The caller's thread CPU leaves the workers out: the whole run is timed by the wall clock.
    fmt::print("simulation: {} cycles; network model {:.3f} s elapsed = {:.0f} cycles/s; with traffic generation "
               "and checking {:.3f} s wall = {:.0f} cycles/s ({} host threads evaluate the routers)\n",
               r.cycles, r.sim_seconds, r.cycles_per_second, wall, wall > 0 ? double(r.cycles) / wall : 0.0,
               std::min(f.threads, net->nodes()));
  }
  const mn::LinkStats ls = net->link_stats();
  fmt::print("link:       {} flits sent, {} of them replays ({:.2f} % first copies); {} CRC errors, {} backward "
             "errors, {} replays\n",
             ls.flits, ls.replayed, 100.0 * ls.efficiency(), ls.crc_errors, ls.bwd_errors, ls.replays);
  if (t.errors.any()) {
    fmt::print("faults:     {}: {} beats corrupted, {} flits dropped\n", t.errors.str(), ls.injected_flips,
               ls.injected_drops);
  }
  if (auto* ls = dynamic_cast<cn::LockstepNetwork*>(net.get())) {
    fmt::print("lockstep:   {} port values compared, all equal\n", ls->comparisons());
  }
  for (const std::string& e : r.errors) fmt::print(stderr, "trnsim noc: {}\n", e);
  if (!r.failure.empty()) fmt::print(stderr, "trnsim noc: FAIL: {}\n", r.failure);
  const bool pass = drained && r.ok() && queued == 0 && r.packets_injected == r.packets_delivered;
  cn::NocNetwork* const rtl_net = cn::rtl_network(*net);
  if (!pass && rtl_net && r.failure.empty()) {
    // A failure of the run (assertion, lockstep mismatch, watchdog, drain limit) named its window; a drained run
    // whose checker found broken packets gets the last cycles.
    const char* block = f.lockstep ? "noc-lockstep" : "noc";
    fmt::print(stderr, "trnsim noc: {}\n", rtl_net->failure_rerun(rtl_net->cycle(), block));
  }
  if (!f.wave.empty()) fmt::print("waveform:   {} (open with: scripts/wave {})\n", f.wave, f.wave);
  fmt::print("injected={} delivered={}\n", r.packets_injected, r.packets_delivered);
  return pass ? kExitOk : kExitFail;
}

}  // namespace

Action add_noc(CLI::App& app) {
  auto f = std::make_shared<NocFlags>();
  CLI::App* sub = app.add_subcommand(
      "noc", "Synthetic traffic on a NeuronLink torus or mesh (TLM model, --rtl verilated routers, or --lockstep)");
  sub->footer(
      "Report: packets are created by a source (and wait in its queue), injected when the router's injection port "
      "takes the head flit (they entered the network) and delivered when the tail flit is ejected intact. The last "
      "line is `injected=X delivered=Y`. A run stopped by --drain-cycles or the watchdog prints `not drained: N "
      "queued at sources, M in the network`. The `link:` line counts the link-level retry (flits sent and replayed, CRC "
      "errors, replays); with --ber/--drop a `faults:` line counts what was injected. A link whose replays keep "
      "failing (e.g. --ber 0.5) goes down and ends the run with `link down` naming the router and port.\nExit 0: every created packet delivered once, intact, in order; 1: "
      "not drained, injected != delivered, a protocol check or the lockstep comparison failed; 2: a bad flag.\n"
      "Waveforms: --wave FILE.fst (with --rtl or --lockstep) records every router; --wave-from/--wave-to/--wave-scope "
      "limit it to a window of cycles and a router. A failure of an RTL run prints `[ fail-at  ]` and one command "
      "that re-runs it with a waveform of the cycles around the failing one.");
  sub->add_option("--topology", f->topology, "torus or mesh (mesh: TLM only)")->capture_default_str();
  sub->add_option("--dims", f->dims, "routers per dimension: 4x4, 3x5, 2x2x2 (2..16 each)")->capture_default_str();
  sub->add_option("--traffic", f->traffic, "uniform, transpose, bitcomp, hotspot or neighbor")->capture_default_str();
  sub->add_option("--rate", f->rate, "offered load per node, flits/cycle, in [0, 1]")->capture_default_str();
  sub->add_option("--cycles", f->cycles, "cycles during which the sources inject; then the network drains")
      ->check(kNonNegative)
      ->capture_default_str();
  sub->add_option("--vcs", f->vcs,
                  "VCs per port, 2..8, a multiple of 2 x groups (default 2 for 1-D/2-D, 4 for 3-D); --rtl: a built "
                  "router's");
  sub->add_option("--vc-groups", f->vc_groups, "message-class VC groups, 1..4 (default 1; 2 for 3-D with 4 VCs)");
  sub->add_option("--buf-depth", f->buf_depth, "flit slots per VC buffer (1..63; the RTL builds have 4, d2v4b8 8)")
      ->capture_default_str();
  sub->add_option("--link-latency", f->link_latency, "extra register stages per link, 0..32")->capture_default_str();
  sub->add_option("--packet-flits", f->packet_flits, "flits per packet: N or MIN-MAX, uniform (1..15)")
      ->capture_default_str();
  sub->add_option("--hotspot-fraction", f->hotspot_fraction, "hotspot traffic: share of packets to router 0")
      ->capture_default_str();
  sub->add_option("--drain-cycles", f->drain_cycles, "cycles allowed to drain after injection stops")
      ->check(kNonNegative)
      ->capture_default_str();
  sub->add_option("--seed", f->seed, "traffic seed")->check(kNonNegative)->capture_default_str();
  sub->add_option("--ber", f->ber,
                  "bit error probability per link bit, 0..0.5, on every beat that carries a flit or a credit/"
                  "acknowledgement (the link-level retry recovers; docs/neuronlink.md)")
      ->capture_default_str();
  sub->add_option("--drop", f->drop, "probability a flit is lost on a link, 0..1 (replayed by the link)")
      ->capture_default_str();
  sub->add_option("--fault-seed", f->fault_seed, "seed of the --ber/--drop faults (the same faults on --rtl, the "
                  "TLM and --lockstep)")
      ->check(kNonNegative)
      ->capture_default_str();
  sub->add_flag("--rtl", f->rtl,
                "simulate the verilated routers (builds: d2v2, d2v4, d3v4g2, d2v4b8); implied by --lockstep");
  sub->add_flag("--lockstep", f->lockstep,
                "simulate RTL and TLM together, comparing every port every cycle (includes --rtl; both may be given)");
  sub->add_option("--threads", f->threads,
                  fmt::format("host threads that evaluate the routers (TLM and RTL), 1..{}; at most one per "
                              "router is started; the results do not depend on it; the speed figures are then by "
                              "the wall clock",
                              mn::StepPool::kMaxThreads))
      ->check(CLI::Range(1, mn::StepPool::kMaxThreads))
      ->capture_default_str();
  sub->add_flag("--no-assertions", f->no_assertions,
                "With --rtl or --lockstep: do not evaluate the routers' SystemVerilog assertions (faster long runs; "
                "the traffic checker and the link counters still check every packet)");
  sub->add_option("--wave", f->wave,
                  "With --rtl or --lockstep: write an FST waveform of the verilated routers (view: scripts/wave FILE)");
  sub->add_option("--wave-from", f->wave_from,
                  "With --wave: first cycle recorded (cycles since reset release, link bring-up included; default 0)")
      ->check(kNonNegative);
  sub->add_option("--wave-to", f->wave_to, "With --wave: last cycle recorded, inclusive (default: the end)")
      ->check(kNonNegative);
  sub->add_option("--wave-scope", f->wave_scope,
                  "With --wave: record only this router or part of one, e.g. node_1_0 or "
                  "node_1_0.trn_noc_router.g_in[1] (comma-separated list allowed; default: every router)");
  return [f, sub] {
    f->vcs_given = sub->count("--vcs") > 0;
    f->vc_groups_given = sub->count("--vc-groups") > 0;
    f->hotspot_fraction_given = sub->count("--hotspot-fraction") > 0;
    return run_noc(*f);
  };
}

}  // namespace trnsim::tool
