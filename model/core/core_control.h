// Control and status of one NeuronCore: the MMIO register block (docs/registers.md) as a TLM-2.0 target, and the
// state behind it that the engines share: queue registers and states, hardware semaphores, the error latch, the
// cycle counter, the watchdog, done/deadlock detection and the interrupt line.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "firmware/isa/isa.h"
#include "model/config/chip_config.h"
#include "model/core/cc_counters.h"
#include "spec/trn_regs.h"

namespace trnsim::model {

class AccessChecker;
class EngineObserver;

/// A device error as the engines report it; ERR_* registers hold it.
struct Fault {
  uint32_t code = regs::ERR_NONE;  ///< regs::ErrCode
  uint32_t info = 0;               ///< ERR_INFO: ISA field id (isa::field_id) or, for DEADLOCK, the semaphore
  std::string detail;              ///< longer text for logs (e.g. the lockstep mismatch); not in a register
};

class CoreControl : public sc_core::sc_module {
 public:
  /// MMIO target socket: 32-bit register accesses at byte offsets inside the MMIO region.
  tlm_utils::simple_target_socket<CoreControl> socket;

  CoreControl(const sc_core::sc_module_name& name, const ChipConfig& config);
  ~CoreControl() override;
  SC_HAS_PROCESS(CoreControl);

  const ChipConfig& config() const { return config_; }
  /// Duration of one TE clock cycle (the unit of the cycle counter and every engine's cost).
  sc_core::sc_time cycle_time() const { return cycle_; }
  /// TE cycles since the last doorbell or reset, up to the moment the launch ended (STATUS DONE or ERROR): the
  /// launch's length, whenever the host reads it.
  uint64_t cycles() const;

  // --- Register access (what the socket decodes; also used by tests) ---
  uint32_t read_reg(uint32_t offset) const;
  void write_reg(uint32_t offset, uint32_t value);

  // --- Queue bookkeeping, called by the queue engines ---
  struct Queue {
    uint64_t base = 0;     ///< HBM byte address of instruction 0
    uint32_t len = 0;      ///< instructions
    uint32_t pc = 0;       ///< next instruction
    uint32_t state = regs::QSTATE_IDLE;
    uint32_t retired = 0;
    int wait_sem = -1;     ///< while WAITING: the semaphore and the value awaited
    uint32_t wait_value = 0;
    uint64_t start_epoch = 0;  ///< epoch() of the doorbell that last started this queue (0: never)
  };
  const Queue& queue(int q) const { return queues_.at(q); }
  /// Fires when the doorbell starts queue q.
  const sc_core::sc_event& start_event(int q) const { return start_events_.at(q); }
  /// Increments at every soft reset / doorbell: an engine that sees a different epoch abandons its program.
  uint64_t epoch() const { return epoch_; }
  /// SR_SEED: the stochastic-rounding seed of this core's casts (BRIEF section 3 rule 9).
  uint32_t sr_seed() const { return sr_seed_; }
  /// True once an error is latched (engines stop at the next instruction boundary).
  bool stopped() const { return status_ & regs::STATUS_ERROR_MASK; }
  /// Fires on an error, a reset or a doorbell: wakes engines blocked on semaphores.
  const sc_core::sc_event& stop_event() const { return stop_event_; }

  void set_running(int q);
  /// Queue q blocks until semaphore `sem` >= value (checks for deadlock).
  void set_waiting(int q, int sem, uint32_t value);
  void set_halted(int q);
  /// Queue q retired the instruction at its pc; pc advances.
  void retire(int q);
  /// Latches the first error (later ones are ignored), naming the queue and instruction index.
  void raise_error(int q, uint32_t index, const Fault& fault);
  /// The text of the latched fault (empty if none).
  const std::string& fault_detail() const { return fault_detail_; }

  // --- Semaphores ---
  uint32_t sem(int s) const { return sems_.at(s); }
  void sem_add(int s, uint32_t value);
  const sc_core::sc_event& sem_changed() const { return sem_changed_; }
  /// sem_signal core=C: adds `value` to semaphore `s` of core `core` of this chip (this core's own when it is
  /// this core). False when the chip has no such core. The chip (chip.h) wires the other cores in.
  bool signal_core(int core, int s, uint32_t value);
  void set_core_signal(std::function<bool(int core, int s, uint32_t value)> signal) {
    core_signal_ = std::move(signal);
  }
  /// Whether another core of the chip has a queue running (so it may still signal one of this core's semaphores):
  /// while it has, a wait that no queue of this core can satisfy is not a deadlock yet. Set by the chip.
  void set_others_running(std::function<bool()> probe) { others_running_ = std::move(probe); }
  /// Called after this core's queues changed state in a way another core's deadlock check depends on (a queue
  /// halted, stopped or started waiting). Set by the chip.
  void on_state_change(std::function<void()> callback) { state_change_ = std::move(callback); }
  /// True while a queue is running.
  bool any_running() const;
  /// Looks again for a deadlock when a queue waits (the chip calls it when another core changed state).
  void recheck();
  /// A semaphore increment in flight (a DMA copy's done_sem when it lands, a te queue's sem_signal when the TE's
  /// results are in) started / ended (landed, failed or was abandoned). While one is in flight a queue waiting for a
  /// semaphore is not stuck: the deadlock check runs again when the last one ends.
  void signal_in_flight_started() { ++signals_in_flight_; }
  void signal_in_flight_ended() {
    if (--signals_in_flight_ == 0) recheck();
  }

