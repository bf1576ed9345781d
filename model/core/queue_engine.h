// One engine's instruction sequencer: fetches its queue's 64-byte instructions from HBM over the bus, decodes and
// checks them, runs the instructions every engine shares (nop, halt, semaphores) and hands the rest to the engine.
// Faults stop the device with ERR_* naming this queue, the instruction index and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "firmware/isa/isa.h"
#include "model/core/access_checker.h"
#include "model/core/core_control.h"

namespace trnsim::model {

class QueueEngine : public sc_core::sc_module {
 public:
  /// Bus master port (instruction fetch and data).
  tlm_utils::simple_initiator_socket<QueueEngine> bus;

  QueueEngine(const sc_core::sc_module_name& name, isa::Engine engine, CoreControl& control);
  SC_HAS_PROCESS(QueueEngine);

  isa::Engine engine() const { return engine_; }
  /// The epoch (CoreControl::epoch) of the program this engine runs: an engine compares it with the current one
  /// after every wait, and drops an abandoned instruction's effects.
  uint64_t run_epoch() const { return run_epoch_; }
  /// Cycles this engine spent executing its own instructions (TE: busy cycles for utilization).
  uint64_t busy_cycles() const { return busy_cycles_; }

  /// Where this queue's time went since the device was created (all launches), for utilization reports. Busy time
  /// is `active - sem_wait - dma_wait`; idle is the rest of the elapsed simulated time.
  struct Stats {
    sc_core::sc_time active;    ///< issue to retire, summed over retired instructions
    sc_core::sc_time sem_wait;  ///< blocked in sem_wait
    sc_core::sc_time dma_wait;  ///< DMA queue: waiting for its copies (sem_signal, halt) or for a free DMA engine
    uint64_t retired = 0;       ///< instructions retired
  };
  const Stats& stats() const { return stats_; }

 protected:
  /// Executes an engine-specific instruction (one that engine_accepts() and that is not nop/halt/sem).
  /// Returns a fault to stop the device; may wait().
  virtual std::optional<Fault> execute(const isa::Instruction& instr, uint32_t index) = 0;
  /// Waits until everything this engine issued asynchronously has completed (before sem_signal and halt).
  virtual void drain() {}
  /// For an engine whose semaphore updates follow its results without holding its queue (the TE, docs/isa.md
  /// "Execution"): when everything it issued so far will have completed. A sem_signal of this core's semaphore then
  /// adds at that time and the queue goes on; without (the default), sem_signal drains first.
  virtual std::optional<sc_core::sc_time> completion_time() const { return std::nullopt; }
  /// Called at every doorbell for this queue (engine-local state reset).
  virtual void on_start() {}
  /// Called after this queue executed halt (its state is HALTED).
  virtual void on_halt() {}

  /// Bus helpers on device addresses; false on an error response.
  bool bus_read(uint64_t addr, void* data, uint64_t bytes);
  bool bus_write(uint64_t addr, const void* data, uint64_t bytes);
  /// Waits `cycles` TE cycles and counts them as busy.
  void busy(uint64_t cycles);
  /// Counts `t` of the current instruction as waiting for the DMA engines (stats, timeline).
  void note_dma_wait(const sc_core::sc_time& t);

  /// The checker's view of the instruction now executing on this queue.
  AccessChecker::Actor actor() const;
  /// Reports an access of exactly these bytes to the checker (when one is enabled); a fault it finds stops the device,
  /// naming `who` (default: this queue's current instruction). For engines whose bus transfers cover more than the
  /// bytes an instruction really touches (strided rows): they wrap those transfers in `Unchecked` and report the
  /// real bytes here.
  void check_access(uint64_t addr, uint64_t bytes, bool write, const AccessChecker::Actor* who = nullptr);
  /// While alive, bus_read/bus_write are not reported to the checker, or are reported on behalf of `who`.
  class CheckScope {
   public:
    CheckScope(QueueEngine& e, bool report, const AccessChecker::Actor* who = nullptr)
        : e_(e), report_(e.report_bus_), who_(e.bus_actor_) {
      e.report_bus_ = report;
      e.bus_actor_ = who;
    }
    ~CheckScope() {
      e_.report_bus_ = report_;
      e_.bus_actor_ = who_;
    }
    CheckScope(const CheckScope&) = delete;
    CheckScope& operator=(const CheckScope&) = delete;

   private:
    QueueEngine& e_;
    bool report_;
    const AccessChecker::Actor* who_;
  };

  CoreControl& control_;

 private:
  bool bus_transport(tlm::tlm_command cmd, uint64_t addr, void* data, uint64_t bytes);
  void run_thread();
  void run_program(uint64_t epoch);
  std::optional<Fault> step(const isa::Instruction& instr, uint32_t index, uint64_t epoch);
  /// drain(), its time counted as DMA wait on the DMA queue.
  void timed_drain();
  /// Adds `value` to semaphore `sem` at time `at` (now if it has passed) without holding the queue; a soft reset or
  /// the next doorbell before then (another epoch) drops it. Until it lands the core counts it as a signal in
  /// flight, so that a queue waiting for it is not called deadlocked.
  void signal_at(const sc_core::sc_time& at, int sem, uint32_t value, uint64_t epoch);

  const isa::Engine engine_;
  const int q_;
  uint64_t busy_cycles_ = 0;
  uint64_t run_epoch_ = 0;
  Stats stats_;
  sc_core::sc_time waited_;         ///< waiting part of the current instruction
  uint32_t cur_index_ = 0;          ///< the current instruction (for the checker)
  isa::Opcode cur_op_ = isa::Opcode::kNop;
  bool report_bus_ = true;          ///< bus accesses go to the checker (see CheckScope)
  const AccessChecker::Actor* bus_actor_ = nullptr;
};

/// Byte range [first, last] touched by a 4-D access pattern of `count` elements of `elem_bytes` starting at
/// `addr` with byte strides `stride`; nullopt when it would start below address 0 or end past 2^64 - 1.
struct ByteRange {
  uint64_t first;
  uint64_t last;
};
std::optional<ByteRange> pattern_range(uint64_t addr, const std::array<uint16_t, isa::kApDims>& count,
                                       const std::array<int32_t, isa::kApDims>& stride, unsigned elem_bytes);

}  // namespace trnsim::model
