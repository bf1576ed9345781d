#include "tools/trnsim/collective_cmd.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <sys/resource.h>

#include <fmt/core.h>
#include <fmt/format.h>

#include "cosim/collective/noc_transports.h"
#include "cosim/device/sim_system.h"
#include "cosim/wave_window.h"
#include "firmware/driver/driver.h"
#include "firmware/golden/collective_golden.h"
#include "firmware/isa/ring_plan.h"
#include "firmware/kernels/collective_kernel.h"
#include "model/collective/collective_hub.h"
#include "model/collective/collective_system.h"
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

mc::Op op_of(const std::string& w) {
  return w == "allreduce" ? mc::Op::kAllReduce : w == "allgather" ? mc::Op::kAllGather : mc::Op::kReduceScatter;
}

/// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): 2(n-1)/n for all-reduce, (n-1)/n for all-gather and
/// reduce-scatter.
double bus_factor(mc::Op op, int n) {
  const double f = double(n - 1) / n;
  return op == mc::Op::kAllReduce ? 2 * f : f;
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

const std::vector<std::pair<std::string, std::string>>& collective_workloads() {
  static const std::vector<std::pair<std::string, std::string>> w = {
      {"allreduce", "all-reduce of --bytes per chip over --config trn2-16|trn2-64 (--dtype fp32|bf16, --algo)"},
      {"allgather", "all-gather: --bytes is the gathered buffer, each chip contributes its block"},
      {"reducescatter", "reduce-scatter: --bytes is each chip's input, chip r keeps the sum of block r"}};
  return w;
}

bool is_collective_workload(const std::string& name) {
  const auto& w = collective_workloads();
  return std::any_of(w.begin(), w.end(), [&](const auto& e) { return e.first == name; });
}

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
  // More than 15 digits is more than 2^50 bytes, whatever the suffix.
  if (i > 15 || std::stoull(text.substr(0, i)) > (uint64_t{1} << (50 - shift))) {
    throw BadInput(fmt::format("--bytes {}: too large (at most 2^50 bytes)", text));
  }
  return std::stoull(text.substr(0, i)) << shift;
}

