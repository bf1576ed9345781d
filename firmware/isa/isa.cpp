// trnsim ISA v0: encoding, decoding, validation and names (layout: docs/isa.md).
#include "firmware/isa/isa.h"

#include <type_traits>

#include <fmt/core.h>

namespace trnsim::isa {
namespace {

// Formats and their byte layout (docs/isa.md).
enum class Format { kPlain, kSem, kCopy, kTe };

Format format_of(Opcode op) {
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt: return Format::kPlain;
    case Opcode::kSemSignal:
    case Opcode::kSemWait: return Format::kSem;
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: return Format::kCopy;
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: return Format::kTe;
  }
  return Format::kPlain;
}

/// Half-open byte ranges [first, last) that are reserved in a format.
struct ByteRange {
  std::size_t first;
  std::size_t last;
};

std::vector<ByteRange> reserved_ranges(Format f) {
  switch (f) {
    case Format::kPlain: return {{1, 64}};
    case Format::kSem: return {{1, 4}, {5, 8}, {12, 64}};
    case Format::kCopy: return {{6, 8}};
    case Format::kTe: return {{3, 8}, {28, 64}};
  }
  return {};
}

// Byte offsets of the fields.
constexpr std::size_t kOffFlags = 1;
constexpr std::size_t kOffSem = 4;
constexpr std::size_t kOffValue = 8;
constexpr std::size_t kOffSrcType = 2, kOffDstType = 3, kOffSrcSpace = 4, kOffDstSpace = 5;
constexpr std::size_t kOffSrcAddr = 8, kOffDstAddr = 16, kOffCount = 24, kOffSrcStride = 32, kOffDstStride = 48;
constexpr std::size_t kOffDtype = 2, kOffSbufAddr = 8, kOffPsumAddr = 16, kOffK = 24, kOffFreeSize = 26;

constexpr uint8_t kFlagAccumulate = 0x01;  // te format
constexpr uint8_t kFlagNoSat = 0x02;       // copy format

template <typename T>
void put(uint8_t* p, T v) {
  using U = std::make_unsigned_t<T>;
  const U u = static_cast<U>(v);
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(u >> (8 * i));
}

template <typename T>
T get(const uint8_t* p) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>(u | (static_cast<U>(p[i]) << (8 * i)));
  return static_cast<T>(u);
}

IsaError bad(std::string_view field, std::string message) {
  return IsaError{IsaError::Code::kBadField, std::string(field), std::move(message)};
}

bool is_opcode(uint8_t byte) {
  for (const Opcode op : kAllOpcodes) {
    if (static_cast<uint8_t>(op) == byte) return true;
  }
  return false;
}

bool valid_space(MemSpace s) { return static_cast<uint8_t>(s) <= static_cast<uint8_t>(MemSpace::kPsum); }
bool valid_type(DataType t) { return static_cast<uint8_t>(t) <= static_cast<uint8_t>(DataType::kFp32); }
bool valid_dtype(Dtype t) { return static_cast<uint8_t>(t) <= static_cast<uint8_t>(Dtype::kFp8E5M2); }

std::optional<IsaError> check_space(std::string_view field, MemSpace s) {
  if (valid_space(s)) return std::nullopt;
  return bad(field, fmt::format("value {} is not a memory space (0 hbm, 1 sbuf, 2 psum)", static_cast<int>(s)));
}

std::optional<IsaError> check_type(std::string_view field, DataType t) {
  if (valid_type(t)) return std::nullopt;
  return bad(field, fmt::format("value {} is not a data type (0..4: bf16, fp16, fp8e4m3, fp8e5m2, fp32)",
                                static_cast<int>(t)));
}

std::optional<IsaError> check_dtype(Dtype t) {
  if (valid_dtype(t)) return std::nullopt;
  return bad("dtype", fmt::format("value {} is not a dtype (0..3: bf16, fp16, fp8e4m3, fp8e5m2)",
                                  static_cast<int>(t)));
}

