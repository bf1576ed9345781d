// A mock trnsim device for driver unit tests: a register file with the map's side effects (soft reset, RW1C
// INT_STATUS, doorbell), a sparse byte memory over the mapped spaces, a log of every access, and a script that says
// how a run ends (done, an error, or never).
//
// It executes no instructions: a doorbell only arms the scripted Outcome, which wait_interrupt() applies when the
// outcome's cycle count fits in the wait. Memory outside HBM/SBUF/PSUM throws std::out_of_range like the real
// backends (device.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware/driver/device.h"
#include "firmware/driver/driver.h"
#include "spec/trn_regs.h"

namespace trnsim::test {

/// The tiny configuration's figures (BRIEF section 2) as the mock reports them by default.
inline driver::DeviceInfo mock_tiny_info() {
  driver::DeviceInfo i;
  i.te_rows = 16;
  i.te_cols = 16;
  i.sbuf_partitions = 16;
  i.sbuf_partition_bytes = 192 * 1024;
  i.psum_partitions = 16;
  i.psum_partition_bytes = 16 * 1024;
  i.psum_banks = 8;
  i.hbm_bytes = 1ull << 30;
  i.num_queues = isa::kNumQueues;
  i.num_semaphores = 32;
  i.num_dma_engines = 16;
  i.te_clock_mhz = 2400;
  i.act_clock_mhz = 1200;
  i.dma_latency_ns = 1300;
  i.dma_bytes_per_ns = 23.0;
  i.vec_clock_mhz = 960;
  i.vec_elems_per_cycle = i.vec_elems_per_cycle_16 = 16;  // one element per lane, as tiny
  i.config_name = "tiny";
  i.te_backend = "tlm";
  return i;
}

class MockDevice final : public driver::Device {
 public:
  /// One recorded access.
  struct Access {
    enum Kind { kReadReg, kWriteReg, kReadMem, kWriteMem, kWait } kind;
    uint64_t addr = 0;   ///< register offset or device address
    uint64_t value = 0;  ///< register value, memory byte count, or max_cycles of a wait
  };

  /// How the run started by the next doorbell ends.
  struct Outcome {
    enum Kind { kDone, kError, kHang } kind = kDone;
    uint64_t cycles = 1000;  ///< cycle counter when it ends (kHang: never ends)
    uint32_t err_code = 0, err_queue = 0, err_index = 0, err_info = 0;  ///< kError: the ERR_ registers
    std::map<uint32_t, uint32_t> pc;  ///< kHang/kError: Q_PC per queue (default 0); kDone: Q_LEN
    std::map<uint32_t, uint32_t> state;  ///< kHang: Q_STATE per queue (default waiting)
  };

  explicit MockDevice(const driver::DeviceInfo& info = mock_tiny_info()) : info_(info) {
    regs_[regs::ID] = regs::kIdValue;
    regs_[regs::VERSION] = regs::VERSION_RESET;
    regs_[regs::TE_DIM] = (info.te_rows << regs::TE_DIM_ROWS_SHIFT) | (info.te_cols << regs::TE_DIM_COLS_SHIFT);
    regs_[regs::SBUF_PARTITIONS] = info.sbuf_partitions;
    regs_[regs::SBUF_PARTITION_BYTES] = info.sbuf_partition_bytes;
    regs_[regs::PSUM_PARTITIONS] = info.psum_partitions;
    regs_[regs::PSUM_PARTITION_BYTES] = info.psum_partition_bytes;
    regs_[regs::PSUM_BANKS] = info.psum_banks;
    regs_[regs::HBM_BYTES_LO] = static_cast<uint32_t>(info.hbm_bytes);
    regs_[regs::HBM_BYTES_HI] = static_cast<uint32_t>(info.hbm_bytes >> 32);
    regs_[regs::NUM_QUEUES] = info.num_queues;
    regs_[regs::NUM_SEMAPHORES] = info.num_semaphores;
    regs_[regs::NUM_DMA_ENGINES] = info.num_dma_engines;
    regs_[regs::TE_CLOCK_MHZ] = info.te_clock_mhz;
    regs_[regs::ACT_CLOCK_MHZ] = info.act_clock_mhz;
    regs_[regs::VEC_CLOCK_MHZ] = info.vec_clock_mhz;
    regs_[regs::VEC_WIDTH] = (info.vec_elems_per_cycle << regs::VEC_WIDTH_ELEMS_SHIFT) |
                             (info.vec_elems_per_cycle_16 << regs::VEC_WIDTH_ELEMS_16_SHIFT);
    regs_[regs::DMA_LATENCY_NS] = uint32_t(info.dma_latency_ns);
    regs_[regs::DMA_BW_MBPS] = uint32_t(info.dma_bytes_per_ns * 1000.0 + 0.5);
    for (uint32_t w = 0; w < regs::SIM_CONFIG_COUNT; ++w) {  // the name, 4 ASCII bytes per register
      uint32_t v = 0;
      for (uint32_t b = 0; b < 4 && 4 * w + b < info.config_name.size(); ++b) {
        v |= uint32_t(uint8_t(info.config_name[4 * w + b])) << (8 * b);
      }
      regs_[regs::sim_config_reg(w)] = v;
    }
    regs_[regs::WATCHDOG_CYCLES] = regs::WATCHDOG_CYCLES_RESET;
    regs_[regs::TORUS] = 1u << regs::TORUS_X_SHIFT;  // a chip on its own
    regs_[regs::PODS] = 1;                            // one torus
    regs_[regs::CHIP_CORES] = info.cores;             // CORE_ID reads 0: the mock is core 0
  }

