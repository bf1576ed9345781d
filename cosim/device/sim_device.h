// The in-process backend of the driver's device interface: a SystemC chip (model/core/chip.h: the config's
// NeuronCores sharing one HBM) whose cores each compute with the Tensor Engine datapath asked for -- the TLM model,
// a verilated RTL engine of their own, or both in lockstep; a waveform records core 0's engine.
//
// SystemC elaborates once per process, so a process holds at most one SimDevice (std::logic_error otherwise).
// Simulated time only passes inside wait_interrupt(). Everything the host learns about a run (cycles, counters,
// faults) it reads through the registers (docs/registers.md), as from every other backend.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <systemc>

#include "firmware/driver/device.h"
#include "model/config/chip_config.h"
#include "model/core/host_memory.h"
#include "model/te/te_compute.h"

namespace trnsim::model {
class Chip;
class NeuronCore;
class EngineObserver;
}

namespace trnsim::cosim {

/// Takes this process's one SystemC elaboration for `who` (a SimDevice or a SimSystem); std::logic_error naming
/// `who` when it was taken already.
void claim_elaboration(const char* who);

/// sc_start(duration), the one way the hosts' devices run the kernel. An exception that leaves a SystemC process
/// reaches SystemC as a multi-line report (E549 "uncaught exception", file, process); it is rethrown here as
/// std::runtime_error with one line: the exception's text, then the process and the time. Exceptions that model
/// code hands to the host itself (CollectiveHub::rethrow_failure) keep their type.
void run_kernel(const sc_core::sc_time& duration);

/// Which Tensor Engine datapath the model uses.
enum class TeMode { kTlm, kRtl, kLockstep };
/// Parses "tlm", "rtl", "lockstep"; nullopt otherwise.
std::optional<TeMode> parse_te_mode(std::string_view name);

struct SimDeviceOptions {
  TeMode te = TeMode::kTlm;
  std::string wave_path;  ///< RTL/lockstep only: FST of the verilated TE (written when the device is destroyed)
  uint64_t wave_from = 0;            ///< first TE cycle recorded (TeRtlOptions::wave_from)
  uint64_t wave_to = UINT64_MAX;     ///< last TE cycle recorded, inclusive
  std::string wave_scope;            ///< TE hierarchy recorded, e.g. "trn_te.u_array.g_row[0]" (empty: all)
  /// Receives every retired instruction, DMA copy and launch of core 0 (the --timeline writer; the events carry no
  /// core); not owned, must outlive the device. Null: the engines skip the calls.
  model::EngineObserver* observer = nullptr;
  /// Stop with HAZARD when two engines touch the same SBUF/PSUM bytes (one writing) without a semaphore chain.
  bool check_hazards = false;
  /// Fill fresh SBUF/PSUM with NaN (0xFF bytes) and stop with UNINIT_READ at the first read of a never-written byte.
  bool check_uninit = false;
};

class SimDevice : public driver::Device {
 public:
  /// Builds the chip of `config`. Throws TeRtlError for a TE size the binary's RTL was not built with
  /// (naming the sizes it has) or a waveform that cannot be opened, std::logic_error for a second device in one
  /// process.
  SimDevice(const model::ChipConfig& config, const SimDeviceOptions& options);
  ~SimDevice() override;

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  /// Memory accesses on the device address map; std::out_of_range for an unmapped range.
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override;
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override;
  /// Runs until the chip's interrupt line (CHIP_INT_SUMMARY & CHIP_INT_ENABLE) is high or the cycles have passed.
  bool wait_interrupt(uint64_t max_cycles) override;

  model::Chip& chip() { return *chip_; }
  model::NeuronCore& core(int c = 0);
  /// Host memory for the DMA's space host (bus mastering; not owned, must outlive the device or be detached with
  /// nullptr). Without it, a copy of space host stops the device with HOST_ACCESS.
  void attach_host_memory(model::HostMemory* memory);
  /// The cores' datapath's name (every core has the same): tlm, rtl or lockstep.
  std::string te_name() const;
  /// Longer text of core 0's latched device fault (a lockstep mismatch, the RTL's message); empty if none. For model
  /// tests: the host reads the same text from ERR_DETAIL (driver::DeviceFault::detail()).
  std::string fault_detail() const;
  /// Host memory held by the model's memories (touched pages), in bytes.
  uint64_t resident_bytes() const;

 private:
  std::unique_ptr<model::Chip> chip_;
  SimDeviceOptions options_;
};

}  // namespace trnsim::cosim
