#include "tools/trnsim/device_session.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <fmt/format.h>

#include "cosim/device/sim_device.h"
#include "cosim/te/te_rtl.h"
#include "firmware/driver/remote_device.h"
#include "model/config/chip_config.h"
#include "spec/trn_regs.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {

namespace {

/// Progress lines while the driver waits: this program's cycles and TE utilization so far (never above 100 %: both
/// count from the same doorbell).
void print_progress(driver::Driver& drv, std::shared_ptr<const std::string> running) {
  const driver::DeviceInfo info = drv.info();
  drv.set_progress([info, running](const driver::RunProgress& p) {
    fmt::print(stderr, "  ... {} cycles into {}, {:.3f} G MACs, its TE utilization {:.1f}%\n", p.cycles,
               running->empty() ? "this program" : *running, double(p.te_macs) / 1e9,
               100.0 * p.te_utilization(info));
  });
}

DeviceSession connect_device(const DeviceFlags& flags) {
  DeviceSession s;
  s.connect = flags.connect;
  try {
    s.device = std::make_unique<driver::RemoteDevice>(flags.connect);
  } catch (const wire::WireError& e) {
    throw BadInput(fmt::format("--connect {}: {}", flags.connect, e.what()));
  }
  s.driver = std::make_unique<driver::Driver>(*s.device);
  print_progress(*s.driver, s.running);
  if (flags.watchdog_cycles >= 0) s.driver->set_watchdog(uint32_t(flags.watchdog_cycles));
  if (flags.sr_seed >= 0) s.driver->set_sr_seed(uint32_t(flags.sr_seed));
  return s;
}

}  // namespace

void add_cores_flag(CLI::App& cmd, DeviceFlags& flags, bool every_core_default) {
  if (every_core_default) {
    flags.cores = 0;
    cmd.add_option("--cores", flags.cores, "Cores of the chip to run on, from core 0 (the config's CHIP_CORES at "
                                           "most; default: all of them, a --program file: core 0)")
        ->check(CLI::Range(1, int(regs::MAX_CORES)));
    return;
  }
  cmd.add_option("--cores", flags.cores, "Cores of the chip to run on, from core 0 (the config's CHIP_CORES at most)")
      ->check(CLI::Range(1, int(regs::MAX_CORES)))
      ->capture_default_str();
}

std::vector<driver::Driver*> DeviceSession::cores() const {
  std::vector<driver::Driver*> v{driver.get()};
  for (const auto& d : other_cores) v.push_back(d.get());
  return v;
}

void open_cores(DeviceSession& s, DeviceFlags& flags) {
  const uint32_t have = s.info().cores;
  if (flags.cores == 0) flags.cores = int(std::max<uint32_t>(1, have));
  if (flags.cores < 1 || uint32_t(flags.cores) > have) {
    throw BadInput(fmt::format("--cores {}: a {} chip has {} core{}", flags.cores, s.info().config_name, have,
                               have == 1 ? "" : "s"));
  }
  if (flags.cores == 1) return;
  const std::vector<driver::HbmRegion> regions = driver::chip_regions(s.info().hbm_bytes, uint32_t(flags.cores));
  for (int c = 0; c < flags.cores; ++c) {
    s.views.push_back(std::make_unique<driver::CoreDevice>(*s.device, uint32_t(c)));
    auto d = std::make_unique<driver::Driver>(*s.views.back(), regions[size_t(c)]);
    if (flags.watchdog_cycles >= 0) d->set_watchdog(uint32_t(flags.watchdog_cycles));
    if (flags.sr_seed >= 0) d->set_sr_seed(uint32_t(flags.sr_seed));
    if (c == 0) {
      print_progress(*d, s.running);
      s.driver = std::move(d);
    } else {
      s.other_cores.push_back(std::move(d));
    }
  }
}

void add_connect_flag(CLI::App& cmd, DeviceFlags& flags) {
  cmd.add_option("--connect", flags.connect,
                 "Run on the device that `trnsim serve --socket PATH` serves, instead of one in this process");
}

void check_connect_flags(const CLI::App& cmd, const DeviceFlags& flags) {
  if (flags.connect.empty()) return;
  for (const char* opt : {"--config", "--te", "--wave", "--wave-from", "--wave-to", "--wave-scope", "--timeline",
                          "--check-hazards", "--check-uninit"}) {
    if (cmd.get_option_no_throw(opt) != nullptr && cmd.count(opt) > 0) {
      throw BadInput(fmt::format("{} configures the device, and with --connect the server does: give it to "
                                 "`trnsim serve`",
                                 opt));
    }
  }
}