  // ---- scripting and inspection

  /// The outcome of every later doorbell.
  Outcome outcome;
  /// Called before each register read; a value it returns replaces the register's (e.g. a ticking counter).
  std::function<std::optional<uint32_t>(uint32_t offset)> read_hook;
  /// Every access in order.
  std::vector<Access> log;

  /// Sets a register directly (no side effects, not logged).
  void poke(uint32_t offset, uint32_t value) { regs_[offset] = value; }
  /// Reads a register directly (no side effects, not logged).
  uint32_t peek(uint32_t offset) const {
    auto it = regs_.find(offset);
    return it == regs_.end() ? 0 : it->second;
  }
  /// Reads device memory directly (not logged); unwritten bytes read 0.
  std::vector<uint8_t> peek_mem(uint64_t addr, std::size_t bytes) const {
    std::vector<uint8_t> out(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
      auto it = mem_.find(addr + i);
      out[i] = it == mem_.end() ? 0 : it->second;
    }
    return out;
  }
  /// Number of doorbell writes so far.
  int doorbells() const { return doorbells_; }
  /// The register writes of the log, in order, as (offset, value).
  std::vector<std::pair<uint32_t, uint32_t>> reg_writes() const {
    std::vector<std::pair<uint32_t, uint32_t>> w;
    for (const auto& a : log) {
      if (a.kind == Access::kWriteReg) w.emplace_back(static_cast<uint32_t>(a.addr), static_cast<uint32_t>(a.value));
    }
    return w;
  }

  // ---- Device

  uint32_t read_reg(uint32_t offset) override {
    uint32_t v = peek(offset);
    if (offset == regs::CTRL || offset == regs::DOORBELL) v = 0;  // self-clearing / write-only
    if (read_hook) {
      if (auto r = read_hook(offset)) v = *r;
    }
    log.push_back({Access::kReadReg, offset, v});
    return v;
  }

  void write_reg(uint32_t offset, uint32_t value) override {
    log.push_back({Access::kWriteReg, offset, value});
    if (offset == regs::CTRL) {
      if (value & regs::CTRL_SOFT_RESET_MASK) soft_reset();
      return;
    }
    if (offset == regs::INT_STATUS) {
      regs_[offset] &= ~value;  // RW1C
      return;
    }
    if (offset == regs::DOORBELL) {
      ++doorbells_;
      armed_ = value & regs::DOORBELL_QUEUES_MASK;
      regs_[regs::STATUS] = regs::STATUS_BUSY_MASK;
      for (uint32_t q = 0; q < info_.num_queues; ++q) {
        if (armed_ & (1u << q)) regs_[regs::queue_reg(q, regs::Q_STATE)] = regs::QSTATE_RUNNING;
      }
      return;
    }
    if (is_read_only(offset)) return;
    regs_[offset] = value;
  }

  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override {
    check(device_addr, bytes);
    log.push_back({Access::kWriteMem, device_addr, bytes});
    const auto* p = static_cast<const uint8_t*>(data);
    for (std::size_t i = 0; i < bytes; ++i) mem_[device_addr + i] = p[i];
  }

  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override {
    check(device_addr, bytes);
    log.push_back({Access::kReadMem, device_addr, bytes});
    const auto v = peek_mem(device_addr, bytes);
    if (bytes != 0) std::memcpy(data, v.data(), bytes);
  }

  bool wait_interrupt(uint64_t max_cycles) override {
    log.push_back({Access::kWait, 0, max_cycles});
    if (armed_ != 0) {
      if (outcome.kind != Outcome::kHang && outcome.cycles <= cycles() + max_cycles) {
        finish();
      } else {
        set_cycles(cycles() + max_cycles);
        for (uint32_t q = 0; q < info_.num_queues; ++q) {
          if (!(armed_ & (1u << q))) continue;
          regs_[regs::queue_reg(q, regs::Q_PC)] = value_or(outcome.pc, q, 0);
          regs_[regs::queue_reg(q, regs::Q_STATE)] = value_or(outcome.state, q, regs::QSTATE_WAITING);
        }
      }
    }
    return (peek(regs::INT_STATUS) & peek(regs::INT_ENABLE)) != 0;
  }

