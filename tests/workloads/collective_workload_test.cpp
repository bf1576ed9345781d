// The collective workloads of the library (firmware/workloads/collectives.h) on trn2-16's 4x4 torus: in this
// process (cosim::SimSystem) and served by `trnsim serve --config trn2-16` in a child process (one socket per
// chip). Results are checked by run_collective against the golden host collectives; here the reports of the two
// backends must agree figure for figure, and the counters must add up to what the algorithms send by their
// definitions (not to what the model says).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cosim/device/sim_system.h"
#include "firmware/driver/driver.h"
#include "firmware/driver/remote_device.h"
#include "firmware/workloads/collectives.h"
#include "model/config/chip_config.h"
#include "tests/support/child_process.h"

namespace trnsim::test {
namespace {

using workloads::CollectiveParams;
using workloads::CollectiveReport;

constexpr uint64_t kTimeout = 1'000'000'000;
constexpr int kChips = 16;

/// Drivers over `devices`, and the list run_collective takes.
struct Chips {
  std::vector<std::unique_ptr<driver::Driver>> owned;
  std::vector<driver::Driver*> list;
  explicit Chips(const std::vector<driver::Device*>& devices) {
    for (driver::Device* d : devices) {
      owned.push_back(std::make_unique<driver::Driver>(*d));
      list.push_back(owned.back().get());
    }
  }
};

/// The in-process system (one per process: SystemC elaborates once).
Chips& in_process() {
  static const std::unique_ptr<cosim::SimSystem> sys =
      std::make_unique<cosim::SimSystem>(model::chip_config("trn2-16"));
  static Chips chips([] {
    std::vector<driver::Device*> d;
    for (int r = 0; r < sys->chips(); ++r) d.push_back(&sys->device(r));
    return d;
  }());
  return chips;
}

/// `trnsim serve --config trn2-16` and a client connected to each chip's socket.
class Served {
 public:
  Served() {
    char tmpl[] = "/tmp/trnsim-cwl-XXXXXX";  // short enough for socket paths
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    server_ = std::make_unique<ServeProcess>(TRNSIM_BIN, dir_ + "/sys", "--quiet --config trn2-16",
                                             dir_ + "/serve.out", dir_ + "/serve.err");
    std::vector<driver::Device*> d;
    for (int r = 0; r < kChips; ++r) {
      remotes_.push_back(std::make_unique<driver::RemoteDevice>(dir_ + "/sys." + std::to_string(r)));
      d.push_back(remotes_.back().get());
    }
    chips_ = std::make_unique<Chips>(d);
  }
  ~Served() {
    chips_.reset();
    remotes_.clear();
    server_.reset();  // killed
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  Chips& chips() { return *chips_; }

 private:
  std::string dir_;
  std::unique_ptr<ServeProcess> server_;
  std::vector<std::unique_ptr<driver::RemoteDevice>> remotes_;
  std::unique_ptr<Chips> chips_;
};

Served& served() {
  static Served s;
  return s;
}

CollectiveParams params(isa::Opcode op, isa::DataType t, isa::CcAlgorithm a, uint64_t bytes) {
  CollectiveParams p;
  p.op = op;
  p.dtype = t;
  p.algorithm = a;
  p.bytes = bytes;
  p.seed = 5;
  return p;
}

void expect_same_figures(const CollectiveReport& a, const CollectiveReport& b) {
  EXPECT_EQ(a.device_cycles, b.device_cycles);
  EXPECT_EQ(a.collective_cycles, b.collective_cycles);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.link_bytes, b.link_bytes);
  EXPECT_EQ(a.busiest_link_cycles, b.busiest_link_cycles);
  EXPECT_EQ(a.checked, b.checked);
  EXPECT_EQ(a.torus, b.torus);
  EXPECT_EQ(a.link_gbytes_per_s, b.link_gbytes_per_s);
}

TEST(CollectiveWorkloads, TheRegistryNamesTheThreeCollectives) {
  ASSERT_EQ(workloads::collective_registry().size(), 3u);
  EXPECT_EQ(workloads::find_collective("allreduce")->op, isa::Opcode::kAllReduce);
  EXPECT_EQ(workloads::find_collective("allgather")->op, isa::Opcode::kAllGather);
  EXPECT_EQ(workloads::find_collective("reducescatter")->op, isa::Opcode::kReduceScatter);
  EXPECT_EQ(workloads::find_collective("gemm"), nullptr);
}

TEST(CollectiveWorkloads, RingAllReduceSendsTwiceNMinusOneOverNOfTheBufferPerChip) {
  // A bandwidth-optimal all-reduce sends 2 (n - 1) / n of the buffer from every chip (Patarasuk and Yuan, "Bandwidth
  // optimal all-reduce algorithms for clusters of workstations", JPDC 2009); the ring's messages go to torus
  // neighbours, one link each, so the links carry exactly what the chips sent.
  const uint64_t bytes = 1 << 20;
  const CollectiveReport r = workloads::run_collective(
      in_process().list, params(isa::Opcode::kAllReduce, isa::DataType::kBf16, isa::CcAlgorithm::kRing, bytes),
      kTimeout);
  ASSERT_TRUE(r.failed.empty()) << r.failed;
  EXPECT_TRUE(r.pass) << r.mismatches << " mismatches";
  EXPECT_EQ(r.checked, uint64_t(kChips) * bytes / 2);
  EXPECT_EQ(r.link_bytes, uint64_t(2 * (kChips - 1)) * bytes);
  EXPECT_EQ(r.torus, (std::vector<int>{4, 4}));
  EXPECT_GT(r.collective_cycles, 0u);
  EXPECT_LE(r.collective_cycles, r.device_cycles);
  EXPECT_EQ(r.net_cycles + r.net_packets, 0u);  // the message-level link model has no router
}

TEST(CollectiveWorkloads, ServedSystemGivesTheSameReportAsInProcess) {
  const std::vector<CollectiveParams> cases = {
      params(isa::Opcode::kAllReduce, isa::DataType::kBf16, isa::CcAlgorithm::kRing, 256 << 10),
      params(isa::Opcode::kReduceScatter, isa::DataType::kFp32, isa::CcAlgorithm::kRhd, 64 << 10),
      params(isa::Opcode::kAllGather, isa::DataType::kFp32, isa::CcAlgorithm::kRing, 96 << 10)};
  for (const CollectiveParams& p : cases) {
    SCOPED_TRACE(std::string(*isa::opcode_name(p.op)));
    const CollectiveReport here = workloads::run_collective(in_process().list, p, kTimeout);
    const CollectiveReport there = workloads::run_collective(served().chips().list, p, kTimeout);
    ASSERT_TRUE(here.failed.empty() && there.failed.empty()) << here.failed << there.failed;
    EXPECT_TRUE(here.pass);
    EXPECT_TRUE(there.pass);
    expect_same_figures(here, there);
  }
}

TEST(CollectiveWorkloads, BadParametersAreRefusedBeforeAnythingRuns) {
  std::vector<driver::Driver*> shuffled = in_process().list;
  std::swap(shuffled[1], shuffled[2]);
  const CollectiveParams ok = params(isa::Opcode::kAllReduce, isa::DataType::kFp32, isa::CcAlgorithm::kRing, 4096);
  EXPECT_THROW(workloads::run_collective(shuffled, ok, kTimeout), std::invalid_argument);
  EXPECT_THROW(workloads::run_collective({in_process().list[0]}, ok, kTimeout), std::invalid_argument);
  CollectiveParams odd = ok;
  odd.bytes = 4098;  // not whole fp32 elements
  EXPECT_THROW(workloads::run_collective(in_process().list, odd, kTimeout), std::invalid_argument);
  CollectiveParams fp16 = ok;
  fp16.dtype = isa::DataType::kFp16;
  EXPECT_THROW(workloads::run_collective(in_process().list, fp16, kTimeout), std::invalid_argument);
  CollectiveParams huge = ok;
  huge.bytes = in_process().list[0]->info().hbm_bytes;  // no room left for the program
  EXPECT_THROW(workloads::run_collective(in_process().list, huge, kTimeout), std::invalid_argument);
  CollectiveParams gemm = ok;
  gemm.op = isa::Opcode::kMultiplyMoving;
  EXPECT_THROW(workloads::run_collective(in_process().list, gemm, kTimeout), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::test
