// `--timeline FILE.json`: records what the engines did (model::EngineObserver) and writes it as a Chrome
// trace-event JSON file (the "JSON Array/Object Format" of the Trace Event Format; ui.perfetto.dev and
// chrome://tracing open it). docs/timeline.md describes the tracks and fields.
//
// One track (thread) per queue (te, dma, act, vec), one per DMA engine and one for the launches; one complete ("X")
// event per retired instruction on its queue's track (name = mnemonic; args: instruction index, operands, cycles in
// the engine's own clock and in TE cycles, the waiting part), one per DMA copy on its DMA engine's track, one per
// launch. Timestamps are simulated microseconds since the device was created, so a workload of several programs run
// one after another gives one continuous timeline.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config/chip_config.h"
#include "model/core/engine_observer.h"

namespace trnsim::tool {

class TimelineRecorder : public model::EngineObserver {
 public:
  explicit TimelineRecorder(const model::ChipConfig& config) : config_(config) {}

  void on_launch(uint32_t queue_mask, sc_core::sc_time time) override;
  void on_launch_end(bool error, sc_core::sc_time time) override;
  void on_instruction(const model::InstrEvent& e) override;
  void on_dma_copy(const model::DmaCopyEvent& e) override;

  /// Track ids ("tid") of the trace: queue q is q, DMA engine e is kDmaEngineTrack + e, launches kLaunchTrack.
  static constexpr int kDmaEngineTrack = 10;
  static constexpr int kLaunchTrack = 100;

  /// Instruction slices recorded so far (all queues).
  size_t instructions() const { return instructions_; }

  /// What each engine did during one launch (doorbell to done): a queue's busy time is its slices' time less their
  /// waiting part (a sem_wait's blocked time, the DMA queue's waits for copies or engines); the DMA engines' is the
  /// sum of their copies' time. Slices count in the launch they start in.
  struct LaunchLoad {
    std::string name;
    uint64_t start_ps = 0, end_ps = 0;
    std::array<uint64_t, isa::kNumQueues> busy_ps{};  ///< per queue (isa::Engine)
    uint64_t dma_engines_busy_ps = 0;   ///< all DMA engines together
    uint64_t dma_bytes = 0;
    uint64_t copies = 0;
    /// The engine with the most busy time ("te", "act", "vec", "cc", or "dma engines": their mean), and that
    /// time: the launch cannot be shorter with the same instructions.
    std::string bound;
    uint64_t bound_ps = 0;
    /// The same bound with the DMA engines counted by their bytes alone (dma_bytes over every engine at its
    /// bandwidth, no start latency): what the launch's work would take on engines that overlap perfectly and
    /// copies that cost no setup.
    uint64_t bytes_bound_ps = 0;
  };
  std::vector<LaunchLoad> launch_loads() const;
  /// One line for the run report: the launches' bounds summed against the launches' time, which engines bound
  /// them, and the bounds without the DMA start latencies summed ("" without launches).
  std::string floor_summary() const;
  /// Writes the trace; throws std::runtime_error naming the file when it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Slice {
    int track;
    std::string name, category, operands;
    int64_t index;                 ///< instruction index (-1: none)
    uint64_t start_ps, end_ps, waited_ps;
    uint64_t bytes;                ///< DMA copies
  };
  const model::ChipConfig config_;
  std::vector<Slice> slices_;
  size_t instructions_ = 0;
  int launches_ = 0;
  int64_t open_launch_ = -1;        ///< slice index of the launch still running
};

}  // namespace trnsim::tool