DeviceSession open_device(const DeviceFlags& flags) {
  if (!flags.connect.empty()) return connect_device(flags);
  DeviceSession s;
  model::ChipConfig config;
  try {
    config = model::chip_config(flags.config);
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--config: {}", e.what()));
  }
  if (config.chips > 1) {
    throw BadInput(fmt::format("--config {}: a multi-chip system ({} chips) runs only the collective workloads "
                               "(allreduce, allgather, reducescatter); use tiny or trn2 for this one",
                               flags.config, config.chips));
  }
  const auto mode = cosim::parse_te_mode(flags.te);
  if (!mode) throw BadInput(fmt::format("--te {}: unknown (rtl, tlm, lockstep)", flags.te));
  if (*mode != cosim::TeMode::kTlm) {
    const std::string size = fmt::format("{}x{}", config.te_rows, config.te_cols);
    const auto built = cosim::TeRtl::built_sizes();
    if (std::find(built.begin(), built.end(), size) == built.end()) {
      throw BadInput(fmt::format("--config {} needs a {} RTL Tensor Engine, which this build does not have (built: "
                                 "{}); use --te tlm, or build the large sizes with `make test-long`",
                                 flags.config, size, fmt::join(built, ", ")));
    }
  }
  const bool window = flags.wave_from != 0 || flags.wave_to != UINT64_MAX || !flags.wave_scope.empty();
  if (window && flags.wave.empty()) {
    throw BadInput("--wave-from, --wave-to and --wave-scope choose what --wave FILE.fst records: give --wave too");
  }
  if (flags.wave_from > flags.wave_to) {
    throw BadInput(fmt::format("--wave-from {} is after --wave-to {}", flags.wave_from, flags.wave_to));
  }
  if (!flags.wave.empty()) {
    if (*mode == cosim::TeMode::kTlm) {
      throw BadInput("--wave records the RTL Tensor Engine's signals: use it with --te rtl or --te lockstep");
    }
    if (std::filesystem::path(flags.wave).extension() != ".fst") {
      throw BadInput(fmt::format("--wave {}: waveforms are written as FST; give a file name ending in .fst",
                                 flags.wave));
    }
  }
  cosim::SimDeviceOptions o;
  o.te = *mode;
  o.wave_path = flags.wave;
  o.wave_from = flags.wave_from;
  o.wave_to = flags.wave_to;
  o.wave_scope = flags.wave_scope;
  if (!flags.timeline.empty()) {
    std::ofstream probe(flags.timeline, std::ios::app);
    if (!probe) throw BadInput(fmt::format("--timeline {}: cannot open for writing", flags.timeline));
    s.timeline = std::make_unique<TimelineRecorder>(config);
    s.timeline_path = flags.timeline;
    o.observer = s.timeline.get();
  }
  o.check_hazards = flags.check_hazards;
  o.check_uninit = flags.check_uninit;
  try {
    s.device = std::make_unique<cosim::SimDevice>(config, o);
  } catch (const cosim::TeRtlError& e) {
    if (flags.wave.empty()) throw BadInput(e.what());  // from TRNSIM_WAVE*: the message names the variable
    throw BadInput(fmt::format("--wave {}: {}", flags.wave, e.what()));
  }
  s.driver = std::make_unique<driver::Driver>(*s.device);
  print_progress(*s.driver, s.running);
  if (flags.watchdog_cycles >= 0) s.driver->set_watchdog(uint32_t(flags.watchdog_cycles));
  if (flags.sr_seed >= 0) s.driver->set_sr_seed(uint32_t(flags.sr_seed));
  return s;
}

void add_wave_window_flags(CLI::App& cmd, DeviceFlags& flags) {
  cmd.add_option("--wave-from", flags.wave_from,
                 "With --wave: first Tensor Engine cycle recorded (cycles since reset; default 0)")
      ->check(kNonNegative);
  cmd.add_option("--wave-to", flags.wave_to, "With --wave: last Tensor Engine cycle recorded (default: the end)")
      ->check(kNonNegative);
  cmd.add_option("--wave-scope", flags.wave_scope,
                 "With --wave: record only this hierarchy and below, e.g. trn_te.u_array.g_row[0] (comma-separated "
                 "list allowed)");
  if (CLI::Option* wave = cmd.get_option_no_throw("--wave")) {  // the window means nothing without a waveform
    for (const char* name : {"--wave-from", "--wave-to", "--wave-scope"}) cmd.get_option(name)->needs(wave);
  }
}

