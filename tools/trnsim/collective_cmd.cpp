#include "tools/trnsim/collective_cmd.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/resource.h>
#include <sys/stat.h>

#include <fmt/core.h>
#include <fmt/format.h>

#include "cosim/collective/noc_transports.h"
#include "cosim/device/sim_system.h"
#include "cosim/mpi/mpi_system.h"
#include "cosim/wave_window.h"
#include "firmware/driver/driver.h"
#include "firmware/driver/remote_device.h"
#include "firmware/driver/wire.h"
#include "firmware/isa/ring_plan.h"
#include "firmware/workloads/collectives.h"
#include "model/collective/noc_transport.h"
#include "model/noc/noc_flit.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
namespace {

namespace mc = model::collective;

/// Longest a collective launch may run, in TE cycles (about 42 ms of simulated time at 2.4 GHz: a 512 MiB rhd
/// all-reduce takes about 10 ms). The device watchdog is off for the launch: a chip waiting in a long collective
/// retires nothing, and the collective engines report stuck rendezvous themselves (CC_PEER_STOPPED, CC_DEADLOCK).
constexpr uint64_t kCollectiveTimeoutCycles = 100'000'000'000;

/// Host memory the simulated HBM of all chips may take (the buffers are allocated on touch).
constexpr uint64_t kMaxTouchedBytes = 8ull << 30;

/// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): 2(n-1)/n for all-reduce, (n-1)/n for all-gather and
/// reduce-scatter.
double bus_factor(isa::Opcode op, int n) {
  const double f = double(n - 1) / n;
  return op == isa::Opcode::kAllReduce ? 2 * f : f;
}

std::string dims_text(const std::vector<int>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

double peak_rss_gib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / (1024.0 * 1024.0);  // KiB on Linux
}

}  // namespace

bool is_collective_workload(const std::string& name) { return workloads::find_collective(name) != nullptr; }

void add_collective_options(CLI::App& run, CollectiveOptions& o) {
  run.add_option("--bytes", o.bytes,
                 "Collective workloads: each chip's buffer in bytes, K/M/G suffixes (x1024^n, as nccl-tests), each "
                 "with an optional B or iB (64M, 64MB, 64MiB); a multiple of the --dtype size (fp32: 4, bf16: 2); "
                 "0 is a no-op")
      ->capture_default_str();
  run.add_option("--algo", o.algo,
                 "Collective workloads: ring (rings along every torus dimension, both directions) or rhd "
                 "(recursive halving-doubling, power-of-two chip counts)")
      ->check(CLI::IsMember({"ring", "rhd"}))
      ->capture_default_str();
  run.add_option("--fabric", o.fabric,
                 "Collective workloads: the chip-to-chip network. message: message-level link model at the "
                 "configuration's link bandwidths and hop latency (fast, any size); tlm: packets of flits through "
                 "the C++ router model; rtl: through the verilated routers (d2v2 for trn2-16, d3v4g2 for trn2-64; "
                 "slow: about 30k cycles/s on 16 routers, 1.5k-3k on 64, progress on stderr every 2 s); lockstep: "
                 "both, every router port compared every cycle. On tlm/rtl/lockstep every link carries one 8-byte "
                 "flit per cycle = 160 GB/s (0.05 ns per cycle), Z links included")
      ->check(CLI::IsMember({"message", "tlm", "rtl", "lockstep"}))
      ->capture_default_str();
  run.add_option("--ber", o.ber,
                 "Collective workloads on --fabric tlm|rtl|lockstep: bit error probability per link bit, 0..0.5; the "
                 "links' CRC and replay recover (docs/neuronlink.md, Link-level retry), the report counts replays")
      ->capture_default_str();
  run.add_option("--drop", o.drop, "Collective workloads on --fabric tlm|rtl|lockstep: probability a flit is lost on "
                 "a link, 0..1")
      ->capture_default_str();
  run.add_option("--fault-seed", o.fault_seed, "seed of the --ber/--drop faults")
      ->check(kNonNegative)
      ->capture_default_str();
  run.add_option("--rank-progress", o.rank_progress_s,
                 "Collective workloads under mpirun: every rank prints its progress on stderr at most every SECONDS "
                 "of host time (rank, its chips, simulated time, windows, collectives matched; docs/distributed.md); "
                 "0: off")
      ->check(CLI::Validator(
          [](std::string& v) {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            return !v.empty() && *end == '\0' && std::isfinite(x) && x >= 0 ? std::string()
                                                                            : v + " is not a number of seconds >= 0";
          },
          ""))
      ->capture_default_str();
}

