#include "tools/trnsim/timeline.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace trnsim::tool {

namespace {
uint64_t ps(const sc_core::sc_time& t) { return uint64_t(std::llround(t.to_seconds() * 1e12)); }
double us(uint64_t picoseconds) { return double(picoseconds) / 1e6; }

// "multiply_moving dtype=bf16 sbuf=0x0 ..." -> the text after the mnemonic.
std::string operands_of(const isa::Instruction& instr) {
  const std::string text = isa::disassemble(instr);
  const size_t space = text.find(' ');
  return space == std::string::npos ? std::string() : text.substr(space + 1);
}

std::string mnemonic_of(const isa::Instruction& instr) {
  return std::string(isa::opcode_name(instr.op).value_or("?"));
}
}  // namespace

void TimelineRecorder::on_launch(uint32_t queue_mask, sc_core::sc_time time) {
  ++launches_;
  std::string queues;
  for (int q = 0; q < isa::kNumQueues; ++q) {
    if (!(queue_mask & (1u << q))) continue;
    queues += (queues.empty() ? "" : ",") + std::string(isa::engine_name(static_cast<isa::Engine>(q)));
  }
  open_launch_ = int64_t(slices_.size());
  slices_.push_back({kLaunchTrack, fmt::format("launch {}", launches_), "launch", "queues=" + queues, -1, ps(time),
                     ps(time), 0, 0});
}

void TimelineRecorder::on_launch_end(bool error, sc_core::sc_time time) {
  if (open_launch_ < 0) return;
  Slice& s = slices_[size_t(open_launch_)];
  s.end_ps = ps(time);
  if (error) s.name += " (error)";
  open_launch_ = -1;
}

void TimelineRecorder::on_instruction(const model::InstrEvent& e) {
  if (!e.faulted) ++instructions_;
  const bool wait = e.instr->op == isa::Opcode::kSemWait;
  slices_.push_back({e.queue, mnemonic_of(*e.instr), e.faulted ? "error" : wait ? "semaphore" : "instruction",
                     operands_of(*e.instr), int64_t(e.index), ps(e.start), ps(e.end), ps(e.waited), 0});
}

void TimelineRecorder::on_dma_copy(const model::DmaCopyEvent& e) {
  slices_.push_back({kDmaEngineTrack + e.engine, mnemonic_of(*e.instr), "dma-copy", operands_of(*e.instr),
                     int64_t(e.index), ps(e.start), ps(e.end), 0, e.bytes});
}

std::vector<TimelineRecorder::LaunchLoad> TimelineRecorder::launch_loads() const {
  std::vector<LaunchLoad> loads;
  for (const Slice& s : slices_) {
    if (s.track != kLaunchTrack) continue;
    LaunchLoad l;
    l.name = s.name, l.start_ps = s.start_ps, l.end_ps = s.end_ps;
    loads.push_back(std::move(l));
  }
  if (loads.empty()) return loads;
  for (const Slice& s : slices_) {
    if (s.track == kLaunchTrack) continue;
    // The launch this slice starts in: the last one that starts at or before it, if it has not ended.
    auto it = std::upper_bound(loads.begin(), loads.end(), s.start_ps,
                               [](uint64_t t, const LaunchLoad& l) { return t < l.start_ps; });
    if (it == loads.begin()) continue;
    LaunchLoad& l = *std::prev(it);
    if (s.start_ps > l.end_ps) continue;
    const uint64_t dur = s.end_ps - s.start_ps;
    if (s.track < isa::kNumQueues) {
      l.busy_ps[size_t(s.track)] += dur - std::min(dur, s.waited_ps);
    } else if (s.track >= kDmaEngineTrack) {
      l.dma_engines_busy_ps += dur;
      l.dma_bytes += s.bytes;
      ++l.copies;
    }
  }
  const uint64_t engines = uint64_t(std::max(1, config_.num_dma_engines));
  for (LaunchLoad& l : loads) {
    // Every queue but the DMA queue (its copies run on the DMA engines), in queue order, then the DMA engines'
    // mean; the first of equals is kept.
    for (int q = 0; q < isa::kNumQueues; ++q) {
      if (q == int(isa::Engine::kDma) || l.busy_ps[size_t(q)] <= l.bound_ps) continue;
      l.bound = std::string(isa::engine_name(static_cast<isa::Engine>(q)));
      l.bound_ps = l.busy_ps[size_t(q)];
    }
    const uint64_t dma_mean = l.dma_engines_busy_ps / engines;
    // The bytes over every engine at its bandwidth (bytes / (B/ns) = ns; x 1000 ps).
    const double bytes_ps = double(l.dma_bytes) * 1000.0 / (double(engines) * std::max(config_.dma_bytes_per_ns, 1e-9));
    l.bytes_bound_ps = std::max(l.bound_ps, uint64_t(std::llround(bytes_ps)));
    if (dma_mean > l.bound_ps) l.bound = "dma engines", l.bound_ps = dma_mean;
  }
  return loads;
}

