// trnsim ISA v0: the binary program file (layout: docs/isa.md, "Binary program file").
#include <algorithm>
#include <cstring>

#include <fmt/core.h>

#include "firmware/isa/isa.h"

namespace trnsim::isa {
namespace {

constexpr char kMagic[4] = {'T', 'R', 'N', 'P'};
constexpr uint32_t kVersion = 0;
constexpr std::size_t kHeaderBytes = 12;     // magic, version, queue count
constexpr std::size_t kQueueEntryBytes = 8;  // engine id, instruction count

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint32_t get_u32(const std::vector<uint8_t>& in, std::size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in[at + i]) << (8 * i);
  return v;
}

[[noreturn]] void fail(const std::string& message) { throw ProgramError(message); }

}  // namespace

std::vector<uint8_t> write_program_binary(const Program& program) {
  std::vector<uint8_t> out(std::begin(kMagic), std::end(kMagic));
  put_u32(out, kVersion);
  uint32_t listed = 0;
  for (const auto& q : program.queues) listed += q.empty() ? 0 : 1;
  put_u32(out, listed);
  for (std::size_t e = 0; e < program.queues.size(); ++e) {
    if (program.queues[e].empty()) continue;
    put_u32(out, static_cast<uint32_t>(e));
    put_u32(out, static_cast<uint32_t>(program.queues[e].size()));
  }
  for (const auto& q : program.queues) {
    for (const Instruction& instr : q) {
      const auto bytes = encode(instr);
      out.insert(out.end(), bytes.begin(), bytes.end());
    }
  }
  return out;
}

bool is_binary_program(const std::vector<uint8_t>& bytes) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "TRNP", 4) == 0) return true;
  for (const uint8_t b : bytes) {
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f') || b == 0x7F) return true;
  }
  return false;
}

Program read_program_binary(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < kHeaderBytes) {
    fail(fmt::format("short file: {} bytes, the header alone is {}", bytes.size(), kHeaderBytes));
  }
  if (!std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin())) {
    fail(fmt::format("bad magic {:02x} {:02x} {:02x} {:02x}, expected \"TRNP\"", bytes[0], bytes[1], bytes[2],
                     bytes[3]));
  }
  const uint32_t version = get_u32(bytes, 4);
  if (version != kVersion) fail(fmt::format("version {} is not supported (expected {})", version, kVersion));
  const uint32_t queue_count = get_u32(bytes, 8);
  if (queue_count > static_cast<uint32_t>(kNumQueues)) {
    fail(fmt::format("queue count {} is more than the {} queues of v0", queue_count, kNumQueues));
  }
  const std::size_t table_end = kHeaderBytes + queue_count * kQueueEntryBytes;
  if (bytes.size() < table_end) {
    fail(fmt::format("short file: {} bytes, the queue table of {} queues ends at byte {}", bytes.size(),
                     queue_count, table_end));
  }

  Program program;
  std::size_t at = table_end;
  int previous = -1;
  for (uint32_t q = 0; q < queue_count; ++q) {
    const uint32_t id = get_u32(bytes, kHeaderBytes + q * kQueueEntryBytes);
    const uint32_t count = get_u32(bytes, kHeaderBytes + q * kQueueEntryBytes + 4);
    if (id >= static_cast<uint32_t>(kNumQueues)) fail(fmt::format("queue table entry {}: unknown engine id {}", q, id));
    const Engine engine = static_cast<Engine>(id);
    const std::string_view name = engine_name(engine);
    if (static_cast<int>(id) == previous) fail(fmt::format("queue table entry {}: duplicate engine {}", q, name));
    if (static_cast<int>(id) < previous) {
      fail(fmt::format("queue table entry {}: engine {} out of order (queues are listed by increasing engine id)",
                       q, name));
    }
    if (count == 0) fail(fmt::format("queue {}: instruction count 0 (empty queues are not listed)", name));
    previous = static_cast<int>(id);

    auto& instrs = program.queue(engine);
    instrs.reserve(std::min<std::size_t>(count, (bytes.size() - at) / kInstrBytes));
    for (uint32_t i = 0; i < count; ++i, at += kInstrBytes) {
      if (at + kInstrBytes > bytes.size()) {
        fail(fmt::format("queue {}, instruction {}: truncated (file ends at byte {}, queue declares {} instructions)",
                         name, i, bytes.size(), count));
      }
      Instruction instr;
      if (const auto err = decode(bytes.data() + at, &instr)) {
        fail(fmt::format("queue {}, instruction {}: {}", name, i, describe(*err)));
      }
      if (!engine_accepts(engine, instr.op)) {
        fail(fmt::format("queue {}, instruction {}: field opcode: {} is not accepted by the {} queue", name, i,
                         *opcode_name(instr.op), name));
      }
      instrs.push_back(instr);
    }
  }
  if (at != bytes.size()) {
    fail(fmt::format("{} trailing bytes after the last instruction (byte {})", bytes.size() - at, at));
  }
  return program;
}

}  // namespace trnsim::isa