  // --- Optional instrumentation (off, i.e. null, unless asked for) ---
  /// The observer the engines report instructions, DMA copies and launches to (engine_observer.h); not owned.
  EngineObserver* observer() const { return observer_; }
  void set_observer(EngineObserver* observer) { observer_ = observer; }
  /// The SBUF/PSUM access checker (access_checker.h), or null when no check is enabled.
  AccessChecker* checker() const { return checker_.get(); }
  /// Creates the checker (hazards and/or uninitialised reads); call before the first doorbell.
  void enable_checks(bool hazards, bool uninit);

  // --- Performance counters (registers UPTIME, TE_MACS, TE_BUSY, the PERF and DMAE blocks; docs/registers.md) ---
  /// The engines' statistics since creation; the top (NeuronCore) wires the source in. Times stay sc_time until
  /// a register read converts the difference since PERF_CLEAR to TE cycles (rounding once, not twice).
  struct PerfCounters {
    struct Queue {
      sc_core::sc_time busy, sem_wait, dma_wait;
      uint64_t retired = 0;
    };
    struct DmaEngine {
      sc_core::sc_time busy;
      uint64_t copies = 0;
    };
    std::array<Queue, isa::kNumQueues> queues{};
    std::vector<DmaEngine> dma;
    uint64_t te_macs = 0, te_busy = 0;
  };
  void set_perf_source(std::function<PerfCounters()> source) { perf_source_ = std::move(source); }
  /// CHIP_ID, TORUS, HOP_LATENCY_NS, LINK_BW_MBPS: set by whatever joins the chips into a system (the hub).
  void set_system_place(const SystemPlace& place) { place_ = place; }
  /// CORE_ID: this core's index on its chip; set by the top (NeuronCore).
  void set_core_index(int index) { core_index_ = index; }
  int core_index() const { return core_index_; }
  /// The collective engine completed a collective (or send/recv): `share` is this chip's part of its figures.
  void add_cc(const CcCounters& share) { cc_.add(share); }
  /// This chip's output links carried `traffic` (for any chips' collective: a message may cross this chip).
  void add_link_traffic(const CcLinks& traffic) { add_links(links_, traffic); }
  /// SIM_TE_BACKEND: which datapath the Tensor Engine computes with (a regs::TeBackend value), set by the top.
  void set_te_backend(uint32_t backend) { te_backend_ = backend; }
  /// TE cycles in `t`, rounded to nearest.
  uint64_t to_cycles(const sc_core::sc_time& t) const { return static_cast<uint64_t>(t / cycle_ + 0.5); }

  // --- Interrupt line ---
  bool irq() const { return (int_status_ & int_enable_) != 0; }
  /// Called (inside the simulation) when the interrupt line goes high; the in-process device adapter uses it
  /// to pause the simulation.
  void on_irq(std::function<void()> callback) { irq_callback_ = std::move(callback); }
  /// The watchdog's second sign of progress (the DMA engines: true while a copy is moving bytes), besides retired
  /// instructions: a single long copy is progress, not a hang.
  void set_transfer_probe(std::function<bool()> moving) { transfer_probe_ = std::move(moving); }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
  bool access(tlm::tlm_generic_payload& trans);
  void doorbell(uint32_t mask);
  void soft_reset();
  void set_int(uint32_t bits);
  /// The launch ended now: CYCLE stops counting (until the next doorbell or reset).
  void end_run();
  void check_done_or_deadlock();
  void watchdog_thread();
  /// The value of a performance counter register, or nullopt for any other offset.
  std::optional<uint32_t> read_perf(uint32_t offset) const;
  PerfCounters perf_now() const;

  const ChipConfig config_;
  const sc_core::sc_time cycle_;
  std::array<Queue, isa::kNumQueues> queues_{};
  std::array<sc_core::sc_event, isa::kNumQueues> start_events_;
  std::array<uint32_t, isa::kNumSemaphores> sems_{};
  sc_core::sc_event sem_changed_, stop_event_, progress_event_;
  uint64_t epoch_ = 0;
  uint32_t status_ = 0;
  uint32_t err_code_ = 0, err_queue_ = 0, err_index_ = 0, err_info_ = 0;
  std::string fault_detail_;
  uint32_t int_status_ = 0, int_enable_ = 0;
  uint32_t watchdog_cycles_ = regs::WATCHDOG_CYCLES_RESET;
  uint32_t sr_seed_ = regs::SR_SEED_RESET;
  sc_core::sc_time cycle_origin_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time run_end_ = sc_core::SC_ZERO_TIME;
  bool run_ended_ = false;  ///< CYCLE holds run_end_ - cycle_origin_
  std::function<void()> irq_callback_;
  std::function<bool(int, int, uint32_t)> core_signal_;
  std::function<bool()> others_running_;
  int signals_in_flight_ = 0;  ///< semaphore increments in flight (signal_in_flight_started)
  std::function<void()> state_change_;
  std::function<bool()> transfer_probe_;
  EngineObserver* observer_ = nullptr;
  std::unique_ptr<AccessChecker> checker_;
  std::function<PerfCounters()> perf_source_;
  PerfCounters perf_origin_;                          ///< the counters at the last PERF_CLEAR
  sc_core::sc_time uptime_origin_ = sc_core::SC_ZERO_TIME;
  uint32_t te_backend_ = regs::TE_BACKEND_TLM;
  SystemPlace place_;
  int core_index_ = 0;
  CcCounters cc_;  ///< since creation or the last PERF_CLEAR
  CcLinks links_{};
};

}  // namespace trnsim::model