uint64_t parse_bytes(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  // The suffixes of the help and docs/neuronlink.md, case as written there: K, M or G (x 2^10, 2^20, 2^30), each
  // with an optional B or iB, or a plain B.
  static const std::vector<std::pair<std::string, int>> kUnits = {
      {"", 0},   {"B", 0},    {"K", 10},  {"KB", 10}, {"KiB", 10}, {"M", 20},
      {"MB", 20}, {"MiB", 20}, {"G", 30}, {"GB", 30}, {"GiB", 30}};
  const std::string unit = text.substr(i);
  const auto u = std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& e) { return e.first == unit; });
  if (i == 0 || u == kUnits.end()) {
    throw BadInput(fmt::format("--bytes {}: not a size (digits with an optional K, M or G, then an optional B or iB, "
                               "e.g. 64M)", text));
  }
  const int shift = u->second;
  // Leading zeros do not count; past 16 significant digits the number is past 2^50 (16 digits) whatever the suffix.
  const size_t first = std::min(text.find_first_not_of('0'), i - 1);
  const std::string digits = text.substr(first, i - first);
  if (digits.size() > 16 || std::stoull(digits) > (uint64_t{1} << (50 - shift))) {
    throw BadInput(fmt::format("--bytes {}: too large (at most 2^50 bytes)", text));
  }
  return std::stoull(digits) << shift;
}

namespace {

/// The hosts of the ranks (docs/distributed.md) as the collective workload sees them.
class RankHosts final : public workloads::HostGroup {
 public:
  explicit RankHosts(cosim::mpi::DistributedSystem& s) : s_(s) {}
  int rank() const override { return s_.rank(); }
  int ranks() const override { return s_.partition().ranks(); }
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) override {
    return s_.all_gather(mine);
  }
  void wait_all(uint64_t timeout_cycles) override { s_.wait_all(timeout_cycles); }

 private:
  cosim::mpi::DistributedSystem& s_;
};

/// The inputs, results and golden of `chips` buffers of `bytes` are held on this host (and, in process, the HBMs).
void check_host_memory(const std::string& text, uint64_t bytes, int chips) {
  if (bytes * uint64_t(chips) > kMaxTouchedBytes) {
    throw BadInput(fmt::format("--bytes {}: {} chips x {:.2f} GiB of HBM is more host memory than one process of "
                               "this command uses ({} GiB); split the system over MPI ranks (mpirun -np N, "
                               "docs/distributed.md) or give fewer bytes", text, chips, double(bytes) / (1 << 30),
                               kMaxTouchedBytes >> 30));
  }
}