std::optional<IsaError> check_psum_aligned(std::string_view field, uint64_t addr) {
  if (addr % 4 == 0) return std::nullopt;
  return bad(field, fmt::format("PSUM address {:#x} is not 4-byte aligned", addr));
}

std::optional<IsaError> validate_copy(Opcode op, const CopyFields& c) {
  for (const auto& err : {check_type("src_type", c.src_type), check_type("dst_type", c.dst_type),
                          check_space("src_space", c.src_space), check_space("dst_space", c.dst_space)}) {
    if (err) return err;
  }
  if (c.src_space == MemSpace::kPsum) {
    if (auto err = check_psum_aligned("src_addr", c.src_addr)) return err;
  }
  if (c.dst_space == MemSpace::kPsum) {
    if (auto err = check_psum_aligned("dst_addr", c.dst_addr)) return err;
  }
  for (std::size_t d = 0; d < kApDims; ++d) {
    if (c.count[d] == 0) return bad("count", fmt::format("count[{}] is 0, must be >= 1", d));
  }
  if (op == Opcode::kPsumCopy) {
    if (c.src_space != MemSpace::kPsum) {
      return bad("src_space", fmt::format("psum_copy reads PSUM, not {}", mem_space_name(c.src_space)));
    }
    if (c.dst_space != MemSpace::kSbuf) {
      return bad("dst_space", fmt::format("psum_copy writes SBUF, not {}", mem_space_name(c.dst_space)));
    }
    if (c.src_type != DataType::kFp32) {
      return bad("src_type", fmt::format("psum_copy reads fp32, not {}", data_type_name(c.src_type)));
    }
  }
  return std::nullopt;
}

std::optional<IsaError> validate_te(Opcode op, const TeFields& t) {
  if (auto err = check_dtype(t.dtype)) return err;
  const bool load = op == Opcode::kLoadStationary;
  if (load && t.accumulate) return bad("flags", "load_stationary has no accumulate flag");
  if (load && t.psum_addr != 0) {
    return bad("psum_addr", fmt::format("psum_addr {:#x} must be 0 for load_stationary", t.psum_addr));
  }
  if (!load) {
    if (auto err = check_psum_aligned("psum_addr", t.psum_addr)) return err;
  }
  if (t.k == 0) return bad("k", "k is 0, must be >= 1");
  if (t.free_size == 0) return bad("free_size", fmt::format("{} is 0, must be >= 1", load ? "M" : "N"));
  if (!load && t.free_size > kMaxMovingN) {
    return bad("free_size", fmt::format("N {} is out of range 1..{}", t.free_size, kMaxMovingN));
  }
  return std::nullopt;
}

}  // namespace

int field_id(std::string_view field) {
  for (int i = 0; i < kNumFields; ++i) {
    if (kFieldNames[i] == field) return i + 1;
  }
  return 0;
}

std::string_view field_name(int id) { return id >= 1 && id <= kNumFields ? kFieldNames[id - 1] : std::string_view{}; }

std::string describe(const IsaError& error) { return fmt::format("field {}: {}", error.field, error.message); }

bool operator==(const Instruction& a, const Instruction& b) {
  if (a.op != b.op) return false;
  switch (format_of(a.op)) {
    case Format::kPlain: return true;
    case Format::kSem: return a.sem.sem == b.sem.sem && a.sem.value == b.sem.value;
    case Format::kCopy: {
      const CopyFields& x = a.copy;
      const CopyFields& y = b.copy;
      return x.src_type == y.src_type && x.dst_type == y.dst_type && x.src_space == y.src_space &&
             x.dst_space == y.dst_space && x.no_sat == y.no_sat && x.src_addr == y.src_addr &&
             x.dst_addr == y.dst_addr && x.count == y.count && x.src_stride == y.src_stride &&
             x.dst_stride == y.dst_stride;
    }
    case Format::kTe: {
      const TeFields& x = a.te;
      const TeFields& y = b.te;
      return x.dtype == y.dtype && x.accumulate == y.accumulate && x.sbuf_addr == y.sbuf_addr &&
             x.psum_addr == y.psum_addr && x.k == y.k && x.free_size == y.free_size;
    }
  }
  return false;
}

