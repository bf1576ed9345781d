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

namespace trnsim::cosim::mpi {

namespace mc = model::collective;

namespace {

// Tags of MPI_COMM_WORLD's messages: rank 0's requests and their answers, and the exchange (sizes, then bytes).
enum Tag : int { kTagCommand = 1, kTagAnswer, kTagData, kTagSize, kTagBytes };

enum class Op : uint32_t { kReadReg, kWriteReg, kWriteMem, kReadMem, kRun, kPeakRss, kExit };

/// A request of rank 0 to the rank of `chip`.
struct Command {
  Op op = Op::kExit;
  int32_t chip = -1;
  uint64_t a = 0, b = 0;  ///< offset / address / max cycles; value / bytes
};


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

/// One message (or a chunked buffer) to or from one peer, bounded.
void transfer(bool send, void* p, uint64_t n, int peer, int tag, double timeout_s, const char* what) {
  std::vector<MPI_Request> reqs;
  std::vector<int> peers;
  post(send, static_cast<uint8_t*>(p), n, peer, tag, &reqs, &peers);
  wait_all(reqs, peers, timeout_s, what);
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

/// An answer: status 0 OK, 1 std::out_of_range, 2 another error; then `text_bytes` of text, then the read data.
struct DistributedSystem::Answer {
  uint32_t status = 0;
  uint32_t text_bytes = 0;
  uint64_t value = 0;
};

/// Rank 0's view of a chip of rank 0: its SimSystem device, with waits that run every rank.
class DistributedSystem::LocalChip final : public driver::Device {
 public:
  LocalChip(DistributedSystem& s, int chip) : s_(s), dev_(s.system_->device(chip)), chip_(chip) {}
  uint32_t read_reg(uint32_t offset) override { return dev_.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t value) override { dev_.write_reg(offset, value); }
  void write_mem(uint64_t addr, const void* data, std::size_t bytes) override { dev_.write_mem(addr, data, bytes); }
  void read_mem(uint64_t addr, void* data, std::size_t bytes) override { dev_.read_mem(addr, data, bytes); }
  bool wait_interrupt(uint64_t max_cycles) override { return s_.run(chip_, max_cycles); }

 private:
  DistributedSystem& s_;
  driver::Device& dev_;
  int chip_;
};

/// Rank 0's view of another rank's chip: every access a request to that rank.
class DistributedSystem::RemoteChip final : public driver::Device {
 public:
  RemoteChip(DistributedSystem& s, int chip) : s_(s), chip_(chip), owner_(s.part_.owner(chip)) {}
  uint32_t read_reg(uint32_t offset) override { return uint32_t(call(Op::kReadReg, offset, 0).value); }
  void write_reg(uint32_t offset, uint32_t value) override { call(Op::kWriteReg, offset, value); }
  void write_mem(uint64_t addr, const void* data, std::size_t bytes) override {
    call(Op::kWriteMem, addr, bytes, const_cast<void*>(data));
  }
  void read_mem(uint64_t addr, void* data, std::size_t bytes) override { call(Op::kReadMem, addr, bytes, data); }
  bool wait_interrupt(uint64_t max_cycles) override { return s_.run(chip_, max_cycles); }

 private:
  Answer call(Op op, uint64_t a, uint64_t b, void* data = nullptr) {
    return s_.request(owner_, chip_, uint32_t(op), a, b, data);
  }

  DistributedSystem& s_;
  int chip_, owner_;
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
  if (part_.rank() != 0) return;
  for (int c = 0; c < part_.chips(); ++c) {
    if (part_.local(c)) {
      devices_.push_back(std::make_unique<LocalChip>(*this, c));
    } else {
      devices_.push_back(std::make_unique<RemoteChip>(*this, c));
    }
  }
}

DistributedSystem::~DistributedSystem() {
  if (part_.rank() != 0) return;
  try {
    for (int q = 1; q < part_.ranks(); ++q) {
      Command c{Op::kExit, -1, 0, 0};
      transfer(true, &c, sizeof c, q, kTagCommand, exchange_.timeout_s(), "the end of the run");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "trnsim: rank 0: {}\n", e.what());
    Session::abort(1);
  }
}

driver::Device& DistributedSystem::device(int chip) {
  if (part_.rank() != 0) throw std::logic_error("DistributedSystem::device: the host is rank 0");
  return *devices_.at(size_t(chip));
}

double DistributedSystem::window_ns() const { return system_->window().to_seconds() * 1e9; }

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

template <class Fn>
auto DistributedSystem::guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    fmt::print(stderr, "trnsim: rank {} ({}): {}\n", part_.rank(), part_.chips_text(part_.rank()), e.what());
    Session::abort(1);
  }
}

bool DistributedSystem::run(int chip, uint64_t max_cycles) {
  return guarded([&] {
    for (int q = 1; q < part_.ranks(); ++q) {
      Command c{Op::kRun, chip, max_cycles, 0};
      transfer(true, &c, sizeof c, q, kTagCommand, exchange_.timeout_s(), "a run request");
    }
    return run_windows(chip, max_cycles);
  });
}

bool DistributedSystem::run_windows(int chip, uint64_t max_cycles) {
  if (part_.rank() == fail_rank_) {
    throw std::runtime_error(fmt::format("a failure injected by TRNSIM_MPI_FAIL_RANK={}", fail_rank_));
  }
  return system_->run_windows(chip, max_cycles);
}

DistributedSystem::Answer DistributedSystem::request(int rank, int chip, uint32_t op, uint64_t a, uint64_t b,
                                                     void* data) {
  const double t = exchange_.timeout_s();
  Command c{Op(op), chip, a, b};
  transfer(true, &c, sizeof c, rank, kTagCommand, t, "a request to another rank");
  if (c.op == Op::kWriteMem) transfer(true, data, b, rank, kTagData, t, "memory to another rank");
  Answer ans;
  transfer(false, &ans, sizeof ans, rank, kTagAnswer, t, "an answer of another rank");
  std::string text(ans.text_bytes, '\0');
  if (ans.text_bytes) transfer(false, text.data(), text.size(), rank, kTagAnswer, t, "an answer's text");
  if (ans.status == 1) throw std::out_of_range(text);
  if (ans.status != 0) throw std::runtime_error(fmt::format("rank {} (chip {}): {}", rank, chip, text));
  if (c.op == Op::kReadMem) transfer(false, data, b, rank, kTagData, t, "memory from another rank");
  return ans;
}

std::vector<uint64_t> DistributedSystem::peak_rss_bytes() {
  std::vector<uint64_t> out{own_peak_rss()};
  for (int q = 1; q < part_.ranks(); ++q) out.push_back(request(q, -1, uint32_t(Op::kPeakRss), 0, 0).value);
  return out;
}

void DistributedSystem::serve() {
  if (part_.rank() == 0) throw std::logic_error("DistributedSystem::serve: rank 0 is the host");
  const double t = exchange_.timeout_s();
  guarded([&] {
    for (;;) {
      Command c;
      transfer(false, &c, sizeof c, 0, kTagCommand, t, "waiting for rank 0's next request");
      if (c.op == Op::kExit) return;
      if (c.op == Op::kRun) {
        run_windows(c.chip, c.a);
        continue;
      }
      Answer ans;
      std::string text;
      std::vector<uint8_t> data;
      if (c.op == Op::kWriteMem) {
        data.resize(c.b);
        transfer(false, data.data(), c.b, 0, kTagData, t, "memory from rank 0");
      }
      try {
        if (c.op == Op::kPeakRss) {
          ans.value = own_peak_rss();
        } else {
          driver::Device& d = system_->device(c.chip);
          switch (c.op) {
            case Op::kReadReg: ans.value = d.read_reg(uint32_t(c.a)); break;
            case Op::kWriteReg: d.write_reg(uint32_t(c.a), uint32_t(c.b)); break;
            case Op::kWriteMem: d.write_mem(c.a, data.data(), data.size()); break;
            case Op::kReadMem:
              data.resize(c.b);
              d.read_mem(c.a, data.data(), data.size());
              break;
            default: throw std::runtime_error(fmt::format("unknown request {}", uint32_t(c.op)));
          }
        }
      } catch (const std::out_of_range& e) {
        ans.status = 1;
        text = e.what();
      } catch (const std::exception& e) {
        ans.status = 2;
        text = e.what();
      }
      ans.text_bytes = uint32_t(text.size());
      transfer(true, &ans, sizeof ans, 0, kTagAnswer, t, "an answer to rank 0");
      if (!text.empty()) transfer(true, text.data(), text.size(), 0, kTagAnswer, t, "an answer's text");
      if (c.op == Op::kReadMem && ans.status == 0) transfer(true, data.data(), data.size(), 0, kTagData, t, "memory");
    }
  });
}

}  // namespace trnsim::cosim::mpi
