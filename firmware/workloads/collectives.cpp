#include "firmware/workloads/collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <stdexcept>

#include <fmt/core.h>

#include "firmware/golden/collective_golden.h"
#include "firmware/isa/ring_plan.h"
#include "firmware/kernels/collective_kernel.h"

namespace trnsim::workloads {

const std::vector<CollectiveEntry>& collective_registry() {
  static const std::vector<CollectiveEntry> r = {
      {"allreduce", "all-reduce of --bytes per chip over --config trn2-16|trn2-64|trn2-256 (--dtype fp32|bf16, --algo)",
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

namespace {

/// What one chip's run left, as the host read it: its RunResult or error and its collective counters. Exchanged
/// between the hosts of a group as raw bytes (every rank runs the same binary).
struct ChipOutcome {
  static constexpr size_t kMaxLinks = 8;  ///< 3 dimensions x 2 directions, EFA out and in
  uint8_t ok = 0;
  uint64_t cycles = 0;
  driver::CollectiveCounters counters;
  std::string error;
};

void put_raw(std::vector<uint8_t>& b, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}

template <class T>
void put(std::vector<uint8_t>& b, const T& v) {
  put_raw(b, &v, sizeof v);
}

/// Reads what put() wrote; std::runtime_error when a host's bytes end early.
class Take {
 public:
  explicit Take(const std::vector<uint8_t>& b) : b_(b) {}
  template <class T>
  T get() {
    T v{};
    if (sizeof v > b_.size() - pos_) throw std::runtime_error("collective hosts: a short message from another host");
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string text(size_t n) {
    if (n > b_.size() - pos_) throw std::runtime_error("collective hosts: a short message from another host");
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_ = 0;
};

std::vector<uint8_t> pack(const std::vector<ChipOutcome>& outcomes) {
  std::vector<uint8_t> b;
  for (const ChipOutcome& o : outcomes) {
    const driver::CollectiveCounters& c = o.counters;
    put(b, o.ok);
    put(b, o.cycles);
    for (const uint64_t v : {c.ops, c.cycles, c.messages, c.bytes, c.net_cycles, c.net_packets, c.net_flits,
                             c.net_latency_sum}) {
      put(b, v);
    }
    for (const uint32_t v : {c.last_steps, c.net_latency_max, c.net_replays, c.net_crc_errors}) put(b, v);
    put(b, uint32_t(c.links.size()));
    for (const driver::CollectiveCounters::Link& l : c.links) put(b, l);
    put(b, uint32_t(o.error.size()));
    put_raw(b, o.error.data(), o.error.size());
  }
  return b;
}

void unpack(const std::vector<uint8_t>& b, std::vector<ChipOutcome>* out) {
  Take t(b);
  while (!t.done()) {
    ChipOutcome o;
    driver::CollectiveCounters& c = o.counters;
    o.ok = t.get<uint8_t>();
    o.cycles = t.get<uint64_t>();
    for (uint64_t* v : {&c.ops, &c.cycles, &c.messages, &c.bytes, &c.net_cycles, &c.net_packets, &c.net_flits,
                        &c.net_latency_sum}) {
      *v = t.get<uint64_t>();
    }
    for (uint32_t* v : {&c.last_steps, &c.net_latency_max, &c.net_replays, &c.net_crc_errors}) *v = t.get<uint32_t>();
    const auto links = t.get<uint32_t>();
    if (links > ChipOutcome::kMaxLinks) throw std::runtime_error("collective hosts: a chip with more than 8 links");
    for (uint32_t i = 0; i < links; ++i) c.links.push_back(t.get<driver::CollectiveCounters::Link>());
    o.error = t.text(t.get<uint32_t>());
    out->push_back(std::move(o));
  }
}

}  // namespace

CollectiveReport run_collective(const std::vector<driver::Driver*>& chips, const CollectiveParams& p,
                                uint64_t timeout_cycles, HostGroup* group) {
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
  // This host's chips: all of them, or (a group) consecutive CHIP_IDs from `first`, the ranks' in rank order.
  const int first = group ? int(info.chip_id) : 0;
  if (!group && int(chips.size()) != n) {
    throw std::invalid_argument(fmt::format("{} drivers for a system of {} chips (TORUS of chip 0)", chips.size(), n));
  }
  for (size_t i = 0; i < chips.size(); ++i) {
    const driver::DeviceInfo& c = chips[i]->info();
    if (c.chip_id != uint32_t(first) + i || c.torus != info.torus) {
      throw std::invalid_argument(fmt::format("driver {} is chip {} of a {}-chip system; the drivers must be the "
                                              "chips of one system in CHIP_ID order", i, c.chip_id, c.system_chips()));
    }
  }
  if (group) {
    std::vector<uint8_t> mine;
    put(mine, uint32_t(first));
    put(mine, uint32_t(chips.size()));
    uint32_t next = 0;
    for (const std::vector<uint8_t>& b : group->all_gather(mine)) {
      Take t(b);
      const auto f = t.get<uint32_t>(), k = t.get<uint32_t>();
      if (f != next) {
        throw std::invalid_argument(fmt::format("the hosts' chips skip chip {} (a host starts at {})", next, f));
      }
      next = f + k;
    }
    if (next != uint32_t(n)) throw std::invalid_argument(fmt::format("the hosts drive {} of the {} chips", next, n));
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
  // Filled and read back in chunks, so the host holds the device's buffers once (in HBM) and the golden's result.
  const uint64_t chunk = uint64_t(1) << 20;  // elements
  for (size_t i = 0; i < chips.size(); ++i) {
    for (uint64_t j0 = 0; j0 < rep.count; j0 += chunk) {
      std::vector<uint32_t> values(std::min(chunk, rep.count - j0));
      for (uint64_t j = 0; j < values.size(); ++j) values[j] = input(first + int(i), j0 + j);
      chips[i]->write_tensor(addr + j0 * es, values, p.dtype);
    }
  }
  for (driver::Driver* d : chips) {
    d->set_watchdog(0);  // a chip waiting in a long collective retires nothing; the hub reports stuck rendezvous
    d->clear_counters();
  }
  const auto t1 = clock::now();
  const std::vector<kernels::ChipRun> runs =
      group ? kernels::run_on_chips(chips, timeout_cycles, [&] { group->wait_all(timeout_cycles); })
            : kernels::run_on_chips(chips, timeout_cycles);
  const auto t2 = clock::now();
  rep.fill_s = secs(t0, t1);
  rep.run_s = secs(t1, t2);
  // Every chip's outcome, in chip order (a group's hosts exchange theirs).
  std::vector<ChipOutcome> outcomes;
  for (size_t i = 0; i < chips.size(); ++i) {
    ChipOutcome o;
    o.ok = runs[i].result.has_value();
    if (o.ok) {
      o.cycles = runs[i].result->cycles;
      o.counters = chips[i]->read_collective_counters();
    } else {
      o.error = runs[i].error;
    }
    outcomes.push_back(std::move(o));
  }
  if (group) {
    const std::vector<uint8_t> mine = pack(outcomes);
    outcomes.clear();
    for (const std::vector<uint8_t>& b : group->all_gather(mine)) unpack(b, &outcomes);
    if (outcomes.size() != size_t(n)) throw std::runtime_error("collective hosts: not every chip's outcome arrived");
  }
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (!outcomes[r].ok) {
      rep.failed = fmt::format("chip {}: {}", r, outcomes[r].error);
      return rep;
    }
    rep.device_cycles = std::max(rep.device_cycles, outcomes[r].cycles);
  }
  uint64_t latency_sum = 0;
  for (const ChipOutcome& o : outcomes) {
    const driver::CollectiveCounters& c = o.counters;
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

  // The golden: the machine (sizes, link bandwidths) and the algorithm's name; it plans the flows itself. Each host
  // computes it for its own chips.
  golden::CollectiveAlgorithm galgo{p.algorithm == isa::CcAlgorithm::kRhd, info.torus, info.link_gbytes_per_s,
                                    isa::kRingSlices, info.pods};
  const std::vector<uint32_t> want = p.op == isa::Opcode::kAllGather
                                         ? golden::collective_gathered(n, rep.count, input)
                                         : golden::collective_reduced(galgo, gtype, rep.count, input);
  const auto t3 = clock::now();
  for (size_t i = 0; i < chips.size(); ++i) {
    const int r = first + int(i);
    const bool scatter = p.op == isa::Opcode::kReduceScatter;
    const uint64_t lo = scatter ? golden::collective_block_begin(rep.count, n, r) : 0;
    const uint64_t hi = scatter ? golden::collective_block_begin(rep.count, n, r + 1) : rep.count;
    for (uint64_t j0 = lo; j0 < hi; j0 += chunk) {
      const std::vector<uint32_t> got = chips[i]->read_tensor(addr + j0 * es, std::min(chunk, hi - j0), p.dtype);
      for (uint64_t e = 0; e < got.size(); ++e) {
        const uint64_t j = j0 + e;
        ++rep.checked;
        if (got[e] == want[j]) continue;
        if (rep.mismatches++ < 5) rep.first.push_back({r, j, got[e], want[j]});
      }
    }
  }
  if (group) {  // the hosts' checks, merged in chip order (rank order)
    std::vector<uint8_t> mine;
    put(mine, rep.checked);
    put(mine, rep.mismatches);
    for (const CollectiveMismatch& m : rep.first) put(mine, m);
    rep.checked = rep.mismatches = 0;
    rep.first.clear();
    for (const std::vector<uint8_t>& b : group->all_gather(mine)) {
      Take t(b);
      rep.checked += t.get<uint64_t>();
      rep.mismatches += t.get<uint64_t>();
      while (!t.done()) {
        const auto m = t.get<CollectiveMismatch>();
        if (rep.first.size() < 5) rep.first.push_back(m);
      }
    }
  }
  const auto t4 = clock::now();
  rep.golden_s = secs(t2, t3);
  rep.compare_s = secs(t3, t4);
  rep.pass = rep.mismatches == 0;
  return rep;
}

}  // namespace trnsim::workloads
