// The collective engine through instructions (label collectives): a simulated system of TRNSIM_TEST_CHIPS tiny
// chips (cosim/device/sim_system.h), one driver per chip loading cc programs (firmware/kernels/collective_kernel.h)
// and data through the registers. Every result is compared with the golden host collectives
// (firmware/golden/collective_golden.h), never with the model; every fault names its code, queue cc, instruction
// index and field, and never hangs.
//
// One system per process (SystemC elaborates once): this file is built once per chip count (CMake).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cosim/collective/noc_transports.h"
#include "cosim/device/sim_system.h"
#include "firmware/driver/driver.h"
#include "firmware/golden/collective_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/kernels/collective_kernel.h"
#include "model/collective/collective_hub.h"
#include "model/config/chip_config.h"
#include "spec/trn_regs.h"

#ifndef TRNSIM_TEST_CHIPS
#define TRNSIM_TEST_CHIPS 2
#endif

namespace trnsim::test {
namespace {

using isa::CcAlgorithm;
using isa::DataType;
using isa::Engine;
using isa::Instruction;
using isa::Opcode;
using model::collective::Topology;

constexpr int kChips = TRNSIM_TEST_CHIPS;
constexpr uint64_t kSeed = 11;
constexpr uint64_t kTimeout = 50'000'000;

/// The system under test: 16 and 64 chips are trn2-16's 4x4 and trn2-64's 4x4x4 tori; 2, 3 and 4 chips a ring.
Topology topology() {
  const model::ChipConfig trn2 = model::chip_config("trn2");
  if (kChips == 16) return Topology::from_config(model::chip_config("trn2-16"));
  if (kChips == 64) return Topology::from_config(model::chip_config("trn2-64"));
  return Topology({kChips}, {trn2.link_gbytes_per_s}, trn2.link_hop_latency_ns);
}

#if TRNSIM_TEST_DISTRIBUTED
// The same tests on one rank of a distributed system (docs/distributed.md): every chip local, the hub deciding at the
// end of each window (one hop latency) from timestamped events, the payloads moved by the step-by-step exchange.
constexpr bool kDistributed = true;
cosim::SimSystem& shared_system() {
  static model::collective::LoopbackExchange exchange;
  static const std::unique_ptr<cosim::SimSystem> sys = std::make_unique<cosim::SimSystem>(
      model::chip_config("tiny"), topology(), model::collective::Partition(kChips, 1, 0), exchange);
  return *sys;
}
#else
constexpr bool kDistributed = false;
cosim::SimSystem& shared_system() {
  static const std::unique_ptr<cosim::SimSystem> sys =
      std::make_unique<cosim::SimSystem>(model::chip_config("tiny"), topology());
  return *sys;
}
#endif

golden::CollectiveDtype gold_dtype(DataType t) {
  return t == DataType::kFp32 ? golden::CollectiveDtype::kFp32 : golden::CollectiveDtype::kBf16;
}

class CollectiveDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sys_ = &shared_system();
    ASSERT_EQ(sys_->chips(), kChips);
    for (int c = 0; c < kChips; ++c) {
      sys_->device(c).write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
      drivers_.push_back(std::make_unique<driver::Driver>(sys_->device(c)));
    }
  }

  std::vector<driver::Driver*> drivers() {
    std::vector<driver::Driver*> d;
    for (auto& p : drivers_) d.push_back(p.get());
    return d;
  }

  /// Loads program[c] on chip c (the same one for every chip when `programs` has one entry) and runs them all.
  std::vector<kernels::ChipRun> run(const std::vector<isa::Program>& programs) {
    for (int c = 0; c < kChips; ++c) drivers_[size_t(c)]->load_program(programs.size() == 1 ? programs[0] : programs[size_t(c)]);
    return kernels::run_on_chips(drivers(), kTimeout);
  }

  golden::CollectiveAlgorithm gold_algo(CcAlgorithm a) {
    auto& sys = sys_->hub().system();
    golden::CollectiveAlgorithm g;
    g.rhd = a == CcAlgorithm::kRhd;
    g.dims = sys.topology().dims();  // the machine; the golden plans the flows itself (isa::ring_plan)
    for (int d = 0; d < sys.topology().num_dims(); ++d) g.link_gbytes_per_s.push_back(sys.topology().gbytes_per_s(d));
    return g;
  }

