#include "model/core/chip.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include <fmt/core.h>

namespace trnsim::model {

static_assert(regs::MAX_CORES == isa::kMaxCores, "spec/registers.json MAX_CORES and spec/isa.json kMaxCores agree");

Chip::Chip(const sc_core::sc_module_name& name, const ChipConfig& config, const TeFactory& te)
    : sc_module(name),
      hbm("hbm", config.hbm_bytes),
      hbm_model(config.hbm_bytes_per_ns),
      config_(config) {
  if (config.cores < 1 || config.cores > int(regs::MAX_CORES)) {
    throw std::invalid_argument(fmt::format("config {}: {} cores; a chip has 1 to {}", config.name, config.cores,
                                            regs::MAX_CORES));
  }
  if (config.sbuf_bytes() > regs::CORE_MEM_STRIDE || config.psum_bytes() > regs::CORE_MEM_STRIDE) {
    throw std::invalid_argument(fmt::format("config {}: SBUF {} / PSUM {} bytes per core exceed the cores' address "
                                            "windows of {} bytes (CORE_MEM_STRIDE)", config.name, config.sbuf_bytes(),
                                            config.psum_bytes(), regs::CORE_MEM_STRIDE));
  }
  for (int c = 0; c < config.cores; ++c) {
    cores_.push_back(std::make_unique<NeuronCore>(fmt::format("core{}", c).c_str(), config, c, hbm, hbm_model, te(c)));
  }
  int_enable_ = int_enable_reset();
  // Semaphores across cores (sem_signal core=, docs/isa.md): a signal reaches the named core; a core's wait that
  // only another core can satisfy is a deadlock only once no other core runs.
  for (auto& core : cores_) {
    CoreControl& control = core->control;
    control.set_core_signal([this](int c, int s, uint32_t value) {
      if (c < 0 || c >= int(cores_.size())) return false;
      cores_[size_t(c)]->control.sem_add(s, value);
      return true;
    });
    control.set_others_running([this, &control] {
      return std::any_of(cores_.begin(), cores_.end(),
                         [&](const auto& o) { return &o->control != &control && o->control.any_running(); });
    });
    control.on_state_change([this, &control] {
      for (auto& o : cores_) {
        if (&o->control != &control) o->control.recheck();
      }
    });
  }
}

uint32_t Chip::int_summary() const {
  uint32_t bits = 0;
  for (size_t c = 0; c < cores_.size(); ++c) bits |= cores_[c]->control.irq() ? 1u << c : 0u;
  return bits;
}

void Chip::on_core_irq(const std::function<void()>& callback) {
  for (auto& c : cores_) c->control.on_irq(callback);
}

uint64_t Chip::resident_bytes() const {
  uint64_t total = hbm.resident_bytes();
  for (const auto& c : cores_) total += c->sbuf.resident_bytes() + c->psum.resident_bytes();
  return total;
}

uint32_t Chip::read_chip_reg(uint32_t offset) const {
  switch (offset) {
    case regs::CHIP_CORES: return uint32_t(cores_.size());
    case regs::CHIP_INT_SUMMARY: return int_summary();
    case regs::CHIP_INT_ENABLE: return int_enable_;
    case regs::HBM_BW_MBPS: return uint32_t(config_.hbm_bytes_per_ns * 1000.0 + 0.5);
    default: return 0;  // CHIP_RESET is WO; holes read 0
  }
}

void Chip::write_chip_reg(uint32_t offset, uint32_t value) {
  if (offset == regs::CHIP_INT_ENABLE) {
    int_enable_ = value & int_enable_reset();
  } else if (offset == regs::CHIP_RESET && (value & regs::CHIP_RESET_CORES_MASK)) {
    for (auto& c : cores_) {
      const uint32_t reset = regs::CTRL_SOFT_RESET_MASK;
      c->host.write(regs::MMIO_BASE + regs::CTRL, &reset, 4);
    }
    int_enable_ = int_enable_reset();
  }
}

uint32_t Chip::read_reg(uint32_t offset) {
  if (offset >= regs::CHIP_BASE) return read_chip_reg(offset);
  const uint32_t c = offset / regs::CORE_STRIDE;
  if (c >= cores_.size()) return 0;
  uint32_t v = 0;
  cores_[c]->host.read(regs::MMIO_BASE + offset % regs::CORE_STRIDE, &v, 4);
  return v;
}

void Chip::write_reg(uint32_t offset, uint32_t value) {
  if (offset >= regs::CHIP_BASE) return write_chip_reg(offset, value);
  const uint32_t c = offset / regs::CORE_STRIDE;
  if (c >= cores_.size()) return;
  cores_[c]->host.write(regs::MMIO_BASE + offset % regs::CORE_STRIDE, &value, 4);
}

std::pair<HostBridge*, uint64_t> Chip::route(uint64_t addr, std::size_t bytes) {
  const uint64_t window = uint64_t{regs::MAX_CORES} * regs::CORE_MEM_STRIDE;
  for (const auto& [base, size, space] : {std::tuple{regs::SBUF_BASE, config_.sbuf_bytes(), "SBUF"},
                                          std::tuple{regs::PSUM_BASE, config_.psum_bytes(), "PSUM"}}) {
    if (addr < base || addr - base >= window) continue;
    const uint64_t c = (addr - base) / regs::CORE_MEM_STRIDE, inner = (addr - base) % regs::CORE_MEM_STRIDE;
    if (c >= cores_.size()) {
      throw std::out_of_range(fmt::format("device address 0x{:x}: {} of core {}, and the chip has {} cores", addr,
                                          space, c, cores_.size()));
    }
    if (inner > size || bytes > size - inner) {
      throw std::out_of_range(fmt::format("device address 0x{:x} (+{} bytes): outside core {}'s {} of {} bytes",
                                          addr, bytes, c, space, size));
    }
    return {&cores_[c]->host, base + inner};
  }
  return {&cores_[0]->host, addr};  // HBM (every core's), or nothing: the bridge names the address
}

void Chip::read_mem(uint64_t device_addr, void* data, std::size_t bytes) {
  const auto [bridge, a] = route(device_addr, bytes);
  bridge->read(a, data, bytes);
}

void Chip::write_mem(uint64_t device_addr, const void* data, std::size_t bytes) {
  const auto [bridge, a] = route(device_addr, bytes);
  bridge->write(a, data, bytes);
}

}  // namespace trnsim::model