std::string TimelineRecorder::floor_summary() const {
  const std::vector<LaunchLoad> loads = launch_loads();
  if (loads.empty()) return "";
  uint64_t total = 0, floor = 0, bytes_floor = 0;
  std::vector<std::pair<std::string, int>> by;  // bounding engine -> launches, in order of first appearance
  for (const LaunchLoad& l : loads) {
    total += l.end_ps - l.start_ps;
    floor += l.bound_ps;
    bytes_floor += l.bytes_bound_ps;
    if (l.bound.empty()) continue;
    auto it = std::find_if(by.begin(), by.end(), [&](const auto& e) { return e.first == l.bound; });
    if (it == by.end()) {
      by.push_back({l.bound, 1});
    } else {
      ++it->second;
    }
  }
  std::string engines;
  for (const auto& [name, n] : by) engines += fmt::format("{}{} {}", engines.empty() ? "" : ", ", name, n);
  const auto share = [&](uint64_t ps) { return total ? 100.0 * double(ps) / double(total) : 0.0; };
  return fmt::format("{:.3f} us of the launches' {:.3f} us ({:.1f} %): each launch's busiest engine, summed "
                     "(launches bound by {}); {:.3f} us ({:.1f} %) with the DMA engines' bytes at their bandwidth "
                     "and no start latency",
                     us(floor), us(total), share(floor), engines.empty() ? "none" : engines, us(bytes_floor),
                     share(bytes_floor));
}

void TimelineRecorder::write(const std::string& path) const {
  using nlohmann::json;
  const int pid = 1;
  json events = json::array();
  const auto meta = [&](int tid, const std::string& name) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  };
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"args", {{"name", fmt::format("trnsim NeuronCore ({})", config_.name)}}}});
  // Queue q's clock: the engine's own (BRIEF section 2); the DMA queue issues in TE cycles.
  const auto clock_of = [&](int track) -> uint32_t {
    switch (track) {
      case int(isa::Engine::kAct): return config_.scalar_clock_mhz;
      case int(isa::Engine::kVec): return config_.vector_clock_mhz;
      default: return config_.te_clock_mhz;
    }
  };
  const char* titles[isa::kNumQueues] = {"Tensor Engine", "DMA queue", "Scalar (activation) engine",
                                         "Vector engine", "Collective engine (NeuronLink)"};
  for (int q = 0; q < isa::kNumQueues; ++q) {
    meta(q, fmt::format("{} queue: {} ({:.2f} GHz)", isa::engine_name(static_cast<isa::Engine>(q)), titles[q],
                        clock_of(q) / 1000.0));
  }
  for (int e = 0; e < config_.num_dma_engines; ++e) meta(kDmaEngineTrack + e, fmt::format("DMA engine {}", e));
  meta(kLaunchTrack, "launches (doorbell to done)");

  // The model's TE cycle on SystemC's 1 ps grid (417 ps at 2.4 GHz, as CoreControl::cycle_time()): durations in TE
  // cycles match the device's cycle counter; an engine's own cycles are TE cycles x its clock / the TE clock.
  const double cycle_ps = double(std::llround(1e6 / config_.te_clock_mhz));
  const std::vector<LaunchLoad> loads = launch_loads();
  size_t launch = 0;
  for (const Slice& s : slices_) {
    const uint64_t dur_ps = s.end_ps - s.start_ps;
    const int64_t te_cycles = std::llround(double(dur_ps) / cycle_ps);
    json args = {{"operands", s.operands}};
    if (s.index >= 0) args["index"] = s.index;
    if (s.track < isa::kNumQueues) {
      const uint32_t mhz = clock_of(s.track);
      args["cycles"] = std::llround(double(te_cycles) * mhz / config_.te_clock_mhz);  // the engine's own clock
      args["clock_mhz"] = mhz;
      args["te_cycles"] = te_cycles;
      if (s.waited_ps) args["waited_te_cycles"] = std::llround(double(s.waited_ps) / cycle_ps);
    } else if (s.track < kLaunchTrack) {
      args["bytes"] = s.bytes;
      args["te_cycles"] = te_cycles;
    } else if (launch < loads.size()) {  // launches are recorded in order
      const LaunchLoad& l = loads[launch++];
      args["te_cycles"] = te_cycles;
      json busy = json::object();
      for (int q = 0; q < isa::kNumQueues; ++q) {
        busy[std::string(isa::engine_name(static_cast<isa::Engine>(q)))] = us(l.busy_ps[size_t(q)]);
      }
      args["busy_us"] = std::move(busy);
      args["dma_engines_busy_us"] = us(l.dma_engines_busy_ps / uint64_t(std::max(1, config_.num_dma_engines)));
      args["dma_copies"] = l.copies;
      args["dma_bytes"] = l.dma_bytes;
      args["bound"] = l.bound;
      args["bound_us"] = us(l.bound_ps);
      args["bytes_bound_us"] = us(l.bytes_bound_ps);
    }
    events.push_back({{"name", s.name},
                      {"cat", s.category},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", s.track},
                      {"ts", us(s.start_ps)},
                      {"dur", us(dur_ps)},
                      {"args", std::move(args)}});
  }
  const json doc = {{"traceEvents", std::move(events)},
                    {"displayTimeUnit", "ns"},
                    {"otherData",
                     {{"generator", "trnsim"},
                      {"config", config_.name},
                      {"time_unit", "simulated microseconds since the device was created"},
                      {"instructions", instructions_},
                      {"launches", launches_}}}};
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("--timeline {}: cannot open for writing", path));
  out << doc.dump() << '\n';
  out.close();
  if (!out) throw std::runtime_error(fmt::format("--timeline {}: write failed", path));
}

}  // namespace trnsim::tool