  /// Writes chip r element j = collective_test_value(seed, r, j) at `addr` of every chip.
  void fill(DataType t, uint64_t count, uint64_t addr) {
    const unsigned es = isa::data_type_bytes(t);
    for (int r = 0; r < kChips; ++r) {
      std::vector<uint8_t> buf(count * es);
      for (uint64_t j = 0; j < count; ++j) {
        const uint32_t v = golden::collective_test_value(gold_dtype(t), kSeed, r, j);
        std::memcpy(&buf[j * es], &v, es);
      }
      if (count) drivers_[size_t(r)]->write_hbm(addr, buf.data(), buf.size());
    }
  }

  std::vector<uint32_t> read(int chip, DataType t, uint64_t count, uint64_t addr) {
    const unsigned es = isa::data_type_bytes(t);
    std::vector<uint8_t> buf(count * es);
    if (count) drivers_[size_t(chip)]->read_hbm(addr, buf.data(), buf.size());
    std::vector<uint32_t> out(count);
    for (uint64_t j = 0; j < count; ++j) std::memcpy(&out[j], &buf[j * es], es);
    return out;
  }

  /// Every chip ran to done.
  static void expect_all_done(const std::vector<kernels::ChipRun>& runs) {
    for (size_t c = 0; c < runs.size(); ++c) EXPECT_TRUE(runs[c].result.has_value()) << "chip " << c << ": " << runs[c].error;
  }

  /// Runs `op` on `count` elements and compares every chip's defined result with the golden collective.
  void check(Opcode op, CcAlgorithm algo, DataType t, uint64_t count) {
    SCOPED_TRACE(fmt_case(op, algo, t, count));
    const uint64_t addr = 4096;
    fill(t, count, addr);
    const auto runs = run({kernels::make_collective_program(op, t, algo, addr, count)});
    expect_all_done(runs);
    const auto input = [&](int rank, uint64_t j) { return golden::collective_test_value(gold_dtype(t), kSeed, rank, j); };
    const std::vector<uint32_t> want = op == Opcode::kAllGather
                                           ? golden::collective_gathered(kChips, count, input)
                                           : golden::collective_reduced(gold_algo(algo), gold_dtype(t), count, input);
    for (int r = 0; r < kChips; ++r) {
      const std::vector<uint32_t> got = read(r, t, count, addr);
      const uint64_t lo = op == Opcode::kReduceScatter ? golden::collective_block_begin(count, kChips, r) : 0;
      const uint64_t hi = op == Opcode::kReduceScatter ? golden::collective_block_begin(count, kChips, r + 1) : count;
      int bad = 0;
      for (uint64_t j = lo; j < hi; ++j) {
        if (got[j] != want[j] && bad++ < 3) {
          ADD_FAILURE() << "chip " << r << " element " << j << ": got 0x" << std::hex << got[j] << ", golden 0x"
                        << want[j];
        }
      }
    }
  }

  static std::string fmt_case(Opcode op, CcAlgorithm algo, DataType t, uint64_t count) {
    return std::string(*isa::opcode_name(op)) + " " + std::string(isa::cc_algorithm_name(algo)) + " " +
           std::string(isa::data_type_name(t)) + " count " + std::to_string(count) + " on " +
           std::to_string(kChips) + " chips";
  }

  static Instruction nop() { return Instruction::nop(); }
  static Instruction halt() { return Instruction::halt(); }
  static isa::Program cc_program(std::vector<Instruction> instrs) {
    isa::Program p;
    p.queue(Engine::kCc) = std::move(instrs);
    return p;
  }

  /// Expects chip `chip` to have stopped with `code` on queue cc at instruction `index` with ERR_INFO `info`.
  static void expect_fault(const kernels::ChipRun& r, int chip, uint32_t code, uint32_t index, uint32_t info) {
    SCOPED_TRACE("chip " + std::to_string(chip) + ": " + r.error);
    EXPECT_FALSE(r.result.has_value());
    EXPECT_EQ(r.err_code, code) << regs::err_code_name(r.err_code);
    EXPECT_EQ(r.err_queue, uint32_t(Engine::kCc));
    EXPECT_EQ(r.err_index, index);
    EXPECT_EQ(r.err_info, info);
  }

