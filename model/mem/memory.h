// A byte-addressed memory as a TLM-2.0 target: HBM, SBUF or PSUM.
//
// Storage is allocated on touch in 64 KiB pages, so a 96 GiB HBM costs host memory only for what a run writes;
// bytes never written read as zero (or as the fill byte, set_fill).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace trnsim::model {

class Memory : public sc_core::sc_module {
 public:
  /// Target socket, for any number of initiators (a chip's HBM answers every core's bus); addresses are offsets
  /// 0..size-1 inside this memory. Accesses past the end answer TLM_ADDRESS_ERROR_RESPONSE. Zero-delay: engines
  /// charge their own transfer time.
  tlm_utils::multi_passthrough_target_socket<Memory> socket;

  Memory(const sc_core::sc_module_name& name, uint64_t size_bytes);

  uint64_t size() const { return size_; }
  /// Host-side access (debug and the engines' bulk paths). Throw std::out_of_range past the end.
  void read(uint64_t addr, void* data, uint64_t bytes) const;
  void write(uint64_t addr, const void* data, uint64_t bytes);
  /// The value of bytes never written (0 unless set; the checked mode uses 0xFF, a NaN in every float type).
  void set_fill(uint8_t byte) { fill_ = byte; }
  /// Host memory held by touched pages, in bytes.
  uint64_t resident_bytes() const { return pages_.size() * kPageBytes; }

 private:
  static constexpr uint64_t kPageBytes = 64 * 1024;
  void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& trans);
  bool execute(tlm::tlm_generic_payload& trans);
  void check(uint64_t addr, uint64_t bytes) const;

  uint64_t size_;
  uint8_t fill_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

}  // namespace trnsim::model
