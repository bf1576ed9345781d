#include "model/core/queue_engine.h"

#include <fmt/core.h>

#include "model/core/engine_observer.h"

namespace trnsim::model {

using namespace sc_core;

QueueEngine::QueueEngine(const sc_module_name& name, isa::Engine engine, CoreControl& control)
    : sc_module(name), bus("bus"), control_(control), engine_(engine), q_(static_cast<int>(engine)) {
  SC_THREAD(run_thread);
}

bool QueueEngine::bus_transport(tlm::tlm_command cmd, uint64_t addr, void* data, uint64_t bytes) {
  tlm::tlm_generic_payload trans;
  sc_time delay = SC_ZERO_TIME;
  trans.set_command(cmd);
  trans.set_address(addr);
  trans.set_data_ptr(static_cast<unsigned char*>(data));
  trans.set_data_length(static_cast<unsigned int>(bytes));
  trans.set_streaming_width(static_cast<unsigned int>(bytes));
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  bus->b_transport(trans, delay);
  if (report_bus_ && control_.checker() != nullptr) {
    check_access(addr, bytes, cmd == tlm::TLM_WRITE_COMMAND, bus_actor_);
  }
  return trans.is_response_ok();
}

AccessChecker::Actor QueueEngine::actor() const {
  AccessChecker::Actor a;
  a.agent = q_;
  a.queue = q_;
  a.index = cur_index_;
  a.op = cur_op_;
  return a;
}

void QueueEngine::check_access(uint64_t addr, uint64_t bytes, bool write, const AccessChecker::Actor* who) {
  AccessChecker* checker = control_.checker();
  if (checker == nullptr || control_.stopped()) return;
  const AccessChecker::Actor a = who ? *who : actor();
  if (auto fault = checker->access(a, addr, bytes, write)) control_.raise_error(a.queue, a.index, *fault);
}

void QueueEngine::note_dma_wait(const sc_time& t) {
  stats_.dma_wait += t;
  waited_ += t;
}

bool QueueEngine::bus_read(uint64_t addr, void* data, uint64_t bytes) {
  return bus_transport(tlm::TLM_READ_COMMAND, addr, data, bytes);
}

bool QueueEngine::bus_write(uint64_t addr, const void* data, uint64_t bytes) {
  return bus_transport(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), bytes);  // the target only reads it
}

void QueueEngine::busy(uint64_t cycles) {
  busy_cycles_ += cycles;
  wait(control_.cycle_time() * double(cycles));
}

void QueueEngine::run_thread() {
  // A doorbell may ring while this thread still finishes an abandoned program (after an error or a reset), so the
  // start is taken from the queue's start epoch, not only from the event.
  uint64_t started = 0;
  for (;;) {
    while (control_.queue(q_).start_epoch == started || control_.queue(q_).start_epoch != control_.epoch()) {
      wait(control_.start_event(q_));
    }
    started = control_.queue(q_).start_epoch;
    run_program(started);
  }
}

void QueueEngine::run_program(uint64_t epoch) {
  run_epoch_ = epoch;
  const CoreControl::Queue& qs = control_.queue(q_);
  on_start();
  const uint64_t hbm = control_.config().hbm_bytes;
  if (qs.base > hbm || uint64_t(qs.len) * isa::kInstrBytes > hbm - qs.base) {
    control_.raise_error(q_, 0, {regs::ERR_PROGRAM_RANGE, 0,
                                 fmt::format("program [0x{:x}, +{} instructions) is not inside HBM ({} bytes)",
                                             qs.base, qs.len, hbm)});
    return;
  }
  for (;;) {
    if (control_.stopped() || control_.epoch() != epoch) return;
    const uint32_t index = qs.pc;
    if (index >= qs.len) {
      control_.raise_error(q_, index, {regs::ERR_NO_HALT, 0,
                                       fmt::format("ran past the end of the program ({} instructions) "
                                                   "without a halt", qs.len)});
      return;
    }
    uint8_t raw[isa::kInstrBytes];
    if (!bus_read(regs::HBM_BASE + qs.base + uint64_t(index) * isa::kInstrBytes, raw, sizeof raw)) {
      control_.raise_error(q_, index, {regs::ERR_PROGRAM_RANGE, 0, "instruction fetch failed"});
      return;
    }
    isa::Instruction instr;
    if (const auto err = isa::decode(raw, &instr)) {
      const uint32_t code = err->code == isa::IsaError::Code::kBadOpcode        ? regs::ERR_BAD_OPCODE
                            : err->code == isa::IsaError::Code::kReservedNonZero ? regs::ERR_RESERVED_NONZERO
                                                                                 : regs::ERR_BAD_FIELD;
      control_.raise_error(q_, index, {code, uint32_t(isa::field_id(err->field)), err->message});
      return;
    }
    if (!isa::engine_accepts(engine_, instr.op)) {
      control_.raise_error(q_, index, {regs::ERR_WRONG_ENGINE, uint32_t(isa::field_id("opcode")),
                                       fmt::format("{} is not executed by the {} engine",
                                                   isa::opcode_name(instr.op).value_or("?"),
                                                   isa::engine_name(engine_))});
      return;
    }
    const sc_time start = sc_time_stamp();
    waited_ = SC_ZERO_TIME;
    cur_index_ = index;
    cur_op_ = instr.op;
    busy(1);  // issue
    // A soft reset during any wait abandons the program: nothing after it may touch the next program's state
    // (semaphores, memory, the DMA engines), here and in every engine's execute() (run_epoch()).
    if (control_.stopped() || control_.epoch() != epoch) return;
    const auto fault = step(instr, index, epoch);
    if (fault) control_.raise_error(q_, index, *fault);
    if (control_.stopped() || control_.epoch() != epoch) {
      // The instruction that stopped the device (a fault here, or a checker's on its behalf) ends the timeline.
      EngineObserver* obs = control_.observer();
      if (obs && control_.epoch() == epoch && control_.queue(q_).state == regs::QSTATE_ERROR &&
          control_.read_reg(regs::ERR_INDEX) == index) {
        obs->on_instruction({q_, index, &instr, start, sc_time_stamp(), waited_, true});
      }
      return;
    }
    stats_.active += sc_time_stamp() - start;
    ++stats_.retired;
    if (EngineObserver* obs = control_.observer()) {
      obs->on_instruction({q_, index, &instr, start, sc_time_stamp(), waited_});
    }
    control_.retire(q_);
    if (instr.op == isa::Opcode::kHalt) {
      control_.set_halted(q_);
      on_halt();
      return;
    }
  }
}

