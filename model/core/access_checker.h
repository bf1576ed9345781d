// The two optional SBUF/PSUM access checkers of the chip model (docs/timeline.md "Checkers"):
//
// - hazards: two agents touch the same byte, at least one writing, and no semaphore chain orders them. Agents are
//   the four queues and the DMA engines (a copy runs asynchronously on its engine). Happens-before is tracked with
//   vector clocks: an agent's clock ticks after each sem_signal; sem_signal joins the signaller's clock into the
//   semaphore's, a completed sem_wait joins the semaphore's clock into the waiter's (a wait is credited with every
//   signal of its semaphore so far, so the checker can miss a hazard but never reports a false one); a DMA copy
//   starts from the DMA queue's clock joined with its engine's previous copy, and the DMA queue joins every DMA
//   engine when it drains (sem_signal, halt); a copy with a completion semaphore (done_sem) joins its own clock into
//   that semaphore's when it lands. Access A happens before access B of another agent when B's clock
//   has seen A's epoch (FastTrack, Flanagan and Freund, PLDI 2009). Per byte the checker keeps the last write and
//   up to two concurrent reads since it; a launch (doorbell) orders everything before it.
// - uninit: a byte of SBUF or PSUM that no engine wrote since the device was created is read.
//
// Engines call access() with the exact bytes an instruction reads or writes. With no checker enabled the model
// creates none (CoreControl::checker() is null) and pays one pointer test per bus access.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "firmware/isa/isa.h"
#include "model/config/chip_config.h"
#include "model/core/core_control.h"

namespace trnsim::model {

class AccessChecker {
 public:
  struct Options {
    bool hazards = false;
    bool uninit = false;
  };
  using Clock = std::vector<uint32_t>;

  /// Agents 0 .. isa::kNumQueues-1 are the queues; isa::kNumQueues + e is DMA engine e.
  AccessChecker(const ChipConfig& config, const Options& options);

  const Options& options() const { return options_; }
  static int dma_agent(int engine) { return isa::kNumQueues + engine; }

  /// The instruction on whose behalf an access is made.
  struct Actor {
    int agent = 0;
    int queue = 0;
    uint32_t index = 0;
    isa::Opcode op = isa::Opcode::kNop;
    int dma_engine = -1;        ///< the DMA engine of a copy, else -1
    const Clock* clock = nullptr;  ///< a DMA copy's clock (from dma_issue); null: the agent's current clock
  };

  /// A doorbell: clocks restart; every access of an earlier launch is ordered before the new launch's.
  void on_launch();
  void on_signal(int queue, int sem);
  void on_wait(int queue, int sem);
  /// A copy issued by the DMA queue onto DMA engine `engine`: its clock (keep it until the copy's accesses are done).
  Clock dma_issue(int engine);
  /// The DMA queue waited for all its copies: it has seen every DMA engine's work.
  void on_dma_drain();
  /// A copy with a completion semaphore (dma_copy done_sem=) landed: its clock (from dma_issue) joins semaphore
  /// `sem`'s, so a queue that waits for the semaphore has seen the copy's accesses (and what the copy had seen).
  void on_copy_signal(const Clock& copy_clock, int sem);

  /// Checks and records an access of `bytes` bytes at device address `device_addr` (outside SBUF and PSUM: ignored).
  /// Returns the first problem: HAZARD naming both instructions and the byte range, UNINIT_READ naming the bytes.
  std::optional<Fault> access(const Actor& actor, uint64_t device_addr, uint64_t bytes, bool write);

 private:
  struct Record {  ///< one instruction's accesses (an id in the shadow memory)
    int agent, queue;
    uint32_t index;
    isa::Opcode op;
    int dma_engine;
    uint32_t epoch;   ///< the agent's clock entry when it accessed
    uint64_t launch;
  };
  struct Shadow {  ///< per byte: last write and up to two reads since it (record ids, 0 = none)
    uint32_t write = 0, read0 = 0, read1 = 0;
  };
  struct Space {
    const char* name;
    uint64_t base, size;
    uint32_t partition_bytes;
    std::unordered_map<uint64_t, std::unique_ptr<Shadow[]>> shadow;
    std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> written;
  };
  static constexpr uint64_t kPageBytes = 64 * 1024;

  uint32_t record_for(const Actor& a, const Clock& clock);
  bool ordered(uint32_t id, const Clock& clock, int agent) const;
  std::string describe(const Record& r) const;
  static std::string actor_text(const Actor& a);
  std::string where(const Space& s, uint64_t first, uint64_t last) const;
  Fault hazard(const Space& s, const Actor& a, bool write, uint32_t other, bool other_wrote, uint64_t first,
               uint64_t last) const;

  Options options_;
  std::vector<Space> spaces_;
  std::vector<Clock> clocks_;                  ///< per agent
  std::vector<Clock> sem_clocks_;              ///< per semaphore
  std::vector<Record> records_{1};             ///< index 0 unused
  std::vector<uint32_t> last_record_;          ///< per agent: its newest record id
  uint64_t launch_ = 0;
};

}  // namespace trnsim::model