void add_trace_flags(CLI::App& cmd, DeviceFlags& flags) {
  cmd.add_option("--timeline", flags.timeline,
                 "Write a Chrome/Perfetto trace (JSON) of every instruction and DMA copy of core 0; open it in "
                 "ui.perfetto.dev");
  cmd.add_flag("--check-hazards", flags.check_hazards,
               "Stop (exit 2) when two engines touch the same SBUF/PSUM bytes, one writing, with no semaphore "
               "chain between them");
  cmd.add_flag("--check-uninit", flags.check_uninit,
               "Fill fresh SBUF/PSUM with NaN and stop (exit 2) at the first read of bytes no engine wrote");
}

void DeviceSession::write_timeline(const char* note) const {
  if (!timeline || timeline_written) return;
  timeline_written = true;
  try {
    timeline->write(timeline_path);
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
  fmt::print("  timeline          {} ({} instructions{}; open in ui.perfetto.dev)\n", timeline_path,
             timeline->instructions(), note);
  if (const std::string floor = timeline->floor_summary(); !floor.empty()) {
    fmt::print("  engine floor      {}\n", floor);
  }
}

void write_wave_layout(const std::string& wave, const driver::DeviceInfo& info) {
  if (wave.empty()) return;
  const std::string gtkw = std::filesystem::path(wave).replace_extension(".gtkw").string();
  cosim::write_te_gtkw(gtkw, wave, info.te_rows, info.te_cols);
  fmt::print("  waveform          {} (layout {}; open with: gtkwave {})\n", wave, gtkw, gtkw);
}

std::vector<driver::RunResult> wait_cores(const std::vector<driver::Driver*>& cores, uint64_t timeout_cycles) {
  std::vector<driver::RunResult> runs;
  std::vector<std::string> states;  // each core's, printed when one failed
  std::exception_ptr failure;
  for (driver::Driver* d : cores) {
    try {
      runs.push_back(d->wait(failure ? 0 : timeout_cycles));  // after a failure: its state now, the device not run on
      states.push_back(fmt::format("done, {} cycles", runs.back().cycles));
    } catch (const driver::DriverTimeout& e) {
      states.push_back(failure ? "still running: " + driver::DriverTimeout::queues_text(e.queues()) : "");
      if (!failure) failure = std::current_exception();
    } catch (const driver::DeviceFault& e) {
      states.push_back(failure ? std::string("stopped: ") + e.what() : "");
      if (!failure) failure = std::current_exception();
    }
  }
  if (!failure) return runs;
  if (cores.size() > 1) {
    for (size_t c = 0; c < cores.size(); ++c) {
      if (!states[c].empty()) fmt::print(stderr, "  core {}: {}\n", cores[c]->info().core, states[c]);
    }
  }
  std::rethrow_exception(failure);
}

int run_on_device(DeviceSession& session, const std::function<int()>& body,
                  const std::function<void(const std::string&)>& on_failure) {
  const auto failed = [&](const std::string& message) {
    if (on_failure) on_failure(message);
    return message;
  };
  try {
    const int rc = body();
    session.write_timeline();
    return rc;
  } catch (const driver::DeviceFault& e) {
    session.write_timeline(", up to the device error");
    const std::string& detail = e.detail();
    if (e.code() == regs::ERR_ENGINE_FAULT) {
      fmt::print("FAIL: {}\n", failed(fmt::format("{}{}{}", e.what(), detail.empty() ? "" : ": ", detail)));
      return kExitFail;
    }
    throw BadInput(
        failed(fmt::format("{}{}{}", e.what(), detail.empty() ? "" : " (", detail.empty() ? "" : detail + ")")));
  } catch (const driver::DriverTimeout& e) {
    session.write_timeline(", up to the timeout");
    throw BadInput(failed(e.what()));
  } catch (const wire::WireError& e) {  // the server died or broke the protocol mid-run
    throw BadInput(failed(fmt::format("--connect {}: {}", session.connect, e.what())));
  }
}

void add_watchdog_flag(CLI::App& cmd, DeviceFlags& flags) {
  cmd.add_option("--watchdog-cycles", flags.watchdog_cycles,
                 "Stop the device when for this many cycles no instruction retires and no DMA copy moves bytes "
                 "(0 = off; default: the device's 10000000)")
      ->check(CLI::Range(int64_t(0), int64_t(0xFFFFFFFF)));
}

void add_sr_seed_flag(CLI::App& cmd, DeviceFlags& flags) {
  cmd.add_option("--sr-seed", flags.sr_seed,
                 "SR_SEED: the seed of stochastically rounded casts (instructions with the sr flag; default: the "
                 "device's 0)")
      ->check(CLI::Range(int64_t(0), int64_t(0xFFFFFFFF)));
}

}  // namespace trnsim::tool