std::optional<Fault> QueueEngine::step(const isa::Instruction& instr, uint32_t index, uint64_t epoch) {
  switch (instr.op) {
    case isa::Opcode::kNop: return std::nullopt;
    case isa::Opcode::kHalt: timed_drain(); return std::nullopt;
    case isa::Opcode::kSemSignal:
      if (instr.sem.core < 0 || instr.sem.core == control_.core_index()) {
        if (const std::optional<sc_time> at = completion_time()) {  // the TE: at its results, the queue goes on
          if (AccessChecker* checker = control_.checker()) checker->on_signal(q_, instr.sem.sem);
          signal_at(*at, instr.sem.sem, instr.sem.value, epoch);
          return std::nullopt;
        }
      }
      timed_drain();
      if (control_.stopped() || control_.epoch() != epoch) return std::nullopt;  // abandoned while draining
      if (instr.sem.core >= 0 && instr.sem.core != control_.core_index()) {  // another core's semaphore
        if (!control_.signal_core(instr.sem.core, instr.sem.sem, instr.sem.value)) {
          return Fault{regs::ERR_BAD_FIELD, uint32_t(isa::field_id("core")),
                       fmt::format("sem_signal core={}: the chip has no core {}", instr.sem.core, instr.sem.core)};
        }
        return std::nullopt;
      }
      if (AccessChecker* checker = control_.checker()) checker->on_signal(q_, instr.sem.sem);
      control_.sem_add(instr.sem.sem, instr.sem.value);
      return std::nullopt;
    case isa::Opcode::kSemWait: {
      const sc_time t0 = sc_time_stamp();
      while (control_.sem(instr.sem.sem) < instr.sem.value) {
        control_.set_waiting(q_, instr.sem.sem, instr.sem.value);
        if (control_.stopped() || control_.epoch() != epoch) return std::nullopt;
        wait(control_.sem_changed() | control_.stop_event());
        if (control_.stopped() || control_.epoch() != epoch) return std::nullopt;
      }
      const sc_time blocked = sc_time_stamp() - t0;
      stats_.sem_wait += blocked;
      waited_ += blocked;
      if (AccessChecker* checker = control_.checker()) checker->on_wait(q_, instr.sem.sem);
      control_.set_running(q_);
      return std::nullopt;
    }
    default: return execute(instr, index);
  }
}

void QueueEngine::signal_at(const sc_time& at, int sem, uint32_t value, uint64_t epoch) {
  if (at <= sc_time_stamp()) {
    control_.sem_add(sem, value);
    return;
  }
  control_.signal_in_flight_started();
  sc_spawn([this, at, sem, value, epoch] {
    struct InFlight {
      CoreControl& control;
      ~InFlight() { control.signal_in_flight_ended(); }
    } in_flight{control_};
    while (sc_time_stamp() < at) {
      wait(at - sc_time_stamp(), control_.stop_event());
      if (control_.epoch() != epoch) return;  // abandoned: a soft reset or the next program's doorbell
    }
    control_.sem_add(sem, value);
  });
}

void QueueEngine::timed_drain() {
  const sc_time t0 = sc_time_stamp();
  drain();
  // An abandoned program's waits count for nobody: they would land in the statistics of the program after it.
  // The DMA queue waits for its engines; another queue's drain is its own work (the TE's pipeline: busy()).
  if (engine_ == isa::Engine::kDma && sc_time_stamp() != t0 && control_.epoch() == run_epoch_) {
    note_dma_wait(sc_time_stamp() - t0);
  }
}

std::optional<ByteRange> pattern_range(uint64_t addr, const std::array<uint16_t, isa::kApDims>& count,
                                       const std::array<int32_t, isa::kApDims>& stride, unsigned elem_bytes) {
  // |span| < 2^16 * 2^31 per dimension, so lo and hi cannot overflow; addr is any 64-bit value (a program's field),
  // so the ends are computed unsigned and checked against both ends of the address space.
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < isa::kApDims; ++d) {
    const int64_t span = int64_t(count[d] - 1) * stride[d];
    (span < 0 ? lo : hi) += span;
  }
  const uint64_t below = uint64_t(-lo), above = uint64_t(hi) + elem_bytes - 1;
  if (below > addr || above > UINT64_MAX - addr) return std::nullopt;
  return ByteRange{addr - below, addr + above};
}

}  // namespace trnsim::model
