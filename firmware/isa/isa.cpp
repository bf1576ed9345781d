// trnsim ISA v0: encoding, decoding, validation and names (layout: docs/isa.md).
#include "firmware/isa/isa.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <fmt/core.h>

namespace trnsim::isa {
namespace {

// Formats and their byte layout (docs/isa.md).
enum class Format { kPlain, kSem, kCopy, kTe, kVec, kAct, kCc };

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
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
    case Opcode::kTensorReduce:
    case Opcode::kTensorCopy:
    case Opcode::kMemset:
    case Opcode::kIota:
    case Opcode::kSelect:
    case Opcode::kTranspose:
    case Opcode::kQuantizeMx: return Format::kVec;
    case Opcode::kActivation: return Format::kAct;
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kSend:
    case Opcode::kRecv: return Format::kCc;
  }
  return Format::kPlain;
}

/// Half-open byte ranges [first, last) that are reserved in a format.
struct ByteRange {
  std::size_t first;
  std::size_t last;
};

// Byte offsets of the tensor-op formats (Vector and Scalar engines). Header: 2 op/func, 3 op1/axis, 4..5
// partitions, 6..9 free counts, 10..11 reserved. Operand slots of 12 bytes: 0 space, 1 type, 2..3 partition,
// 4..7 offset, 8..11 stride[2] (i16 elements); a column operand is the first 8 bytes of a slot.
constexpr std::size_t kOffOp = 2, kOffOp1 = 3, kOffPartitions = 4, kOffFree = 6;
constexpr std::size_t kOffOut = 12, kOffIn0 = 24, kOffIn1 = 36, kOffIn2 = 48;
constexpr std::size_t kOffImm0 = 36, kOffImm1 = 40;                                  // tensor_scalar, memset
constexpr std::size_t kOffBase = 36, kOffPstep = 40, kOffStep = 44;                 // iota
constexpr std::size_t kOffScale = 36, kOffBias = 40, kOffBiasAp = 44, kOffSum = 52;  // activation
// activation with a scale tensor: the scale column in 36..43, the bias immediate moves to 60..63.
constexpr std::size_t kOffScaleAp = 36, kOffBiasWithScaleAp = 60;

constexpr uint8_t kFlagCore = 0x01;        // sem_signal: byte 5 names the core whose semaphore it increments
constexpr uint8_t kOffSemCore = 5;
constexpr uint8_t kFlagDoneSem = 0x20;     // copy format: byte 6 names the semaphore the landed copy increments
constexpr uint8_t kOffDoneSem = 6;
constexpr uint8_t kFlagBiasTensor = 0x04;  // act format
constexpr uint8_t kFlagReduce = 0x08;      // act format
constexpr uint8_t kFlagSumAcc = 0x20;      // act format: the sum starts from the sum column's value
constexpr uint8_t kFlagScaleTensor = 0x40; // act format: scale is a column

/// Where activation's bias immediate is: 40..43, or 60..63 with a scale tensor (whose column takes 36..43).
constexpr std::size_t bias_imm_offset(bool scale_tensor) { return scale_tensor ? kOffBiasWithScaleAp : kOffBias; }

/// Reserved byte ranges of an opcode. For the tensor-op formats some depend on other bytes of the instruction
/// (`bytes`, may be null for the static part): tensor_scalar without op1 reserves imm1; activation reserves the
/// bias immediate with a bias tensor, the bias operand without one, and the sum operand without reduce.
std::vector<ByteRange> reserved_ranges(Opcode op, const uint8_t* bytes) {
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt: return {{1, 64}};
    // sem_signal's flags byte (bit 0: to another core) and core byte are fields; byte 5 is reserved without bit 0.
    case Opcode::kSemSignal:
      if (bytes && (bytes[1] & kFlagCore)) return {{2, 4}, {6, 8}, {12, 64}};
      return {{2, 4}, {5, 8}, {12, 64}};
    case Opcode::kSemWait: return {{1, 4}, {5, 8}, {12, 64}};
    // A copy's byte 6 is its completion semaphore with flag bit 5, else reserved.
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy:
      if (bytes && (bytes[1] & kFlagDoneSem)) return {{7, 8}};
      return {{6, 8}};
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: {
      // scale_addr (bytes 32..39) is a field of the MX dtypes only; for the others the bytes stay reserved.
      if (bytes && !is_mx(static_cast<DataType>(bytes[2]))) return {{3, 8}, {28, 64}};
      return {{3, 8}, {28, 32}, {40, 64}};
    }
    case Opcode::kTensorTensor: return {{3, 4}, {10, 12}, {48, 64}};
    case Opcode::kTensorScalar: {
      std::vector<ByteRange> r = {{10, 12}};
      if (bytes && bytes[kOffOp1] == static_cast<uint8_t>(AluOp::kNone)) r.push_back({kOffImm1, kOffImm1 + 4});
      r.push_back({44, 64});
      return r;
    }
    case Opcode::kTensorReduce: return {{10, 12}, {36, 64}};
    case Opcode::kTensorCopy:
    case Opcode::kTranspose: return {{2, 4}, {10, 12}, {36, 64}};
    case Opcode::kMemset: return {{2, 4}, {10, 12}, {24, 36}, {40, 64}};
    // quantize_mx: out and scales are locations (their type byte and strides reserved).
    case Opcode::kQuantizeMx: return {{3, 4}, {10, 12}, {13, 14}, {20, 24}, {37, 38}, {44, 64}};
    case Opcode::kIota: return {{2, 4}, {10, 12}, {24, 36}, {52, 64}};
    case Opcode::kSelect: return {{2, 4}, {10, 12}, {60, 64}};
    case Opcode::kActivation: {
      std::vector<ByteRange> r = {{3, 4}, {10, 12}};
      const uint8_t flags = bytes ? bytes[1] : 0;
      const std::size_t bias_imm = bias_imm_offset((flags & kFlagScaleTensor) != 0);
      if (flags & kFlagBiasTensor) {
        r.push_back({bias_imm, bias_imm + 4});
      } else {
        r.push_back({kOffBiasAp, kOffBiasAp + 8});
      }
      if (!(flags & kFlagReduce)) r.push_back({kOffSum, kOffSum + 8});
      if (!(flags & kFlagScaleTensor)) r.push_back({60, 64});
      std::sort(r.begin(), r.end(), [](const ByteRange& x, const ByteRange& y) { return x.first < y.first; });
      return r;
    }
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter: return {{1, 2}, {4, 8}, {24, 64}};
    case Opcode::kSend:
    case Opcode::kRecv: return {{1, 4}, {24, 64}};
  }
  return {};
}

