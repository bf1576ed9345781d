#include "cosim/mpi/mpi_system.h"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include <fmt/core.h>

#include "cosim/device/sim_system.h"
#include "model/collective/collective_hub.h"
#include "model/collective/topology.h"
#include "spec/trn_regs.h"

namespace trnsim::cosim::mpi {

namespace mc = model::collective;

namespace {

// Tags of MPI_COMM_WORLD's messages: the exchange's sizes, then its bytes.
enum Tag : int { kTagSize = 1, kTagBytes };

constexpr uint64_t kChunk = uint64_t{1} << 30;  ///< the largest single MPI message (its count is an int)

Session* g_session = nullptr;

/// Waits for every request; after `timeout_s` of host time names the first peer still silent.
void wait_all(std::vector<MPI_Request>& reqs, const std::vector<int>& peers, double timeout_s, const char* what) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    int flag = 0;
    MPI_Testall(int(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
    if (flag) {
      reqs.clear();
      return;
    }
    if (spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      int silent = -1;
      for (size_t i = 0; i < reqs.size() && silent < 0; ++i) {
        int done = 0;
        if (reqs[i] != MPI_REQUEST_NULL) MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
        if (!done && reqs[i] != MPI_REQUEST_NULL) silent = peers[i];
      }
      throw std::runtime_error(fmt::format("{}: rank {} stayed silent for {:.0f} s (TRNSIM_MPI_TIMEOUT_S)", what,
                                           silent, timeout_s));
    }
  }
}

/// Posts `n` bytes at `p` to (or from) `peer` as chunks of at most kChunk.
void post(bool send, uint8_t* p, uint64_t n, int peer, int tag, std::vector<MPI_Request>* reqs,
          std::vector<int>* peers) {
  for (uint64_t off = 0; off < n; off += kChunk) {
    const int len = int(std::min(kChunk, n - off));
    reqs->emplace_back();
    peers->push_back(peer);
    if (send) {
      MPI_Isend(p + off, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs->back());
    } else {
      MPI_Irecv(p + off, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs->back());
    }
  }
}

uint64_t own_peak_rss() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return uint64_t(ru.ru_maxrss) * 1024;  // KiB on Linux
}

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

Session::Session(int* argc, char*** argv) {
  if (g_session) throw std::logic_error("mpi::Session: one per process");
  g_session = this;
  if (!launched_by_mpi()) return;
  MPI_Init(argc, argv);
  active_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
}

Session::~Session() {
  if (active_) MPI_Finalize();
  g_session = nullptr;
}

Session* Session::current() { return g_session; }

void Session::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_session && g_session->active_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

double timeout_from_env() {
  const char* v = std::getenv("TRNSIM_MPI_TIMEOUT_S");
  if (!v) return 600;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0)) {
    throw std::invalid_argument(fmt::format("TRNSIM_MPI_TIMEOUT_S={}: not a positive number of seconds", v));
  }
  return s;
}

Exchange::Exchange(double timeout_s) : timeout_s_(timeout_s) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::logic_error("mpi::Exchange: MPI is not initialised (mpi::Session)");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
}

std::vector<std::vector<uint8_t>> Exchange::all_gather(const std::vector<uint8_t>& mine) {
  return all_to_all(std::vector<std::vector<uint8_t>>(size_t(ranks_), mine));
}

std::vector<std::vector<uint8_t>> Exchange::all_to_all(std::vector<std::vector<uint8_t>> out) {
  if (out.size() != size_t(ranks_)) {
    throw std::invalid_argument(fmt::format("mpi::Exchange::all_to_all: {} buffers for {} ranks", out.size(),
                                            ranks_));
  }
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(ranks_));
  in[size_t(rank_)] = std::move(out[size_t(rank_)]);
  std::vector<uint64_t> sizes_out(static_cast<size_t>(ranks_)), sizes_in(static_cast<size_t>(ranks_));
  std::vector<MPI_Request> reqs;
  std::vector<int> peers;
  for (int q = 0; q < ranks_; ++q) {
    if (q == rank_) continue;
    sizes_out[size_t(q)] = out[size_t(q)].size();
    post(false, reinterpret_cast<uint8_t*>(&sizes_in[size_t(q)]), 8, q, kTagSize, &reqs, &peers);
    post(true, reinterpret_cast<uint8_t*>(&sizes_out[size_t(q)]), 8, q, kTagSize, &reqs, &peers);
  }
  wait_all(reqs, peers, timeout_s_, "rank exchange (sizes)");
  for (int q = 0; q < ranks_; ++q) {
    if (q == rank_) continue;
    in[size_t(q)].resize(sizes_in[size_t(q)]);
    post(false, in[size_t(q)].data(), sizes_in[size_t(q)], q, kTagBytes, &reqs, &peers);
    post(true, out[size_t(q)].data(), out[size_t(q)].size(), q, kTagBytes, &reqs, &peers);
  }
  wait_all(reqs, peers, timeout_s_, "rank exchange (data)");
  return in;
}

