#include "tools/trnsim/engine_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace trnsim::tool {

namespace {
/// Report names of the queues, by queue id (isa::Engine).
const char* queue_title(uint32_t q) {
  static const char* const kTitles[] = {"Tensor Engine", "DMA queue", "Scalar engine", "Vector engine",
                                        "Collective engine"};
  return q < std::size(kTitles) ? kTitles[q] : "queue";
}
}  // namespace

void print_engine_report(const DeviceSession& s, nlohmann::json& j) {
  const driver::DeviceInfo& info = s.info();
  const driver::DeviceCounters c = s.driver->read_counters();
  const double window = info.cycles_to_us(c.uptime);
  const auto pct = [&c](uint64_t cycles) { return c.uptime > 0 ? 100.0 * double(cycles) / double(c.uptime) : 0.0; };
  // Busy time in the engine's own clock: TE cycles x clock / TE clock.
  const auto own_cycles = [&](uint64_t te_cycles, uint32_t mhz) {
    return uint64_t(std::llround(double(te_cycles) * mhz / info.te_clock_mhz));
  };
  fmt::print("  engines           over {:.3f} us simulated: busy, waiting on a semaphore, waiting for DMA, idle\n",
             window);
  fmt::print("    {:<26} {:>9} {:>8} {:>13} {:>11} {:>7} {:>9} {:>9} {:>7}\n", "engine", "clock", "instr",
             "busy cycles", "busy us", "busy", "sem wait", "dma wait", "idle");
  nlohmann::json engines = nlohmann::json::object();
  for (uint32_t q = 0; q < c.queues.size() && q < uint32_t(isa::kNumQueues); ++q) {
    const driver::DeviceCounters::Queue& u = c.queues[q];
    const std::string name(isa::engine_name(static_cast<isa::Engine>(q)));
    const uint32_t mhz = info.queue_clock_mhz(q);
    const uint64_t cycles = own_cycles(u.busy, mhz);
    fmt::print("    {:<26} {:>5.2f} GHz {:>8} {:>13} {:>11.3f} {:>6.1f}% {:>8.1f}% {:>8.1f}% {:>6.1f}%\n",
               name + " (" + queue_title(q) + ")", mhz / 1000.0, u.retired, cycles, info.cycles_to_us(u.busy),
               pct(u.busy), pct(u.sem_wait), pct(u.dma_wait), pct(u.idle));
    engines[name] = {
        {"title", queue_title(q)},
        {"clock_mhz", mhz},
        {"instructions", u.retired},
        {"busy_cycles", cycles},
        {"busy_us", info.cycles_to_us(u.busy)},
        {"utilization", pct(u.busy) / 100.0},
        {"sem_wait_us", info.cycles_to_us(u.sem_wait)},
        {"dma_wait_us", info.cycles_to_us(u.dma_wait)},
        {"idle_us", info.cycles_to_us(u.idle)},
        {"te_cycles", {{"busy", u.busy}, {"sem_wait", u.sem_wait}, {"dma_wait", u.dma_wait}, {"idle", u.idle}}}};
  }
  nlohmann::json dma = nlohmann::json::array();
  uint64_t busy_sum = 0, copies = 0;
  size_t busiest = 0;
  for (size_t e = 0; e < c.dma.size(); ++e) {
    busy_sum += c.dma[e].busy;
    copies += c.dma[e].copies;
    if (c.dma[e].busy > c.dma[busiest].busy) busiest = e;
    dma.push_back({{"engine", e},
                   {"copies", c.dma[e].copies},
                   {"busy_us", info.cycles_to_us(c.dma[e].busy)},
                   {"utilization", pct(c.dma[e].busy) / 100.0}});
  }
  if (!c.dma.empty()) {
    const size_t n = c.dma.size();
    const double mean = pct(busy_sum) / double(n);
    fmt::print(
        "    {:<26} {:>5.2f} GHz {:>8} {:>13} {:>11.3f} {:>6.1f}% {:>9} {:>9} {:>6.1f}%   (mean of {}; busiest "
        "dma{} {:.1f}%)\n",
        fmt::format("dma engines ({} copies)", copies), info.te_clock_mhz / 1000.0, "-",
        own_cycles(busy_sum, info.te_clock_mhz), info.cycles_to_us(busy_sum), mean, "-", "-", 100.0 - mean, n, busiest,
        pct(c.dma[busiest].busy));
  }
  j["engine_window_us"] = window;
  j["engines"] = std::move(engines);
  j["dma_engines"] = std::move(dma);
  s.write_timeline();
}

void print_retired(const std::array<uint64_t, isa::kNumQueues>& retired) {
  const auto n = [&](isa::Engine e) { return retired[size_t(e)]; };
  fmt::print("  retired           te {}, dma {}, act {}, vec {}, cc {}\n", n(isa::Engine::kTe), n(isa::Engine::kDma),
             n(isa::Engine::kAct), n(isa::Engine::kVec), n(isa::Engine::kCc));
}

void print_core_table(const DeviceSession& s, const std::vector<int>& which,
                      const std::vector<driver::RunResult>& runs, const std::vector<uint64_t>& te_macs,
                      nlohmann::json& j) {
  const std::vector<driver::Driver*> all = s.cores();
  const double pes = double(s.info().te_rows) * s.info().te_cols;
  fmt::print("  {:<5} {:>12} {:>14} {:>8}  {:<8} retired te/dma/act/vec/cc\n", "core", "cycles", "TE MACs", "TE util",
             "TE");
  j["cores"] = nlohmann::json::array();
  for (size_t i = 0; i < which.size(); ++i) {
    driver::Driver* core = all.at(size_t(which[i]));
    const driver::RunResult& r = runs.at(i);
    const uint64_t macs = te_macs.at(i);
    const double util = r.cycles ? double(macs) / (double(r.cycles) * pes) : 0.0;
    const auto q = [&](isa::Engine e) { return r.retired[size_t(e)]; };
    // The core's own datapath, as its SIM_TE_BACKEND register tells (every core has the --te backend).
    fmt::print("  {:<5} {:>12} {:>14} {:>7.1f}%  {:<8} {}/{}/{}/{}/{}\n", core->info().core, r.cycles, macs,
               100.0 * util, core->info().te_backend, q(isa::Engine::kTe), q(isa::Engine::kDma), q(isa::Engine::kAct),
               q(isa::Engine::kVec), q(isa::Engine::kCc));
    j["cores"].push_back({{"core", core->info().core},
                          {"te_backend", core->info().te_backend},
                          {"cycles", r.cycles},
                          {"te_macs", macs},
                          {"te_utilization", util},
                          {"retired",
                           {{"te", q(isa::Engine::kTe)},
                            {"dma", q(isa::Engine::kDma)},
                            {"act", q(isa::Engine::kAct)},
                            {"vec", q(isa::Engine::kVec)},
                            {"cc", q(isa::Engine::kCc)}}}});
  }
  fmt::print("  (the engine table below is core 0's)\n");
}

}  // namespace trnsim::tool
