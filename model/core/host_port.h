// The device's bus-master port into host memory (the DMA's space host, docs/linux-driver.md): a TLM target on the
// device address map at HOST_BASE that forwards to a HostMemory the host side attaches (the QEMU transport attaches
// the guest's RAM). With none attached every access fails, and the copy stops the device with HOST_ACCESS.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/core/host_memory.h"

namespace trnsim::model {

class HostPort : public sc_core::sc_module {
 public:
  /// Addresses are host bus addresses (offsets from HOST_BASE). A failed access answers TLM_ADDRESS_ERROR_RESPONSE
  /// and leaves its reason in last_error().
  tlm_utils::simple_target_socket<HostPort> socket;

  explicit HostPort(const sc_core::sc_module_name& name);

  /// Attaches `memory` (not owned; nullptr detaches). Call between simulation runs.
  void attach(HostMemory* memory) { memory_ = memory; }
  const std::string& last_error() const { return error_; }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
  bool execute(tlm::tlm_generic_payload& trans);

  HostMemory* memory_ = nullptr;
  std::string error_;
};

}  // namespace trnsim::model
