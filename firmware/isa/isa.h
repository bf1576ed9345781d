// trnsim ISA v0: instructions, their fixed 64-byte binary encoding, and the checks that need no device.
//
// One small library shared by the model (which decodes and executes) and the firmware (which encodes); nothing else
// is shared between them (BRIEF section 7). The encoding is specified byte by byte in docs/isa.md.
//
// Every instruction is 64 bytes, little-endian. Byte 0 is the opcode; the other bytes follow one of these formats:
//   - plain  (nop, halt): bytes 1..63 reserved.
//   - sem    (sem_signal, sem_wait): byte 4 semaphore id, bytes 8..11 value.
//   - copy   (dma_copy, psum_copy): a 4-D access pattern on each side, see CopyFields.
//   - te     (load_stationary, multiply_moving): see TeFields.
//   - tensor-op formats of the Vector and Scalar engines (tensor_tensor ... transpose, activation): a common header
//     (bytes 0..11: op, partitions, free counts), then [partition, free] tensor operands and FP32 immediates laid
//     out per opcode; see VecFields, ActFields and docs/isa.md.
// Reserved bytes must be zero; a decoder rejects anything else (field "reserved").
//
// Addresses are byte addresses inside a memory space. HBM is linear. SBUF and PSUM are [partitions, bytes per
// partition] and their byte address is `partition * partition_bytes + offset`, so a stride of `partition_bytes`
// steps one partition (the partition dimension) and small strides walk the free dimension.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/isa/dtype.h"
#include "spec/isa_spec.h"

