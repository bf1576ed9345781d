// The generated register header (spec/trn_regs.h, from spec/registers.json) against values written
// here by hand from the register specification: a typo in the json or a generator bug shows up as a mismatch.
#include "spec/trn_regs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string_view>

namespace r = trnsim::regs;

namespace {

// Compile-time use: the constants and helpers are constexpr.
static_assert(r::queue_reg(1, r::Q_PC) == 0x12C);
static_assert(r::sem_reg(31) == 0x27C);
static_assert(r::perf_reg(4, r::P_IDLE_LO) == 0x518);
static_assert(r::dmae_reg(2, r::DE_COPIES_HI) == 0x82C);
static_assert(r::err_detail_reg(63) == 0xCFC);
static_assert(r::err_code_name(r::ERR_DEADLOCK) == "deadlock");

TEST(Regs, IdentificationAndVersion) {
  EXPECT_EQ(r::ID, 0x000u);
  EXPECT_EQ(r::kIdValue, 0x54524E32u);
  EXPECT_EQ(r::ID_RESET, r::kIdValue);
  // "TRN2": 'T' in the most significant byte.
  EXPECT_EQ((r::kIdValue >> 24) & 0xFF, uint32_t{'T'});
  EXPECT_EQ(r::kIdValue & 0xFF, uint32_t{'2'});
  EXPECT_EQ(r::VERSION, 0x004u);
  EXPECT_EQ(r::VERSION_MODEL_MASK, 0x0000FFFFu);
  EXPECT_EQ(r::VERSION_ISA_SHIFT, 16u);
  EXPECT_EQ((r::VERSION_RESET & r::VERSION_MODEL_MASK) >> r::VERSION_MODEL_SHIFT, 6u);  // map version 6
  EXPECT_EQ((r::VERSION_RESET & r::VERSION_ISA_MASK) >> r::VERSION_ISA_SHIFT, 0u);
}

TEST(Regs, ConfigurationOffsets) {
  EXPECT_EQ(r::TE_DIM, 0x008u);
  EXPECT_EQ(r::TE_DIM_ROWS_SHIFT, 0u);
  EXPECT_EQ(r::TE_DIM_ROWS_MASK, 0x0000FFFFu);
  EXPECT_EQ(r::TE_DIM_COLS_SHIFT, 16u);
  EXPECT_EQ(r::TE_DIM_COLS_MASK, 0xFFFF0000u);
  EXPECT_EQ(r::SBUF_PARTITIONS, 0x00Cu);
  EXPECT_EQ(r::SBUF_PARTITION_BYTES, 0x010u);
  EXPECT_EQ(r::PSUM_PARTITIONS, 0x014u);
  EXPECT_EQ(r::PSUM_PARTITION_BYTES, 0x018u);
  EXPECT_EQ(r::PSUM_BANKS, 0x01Cu);
  EXPECT_EQ(r::HBM_BYTES_LO, 0x020u);
  EXPECT_EQ(r::HBM_BYTES_HI, 0x024u);
  EXPECT_EQ(r::NUM_QUEUES, 0x028u);
  EXPECT_EQ(r::NUM_SEMAPHORES, 0x02Cu);
  EXPECT_EQ(r::NUM_DMA_ENGINES, 0x030u);
  EXPECT_EQ(r::TE_CLOCK_MHZ, 0x034u);
  EXPECT_EQ(r::ACT_CLOCK_MHZ, 0x038u);
  EXPECT_EQ(r::VEC_CLOCK_MHZ, 0x03Cu);
  EXPECT_EQ(r::VEC_WIDTH, 0x090u);
  EXPECT_EQ(r::VEC_WIDTH_ELEMS_MASK, 0x0000FFFFu);
  EXPECT_EQ(r::VEC_WIDTH_ELEMS_16_SHIFT, 16u);
}

TEST(Regs, ControlAndStatus) {
  EXPECT_EQ(r::CTRL, 0x040u);
  EXPECT_EQ(r::CTRL_SOFT_RESET_MASK, 0x1u);
  EXPECT_EQ(r::CTRL_SOFT_RESET_SHIFT, 0u);
  EXPECT_EQ(r::CTRL_PERF_CLEAR_MASK, 0x2u);
  EXPECT_EQ(r::CTRL_PERF_CLEAR_SHIFT, 1u);
  EXPECT_EQ(r::CTRL_RESET, 0u);
  EXPECT_EQ(r::DOORBELL, 0x044u);
  EXPECT_EQ(r::DOORBELL_QUEUES_MASK, 0xFFu);
  EXPECT_EQ(r::STATUS, 0x048u);
  EXPECT_EQ(r::STATUS_BUSY_MASK, 0x1u);
  EXPECT_EQ(r::STATUS_DONE_MASK, 0x2u);
  EXPECT_EQ(r::STATUS_DONE_SHIFT, 1u);
  EXPECT_EQ(r::STATUS_ERROR_MASK, 0x4u);
  EXPECT_EQ(r::STATUS_ERROR_SHIFT, 2u);
  EXPECT_EQ(r::STATUS_RESET, 0u);
  EXPECT_EQ(r::ERR_CODE, 0x04Cu);
  EXPECT_EQ(r::ERR_QUEUE, 0x050u);
  EXPECT_EQ(r::ERR_INDEX, 0x054u);
  EXPECT_EQ(r::ERR_INFO, 0x058u);
  EXPECT_EQ(r::CYCLE_LO, 0x060u);
  EXPECT_EQ(r::CYCLE_HI, 0x064u);
  EXPECT_EQ(r::WATCHDOG_CYCLES, 0x068u);
  EXPECT_EQ(r::WATCHDOG_CYCLES_RESET, 10'000'000u);
  EXPECT_EQ(r::INT_STATUS, 0x070u);
  EXPECT_EQ(r::INT_ENABLE, 0x074u);
  EXPECT_EQ(r::INT_STATUS_DONE_MASK, 0x1u);
  EXPECT_EQ(r::INT_STATUS_ERROR_MASK, 0x2u);
  EXPECT_EQ(r::INT_ENABLE_DONE_MASK, r::INT_STATUS_DONE_MASK);
  EXPECT_EQ(r::INT_ENABLE_ERROR_MASK, r::INT_STATUS_ERROR_MASK);
  EXPECT_EQ(r::INT_ENABLE_RESET, 0u);
}

TEST(Regs, QueueBlocksAndSemaphores) {
  EXPECT_EQ(r::QUEUE_BASE, 0x100u);
  EXPECT_EQ(r::QUEUE_STRIDE, 0x20u);
  EXPECT_EQ(r::QUEUE_SLOTS, 8u);
  EXPECT_EQ(r::Q_BASE_LO, 0x00u);
  EXPECT_EQ(r::Q_BASE_HI, 0x04u);
  EXPECT_EQ(r::Q_LEN, 0x08u);
  EXPECT_EQ(r::Q_PC, 0x0Cu);
  EXPECT_EQ(r::Q_STATE, 0x10u);
  EXPECT_EQ(r::Q_RETIRED, 0x14u);
  EXPECT_EQ(r::queue_reg(0, r::Q_BASE_LO), 0x100u);
  EXPECT_EQ(r::queue_reg(1, r::Q_LEN), 0x128u);
  EXPECT_EQ(r::queue_reg(7, r::Q_RETIRED), 0x1F4u);
  EXPECT_EQ(r::SEM_BASE, 0x200u);
  EXPECT_EQ(r::SEM_COUNT, 32u);
  EXPECT_EQ(r::sem_reg(0), 0x200u);
  EXPECT_EQ(r::sem_reg(5), 0x214u);
  // The last queue block ends where the semaphores begin.
  EXPECT_LE(r::queue_reg(r::QUEUE_SLOTS, 0), r::SEM_BASE);
}

TEST(Regs, PerformanceCounters) {
  EXPECT_EQ(r::UPTIME_LO, 0x078u);
  EXPECT_EQ(r::UPTIME_HI, 0x07Cu);
  EXPECT_EQ(r::UPTIME_LO_RESET, 0u);
  EXPECT_EQ(r::UPTIME_HI_RESET, 0u);
  EXPECT_EQ(r::TE_MACS_LO, 0x080u);
  EXPECT_EQ(r::TE_MACS_HI, 0x084u);
  EXPECT_EQ(r::TE_BUSY_LO, 0x088u);
  EXPECT_EQ(r::TE_BUSY_HI, 0x08Cu);
  EXPECT_EQ(r::TE_MACS_LO_RESET, 0u);
  EXPECT_EQ(r::TE_BUSY_HI_RESET, 0u);

  // One PERF block per queue, same queue ids (and number of slots) as the queue blocks.
  EXPECT_EQ(r::PERF_BASE, 0x400u);
  EXPECT_EQ(r::PERF_STRIDE, 0x40u);
  EXPECT_EQ(r::PERF_SLOTS, 8u);
  EXPECT_EQ(r::PERF_SLOTS, r::QUEUE_SLOTS);
  EXPECT_EQ(r::P_BUSY_LO, 0x00u);
  EXPECT_EQ(r::P_BUSY_HI, 0x04u);
  EXPECT_EQ(r::P_SEM_WAIT_LO, 0x08u);
  EXPECT_EQ(r::P_SEM_WAIT_HI, 0x0Cu);
  EXPECT_EQ(r::P_DMA_WAIT_LO, 0x10u);
  EXPECT_EQ(r::P_DMA_WAIT_HI, 0x14u);
  EXPECT_EQ(r::P_IDLE_LO, 0x18u);
  EXPECT_EQ(r::P_IDLE_HI, 0x1Cu);
  EXPECT_EQ(r::P_RETIRED_LO, 0x20u);
  EXPECT_EQ(r::P_RETIRED_HI, 0x24u);
  EXPECT_EQ(r::P_BUSY_LO_RESET, 0u);
  EXPECT_EQ(r::P_RETIRED_HI_RESET, 0u);
  EXPECT_EQ(r::perf_reg(0, r::P_BUSY_LO), 0x400u);
  EXPECT_EQ(r::perf_reg(1, r::P_SEM_WAIT_HI), 0x44Cu);
  EXPECT_EQ(r::perf_reg(4, r::P_IDLE_LO), 0x518u);
  EXPECT_EQ(r::perf_reg(7, r::P_RETIRED_HI), 0x5E4u);

  // One DMAE block per DMA engine.
  EXPECT_EQ(r::DMAE_BASE, 0x800u);
  EXPECT_EQ(r::DMAE_STRIDE, 0x10u);
  EXPECT_EQ(r::DMAE_SLOTS, 32u);
  EXPECT_EQ(r::DE_BUSY_LO, 0x0u);
  EXPECT_EQ(r::DE_BUSY_HI, 0x4u);
  EXPECT_EQ(r::DE_COPIES_LO, 0x8u);
  EXPECT_EQ(r::DE_COPIES_HI, 0xCu);
  EXPECT_EQ(r::DE_BUSY_LO_RESET, 0u);
  EXPECT_EQ(r::DE_COPIES_HI_RESET, 0u);
  EXPECT_EQ(r::dmae_reg(0, r::DE_BUSY_LO), 0x800u);
  EXPECT_EQ(r::dmae_reg(3, r::DE_COPIES_LO), 0x838u);
  EXPECT_EQ(r::dmae_reg(31, r::DE_COPIES_HI), 0x9FCu);

  // The blocks do not run into each other or into the error detail text.
  EXPECT_LE(r::sem_reg(r::SEM_COUNT), r::PERF_BASE);
  EXPECT_LE(r::perf_reg(r::PERF_SLOTS, 0), r::DMAE_BASE);
  EXPECT_LE(r::dmae_reg(r::DMAE_SLOTS, 0), r::ERR_DETAIL_BASE);
}

TEST(Regs, ErrorDetail) {
  EXPECT_EQ(r::ERR_DETAIL_LEN, 0x098u);
  EXPECT_EQ(r::ERR_DETAIL_LEN_RESET, 0u);
  EXPECT_EQ(r::ERR_DETAIL_BASE, 0xC00u);
  EXPECT_EQ(r::ERR_DETAIL_STRIDE, 4u);
  EXPECT_EQ(r::ERR_DETAIL_COUNT, 64u);
  EXPECT_EQ(r::ERR_DETAIL_RESET, 0u);
  EXPECT_EQ(r::err_detail_reg(0), 0xC00u);
  EXPECT_EQ(r::err_detail_reg(1), 0xC04u);
  EXPECT_EQ(r::err_detail_reg(63), 0xCFCu);
  // 64 registers of 4 bytes hold the 256 bytes ERR_DETAIL_LEN can announce.
  EXPECT_EQ(r::ERR_DETAIL_COUNT * r::kRegBytes, 256u);
}

TEST(Regs, AddressMap) {
  EXPECT_EQ(r::MMIO_BASE, 0x0ull);
  EXPECT_EQ(r::MMIO_SIZE, 1024ull * 1024);
  // Every core's register block, then the chip's, inside the map; core 0's registers inside its block; the cores'
  // SBUF and PSUM windows between their bases.
  EXPECT_EQ(r::CHIP_BASE, r::MAX_CORES * r::CORE_STRIDE);
  EXPECT_LT(r::HBM_BW_MBPS, r::MMIO_SIZE);
  EXPECT_GE(r::CHIP_CORES, r::CHIP_BASE);
  EXPECT_LE(r::PCIE_WIN_HI + r::kRegBytes, r::CORE_STRIDE);
  EXPECT_LE(r::SBUF_BASE + uint64_t{r::MAX_CORES} * r::CORE_MEM_STRIDE, r::PSUM_BASE);
  EXPECT_EQ(r::PCI_BAR_MMIO_BYTES, r::MMIO_SIZE);
  EXPECT_EQ(r::SBUF_BASE, 0x1'0000'0000ull);
  EXPECT_EQ(r::PSUM_BASE, 0x2'0000'0000ull);
  EXPECT_EQ(r::HBM_BASE, 0x100'0000'0000ull);
  EXPECT_LE(r::sem_reg(r::SEM_COUNT), r::CORE_STRIDE);
  EXPECT_LE(r::err_detail_reg(r::ERR_DETAIL_COUNT), r::CORE_STRIDE);
}

TEST(Regs, ErrorCodes) {
  EXPECT_EQ(r::ERR_NONE, 0u);
  EXPECT_EQ(r::ERR_BAD_OPCODE, 1u);
  EXPECT_EQ(r::ERR_RESERVED_NONZERO, 3u);
  EXPECT_EQ(r::ERR_TE_SHAPE, 8u);
  EXPECT_EQ(r::ERR_DEADLOCK, 10u);
  EXPECT_EQ(r::ERR_WATCHDOG, 12u);
  EXPECT_EQ(r::ERR_BAD_DOORBELL, 15u);
  EXPECT_EQ(r::err_code_name(0), "none");
  EXPECT_EQ(r::err_code_name(1), "bad_opcode");
  EXPECT_EQ(r::err_code_name(4), "wrong_engine");
  EXPECT_EQ(r::err_code_name(11), "no_halt");
  EXPECT_EQ(r::err_code_name(14), "engine_fault");
  EXPECT_EQ(r::err_code_name(15), "bad_doorbell");
  EXPECT_EQ(r::ERR_PARTITION_ALIGN, 16u);
  EXPECT_EQ(r::err_code_name(16), "partition_align");
  EXPECT_EQ(r::ERR_HAZARD, 17u);
  EXPECT_EQ(r::err_code_name(17), "hazard");
  EXPECT_EQ(r::ERR_UNINIT_READ, 18u);
  EXPECT_EQ(r::err_code_name(18), "uninit_read");
  EXPECT_EQ(r::ERR_CC_MISMATCH, 19u);
  EXPECT_EQ(r::err_code_name(19), "cc_mismatch");
  EXPECT_EQ(r::ERR_CC_PEER_STOPPED, 20u);
  EXPECT_EQ(r::err_code_name(20), "cc_peer_stopped");
  EXPECT_EQ(r::ERR_CC_DEADLOCK, 21u);
  EXPECT_EQ(r::err_code_name(21), "cc_deadlock");
  EXPECT_EQ(r::ERR_CC_UNSUPPORTED, 22u);
  EXPECT_EQ(r::err_code_name(22), "cc_unsupported");
  EXPECT_EQ(r::ERR_HOST_ACCESS, 23u);
  EXPECT_EQ(r::err_code_name(23), "host_access");
  EXPECT_EQ(r::err_code_name(24), "unknown");
  EXPECT_EQ(r::err_code_name(0xFFFFFFFFu), "unknown");
  EXPECT_EQ(r::err_code_text(9), "multiply_moving before any load_stationary");
  EXPECT_EQ(r::err_code_text(99), "unknown");
  // Every code 0..23 has its own name and a description.
  std::set<std::string_view> names;
  for (uint32_t c = 0; c <= 23; ++c) {
    EXPECT_NE(r::err_code_name(c), "unknown") << c;
    EXPECT_NE(r::err_code_text(c), "unknown") << c;
    EXPECT_FALSE(r::err_code_text(c).empty()) << c;
    names.insert(r::err_code_name(c));
  }
  EXPECT_EQ(names.size(), 24u);
}

TEST(Regs, QueueStates) {
  EXPECT_EQ(r::QSTATE_IDLE, 0u);
  EXPECT_EQ(r::QSTATE_RUNNING, 1u);
  EXPECT_EQ(r::QSTATE_WAITING, 2u);
  EXPECT_EQ(r::QSTATE_HALTED, 3u);
  EXPECT_EQ(r::QSTATE_ERROR, 4u);
  EXPECT_EQ(r::queue_state_name(2), "waiting");
  EXPECT_EQ(r::queue_state_name(5), "unknown");
}

}  // namespace
