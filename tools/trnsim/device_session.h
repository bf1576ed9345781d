// What `trnsim run` and `trnsim matmul` share: choosing and opening the device (in process: --config, --te, --wave;
// or served by another process: --connect PATH), progress lines while it runs, and turning device errors into exit
// codes and one-line reasons. Everything after opening goes through driver::Driver, so a report is the same on every
// backend.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "firmware/driver/core_device.h"
#include "firmware/driver/device.h"
#include "firmware/driver/driver.h"
#include "tools/trnsim/timeline.h"

namespace trnsim::tool {

/// The device options every device command takes.
struct DeviceFlags {
  std::string config = "tiny";
  std::string te = "rtl";
  std::string wave;
  uint64_t wave_from = 0;          ///< --wave-from CYCLE: first TE cycle recorded
  uint64_t wave_to = UINT64_MAX;   ///< --wave-to CYCLE: last TE cycle recorded
  std::string wave_scope;          ///< --wave-scope PATH: TE hierarchy recorded (empty: all)
  uint64_t timeout_cycles = 2'000'000'000;
  /// --watchdog-cycles N: WATCHDOG_CYCLES (no instruction retired and no DMA copy moving for N cycles stops the
  /// device; 0 = off); -1: leave the device's value (10,000,000 after reset).
  int64_t watchdog_cycles = -1;
  /// --sr-seed S: SR_SEED, the seed of the casts of instructions with the sr flag (docs/numerics.md rule 9); -1:
  /// leave the device's value (0 after reset).
  int64_t sr_seed = -1;
  std::string timeline;        ///< --timeline FILE.json: Chrome/Perfetto trace of every instruction (empty: off)
  bool check_hazards = false;  ///< --check-hazards: stop with HAZARD on unordered SBUF/PSUM accesses
  bool check_uninit = false;   ///< --check-uninit: fresh SBUF/PSUM is NaN; stop with UNINIT_READ on reading it
  std::string connect;         ///< --connect PATH: the device `trnsim serve --socket PATH` serves (empty: in process)
  int cores = 1;               ///< --cores N: cores of the chip the command runs on (open_cores); 0: all of them
};

/// Adds --connect PATH to a device command.
void add_connect_flag(CLI::App& cmd, DeviceFlags& flags);

/// With --connect, the options that build the device belong to the server: BadInput naming the first one given
/// (--config, --te, --wave*, --timeline, --check-hazards, --check-uninit).
void check_connect_flags(const CLI::App& cmd, const DeviceFlags& flags);

/// Adds --timeline, --check-hazards and --check-uninit to a device command.
void add_trace_flags(CLI::App& cmd, DeviceFlags& flags);

/// --watchdog-cycles N (0 .. 2^32 - 1; 0 = off).
void add_watchdog_flag(CLI::App& cmd, DeviceFlags& flags);

/// --sr-seed S (0 .. 2^32 - 1): SR_SEED before the run.
void add_sr_seed_flag(CLI::App& cmd, DeviceFlags& flags);

/// Adds --wave-from, --wave-to and --wave-scope (the window and hierarchy of --wave) to a device command.
void add_wave_window_flags(CLI::App& cmd, DeviceFlags& flags);

/// --cores N (1 .. 8): the cores of the chip a command runs on, core 0 first. `every_core_default`: not given, the
/// command runs on every core of the chip (flags.cores = 0 until open_cores); else on core 0.
void add_cores_flag(CLI::App& cmd, DeviceFlags& flags, bool every_core_default = false);

/// An open device (in process, or a driver::RemoteDevice) and its driver.
struct DeviceSession {
  std::unique_ptr<TimelineRecorder> timeline;  ///< --timeline (declared before the device: it outlives it)
  std::string timeline_path;
  std::unique_ptr<driver::Device> device;
  /// After open_cores(N > 1): each core's view of the chip (docs/driver.md "Cores"), core 0's included.
  std::vector<std::unique_ptr<driver::CoreDevice>> views;
  std::unique_ptr<driver::Driver> driver;  ///< core 0's
  std::vector<std::unique_ptr<driver::Driver>> other_cores;  ///< after open_cores(N): cores 1 .. N-1
  std::string connect;  ///< the socket of a served device, empty in process
  /// What the progress lines name as running ("program 3 of 62 (qkv gemm)"); empty: "this program".
  std::shared_ptr<std::string> running = std::make_shared<std::string>();
  mutable bool timeline_written = false;

  /// What the device's registers say it is (config name, TE size and backend, clocks, ...).
  const driver::DeviceInfo& info() const { return driver->info(); }
  /// The drivers of the cores the command runs on: core 0's, then open_cores()'s others.
  std::vector<driver::Driver*> cores() const;

  /// Writes the --timeline file (once; later calls do nothing) and prints its line of the report. The engine report
  /// (engine_report.h) calls it, and run_on_device() does when the device stops with an error. BadInput when the
  /// file cannot be written.
  void write_timeline(const char* note = "") const;
};

/// With --wave (`wave` not empty): writes the GTKWave layout beside the FST (the same name, .gtkw;
/// cosim::write_te_gtkw for `info`'s array) and prints the report's waveform line naming both.
void write_wave_layout(const std::string& wave, const driver::DeviceInfo& info);

/// Checks the flags (BadInput naming the flag: unknown config, multi-chip config, unknown --te, RTL size not
/// built, --wave not .fst or with --te tlm; a --connect socket nobody serves) and opens the device, printing progress
/// lines to stderr while it runs.
DeviceSession open_device(const DeviceFlags& flags);

/// Makes the session drive cores 0 .. flags.cores - 1: with more than one, each core gets a driver over its own
/// CoreDevice view and HBM region (driver::chip_regions; core 0's driver is replaced), with the watchdog and SR
/// seed flags applied to every core. BadInput when the chip has fewer cores (CHIP_CORES).
/// flags.cores 0 is every core of the chip; `flags` is updated to the count opened.
void open_cores(DeviceSession& s, DeviceFlags& flags);

/// Waits for every core of `cores` to finish the programs started on them (Driver::wait, `timeout_cycles` for each).
/// When one fails, the cores after it are looked at without running the device further (Driver::wait(0)), every
/// other core's state is printed on stderr ("  core 1: done, 1234 cycles", "  core 1: still running: queue dma at
/// instruction 1 of 4, waiting", "  core 1: stopped: device error ..."), and the first failure is rethrown
/// (driver::DeviceFault, driver::DriverTimeout).
std::vector<driver::RunResult> wait_cores(const std::vector<driver::Driver*>& cores, uint64_t timeout_cycles);

/// Runs `body` and maps device failures to exit codes (BRIEF section 4): a lockstep mismatch or an engine fault
/// prints FAIL and returns 1; any other device fault or a timeout is a bad program: BadInput (exit 2) naming the
/// queue, instruction index, field and cause. `on_failure` (if set) gets that message first, for the JSON report.
int run_on_device(DeviceSession& session, const std::function<int()>& body,
                  const std::function<void(const std::string&)>& on_failure = {});

}  // namespace trnsim::tool
