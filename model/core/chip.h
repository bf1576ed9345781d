// One chip: ChipConfig::cores NeuronCores sharing one HBM (and its bandwidth model), and the chip's own registers
// (CHIP_CORES, CHIP_INT_SUMMARY, CHIP_INT_ENABLE, CHIP_RESET, HBM_BW_MBPS; docs/registers.md "The chip
// and its cores"). A top that wires: each core is whole on its own (registers, queues, SBUF, PSUM, engines,
// interrupt); the chip decodes the host's accesses to the core they name and combines the cores' interrupt lines.
//
// Host addresses (spec/registers.json): MMIO offset c * CORE_STRIDE + r is register r of core c, CHIP_BASE + r the
// chip's; device address SBUF_BASE (PSUM_BASE) + c * CORE_MEM_STRIDE + a is byte a of core c's SBUF (PSUM); HBM is
// one for all cores.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <systemc>

#include "model/config/chip_config.h"
#include "model/core/neuron_core.h"
#include "model/mem/hbm_model.h"
#include "model/mem/memory.h"

namespace trnsim::model {

class Chip : public sc_core::sc_module {
 public:
  /// Makes core c's Tensor Engine datapath (rows x cols of the config).
  using TeFactory = std::function<std::unique_ptr<TeCompute>(int core)>;

  /// std::invalid_argument for a core count outside 1 .. regs::MAX_CORES or an SBUF/PSUM larger than
  /// regs::CORE_MEM_STRIDE (the cores' address windows would overlap).
  Chip(const sc_core::sc_module_name& name, const ChipConfig& config, const TeFactory& te);

  const ChipConfig& config() const { return config_; }
  int cores() const { return int(cores_.size()); }
  /// Core c (std::out_of_range outside 0 .. cores() - 1).
  NeuronCore& core(int c) { return *cores_.at(size_t(c)); }
  const NeuronCore& core(int c) const { return *cores_.at(size_t(c)); }

  // --- The host's side (callable between sc_start calls). Errors as driver::Device documents them:
  // std::out_of_range for memory no core or the HBM answers.
  uint32_t read_reg(uint32_t offset);
  void write_reg(uint32_t offset, uint32_t value);
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes);
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes);

  /// CHIP_INT_SUMMARY: bit c while core c's interrupt line is high.
  uint32_t int_summary() const;
  /// The chip's interrupt line: CHIP_INT_SUMMARY & CHIP_INT_ENABLE is not 0.
  bool irq() const { return (int_summary() & int_enable_) != 0; }
  /// Called (inside the simulation) whenever a core's interrupt line goes high, enabled or not.
  void on_core_irq(const std::function<void()>& callback);
  /// Host memory held by the chip's memories (touched pages), in bytes.
  uint64_t resident_bytes() const;

  Memory hbm;
  HbmModel hbm_model;

 private:
  /// The host bridge that reaches [addr, addr + bytes) and the address in its core's own map: core c's for its
  /// SBUF and PSUM windows (std::out_of_range past the core's memory or for a core the chip lacks), core 0's
  /// for the rest (HBM is every core's).
  std::pair<HostBridge*, uint64_t> route(uint64_t addr, std::size_t bytes);
  uint32_t read_chip_reg(uint32_t offset) const;
  void write_chip_reg(uint32_t offset, uint32_t value);
  uint32_t int_enable_reset() const { return uint32_t((uint64_t{1} << cores_.size()) - 1); }

  const ChipConfig config_;
  std::vector<std::unique_ptr<NeuronCore>> cores_;
  uint32_t int_enable_ = 0;
};

}  // namespace trnsim::model
