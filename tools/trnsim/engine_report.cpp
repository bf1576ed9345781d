#include "tools/trnsim/engine_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

namespace trnsim::tool {

void print_engine_report(const DeviceSession& s, nlohmann::json& j) {
  const cosim::UsageReport r = s.device->usage();
  const double window = r.elapsed_us;
  const auto pct = [window](double t) { return window > 0 ? 100.0 * t / window : 0.0; };
  // Busy time in the engine's own clock: whole TE cycles (the model's time unit) x clock / TE clock.
  const uint32_t te_mhz = s.config.te_clock_mhz;
  const auto te_cycles = [&](double t_us) {
    return r.te_cycle_us > 0 ? uint64_t(std::llround(t_us / r.te_cycle_us)) : uint64_t{0};
  };
  const auto own_cycles = [&](double t_us, uint32_t mhz) {
    return uint64_t(std::llround(double(te_cycles(t_us)) * mhz / te_mhz));
  };
  fmt::print("  engines           over {:.3f} us simulated: busy, waiting on a semaphore, waiting for DMA, idle\n",
             window);
  fmt::print("    {:<26} {:>9} {:>8} {:>13} {:>11} {:>7} {:>9} {:>9} {:>7}\n", "engine", "clock", "instr",
             "busy cycles", "busy us", "busy", "sem wait", "dma wait", "idle");
  nlohmann::json engines = nlohmann::json::object();
  for (const cosim::EngineUsage& u : r.queues) {
    const double idle = std::max(0.0, window - u.busy_us - u.sem_wait_us - u.dma_wait_us);
    const uint64_t cycles = own_cycles(u.busy_us, u.clock_mhz);
    fmt::print("    {:<26} {:>5.2f} GHz {:>8} {:>13} {:>11.3f} {:>6.1f}% {:>8.1f}% {:>8.1f}% {:>6.1f}%\n",
               u.name + " (" + u.title + ")", u.clock_mhz / 1000.0, u.count, cycles, u.busy_us, pct(u.busy_us),
               pct(u.sem_wait_us), pct(u.dma_wait_us), pct(idle));
    engines[u.name] = {{"title", u.title},           {"clock_mhz", u.clock_mhz},
                       {"instructions", u.count},     {"busy_cycles", cycles},
                       {"busy_us", u.busy_us},        {"utilization", window > 0 ? u.busy_us / window : 0.0},
                       {"sem_wait_us", u.sem_wait_us}, {"dma_wait_us", u.dma_wait_us},
                       {"idle_us", idle},
                       {"te_cycles",
                        {{"busy", te_cycles(u.busy_us)},
                         {"sem_wait", te_cycles(u.sem_wait_us)},
                         {"dma_wait", te_cycles(u.dma_wait_us)},
                         {"idle", te_cycles(idle)}}}};
  }
  nlohmann::json dma = nlohmann::json::array();
  double busy_sum = 0;
  uint64_t copies = 0;
  size_t busiest = 0;
  for (size_t e = 0; e < r.dma_engines.size(); ++e) {
    const cosim::EngineUsage& u = r.dma_engines[e];
    busy_sum += u.busy_us;
    copies += u.count;
    if (u.busy_us > r.dma_engines[busiest].busy_us) busiest = e;
    dma.push_back({{"engine", e},
                   {"copies", u.count},
                   {"busy_us", u.busy_us},
                   {"utilization", window > 0 ? u.busy_us / window : 0.0}});
  }
  if (!r.dma_engines.empty()) {
    const size_t n = r.dma_engines.size();
    const uint32_t mhz = r.dma_engines.front().clock_mhz;
    const double mean = busy_sum / double(n);
    fmt::print("    {:<26} {:>5.2f} GHz {:>8} {:>13} {:>11.3f} {:>6.1f}% {:>9} {:>9} {:>6.1f}%   (mean of {}; busiest "
               "{} {:.1f}%)\n",
               fmt::format("dma engines ({} copies)", copies), mhz / 1000.0, "-",
               own_cycles(busy_sum, mhz), busy_sum, pct(mean), "-", "-", 100.0 - pct(mean), n,
               r.dma_engines[busiest].name, pct(r.dma_engines[busiest].busy_us));
  }
  j["engine_window_us"] = window;
  j["engines"] = std::move(engines);
  j["dma_engines"] = std::move(dma);
  s.write_timeline();
}

}  // namespace trnsim::tool
