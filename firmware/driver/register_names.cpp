#include "firmware/driver/register_names.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

#include "firmware/isa/isa.h"
#include "spec/trn_regs.h"

namespace trnsim::driver {

namespace {

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

/// The index inside "[...]": a number below `count`, or (queue blocks) a queue name.
uint32_t parse_index(std::string_view text, uint32_t count, bool queues, std::string_view what) {
  if (queues) {
    for (int q = 0; q < isa::kNumQueues; ++q) {
      if (upper(isa::engine_name(static_cast<isa::Engine>(q))) == upper(text)) return uint32_t(q);
    }
  }
  uint64_t v = 0;
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (digits && text.size() <= 9) {
    for (char c : text) v = v * 10 + uint64_t(c - '0');
  }
  if (!digits || text.size() > 9 || v >= count) {
    throw std::invalid_argument(fmt::format("register {}[{}]: the index must be 0 .. {}{}", what, text, count - 1,
                                            queues ? " or a queue name (te, dma, act, vec, cc)" : ""));
  }
  return uint32_t(v);
}

}  // namespace

RegisterRef find_register(std::string_view name) {
  // "CORE3.STATUS": register STATUS of core 3's block (spec/registers.json, "The chip and its cores").
  if (const std::string u = upper(name); u.rfind("CORE", 0) == 0 && u.size() > 4 && std::isdigit(u[4])) {
    const auto dot = u.find('.');
    if (dot == std::string::npos) {
      throw std::invalid_argument(fmt::format("register {}: a core's register is written COREc.NAME", name));
    }
    const uint32_t core = parse_index(u.substr(4, dot - 4), regs::MAX_CORES, false, "CORE");
    RegisterRef r = find_register(name.substr(dot + 1));
    if (r.offset >= regs::CHIP_BASE) {
      throw std::invalid_argument(fmt::format("register {}: {} is the chip's, not a core's", name, r.name));
    }
    return {fmt::format("CORE{}.{}", core, r.name), core * regs::CORE_STRIDE + r.offset, r.access};
  }
  const std::string n = upper(name);
  const auto open = n.find('[');
  const std::string base = n.substr(0, open);
  std::string index;
  if (open != std::string::npos) {
    if (n.back() != ']' || n.size() < open + 3) {
      throw std::invalid_argument(fmt::format("register {}: an index is written NAME[i]", name));
    }
    index = std::string(name.substr(open + 1, n.size() - open - 2));
  }
  for (const regs::RegisterName& r : regs::kRegisterNames) {
    if (r.name != base) continue;
    if (!index.empty()) throw std::invalid_argument(fmt::format("register {} takes no index", r.name));
    return {std::string(r.name), r.offset, std::string(r.access)};
  }
  for (const regs::BlockRegisterName& r : regs::kBlockRegisterNames) {
    if (r.name != base) continue;
    const regs::BlockName& b = regs::kBlockNames[r.block];
    if (index.empty()) {
      throw std::invalid_argument(fmt::format("register {} is one per {}: write {}[i]", r.name, b.unit, r.name));
    }
    const uint32_t i = parse_index(index, b.slots, b.unit == "queue", r.name);
    return {fmt::format("{}[{}]", r.name, i), b.base + i * b.stride + r.rel, std::string(r.access)};
  }
  for (const regs::ArrayName& a : regs::kArrayNames) {
    if (a.name != base) continue;
    if (index.empty()) throw std::invalid_argument(fmt::format("register {} is an array: write {}[i]", a.name, a.name));
    const uint32_t i = parse_index(index, a.count, false, a.name);
    return {fmt::format("{}[{}]", a.name, i), a.base + i * a.stride, std::string(a.access)};
  }
  throw std::invalid_argument(
      fmt::format("no register named {} in the register map (docs/registers.md); e.g. "
                  "STATUS, Q_PC[te], SEM[0], P_BUSY_LO[dma], DE_COPIES_LO[0]",
                  name));
}

std::string register_name(uint32_t offset) {
  if (offset >= regs::CORE_STRIDE && offset < regs::CHIP_BASE) {  // core c's block: its core 0 name, prefixed
    const std::string inner = register_name(offset % regs::CORE_STRIDE);
    return inner.empty() ? inner : fmt::format("CORE{}.{}", offset / regs::CORE_STRIDE, inner);
  }
  for (const regs::RegisterName& r : regs::kRegisterNames) {
    if (r.offset == offset) return std::string(r.name);
  }
  for (const regs::BlockRegisterName& r : regs::kBlockRegisterNames) {
    const regs::BlockName& b = regs::kBlockNames[r.block];
    if (offset < b.base || offset >= b.base + b.slots * b.stride) continue;
    if ((offset - b.base) % b.stride == r.rel) return fmt::format("{}[{}]", r.name, (offset - b.base) / b.stride);
  }
  for (const regs::ArrayName& a : regs::kArrayNames) {
    if (offset >= a.base && offset < a.base + a.count * a.stride && (offset - a.base) % a.stride == 0) {
      return fmt::format("{}[{}]", a.name, (offset - a.base) / a.stride);
    }
  }
  return {};
}

}  // namespace trnsim::driver
