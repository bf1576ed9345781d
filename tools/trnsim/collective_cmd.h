// The collective workloads of `trnsim run` (allreduce, allgather, reducescatter) on the multi-chip systems trn2-16
// and trn2-64, in this process or served by `trnsim serve` (one socket per chip): run through one driver per chip
// by the workload library (firmware/workloads/collectives.h), checked bit for bit against the golden host
// collectives there, reported with nccl-tests' algbw and busbw. run_cmd.cpp dispatches here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace trnsim::tool {

/// Options of one collective run (--workload, --config, --dtype, --seed and --report are `trnsim run`'s own).
struct CollectiveOptions {
  std::string workload;
  std::string config;
  std::string dtype;
  std::string bytes = "64M";  ///< --bytes: each chip's buffer, with an optional K/M/G suffix (x 1024^n)
  std::string algo = "ring";  ///< --algo ring|rhd
  std::string fabric = "message";  ///< --fabric message|tlm|rtl|lockstep (cosim/collective/noc_transports.h)
  uint64_t seed = 1;
  double ber = 0;            ///< --ber: bit errors on the router network's links (--fabric tlm|rtl|lockstep)
  double drop = 0;           ///< --drop: flits lost on its links
  uint64_t fault_seed = 1;   ///< --fault-seed
  std::string connect;  ///< --connect PATH: the system `trnsim serve --socket PATH` serves as PATH.0, PATH.1, ...
  double rank_progress_s = 0;  ///< --rank-progress SECONDS: under mpirun, every rank's progress on stderr (0: off)
};

/// A workload of the collective registry (firmware/workloads/collectives.h).
bool is_collective_workload(const std::string& name);

/// Adds --bytes, --algo, --fabric, the link faults (--ber, --drop, --fault-seed) and --rank-progress to `trnsim run`.
void add_collective_options(CLI::App& run, CollectiveOptions& o);

/// Parses a size: digits with an optional K, M or G (binary multiples, as nccl-tests' -b/-e) and an optional B or
/// iB ("64M", "1K", "4096", "2GiB"). Throws BadInput naming --bytes.
uint64_t parse_bytes(const std::string& text);

/// Runs the collective and prints the report; `write_report` gets the JSON figures (it writes --report if given).
/// Returns the exit code: 0 PASS, 1 FAIL (a mismatch); throws BadInput for bad options.
int run_collective_workload(const CollectiveOptions& o, const std::function<void(const nlohmann::json&)>& write_report);

}  // namespace trnsim::tool
