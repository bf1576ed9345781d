#include "model/core/host_bridge.h"

#include <stdexcept>

#include <fmt/core.h>

namespace trnsim::model {

void HostBridge::transport(tlm::tlm_command cmd, uint64_t device_addr, void* data, uint64_t bytes) {
  // Large host transfers go in 1 MiB transactions (TLM data lengths are 32-bit).
  constexpr uint64_t kChunk = 1u << 20;
  auto* p = static_cast<unsigned char*>(data);
  for (uint64_t done = 0; done < bytes || (bytes == 0 && done == 0);) {
    const uint64_t n = std::min(kChunk, bytes - done);
    tlm::tlm_generic_payload trans;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    trans.set_command(cmd);
    trans.set_address(device_addr + done);
    trans.set_data_ptr(p + done);
    trans.set_data_length(static_cast<unsigned int>(n));
    trans.set_streaming_width(static_cast<unsigned int>(n));
    trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    socket->b_transport(trans, delay);
    if (!trans.is_response_ok()) {
      throw std::out_of_range(fmt::format("device {} of {} bytes at 0x{:x}: {}",
                                          cmd == tlm::TLM_READ_COMMAND ? "read" : "write", bytes, device_addr,
                                          trans.get_response_string()));
    }
    if (bytes == 0) break;
    done += n;
  }
}

void HostBridge::read(uint64_t device_addr, void* data, uint64_t bytes) {
  transport(tlm::TLM_READ_COMMAND, device_addr, data, bytes);
}

void HostBridge::write(uint64_t device_addr, const void* data, uint64_t bytes) {
  transport(tlm::TLM_WRITE_COMMAND, device_addr, const_cast<void*>(data), bytes);
}

}  // namespace trnsim::model
