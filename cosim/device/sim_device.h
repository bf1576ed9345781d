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

#include "firmware/driver/device.h"
#include "model/config/chip_config.h"
#include "model/te/te_compute.h"

namespace trnsim::model {
class NeuronCore;
}

namespace trnsim::cosim {

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
  /// Called about every `progress_interval_s` of host time while the device runs (empty: never).
  std::function<void(const SimProgress&)> progress;
  double progress_interval_s = 2.0;
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
  /// Host memory held by the model's memories (touched pages), in bytes.
  uint64_t resident_bytes() const;

 private:
  std::unique_ptr<model::NeuronCore> core_;
  SimDeviceOptions options_;
};

}  // namespace trnsim::cosim