namespace trnsim::isa {

// kInstrBytes, kMaxMovingN, kMaxTranspose, kNumSemaphores, kNumQueues, DataType and its names and sizes come from
// spec/isa.json (spec/isa_spec.h, generated; the RTL packages carry the same values).

enum class Opcode : uint8_t {
  kNop = 0x00,             ///< does nothing (one engine cycle)
  kHalt = 0x01,            ///< ends this queue's program
  kSemSignal = 0x02,       ///< semaphore[sem] += value (wraps at 2^32)
  kSemWait = 0x03,         ///< blocks until semaphore[sem] >= value
  kDmaCopy = 0x10,         ///< element copy with cast between any two memory spaces (HBM, SBUF, PSUM)
  kLoadStationary = 0x20,  ///< stationary[K, M] from SBUF partitions into the TE array
  kMultiplyMoving = 0x21,  ///< PSUM[M, N] (+)= stationary^T @ moving[K, N]; moving from SBUF
  kPsumCopy = 0x30,        ///< PSUM (FP32) -> SBUF copy with cast (DMA queue)
  kTensorTensor = 0x40,    ///< Vector: out = in0 <op> in1, element-wise
  kTensorScalar = 0x41,    ///< Vector: out = (in0 <op> imm0) <op1> imm1
  kTensorReduce = 0x42,    ///< Vector: out[P, 1] (or [P, n1]) = fold of <op> (add, max, min) along the free axes
  kTensorCopy = 0x43,      ///< Vector: out = in0 with cast
  kMemset = 0x44,          ///< Vector: out = value
  kIota = 0x45,            ///< Vector: out = base + p * pstep + i0 * step0 + i1 * step1 (integers, then cast)
  kSelect = 0x46,          ///< Vector: out = in0 != 0 ? in1 : in2
  kTranspose = 0x47,       ///< Vector: out[j, i] = in0[i, j], up to 32 x 32
  kQuantizeMx = 0x48,      ///< Vector: FP32 [K, F] -> MX elements and E8M0 scales in the TE's SBUF layout (rule 10)
  kActivation = 0x50,      ///< Scalar: out = func(in0 * scale + bias), optional sum along the free axes
  kAllReduce = 0x60,       ///< Collective: every chip's HBM buffer becomes the element-wise sum over the chips
  kAllGather = 0x61,       ///< Collective: every chip's buffer becomes every chip's block
  kReduceScatter = 0x62,   ///< Collective: chip r's block r becomes the sum of block r over the chips
  kSend = 0x63,            ///< Collective: sends HBM bytes to the matching recv of chip `peer`
  kRecv = 0x64,            ///< Collective: receives HBM bytes from the matching send of chip `peer`
};

/// The engines that own an instruction queue. The queue id is the enum value.
enum class Engine : uint8_t {
  kTe = 0,   ///< Tensor Engine: load_stationary, multiply_moving
  kDma = 1,  ///< Sync/DMA engine: dma_copy, psum_copy
  kAct = 2,  ///< Scalar (activation) engine: activation
  kVec = 3,  ///< Vector engine: tensor_tensor, tensor_scalar, tensor_reduce, tensor_copy, memset, iota, select,
             ///< transpose
  kCc = 4,   ///< Collective engine (NeuronLink): all_reduce, all_gather, reduce_scatter, send, recv
};
static_assert(kNumQueues == int(Engine::kCc) + 1, "spec/isa.json kNumQueues: one queue per isa::Engine");

/// Memory spaces an access pattern can name. kHost (dma_copy only): host memory by bus mastering, the address a host
/// bus address (a guest-physical address under QEMU; docs/linux-driver.md); reachable only where the PCI function
/// attaches host memory, else the copy stops the device with HOST_ACCESS.
enum class MemSpace : uint8_t { kHbm = 0, kSbuf = 1, kPsum = 2, kHost = 3 };


/// The element key of stochastic rounding (BRIEF section 3 rule 9; docs/numerics.md "Stochastic rounding"): an
/// element cast with the sr flag is named by its destination, `space` << 56 | its byte address in that space (the
/// address of docs/isa.md "Addresses": partition * partition bytes + offset in SBUF and PSUM; the low 56 bits of a
/// host address). The generator hashes SR_SEED with this key, so an element's random bits do not depend on which
/// engine, instruction or order writes it.
constexpr uint64_t sr_element_key(MemSpace space, uint64_t address) {
  return uint64_t(static_cast<uint8_t>(space)) << 56 | (address & ((uint64_t{1} << 56) - 1));
}

/// Number of dimensions of an access pattern; dimension 0 is the innermost.
inline constexpr int kApDims = 4;

/// Fields of dma_copy and psum_copy (format "copy").
///   byte 1: flags (bit 1 = no_sat, bit 4 = sr, bit 5 = done_sem), 2: src_type, 3: dst_type, 4: src_space,
///   5: dst_space, 6: done_sem (with flag bit 5; else reserved), 7: reserved, 8..15: src_addr, 16..23: dst_addr,
///   24..31: count[4] (u16), 32..47: src_stride[4] (i32), 48..63: dst_stride[4].
/// Element (i3, i2, i1, i0) is read at src_addr + sum(i_d * src_stride[d]) and written at
/// dst_addr + sum(i_d * dst_stride[d]), converted src_type -> FP32 (exact) -> dst_type (BRIEF section 3 rule 6).
struct CopyFields {
  DataType src_type = DataType::kFp32;
  DataType dst_type = DataType::kFp32;
  MemSpace src_space = MemSpace::kHbm;
  MemSpace dst_space = MemSpace::kSbuf;
  bool no_sat = false;                 ///< FP8 overflow: false = saturate to max finite, true = OCP non-saturating
  /// Stochastic rounding of the cast to a narrower dst_type (BRIEF section 3 rule 9; the bits of each element come
  /// from SR_SEED and the element's destination address, docs/numerics.md); false = round to nearest even.
  bool sr = false;
  /// Semaphore (0..kNumSemaphores-1) the copy increments by 1 when it has landed (its bytes are all written), the
  /// completion signal of a DMA descriptor; -1 = none. The dma queue does not wait for it (docs/isa.md
  /// "Execution"). Encoded as flag bit 5 and byte 6.
  int done_sem = -1;
  uint64_t src_addr = 0;               ///< bytes
  uint64_t dst_addr = 0;               ///< bytes
  std::array<uint16_t, kApDims> count{1, 1, 1, 1};  ///< elements per dimension, each >= 1
  std::array<int32_t, kApDims> src_stride{};        ///< bytes
  std::array<int32_t, kApDims> dst_stride{};        ///< bytes
  /// Total elements copied: the product of count[].
  uint64_t elements() const {
    uint64_t n = 1;
    for (auto c : count) n *= c;
    return n;
  }
};

/// Fields of load_stationary and multiply_moving (format "te").
///   byte 1: flags (bit 0 = accumulate; multiply_moving only), 2: dtype, 3..7 reserved, 8..15: sbuf_addr,
///   16..23: psum_addr (multiply_moving; 0 for load_stationary), 24..25: k, 26..27: free_size, 28..31 reserved,
///   32..39: scale_addr (MX dtypes; 0 for the others), 40..63 reserved.
/// load_stationary: partition p0 + k' (k' < K) holds row k' of stationary[K, M] as M contiguous elements starting at
///   the byte offset of sbuf_addr; free_size = M (1..array cols).
/// multiply_moving: moving[K, N] the same way (free_size = N, 1..512); result row m goes to PSUM partition
///   (psum partition of psum_addr) + m as N contiguous FP32 at its offset; accumulate adds to what is there.
/// MX dtypes (BRIEF section 3 rule 10): the elements lie as FP8's and scale_addr locates their E8M0 scales, one
///   byte per column and SBUF row of the elements (firmware/isa/dtype.h "MX scales").
struct TeFields {
  Dtype dtype = Dtype::kBf16;
  bool accumulate = false;
  uint64_t sbuf_addr = 0;  ///< bytes, SBUF space
  uint64_t psum_addr = 0;  ///< bytes, PSUM space, 4-byte aligned
  uint16_t k = 1;          ///< partitions (contraction), 1..array rows
  uint16_t free_size = 1;  ///< M (load_stationary) or N (multiply_moving)
  uint64_t scale_addr = 0; ///< bytes, SBUF space: the E8M0 scales of an MX operand; 0 for the other dtypes
};

/// Arithmetic of the Vector engine (tensor_tensor, tensor_scalar; add/max/min also tensor_reduce). Each op is one
/// FP32 operation on widened inputs, rounded to nearest even (docs/isa.md "Vector and Scalar numerics").
enum class AluOp : uint8_t {
  kNone = 0,       ///< no second op (tensor_scalar op1 only)
  kAdd = 1,        ///< a + b
  kSubtract = 2,   ///< a - b
  kMultiply = 3,   ///< a * b
  kMax = 4,        ///< IEEE 754-2019 maximum: NaN if either is NaN; +0 > -0
  kMin = 5,        ///< IEEE 754-2019 minimum: NaN if either is NaN; -0 < +0
  kDivide = 6,     ///< a / b
  kIsEqual = 7,    ///< 1.0 if a == b else 0.0 (NaN compares unequal)
  kNotEqual = 8,   ///< 1.0 if a != b else 0.0
  kIsGt = 9,       ///< 1.0 if a > b else 0.0
  kIsGe = 10,      ///< 1.0 if a >= b else 0.0
  kIsLt = 11,      ///< 1.0 if a < b else 0.0
  kIsLe = 12,      ///< 1.0 if a <= b else 0.0
  kRsubtract = 13, ///< b - a
  kRdivide = 14,   ///< b / a
};
inline constexpr int kNumAluOps = 15;

/// Functions of the Scalar (activation) engine.
enum class ActFunc : uint8_t {
  kIdentity = 0,
  kRelu = 1,
  kGeluTanh = 2,  ///< 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))
  kGelu = 3,      ///< 0.5 z (1 + erf(z / sqrt(2)))
  kSigmoid = 4,
  kTanh = 5,
  kExp = 6,
  kSilu = 7,      ///< z * sigmoid(z)
  kRsqrt = 8,     ///< 1 / sqrt(z)
  kReciprocal = 9,
  kSquare = 10,
  kLog = 11,
};
inline constexpr int kNumActFuncs = 12;

/// A [partitions, free] tensor operand of a Vector/Scalar instruction (12 bytes; a [P, 1] column operand uses the
/// first 8). Element (p, i1, i0) of an instruction with free counts [n0, n1] is at byte
/// `offset + (i0 * stride[0] + i1 * stride[1]) * element bytes` of partition `partition + p`.
struct Operand {
  MemSpace space = MemSpace::kSbuf;  ///< sbuf or psum (psum holds fp32 only)
  DataType type = DataType::kFp32;
  uint16_t partition = 0;            ///< start partition
  uint32_t offset = 0;               ///< bytes inside the partition, a multiple of the element size
  std::array<int16_t, 2> stride{};   ///< elements; 0 broadcasts
};

/// Free-axis choice of tensor_reduce (byte 3).
enum class ReduceAxis : uint8_t {
  kAll = 0,    ///< both free axes: out is [P, 1]
  kInner = 1,  ///< the inner axis (n0) only: out is [P, n1]
};

/// Fields of the Vector engine's instructions (formats "tensor-op", docs/isa.md). Which fields an opcode uses:
///   tensor_tensor: op, out, in0, in1        tensor_scalar: op (op0), imm0, op1, imm1, out, in0
///   tensor_reduce: op (add/max/min), axis, out, in0    tensor_copy, transpose: out, in0
///   memset: out, imm0 (the value)           iota: out, base, pstep, step      select: out, in0 (predicate), in1, in2
///   quantize_mx: mx_dtype, out (elements), in0 ([K = P, F = n0]), scales
/// Every one: partitions, free, no_sat, sr (quantize_mx: no_sat and sr false; its casts are rule 10's).
struct VecFields {
  bool no_sat = false;                 ///< FP8 overflow of the output cast: OCP non-saturating
  bool sr = false;                     ///< stochastic rounding of the output cast (as CopyFields::sr)
  AluOp op = AluOp::kAdd;
  AluOp op1 = AluOp::kNone;            ///< tensor_scalar second op (kNone: none)
  ReduceAxis axis = ReduceAxis::kAll;  ///< tensor_reduce
  uint16_t partitions = 1;             ///< P, >= 1
  std::array<uint16_t, 2> free{1, 1};  ///< [n0, n1], each >= 1; n0 is the inner (fastest) axis
  Operand out, in0, in1, in2;
  uint32_t imm0 = 0;                   ///< FP32 bits: tensor_scalar imm0, memset value
  uint32_t imm1 = 0;                   ///< FP32 bits: tensor_scalar imm1 (0 without op1)
  int32_t base = 0;                    ///< iota
  /// quantize_mx: the MX type (byte 2). `out` and `scales` are SBUF locations (space, partition, offset; their type
  /// and strides unused): element (k, f) goes to partition out.partition + k / 2, byte out.offset + 2 f + k % 2
  /// (the TE's MX operand layout), the scale of its block to partition scales.partition + k / 2, byte
  /// scales.offset + f (docs/isa.md "quantize_mx").
  Dtype mx_dtype = Dtype::kMxFp8E4M3;
  Operand scales;
  int32_t pstep = 0;                   ///< iota: step per partition
  std::array<int32_t, 2> step{};       ///< iota: steps along i0, i1
};

/// Fields of activation (format "act", docs/isa.md): out = func(in0 * scale + bias), bias an FP32 immediate or a
/// [P, 1] tensor; with `reduce`, sum[P, 1] = the sum of the FP32 results along the free axes.
struct ActFields {
  bool no_sat = false;
  bool sr = false;                     ///< stochastic rounding of the output casts, out and sum (as CopyFields::sr)
  bool bias_tensor = false;            ///< bias is the [P, 1] operand `bias_ap`, not the immediate
  bool reduce = false;                 ///< write the free-axis sum to `sum`
  /// With reduce: the sum starts from `sum`'s value (widened to FP32) instead of +0.0, so that instructions over
  /// consecutive parts of a row continue one sum (nki.isa.activation's accumulating reduce command).
  bool sum_acc = false;
  ActFunc func = ActFunc::kIdentity;
  uint16_t partitions = 1;
  std::array<uint16_t, 2> free{1, 1};
  Operand out, in0;
  uint32_t scale = 0x3F800000u;        ///< FP32 bits (1.0); 0 when scale_tensor
  /// scale is the [P, 1] operand `scale_ap` (a per-partition factor, as nki.isa.activation's vector scale), not
  /// the immediate.
  bool scale_tensor = false;
  Operand scale_ap;                    ///< [P, 1] column operand (strides unused), when scale_tensor
  uint32_t bias = 0;                   ///< FP32 bits; 0 when bias_tensor
  Operand bias_ap;                     ///< [P, 1] column operand (strides unused), when bias_tensor
  Operand sum;                         ///< [P, 1] column operand (strides unused), when reduce
};

/// Algorithm of a collective instruction (format "cc"): docs/neuronlink.md "Collectives".
enum class CcAlgorithm : uint8_t {
  kRing = 0,  ///< ring flows over every torus dimension
  kRhd = 1,   ///< recursive halving-doubling (power-of-two chip counts only; checked by the device)
};
inline constexpr int kNumCcAlgorithms = 2;

/// Fields of the collective engine's instructions (format "cc").
///   byte 1: reserved, 2: dtype (a DataType code: fp32 or bf16; collectives only), 3: algorithm (collectives only),
///   4..7: peer chip id (send/recv only), 8..15: hbm_addr, 16..23: count, 24..63 reserved.
/// all_reduce / all_gather / reduce_scatter: `count` elements of `dtype` at HBM byte address hbm_addr, in place,
///   blocks as collective::Call (block r = elements [floor(r*count/n), floor((r+1)*count/n)) of n chips); count 0
///   is a no-op that still takes part in the rendezvous.
/// send / recv: `count` bytes at hbm_addr to / from chip `peer`; the k-th send from chip a to chip b pairs with the
///   k-th recv on b from a (their byte counts must be equal).
struct CcFields {
  DataType dtype = DataType::kFp32;
  CcAlgorithm algorithm = CcAlgorithm::kRing;
  uint32_t peer = 0;       ///< chip id (send/recv)
  uint64_t hbm_addr = 0;   ///< bytes, HBM space
  uint64_t count = 0;      ///< elements (collectives) or bytes (send/recv)
};

/// Fields of sem_signal and sem_wait (format "sem").
struct SemFields {
  uint8_t sem = 0;     ///< semaphore id, 0..kNumSemaphores-1
  uint32_t value = 0;  ///< increment (signal) or threshold (wait)
  /// sem_signal only: the core of the chip whose semaphore is incremented (0..kMaxCores-1), -1 = this core's
  /// (docs/isa.md "Semaphores across cores"). Encoded as flag bit 0 and byte 5.
  int core = -1;
};

/// One decoded instruction. Only the fields of its opcode's format are meaningful; the others keep their defaults
/// (and encode() ignores them).
struct Instruction {
  Opcode op = Opcode::kNop;
  CopyFields copy;
  TeFields te;
  SemFields sem;
  VecFields vec;
  ActFields act;
  CcFields cc;