// Byte offsets of the collective format "cc".
constexpr std::size_t kOffCcDtype = 2, kOffCcAlgorithm = 3, kOffCcPeer = 4, kOffCcAddr = 8, kOffCcCount = 16;

// Byte offsets of the fields.
constexpr std::size_t kOffFlags = 1;
constexpr std::size_t kOffSem = 4;
constexpr std::size_t kOffValue = 8;
constexpr std::size_t kOffSrcType = 2, kOffDstType = 3, kOffSrcSpace = 4, kOffDstSpace = 5;
constexpr std::size_t kOffSrcAddr = 8, kOffDstAddr = 16, kOffCount = 24, kOffSrcStride = 32, kOffDstStride = 48;
constexpr std::size_t kOffDtype = 2, kOffSbufAddr = 8, kOffPsumAddr = 16, kOffK = 24, kOffFreeSize = 26;
constexpr std::size_t kOffScaleAddr = 32;

constexpr uint8_t kFlagAccumulate = 0x01;  // te format
constexpr uint8_t kFlagNoSat = 0x02;       // copy format
constexpr uint8_t kFlagSr = 0x10;          // copy, tensor-op and act formats: stochastic rounding of the casts

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

bool valid_space(MemSpace s) { return static_cast<uint8_t>(s) <= static_cast<uint8_t>(MemSpace::kHost); }
bool valid_type(DataType t) { return static_cast<uint8_t>(t) <= static_cast<uint8_t>(DataType::kFp32); }
bool valid_dtype(Dtype t) { return is_te_dtype(t); }

std::optional<IsaError> check_space(std::string_view field, MemSpace s) {
  if (valid_space(s)) return std::nullopt;
  return bad(field, fmt::format("value {} is not a memory space (0 hbm, 1 sbuf, 2 psum, 3 host)", static_cast<int>(s)));
}

std::optional<IsaError> check_type(std::string_view field, DataType t) {
  if (valid_type(t)) return std::nullopt;
  return bad(field, fmt::format("value {} is not a data type (0..4: bf16, fp16, fp8e4m3, fp8e5m2, fp32)",
                                static_cast<int>(t)));
}

