#include "model/core/core_control.h"

#include <algorithm>
#include <cstring>

#include "model/core/access_checker.h"
#include "model/core/engine_observer.h"

namespace trnsim::model {

using namespace sc_core;

namespace {
// One TE clock period at the configured frequency, on SystemC's 1 ps time grid (2.4 GHz -> 417 ps).
sc_time te_cycle(const ChipConfig& c) { return sc_time(1.0e6 / c.te_clock_mhz, SC_PS); }
/// Bytes at..at+3 of `text` as a little-endian register word, zero past its end (ERR_DETAIL, SIM_CONFIG).
uint32_t ascii_word(const std::string& text, size_t at) {
  uint32_t v = 0;
  for (size_t b = 0; b < 4 && at + b < text.size(); ++b) v |= uint32_t(uint8_t(text[at + b])) << (8 * b);
  return v;
}
}  // namespace

CoreControl::CoreControl(const sc_module_name& name, const ChipConfig& config)
    : sc_module(name), socket("socket"), config_(config), cycle_(te_cycle(config)) {
  socket.register_b_transport(this, &CoreControl::b_transport);
  socket.register_transport_dbg(this, &CoreControl::transport_dbg);
  SC_THREAD(watchdog_thread);
}

CoreControl::~CoreControl() = default;

void CoreControl::enable_checks(bool hazards, bool uninit) {
  checker_ = (hazards || uninit) ? std::make_unique<AccessChecker>(config_, AccessChecker::Options{hazards, uninit})
                                 : nullptr;
}

uint64_t CoreControl::cycles() const {
  return static_cast<uint64_t>(((run_ended_ ? run_end_ : sc_time_stamp()) - cycle_origin_) / cycle_);
}

CoreControl::PerfCounters CoreControl::perf_now() const {
  PerfCounters now = perf_source_ ? perf_source_() : PerfCounters{};
  now.dma.resize(config_.num_dma_engines);
  PerfCounters d = now;  // since the last PERF_CLEAR
  for (size_t q = 0; q < d.queues.size(); ++q) {
    const auto& o = perf_origin_.queues[q];
    d.queues[q] = {now.queues[q].busy - o.busy, now.queues[q].sem_wait - o.sem_wait,
                   now.queues[q].dma_wait - o.dma_wait, now.queues[q].retired - o.retired};
  }
  for (size_t e = 0; e < d.dma.size() && e < perf_origin_.dma.size(); ++e) {
    d.dma[e] = {now.dma[e].busy - perf_origin_.dma[e].busy, now.dma[e].copies - perf_origin_.dma[e].copies};
  }
  d.te_macs = now.te_macs - perf_origin_.te_macs;
  d.te_busy = now.te_busy - perf_origin_.te_busy;
  return d;
}

std::optional<uint32_t> CoreControl::read_perf(uint32_t offset) const {
  // Every 64-bit counter has its LO word at a multiple of 8 and its HI word 4 bytes above it.
  const bool hi = offset & 4;
  const auto half = [hi](uint64_t v) { return uint32_t(hi ? v >> 32 : v); };
  const uint64_t uptime = to_cycles(sc_time_stamp() - uptime_origin_);
  if (offset >= regs::PERF_BASE && offset < regs::PERF_BASE + isa::kNumQueues * regs::PERF_STRIDE) {
    const uint32_t q = (offset - regs::PERF_BASE) / regs::PERF_STRIDE;
    const uint32_t rel = (offset - regs::PERF_BASE) % regs::PERF_STRIDE;
    const PerfCounters::Queue u = perf_now().queues[q];
    const uint64_t busy = to_cycles(u.busy), sem = to_cycles(u.sem_wait), dma = to_cycles(u.dma_wait);
    const uint64_t used = busy + sem + dma;
    switch (rel & ~4u) {
      case regs::P_BUSY_LO: return half(busy);
      case regs::P_SEM_WAIT_LO: return half(sem);
      case regs::P_DMA_WAIT_LO: return half(dma);
      case regs::P_IDLE_LO: return half(uptime > used ? uptime - used : 0);
      case regs::P_RETIRED_LO: return half(u.retired);
      default: return 0;
    }
  }
  if (offset >= regs::DMAE_BASE && offset < regs::DMAE_BASE + config_.num_dma_engines * regs::DMAE_STRIDE) {
    const uint32_t e = (offset - regs::DMAE_BASE) / regs::DMAE_STRIDE;
    const uint32_t rel = (offset - regs::DMAE_BASE) % regs::DMAE_STRIDE;
    const PerfCounters::DmaEngine u = perf_now().dma[e];
    switch (rel & ~4u) {
      case regs::DE_BUSY_LO: return half(to_cycles(u.busy));
      case regs::DE_COPIES_LO: return half(u.copies);
      default: return 0;
    }
  }
  if (offset >= regs::LINK_BASE && offset < regs::LINK_BASE + kLinksPerChip * regs::LINK_STRIDE) {
    const CcLinkCounters& l = links_[(offset - regs::LINK_BASE) / regs::LINK_STRIDE];
    switch ((offset - regs::LINK_BASE) % regs::LINK_STRIDE & ~4u) {
      case regs::L_BUSY_LO: return half(to_cycles(l.busy));
      case regs::L_BYTES_LO: return half(l.bytes);
      case regs::L_FLITS_LO: return half(l.flits);
      default: return 0;
    }
  }
  switch (offset) {
    case regs::CC_OPS_LO: case regs::CC_OPS_HI: return half(cc_.ops);
    case regs::CC_CYCLES_LO: case regs::CC_CYCLES_HI: return half(to_cycles(cc_.time));
    case regs::CC_MESSAGES_LO: case regs::CC_MESSAGES_HI: return half(cc_.messages);
    case regs::CC_BYTES_LO: case regs::CC_BYTES_HI: return half(cc_.bytes);
    case regs::CC_LAST_STEPS: return cc_.last_steps;
    case regs::NET_CYCLES_LO: case regs::NET_CYCLES_HI: return half(cc_.net_cycles);
    case regs::NET_PACKETS_LO: case regs::NET_PACKETS_HI: return half(cc_.net_packets);
    case regs::NET_FLITS_LO: case regs::NET_FLITS_HI: return half(cc_.net_flits);
    case regs::NET_LATENCY_SUM_LO: case regs::NET_LATENCY_SUM_HI: return half(cc_.net_latency_sum);
    case regs::NET_LATENCY_MAX: return uint32_t(std::min<uint64_t>(cc_.net_latency_max, UINT32_MAX));
    case regs::NET_REPLAYS: return uint32_t(std::min<uint64_t>(cc_.net_replays, UINT32_MAX));
    case regs::NET_CRC_ERRORS: return uint32_t(std::min<uint64_t>(cc_.net_crc_errors, UINT32_MAX));
    case regs::UPTIME_LO: case regs::UPTIME_HI: return half(uptime);
    case regs::TE_MACS_LO: case regs::TE_MACS_HI: return half(perf_now().te_macs);
    case regs::TE_BUSY_LO: case regs::TE_BUSY_HI: return half(perf_now().te_busy);
    default: return std::nullopt;
  }
}

uint32_t CoreControl::read_reg(uint32_t offset) const {
  const ChipConfig& c = config_;
  if (auto v = read_perf(offset)) return *v;
  if (offset >= regs::SIM_CONFIG_BASE && offset < regs::SIM_CONFIG_BASE + 4 * regs::SIM_CONFIG_COUNT) {
    return ascii_word(c.name, offset - regs::SIM_CONFIG_BASE);
  }
  if (offset >= regs::LINK_BW_MBPS_BASE && offset < regs::LINK_BW_MBPS_BASE + 4 * regs::LINK_BW_MBPS_COUNT) {
    return place_.link_mbps[(offset - regs::LINK_BW_MBPS_BASE) / 4];
  }
  if (offset >= regs::ERR_DETAIL_BASE && offset < regs::ERR_DETAIL_BASE + 4 * regs::ERR_DETAIL_COUNT) {
    return ascii_word(fault_detail_, offset - regs::ERR_DETAIL_BASE);
  }
  if (offset >= regs::QUEUE_BASE && offset < regs::QUEUE_BASE + isa::kNumQueues * regs::QUEUE_STRIDE) {
    const Queue& q = queues_[(offset - regs::QUEUE_BASE) / regs::QUEUE_STRIDE];
    switch ((offset - regs::QUEUE_BASE) % regs::QUEUE_STRIDE) {
      case regs::Q_BASE_LO: return uint32_t(q.base);
      case regs::Q_BASE_HI: return uint32_t(q.base >> 32);
      case regs::Q_LEN: return q.len;
      case regs::Q_PC: return q.pc;
      case regs::Q_STATE: return q.state;
      case regs::Q_RETIRED: return q.retired;
      default: return 0;
    }
  }
  if (offset >= regs::SEM_BASE && offset < regs::SEM_BASE + 4 * isa::kNumSemaphores) {
    return sems_[(offset - regs::SEM_BASE) / 4];
  }
  switch (offset) {
    case regs::ID: return regs::kIdValue;
    case regs::VERSION: return regs::VERSION_RESET;
    case regs::TE_DIM:
      return (uint32_t(c.te_rows) << regs::TE_DIM_ROWS_SHIFT) | (uint32_t(c.te_cols) << regs::TE_DIM_COLS_SHIFT);
    case regs::SBUF_PARTITIONS: return uint32_t(c.sbuf_partitions);
    case regs::SBUF_PARTITION_BYTES: return c.sbuf_partition_bytes;
    case regs::PSUM_PARTITIONS: return uint32_t(c.psum_partitions);
    case regs::PSUM_PARTITION_BYTES: return c.psum_partition_bytes;
    case regs::PSUM_BANKS: return uint32_t(c.psum_banks);
    case regs::HBM_BYTES_LO: return uint32_t(c.hbm_bytes);
    case regs::HBM_BYTES_HI: return uint32_t(c.hbm_bytes >> 32);
    case regs::NUM_QUEUES: return isa::kNumQueues;
    case regs::NUM_SEMAPHORES: return isa::kNumSemaphores;
    case regs::NUM_DMA_ENGINES: return uint32_t(c.num_dma_engines);
    case regs::TE_CLOCK_MHZ: return c.te_clock_mhz;
    case regs::ACT_CLOCK_MHZ: return c.scalar_clock_mhz;
    case regs::VEC_CLOCK_MHZ: return c.vector_clock_mhz;
    case regs::VEC_WIDTH:
      return (c.vector_elems_per_cycle << regs::VEC_WIDTH_ELEMS_SHIFT) |
             (c.vector_elems_per_cycle_16 << regs::VEC_WIDTH_ELEMS_16_SHIFT);
    case regs::SIM_TE_BACKEND: return te_backend_;
    case regs::CHIP_ID: return place_.chip;
    case regs::CORE_ID: return uint32_t(core_index_);
    case regs::TORUS:
      return (place_.torus[0] << regs::TORUS_X_SHIFT) | (place_.torus[1] << regs::TORUS_Y_SHIFT) |
             (place_.torus[2] << regs::TORUS_Z_SHIFT);
    case regs::HOP_LATENCY_NS: return place_.hop_latency_ns;
    case regs::PODS: return place_.pods;
    case regs::EFA_BW_MBPS: return place_.efa_mbps;
    case regs::EFA_LATENCY_NS: return place_.efa_latency_ns;
    case regs::DMA_LATENCY_NS: return uint32_t(c.dma_latency_ns + 0.5);
    case regs::DMA_BW_MBPS: return uint32_t(c.dma_bytes_per_ns * 1000.0 + 0.5);
    case regs::ERR_DETAIL_LEN: return uint32_t(std::min<size_t>(fault_detail_.size(), 4 * regs::ERR_DETAIL_COUNT));
    case regs::STATUS: return status_;
    case regs::ERR_CODE: return err_code_;
    case regs::ERR_QUEUE: return err_queue_;
    case regs::ERR_INDEX: return err_index_;
    case regs::ERR_INFO: return err_info_;
    case regs::CYCLE_LO: return uint32_t(cycles());
    case regs::CYCLE_HI: return uint32_t(cycles() >> 32);
    case regs::WATCHDOG_CYCLES: return watchdog_cycles_;
    case regs::SR_SEED: return sr_seed_;
    case regs::INT_STATUS: return int_status_;
    case regs::INT_ENABLE: return int_enable_;
    default: return 0;  // CTRL and DOORBELL read as 0, unmapped offsets too
  }
}

void CoreControl::write_reg(uint32_t offset, uint32_t value) {
  if (offset >= regs::QUEUE_BASE && offset < regs::QUEUE_BASE + isa::kNumQueues * regs::QUEUE_STRIDE) {
    Queue& q = queues_[(offset - regs::QUEUE_BASE) / regs::QUEUE_STRIDE];
    switch ((offset - regs::QUEUE_BASE) % regs::QUEUE_STRIDE) {
      case regs::Q_BASE_LO: q.base = (q.base & ~0xFFFFFFFFull) | value; break;
      case regs::Q_BASE_HI: q.base = (q.base & 0xFFFFFFFFull) | (uint64_t(value) << 32); break;
      case regs::Q_LEN: q.len = value; break;
      default: break;  // read-only
    }
    return;
  }
  switch (offset) {
    case regs::CTRL:
      if (value & regs::CTRL_SOFT_RESET_MASK) soft_reset();
      if (value & regs::CTRL_PERF_CLEAR_MASK) {
        perf_origin_ = perf_source_ ? perf_source_() : PerfCounters{};
        cc_ = {};
        links_ = {};
        uptime_origin_ = sc_time_stamp();
      }
      break;
    case regs::DOORBELL: doorbell(value); break;
    case regs::WATCHDOG_CYCLES: watchdog_cycles_ = value; break;
    case regs::SR_SEED: sr_seed_ = value; break;
    case regs::INT_STATUS: int_status_ &= ~value; break;  // RW1C
    case regs::INT_ENABLE:
      int_enable_ = value & (regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK);
      if (irq() && irq_callback_) irq_callback_();
      break;
    default: break;  // read-only or unmapped: ignored
  }
}

void CoreControl::soft_reset() {
  ++epoch_;
  for (Queue& q : queues_) {
    q.pc = 0;
    q.state = regs::QSTATE_IDLE;
    q.retired = 0;
    q.wait_sem = -1;
  }
  sems_.fill(0);
  status_ = 0;
  err_code_ = err_queue_ = err_index_ = err_info_ = 0;
  fault_detail_.clear();
  int_status_ = 0;
  cycle_origin_ = sc_time_stamp();
  run_ended_ = false;
  stop_event_.notify(SC_ZERO_TIME);
}

void CoreControl::doorbell(uint32_t mask) {
  mask &= (1u << isa::kNumQueues) - 1;
  if (mask == 0) return;
  const bool busy = status_ & regs::STATUS_BUSY_MASK;
  for (int q = 0; q < isa::kNumQueues; ++q) {
    if (!(mask & (1u << q))) continue;
    if (busy || queues_[q].len == 0) {
      raise_error(q, 0, {regs::ERR_BAD_DOORBELL, 0,
                         busy ? "doorbell while the device is busy" : "doorbell for a queue with Q_LEN 0"});
      return;
    }
  }
  // A fresh start: clear the previous run's state, its error latch included (semaphores stay as the last reset
  // left them). Found by the mmio fuzz target: a doorbell after an error started a run that still showed the old
  // ERR_CODE.
  ++epoch_;
  status_ = regs::STATUS_BUSY_MASK;
  err_code_ = err_queue_ = err_index_ = err_info_ = 0;
  fault_detail_.clear();
  cycle_origin_ = sc_time_stamp();
  run_ended_ = false;
  stop_event_.notify(SC_ZERO_TIME);
  for (int q = 0; q < isa::kNumQueues; ++q) {
    if (!(mask & (1u << q))) continue;
    Queue& qs = queues_[q];
    qs.pc = 0;
    qs.retired = 0;
    qs.state = regs::QSTATE_RUNNING;
    qs.start_epoch = epoch_;
    start_events_[q].notify(SC_ZERO_TIME);
  }
  if (checker_) checker_->on_launch();
  if (observer_) observer_->on_launch(mask, sc_time_stamp());
  progress_event_.notify(SC_ZERO_TIME);
}

void CoreControl::set_running(int q) {
  queues_[q].state = regs::QSTATE_RUNNING;
  queues_[q].wait_sem = -1;
}

void CoreControl::set_waiting(int q, int sem, uint32_t value) {
  Queue& qs = queues_[q];
  qs.state = regs::QSTATE_WAITING;
  qs.wait_sem = sem;
  qs.wait_value = value;
  check_done_or_deadlock();
  if (state_change_) state_change_();
}

void CoreControl::set_halted(int q) {
  queues_[q].state = regs::QSTATE_HALTED;
  queues_[q].wait_sem = -1;
  check_done_or_deadlock();
  if (state_change_) state_change_();
}

void CoreControl::retire(int q) {
  ++queues_[q].pc;
  ++queues_[q].retired;
  progress_event_.notify(SC_ZERO_TIME);
}

void CoreControl::sem_add(int s, uint32_t value) {
  sems_[s] += value;
  sem_changed_.notify(SC_ZERO_TIME);
}

bool CoreControl::signal_core(int core, int s, uint32_t value) {
  if (core == core_index_) {
    sem_add(s, value);
    return true;
  }
  return core_signal_ && core_signal_(core, s, value);
}

void CoreControl::recheck() {
  const bool waiting =
      std::any_of(queues_.begin(), queues_.end(), [](const Queue& q) { return q.state == regs::QSTATE_WAITING; });
  if (waiting) check_done_or_deadlock();
}

bool CoreControl::any_running() const {
  return std::any_of(queues_.begin(), queues_.end(), [](const Queue& q) { return q.state == regs::QSTATE_RUNNING; });
}

// Done: every started queue halted. Deadlock: nothing runs, no copy that signals a semaphore is in flight, and no
// waiting queue's condition holds (a wait whose semaphore is already high enough wakes in the next delta cycle, so it
// is not stuck).
void CoreControl::check_done_or_deadlock() {
  if (stopped()) return;
  bool any_running = false, any_waiting = false, any_wakeable = false;
  int first_stuck = -1;
  for (int q = 0; q < isa::kNumQueues; ++q) {
    const Queue& qs = queues_[q];
    if (qs.state == regs::QSTATE_RUNNING) any_running = true;
    if (qs.state == regs::QSTATE_WAITING) {
      any_waiting = true;
      if (sems_[qs.wait_sem] >= qs.wait_value) {
        any_wakeable = true;
      } else if (first_stuck < 0) {
        first_stuck = q;
      }
    }
  }
  if (any_running || any_wakeable) return;
  if (any_waiting && signals_in_flight_ > 0) return;  // a copy or a TE signal in flight may still raise it
  // Another core that still runs may signal a semaphore this core waits for (sem_signal core=): not stuck yet; the
  // chip asks again (recheck) when that core halts, stops or waits itself.
  if (any_waiting && others_running_ && others_running_()) return;
  if (any_waiting) {
    const Queue& qs = queues_[first_stuck];
    raise_error(first_stuck, qs.pc,
                {regs::ERR_DEADLOCK, uint32_t(qs.wait_sem),
                 "sem_wait on semaphore " + std::to_string(qs.wait_sem) + " for value " +
                     std::to_string(qs.wait_value) + " can never complete (it holds " +
                     std::to_string(sems_[qs.wait_sem]) + " and no queue is running)"});
    return;
  }
  status_ = regs::STATUS_DONE_MASK;
  end_run();
  if (observer_) observer_->on_launch_end(false, sc_time_stamp());
  set_int(regs::INT_STATUS_DONE_MASK);
}

void CoreControl::raise_error(int q, uint32_t index, const Fault& fault) {
  if (stopped()) return;
  status_ = regs::STATUS_ERROR_MASK;
  err_code_ = fault.code;
  err_queue_ = uint32_t(q);
  err_index_ = index;
  err_info_ = fault.info;
  fault_detail_ = fault.detail;
  queues_[q].state = regs::QSTATE_ERROR;
  end_run();
  stop_event_.notify(SC_ZERO_TIME);
  if (observer_) observer_->on_launch_end(true, sc_time_stamp());
  set_int(regs::INT_STATUS_ERROR_MASK);
  if (state_change_) state_change_();
}

void CoreControl::end_run() {
  if (run_ended_) return;
  run_ended_ = true;
  run_end_ = sc_time_stamp();
}

void CoreControl::set_int(uint32_t bits) {
  const bool was = irq();
  int_status_ |= bits;
  if (!was && irq() && irq_callback_) irq_callback_();
}

void CoreControl::watchdog_thread() {
  for (;;) {
    if (!(status_ & regs::STATUS_BUSY_MASK) || watchdog_cycles_ == 0) {
      wait(progress_event_);  // doorbells and retires notify it
      continue;
    }
    const uint64_t epoch = epoch_;
    uint32_t retired = 0;
    for (const Queue& q : queues_) retired += q.retired;
    const sc_time start = sc_time_stamp(), limit = cycle_ * double(watchdog_cycles_);
    wait(limit, progress_event_);
    if (sc_time_stamp() - start < limit) continue;  // woken by progress, a doorbell or a reset: re-arm
    uint32_t now_retired = 0;
    for (const Queue& q : queues_) now_retired += q.retired;
    // Progress is a retired instruction or a DMA copy moving bytes now (a 128 MiB copy takes ~14 M cycles).
    const bool moving = transfer_probe_ && transfer_probe_();
    if (epoch == epoch_ && now_retired == retired && !moving && (status_ & regs::STATUS_BUSY_MASK)) {
      int q = 0;
      while (q + 1 < isa::kNumQueues && queues_[q].state != regs::QSTATE_RUNNING &&
             queues_[q].state != regs::QSTATE_WAITING) {
        ++q;
      }
      raise_error(q, queues_[q].pc,
                  {regs::ERR_WATCHDOG, 0,
                   "no instruction retired and no DMA copy moving for " + std::to_string(watchdog_cycles_) +
                       " cycles"});
    }
  }
}

bool CoreControl::access(tlm::tlm_generic_payload& trans) {
  const uint64_t addr = trans.get_address();
  if (trans.get_data_length() != 4 || addr % 4 != 0 || trans.get_byte_enable_ptr() != nullptr) {
    trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return false;
  }
  uint32_t value = 0;
  if (trans.is_read()) {
    value = read_reg(uint32_t(addr));
    std::memcpy(trans.get_data_ptr(), &value, 4);
  } else if (trans.is_write()) {
    std::memcpy(&value, trans.get_data_ptr(), 4);
    write_reg(uint32_t(addr), value);
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return true;
}

void CoreControl::b_transport(tlm::tlm_generic_payload& trans, sc_time& /*delay*/) { access(trans); }

unsigned int CoreControl::transport_dbg(tlm::tlm_generic_payload& trans) { return access(trans) ? 4 : 0; }

}  // namespace trnsim::model
