// The device's bus-master port into host memory (host_port.h).
#include "model/core/host_port.h"

namespace trnsim::model {

HostPort::HostPort(const sc_core::sc_module_name& name) : sc_module(name), socket("socket") {
  socket.register_b_transport(this, &HostPort::b_transport);
  socket.register_transport_dbg(this, &HostPort::transport_dbg);
}

bool HostPort::execute(tlm::tlm_generic_payload& trans) {
  const uint64_t addr = trans.get_address(), bytes = trans.get_data_length();
  if (memory_ == nullptr) {
    error_ = "no host memory is attached (bus-master DMA needs the PCI function: trnsim serve --qemu)";
    return false;
  }
  std::string why;
  const bool ok = trans.is_read() ? memory_->read(addr, trans.get_data_ptr(), bytes, &why)
                                  : memory_->write(addr, trans.get_data_ptr(), bytes, &why);
  if (!ok) error_ = why;
  return ok;
}

void HostPort::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& /*delay*/) {
  trans.set_response_status(execute(trans) ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

unsigned int HostPort::transport_dbg(tlm::tlm_generic_payload& trans) {
  return execute(trans) ? trans.get_data_length() : 0;
}

}  // namespace trnsim::model
