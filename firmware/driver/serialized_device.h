// driver::SerializedDevice: one driver::Device shared by two servers running in two threads (`trnsim serve --qemu
// PATH --socket PATH2`: the QEMU guest's function and `trnsim attach` beside it): every call holds one mutex, so the
// device (the SystemC model: not thread-safe) sees one call at a time. A wait_interrupt holds it for its whole
// slice, so the other thread waits at most one slice.
#pragma once

#include <mutex>

#include "firmware/driver/device.h"

namespace trnsim::driver {

class SerializedDevice final : public Device {
 public:
  /// `device` is not owned and outlives this.
  explicit SerializedDevice(Device& device) : device_(device) {}

  uint32_t read_reg(uint32_t offset) override {
    const std::lock_guard<std::mutex> l(m_);
    return device_.read_reg(offset);
  }
  void write_reg(uint32_t offset, uint32_t value) override {
    const std::lock_guard<std::mutex> l(m_);
    device_.write_reg(offset, value);
  }
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override {
    const std::lock_guard<std::mutex> l(m_);
    device_.write_mem(device_addr, data, bytes);
  }
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override {
    const std::lock_guard<std::mutex> l(m_);
    device_.read_mem(device_addr, data, bytes);
  }
  bool wait_interrupt(uint64_t max_cycles) override {
    const std::lock_guard<std::mutex> l(m_);
    return device_.wait_interrupt(max_cycles);
  }

 private:
  Device& device_;
  std::mutex m_;
};

}  // namespace trnsim::driver
