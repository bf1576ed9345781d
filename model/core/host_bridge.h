// The host's port into the device (PCIe in silicon): a TLM initiator that turns the driver's register and memory
// accesses into bus transactions. Callable from outside the simulation (between sc_start calls): the targets it
// reaches never wait.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

namespace trnsim::model {

class HostBridge : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<HostBridge> socket;

  explicit HostBridge(const sc_core::sc_module_name& name) : sc_module(name), socket("socket") {}

  /// Device-address accesses. Throw std::out_of_range naming the address when no target answers it.
  void read(uint64_t device_addr, void* data, uint64_t bytes);
  void write(uint64_t device_addr, const void* data, uint64_t bytes);

 private:
  void transport(tlm::tlm_command cmd, uint64_t device_addr, void* data, uint64_t bytes);
};

}  // namespace trnsim::model
