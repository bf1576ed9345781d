// What `trnsim run` and `trnsim matmul` share: choosing and opening the simulated device (--config, --te, --wave),
// progress lines while it runs, and turning device errors into exit codes and one-line reasons.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cosim/device/sim_device.h"
#include "firmware/driver/driver.h"
#include "model/config/chip_config.h"

namespace trnsim::tool {

/// The device options every device command takes.
struct DeviceFlags {
  std::string config = "tiny";
  std::string te = "rtl";
  std::string wave;
  uint64_t timeout_cycles = 2'000'000'000;
};

/// An open in-process device and its driver.
struct DeviceSession {
  model::ChipConfig config;
  std::unique_ptr<cosim::SimDevice> device;
  std::unique_ptr<driver::Driver> driver;
};

/// Checks the flags (BadInput naming the flag: unknown config, multi-chip config, unknown --te, RTL size not
/// built, --wave not .fst or with --te tlm) and opens the device, printing progress lines to stderr while it runs.
DeviceSession open_device(const DeviceFlags& flags);

/// Runs `body` and maps device failures to exit codes (BRIEF section 4): a lockstep mismatch or an engine fault
/// prints FAIL and returns 1; any other device fault or a timeout is a bad program: BadInput (exit 2) naming the
/// queue, instruction index, field and cause.
int run_on_device(DeviceSession& session, const std::function<int()>& body);

}  // namespace trnsim::tool