 private:
  static uint32_t value_or(const std::map<uint32_t, uint32_t>& m, uint32_t k, uint32_t d) {
    auto it = m.find(k);
    return it == m.end() ? d : it->second;
  }

  static bool is_read_only(uint32_t offset) {
    if (offset < regs::CTRL) return true;  // ID .. VEC_CLOCK_MHZ
    if (offset >= regs::UPTIME_LO && offset < regs::QUEUE_BASE) return true;  // counters, ERR_DETAIL_LEN, SIM_*
    switch (offset) {
      case regs::STATUS: case regs::ERR_CODE: case regs::ERR_QUEUE: case regs::ERR_INDEX: case regs::ERR_INFO:
      case regs::CYCLE_LO: case regs::CYCLE_HI:
        return true;
      default:
        break;
    }
    if (offset >= regs::SEM_BASE) return true;
    if (offset >= regs::QUEUE_BASE) {
      const uint32_t rel = (offset - regs::QUEUE_BASE) % regs::QUEUE_STRIDE;
      return rel == regs::Q_PC || rel == regs::Q_STATE || rel == regs::Q_RETIRED;
    }
    return false;
  }

  uint64_t cycles() const { return (uint64_t(peek(regs::CYCLE_HI)) << 32) | peek(regs::CYCLE_LO); }
  void set_cycles(uint64_t c) {
    regs_[regs::CYCLE_LO] = static_cast<uint32_t>(c);
    regs_[regs::CYCLE_HI] = static_cast<uint32_t>(c >> 32);
  }

  void soft_reset() {
    for (uint32_t r : {regs::STATUS, regs::ERR_CODE, regs::ERR_QUEUE, regs::ERR_INDEX, regs::ERR_INFO,
                       regs::INT_STATUS, regs::CYCLE_LO, regs::CYCLE_HI}) {
      regs_[r] = 0;
    }
    for (uint32_t q = 0; q < regs::QUEUE_SLOTS; ++q) {
      for (uint32_t rel : {regs::Q_PC, regs::Q_STATE, regs::Q_RETIRED}) regs_[regs::queue_reg(q, rel)] = 0;
    }
    for (uint32_t s = 0; s < regs::SEM_COUNT; ++s) regs_[regs::sem_reg(s)] = 0;
    armed_ = 0;
  }

  void finish() {
    set_cycles(outcome.cycles);
    if (outcome.kind == Outcome::kDone) {
      for (uint32_t q = 0; q < info_.num_queues; ++q) {
        if (!(armed_ & (1u << q))) continue;
        const uint32_t len = peek(regs::queue_reg(q, regs::Q_LEN));
        regs_[regs::queue_reg(q, regs::Q_PC)] = len;
        regs_[regs::queue_reg(q, regs::Q_RETIRED)] = len;
        regs_[regs::queue_reg(q, regs::Q_STATE)] = regs::QSTATE_HALTED;
      }
      regs_[regs::STATUS] = regs::STATUS_DONE_MASK;
      regs_[regs::INT_STATUS] |= regs::INT_STATUS_DONE_MASK;
    } else {
      regs_[regs::ERR_CODE] = outcome.err_code;
      regs_[regs::ERR_QUEUE] = outcome.err_queue;
      regs_[regs::ERR_INDEX] = outcome.err_index;
      regs_[regs::ERR_INFO] = outcome.err_info;
      regs_[regs::queue_reg(outcome.err_queue, regs::Q_STATE)] = regs::QSTATE_ERROR;
      regs_[regs::queue_reg(outcome.err_queue, regs::Q_PC)] = outcome.err_index;
      regs_[regs::STATUS] = regs::STATUS_ERROR_MASK;
      regs_[regs::INT_STATUS] |= regs::INT_STATUS_ERROR_MASK;
    }
    armed_ = 0;
  }

  void check(uint64_t addr, std::size_t bytes) const {
    const struct {
      uint64_t base, size;
    } spaces[] = {
        {regs::SBUF_BASE, uint64_t(info_.sbuf_partitions) * info_.sbuf_partition_bytes},
        {regs::PSUM_BASE, uint64_t(info_.psum_partitions) * info_.psum_partition_bytes},
        {regs::HBM_BASE, info_.hbm_bytes},
    };
    for (const auto& s : spaces) {
      if (addr >= s.base && addr - s.base <= s.size && bytes <= s.size - (addr - s.base)) return;
    }
    throw std::out_of_range("mock device: unmapped device address range at " + std::to_string(addr));
  }

  driver::DeviceInfo info_;
  std::map<uint32_t, uint32_t> regs_;
  std::map<uint64_t, uint8_t> mem_;  // sparse, byte-wise: tests move kilobytes, not gigabytes
  uint32_t armed_ = 0;
  int doorbells_ = 0;
};

}  // namespace trnsim::test
