// The composite workloads of `trnsim run` (softmax, layernorm, rmsnorm, mlp, attention, transformer-block): their
// tensors, the programs they launch one after another through the driver, and their golden check. run_cmd.cpp
// dispatches here; the GEMM workloads (gemm, gpt2-mlp-up) stay in run_cmd.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/trnsim/device_session.h"

namespace trnsim::tool {

/// Options of one composite workload run.
struct WorkloadOptions {
  std::string name;
  DeviceFlags device;
  uint64_t seed = 1;
  std::string inputs;   ///< directory of NAME.npy inputs (missing ones are generated from the seed); empty: none
  std::string outputs;  ///< directory the outputs and named intermediates are written to as NAME.npy; empty: none
  int seq = 128, d_model = 768, heads = 12, d_ff = 3072;  ///< GPT-2 small, 128 tokens
  bool dma_transpose = false;  ///< transposes by strided DMA copies instead of the TE (identity matmul)
};

/// How the caller reports: print the common figures (cycles, MACs, utilization, wall time) into the text report and
/// the JSON object, and write the JSON report (if asked for).
struct ReportHooks {
  std::function<void(const DeviceSession&, uint64_t cycles, uint64_t macs, double wall, nlohmann::json&)> figures;
  std::function<void(const nlohmann::json&)> write;
};

/// One entry of the workload table: name, one line for --help, and the run.
struct WorkloadEntry {
  std::string name;
  std::string summary;
  std::function<int(const WorkloadOptions&, const ReportHooks&)> run;
};

/// The composite workloads, in --help order.
const std::vector<WorkloadEntry>& composite_workloads();

}  // namespace trnsim::tool
