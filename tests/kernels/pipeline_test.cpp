// kernels::Pipeline on its own: random dependency graphs over the dma, act and vec queues whose ops read and write
// random SBUF slots, with every data dependency (read after write, write after read, write after write) declared;
// the emitted program must pass check_program (no race under any timing, no deadlock) and compute what executing
// the ops one by one in creation order computes. Plus the error for a dependency on a later op.
#include "firmware/kernels/pipeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "tests/kernels/program_sim.h"
#include "tests/support/test_seed.h"

namespace trnsim::kernels {
namespace {

using isa::DataType;
using isa::Engine;

driver::DeviceInfo small_device() {
  driver::DeviceInfo i;
  i.te_rows = i.te_cols = 16;
  i.sbuf_partitions = i.psum_partitions = 16;
  i.sbuf_partition_bytes = 4096;
  i.psum_partition_bytes = 4096;
  i.psum_banks = 2;
  i.hbm_bytes = 1 << 20;
  i.num_queues = 4;
  i.num_semaphores = 32;
  i.num_dma_engines = 4;
  i.te_clock_mhz = 2400;
  i.act_clock_mhz = 1200;  // BRIEF section 2 figures, as the device's registers give them
  i.vec_clock_mhz = 960;
  i.vec_elems_per_cycle = i.vec_elems_per_cycle_16 = 16;  // one element per lane
  i.dma_latency_ns = 1300;
  i.dma_bytes_per_ns = 23.0;
  return i;
}

constexpr int kSlots = 12;
constexpr int kSlotElems = 8;  // FP32 per partition
uint32_t slot(int s) { return uint32_t(s) * kSlotElems * 4; }

TEST(Pipeline, RandomGraphsAreRaceFreeAndComputeInOrder) {
  const driver::DeviceInfo info = small_device();
  const uint64_t seed = test::test_seed();
  for (int round = 0; round < 20; ++round) {
    std::mt19937_64 rng(seed + uint64_t(round));
    Pipeline pipe(info);
    std::vector<Pipeline::OpId> last_writer(kSlots, -1);
    std::vector<std::vector<Pipeline::OpId>> readers(kSlots);
    // Expected contents: slot values as a function of the ops (each op: dst = f(src)); tracked as op ids.
    // Initialise every slot from HBM first (one dma op per slot).
    for (int s = 0; s < kSlots; ++s) {
      const isa::CopyFields c =
          copy_rows(isa::MemSpace::kHbm, uint64_t(s) * kSlotElems * 4, DataType::kFp32, 0, isa::MemSpace::kSbuf,
                    slot(s), DataType::kFp32, int64_t(info.sbuf_partition_bytes), 16, kSlotElems);
      // (1 to 3 copies each: a published op's completion count covers all of them)
      last_writer[std::size_t(s)] = pipe.add(Engine::kDma, dma_pieces(c, 1 + uint64_t(s % 3)));
    }
    std::vector<std::pair<int, int>> steps;  // (src, dst) in creation order, for the expected result
    for (int k = 0; k < 60; ++k) {
      const int src = int(rng() % kSlots);
      int dst = int(rng() % kSlots);
      if (dst == src) dst = (dst + 1) % kSlots;
      std::vector<Pipeline::OpId> deps{last_writer[std::size_t(src)], last_writer[std::size_t(dst)]};
      deps.insert(deps.end(), readers[std::size_t(dst)].begin(), readers[std::size_t(dst)].end());
      const int kind = int(rng() % 3);
      Pipeline::OpId id;
      const isa::Operand in = operand(slot(src)), out = operand(slot(dst));
      if (kind == 0) {  // dst = src + 1
        id = pipe.add(Engine::kVec,
                      {tensor_scalar(isa::AluOp::kAdd, 1.0f, isa::AluOp::kNone, 0, 16, kSlotElems, out, in)}, deps);
      } else if (kind == 1) {  // dst = src * 2 + 0
        id = pipe.add(Engine::kAct,
                      {activation(isa::ActFunc::kIdentity, 16, kSlotElems, out, in, 2.0f, 0.0f, nullptr, nullptr)},
                      deps);
      } else {  // dst = src (copy)
        const isa::CopyFields c = copy_rows(isa::MemSpace::kSbuf, slot(src), DataType::kFp32,
                                            int64_t(info.sbuf_partition_bytes), isa::MemSpace::kSbuf, slot(dst),
                                            DataType::kFp32, int64_t(info.sbuf_partition_bytes), 16, kSlotElems);
        id = pipe.add(Engine::kDma, dma_pieces(c, 1 + rng() % 2), deps);
      }
      steps.emplace_back(src * 3 + kind, dst);
      readers[std::size_t(src)].push_back(id);
      readers[std::size_t(dst)].clear();
      last_writer[std::size_t(dst)] = id;
    }
    const isa::Program prog = pipe.build();
    const test::ProgramCheck check = test::check_program(info, prog);
    ASSERT_TRUE(check.ok()) << "round " << round << "\n" << check.summary();

    // Execute on the reference machine and compare with the ops applied in creation order.
    std::vector<uint8_t> hbm(info.hbm_bytes, 0);
    std::vector<float> value(kSlots);
    for (int s = 0; s < kSlots; ++s) {
      value[std::size_t(s)] = float(s + 1);
      for (int e = 0; e < kSlotElems; ++e)
        std::memcpy(&hbm[(std::size_t(s) * kSlotElems + e) * 4], &value[std::size_t(s)], 4);
    }
    for (const auto& [code, dst] : steps) {
      const int src = code / 3, kind = code % 3;
      const float v = value[std::size_t(src)];
      value[std::size_t(dst)] = kind == 0 ? v + 1.0f : kind == 1 ? v * 2.0f : v;
    }
    const test::RefMemory mem = test::run_reference(info, prog, hbm);
    for (int s = 0; s < kSlots; ++s) {
      for (int p = 0; p < 16; p += 5) {
        float got;
        std::memcpy(&got, &mem.sbuf[uint64_t(p) * info.sbuf_partition_bytes + slot(s)], 4);
        EXPECT_EQ(got, value[std::size_t(s)]) << fmt::format("round {} slot {} partition {}", round, s, p);
      }
    }
  }
}

TEST(Pipeline, DependencyOnALaterOpIsALogicError) {
  Pipeline pipe(small_device());
  const auto a = pipe.add(Engine::kVec, {});
  EXPECT_THROW(pipe.add(Engine::kAct, {}, {a + 1}), std::logic_error);
  EXPECT_THROW(Pipeline(small_device(), 29), std::invalid_argument);
  // The queues' 5 semaphores and the kLandingSems completion semaphores after them must fit the 32.
  EXPECT_NO_THROW(Pipeline(small_device(), uint8_t(isa::kNumSemaphores - isa::kNumQueues - Pipeline::kLandingSems)));
  EXPECT_THROW(Pipeline(small_device(), uint8_t(isa::kNumSemaphores - isa::kNumQueues - Pipeline::kLandingSems + 1)),
               std::invalid_argument);
}

// check_program's rules for completion semaphores (dma_copy done_sem=; docs/isa.md "Execution"), on programs
// written by hand: a wait knows the copies that signal it, and only those; batches on one semaphore must not overlap;
// a completion semaphore is the copies' alone. The timing estimate lands each copy at its own end.
isa::Program parse(const char* text) { return isa::assemble(text); }

TEST(ProgramSim, AWaitForACompletionSemaphoreOrdersTheCopiesThatSignalItAndNoOthers) {
  const driver::DeviceInfo info = small_device();
  const auto ok = test::check_program(info, parse(".queue dma\n"
                                                  "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=5\n"
                                                  "dma_copy src=hbm:0x0 dst=sbuf:0x40 count=[8] done_sem=5\n"
                                                  "halt\n"
                                                  ".queue vec\n"
                                                  "sem_wait sem=5 value=2\n"
                                                  "tensor_copy partitions=1 free=[16] out=sbuf:0:0x100 in0=sbuf:0:0x0\n"
                                                  "halt\n"));
  EXPECT_TRUE(ok.ok()) << ok.summary();
  // Waiting for one of the two does not say which: reading either is a race.
  const auto one = test::check_program(info, parse(".queue dma\n"
                                                   "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=5\n"
                                                   "dma_copy src=hbm:0x0 dst=sbuf:0x40 count=[8] done_sem=5\n"
                                                   "halt\n"
                                                   ".queue vec\n"
                                                   "sem_wait sem=5 value=1\n"
                                                   "tensor_copy partitions=1 free=[8] out=sbuf:0:0x100 in0=sbuf:0:0x0\n"
                                                   "halt\n"));
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.summary().find("race: vec[1] tensor_copy reads SBUF partition 0 [0x0, 0x20) while dma[0] dma_copy"),
            std::string::npos)
      << one.summary();
  // A copy without the semaphore, issued before them, is not covered either.
  const auto other = test::check_program(info, parse(".queue dma\n"
                                                     "dma_copy src=hbm:0x0 dst=sbuf:0x80 count=[8]\n"
                                                     "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=5\n"
                                                     "halt\n"
                                                     ".queue vec\n"
                                                     "sem_wait sem=5 value=1\n"
                                                     "tensor_copy partitions=1 free=[8] out=sbuf:0:0x100 in0=sbuf:0:0x80\n"
                                                     "halt\n"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.summary().find("while dma[0] dma_copy may still write it"), std::string::npos) << other.summary();
}

TEST(ProgramSim, ASecondBatchOnACompletionSemaphoreMustWaitForTheFirstToLand) {
  const driver::DeviceInfo info = small_device();
  const char* overlapping = ".queue dma\n"
                            "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=6\n"
                            "dma_copy src=hbm:0x0 dst=sbuf:0x80 count=[8]\n"
                            "dma_copy src=hbm:0x0 dst=sbuf:0x40 count=[8] done_sem=6\n"
                            "halt\n";
  const auto bad = test::check_program(info, parse(overlapping));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.summary().find("dma[2] dma_copy: a new batch of copies signalling semaphore 6 while dma[0] of the "
                               "previous batch may still be in flight (the dma queue must first sem_wait sem=6 "
                               "value=1)"),
            std::string::npos)
      << bad.summary();
  const auto good = test::check_program(info, parse(".queue dma\n"
                                                    "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=6\n"
                                                    "dma_copy src=hbm:0x0 dst=sbuf:0x80 count=[8]\n"
                                                    "sem_wait sem=6 value=1\n"
                                                    "dma_copy src=hbm:0x0 dst=sbuf:0x40 count=[8] done_sem=6\n"
                                                    "halt\n"));
  EXPECT_TRUE(good.ok()) << good.summary();
  // A queue's sem_signal may not add to a completion semaphore.
  const auto mixed = test::check_program(info, parse(".queue dma\n"
                                                     "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=6\n"
                                                     "halt\n"
                                                     ".queue vec\n"
                                                     "sem_signal sem=6 value=1\n"
                                                     "halt\n"));
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.summary().find("semaphore 6 is"), std::string::npos) << mixed.summary();
}

TEST(ProgramSim, TheTimingEstimateLandsACopyAtItsOwnEnd) {
  // docs/isa.md "Costs": a copy takes 1.3 us (3120 TE cycles at 2.4 GHz) + bytes / 23 B/ns; the 32-byte copy lands
  // at 1 + 3120 + 3.3 cycles, long before the 64 KiB one (1 + 3120 + 6839), which the dma queue's halt waits for.
  const auto est = test::estimate_timing(small_device(), parse(".queue dma\n"
                                                               "dma_copy src=hbm:0x0 dst=hbm:0x10000 count=[16384]\n"
                                                               "dma_copy src=hbm:0x0 dst=sbuf:0x0 count=[8] done_sem=5\n"
                                                               "halt\n"
                                                               ".queue te\n"
                                                               "sem_wait sem=5 value=1\n"
                                                               "halt\n"));
  EXPECT_GE(est.te_stall, 3120u);
  EXPECT_LE(est.te_stall, 3130u);
  EXPECT_GE(est.cycles, 3120u + 6839u);
}

}  // namespace
}  // namespace trnsim::kernels