std::array<uint8_t, kInstrBytes> encode(const Instruction& instr) {
  std::array<uint8_t, kInstrBytes> b{};
  uint8_t* p = b.data();
  p[0] = static_cast<uint8_t>(instr.op);
  switch (format_of(instr.op)) {
    case Format::kPlain: break;
    case Format::kSem:
      p[kOffSem] = instr.sem.sem;
      put<uint32_t>(p + kOffValue, instr.sem.value);
      break;
    case Format::kCopy: {
      const CopyFields& c = instr.copy;
      p[kOffFlags] = c.no_sat ? kFlagNoSat : 0;
      p[kOffSrcType] = static_cast<uint8_t>(c.src_type);
      p[kOffDstType] = static_cast<uint8_t>(c.dst_type);
      p[kOffSrcSpace] = static_cast<uint8_t>(c.src_space);
      p[kOffDstSpace] = static_cast<uint8_t>(c.dst_space);
      put<uint64_t>(p + kOffSrcAddr, c.src_addr);
      put<uint64_t>(p + kOffDstAddr, c.dst_addr);
      for (std::size_t d = 0; d < kApDims; ++d) {
        put<uint16_t>(p + kOffCount + 2 * d, c.count[d]);
        put<int32_t>(p + kOffSrcStride + 4 * d, c.src_stride[d]);
        put<int32_t>(p + kOffDstStride + 4 * d, c.dst_stride[d]);
      }
      break;
    }
    case Format::kTe: {
      const TeFields& t = instr.te;
      p[kOffFlags] = t.accumulate ? kFlagAccumulate : 0;
      p[kOffDtype] = static_cast<uint8_t>(t.dtype);
      put<uint64_t>(p + kOffSbufAddr, t.sbuf_addr);
      put<uint64_t>(p + kOffPsumAddr, t.psum_addr);
      put<uint16_t>(p + kOffK, t.k);
      put<uint16_t>(p + kOffFreeSize, t.free_size);
      break;
    }
  }
  return b;
}

std::optional<IsaError> decode(const uint8_t* bytes, Instruction* out) {
  if (!is_opcode(bytes[0])) {
    return IsaError{IsaError::Code::kBadOpcode, "opcode", fmt::format("byte {:#04x} is not an opcode", bytes[0])};
  }
  Instruction instr;
  instr.op = static_cast<Opcode>(bytes[0]);
  const Format format = format_of(instr.op);
  for (const ByteRange r : reserved_ranges(format)) {
    for (std::size_t i = r.first; i < r.last; ++i) {
      if (bytes[i] != 0) {
        return IsaError{IsaError::Code::kReservedNonZero, "reserved",
                        fmt::format("byte {} is {:#04x}, must be 0", i, bytes[i])};
      }
    }
  }
  const uint8_t flags = bytes[kOffFlags];
  const auto undefined_flags = [&](uint8_t defined) -> std::optional<IsaError> {
    if ((flags & ~defined) == 0) return std::nullopt;
    return bad("flags", fmt::format("flags {:#04x}: bits {:#04x} are not defined for {}", flags,
                                    flags & ~defined, *opcode_name(instr.op)));
  };
  switch (format) {
    case Format::kPlain: break;
    case Format::kSem:
      instr.sem.sem = bytes[kOffSem];
      instr.sem.value = get<uint32_t>(bytes + kOffValue);
      break;
    case Format::kCopy: {
      if (auto err = undefined_flags(kFlagNoSat)) return err;
      CopyFields& c = instr.copy;
      c.no_sat = (flags & kFlagNoSat) != 0;
      c.src_type = static_cast<DataType>(bytes[kOffSrcType]);
      c.dst_type = static_cast<DataType>(bytes[kOffDstType]);
      c.src_space = static_cast<MemSpace>(bytes[kOffSrcSpace]);
      c.dst_space = static_cast<MemSpace>(bytes[kOffDstSpace]);
      c.src_addr = get<uint64_t>(bytes + kOffSrcAddr);
      c.dst_addr = get<uint64_t>(bytes + kOffDstAddr);
      for (std::size_t d = 0; d < kApDims; ++d) {
        c.count[d] = get<uint16_t>(bytes + kOffCount + 2 * d);
        c.src_stride[d] = get<int32_t>(bytes + kOffSrcStride + 4 * d);
        c.dst_stride[d] = get<int32_t>(bytes + kOffDstStride + 4 * d);
      }
      break;
    }
    case Format::kTe: {
      const bool load = instr.op == Opcode::kLoadStationary;
      if (auto err = undefined_flags(load ? 0 : kFlagAccumulate)) return err;
      TeFields& t = instr.te;
      t.accumulate = (flags & kFlagAccumulate) != 0;
      t.dtype = static_cast<Dtype>(bytes[kOffDtype]);
      t.sbuf_addr = get<uint64_t>(bytes + kOffSbufAddr);
      t.psum_addr = get<uint64_t>(bytes + kOffPsumAddr);
      t.k = get<uint16_t>(bytes + kOffK);
      t.free_size = get<uint16_t>(bytes + kOffFreeSize);
      break;
    }
  }
  if (auto err = validate(instr)) return err;
  *out = instr;
  return std::nullopt;
}

