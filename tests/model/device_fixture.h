// One in-process device per test process (SystemC elaborates once), shared by every test of the binary; each test
// gets a fresh Driver and a soft-reset device.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/device/sim_device.h"
#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "model/config/chip_config.h"
#include "spec/trn_regs.h"

namespace trnsim::test {

/// The process's device: config TRNSIM_TEST_CONFIG (compile definition; default "tiny"), TE datapath from
/// TRNSIM_TEST_TE_MODE (compile definition; default tlm).
inline cosim::SimDevice& shared_device() {
#ifndef TRNSIM_TEST_TE_MODE
#define TRNSIM_TEST_TE_MODE kTlm
#endif
#ifndef TRNSIM_TEST_CONFIG
#define TRNSIM_TEST_CONFIG "tiny"
#endif
  static const std::unique_ptr<cosim::SimDevice> dev = [] {
    cosim::SimDeviceOptions o;
    o.te = cosim::TeMode::TRNSIM_TEST_TE_MODE;
    return std::make_unique<cosim::SimDevice>(model::chip_config(TRNSIM_TEST_CONFIG), o);
  }();
  return *dev;
}

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = &shared_device();
    dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
    drv_ = std::make_unique<driver::Driver>(*dev_);
  }

  /// Writes raw 64-byte instruction images as queue q's program (bypassing the driver's encoder) and runs it.
  driver::RunResult run_raw(int q, const std::vector<std::array<uint8_t, isa::kInstrBytes>>& instrs,
                            uint64_t timeout_cycles = 1'000'000) {
    const uint64_t base = drv_->alloc(instrs.size() * isa::kInstrBytes);
    for (size_t i = 0; i < instrs.size(); ++i) {
      drv_->write_hbm(base + i * isa::kInstrBytes, instrs[i].data(), isa::kInstrBytes);
    }
    for (int other = 0; other < isa::kNumQueues; ++other) {
      dev_->write_reg(regs::queue_reg(other, regs::Q_LEN), 0);
    }
    dev_->write_reg(regs::queue_reg(q, regs::Q_BASE_LO), uint32_t(base));
    dev_->write_reg(regs::queue_reg(q, regs::Q_BASE_HI), uint32_t(base >> 32));
    dev_->write_reg(regs::queue_reg(q, regs::Q_LEN), uint32_t(instrs.size()));
    dev_->write_reg(regs::INT_ENABLE, regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK);
    dev_->write_reg(regs::DOORBELL, 1u << q);
    EXPECT_TRUE(dev_->wait_interrupt(timeout_cycles));
    driver::RunResult r;
    r.cycles = dev_->read_reg(regs::CYCLE_LO);
    return r;
  }

  cosim::SimDevice* dev_ = nullptr;
  std::unique_ptr<driver::Driver> drv_;
};

}  // namespace trnsim::test