/// The served system's chips: PATH.0, PATH.1, ... (`trnsim serve --config trn2-16 --socket PATH`), as many as chip
/// 0's TORUS says. BadInput naming the socket when one is missing or is not the chip its name says.
std::vector<std::unique_ptr<driver::Device>> connect_chips(const std::string& base) {
  std::vector<std::unique_ptr<driver::Device>> devices;
  const auto open = [&](int r) {
    const std::string path = fmt::format("{}.{}", base, r);
    try {
      devices.push_back(std::make_unique<driver::RemoteDevice>(path));
    } catch (const wire::WireError& e) {
      throw BadInput(fmt::format("--connect {}: {}{}", base, e.what(),
                                 r == 0 ? " (a multi-chip system is served as PATH.0, PATH.1, ...: `trnsim serve "
                                          "--config trn2-16 --socket PATH`)"
                                        : ""));
    }
  };
  struct stat st {};
  if (::stat((base + ".0").c_str(), &st) != 0 && ::stat(base.c_str(), &st) == 0) {  // a single device's socket?
    std::unique_ptr<driver::Device> one;
    try {
      one = std::make_unique<driver::RemoteDevice>(base);
    } catch (const wire::WireError& e) {
      throw BadInput(fmt::format("--connect {}: {}", base, e.what()));
    }
    const driver::DeviceInfo info = driver::Driver(*one).info();
    throw BadInput(info.system_chips() < 2
                       ? fmt::format("--connect {}: a chip on its own; collectives need a multi-chip system (`trnsim "
                                     "serve --config trn2-16 --socket PATH` serves chip r at PATH.r)", base)
                       : fmt::format("--connect {}: chip {} of a {}-chip system; give the system's path (without "
                                     "the .{})", base, info.chip_id, info.system_chips(), info.chip_id));
  }
  open(0);
  const int n = driver::Driver(*devices.front()).info().system_chips();
  if (n < 2) {
    throw BadInput(fmt::format("--connect {}: {}.0 is a chip on its own; collectives need a multi-chip system",
                               base, base));
  }
  for (int r = 1; r < n; ++r) open(r);
  return devices;
}

}  // namespace

