// Registers by name, for debug tools (`trnsim attach`): "STATUS", "Q_PC[2]" or "Q_PC[te]", "SEM[5]",
// "P_BUSY_LO[vec]", "DE_COPIES_LO[3]", "ERR_DETAIL[0]"; core 0's block by plain names, core c's as "COREc.STATUS",
// the chip's as "CHIP_CORES". The names are those of the generated register map
// (spec/registers.json, docs/registers.md); this file only parses and prints them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace trnsim::driver {

/// One register of the map, resolved.
struct RegisterRef {
  std::string name;     ///< canonical: "Q_PC[2]", "STATUS"
  uint32_t offset = 0;  ///< MMIO byte offset
  std::string access;   ///< RO, RW, WO, RW1C
};

/// Resolves a register name (case-insensitive). Block and array registers take an index in brackets: a number
/// below the block's slots / the array's count, or for the queue blocks (QUEUE, PERF) a queue name (te, dma, act,
/// vec, cc). Throws std::invalid_argument naming what is wrong (unknown name: with the closest kinds of names; a
/// missing, unexpected or out-of-range index).
RegisterRef find_register(std::string_view name);

/// The canonical name of the register at `offset` ("Q_PC[2]", "CORE1.STATUS"), or "" for a hole in the map.
std::string register_name(uint32_t offset);

}  // namespace trnsim::driver
