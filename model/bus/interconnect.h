// The NeuronCore's address-decoding interconnect: any number of initiators (host bridge, queue fetch, DMA, TE)
// reach any number of targets (MMIO registers, SBUF, PSUM, HBM) through one device address map
// (docs/registers.md, "Address map").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace trnsim::model {

class Interconnect : public sc_core::sc_module {
 public:
  /// Initiators bind here (any number).
  tlm_utils::multi_passthrough_target_socket<Interconnect> target_socket;
  /// Bind targets here, in the order of map() calls.
  tlm_utils::multi_passthrough_initiator_socket<Interconnect> initiator_socket;

  explicit Interconnect(const sc_core::sc_module_name& name);

  /// Declares that the next target bound to initiator_socket answers [base, base + size); the target sees
  /// addresses relative to base. Regions must not overlap (std::invalid_argument).
  void map(const std::string& region, uint64_t base, uint64_t size);

 private:
  struct Region {
    std::string name;
    uint64_t base;
    uint64_t size;
  };
  /// Index of the region holding [addr, addr + len), or -1.
  int decode(uint64_t addr, uint64_t len) const;
  void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& trans);

  std::vector<Region> regions_;
};

}  // namespace trnsim::model
