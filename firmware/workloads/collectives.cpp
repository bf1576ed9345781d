#include "firmware/workloads/collectives.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/core.h>

#include "firmware/golden/collective_golden.h"
#include "firmware/isa/ring_plan.h"
#include "firmware/kernels/collective_kernel.h"

namespace trnsim::workloads {

const std::vector<CollectiveEntry>& collective_registry() {
  static const std::vector<CollectiveEntry> r = {
      {"allreduce", "all-reduce of --bytes per chip over --config trn2-16|trn2-64 (--dtype fp32|bf16, --algo)",
       isa::Opcode::kAllReduce, "all-reduce"},
      {"allgather", "all-gather: --bytes is the gathered buffer, each chip contributes its block",
       isa::Opcode::kAllGather, "all-gather"},
      {"reducescatter", "reduce-scatter: --bytes is each chip's input, chip r keeps the sum of block r",
       isa::Opcode::kReduceScatter, "reduce-scatter"}};
  return r;
}

const CollectiveEntry* find_collective(std::string_view name) {
  for (const CollectiveEntry& e : collective_registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

CollectiveReport run_collective(const std::vector<driver::Driver*>& chips, const CollectiveParams& p,
                                uint64_t timeout_cycles) {
  using clock = std::chrono::steady_clock;
  const auto secs = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  if (chips.empty()) throw std::invalid_argument("a collective needs the drivers of the system's chips");
  const driver::DeviceInfo& info = chips.front()->info();
  CollectiveReport rep;
  rep.chips = info.system_chips();
  rep.torus = info.torus;
  rep.link_gbytes_per_s = info.link_gbytes_per_s;
  rep.hop_latency_ns = info.hop_latency_ns;
  rep.te_clock_mhz = info.te_clock_mhz;
  const int n = rep.chips;
  if (int(chips.size()) != n) {
    throw std::invalid_argument(fmt::format("{} drivers for a system of {} chips (TORUS of chip 0)", chips.size(), n));
  }
  for (int r = 0; r < n; ++r) {
    const driver::DeviceInfo& c = chips[size_t(r)]->info();
    if (c.chip_id != uint32_t(r) || c.torus != info.torus) {
      throw std::invalid_argument(fmt::format("driver {} is chip {} of a {}-chip system; the drivers must be the "
                                              "chips of one system in CHIP_ID order", r, c.chip_id, c.system_chips()));
    }
  }
  if (p.op != isa::Opcode::kAllReduce && p.op != isa::Opcode::kAllGather && p.op != isa::Opcode::kReduceScatter) {
    throw std::invalid_argument("a collective workload is an all_reduce, all_gather or reduce_scatter");
  }
  if (p.dtype != isa::DataType::kFp32 && p.dtype != isa::DataType::kBf16) {
    throw std::invalid_argument("collectives sum fp32 or bf16");
  }
  if (p.algorithm == isa::CcAlgorithm::kRhd && (n & (n - 1)) != 0) {
    throw std::invalid_argument(fmt::format("algorithm rhd (recursive halving-doubling) needs a power-of-two chip "
                                            "count, this system has {} chips; use ring", n));
  }
  const uint64_t es = isa::data_type_bytes(p.dtype);
  if (p.bytes % es) {
    throw std::invalid_argument(fmt::format("{} bytes is not a multiple of the {}-byte element", p.bytes, es));
  }
  rep.count = p.bytes / es;
  if (rep.count == 0) {
    rep.pass = true;
    return rep;
  }
  const golden::CollectiveDtype gtype =
      p.dtype == isa::DataType::kFp32 ? golden::CollectiveDtype::kFp32 : golden::CollectiveDtype::kBf16;
  const auto input = [&](int r, uint64_t j) { return golden::collective_test_value(gtype, p.seed, r, j); };

  const auto t0 = clock::now();
  // The buffer at HBM address 0 of every chip (each allocator starts there), the program at the top of HBM.
  const uint64_t addr = 0;
  const isa::Program program = kernels::make_collective_program(p.op, p.dtype, p.algorithm, addr, rep.count);
  for (driver::Driver* d : chips) {
    d->free_all();
    d->load_program(program);
    try {
      if (d->alloc(p.bytes) != addr) throw std::logic_error("the HBM allocator did not start at 0");
    } catch (const driver::OutOfDeviceMemory& e) {
      throw std::invalid_argument(fmt::format("{} bytes per chip do not fit: {}", p.bytes, e.what()));
    }
  }
  std::vector<uint32_t> values(rep.count);
  for (int r = 0; r < n; ++r) {
    for (uint64_t j = 0; j < rep.count; ++j) values[j] = input(r, j);
    chips[size_t(r)]->write_tensor(addr, values, p.dtype);
  }
  for (driver::Driver* d : chips) {
    d->set_watchdog(0);  // a chip waiting in a long collective retires nothing; the hub reports stuck rendezvous
    d->clear_counters();
  }
  const auto t1 = clock::now();
  const std::vector<kernels::ChipRun> runs = kernels::run_on_chips(chips, timeout_cycles);
  const auto t2 = clock::now();
  rep.fill_s = secs(t0, t1);
  rep.run_s = secs(t1, t2);
  for (size_t r = 0; r < runs.size(); ++r) {
    if (!runs[r].result) {
      rep.failed = fmt::format("chip {}: {}", r, runs[r].error);
      return rep;
    }
    rep.device_cycles = std::max(rep.device_cycles, runs[r].result->cycles);
  }
  uint64_t latency_sum = 0;
  for (driver::Driver* d : chips) {
    const driver::CollectiveCounters c = d->read_collective_counters();
    rep.collective_cycles = std::max(rep.collective_cycles, c.cycles);
    rep.steps = std::max(rep.steps, c.last_steps);
    rep.messages += c.messages;
    rep.net_cycles = std::max(rep.net_cycles, c.net_cycles);
    rep.net_packets += c.net_packets;
    rep.net_flits += c.net_flits;
    latency_sum += c.net_latency_sum;
    rep.net_max_latency_cycles = std::max(rep.net_max_latency_cycles, c.net_latency_max);
    rep.net_replays = std::max(rep.net_replays, c.net_replays);
    rep.net_crc_errors = std::max(rep.net_crc_errors, c.net_crc_errors);
    for (const driver::CollectiveCounters::Link& l : c.links) {
      rep.link_bytes += l.bytes;
      rep.net_link_flits += l.flits;
      rep.busiest_link_cycles = std::max(rep.busiest_link_cycles, l.busy);
    }
  }
  rep.net_mean_latency_cycles = rep.net_packets ? double(latency_sum) / double(rep.net_packets) : 0.0;

  // The golden: the machine (sizes, link bandwidths) and the algorithm's name; it plans the flows itself.
  golden::CollectiveAlgorithm galgo{p.algorithm == isa::CcAlgorithm::kRhd, info.torus, info.link_gbytes_per_s,
                                    isa::kRingSlices};
  const std::vector<uint32_t> want = p.op == isa::Opcode::kAllGather
                                         ? golden::collective_gathered(n, rep.count, input)
                                         : golden::collective_reduced(galgo, gtype, rep.count, input);
  const auto t3 = clock::now();
  for (int r = 0; r < n; ++r) {
    const std::vector<uint32_t> got = chips[size_t(r)]->read_tensor(addr, rep.count, p.dtype);
    const bool scatter = p.op == isa::Opcode::kReduceScatter;
    const uint64_t lo = scatter ? golden::collective_block_begin(rep.count, n, r) : 0;
    const uint64_t hi = scatter ? golden::collective_block_begin(rep.count, n, r + 1) : rep.count;
    for (uint64_t j = lo; j < hi; ++j) {
      ++rep.checked;
      if (got[j] == want[j]) continue;
      if (rep.mismatches++ < 5) rep.first.push_back({r, j, got[j], want[j]});
    }
  }
  const auto t4 = clock::now();
  rep.golden_s = secs(t2, t3);
  rep.compare_s = secs(t3, t4);
  rep.pass = rep.mismatches == 0;
  return rep;
}

}  // namespace trnsim::workloads
