// `trnsim run --workload NAME` for the workload library's workloads (firmware/workloads/workloads.h): reads the
// --inputs files, runs workloads::run_and_check on the device of the session and prints its report. The collective
// workloads are collective_cmd.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "firmware/workloads/workloads.h"
#include "tools/trnsim/device_session.h"

namespace trnsim::tool {

/// Options of one workload run.
struct WorkloadOptions {
  std::string name;
  DeviceFlags device;
  uint64_t seed = 1;
  std::string inputs;   ///< directory of NAME.npy inputs (missing ones are generated from the seed); empty: none
  std::string outputs;  ///< directory the outputs and named intermediates are written to as NAME.npy; empty: none
  workloads::Params params;
};

/// How the caller reports: print the common figures (cycles, MACs, utilization, wall time) into the text report and
/// the JSON object, write the JSON report (if asked for), and record why a run stopped without its figures (a device
/// fault or timeout: the message run_on_device reports).
struct ReportHooks {
  std::function<void(const DeviceSession&, uint64_t cycles, uint64_t macs, double wall, nlohmann::json&)> figures;
  std::function<void(const nlohmann::json&)> write;
  std::function<void(const std::string&)> fail;
};

/// Runs the registry's workload `o.name` and prints its report, ending with PASS or FAIL; returns the exit code.
/// BadInput for a shape the workload cannot run, an --inputs file of the wrong shape, tensors that do not fit.
int run_workload(const WorkloadOptions& o, const ReportHooks& hooks);

}  // namespace trnsim::tool
