// Host memory as the device's bus-master DMA reaches it (the DMA's space host; model/core/host_port.h). The host
// side implements it (pcie::GuestMemory: a QEMU guest's RAM); no SystemC here, so that adapters need none.
#pragma once

#include <cstdint>
#include <string>

namespace trnsim::model {

/// Host memory as the device's DMA reaches it: host bus addresses 0 .. HOST_SIZE-1.
class HostMemory {
 public:
  virtual ~HostMemory() = default;
  /// Copies `bytes` bytes at host bus address `addr`. False when they cannot all be reached (then nothing is copied):
  /// `why` says why (bus mastering off, no RAM at that address).
  virtual bool read(uint64_t addr, void* data, uint64_t bytes, std::string* why) = 0;
  virtual bool write(uint64_t addr, const void* data, uint64_t bytes, std::string* why) = 0;
};

}  // namespace trnsim::model
