// A multi-chip system split over MPI ranks (docs/distributed.md): every rank elaborates the chips it owns
// (model::collective::Partition) in its own SystemC kernel; the ranks advance in windows of one hop latency and
// agree on the collectives at every window's end (SimSystem::run_windows, CollectiveHub::sync).
//
// Every rank has a host (the driver and the workload) for its own chips, as every instance of a multi-node system has
// its own host CPU: it fills, runs and checks them, and the hosts exchange what they found
// (workloads::HostGroup), so every rank holds the whole system's report and rank 0 prints it.
//
// Errors: every wait for another rank is bounded (TRNSIM_MPI_TIMEOUT_S seconds of host time, default 600); a rank
// whose simulation fails prints "trnsim: rank R (chips A..B): REASON" and ends the whole job (MPI_Abort), never a
// hang. TRNSIM_MPI_FAIL_RANK=R makes rank R's first run fail (the tests of that path).
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

/// This rank's part of the system of `config` (its chips, topology Topology::from_config) and the devices of its
/// chips, for this rank's host.
class DistributedSystem {
 public:
  /// Every rank constructs one. std::invalid_argument for more ranks than chips, a bad TRNSIM_MPI_* variable.
  DistributedSystem(const model::ChipConfig& config, const Session& session);
  ~DistributedSystem();
  DistributedSystem(const DistributedSystem&) = delete;
  DistributedSystem& operator=(const DistributedSystem&) = delete;

  const model::collective::Partition& partition() const { return part_; }
  int rank() const { return part_.rank(); }
  /// This rank's chips' devices, in chip order. Their wait_interrupt() only reads the line (no time passes): the
  /// system runs in wait_all().
  std::vector<driver::Device*> devices();
  /// Every rank together: runs the system until every chip's interrupt line is high or `max_cycles` TE cycles
  /// passed. A failure here ends the job (see above).
  void wait_all(uint64_t max_cycles);
  /// Every rank's bytes, indexed by rank (every rank together; bounded like every exchange).
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine);
  /// Every rank together: every rank's peak resident memory (getrusage), bytes, indexed by rank.
  std::vector<uint64_t> peak_rss_bytes();
  /// The window (the lookahead), ns.
  double window_ns() const;
  /// Every rank prints a progress line on stderr at most every `seconds` of host time while the system runs
  /// ("trnsim: rank 1 (chips 8..15): 184.5 us simulated, 123 windows, 1 collective matched, 12.0 s"); 0: none. A
  /// collective's data moves inside the window that matched it, so a long one shows once it is done.
  void set_progress(double seconds);
  /// Prints "trnsim: rank R (chips A..B): WHAT" on stderr and ends every rank of the job with `code`.
  [[noreturn]] void fail(const std::string& what, int code) const;

 private:
  class LocalChip;
  /// Runs `fn` (a part of the simulation); a failure prints the rank and its chips and ends the job.
  template <class Fn>
  auto guarded(Fn&& fn) -> decltype(fn());

  model::collective::Partition part_;
  Exchange exchange_;
  std::unique_ptr<SimSystem> system_;
  std::vector<std::unique_ptr<driver::Device>> devices_;  ///< this rank's chips
  int fail_rank_ = -1;  ///< TRNSIM_MPI_FAIL_RANK: this rank's first run fails (tests of the failure path)
};

}  // namespace trnsim::cosim::mpi
