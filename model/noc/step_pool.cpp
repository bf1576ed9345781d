#include "model/noc/step_pool.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace trnsim::model::noc {
namespace {

void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// How long a waiting thread spins before it sleeps (a worker) or yields (the caller): longer than the serial work
// between two phases of a cycle, far shorter than a scheduler tick.
constexpr std::chrono::microseconds kSpinTime{50};

// Spins until done() holds or kSpinTime has passed; true if done() holds.
template <class Done>
bool spin_until(Done done) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_pause();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() - start > kSpinTime) return done();
  }
}

}  // namespace

StepPool::StepPool(int threads) : threads_(threads), errors_(static_cast<size_t>(threads > 0 ? threads : 1)) {
  if (threads < 1 || threads > kMaxThreads) {
    throw std::invalid_argument("host threads " + std::to_string(threads) + " outside 1.." +
                                std::to_string(kMaxThreads));
  }
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker(t); });
}

StepPool::~StepPool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

std::pair<int, int> StepPool::range(int count, int threads, int t) {
  const int base = count / threads, extra = count % threads;
  const int begin = t * base + (t < extra ? t : extra);
  return {begin, begin + base + (t < extra ? 1 : 0)};
}

void StepPool::run(const std::function<void(int)>& job) {
  if (threads_ == 1) {
    job(0);
    return;
  }
  job_ = &job;
  for (std::exception_ptr& e : errors_) e = nullptr;
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  try {
    job(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  const auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  while (!spin_until(done)) std::this_thread::yield();
  job_ = nullptr;
  for (const std::exception_ptr& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

void StepPool::worker(int t) {
  uint64_t seen = 0;
  for (;;) {
    const auto fresh = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(fresh)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, fresh);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;  // set before the destructor's generation bump
    try {
      (*job_)(t);
    } catch (...) {
      errors_[static_cast<size_t>(t)] = std::current_exception();
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace trnsim::model::noc
