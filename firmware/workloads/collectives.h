// The collective workloads of the workload library (workloads.h has the single-chip ones): all-reduce, all-gather
// and reduce-scatter over a multi-chip system, one driver::Driver per chip (in process, or each chip served on its
// own socket). run_collective fills every chip's buffer, runs one cc program on every chip, reads the results back,
// compares them with the golden host collectives (firmware/golden/collective_golden.h, which plan their reduction
// order from the documented algorithm, never from the model) and returns a report whose every figure comes from the
// chips' registers (cycle counters, CC_*, NET_* and LINK counters; docs/registers.md "Collective counters").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::workloads {

/// One entry of the collective registry.
struct CollectiveEntry {
  std::string name;     ///< allreduce, allgather, reducescatter
  std::string summary;  ///< one line for --help
  isa::Opcode op = isa::Opcode::kAllReduce;
  std::string title;    ///< for reports: all-reduce, all-gather, reduce-scatter
};
const std::vector<CollectiveEntry>& collective_registry();
/// The entry named `name`, or null.
const CollectiveEntry* find_collective(std::string_view name);

struct CollectiveParams {
  isa::Opcode op = isa::Opcode::kAllReduce;
  isa::DataType dtype = isa::DataType::kFp32;  ///< fp32 or bf16
  isa::CcAlgorithm algorithm = isa::CcAlgorithm::kRing;
  uint64_t bytes = 0;  ///< each chip's buffer (all-gather: the gathered buffer), a multiple of the element size
  uint64_t seed = 1;   ///< chip r's element j is golden::collective_test_value(dtype, seed, r, j)
};

struct CollectiveMismatch {
  int chip = 0;
  uint64_t element = 0;
  uint32_t got = 0, want = 0;
};

/// What a collective run found. Cycles are TE cycles of the chips' clocks.
struct CollectiveReport {
  int chips = 0;
  std::vector<int> torus;                 ///< TORUS, chips per dimension
  std::vector<double> link_gbytes_per_s;  ///< LINK_BW_MBPS / 1000 per dimension
  double hop_latency_ns = 0;              ///< HOP_LATENCY_NS
  uint32_t te_clock_mhz = 0;
  uint64_t count = 0;           ///< elements per chip buffer
  uint64_t device_cycles = 0;   ///< the longest chip run, doorbell to halt (CYCLE)
  uint64_t collective_cycles = 0;  ///< the longest CC_CYCLES: the collective's own time
  uint32_t steps = 0;           ///< the longest CC_LAST_STEPS
  uint64_t messages = 0;        ///< CC_MESSAGES summed over the chips
  uint64_t link_bytes = 0;      ///< L_BYTES summed over every chip's links
  uint64_t busiest_link_cycles = 0;  ///< the largest L_BUSY of any link
  // The router network's figures (0 on the message-level link model): NET_* and L_FLITS.
  uint64_t net_cycles = 0;      ///< the longest NET_CYCLES
  uint64_t net_packets = 0, net_flits = 0, net_link_flits = 0;  ///< sums
  double net_mean_latency_cycles = 0;  ///< NET_LATENCY_SUM / NET_PACKETS over all chips
  uint32_t net_max_latency_cycles = 0;
  uint32_t net_replays = 0, net_crc_errors = 0;  ///< the largest NET_REPLAYS / NET_CRC_ERRORS (network-wide)
  std::string failed;           ///< a chip stopped: "chip 3: device error ..." (then nothing was compared)
  uint64_t checked = 0, mismatches = 0;
  std::vector<CollectiveMismatch> first;  ///< the first few mismatches (at most 5)
  bool pass = false;
  double fill_s = 0, run_s = 0, golden_s = 0, compare_s = 0;  ///< host seconds of the phases
};

/// The hosts of a system split over processes (docs/distributed.md): one per rank, each driving its own chips, as
/// each instance of a multi-node system has its own host CPU. What run_collective needs of the others: an all-gather
/// and the system's wait. Every rank makes the same calls in the same order.
class HostGroup {
 public:
  virtual ~HostGroup() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  /// Every rank's bytes, indexed by rank (ranks own consecutive chips in rank order).
  virtual std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) = 0;
  /// Runs the whole system until every chip's interrupt line is high or `timeout_cycles` TE cycles passed; the
  /// drivers' own waits then only read the lines (no time passes in them).
  virtual void wait_all(uint64_t timeout_cycles) = 0;
};

/// Runs `p` on `chips` (chip r's driver at index r, every one reset and idle): frees their allocations, writes
/// the inputs at the same HBM address of every chip, clears the counters, runs, reads back and compares. The
/// system is what chip 0's registers say (TORUS, LINK_BW_MBPS). Throws std::invalid_argument for parameters the
/// system cannot run (a chip list that is not the system's chips in CHIP_ID order, bytes not a multiple of the
/// element size, a buffer that does not fit HBM, an opcode that is not a collective, a dtype other than fp32/bf16,
/// rhd on a chip count that is not a power of two) and the drivers' errors (AddressError, ...) as they come; a
/// chip that faults is a report with `failed` set.
/// With `group`, `chips` are this rank's chips only (consecutive CHIP_IDs; the ranks' together are the system's):
/// each rank fills, runs and checks its own chips, and every rank returns the whole system's report, the same as one
/// host with every chip would (the host phases' seconds are this rank's).
CollectiveReport run_collective(const std::vector<driver::Driver*>& chips, const CollectiveParams& p,
                                uint64_t timeout_cycles, HostGroup* group = nullptr);

}  // namespace trnsim::workloads
