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