  static Instruction nop() { return {}; }
  static Instruction halt() {
    Instruction i;
    i.op = Opcode::kHalt;
    return i;
  }
};

/// The instruction fields an IsaError can name, exactly as docs/isa.md names them. A device reports a field by its
/// id: its 1-based position in this table (0 = none/unknown), e.g. in an error-info register.
inline constexpr std::string_view kFieldNames[] = {
    "opcode",         "flags",         "dtype",         "src_type",       "dst_type",       "src_space",
    "dst_space",      "src_addr",      "dst_addr",      "count",          "src_stride",     "dst_stride",
    "sbuf_addr",      "psum_addr",     "k",             "free_size",      "sem",            "value",
    "reserved",
    // Vector / Scalar engine formats (ids 20..)
    "op",             "op1",           "func",          "axis",           "partitions",     "free",
    "out_space",      "out_type",      "out_partition", "out_offset",     "out_stride",
    "in0_space",      "in0_type",      "in0_partition", "in0_offset",     "in0_stride",
    "in1_space",      "in1_type",      "in1_partition", "in1_offset",     "in1_stride",
    "in2_space",      "in2_type",      "in2_partition", "in2_offset",     "in2_stride",
    "imm0",           "imm1",          "scale",         "bias",
    "bias_space",     "bias_type",     "bias_partition", "bias_offset",
    "sum_space",      "sum_type",      "sum_partition", "sum_offset",
    "base",           "pstep",         "step",
    // Collective engine format "cc" (ids 61..)
    "algorithm",      "peer",          "hbm_addr",      "bytes",
    // MX scales of the Tensor Engine format (id 65)
    "scale_addr",
    // quantize_mx's scale operand (ids 66..68)
    "scales_space",   "scales_partition", "scales_offset",
    // sem_signal's target core (id 69)
    "core",
    // dma_copy / psum_copy's completion semaphore (id 70)
    "done_sem",
    // activation's scale column (ids 71..74)
    "scale_space",    "scale_type",    "scale_partition", "scale_offset",
};
inline constexpr int kNumFields = static_cast<int>(sizeof(kFieldNames) / sizeof(kFieldNames[0]));

/// Id of a field name of kFieldNames (1..kNumFields), or 0 for a name that is not in the table.
int field_id(std::string_view field);
/// Name of a field id (1..kNumFields); an empty view for any other id.
std::string_view field_name(int id);

/// Why an instruction is malformed, with the field that is wrong: `field` is one of kFieldNames exactly ("opcode",
/// "dtype", "count", "reserved", ...); `message` describes the value and may add the index or byte offset
/// ("value 5 is not a dtype", "count[2] is 0", "byte 17 is 0x5a, must be 0").
struct IsaError {
  enum class Code : uint8_t {
    kBadOpcode = 1,      ///< opcode byte is not an instruction
    kBadField = 2,       ///< a field holds an illegal value (dtype 5, sem 40, count 0, unaligned PSUM address...)
    kReservedNonZero = 3 ///< a reserved byte is not zero
  };
  Code code = Code::kBadField;
  std::string field;
  std::string message;  ///< one line about the value (the field is in `field`)
};

/// One line for people: "field FIELD: MESSAGE".
std::string describe(const IsaError& error);

/// Encodes one instruction (little-endian, 64 bytes). Does not validate; encode(validated) never fails.
std::array<uint8_t, kInstrBytes> encode(const Instruction& instr);
/// Decodes 64 bytes. Checks, in this order: the opcode (kBadOpcode), the reserved bytes of its format, lowest
/// offset first (kReservedNonZero), the flags bits defined for the opcode and the enum fields in byte order
/// (kBadField), then everything validate() checks. `bytes` must point to kInstrBytes bytes. On success *out holds
/// the instruction (fields of other formats at their defaults); on error *out is unchanged.
std::optional<IsaError> decode(const uint8_t* bytes, Instruction* out);
/// Checks what needs no device: opcode and enum ranges, sem id < kNumSemaphores, every count >= 1, k >= 1,
/// 1 <= N <= 512, M >= 1, PSUM addresses 4-byte aligned, psum_copy src PSUM FP32 and dst SBUF, load_stationary
/// without accumulate and with psum_addr 0. Array sizes and memory ranges are checked by the device when it executes.
std::optional<IsaError> validate(const Instruction& instr);
/// True when `engine`'s queue may execute `op` (nop, halt and semaphores run everywhere).
bool engine_accepts(Engine engine, Opcode op);

/// Every opcode, in opcode order.
inline constexpr Opcode kAllOpcodes[] = {
    Opcode::kNop,          Opcode::kHalt,         Opcode::kSemSignal,    Opcode::kSemWait,
    Opcode::kDmaCopy,      Opcode::kLoadStationary, Opcode::kMultiplyMoving, Opcode::kPsumCopy,
    Opcode::kTensorTensor, Opcode::kTensorScalar, Opcode::kTensorReduce, Opcode::kTensorCopy,
    Opcode::kMemset,       Opcode::kIota,         Opcode::kSelect,       Opcode::kTranspose,
    Opcode::kQuantizeMx,   Opcode::kActivation,   Opcode::kAllReduce,    Opcode::kAllGather,    Opcode::kReduceScatter,
    Opcode::kSend,         Opcode::kRecv};

/// Every engine, in queue-id order.
inline constexpr Engine kAllEngines[] = {Engine::kTe, Engine::kDma, Engine::kAct, Engine::kVec, Engine::kCc};

/// Same opcode and same fields of that opcode's format (the fields encode() writes); other formats are ignored.
bool operator==(const Instruction& a, const Instruction& b);
inline bool operator!=(const Instruction& a, const Instruction& b) { return !(a == b); }

/// Mnemonic of an opcode ("dma_copy"), or nullopt for a byte that is no opcode.
std::optional<std::string_view> opcode_name(Opcode op);
/// Name of an engine/queue ("te", "dma", "act", "vec", "cc").
std::string_view engine_name(Engine engine);
std::string_view mem_space_name(MemSpace space);
std::string_view alu_op_name(AluOp op);          ///< none, add, subtract, ... ("?" for a bad code)
std::string_view act_func_name(ActFunc func);    ///< identity, relu, gelu_tanh, gelu, ... ("?" for a bad code)
/// True for the tensor-op formats of the Vector and Scalar engines (opcodes 0x40..0x47, 0x50).
bool is_tensor_op(Opcode op);
/// True for the collective engine's instructions (format "cc", opcodes 0x60..0x64).
bool is_collective(Opcode op);

std::string_view cc_algorithm_name(CcAlgorithm a);  ///< ring, rhd ("?" for a bad code)

/// Minimum instruction initiation interval of the Vector and Scalar engines, in engine cycles (docs/isa.md "Costs";
/// NKI cost estimate of nki.isa.activation_reduce: max(MIN_II, N) + MIN_II, MIN_II about 64).
inline constexpr uint64_t kEngineMinII = 64;

/// The Vector engine's data path, in elements per Vector cycle over all its lanes (one lane per SBUF partition).
/// Trainium2 (AWS Neuron, "Trainium2 Architecture Guide for NKI", table "Compute Engine Specifications"): 512
/// BF16/FP16 elements, 256 of other types, i.e. 4 and 2 per lane of 128. Device registers VEC_WIDTH and
/// SBUF_PARTITIONS.
struct VecDataPath {
  uint32_t lanes = 1;     ///< lanes = SBUF partitions, >= 1
  uint32_t elems = 1;     ///< elements per cycle when an operand is of a type other than BF16 / FP16, >= lanes
  uint32_t elems_16 = 1;  ///< elements per cycle when every operand read or written is BF16 or FP16, >= lanes
};

/// Vector engine cycles of the Vector-queue instruction `instr` (tensor_tensor .. quantize_mx; docs/isa.md
/// "Costs"): max(kEngineMinII, ceil(N / w)) for N elements per partition (its input's n0 * n1; transpose: P), where
/// w = path.elems_16 / lanes when every operand it reads or writes is BF16 or FP16 and path.elems / lanes otherwise
/// (integer division, at least 1); quantize_mx takes two such passes over F = n0 (block maxima, then elements) at
/// path.elems. Throws std::invalid_argument for an opcode of another engine.
uint64_t vector_cycles(const Instruction& instr, const VecDataPath& path);

/// A program: one instruction list per engine queue.
struct Program {
  std::array<std::vector<Instruction>, kNumQueues> queues;

