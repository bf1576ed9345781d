// The SBUF/PSUM access checker (model/core/access_checker.h) alone, driven by hand: happens-before through
// semaphore chains, DMA copies on their engines and the DMA queue's drain, launches, concurrent readers, and the
// uninitialised-read tracking. The rules are those of docs/timeline.md "Checkers".
#include <gtest/gtest.h>

#include <string>

#include "model/config/chip_config.h"
#include "model/core/access_checker.h"
#include "spec/trn_regs.h"

namespace trnsim::model {
namespace {

constexpr int kTe = int(isa::Engine::kTe), kDma = int(isa::Engine::kDma), kAct = int(isa::Engine::kAct),
              kVec = int(isa::Engine::kVec);

AccessChecker::Actor queue_actor(int q, uint32_t index, isa::Opcode op) {
  AccessChecker::Actor a;
  a.agent = q;
  a.queue = q;
  a.index = index;
  a.op = op;
  return a;
}

/// dma instruction `index`, a copy on DMA engine `engine` with the clock dma_issue gave it.
AccessChecker::Actor copy_actor(uint32_t index, int engine, const AccessChecker::Clock* clock) {
  AccessChecker::Actor a = queue_actor(kDma, index, isa::Opcode::kDmaCopy);
  a.agent = AccessChecker::dma_agent(engine);
  a.dma_engine = engine;
  a.clock = clock;
  return a;
}

class AccessCheckerTest : public ::testing::Test {
 protected:
  ChipConfig config_ = chip_config("tiny");
  AccessChecker hazards_{config_, {true, false}};
  AccessChecker uninit_{config_, {false, true}};
  const uint64_t sbuf_ = regs::SBUF_BASE;
  const uint64_t psum_ = regs::PSUM_BASE;
  const AccessChecker::Actor vec_ = queue_actor(kVec, 3, isa::Opcode::kMemset);
  const AccessChecker::Actor act_ = queue_actor(kAct, 5, isa::Opcode::kActivation);
  const AccessChecker::Actor te_ = queue_actor(kTe, 1, isa::Opcode::kLoadStationary);
};

TEST_F(AccessCheckerTest, UnorderedWritesAreAHazardNamingBothInstructionsAndTheBytes) {
  EXPECT_FALSE(hazards_.access(vec_, sbuf_ + 0x40, 16, true));
  const auto f = hazards_.access(act_, sbuf_ + 0x48, 16, true);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, regs::ERR_HAZARD);
  EXPECT_EQ(f->detail,
            "activation writes sbuf partition 0 bytes 0x48..0x4f, which vec instruction 3 (memset) wrote before, "
            "with no semaphore chain ordering the two (write-after-write hazard)");
}

TEST_F(AccessCheckerTest, ASemaphoreChainOrdersAccessesTransitively) {
  EXPECT_FALSE(hazards_.access(vec_, sbuf_, 64, true));
  hazards_.on_signal(kVec, 0);
  hazards_.on_wait(kTe, 0);
  hazards_.on_signal(kTe, 7);
  hazards_.on_wait(kAct, 7);
  EXPECT_FALSE(hazards_.access(act_, sbuf_, 64, false));
  EXPECT_FALSE(hazards_.access(act_, sbuf_, 64, true));
}

TEST_F(AccessCheckerTest, AnAccessAfterTheSignalIsNotOrderedByIt) {
  hazards_.on_signal(kVec, 0);
  EXPECT_FALSE(hazards_.access(vec_, sbuf_ + 8, 4, true));  // after its signal
  hazards_.on_wait(kAct, 0);
  const auto f = hazards_.access(act_, sbuf_ + 8, 4, false);
  ASSERT_TRUE(f);
  EXPECT_NE(f->detail.find("read-after-write"), std::string::npos) << f->detail;
}

TEST_F(AccessCheckerTest, ReadersDoNotConflictButAWriterMustFollowEveryOne) {
  EXPECT_FALSE(hazards_.access(vec_, sbuf_, 4, false));
  EXPECT_FALSE(hazards_.access(act_, sbuf_, 4, false));
  // te has seen vec's read only: act's concurrent read is still unordered with te's write.
  hazards_.on_signal(kVec, 1);
  hazards_.on_wait(kTe, 1);
  const auto f = hazards_.access(queue_actor(kTe, 2, isa::Opcode::kMultiplyMoving), sbuf_, 4, true);
  ASSERT_TRUE(f);
  EXPECT_NE(f->detail.find("which act instruction 5 (activation) read before"), std::string::npos) << f->detail;
  EXPECT_NE(f->detail.find("write-after-read"), std::string::npos);
}

TEST_F(AccessCheckerTest, DmaCopiesAreOrderedOnlyThroughTheQueuesDrain) {
  // The DMA queue issues a copy on engine 2 after waiting for vec; the copy may overwrite what vec wrote.
  EXPECT_FALSE(hazards_.access(vec_, psum_ + 0x100, 32, true));
  hazards_.on_signal(kVec, 4);
  hazards_.on_wait(kDma, 4);
  const AccessChecker::Clock copy_clock = hazards_.dma_issue(2);
  const AccessChecker::Actor copy = copy_actor(9, 2, &copy_clock);
  EXPECT_FALSE(hazards_.access(copy, psum_ + 0x100, 32, true));
  // A signal of the DMA queue without the drain does not cover the copy ...
  hazards_.on_signal(kDma, 5);
  hazards_.on_wait(kTe, 5);
  auto f = hazards_.access(te_, psum_ + 0x100, 4, false);
  ASSERT_TRUE(f);
  EXPECT_NE(f->detail.find("which dma instruction 9 (dma_copy on DMA engine 2) wrote before"), std::string::npos)
      << f->detail;
  // ... a drain before the signal does.
  hazards_.on_dma_drain();
  hazards_.on_signal(kDma, 6);
  hazards_.on_wait(kAct, 6);
  EXPECT_FALSE(hazards_.access(act_, psum_ + 0x100, 32, false));
}

TEST_F(AccessCheckerTest, ACopysCompletionSemaphoreOrdersThatCopyAloneBeforeTheWaiter) {
  // Two copies in flight on engines 0 and 1; only copy 1 names a completion semaphore (done_sem=9).
  const AccessChecker::Clock c0 = hazards_.dma_issue(0), c1 = hazards_.dma_issue(1);
  EXPECT_FALSE(hazards_.access(copy_actor(0, 0, &c0), sbuf_, 16, true));
  EXPECT_FALSE(hazards_.access(copy_actor(1, 1, &c1), sbuf_ + 0x40, 16, true));
  hazards_.on_copy_signal(c1, 9);  // copy 1 landed
  hazards_.on_wait(kTe, 9);
  EXPECT_FALSE(hazards_.access(te_, sbuf_ + 0x40, 16, false)) << "the landed copy is ordered before the waiter";
  const auto f = hazards_.access(te_, sbuf_, 16, false);
  ASSERT_TRUE(f) << "copy 0 signalled nothing: still unordered";
  EXPECT_NE(f->detail.find("dma instruction 0 (dma_copy on DMA engine 0) wrote before"), std::string::npos)
      << f->detail;
  // The DMA queue itself has not seen copy 1 either: its completion went to the semaphore, not to the queue.
  const AccessChecker::Actor queue_write = queue_actor(kVec, 7, isa::Opcode::kMemset);
  hazards_.on_signal(kDma, 3);
  hazards_.on_wait(kVec, 3);
  EXPECT_TRUE(hazards_.access(queue_write, sbuf_ + 0x40, 4, true));
}

TEST_F(AccessCheckerTest, CopiesOnTwoEnginesRaceButCopiesOnOneEngineAreInOrder) {
  const AccessChecker::Clock c0 = hazards_.dma_issue(0), c0b = hazards_.dma_issue(0), c1 = hazards_.dma_issue(1);
  EXPECT_FALSE(hazards_.access(copy_actor(0, 0, &c0), sbuf_, 8, true));
  EXPECT_FALSE(hazards_.access(copy_actor(1, 0, &c0b), sbuf_, 8, true));
  const auto f = hazards_.access(copy_actor(2, 1, &c1), sbuf_ + 4, 8, true);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->detail,
            "dma_copy on DMA engine 1 writes sbuf partition 0 bytes 0x4..0x7, which dma instruction 1 (dma_copy on "
            "DMA engine 0) wrote before, with no semaphore chain ordering the two (write-after-write hazard)");
}

