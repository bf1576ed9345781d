#include "model/bus/interconnect.h"

#include <stdexcept>

namespace trnsim::model {

Interconnect::Interconnect(const sc_core::sc_module_name& name)
    : sc_module(name), target_socket("target_socket"), initiator_socket("initiator_socket") {
  target_socket.register_b_transport(this, &Interconnect::b_transport);
  target_socket.register_transport_dbg(this, &Interconnect::transport_dbg);
}

void Interconnect::map(const std::string& region, uint64_t base, uint64_t size) {
  for (const auto& r : regions_) {
    if (base < r.base + r.size && r.base < base + size) {
      throw std::invalid_argument("interconnect: region " + region + " overlaps " + r.name);
    }
  }
  regions_.push_back({region, base, size});
}

int Interconnect::decode(uint64_t addr, uint64_t len) const {
  for (size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    if (addr >= r.base && addr - r.base <= r.size && len <= r.size - (addr - r.base)) return int(i);
  }
  return -1;
}

void Interconnect::b_transport(int /*id*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const uint64_t addr = trans.get_address();
  const int target = decode(addr, trans.get_data_length());
  if (target < 0) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  trans.set_address(addr - regions_[target].base);
  initiator_socket[target]->b_transport(trans, delay);
  trans.set_address(addr);
}

unsigned int Interconnect::transport_dbg(int /*id*/, tlm::tlm_generic_payload& trans) {
  const uint64_t addr = trans.get_address();
  const int target = decode(addr, trans.get_data_length());
  if (target < 0) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return 0;
  }
  trans.set_address(addr - regions_[target].base);
  const unsigned int n = initiator_socket[target]->transport_dbg(trans);
  trans.set_address(addr);
  return n;
}

}  // namespace trnsim::model