  std::vector<Instruction>& queue(Engine e) { return queues[static_cast<std::size_t>(e)]; }
  const std::vector<Instruction>& queue(Engine e) const { return queues[static_cast<std::size_t>(e)]; }
};
inline bool operator==(const Program& a, const Program& b) { return a.queues == b.queues; }
inline bool operator!=(const Program& a, const Program& b) { return !(a == b); }

/// A malformed program text or binary: names the file position (line or instruction index) and the field.
class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Binary program file (docs/isa.md): magic "TRNP", u32 version (0), u32 queue count, then per queue
/// {u32 engine id, u32 instruction count}, then the queues' instructions in that order (all little-endian).
/// The form is canonical: only non-empty queues are listed, in increasing engine id. Does not validate.
std::vector<uint8_t> write_program_binary(const Program& program);
/// Parses a binary program in the canonical form above; throws ProgramError for a short file, bad magic or
/// version, an unknown, duplicate, out-of-order or empty queue, truncated instructions, trailing bytes and any
/// decode() error ("queue te, instruction 3: field dtype: value 5 is not a dtype").
Program read_program_binary(const std::vector<uint8_t>& bytes);

/// Whether the bytes of a program file are a binary program rather than program text: they start with the magic
/// "TRNP", or hold a byte no text program has (a control character other than tab, line feed, carriage return, form
/// feed). So a binary with a damaged magic is read as a binary, and its error says "bad magic".
bool is_binary_program(const std::vector<uint8_t>& bytes);

/// Assembles program text (syntax in docs/isa.md); throws ProgramError "LINE:COL: ..." on bad input, including
/// any validate() error of an instruction.
Program assemble(std::string_view text);
/// Disassembles to the canonical text (every field explicit) that assemble() turns back into the same program.
std::string disassemble(const Program& program);
/// The canonical text of one instruction, one line without newline (as disassemble() prints it).
std::string disassemble(const Instruction& instr);

}  // namespace trnsim::isa
