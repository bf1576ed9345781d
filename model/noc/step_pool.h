// A fixed pool of host threads for work that is split the same way every simulated cycle (`trnsim noc --threads`).
//
// The routers of a network are independent within a phase of a cycle: each reads only its own inputs, set before
// the phase, and writes only its own state. A network splits them into `threads()` contiguous ranges and calls
// run() once per phase; run() returns when every range is done, so the serial code between phases (the links,
// traffic, checks) sees every router's result. Thread 0 is the caller's thread, so `StepPool(1)` runs everything
// inline, with no worker and no synchronisation.
//
// Waiting: a worker spins (with the CPU's pause hint) for about 50 us after a job, then sleeps on a condition
// variable until the next run() or the destructor wakes it; so a network that is not stepped costs no CPU. run()
// waits for the workers' current job only, which is bounded by that job's work (one phase of one cycle).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace trnsim::model::noc {

class StepPool {
 public:
  /// The most threads a pool takes: far above any host this runs on, and it keeps a typo from starting thousands.
  static constexpr int kMaxThreads = 256;

  /// `threads` in 1..kMaxThreads (std::invalid_argument naming the value otherwise); threads - 1 workers start.
  explicit StepPool(int threads);
  /// Stops and joins the workers.
  ~StepPool();
  StepPool(const StepPool&) = delete;
  StepPool& operator=(const StepPool&) = delete;

  int threads() const { return threads_; }

  /// Calls job(t) for every t in 0..threads()-1: t = 0 on the calling thread, the others on the workers, and
  /// returns when all have returned. If any threw, rethrows the exception of the lowest t (after all returned).
  /// Not reentrant: job must not call run().
  void run(const std::function<void(int)>& job);

  /// The part [begin, end) of `count` items that thread t of `threads` takes: contiguous ranges whose sizes differ
  /// by at most one, the larger ones first.
  static std::pair<int, int> range(int count, int threads, int t);

 private:
  void worker(int t);

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};  // bumped (under mutex_) by every run() and by the destructor
  std::atomic<int> pending_{0};           // workers still on the current job
  std::atomic<bool> stop_{false};         // set by the destructor
  const std::function<void(int)>* job_ = nullptr;
  std::vector<std::exception_ptr> errors_;  // per thread, for the current job
};

}  // namespace trnsim::model::noc