int run_collective_workload(const CollectiveOptions& o,
                            const std::function<void(const nlohmann::json&)>& write_report) {
  const workloads::CollectiveEntry* entry = workloads::find_collective(o.workload);
  if (entry == nullptr) throw BadInput(fmt::format("--workload {}: not a collective workload", o.workload));
  workloads::CollectiveParams p;
  p.op = entry->op;
  if (o.dtype != "fp32" && o.dtype != "bf16") {
    throw BadInput(fmt::format("--dtype {}: collectives sum fp32 or bf16", o.dtype));
  }
  p.dtype = o.dtype == "fp32" ? isa::DataType::kFp32 : isa::DataType::kBf16;
  p.algorithm = o.algo == "rhd" ? isa::CcAlgorithm::kRhd : isa::CcAlgorithm::kRing;
  p.bytes = parse_bytes(o.bytes);
  p.seed = o.seed;
  const uint64_t es = isa::data_type_bytes(p.dtype);
  if (p.bytes % es) {
    throw BadInput(fmt::format("--bytes {} ({} bytes) is not a multiple of the {} element size ({} bytes)", o.bytes,
                               p.bytes, o.dtype, es));
  }
  const auto fabric = cosim::collective::fabric_kind(o.fabric);
  mc::NocTransportOptions noc_options;
  noc_options.link_errors = model::noc::LinkErrors{o.ber, o.drop, o.fault_seed};
  if (noc_options.link_errors.any() && fabric == cosim::collective::FabricKind::kMessage) {
    throw BadInput("--ber and --drop inject faults on the router network's links: give --fabric tlm, rtl or lockstep "
                   "(the message-level link model has no flits to corrupt)");
  }
  try {
    noc_options.link_errors.validate();
  } catch (const model::noc::NocError& e) {
    throw BadInput(fmt::format("--{}: {}", !(o.ber >= 0 && o.ber <= 0.5) ? "ber" : "drop", e.what()));
  }
  const auto t0 = std::chrono::steady_clock::now();

  // The system: in process (cosim::SimSystem, its chips' collective engines joined by one hub), or served by
  // `trnsim serve` as one socket per chip. Everything after this goes through one driver per chip.
  std::unique_ptr<cosim::SimSystem> system;
  std::unique_ptr<cosim::mpi::DistributedSystem> ranks;  // under mpirun: this rank's chips (docs/distributed.md)
  std::vector<std::unique_ptr<driver::Device>> served;
  std::vector<driver::Device*> devices;
  const cosim::mpi::Session* mpi = cosim::mpi::Session::current();
  if (mpi && !mpi->active()) mpi = nullptr;
  if (mpi && !o.connect.empty()) {
    throw BadInput("--connect: a served system is driven from one process; start it without mpirun");
  }
  if (mpi && fabric != cosim::collective::FabricKind::kMessage) {
    throw BadInput(fmt::format("--fabric {}: the router networks are not split across MPI ranks; use --fabric message "
                               "(the default) under mpirun, or run without mpirun", o.fabric));
  }
  if (!o.connect.empty()) {
    if (fabric != cosim::collective::FabricKind::kMessage) {
      throw BadInput("--fabric chooses the network of a system in this process; with --connect the server's is used");
    }
    served = connect_chips(o.connect);
    check_host_memory(o.bytes, p.bytes, int(served.size()));
    for (auto& d : served) devices.push_back(d.get());
  } else {
    cosim::read_wave_env<BadInput>();  // TRNSIM_WAVE*: refused here, before a harness in a SystemC thread reads them
    model::ChipConfig cfg;
    try {
      cfg = model::chip_config(o.config);
    } catch (const std::invalid_argument& e) {
      throw BadInput(fmt::format("--config: {}", e.what()));
    }
    if (cfg.chips < 2) {
      throw BadInput(fmt::format("--workload {} runs on a multi-chip system: --config trn2-16, trn2-64 or trn2-256 "
                                 "(not {})", o.workload, o.config));
    }
    if (cfg.pods > 1 && fabric != cosim::collective::FabricKind::kMessage) {
      throw BadInput(fmt::format("--fabric {}: the router networks are one torus; {}'s UltraServers meet over EFA, "
                                 "which the message-level link model carries (--fabric message)", o.fabric, o.config));
    }
    // Each rank's host holds its own chips' buffers (and, in its process, their HBM).
    const int ranks_n = mpi ? std::max(1, mpi->ranks()) : 1;
    check_host_memory(o.bytes, p.bytes, (cfg.chips + ranks_n - 1) / ranks_n);
    if (mpi) {
      try {
        ranks = std::make_unique<cosim::mpi::DistributedSystem>(cfg, *mpi);
      } catch (const std::invalid_argument& e) {
        throw BadInput(fmt::format("mpirun -np {} with --config {}: {}", mpi->ranks(), o.config, e.what()));
      }
    }
    if (ranks) ranks->set_progress(o.rank_progress_s);
    mc::TransportFactory transport;  // empty: the message-level link model
    if (fabric != cosim::collective::FabricKind::kMessage) {
      transport = cosim::collective::transport_factory(fabric, noc_options, [&o](mc::NocTransport& t) {
        t.on_progress(
            [&o](const mc::NetworkFigures& f, uint64_t outstanding) {
              fmt::print(stderr, "trnsim run: {} network: cycle {}, {} delivered, packets outstanding: {}, "
                         "{:.0f} cycles/s\n", o.fabric, f.cycles, counted(f.flits, "flit"), outstanding,
                         f.host_seconds > 0 ? double(f.cycles) / f.host_seconds : 0.0);
            },
            2.0);
      });
    }
    if (ranks) {
      devices = ranks->devices();  // this rank's chips: its host fills, runs and checks them
    } else {
      system = std::make_unique<cosim::SimSystem>(cfg, mc::Topology::from_config(cfg), transport);
      for (int r = 0; r < system->chips(); ++r) devices.push_back(&system->device(r));
    }
  }
  std::vector<std::unique_ptr<driver::Driver>> drivers;
  std::vector<driver::Driver*> chips;
  for (driver::Device* d : devices) {
    drivers.push_back(std::make_unique<driver::Driver>(*d));
    chips.push_back(drivers.back().get());
  }
  const driver::DeviceInfo& info = chips.front()->info();
  const int n = info.system_chips();
  const std::string& op_name = entry->title;
  const std::string& algo_name = o.algo;
  fmt::print("trnsim run: {}, {} bytes per chip ({}), {} algorithm, seed {}\n", op_name, p.bytes,
             counted(p.bytes / es, o.dtype + " element"), algo_name, o.seed);
  std::string links;
  for (size_t d = 0; d < info.torus.size(); ++d) {
    links += fmt::format("{}{} {:.0f}", d ? ", " : "", "xyz"[d], info.link_gbytes_per_s[d]);
  }
  fmt::print("  system {}: {} chips, {} torus, link GB/s per direction ({}), hop latency {:.2f} us\n",
             info.config_name, n, dims_text(info.torus), links, info.hop_latency_ns / 1000.0);
  if (info.pods > 1) {
    fmt::print("  UltraServers      {} of {} chips, joined by EFA: {:.0f} GB/s per chip and direction, {:.2f} us per "
               "pass (chip to switch, switch to chip)\n", info.pods, info.torus_chips(), info.efa_gbytes_per_s,
               info.efa_latency_ns / 1000.0);
  }
  if (fabric != cosim::collective::FabricKind::kMessage) {
    const char* what = fabric == cosim::collective::FabricKind::kTlm ? "the C++ router model"
                       : fabric == cosim::collective::FabricKind::kRtl
                           ? "the verilated routers"
                           : "the verilated routers and the C++ router model in lockstep";
    fmt::print("  fabric            {}: packets through {} ({}, build {}), at most {} payload flits each; {} bytes "
               "per flit and cycle = {:.0f} GB/s per link on every link, {:.3f} ns per cycle\n",
               o.fabric, what, dims_text(info.torus), info.torus.size() == 3 ? "d3v4g2" : "d2v2",
               noc_options.max_packet_words, noc_options.flit_bytes, noc_options.link_gbytes_per_s,
               noc_options.flit_bytes / noc_options.link_gbytes_per_s);
  } else {  // `trnsim serve` serves a system on this one
    fmt::print("  fabric            message: message-level link model (link bandwidths and hop latency above)\n");
  }
  if (p.algorithm == isa::CcAlgorithm::kRing) {
    std::vector<std::string> flows;
    for (const isa::RingFlow& f : isa::ring_plan(info.torus, info.link_gbytes_per_s)) {  // the documented plan
      if (f.slice) continue;
      std::string order;
      for (int d : f.dims) order += "xyz"[d];
      if (info.pods > 1) order += "u";  // then the ring over the UltraServers
      flows.push_back(fmt::format("{}{} x{}", order, f.direction > 0 ? "+" : "-", f.weight));
    }
    fmt::print("  ring flows        {} (phase order{}, direction, share; {} slices each)\n", fmt::join(flows, ", "),
               info.pods > 1 ? ", u: the UltraServers over EFA" : "", isa::kRingSlices);
  }
  if (p.bytes == 0) {
    write_report({{"workload", o.workload}, {"config", info.config_name}, {"bytes", 0}, {"pass", true},
                  {"noop", true}});
    fmt::print("PASS: 0 bytes: the {} is a no-op (nothing sent, nothing changed)\n", op_name);  // last line
    return kExitOk;
  }
  std::fflush(stdout);

  workloads::CollectiveReport rep;
  std::unique_ptr<RankHosts> hosts = ranks ? std::make_unique<RankHosts>(*ranks) : nullptr;
  try {
    rep = workloads::run_collective(chips, p, kCollectiveTimeoutCycles, hosts.get());
  } catch (const std::invalid_argument& e) {  // the same on every rank: every one leaves with it
    throw BadInput(fmt::format("--workload {} on {}: {}", o.workload, info.config_name, e.what()));
  } catch (const model::noc::NocError& e) {
    fmt::print("FAIL: the router network (--fabric {}) stopped: {}\n", o.fabric, e.what());
    return kExitFail;
  } catch (const std::exception& e) {
    if (ranks) ranks->fail(e.what(), kExitFail);  // perhaps this rank's alone: end the job, never a hang
    throw;
  }
  if (!rep.failed.empty()) {
    fmt::print("FAIL: {}\n", rep.failed);
    return kExitFail;
  }
  const auto t4 = std::chrono::steady_clock::now();
  for (const workloads::CollectiveMismatch& m : rep.first) {
    fmt::print("  MISMATCH chip {} element {}: got 0x{:0{}X}, golden 0x{:0{}X}\n", m.chip, m.element, m.got, es * 2,
               m.want, es * 2);
  }

  // The time of the instruction path: the devices' cycle counters (doorbell to the last halt), which add the cc
  // queue's issue cycles to the collective's own time. A TE cycle is the model's: 1e6 / MHz ps rounded to
  // SystemC's 1 ps grid (417 ps at 2.4 GHz).
  const double ns_per_cycle = double(std::llround(1e6 / info.te_clock_mhz)) / 1000.0;
  const double device_ns = double(rep.device_cycles) * ns_per_cycle;
  const double us = device_ns / 1000.0;
  const double collective_us = double(rep.collective_cycles) * ns_per_cycle / 1000.0;
  const double algbw = double(p.bytes) / device_ns;  // bytes per ns = GB/s
  const double busbw = algbw * bus_factor(p.op, n);
  double peak = 0;  // the sum of a chip's output links (dimensions of size > 1, both directions)
  for (size_t d = 0; d < info.torus.size(); ++d) peak += info.torus[d] > 1 ? 2 * info.link_gbytes_per_s[d] : 0.0;
  peak += info.pods > 1 ? info.efa_gbytes_per_s : 0.0;  // and its EFA link to the switch
  const double busiest_us = double(rep.busiest_link_cycles) * ns_per_cycle / 1000.0;
  fmt::print("  simulated time    {:.3f} us on the devices ({} TE cycles from the doorbells to the last halt; the "
             "collective itself {:.3f} us, {} steps per chip and flow, {} messages)\n", us, rep.device_cycles,
             collective_us, rep.steps, rep.messages);
  fmt::print("  algbw             {:.2f} GB/s (bytes / simulated time)\n", algbw);
  fmt::print("  busbw             {:.2f} GB/s (algbw x {}, nccl-tests doc/PERFORMANCE.md)\n", busbw,
             p.op == isa::Opcode::kAllReduce ? "2(n-1)/n" : "(n-1)/n");
  fmt::print("  link peak         {:.0f} GB/s per chip (sum of its output links); busbw is {:.1f}% of it\n", peak,
             100.0 * busbw / peak);
  fmt::print("  busiest link      {:.1f}% busy ({:.3f} us reserved)\n", 100.0 * busiest_us / us, busiest_us);
  const double run_s = rep.run_s > 0 ? rep.run_s : 1e-9;
  if (rep.net_cycles > 0) {
    fmt::print("  network           {} router cycles, {}, {} delivered, {} over links; packet latency mean {:.1f}, "
               "max {} cycles (head injection to tail ejection); {:.0f} router cycles per host second\n",
               rep.net_cycles, counted(rep.net_packets, "packet"), counted(rep.net_flits, "flit"),
               counted(rep.net_link_flits, "flit"), rep.net_mean_latency_cycles, rep.net_max_latency_cycles,
               double(rep.net_cycles) / run_s);
    fmt::print("  link retry        {} replays, {} flits dropped for a bad CRC{}\n", rep.net_replays,
               rep.net_crc_errors,
               noc_options.link_errors.any() ? fmt::format(" (injected faults: {})", noc_options.link_errors.str())
                                             : std::string(" (no faults injected)"));
  }
  if (fabric != cosim::collective::FabricKind::kMessage) {
    fmt::print("  note              on the router network every link runs at {:.0f} GB/s{} and a chip injects "
               "and ejects one flit per cycle through its router's local port ({:.0f} GB/s), which bounds busbw; "
               "no 1.5 us hop latency\n", noc_options.link_gbytes_per_s,
               info.torus.size() == 3 ? " (the 64 GB/s Z links are not modelled)" : "",
               noc_options.link_gbytes_per_s);
  }
  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  fmt::print("  host wall time    {:.3f} s (collective {:.3f} s, fill {:.3f} s, golden {:.3f} s, compare {:.3f} s)\n",
             secs(t0, t4), rep.run_s, rep.fill_s, rep.golden_s, rep.compare_s);
  double peak_rank_gib = peak_rss_gib();
  if (ranks) {
    const mc::Partition& part = ranks->partition();
    std::vector<std::string> parts;
    const std::vector<uint64_t> rss = ranks->peak_rss_bytes();
    peak_rank_gib = 0;
    for (int q = 0; q < part.ranks(); ++q) {
      parts.push_back(fmt::format("rank {} {} {:.2f} GiB", q, part.chips_text(q), double(rss[size_t(q)]) / (1 << 30)));
      peak_rank_gib = std::max(peak_rank_gib, double(rss[size_t(q)]) / (1 << 30));
    }
    fmt::print("  MPI ranks         {}, window {:.3f} us (the hop latency); peak memory {}\n", part.ranks(),
               ranks->window_ns() / 1000.0, fmt::join(parts, ", "));
  }
  fmt::print("  host peak memory  {:.2f} GiB{}\n", peak_rank_gib, ranks ? " (the largest rank's)" : "");
  nlohmann::json report = {{"workload", o.workload},
                           {"config", info.config_name},
                           {"chips", n},
                           {"dtype", o.dtype},
                           {"algo", o.algo},
                           {"bytes", p.bytes},
                           {"seed", o.seed},
                           {"simulated_us", us},
                           {"collective_us", collective_us},
                           {"device_cycles", rep.device_cycles},
                           {"collective_cycles", rep.collective_cycles},
                           {"algbw_gbps", algbw},
                           {"busbw_gbps", busbw},
                           {"link_peak_gbps", peak},
                           {"messages", rep.messages},
                           {"link_bytes", rep.link_bytes},
                           {"busiest_link_cycles", rep.busiest_link_cycles},
                           {"fabric", o.connect.empty() ? o.fabric : "served"},
                           {"wall_s", secs(t0, t4)},
                           {"collective_wall_s", rep.run_s},
                           {"peak_rss_gib", peak_rank_gib},
                           {"mpi_ranks", ranks ? ranks->partition().ranks() : 0},
                           {"mismatches", rep.mismatches},
                           {"pass", rep.pass}};
  if (rep.net_cycles > 0) {  // the router network's figures; none on the message-level link model
    report["network_cycles"] = rep.net_cycles;
    report["network_packets"] = rep.net_packets;
    report["network_flits"] = rep.net_flits;
    report["network_link_flits"] = rep.net_link_flits;
    report["network_mean_latency_cycles"] = rep.net_mean_latency_cycles;
    report["network_max_latency_cycles"] = rep.net_max_latency_cycles;
    report["network_replays"] = rep.net_replays;
    report["network_crc_errors"] = rep.net_crc_errors;
    report["link_ber"] = o.ber;
    report["link_drop"] = o.drop;
  }
  write_report(report);
  if (!rep.pass) {
    fmt::print("FAIL: {} of {} elements differ from the golden {}\n", rep.mismatches, rep.checked, op_name);
    return kExitFail;
  }
  fmt::print("PASS: {} on {} chips bit-exact against the golden {} ({} order)\n", counted(rep.checked, "element"), n,
             op_name, algo_name);
  return kExitOk;
}

}  // namespace trnsim::tool