int run_collective_workload(const CollectiveOptions& o,
                            const std::function<void(const nlohmann::json&)>& write_report) {
  cosim::read_wave_env<BadInput>();  // TRNSIM_WAVE*: refused here, before a harness in a SystemC thread reads them
  model::ChipConfig cfg;
  try {
    cfg = model::chip_config(o.config);
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--config: {}", e.what()));
  }
  if (cfg.chips < 2) {
    throw BadInput(fmt::format("--workload {} runs on a multi-chip system: --config trn2-16 or trn2-64 (not {})",
                               o.workload, o.config));
  }
  if (o.dtype != "fp32" && o.dtype != "bf16") {
    throw BadInput(fmt::format("--dtype {}: collectives sum fp32 or bf16", o.dtype));
  }
  const mc::ElemType type = o.dtype == "fp32" ? mc::ElemType::kFp32 : mc::ElemType::kBf16;
  const golden::CollectiveDtype gtype =
      type == mc::ElemType::kFp32 ? golden::CollectiveDtype::kFp32 : golden::CollectiveDtype::kBf16;
  const uint64_t es = mc::elem_bytes(type);
  const uint64_t bytes = parse_bytes(o.bytes);
  if (bytes % es) {
    throw BadInput(fmt::format("--bytes {} ({} bytes) is not a multiple of the {} element size ({} bytes)", o.bytes,
                               bytes, o.dtype, es));
  }
  const mc::Algorithm algo = o.algo == "rhd" ? mc::Algorithm::kRhd : mc::Algorithm::kRing;
  const mc::Op op = op_of(o.workload);
  const uint64_t count = bytes / es;
  if (bytes * uint64_t(cfg.chips) > kMaxTouchedBytes) {
    throw BadInput(fmt::format("--bytes {}: {} chips x {:.2f} GiB of HBM is more host memory than this command "
                               "uses ({} GiB)", o.bytes, cfg.chips, double(bytes) / (1 << 30), kMaxTouchedBytes >> 30));
  }

  const auto t0 = std::chrono::steady_clock::now();
  // The machine as configured (its torus and links); the system is built from it below, with the chosen transport.
  const mc::Topology topo = mc::Topology::from_config(cfg);
  const int n = topo.chips();
  fmt::print("trnsim run: {}, {} bytes per chip ({}), {} algorithm, seed {}\n", mc::op_name(op), bytes,
             counted(count, o.dtype + " element"), mc::algorithm_name(algo), o.seed);
  std::string links;
  for (int d = 0; d < topo.num_dims(); ++d) {
    links += fmt::format("{}{} {:.0f}", d ? ", " : "", "xyz"[d], topo.gbytes_per_s(d));
  }
  fmt::print("  system {}: {} chips, {} torus, link GB/s per direction ({}), hop latency {:.2f} us\n", cfg.name, n,
             dims_text(topo.dims()), links, topo.hop_latency_ns() / 1000.0);
  const auto fabric = cosim::collective::fabric_kind(o.fabric);
  const mc::NocTransportOptions noc_options;
  mc::TransportFactory transport;  // empty: the message-level link model
  if (fabric != cosim::collective::FabricKind::kMessage) {
    const char* what = fabric == cosim::collective::FabricKind::kTlm ? "the C++ router model"
                       : fabric == cosim::collective::FabricKind::kRtl
                           ? "the verilated routers"
                           : "the verilated routers and the C++ router model in lockstep";
    fmt::print("  fabric            {}: packets through {} ({}, build {}), at most {} payload flits each; {} bytes "
               "per flit and cycle = {:.0f} GB/s per link on every link, {:.3f} ns per cycle\n",
               o.fabric, what, dims_text(topo.dims()), topo.num_dims() == 3 ? "d3v4g2" : "d2v2",
               noc_options.max_packet_words, noc_options.flit_bytes, noc_options.link_gbytes_per_s,
               noc_options.flit_bytes / noc_options.link_gbytes_per_s);
    transport = cosim::collective::transport_factory(fabric, noc_options, [&o](mc::NocTransport& t) {
      t.on_progress(
          [&o](const mc::NetworkFigures& f, uint64_t outstanding) {
            fmt::print(stderr, "trnsim run: {} network: cycle {}, {} delivered, packets outstanding: {}, "
                       "{:.0f} cycles/s\n", o.fabric, f.cycles, counted(f.flits, "flit"), outstanding,
                       f.host_seconds > 0 ? double(f.cycles) / f.host_seconds : 0.0);
          },
          2.0);
    });
  } else {
    fmt::print("  fabric            message: message-level link model (link bandwidths and hop latency above)\n");
  }
  if (algo == mc::Algorithm::kRing) {
    std::vector<std::string> flows;
    std::vector<double> gbps;
    for (int d = 0; d < topo.num_dims(); ++d) gbps.push_back(topo.gbytes_per_s(d));
    for (const isa::RingFlow& f : isa::ring_plan(topo.dims(), gbps)) {  // the documented plan the engines follow
      if (f.slice) continue;
      std::string order;
      for (int d : f.dims) order += "xyz"[d];
      flows.push_back(fmt::format("{}{} x{}", order, f.direction > 0 ? "+" : "-", f.weight));
    }
    fmt::print("  ring flows        {} (phase order, direction, share; {} slices each)\n", fmt::join(flows, ", "),
               isa::kRingSlices);
  }
  if (count == 0) {
    write_report({{"workload", o.workload}, {"config", cfg.name}, {"bytes", 0}, {"pass", true}, {"noop", true}});
    fmt::print("PASS: 0 bytes: the {} is a no-op (nothing sent, nothing changed)\n", mc::op_name(op));  // last line
    return kExitOk;
  }
  std::fflush(stdout);

  // The system as SystemC chips (cosim/device/sim_system.h): one driver per chip loads the cc program and moves the
  // data through the registers; the chips' collective engines meet in the hub, which runs its CollectiveSystem.
  cosim::SimSystem system(cfg, topo, transport);
  std::vector<std::unique_ptr<driver::Driver>> drivers;
  std::vector<driver::Driver*> chips;
  for (int r = 0; r < system.chips(); ++r) {
    drivers.push_back(std::make_unique<driver::Driver>(system.device(r)));
    chips.push_back(drivers.back().get());
  }

  // Chip r's buffer: collective_test_value(seed, r, j) for every element j (all-gather uses block r of it).
  const auto input = [&](int r, uint64_t j) { return golden::collective_test_value(gtype, o.seed, r, j); };
  const uint64_t addr = chips.front()->alloc(bytes);
  for (driver::Driver* d : chips) d->alloc(bytes);  // the same address on every chip (each allocator starts at 0)
  {
    std::vector<uint8_t> buf(bytes);
    for (int r = 0; r < n; ++r) {
      for (uint64_t j = 0; j < count; ++j) {
        const uint32_t v = input(r, j);
        std::memcpy(&buf[j * es], &v, es);
      }
      chips[size_t(r)]->write_hbm(addr, buf.data(), bytes);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  mc::Result res;
  uint64_t device_cycles = 0;  // doorbell to the last chip's halt (the instruction path)
  try {
    if (algo == mc::Algorithm::kRhd && (n & (n - 1)) != 0) {
      throw mc::CollectiveError("algorithm rhd (recursive halving-doubling) needs a power-of-two chip count, this "
                                "system has " + std::to_string(n) + " chips; use ring");
    }
    const isa::Program program = kernels::make_collective_program(
        op == mc::Op::kAllReduce ? isa::Opcode::kAllReduce
        : op == mc::Op::kAllGather ? isa::Opcode::kAllGather
                                   : isa::Opcode::kReduceScatter,
        type == mc::ElemType::kFp32 ? isa::DataType::kFp32 : isa::DataType::kBf16,
        algo == mc::Algorithm::kRhd ? isa::CcAlgorithm::kRhd : isa::CcAlgorithm::kRing, addr, count);
    for (driver::Driver* d : chips) {
      d->load_program(program);
      d->set_watchdog(0);
    }
    system.hub().clear_completed();
    const std::vector<kernels::ChipRun> runs = kernels::run_on_chips(chips, kCollectiveTimeoutCycles);
    for (size_t r = 0; r < runs.size(); ++r) {
      if (!runs[r].result) {
        fmt::print("FAIL: chip {}: {}\n", r, runs[r].error);
        return kExitFail;
      }
      device_cycles = std::max(device_cycles, runs[r].result->cycles);
    }
    res = system.hub().completed().at(0).result;
  } catch (const mc::CollectiveError& e) {
    throw BadInput(fmt::format("--algo {} on --config {}: {}", o.algo, o.config, e.what()));
  } catch (const model::noc::NocError& e) {
    fmt::print("FAIL: the router network (--fabric {}) stopped: {}\n", o.fabric, e.what());
    return kExitFail;
  }
  const auto t2 = std::chrono::steady_clock::now();

  // The machine (sizes, link bandwidths) and the algorithm's name: the golden plans the flows itself.
  golden::CollectiveAlgorithm galgo{algo == mc::Algorithm::kRhd, topo.dims(), {}, isa::kRingSlices};
  for (int d = 0; d < topo.num_dims(); ++d) galgo.link_gbytes_per_s.push_back(topo.gbytes_per_s(d));
  const std::vector<uint32_t> want = op == mc::Op::kAllGather ? golden::collective_gathered(n, count, input)
                                                              : golden::collective_reduced(galgo, gtype, count, input);
  const auto t3 = std::chrono::steady_clock::now();
  uint64_t mismatches = 0, checked = 0;
  {
    std::vector<uint8_t> buf(bytes);
    for (int r = 0; r < n; ++r) {
      chips[size_t(r)]->read_hbm(addr, buf.data(), bytes);
      const uint64_t lo = op == mc::Op::kReduceScatter ? golden::collective_block_begin(count, n, r) : 0;
      const uint64_t hi = op == mc::Op::kReduceScatter ? golden::collective_block_begin(count, n, r + 1) : count;
      for (uint64_t j = lo; j < hi; ++j) {
        uint32_t got = 0;
        std::memcpy(&got, &buf[j * es], es);
        ++checked;
        if (got != want[j] && mismatches++ < 5) {
          fmt::print("  MISMATCH chip {} element {}: got 0x{:0{}X}, golden 0x{:0{}X}\n", r, j, got, es * 2, want[j],
                     es * 2);
        }
      }
    }
  }
  const auto t4 = std::chrono::steady_clock::now();
  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };

  // The time of the instruction path: the devices' cycle counters (doorbell to the last halt), which add the cc
  // queue's issue cycles to the collective's own (link-model) time. A TE cycle is the model's: 1e6 / MHz ps
  // rounded to SystemC's 1 ps grid (417 ps at 2.4 GHz).
  const double device_ns = double(device_cycles) * double(std::llround(1e6 / cfg.te_clock_mhz)) / 1000.0;
  const double us = device_ns / 1000.0;
  const double algbw = double(bytes) / device_ns;  // bytes per ns = GB/s
  const double busbw = algbw * bus_factor(op, n);
  const double peak = topo.chip_egress_gbytes_per_s();
  fmt::print("  simulated time    {:.3f} us on the devices ({} TE cycles from the doorbells to the last halt; the "
             "collective itself {:.3f} us, {} steps per chip and flow, {} messages)\n", us, device_cycles,
             res.time_ns / 1000.0, res.steps, res.messages);
  fmt::print("  algbw             {:.2f} GB/s (bytes / simulated time)\n", algbw);
  fmt::print("  busbw             {:.2f} GB/s (algbw x {}, nccl-tests doc/PERFORMANCE.md)\n", busbw,
             op == mc::Op::kAllReduce ? "2(n-1)/n" : "(n-1)/n");
  fmt::print("  link peak         {:.0f} GB/s per chip (sum of its output links); busbw is {:.1f}% of it\n", peak,
             100.0 * busbw / peak);
  fmt::print("  busiest link      {:.1f}% busy ({:.3f} us reserved)\n", 100.0 * res.max_link_busy_ns / device_ns,
             res.max_link_busy_ns / 1000.0);
  const mc::NetworkFigures& net = res.network;
  if (fabric != cosim::collective::FabricKind::kMessage) {
    fmt::print("  network           {} cycles at {:.3f} ns, {}, {} delivered, {} over links; "
               "packet latency mean {:.1f}, max {} cycles (head injection to tail ejection); model {:.0f} "
               "cycles/s\n", net.cycles, net.ns_per_cycle, counted(net.packets, "packet"),
               counted(net.flits, "flit"), counted(net.link_flits, "flit"),
               net.mean_latency_cycles, net.max_latency_cycles,
               net.host_seconds > 0 ? double(net.cycles) / net.host_seconds : 0.0);
    fmt::print("  note              on the router network every link runs at {:.0f} GB/s{} and a chip injects "
               "and ejects one flit per cycle through its router's local port ({:.0f} GB/s), which bounds busbw; "
               "no 1.5 us hop latency\n", noc_options.link_gbytes_per_s,
               topo.num_dims() == 3 ? " (the 64 GB/s Z links are not modelled)" : "", noc_options.link_gbytes_per_s);
  }
  fmt::print("  host wall time    {:.3f} s (collective {:.3f} s, fill {:.3f} s, golden {:.3f} s, compare {:.3f} s)\n",
             secs(t0, t4), secs(t1, t2), secs(t0, t1), secs(t2, t3), secs(t3, t4));
  fmt::print("  host peak memory  {:.2f} GiB\n", peak_rss_gib());
  nlohmann::json report = {{"workload", o.workload},
                           {"config", cfg.name},
                           {"chips", n},
                           {"dtype", o.dtype},
                           {"algo", o.algo},
                           {"bytes", bytes},
                           {"seed", o.seed},
                           {"simulated_us", us},
                           {"collective_us", res.time_ns / 1000.0},
                           {"device_cycles", device_cycles},
                           {"algbw_gbps", algbw},
                           {"busbw_gbps", busbw},
                           {"link_peak_gbps", peak},
                           {"messages", res.messages},
                           {"fabric", o.fabric},
                           {"wall_s", secs(t0, t4)},
                           {"collective_wall_s", secs(t1, t2)},
                           {"peak_rss_gib", peak_rss_gib()},
                           {"mismatches", mismatches},
                           {"pass", mismatches == 0}};
  if (fabric != cosim::collective::FabricKind::kMessage) {  // the router network's figures; none for message
    report["network_cycles"] = net.cycles;
    report["network_packets"] = net.packets;
    report["network_flits"] = net.flits;
    report["network_link_flits"] = net.link_flits;
    report["network_mean_latency_cycles"] = net.mean_latency_cycles;
    report["network_max_latency_cycles"] = net.max_latency_cycles;
  }
  write_report(report);
  if (mismatches) {
    fmt::print("FAIL: {} of {} elements differ from the golden {}\n", mismatches, checked, mc::op_name(op));
    return kExitFail;
  }
  fmt::print("PASS: {} on {} chips bit-exact against the golden {} ({} order)\n", counted(checked, "element"), n,
             mc::op_name(op), mc::algorithm_name(algo));
  return kExitOk;
}

}  // namespace trnsim::tool
