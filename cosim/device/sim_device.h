// The in-process backend of the driver's device interface: a SystemC NeuronCore (model/) whose Tensor Engine
// datapath is the TLM model, the verilated RTL, or both in lockstep.
//
// SystemC elaborates once per process, so a process holds at most one SimDevice (std::logic_error otherwise).
// Simulated time only passes inside wait_interrupt().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/driver/device.h"
#include "model/config/chip_config.h"
#include "model/te/te_compute.h"

namespace trnsim::model {
class NeuronCore;
class EngineObserver;
}

namespace trnsim::cosim {

/// Takes this process's one SystemC elaboration for `who` (a SimDevice or a SimSystem); std::logic_error naming
/// `who` when it was taken already.
void claim_elaboration(const char* who);

/// Which Tensor Engine datapath the model uses.
enum class TeMode { kTlm, kRtl, kLockstep };
/// Parses "tlm", "rtl", "lockstep"; nullopt otherwise.
std::optional<TeMode> parse_te_mode(std::string_view name);

/// A snapshot for progress reports during a long wait_interrupt().
struct SimProgress {
  uint64_t cycles = 0;          ///< TE cycles since the doorbell
  uint64_t te_busy_cycles = 0;  ///< since the device was created
  uint64_t te_macs = 0;         ///< since the device was created
};

struct SimDeviceOptions {
  TeMode te = TeMode::kTlm;
  std::string wave_path;  ///< RTL/lockstep only: FST of the verilated TE (written when the device is destroyed)
  uint64_t wave_from = 0;            ///< first TE cycle recorded (TeRtlOptions::wave_from)
  uint64_t wave_to = UINT64_MAX;     ///< last TE cycle recorded, inclusive
  std::string wave_scope;            ///< TE hierarchy recorded, e.g. "trn_te.u_array.g_row[0]" (empty: all)
  /// Called about every `progress_interval_s` of host time while the device runs (empty: never).
  std::function<void(const SimProgress&)> progress;
  double progress_interval_s = 2.0;
  /// Receives every retired instruction, DMA copy and launch (the --timeline writer); not owned, must outlive the
  /// device. Null: the engines skip the calls.
  model::EngineObserver* observer = nullptr;
  /// Stop with HAZARD when two engines touch the same SBUF/PSUM bytes (one writing) without a semaphore chain.
  bool check_hazards = false;
  /// Fill fresh SBUF/PSUM with NaN (0xFF bytes) and stop with UNINIT_READ at the first read of a never-written byte.
  bool check_uninit = false;
};

/// Where one engine's simulated time went since the device was created (all launches).
struct EngineUsage {
  std::string name;         ///< "te", "act", "vec", "cc", "dma" (the DMA queue), "dma0" .. "dma15" (DMA engines)
  std::string title;        ///< "Tensor Engine", "DMA queue", "Scalar engine", "Vector engine", "DMA engine 3"
  uint32_t clock_mhz = 0;   ///< the engine's clock (the DMA queue and engines count in TE cycles)
  double busy_us = 0;       ///< executing (instructions, or copies for a DMA engine)
  double sem_wait_us = 0;   ///< blocked in sem_wait
  double dma_wait_us = 0;   ///< DMA queue: waiting for its copies to complete or for a free DMA engine
  uint64_t count = 0;       ///< instructions retired (queues) or copies completed (DMA engines)
};
struct UsageReport {
  double elapsed_us = 0;    ///< simulated time since the device was created
  double te_cycle_us = 0;   ///< one TE cycle as the model counts it (417 ps at 2.4 GHz)
  std::vector<EngineUsage> queues;       ///< te, dma, act, vec, cc (queue id order)
  std::vector<EngineUsage> dma_engines;  ///< one per DMA engine
};

class SimDevice : public driver::Device {
 public:
  /// Builds the NeuronCore for `config`. Throws TeRtlError for a TE size the binary's RTL was not built with
  /// (naming the sizes it has) or a waveform that cannot be opened, std::logic_error for a second device in one
  /// process.
  SimDevice(const model::ChipConfig& config, const SimDeviceOptions& options);
  ~SimDevice() override;

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  /// Memory accesses on the device address map; std::out_of_range for an unmapped range.
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override;
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override;
  bool wait_interrupt(uint64_t max_cycles) override;

  model::NeuronCore& core() { return *core_; }
  /// The datapath's name: tlm, rtl or lockstep.
  std::string te_name() const;
  /// Longer text of the latched device fault (a lockstep mismatch, the RTL's message); empty if none.
  std::string fault_detail() const;
  /// TE busy cycles and MACs since creation (for utilization reports).
  uint64_t te_busy_cycles() const;
  uint64_t te_macs() const;
  /// Per-engine busy, waiting and idle time since creation (the utilization report).
  UsageReport usage() const;
  /// Host memory held by the model's memories (touched pages), in bytes.
  uint64_t resident_bytes() const;

 private:
  std::unique_ptr<model::NeuronCore> core_;
  SimDeviceOptions options_;
};

}  // namespace trnsim::cosim