std::optional<IsaError> validate(const Instruction& instr) {
  if (!is_opcode(static_cast<uint8_t>(instr.op))) {
    return IsaError{IsaError::Code::kBadOpcode, "opcode",
                    fmt::format("value {:#04x} is not an opcode", static_cast<int>(instr.op))};
  }
  switch (format_of(instr.op)) {
    case Format::kPlain: return std::nullopt;
    case Format::kSem:
      if (instr.sem.sem >= kNumSemaphores) {
        return bad("sem", fmt::format("sem {} is out of range 0..{}", instr.sem.sem, kNumSemaphores - 1));
      }
      return std::nullopt;
    case Format::kCopy: return validate_copy(instr.op, instr.copy);
    case Format::kTe: return validate_te(instr.op, instr.te);
  }
  return std::nullopt;
}

bool engine_accepts(Engine engine, Opcode op) {
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt:
    case Opcode::kSemSignal:
    case Opcode::kSemWait: return engine == Engine::kTe || engine == Engine::kDma;
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: return engine == Engine::kTe;
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: return engine == Engine::kDma;
  }
  return false;
}

std::optional<std::string_view> opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kNop: return "nop";
    case Opcode::kHalt: return "halt";
    case Opcode::kSemSignal: return "sem_signal";
    case Opcode::kSemWait: return "sem_wait";
    case Opcode::kDmaCopy: return "dma_copy";
    case Opcode::kLoadStationary: return "load_stationary";
    case Opcode::kMultiplyMoving: return "multiply_moving";
    case Opcode::kPsumCopy: return "psum_copy";
  }
  return std::nullopt;
}

std::string_view engine_name(Engine engine) {
  switch (engine) {
    case Engine::kTe: return "te";
    case Engine::kDma: return "dma";
  }
  return "?";
}

std::string_view mem_space_name(MemSpace space) {
  switch (space) {
    case MemSpace::kHbm: return "hbm";
    case MemSpace::kSbuf: return "sbuf";
    case MemSpace::kPsum: return "psum";
  }
  return "?";
}

std::string_view data_type_name(DataType type) {
  switch (type) {
    case DataType::kBf16: return "bf16";
    case DataType::kFp16: return "fp16";
    case DataType::kFp8E4M3: return "fp8e4m3";
    case DataType::kFp8E5M2: return "fp8e5m2";
    case DataType::kFp32: return "fp32";
  }
  return "?";
}

}  // namespace trnsim::isa