TEST_F(AccessCheckerTest, ALaunchOrdersEverythingBeforeIt) {
  EXPECT_FALSE(hazards_.access(vec_, sbuf_, 16, true));
  hazards_.on_launch();
  EXPECT_FALSE(hazards_.access(act_, sbuf_, 16, true));
}

TEST_F(AccessCheckerTest, HbmAndOtherQueuesOwnAccessesAreNeverHazards) {
  EXPECT_FALSE(hazards_.access(vec_, regs::HBM_BASE, 64, true));
  EXPECT_FALSE(hazards_.access(act_, regs::HBM_BASE, 64, true));
  EXPECT_FALSE(hazards_.access(vec_, sbuf_, 8, true));
  EXPECT_FALSE(hazards_.access(queue_actor(kVec, 4, isa::Opcode::kTensorCopy), sbuf_, 8, true));
}

TEST_F(AccessCheckerTest, ReadingNeverWrittenBytesNamesTheFirstUnwrittenRunInItsPartition) {
  const uint32_t pb = config_.sbuf_partition_bytes;
  EXPECT_FALSE(uninit_.access(vec_, sbuf_ + pb * 3 + 0x10, 0x20, true));
  EXPECT_FALSE(uninit_.access(act_, sbuf_ + pb * 3 + 0x10, 0x20, false));
  const auto f = uninit_.access(act_, sbuf_ + pb * 3 + 0x10, 0x40, false);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, regs::ERR_UNINIT_READ);
  EXPECT_EQ(f->detail, "activation reads sbuf partition 3 bytes 0x30..0x4f, which no engine has written (fresh "
                       "SBUF/PSUM holds NaN in checked mode)");
  // What was written stays written across launches; HBM is not tracked.
  uninit_.on_launch();
  EXPECT_FALSE(uninit_.access(te_, sbuf_ + pb * 3 + 0x10, 0x20, false));
  EXPECT_FALSE(uninit_.access(te_, regs::HBM_BASE + 0x1000, 0x20, false));
  EXPECT_TRUE(uninit_.access(te_, psum_, 4, false));
}

}  // namespace
}  // namespace trnsim::model
