// A multi-chip system split over MPI ranks (docs/distributed.md): every rank elaborates the chips it owns
// (model::collective::Partition) in its own SystemC kernel; the ranks advance in windows of one hop latency and
// agree on the collectives at every window's end (SimSystem::run_windows, CollectiveHub::sync).
//
// The host (the driver and the workload) runs on rank 0 only. Rank 0 sees one driver::Device per chip: its own chips
// directly, the others' through the owning rank (registers and memory as request and answer; a wait is a run of
// every rank). The other ranks serve() those requests until rank 0 is done. So a report is the report of one process.
//
// Errors: every wait for another rank is bounded (TRNSIM_MPI_TIMEOUT_S seconds of host time, default 600); a rank
// whose simulation fails prints "trnsim: rank R (chips A..B): REASON" and ends the whole job (MPI_Abort), never a
// hang. A register or memory access out of range on another rank's chip is std::out_of_range on rank 0, as in one
// process. TRNSIM_MPI_FAIL_RANK=R makes rank R's first run fail (the tests of that path).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "firmware/driver/device.h"
#include "model/collective/partition.h"
#include "model/config/chip_config.h"

namespace trnsim::cosim {
class SimSystem;
}

namespace trnsim::cosim::mpi {

/// True when this process was started by mpirun / mpiexec (OpenMPI, MPICH) or srun (PMI / PMIx environment).
bool launched_by_mpi();

/// MPI_Init on construction (when launched_by_mpi(); otherwise a session of one rank without MPI), MPI_Finalize on
/// destruction. One per process.
class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool active() const { return active_; }  ///< MPI was initialised
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  /// Ends every rank of the job now with `code` (MPI_Abort); exits when MPI is not active.
  [[noreturn]] static void abort(int code);
  /// The session of this process (null before one is made).
  static Session* current();

 private:
  bool active_ = false;
  int rank_ = 0, ranks_ = 1;
};

/// The ranks' exchange over MPI_COMM_WORLD: nonblocking point-to-point messages (chunks of at most 1 GiB), each
/// wait bounded by `timeout_s` of host time (std::runtime_error naming the rank that stayed silent).
class Exchange final : public model::collective::RankExchange {
 public:
  explicit Exchange(double timeout_s);
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) override;
  std::vector<std::vector<uint8_t>> all_to_all(std::vector<std::vector<uint8_t>> out) override;
  double timeout_s() const { return timeout_s_; }

 private:
  int rank_ = 0, ranks_ = 1;
  double timeout_s_;
};

/// TRNSIM_MPI_TIMEOUT_S (seconds, > 0), default 600. std::invalid_argument naming the variable for a bad value.
double timeout_from_env();

/// This rank's part of the system of `config` (its chips, topology Topology::from_config) and, on rank 0, the host's
/// devices of every chip.
class DistributedSystem {
 public:
  /// Collective over all ranks (every rank constructs one). std::invalid_argument for more ranks than chips.
  DistributedSystem(const model::ChipConfig& config, const Session& session);
  /// Rank 0: tells every other rank to leave serve().
  ~DistributedSystem();
  DistributedSystem(const DistributedSystem&) = delete;
  DistributedSystem& operator=(const DistributedSystem&) = delete;

  const model::collective::Partition& partition() const { return part_; }
  int rank() const { return part_.rank(); }
  /// Rank 0: chip r's device (local or through its rank). Other ranks: std::logic_error.
  driver::Device& device(int chip);
  /// Other ranks: answers rank 0's requests until it is done. A failure here ends the job (see above).
  void serve();
  /// Rank 0: every rank's peak resident memory (getrusage), bytes, indexed by rank.
  std::vector<uint64_t> peak_rss_bytes();
  /// The window (the lookahead), ns.
  double window_ns() const;
  /// Every rank prints a progress line on stderr at most every `seconds` of host time while the system runs
  /// ("trnsim: rank 1 (chips 8..15): 184.5 us simulated, 123 windows, 1 collective matched, 12.0 s"); 0: none. A
  /// collective's data moves inside the window that matched it, so a long one shows once it is done.
  void set_progress(double seconds);

 private:
  class RemoteChip;
  class LocalChip;
  struct Answer;
  /// Rank 0: one request to `rank` about `chip` (Op in the .cpp); `data` is written or read memory.
  Answer request(int rank, int chip, uint32_t op, uint64_t a, uint64_t b, void* data = nullptr);
  friend class RemoteChip;
  friend class LocalChip;
  /// Rank 0: every rank runs its chips until chip `chip`'s (-1: every chip's) line is high or the cycles passed.
  bool run(int chip, uint64_t max_cycles);
  /// This rank's part of a run (every rank): SimSystem::run_windows.
  bool run_windows(int chip, uint64_t max_cycles);
  /// Runs `fn` (a part of the simulation); a failure prints the rank and its chips and ends the job.
  template <class Fn>
  auto guarded(Fn&& fn) -> decltype(fn());

  model::collective::Partition part_;
  Exchange exchange_;
  std::unique_ptr<SimSystem> system_;
  std::vector<std::unique_ptr<driver::Device>> devices_;  ///< rank 0: per chip
  int fail_rank_ = -1;  ///< TRNSIM_MPI_FAIL_RANK: this rank's first run fails (tests of the failure path)
};

}  // namespace trnsim::cosim::mpi
