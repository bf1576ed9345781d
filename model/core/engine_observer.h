// What the engines report to an outside observer (the `trnsim --timeline` writer, tests): one call per retired
// instruction, per DMA copy and per launch. The model holds at most one observer (CoreControl::set_observer); with
// none set, the engines skip every call (one pointer test per instruction). Observers must not call back into the
// model or wait: they run inside the engines' SystemC threads.
//
// Times are SystemC times since the device was created: they keep increasing across launches (soft resets and
// doorbells restart CYCLE_LO/HI but not SystemC time), so several programs run one after another lie on one
// continuous time axis.
#pragma once

#include <cstdint>

#include <systemc>

#include "firmware/isa/isa.h"

namespace trnsim::model {

/// One retired instruction of one queue.
struct InstrEvent {
  int queue = 0;                     ///< queue id (isa::Engine value)
  uint32_t index = 0;                ///< instruction index within the queue (ERR_INDEX numbering)
  const isa::Instruction* instr = nullptr;  ///< the decoded instruction (valid during the call only)
  sc_core::sc_time start;            ///< issue (the fetch/issue cycle starts here)
  sc_core::sc_time end;              ///< retire
  sc_core::sc_time waited;           ///< part of [start, end) blocked: sem_wait, or the DMA queue waiting for its
                                     ///< copies (sem_signal, halt) or for a free DMA engine (dma_copy, psum_copy)
  bool faulted = false;              ///< the instruction stopped the device (end = the error); it did not retire
};

/// One DMA copy on one DMA engine, from its start to the moment its data has moved.
struct DmaCopyEvent {
  int engine = 0;         ///< DMA engine 0 .. num_dma_engines-1
  uint32_t index = 0;     ///< index of the dma_copy / psum_copy in the DMA queue
  const isa::Instruction* instr = nullptr;  ///< valid during the call only
  uint64_t bytes = 0;     ///< bytes moved (the larger of the read and written sizes)
  sc_core::sc_time start, end;
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  /// A doorbell started the queues in `queue_mask` (bit q = queue q) at `time`.
  virtual void on_launch(uint32_t queue_mask, sc_core::sc_time time) = 0;
  /// The launch ended at `time`: every started queue halted (`error` false) or the device stopped with an error.
  virtual void on_launch_end(bool error, sc_core::sc_time time) = 0;
  /// A retired instruction, or (faulted) the one whose error stopped the device.
  virtual void on_instruction(const InstrEvent& e) = 0;
  virtual void on_dma_copy(const DmaCopyEvent& e) = 0;
};

}  // namespace trnsim::model