/// A chip of this rank as its host sees it: the SimSystem device, with waits that only read the line.
class DistributedSystem::LocalChip final : public driver::Device {
 public:
  explicit LocalChip(driver::Device& dev) : dev_(dev) {}
  uint32_t read_reg(uint32_t offset) override { return dev_.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t value) override { dev_.write_reg(offset, value); }
  void write_mem(uint64_t addr, const void* data, std::size_t bytes) override { dev_.write_mem(addr, data, bytes); }
  void read_mem(uint64_t addr, void* data, std::size_t bytes) override { dev_.read_mem(addr, data, bytes); }
  /// The system runs in DistributedSystem::wait_all (every rank together): here no time passes.
  bool wait_interrupt(uint64_t /*max_cycles*/) override {
    return (dev_.read_reg(regs::INT_STATUS) & dev_.read_reg(regs::INT_ENABLE)) != 0;
  }

 private:
  driver::Device& dev_;
};

DistributedSystem::DistributedSystem(const model::ChipConfig& config, const Session& session)
    : part_(mc::Topology::from_config(config).chips(), session.ranks(), session.rank()),
      exchange_(timeout_from_env()) {
  if (const char* v = std::getenv("TRNSIM_MPI_FAIL_RANK")) {
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || r < 0 || r >= part_.ranks()) {
      throw std::invalid_argument(fmt::format("TRNSIM_MPI_FAIL_RANK={}: not a rank of this job (0..{})", v,
                                              part_.ranks() - 1));
    }
    fail_rank_ = int(r);
  }
  system_ = std::make_unique<SimSystem>(config, mc::Topology::from_config(config), part_, exchange_);
  for (int c = part_.first_chip(part_.rank()); c < part_.end_chip(part_.rank()); ++c) {
    devices_.push_back(std::make_unique<LocalChip>(system_->device(c)));
  }
}

DistributedSystem::~DistributedSystem() = default;

std::vector<driver::Device*> DistributedSystem::devices() {
  std::vector<driver::Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

double DistributedSystem::window_ns() const { return system_->window().to_seconds() * 1e9; }

void DistributedSystem::fail(const std::string& what, int code) const {
  fmt::print(stderr, "trnsim: rank {} ({}): {}\n", part_.rank(), part_.chips_text(part_.rank()), what);
  Session::abort(code);
}

template <class Fn>
auto DistributedSystem::guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    fail(e.what(), 1);
  }
}

void DistributedSystem::wait_all(uint64_t max_cycles) {
  guarded([&] {
    if (part_.rank() == fail_rank_) {
      throw std::runtime_error(fmt::format("a failure injected by TRNSIM_MPI_FAIL_RANK={}", fail_rank_));
    }
    system_->run_windows(-1, max_cycles);
  });
}

std::vector<std::vector<uint8_t>> DistributedSystem::all_gather(const std::vector<uint8_t>& mine) {
  return guarded([&] { return exchange_.all_gather(mine); });
}

std::vector<uint64_t> DistributedSystem::peak_rss_bytes() {
  std::vector<uint8_t> mine(8);
  const uint64_t own = own_peak_rss();
  std::memcpy(mine.data(), &own, 8);
  std::vector<uint64_t> out;
  for (const std::vector<uint8_t>& b : all_gather(mine)) {
    uint64_t v = 0;
    if (b.size() == 8) std::memcpy(&v, b.data(), 8);
    out.push_back(v);
  }
  return out;
}

void DistributedSystem::set_progress(double seconds) {
  if (seconds <= 0) {
    system_->on_window({});
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(start);
  auto windows = std::make_shared<uint64_t>(0);
  system_->on_window([this, seconds, start, last, windows] {
    ++*windows;
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - *last).count() < seconds) return;
    *last = now;
    const size_t matched = system_->hub().completed().size();
    fmt::print(stderr, "trnsim: rank {} ({}): {:.1f} us simulated, {} window{}, {} collective{} matched, {:.1f} s\n",
               part_.rank(), part_.chips_text(part_.rank()), sc_core::sc_time_stamp().to_seconds() * 1e6, *windows,
               *windows == 1 ? "" : "s", matched, matched == 1 ? "" : "s",
               std::chrono::duration<double>(now - start).count());
  });
}

}  // namespace trnsim::cosim::mpi