  cosim::SimSystem* sys_ = nullptr;
  std::vector<std::unique_ptr<driver::Driver>> drivers_;
};

bool power_of_two(int n) { return (n & (n - 1)) == 0; }

TEST_F(CollectiveDeviceTest, EveryOpAlgorithmAndTypeMatchesTheGolden) {
  // 1, 2, 3 elements (fewer than the chips: empty blocks), a count not divisible by the chip count, a larger one.
  const uint64_t counts[] = {1, 2, 3, uint64_t(kChips) + 1, uint64_t(7 * kChips + 3)};
  for (const Opcode op : {Opcode::kAllReduce, Opcode::kAllGather, Opcode::kReduceScatter}) {
    for (const CcAlgorithm algo : {CcAlgorithm::kRing, CcAlgorithm::kRhd}) {
      if (algo == CcAlgorithm::kRhd && !power_of_two(kChips)) continue;
      for (const DataType t : {DataType::kFp32, DataType::kBf16}) {
        for (const uint64_t count : counts) check(op, algo, t, count);
      }
    }
  }
}

// A failure of the simulation inside a collective (here the router network's watchdog, set to 1 cycle) reaches the
// host's caller as the NocError it is, in one line, not as SystemC's multi-line report of an exception that left a
// process; a soft reset brings the chips back.
TEST_F(CollectiveDeviceTest, ARouterNetworkFailureReachesTheHostAsItsOneLineNocError) {
  if (kDistributed) {
    EXPECT_THROW(sys_->hub().system().set_transport(
                     cosim::collective::transport_factory(cosim::collective::FabricKind::kTlm, {})),
                 std::invalid_argument);
    GTEST_SKIP() << "a distributed system runs on the message-level fabric only";
  }
  model::collective::NocTransportOptions o;
  o.watchdog_cycles = 1;
  auto& system = sys_->hub().system();
  system.set_transport(cosim::collective::transport_factory(cosim::collective::FabricKind::kTlm, o));
  fill(DataType::kFp32, 64, 4096);
  try {
    run({kernels::make_collective_program(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 4096, 64)});
    ADD_FAILURE() << "the collective completed";
  } catch (const model::noc::NocError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("router network: no packet delivered for 1 cycles", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  system.set_transport({});
  for (int c = 0; c < kChips; ++c) sys_->device(c).write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
  check(Opcode::kAllReduce, CcAlgorithm::kRing, DataType::kFp32, 5);
}

TEST_F(CollectiveDeviceTest, CountZeroIsANoOpThatStillCompletes) {
  fill(DataType::kFp32, 4, 4096);
  const auto runs = run({kernels::make_collective_program(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing,
                                                          4096, 0)});
  expect_all_done(runs);
  for (int r = 0; r < kChips; ++r) {
    const auto got = read(r, DataType::kFp32, 4, 4096);
    for (uint64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(got[j], golden::collective_test_value(golden::CollectiveDtype::kFp32, kSeed, r, j)) << r;
    }
  }
}

TEST_F(CollectiveDeviceTest, TwoCollectivesInARowAndTheTimeItTakes) {
  // all_reduce then all_gather of the same buffer in one program; the cc queue's cycles cover both collectives.
  const uint64_t count = 5 * kChips + 1, addr = 8192;
  fill(DataType::kFp32, count, addr);
  isa::Program p = cc_program({kernels::cc_collective(Opcode::kReduceScatter, DataType::kFp32, CcAlgorithm::kRing,
                                                      addr, count),
                               kernels::cc_collective(Opcode::kAllGather, DataType::kFp32, CcAlgorithm::kRing, addr,
                                                      count),
                               halt()});
  sys_->hub().clear_completed();
  const auto runs = run({p});
  expect_all_done(runs);
  // reduce-scatter + all-gather of the reduced blocks = all-reduce (golden reduced, every element on every chip).
  const auto input = [&](int rank, uint64_t j) {
    return golden::collective_test_value(golden::CollectiveDtype::kFp32, kSeed, rank, j);
  };
  const auto want = golden::collective_reduced(gold_algo(CcAlgorithm::kRing), golden::CollectiveDtype::kFp32, count,
                                               input);
  for (int r = 0; r < kChips; ++r) EXPECT_EQ(read(r, DataType::kFp32, count, addr), want) << "chip " << r;
  ASSERT_EQ(sys_->hub().completed().size(), 2u);
  for (const auto& c : sys_->hub().completed()) {
    EXPECT_GT(c.result.time_ns, 0.0);
    EXPECT_GE((c.end - c.start).to_seconds() * 1e9, c.result.time_ns);
  }
  // The device's cycle counter covers both collectives plus the cc queue's three issue cycles (one TE cycle is
  // 417 ps: 2.4 GHz on SystemC's 1 ps grid), and at most a cycle of rounding each on top.
  const double both_ns = sys_->hub().completed()[0].result.time_ns + sys_->hub().completed()[1].result.time_ns;
  for (const auto& r : runs) {
    EXPECT_GE(double(r.result->cycles) * 0.417, both_ns);
    EXPECT_LE(double(r.result->cycles) * 0.417, both_ns + 6 * 0.417);
  }
}

TEST_F(CollectiveDeviceTest, SendRecvAroundTheRing) {
  // Chip r sends 40 bytes to r+1 and receives from r-1; even chips send first (send/recv are synchronous).
  const uint64_t src = 0x1000, dst = 0x2000, bytes = 40;
  std::vector<isa::Program> programs;
  for (int r = 0; r < kChips; ++r) {
    std::vector<uint8_t> data(bytes);
    for (uint64_t i = 0; i < bytes; ++i) data[i] = uint8_t(r * 37 + i);
    drivers_[size_t(r)]->write_hbm(src, data.data(), bytes);
    const std::vector<uint8_t> zero(bytes, 0xEE);
    drivers_[size_t(r)]->write_hbm(dst, zero.data(), bytes);
    const uint32_t next = uint32_t((r + 1) % kChips), prev = uint32_t((r + kChips - 1) % kChips);
    const Instruction s = kernels::cc_send(next, src, bytes), v = kernels::cc_recv(prev, dst, bytes);
    programs.push_back(r % 2 == 0 ? cc_program({s, v, halt()}) : cc_program({v, s, halt()}));
  }
  if (kChips % 2 == 1) {
    // An odd ring: the last (even) chip receives first so that chip 0's send has a partner.
    const int r = kChips - 1;
    programs[size_t(r)] = cc_program({kernels::cc_recv(uint32_t(r - 1), dst, bytes),
                                      kernels::cc_send(0, src, bytes), halt()});
  }
  expect_all_done(run(programs));
  for (int r = 0; r < kChips; ++r) {
    std::vector<uint8_t> got(bytes);
    drivers_[size_t(r)]->read_hbm(dst, got.data(), bytes);
    const int prev = (r + kChips - 1) % kChips;
    for (uint64_t i = 0; i < bytes; ++i) ASSERT_EQ(got[i], uint8_t(prev * 37 + i)) << "chip " << r << " byte " << i;
  }
}

TEST_F(CollectiveDeviceTest, TheRegistersSayWhereEachChipSitsAndWhatItsLinksCarried) {
  // The place registers against the system's configuration (trn2's links: 160 GB/s in x and y, 64 in z, 1.5 us a
  // hop; BRIEF section 2), then one send of B bytes from every chip r to r + 1 (mod chips).
  const Topology topo = topology();
  for (int r = 0; r < kChips; ++r) {
    const driver::DeviceInfo& info = drivers_[size_t(r)]->info();
    EXPECT_EQ(info.chip_id, uint32_t(r));
    EXPECT_EQ(info.torus, topo.dims());
    EXPECT_EQ(info.system_chips(), kChips);
    EXPECT_EQ(info.hop_latency_ns, 1500.0);
    ASSERT_EQ(info.link_gbytes_per_s.size(), topo.dims().size());
    for (size_t d = 0; d < info.link_gbytes_per_s.size(); ++d) {
      EXPECT_EQ(info.link_gbytes_per_s[d], d < 2 ? 160.0 : 64.0);
    }
    drivers_[size_t(r)]->clear_counters();
  }
  const uint64_t src = 0x1000, dst = 0x4000, bytes = 4000;
  std::vector<isa::Program> programs;
  for (int r = 0; r < kChips; ++r) {
    const uint32_t next = uint32_t((r + 1) % kChips), prev = uint32_t((r + kChips - 1) % kChips);
    const Instruction s = kernels::cc_send(next, src, bytes), v = kernels::cc_recv(prev, dst, bytes);
    programs.push_back(r % 2 == 0 ? cc_program({s, v, halt()}) : cc_program({v, s, halt()}));
  }
  if (kChips % 2 == 1) programs[size_t(kChips - 1)] = cc_program({kernels::cc_recv(uint32_t(kChips - 2), dst, bytes),
                                                                  kernels::cc_send(0, src, bytes), halt()});
  expect_all_done(run(programs));
  uint64_t link_bytes = 0;
  for (int r = 0; r < kChips; ++r) {
    const driver::CollectiveCounters c = drivers_[size_t(r)]->read_collective_counters();
    EXPECT_EQ(c.ops, 2u) << "chip " << r;  // its send and its recv
    EXPECT_EQ(c.messages, 1u) << "chip " << r;
    EXPECT_EQ(c.bytes, bytes) << "chip " << r;
    EXPECT_EQ(c.last_steps, 1u) << "chip " << r;
    EXPECT_EQ(c.net_packets + c.net_flits + c.net_cycles, 0u) << "the message-level link model has no router";
    ASSERT_EQ(c.links.size(), 2 * topo.dims().size());
    for (const auto& l : c.links) link_bytes += l.bytes;
    if (kChips > 4) continue;
    // A ring: r + 1 is one hop away, along x+ (on two chips the tie rule sends odd chips along x-). The link model
    // (docs/neuronlink.md "Link model"): the link is reserved for B / 160 GB/s = 25 ns, the message arrives a hop
    // latency later; each send/recv completes at whole TE cycles of 417 ps (2.4 GHz on SystemC's 1 ps grid).
    const size_t used = kChips == 2 && r % 2 == 1 ? 1 : 0;
    EXPECT_EQ(c.links[used].bytes, bytes) << "chip " << r;
    EXPECT_EQ(c.links[used].busy, uint64_t(std::llround(25.0 / 0.417))) << "chip " << r;
    EXPECT_EQ(c.links[1 - used].bytes, 0u) << "chip " << r;
    EXPECT_EQ(c.cycles, 2 * uint64_t(std::ceil((25.0 + 1500.0) / 0.417))) << "chip " << r;
  }
  // Every hop of every message counts once on the link it crossed: dimension-order hops from r to r + 1.
  uint64_t hops = 0;
  for (int r = 0; r < kChips; ++r) {
    int a = r, b = (r + 1) % kChips;
    for (int dim : topo.dims()) {
      const int d = std::abs(a % dim - b % dim);
      hops += uint64_t(std::min(d, dim - d));
      a /= dim;
      b /= dim;
    }
  }
  EXPECT_EQ(link_bytes, hops * bytes);
  drivers_.front()->clear_counters();
  const driver::CollectiveCounters cleared = drivers_.front()->read_collective_counters();
  EXPECT_EQ(cleared.ops + cleared.cycles + cleared.messages + cleared.bytes + cleared.links[0].busy, 0u);
}

TEST_F(CollectiveDeviceTest, MismatchedCallsFaultEveryChip) {
  // The last chip all-reduces 5 elements where the others reduce 4, one instruction later (after a nop).
  std::vector<isa::Program> programs(size_t(kChips), cc_program({kernels::cc_collective(
                                                                     Opcode::kAllReduce, DataType::kFp32,
                                                                     CcAlgorithm::kRing, 0, 4),
                                                                 halt()}));
  programs.back() = cc_program({nop(), kernels::cc_collective(Opcode::kAllReduce, DataType::kFp32,
                                                              CcAlgorithm::kRing, 0, 5),
                                halt()});
  const auto runs = run(programs);
  for (int c = 0; c < kChips; ++c) {
    expect_fault(runs[size_t(c)], c, regs::ERR_CC_MISMATCH, c == kChips - 1 ? 1 : 0, isa::field_id("count"));
  }
  EXPECT_NE(runs[0].error.find("device error cc_mismatch"), std::string::npos) << runs[0].error;
  EXPECT_NE(runs[0].error.find("queue cc, instruction 0, field count"), std::string::npos) << runs[0].error;
  // A different op is named by the opcode field.
  programs.back() = cc_program({kernels::cc_collective(Opcode::kAllGather, DataType::kFp32, CcAlgorithm::kRing, 0,
                                                       4),
                                halt()});
  const auto runs2 = run(programs);
  for (int c = 0; c < kChips; ++c) expect_fault(runs2[size_t(c)], c, regs::ERR_CC_MISMATCH, 0, isa::field_id("opcode"));
}

TEST_F(CollectiveDeviceTest, AHaltedPeerFaultsTheWaitersNoHang) {
  // The last chip's cc queue halts without joining the all-reduce.
  std::vector<isa::Program> programs(size_t(kChips), cc_program({nop(), kernels::cc_collective(
                                                                            Opcode::kAllReduce, DataType::kBf16,
                                                                            CcAlgorithm::kRing, 64, 9),
                                                                 halt()}));
  programs.back() = cc_program({halt()});
  const auto runs = run(programs);
  for (int c = 0; c + 1 < kChips; ++c) {
    expect_fault(runs[size_t(c)], c, regs::ERR_CC_PEER_STOPPED, 1, uint32_t(kChips - 1));
  }
  EXPECT_TRUE(runs.back().result.has_value()) << runs.back().error;
  EXPECT_NE(runs[0].error.find("peer chip " + std::to_string(kChips - 1)), std::string::npos) << runs[0].error;
}

TEST_F(CollectiveDeviceTest, ABufferOutsideHbmFaultsThatChipAndStopsItsPeers) {
  const uint64_t hbm = drivers_[0]->info().hbm_bytes;
  std::vector<isa::Program> programs(size_t(kChips), kernels::make_collective_program(
                                                         Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing,
                                                         0, 16));
  programs[0] = kernels::make_collective_program(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, hbm - 32,
                                                 16);
  const auto runs = run(programs);
  expect_fault(runs[0], 0, regs::ERR_HBM_RANGE, 0, isa::field_id("count"));
  for (int c = 1; c < kChips; ++c) expect_fault(runs[size_t(c)], c, regs::ERR_CC_PEER_STOPPED, 0, 0);
}

TEST_F(CollectiveDeviceTest, RecvWithoutSendAndCrossedRecvsNeverHang) {
  // Chip 0 receives from chip 1, which halts: peer stopped. Then chips 0 and 1 each wait to receive from the other
  // while every other chip halts: deadlock.
  std::vector<isa::Program> programs(size_t(kChips), cc_program({halt()}));
  programs[0] = cc_program({kernels::cc_recv(1, 0, 8), halt()});
  auto runs = run(programs);
  expect_fault(runs[0], 0, regs::ERR_CC_PEER_STOPPED, 0, 1);
  for (int c = 1; c < kChips; ++c) EXPECT_TRUE(runs[size_t(c)].result.has_value()) << runs[size_t(c)].error;

  programs[1] = cc_program({nop(), kernels::cc_recv(0, 0, 8), halt()});
  runs = run(programs);
  expect_fault(runs[0], 0, regs::ERR_CC_DEADLOCK, 0, 0);
  expect_fault(runs[1], 1, regs::ERR_CC_DEADLOCK, 1, 0);
}

TEST_F(CollectiveDeviceTest, SendRecvSizeMismatchAndBadPeer) {
  std::vector<isa::Program> programs(size_t(kChips), cc_program({halt()}));
  programs[0] = cc_program({kernels::cc_send(1, 0, 64), halt()});
  programs[1] = cc_program({kernels::cc_recv(0, 0, 32), halt()});
  auto runs = run(programs);
  expect_fault(runs[0], 0, regs::ERR_CC_MISMATCH, 0, isa::field_id("bytes"));
  expect_fault(runs[1], 1, regs::ERR_CC_MISMATCH, 0, isa::field_id("bytes"));

  programs[1] = cc_program({halt()});
  programs[0] = cc_program({kernels::cc_send(uint32_t(kChips), 0, 8), halt()});
  runs = run(programs);
  expect_fault(runs[0], 0, regs::ERR_BAD_FIELD, 0, isa::field_id("peer"));
  programs[0] = cc_program({kernels::cc_send(0, 0, 8), halt()});
  runs = run(programs);
  expect_fault(runs[0], 0, regs::ERR_BAD_FIELD, 0, isa::field_id("peer"));
}

TEST_F(CollectiveDeviceTest, RhdOnANonPowerOfTwoSystemIsUnsupported) {
  if (power_of_two(kChips)) GTEST_SKIP() << kChips << " chips: rhd is supported";
  const auto runs = run({kernels::make_collective_program(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRhd, 0,
                                                          8)});
  for (int c = 0; c < kChips; ++c) {
    EXPECT_FALSE(runs[size_t(c)].result.has_value());
    // Every chip checks its own instruction; a chip may also see a peer stop first.
    EXPECT_TRUE(runs[size_t(c)].err_code == regs::ERR_CC_UNSUPPORTED ||
                runs[size_t(c)].err_code == regs::ERR_CC_PEER_STOPPED)
        << runs[size_t(c)].error;
  }
  EXPECT_EQ(runs[0].err_code, regs::ERR_CC_UNSUPPORTED) << runs[0].error;
  EXPECT_EQ(runs[0].err_info, uint32_t(isa::field_id("algorithm")));
}

TEST_F(CollectiveDeviceTest, GemmBesideComputeThenAllReduce) {
  // Data parallel: every chip computes out = S^T @ M of its own bf16 operands with the TE and DMA queues; the cc
  // queue waits on the GEMM's drain semaphore and all-reduces out over the chips (ring).
  kernels::GemmLayout l;
  l.dtype = isa::Dtype::kBf16;
  l.k = 20;
  l.m = 6;
  l.n = 10;
  const driver::DeviceInfo& info = drivers_[0]->info();
  std::vector<std::vector<uint32_t>> outs;
  for (int r = 0; r < kChips; ++r) {
    driver::Driver& d = *drivers_[size_t(r)];
    d.free_all();
    l.stationary_hbm = d.alloc(uint64_t(l.k) * l.m * 2);
    l.moving_hbm = d.alloc(uint64_t(l.k) * l.n * 2);
    l.out_hbm = d.alloc(uint64_t(l.m) * l.n * 4);
    golden::GemmOperands ops{isa::Dtype::kBf16, l.k, l.m, l.n, {}, {}};
    for (int i = 0; i < l.k * l.m; ++i) {
      ops.stationary.push_back(uint16_t(golden::collective_test_value(golden::CollectiveDtype::kBf16, kSeed, r, uint64_t(i))));
    }
    for (int i = 0; i < l.k * l.n; ++i) {
      ops.moving.push_back(uint16_t(golden::collective_test_value(golden::CollectiveDtype::kBf16, kSeed + 1, r, uint64_t(i))));
    }
    d.write_hbm(l.stationary_hbm, ops.stationary.data(), ops.stationary.size() * 2);
    d.write_hbm(l.moving_hbm, ops.moving.data(), ops.moving.size() * 2);
    outs.push_back(golden::gemm(ops, int(info.te_rows)));
    d.load_program(kernels::make_gemm_allreduce_program(info, l, CcAlgorithm::kRing));
  }
  const auto runs = kernels::run_on_chips(drivers(), kTimeout);
  expect_all_done(runs);
  const uint64_t count = uint64_t(l.m) * l.n;
  const auto want = golden::collective_reduced(gold_algo(CcAlgorithm::kRing), golden::CollectiveDtype::kFp32, count,
                                               [&](int rank, uint64_t j) { return outs[size_t(rank)][j]; });
  for (int r = 0; r < kChips; ++r) {
    EXPECT_EQ(read(r, DataType::kFp32, count, l.out_hbm), want) << "chip " << r;
    EXPECT_EQ(runs[size_t(r)].result->retired[size_t(Engine::kCc)], 3u);
  }
}

}  // namespace
}  // namespace trnsim::test
