#include "model/mem/memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/core.h>

namespace trnsim::model {

Memory::Memory(const sc_core::sc_module_name& name, uint64_t size_bytes)
    : sc_module(name), socket("socket"), size_(size_bytes) {
  socket.register_b_transport(this, &Memory::b_transport);
  socket.register_transport_dbg(this, &Memory::transport_dbg);
}

void Memory::check(uint64_t addr, uint64_t bytes) const {
  if (addr > size_ || bytes > size_ - addr) {
    throw std::out_of_range(fmt::format("{}: access [0x{:x}, +{}) outside its {} bytes", name(), addr, bytes, size_));
  }
}

void Memory::read(uint64_t addr, void* data, uint64_t bytes) const {
  check(addr, bytes);
  auto* out = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    const uint64_t page = addr / kPageBytes, off = addr % kPageBytes;
    const uint64_t chunk = std::min(bytes, kPageBytes - off);
    const auto it = pages_.find(page);
    if (it == pages_.end()) {
      std::memset(out, fill_, chunk);
    } else {
      std::memcpy(out, it->second.get() + off, chunk);
    }
    out += chunk;
    addr += chunk;
    bytes -= chunk;
  }
}

void Memory::write(uint64_t addr, const void* data, uint64_t bytes) {
  check(addr, bytes);
  const auto* in = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const uint64_t page = addr / kPageBytes, off = addr % kPageBytes;
    const uint64_t chunk = std::min(bytes, kPageBytes - off);
    auto& p = pages_[page];
    if (!p) {
      p = std::make_unique<uint8_t[]>(kPageBytes);  // value-initialised: zeros
      if (fill_ != 0) std::memset(p.get(), fill_, kPageBytes);
    }
    std::memcpy(p.get() + off, in, chunk);
    in += chunk;
    addr += chunk;
    bytes -= chunk;
  }
}

bool Memory::execute(tlm::tlm_generic_payload& trans) {
  const uint64_t addr = trans.get_address();
  const uint64_t len = trans.get_data_length();
  if (trans.get_byte_enable_ptr() != nullptr || trans.get_streaming_width() < len) {
    trans.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return false;
  }
  if (addr > size_ || len > size_ - addr) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  if (trans.is_read()) {
    read(addr, trans.get_data_ptr(), len);
  } else if (trans.is_write()) {
    write(addr, trans.get_data_ptr(), len);
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return true;
}

void Memory::b_transport(int /*id*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& /*delay*/) { execute(trans); }

unsigned int Memory::transport_dbg(int /*id*/, tlm::tlm_generic_payload& trans) {
  return execute(trans) ? trans.get_data_length() : 0;
}

}  // namespace trnsim::model