std::optional<IsaError> check_dtype(Dtype t) {
  if (valid_dtype(t)) return std::nullopt;
  return bad("dtype", fmt::format("value {} is not a dtype (0..3: bf16, fp16, fp8e4m3, fp8e5m2; 5..7: mxfp8e4m3, "
                                  "mxfp8e5m2, mxfp4)", static_cast<int>(t)));
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
  if (c.done_sem < -1 || c.done_sem >= kNumSemaphores) {
    return bad("done_sem", fmt::format("done_sem {} is out of range 0..{}", c.done_sem, kNumSemaphores - 1));
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
  // PSUM holds FP32, for every engine (the Vector and Scalar operands' rule, check_operand).
  if (c.src_space == MemSpace::kPsum && c.src_type != DataType::kFp32) {
    return bad("src_type", fmt::format("PSUM holds fp32, not {}", data_type_name(c.src_type)));
  }
  if (c.dst_space == MemSpace::kPsum && c.dst_type != DataType::kFp32) {
    return bad("dst_type", fmt::format("PSUM holds fp32, not {}", data_type_name(c.dst_type)));
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
  if (!is_mx(t.dtype) && t.scale_addr != 0) {
    return bad("scale_addr", fmt::format("scale_addr {:#x} must be 0 for dtype {} (only MX dtypes have scales)",
                                         t.scale_addr, dtype_name(t.dtype)));
  }
  if (t.k == 0) return bad("k", "k is 0, must be >= 1");
  if (t.free_size == 0) return bad("free_size", fmt::format("{} is 0, must be >= 1", load ? "M" : "N"));
  if (!load && t.free_size > kMaxMovingN) {
    return bad("free_size", fmt::format("N {} is out of range 1..{}", t.free_size, kMaxMovingN));
  }
  return std::nullopt;
}

// ---- Tensor-op formats (Vector and Scalar engines)

void put_operand(uint8_t* p, const Operand& o, bool column) {
  p[0] = static_cast<uint8_t>(o.space);
  p[1] = static_cast<uint8_t>(o.type);
  put<uint16_t>(p + 2, o.partition);
  put<uint32_t>(p + 4, o.offset);
  if (!column) {
    put<int16_t>(p + 8, o.stride[0]);
    put<int16_t>(p + 10, o.stride[1]);
  }
}

Operand get_operand(const uint8_t* p, bool column) {
  Operand o;
  o.space = static_cast<MemSpace>(p[0]);
  o.type = static_cast<DataType>(p[1]);
  o.partition = get<uint16_t>(p + 2);
  o.offset = get<uint32_t>(p + 4);
  if (!column) {
    o.stride[0] = get<int16_t>(p + 8);
    o.stride[1] = get<int16_t>(p + 10);
  }
  return o;
}

std::string field(std::string_view prefix, std::string_view name) {
  return std::string(prefix) + "_" + std::string(name);
}

/// Checks one operand's space, type and offset alignment; `name` is its field prefix (out, in0, bias, ...).
std::optional<IsaError> check_operand(std::string_view name, const Operand& o) {
  if (o.space == MemSpace::kHbm || o.space == MemSpace::kHost) {
    return bad(field(name, "space"), fmt::format("{}: Vector and Scalar engine operands are in sbuf or psum",
                                                 mem_space_name(o.space)));
  }
  if (auto err = check_space(field(name, "space"), o.space)) return err;
  if (auto err = check_type(field(name, "type"), o.type)) return err;
  if (o.space == MemSpace::kPsum && o.type != DataType::kFp32) {
    return bad(field(name, "type"), fmt::format("PSUM holds fp32, not {}", data_type_name(o.type)));
  }
  const unsigned es = data_type_bytes(o.type);
  if (o.offset % es != 0) {
    return bad(field(name, "offset"), fmt::format("offset {:#x} is not a multiple of the {}-byte {} element",
                                                  o.offset, es, data_type_name(o.type)));
  }
  return std::nullopt;
}

bool valid_alu(AluOp op) { return static_cast<uint8_t>(op) < kNumAluOps; }

std::optional<IsaError> check_alu(std::string_view name, AluOp op, bool none_ok) {
  if (!valid_alu(op)) {
    return bad(name, fmt::format("value {} is not an ALU op (0..{})", static_cast<int>(op), kNumAluOps - 1));
  }
  if (op == AluOp::kNone && !none_ok) return bad(name, "op none: this instruction needs an operation");
  return std::nullopt;
}

std::optional<IsaError> check_counts(uint16_t partitions, const std::array<uint16_t, 2>& free) {
  if (partitions == 0) return bad("partitions", "partitions is 0, must be >= 1");
  for (std::size_t d = 0; d < 2; ++d) {
    if (free[d] == 0) return bad("free", fmt::format("free[{}] is 0, must be >= 1", d));
  }
  return std::nullopt;
}

std::optional<IsaError> validate_vec(Opcode op, const VecFields& v) {
  // Byte order: op, op1/axis, partitions, free, the operands the opcode uses, then the per-opcode rules.
  switch (op) {
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
      if (auto err = check_alu("op", v.op, false)) return err;
      break;
    case Opcode::kTensorReduce:
      if (auto err = check_alu("op", v.op, false)) return err;
      if (v.op != AluOp::kAdd && v.op != AluOp::kMax && v.op != AluOp::kMin) {
        return bad("op", fmt::format("tensor_reduce op must be add, max or min, not {}", alu_op_name(v.op)));
      }
      break;
    default: break;
  }
  if (op == Opcode::kTensorScalar) {
    if (auto err = check_alu("op1", v.op1, true)) return err;
  }
  if (op == Opcode::kTensorReduce && v.axis != ReduceAxis::kAll && v.axis != ReduceAxis::kInner) {
    return bad("axis", fmt::format("value {} is not a reduce axis (0 all, 1 inner)", static_cast<int>(v.axis)));
  }
  if (op == Opcode::kQuantizeMx) {
    if (v.no_sat || v.sr) {
      return bad("flags", "quantize_mx has no flags: its casts are rule 10's (nearest even, saturating)");
    }
    if (!is_mx(static_cast<DataType>(v.mx_dtype))) {
      return bad("dtype", fmt::format("value {} is not an MX type (5 mxfp8e4m3, 6 mxfp8e5m2, 7 mxfp4)",
                                      static_cast<int>(v.mx_dtype)));
    }
    if (auto err = check_counts(v.partitions, v.free)) return err;
    if (v.free[1] != 1) return bad("free", fmt::format("quantize_mx takes free[1] = 1, not {}", v.free[1]));
    if (v.out.space != MemSpace::kSbuf) {
      return bad("out_space", fmt::format("{}: MX elements go to sbuf, where the Tensor Engine reads them",
                                          mem_space_name(v.out.space)));
    }
    if (auto err = check_operand("in0", v.in0)) return err;
    if (v.scales.space != MemSpace::kSbuf) {
      return bad("scales_space", fmt::format("{}: MX scales go to sbuf, where the Tensor Engine reads them",
                                             mem_space_name(v.scales.space)));
    }
    return std::nullopt;
  }
  if (auto err = check_counts(v.partitions, v.free)) return err;
  if (auto err = check_operand("out", v.out)) return err;
  const bool has_in0 = op != Opcode::kMemset && op != Opcode::kIota;
  if (has_in0) {
    if (auto err = check_operand("in0", v.in0)) return err;
  }
  if (op == Opcode::kTensorTensor || op == Opcode::kSelect) {
    if (auto err = check_operand("in1", v.in1)) return err;
  }
  if (op == Opcode::kSelect) {
    if (auto err = check_operand("in2", v.in2)) return err;
  }
  if (op == Opcode::kTensorScalar && v.op1 == AluOp::kNone && v.imm1 != 0) {
    return bad("imm1", fmt::format("imm1 {:#010x} must be 0 without op1", v.imm1));
  }
  if (op == Opcode::kTensorReduce) {
    if (v.out.stride[0] != 0) {
      return bad("out_stride", fmt::format("out_stride[0] is {}, must be 0: tensor_reduce writes one element per "
                                           "row", v.out.stride[0]));
    }
    if (v.axis == ReduceAxis::kAll && v.out.stride[1] != 0) {
      return bad("out_stride", fmt::format("out_stride[1] is {}, must be 0 for axis all (out is [P, 1])",
                                           v.out.stride[1]));
    }
  }
  if (op == Opcode::kTranspose) {
    if (v.partitions > kMaxTranspose) {
      return bad("partitions", fmt::format("transpose of {} partitions, at most {}", v.partitions, kMaxTranspose));
    }
    if (v.free[0] > kMaxTranspose) {
      return bad("free", fmt::format("transpose of free[0] = {}, at most {}", v.free[0], kMaxTranspose));
    }
    if (v.free[1] != 1) return bad("free", fmt::format("transpose takes free[1] = 1, not {}", v.free[1]));
    if (v.out.stride[1] != 0) {
      return bad("out_stride", fmt::format("out_stride[1] is {}, must be 0 for transpose", v.out.stride[1]));
    }
  }
  return std::nullopt;
}

std::optional<IsaError> validate_act(const ActFields& a) {
  if (static_cast<uint8_t>(a.func) >= kNumActFuncs) {
    return bad("func", fmt::format("value {} is not an activation function (0..{})", static_cast<int>(a.func),
                                   kNumActFuncs - 1));
  }
  if (auto err = check_counts(a.partitions, a.free)) return err;
  if (auto err = check_operand("out", a.out)) return err;
  if (auto err = check_operand("in0", a.in0)) return err;
  if (a.bias_tensor && a.bias != 0) {
    return bad("bias", fmt::format("bias immediate {:#010x} must be 0 with a bias tensor", a.bias));
  }
  if (a.bias_tensor) {
    if (auto err = check_operand("bias", a.bias_ap)) return err;
  }
  if (a.scale_tensor && a.scale != 0) {
    return bad("scale", fmt::format("scale immediate {:#010x} must be 0 with a scale tensor", a.scale));
  }
  if (a.scale_tensor) {
    if (auto err = check_operand("scale", a.scale_ap)) return err;
  }
  if (a.reduce) {
    if (auto err = check_operand("sum", a.sum)) return err;
  }
  if (a.sum_acc && !a.reduce) {
    return bad("flags", "sum_acc (flag 0x20: the sum starts from the sum column's value) needs sum (flag 0x08)");
  }
  return std::nullopt;
}

std::optional<IsaError> validate_cc(Opcode op, const CcFields& c) {
  if (op == Opcode::kSend || op == Opcode::kRecv) return std::nullopt;  // peer and ranges: checked by the device
  if (c.dtype != DataType::kFp32 && c.dtype != DataType::kBf16) {
    return bad("dtype", fmt::format("value {} is not a collective data type (0 bf16, 4 fp32)",
                                    static_cast<int>(c.dtype)));
  }
  if (static_cast<uint8_t>(c.algorithm) >= kNumCcAlgorithms) {
    return bad("algorithm", fmt::format("value {} is not a collective algorithm (0 ring, 1 rhd)",
                                        static_cast<int>(c.algorithm)));
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
    case Format::kSem: return a.sem.sem == b.sem.sem && a.sem.value == b.sem.value && a.sem.core == b.sem.core;
    case Format::kCopy: {
      const CopyFields& x = a.copy;
      const CopyFields& y = b.copy;
      return x.src_type == y.src_type && x.dst_type == y.dst_type && x.src_space == y.src_space &&
             x.dst_space == y.dst_space && x.no_sat == y.no_sat && x.sr == y.sr && x.done_sem == y.done_sem &&
             x.src_addr == y.src_addr &&
             x.dst_addr == y.dst_addr && x.count == y.count && x.src_stride == y.src_stride &&
             x.dst_stride == y.dst_stride;
    }
    case Format::kTe: {
      const TeFields& x = a.te;
      const TeFields& y = b.te;
      return x.dtype == y.dtype && x.accumulate == y.accumulate && x.sbuf_addr == y.sbuf_addr &&
             x.psum_addr == y.psum_addr && x.k == y.k && x.free_size == y.free_size && x.scale_addr == y.scale_addr;
    }
    case Format::kVec:
    case Format::kAct:
      // The tensor-op encodings write exactly the fields their opcode uses.
      return encode(a) == encode(b);
    case Format::kCc: {
      const CcFields& x = a.cc;
      const CcFields& y = b.cc;
      const bool collective = a.op != Opcode::kSend && a.op != Opcode::kRecv;
      return x.hbm_addr == y.hbm_addr && x.count == y.count &&
             (collective ? x.dtype == y.dtype && x.algorithm == y.algorithm : x.peer == y.peer);
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
      if (instr.op == Opcode::kSemSignal && instr.sem.core >= 0) {
        p[kOffFlags] = kFlagCore;
        p[kOffSemCore] = static_cast<uint8_t>(instr.sem.core);
      }
      break;
    case Format::kCopy: {
      const CopyFields& c = instr.copy;
      p[kOffFlags] = static_cast<uint8_t>((c.no_sat ? kFlagNoSat : 0) | (c.sr ? kFlagSr : 0) |
                                          (c.done_sem >= 0 ? kFlagDoneSem : 0));
      if (c.done_sem >= 0) p[kOffDoneSem] = static_cast<uint8_t>(c.done_sem);
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
      put<uint64_t>(p + kOffScaleAddr, t.scale_addr);
      break;
    }
    case Format::kVec: {
      const VecFields& v = instr.vec;
      const Opcode op = instr.op;
      p[kOffFlags] = static_cast<uint8_t>((v.no_sat ? kFlagNoSat : 0) | (v.sr ? kFlagSr : 0));
      if (op == Opcode::kQuantizeMx) {
        p[kOffOp] = static_cast<uint8_t>(v.mx_dtype);
        put<uint16_t>(p + kOffPartitions, v.partitions);
        put<uint16_t>(p + kOffFree, v.free[0]);
        put<uint16_t>(p + kOffFree + 2, v.free[1]);
        put_operand(p + kOffOut, v.out, true);
        p[kOffOut + 1] = 0;  // a location: the type byte is reserved
        put_operand(p + kOffIn0, v.in0, false);
        put_operand(p + kOffIn1, v.scales, true);
        p[kOffIn1 + 1] = 0;
        break;
      }
      if (op == Opcode::kTensorTensor || op == Opcode::kTensorScalar || op == Opcode::kTensorReduce) {
        p[kOffOp] = static_cast<uint8_t>(v.op);
      }
      if (op == Opcode::kTensorScalar) p[kOffOp1] = static_cast<uint8_t>(v.op1);
      if (op == Opcode::kTensorReduce) p[kOffOp1] = static_cast<uint8_t>(v.axis);
      put<uint16_t>(p + kOffPartitions, v.partitions);
      put<uint16_t>(p + kOffFree, v.free[0]);
      put<uint16_t>(p + kOffFree + 2, v.free[1]);
      put_operand(p + kOffOut, v.out, false);
      if (op != Opcode::kMemset && op != Opcode::kIota) put_operand(p + kOffIn0, v.in0, false);
      if (op == Opcode::kTensorTensor || op == Opcode::kSelect) put_operand(p + kOffIn1, v.in1, false);
      if (op == Opcode::kSelect) put_operand(p + kOffIn2, v.in2, false);
      if (op == Opcode::kTensorScalar) {
        put<uint32_t>(p + kOffImm0, v.imm0);
        put<uint32_t>(p + kOffImm1, v.imm1);
      }
      if (op == Opcode::kMemset) put<uint32_t>(p + kOffImm0, v.imm0);
      if (op == Opcode::kIota) {
        put<int32_t>(p + kOffBase, v.base);
        put<int32_t>(p + kOffPstep, v.pstep);
        put<int32_t>(p + kOffStep, v.step[0]);
        put<int32_t>(p + kOffStep + 4, v.step[1]);
      }
      break;
    }
    case Format::kAct: {
      const ActFields& a = instr.act;
      p[kOffFlags] = static_cast<uint8_t>((a.no_sat ? kFlagNoSat : 0) | (a.bias_tensor ? kFlagBiasTensor : 0) |
                                          (a.reduce ? kFlagReduce : 0) | (a.sr ? kFlagSr : 0) |
                                          (a.sum_acc ? kFlagSumAcc : 0) | (a.scale_tensor ? kFlagScaleTensor : 0));
      p[kOffOp] = static_cast<uint8_t>(a.func);
      put<uint16_t>(p + kOffPartitions, a.partitions);
      put<uint16_t>(p + kOffFree, a.free[0]);
      put<uint16_t>(p + kOffFree + 2, a.free[1]);
      put_operand(p + kOffOut, a.out, false);
      put_operand(p + kOffIn0, a.in0, false);
      if (a.scale_tensor) {
        put_operand(p + kOffScaleAp, a.scale_ap, true);
      } else {
        put<uint32_t>(p + kOffScale, a.scale);
      }
      put<uint32_t>(p + bias_imm_offset(a.scale_tensor), a.bias);
      if (a.bias_tensor) put_operand(p + kOffBiasAp, a.bias_ap, true);
      if (a.reduce) put_operand(p + kOffSum, a.sum, true);
      break;
    }
    case Format::kCc: {
      const CcFields& c = instr.cc;
      if (instr.op == Opcode::kSend || instr.op == Opcode::kRecv) {
        put<uint32_t>(p + kOffCcPeer, c.peer);
      } else {
        p[kOffCcDtype] = static_cast<uint8_t>(c.dtype);
        p[kOffCcAlgorithm] = static_cast<uint8_t>(c.algorithm);
      }
      put<uint64_t>(p + kOffCcAddr, c.hbm_addr);
      put<uint64_t>(p + kOffCcCount, c.count);
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
  for (const ByteRange r : reserved_ranges(instr.op, bytes)) {
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
      if (instr.op == Opcode::kSemSignal) {
        if (auto err = undefined_flags(kFlagCore)) return err;
        if (flags & kFlagCore) instr.sem.core = bytes[kOffSemCore];
      }
      instr.sem.sem = bytes[kOffSem];
      instr.sem.value = get<uint32_t>(bytes + kOffValue);
      break;
    case Format::kCopy: {
      if (auto err = undefined_flags(kFlagNoSat | kFlagSr | kFlagDoneSem)) return err;
      CopyFields& c = instr.copy;
      c.no_sat = (flags & kFlagNoSat) != 0;
      c.sr = (flags & kFlagSr) != 0;
      if (flags & kFlagDoneSem) c.done_sem = bytes[kOffDoneSem];
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
      t.scale_addr = get<uint64_t>(bytes + kOffScaleAddr);
      break;
    }
    case Format::kVec:
    case Format::kAct: {
      if (flags & kFlagAccumulate) {
        return bad("flags", fmt::format("flags {:#04x}: bit 0 is accumulate, a Tensor Engine flag: only the TE "
                                        "accumulates into PSUM, {} runs on the {} engine",
                                        flags, *opcode_name(instr.op), format == Format::kAct ? "act" : "vec"));
      }
      const Opcode op = instr.op;
      if (format == Format::kAct) {
        if (auto err = undefined_flags(kFlagNoSat | kFlagBiasTensor | kFlagReduce | kFlagSr | kFlagSumAcc |
                                       kFlagScaleTensor)) {
          return err;
        }
        ActFields& a = instr.act;
        a.no_sat = (flags & kFlagNoSat) != 0;
        a.sr = (flags & kFlagSr) != 0;
        a.bias_tensor = (flags & kFlagBiasTensor) != 0;
        a.reduce = (flags & kFlagReduce) != 0;
        a.sum_acc = (flags & kFlagSumAcc) != 0;
        a.func = static_cast<ActFunc>(bytes[kOffOp]);
        a.partitions = get<uint16_t>(bytes + kOffPartitions);
        a.free = {get<uint16_t>(bytes + kOffFree), get<uint16_t>(bytes + kOffFree + 2)};
        a.out = get_operand(bytes + kOffOut, false);
        a.in0 = get_operand(bytes + kOffIn0, false);
        a.scale_tensor = (flags & kFlagScaleTensor) != 0;
        if (a.scale_tensor) {
          a.scale = 0;
          a.scale_ap = get_operand(bytes + kOffScaleAp, true);
        } else {
          a.scale = get<uint32_t>(bytes + kOffScale);
        }
        a.bias = get<uint32_t>(bytes + bias_imm_offset(a.scale_tensor));
        if (a.bias_tensor) a.bias_ap = get_operand(bytes + kOffBiasAp, true);
        if (a.reduce) a.sum = get_operand(bytes + kOffSum, true);
        break;
      }
      // quantize_mx's casts are rule 10's (nearest even, saturating): it has no flags.
      if (auto err = undefined_flags(op == Opcode::kQuantizeMx ? 0 : kFlagNoSat | kFlagSr)) return err;
      VecFields& v = instr.vec;
      v.no_sat = (flags & kFlagNoSat) != 0;
      v.sr = (flags & kFlagSr) != 0;
      if (op == Opcode::kQuantizeMx) {
        v.mx_dtype = static_cast<Dtype>(bytes[kOffOp]);
        v.partitions = get<uint16_t>(bytes + kOffPartitions);
        v.free = {get<uint16_t>(bytes + kOffFree), get<uint16_t>(bytes + kOffFree + 2)};
        v.out = get_operand(bytes + kOffOut, true);
        v.in0 = get_operand(bytes + kOffIn0, false);
        v.scales = get_operand(bytes + kOffIn1, true);
        break;
      }
      if (op == Opcode::kTensorTensor || op == Opcode::kTensorScalar || op == Opcode::kTensorReduce) {
        v.op = static_cast<AluOp>(bytes[kOffOp]);
      }
      if (op == Opcode::kTensorScalar) v.op1 = static_cast<AluOp>(bytes[kOffOp1]);
      if (op == Opcode::kTensorReduce) v.axis = static_cast<ReduceAxis>(bytes[kOffOp1]);
      v.partitions = get<uint16_t>(bytes + kOffPartitions);
      v.free = {get<uint16_t>(bytes + kOffFree), get<uint16_t>(bytes + kOffFree + 2)};
      v.out = get_operand(bytes + kOffOut, false);
      if (op != Opcode::kMemset && op != Opcode::kIota) v.in0 = get_operand(bytes + kOffIn0, false);
      if (op == Opcode::kTensorTensor || op == Opcode::kSelect) v.in1 = get_operand(bytes + kOffIn1, false);
      if (op == Opcode::kSelect) v.in2 = get_operand(bytes + kOffIn2, false);
      if (op == Opcode::kTensorScalar) {
        v.imm0 = get<uint32_t>(bytes + kOffImm0);
        v.imm1 = get<uint32_t>(bytes + kOffImm1);
      }
      if (op == Opcode::kMemset) v.imm0 = get<uint32_t>(bytes + kOffImm0);
      if (op == Opcode::kIota) {
        v.base = get<int32_t>(bytes + kOffBase);
        v.pstep = get<int32_t>(bytes + kOffPstep);
        v.step = {get<int32_t>(bytes + kOffStep), get<int32_t>(bytes + kOffStep + 4)};
      }
      break;
    }
    case Format::kCc: {
      CcFields& c = instr.cc;
      if (instr.op == Opcode::kSend || instr.op == Opcode::kRecv) {
        c.peer = get<uint32_t>(bytes + kOffCcPeer);
      } else {
        c.dtype = static_cast<DataType>(bytes[kOffCcDtype]);
        c.algorithm = static_cast<CcAlgorithm>(bytes[kOffCcAlgorithm]);
      }
      c.hbm_addr = get<uint64_t>(bytes + kOffCcAddr);
      c.count = get<uint64_t>(bytes + kOffCcCount);
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
      if (instr.sem.core != -1 && (instr.op != Opcode::kSemSignal || instr.sem.core < 0 || instr.sem.core >= kMaxCores)) {
        return bad("core", instr.op != Opcode::kSemSignal
                               ? std::string("only sem_signal names a core")
                               : fmt::format("core {} is out of range 0..{}", instr.sem.core, kMaxCores - 1));
      }
      return std::nullopt;
    case Format::kCopy: return validate_copy(instr.op, instr.copy);
    case Format::kTe: return validate_te(instr.op, instr.te);
    case Format::kVec: return validate_vec(instr.op, instr.vec);
    case Format::kAct: return validate_act(instr.act);
    case Format::kCc: return validate_cc(instr.op, instr.cc);
  }
  return std::nullopt;
}

bool engine_accepts(Engine engine, Opcode op) {
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt:
    case Opcode::kSemSignal:
    case Opcode::kSemWait:
      return engine == Engine::kTe || engine == Engine::kDma || engine == Engine::kAct || engine == Engine::kVec ||
             engine == Engine::kCc;
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: return engine == Engine::kTe;
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: return engine == Engine::kDma;
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
    case Opcode::kTensorReduce:
    case Opcode::kTensorCopy:
    case Opcode::kMemset:
    case Opcode::kIota:
    case Opcode::kSelect:
    case Opcode::kTranspose:
    case Opcode::kQuantizeMx: return engine == Engine::kVec;
    case Opcode::kActivation: return engine == Engine::kAct;
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kSend:
    case Opcode::kRecv: return engine == Engine::kCc;
  }
  return false;
}

bool is_collective(Opcode op) { return is_opcode(static_cast<uint8_t>(op)) && format_of(op) == Format::kCc; }

std::string_view cc_algorithm_name(CcAlgorithm a) {
  switch (a) {
    case CcAlgorithm::kRing: return "ring";
    case CcAlgorithm::kRhd: return "rhd";
  }
  return "?";
}

bool is_tensor_op(Opcode op) {
  const Format f = format_of(op);
  return is_opcode(static_cast<uint8_t>(op)) && (f == Format::kVec || f == Format::kAct);
}

uint64_t vector_cycles(const Instruction& instr, const VecDataPath& path) {
  if (!is_tensor_op(instr.op) || instr.op == Opcode::kActivation) {
    throw std::invalid_argument("vector_cycles: not a Vector-queue instruction");
  }
  const VecFields& v = instr.vec;
  const Opcode op = instr.op;
  const auto two_bytes = [](const Operand& o) { return o.type == DataType::kBf16 || o.type == DataType::kFp16; };
  // The operands the opcode reads or writes (VecFields' table above).
  bool narrow = op != Opcode::kQuantizeMx && two_bytes(v.out);
  if (op != Opcode::kMemset && op != Opcode::kIota) narrow = narrow && two_bytes(v.in0);
  if (op == Opcode::kTensorTensor || op == Opcode::kSelect) narrow = narrow && two_bytes(v.in1);
  if (op == Opcode::kSelect) narrow = narrow && two_bytes(v.in2);
  const uint64_t lanes = std::max<uint32_t>(1, path.lanes);
  const uint64_t w = std::max<uint64_t>(1, (narrow ? path.elems_16 : path.elems) / lanes);
  const auto pass = [&](uint64_t n) { return std::max(kEngineMinII, (n + w - 1) / w); };
  if (op == Opcode::kQuantizeMx) return 2 * pass(v.free[0]);
  return pass(op == Opcode::kTranspose ? uint64_t(v.partitions) : uint64_t(v.free[0]) * v.free[1]);
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
    case Opcode::kTensorTensor: return "tensor_tensor";
    case Opcode::kTensorScalar: return "tensor_scalar";
    case Opcode::kTensorReduce: return "tensor_reduce";
    case Opcode::kTensorCopy: return "tensor_copy";
    case Opcode::kMemset: return "memset";
    case Opcode::kIota: return "iota";
    case Opcode::kSelect: return "select";
    case Opcode::kTranspose: return "transpose";
    case Opcode::kQuantizeMx: return "quantize_mx";
    case Opcode::kActivation: return "activation";
    case Opcode::kAllReduce: return "all_reduce";
    case Opcode::kAllGather: return "all_gather";
    case Opcode::kReduceScatter: return "reduce_scatter";
    case Opcode::kSend: return "send";
    case Opcode::kRecv: return "recv";
  }
  return std::nullopt;
}

std::string_view engine_name(Engine engine) {
  switch (engine) {
    case Engine::kTe: return "te";
    case Engine::kDma: return "dma";
    case Engine::kAct: return "act";
    case Engine::kVec: return "vec";
    case Engine::kCc: return "cc";
  }
  return "?";
}

std::string_view mem_space_name(MemSpace space) {
  switch (space) {
    case MemSpace::kHbm: return "hbm";
    case MemSpace::kSbuf: return "sbuf";
    case MemSpace::kPsum: return "psum";
    case MemSpace::kHost: return "host";
  }
  return "?";
}

}  // namespace trnsim::isa

namespace trnsim::isa {

std::string_view alu_op_name(AluOp op) {
  switch (op) {
    case AluOp::kNone: return "none";
    case AluOp::kAdd: return "add";
    case AluOp::kSubtract: return "subtract";
    case AluOp::kMultiply: return "multiply";
    case AluOp::kMax: return "max";
    case AluOp::kMin: return "min";
    case AluOp::kDivide: return "divide";
    case AluOp::kIsEqual: return "is_equal";
    case AluOp::kNotEqual: return "not_equal";
    case AluOp::kIsGt: return "is_gt";
    case AluOp::kIsGe: return "is_ge";
    case AluOp::kIsLt: return "is_lt";
    case AluOp::kIsLe: return "is_le";
    case AluOp::kRsubtract: return "rsubtract";
    case AluOp::kRdivide: return "rdivide";
  }
  return "?";
}

std::string_view act_func_name(ActFunc func) {
  switch (func) {
    case ActFunc::kIdentity: return "identity";
    case ActFunc::kRelu: return "relu";
    case ActFunc::kGeluTanh: return "gelu_tanh";
    case ActFunc::kGelu: return "gelu";
    case ActFunc::kSigmoid: return "sigmoid";
    case ActFunc::kTanh: return "tanh";
    case ActFunc::kExp: return "exp";
    case ActFunc::kSilu: return "silu";
    case ActFunc::kRsqrt: return "rsqrt";
    case ActFunc::kReciprocal: return "reciprocal";
    case ActFunc::kSquare: return "square";
    case ActFunc::kLog: return "log";
  }
  return "?";
}

}  // namespace trnsim::isa
