#include "model/core/vector_engine.h"

#include <algorithm>
#include <cstring>

#include "model/fp/engine_ops.h"
#include "model/fp/fp_ops.h"

namespace trnsim::model {

VectorEngine::VectorEngine(const sc_core::sc_module_name& name, CoreControl& control)
    : TensorOpEngine(name, isa::Engine::kVec, control, control.config().vector_clock_mhz),
      path_{uint32_t(control.config().sbuf_partitions), control.config().vector_elems_per_cycle,
            control.config().vector_elems_per_cycle_16} {}

std::optional<Fault> VectorEngine::execute(const isa::Instruction& instr, uint32_t /*index*/) {
  const isa::VecFields& v = instr.vec;
  const isa::Opcode op = instr.op;
  const int P = v.partitions, n0 = v.free[0], n1 = v.free[1];
  if (op == isa::Opcode::kQuantizeMx) return quantize_mx(instr);

  // Operand shapes: the output walks the input's free counts, except tensor_reduce ([P, 1] or [P, n1]) and
  // transpose ([n0, P]).
  int out_p = P, out_n0 = n0, out_n1 = n1;
  if (op == isa::Opcode::kTensorReduce) {
    out_n0 = 1;
    out_n1 = v.axis == isa::ReduceAxis::kInner ? n1 : 1;
  } else if (op == isa::Opcode::kTranspose) {
    out_p = n0;
    out_n0 = P;
    out_n1 = 1;
  }
  if (auto f = check_free(n0, n1)) return f;
  const bool has_in0 = op != isa::Opcode::kMemset && op != isa::Opcode::kIota;
  const bool has_in1 = op == isa::Opcode::kTensorTensor || op == isa::Opcode::kSelect;
  const bool has_in2 = op == isa::Opcode::kSelect;
  if (auto f = check(v.out, out_p, out_n0, out_n1, "out")) return f;
  if (has_in0) {
    if (auto f = check(v.in0, P, n0, n1, "in0")) return f;
  }
  if (has_in1) {
    if (auto f = check(v.in1, P, n0, n1, "in1")) return f;
  }
  if (has_in2) {
    if (auto f = check(v.in2, P, n0, n1, "in2")) return f;
  }

  const uint64_t epoch = run_epoch();  // the program's (a later one's would let an abandoned op write)
  Tile a, b, c;
  if (has_in0) a = read(v.in0, P, n0, n1);
  if (has_in1) b = read(v.in1, P, n0, n1);
  if (has_in2) c = read(v.in2, P, n0, n1);
  Tile out(out_p, out_n0, out_n1);
  switch (op) {
    case isa::Opcode::kTensorTensor:
      for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = fp::alu(v.op, a.v[i], b.v[i]);
      break;
    case isa::Opcode::kTensorScalar:
      for (size_t i = 0; i < out.v.size(); ++i) {
        uint32_t t = fp::alu(v.op, a.v[i], v.imm0);
        if (v.op1 != isa::AluOp::kNone) t = fp::alu(v.op1, t, v.imm1);
        out.v[i] = t;
      }
      break;
    case isa::Opcode::kTensorReduce: {
      // Increasing free index (i1 outer, i0 inner); a sum starts at +0.0, max/min at the first element.
      const bool all = v.axis == isa::ReduceAxis::kAll;
      for (int p = 0; p < P; ++p) {
        for (int r = 0; r < out_n1; ++r) {
          bool first = true;
          uint32_t acc = 0;
          for (int i1 = all ? 0 : r; i1 < (all ? n1 : r + 1); ++i1) {
            for (int i0 = 0; i0 < n0; ++i0) {
              const uint32_t x = a.at(p, i1, i0);
              if (first && v.op != isa::AluOp::kAdd) {
                acc = x;
              } else {
                acc = fp::alu(v.op, acc, x);
              }
              first = false;
            }
          }
          out.at(p, r, 0) = acc;
        }
      }
      break;
    }
    case isa::Opcode::kTensorCopy: out.v = a.v; break;
    case isa::Opcode::kMemset: std::fill(out.v.begin(), out.v.end(), v.imm0); break;
    case isa::Opcode::kIota:
      for (int p = 0; p < P; ++p) {
        for (int i1 = 0; i1 < n1; ++i1) {
          for (int i0 = 0; i0 < n0; ++i0) {
            // Exact in 64-bit integers, then one RNE conversion to FP32.
            const int64_t value = int64_t(v.base) + int64_t(p) * v.pstep + int64_t(i0) * v.step[0] +
                                  int64_t(i1) * v.step[1];
            const float f = static_cast<float>(value);
            uint32_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            out.at(p, i1, i0) = bits;
          }
        }
      }
      break;
    case isa::Opcode::kSelect:
      for (size_t i = 0; i < out.v.size(); ++i) {
        const bool pred = (a.v[i] & 0x7FFFFFFFu) != 0;  // not +-0 (a NaN selects in1)
        out.v[i] = pred ? b.v[i] : c.v[i];
      }
      break;
    case isa::Opcode::kTranspose:
      for (int p = 0; p < P; ++p) {
        for (int j = 0; j < n0; ++j) out.at(j, 0, p) = a.at(p, 0, j);
      }
      break;
    default: break;
  }
  charge(isa::vector_cycles(instr, path_));
  if (control_.epoch() == epoch) write(v.out, out, v.no_sat, v.sr);
  return std::nullopt;
}

std::optional<Fault> VectorEngine::quantize_mx(const isa::Instruction& instr) {
  const isa::VecFields& v = instr.vec;
  const int K = v.partitions, F = v.free[0];
  const int rows = (K + 1) / 2;  // SBUF partitions of the elements and the scales: two K rows per partition
  const isa::Dtype dt = v.mx_dtype;
  // The destinations as 1-byte operands: elements [rows, 2 (k % 2), F] (a pair per column), scales [rows, F].
  isa::Operand elems = v.out, scales = v.scales;
  elems.type = static_cast<isa::DataType>(dt);
  elems.stride = {1, 2};
  scales.type = isa::DataType::kFp8E4M3;  // any 1-byte type: the codes are written as bytes
  scales.stride = {1, 0};
  if (auto f = check_free(F, 1)) return f;
  if (auto f = check(v.in0, K, F, 1, "in0")) return f;
  if (auto f = check(elems, rows, 2, F, "out")) return f;
  if (auto f = check(scales, rows, F, 1, "scales")) return f;

  const uint64_t epoch = run_epoch();
  const Tile x = read(v.in0, K, F, 1);
  // Blocks of kMxBlockSize rows from in0's first partition; the last one may be short (its padding is zero).
  const int blocks = int(isa::mx_blocks(unsigned(K)));
  std::vector<uint8_t> code(size_t(blocks) * F);
  for (int b = 0; b < blocks; ++b) {
    for (int f = 0; f < F; ++f) {
      uint32_t max_abs = 0;
      for (int k = b * int(isa::kMxBlockSize); k < std::min(K, (b + 1) * int(isa::kMxBlockSize)); ++k) {
        max_abs = std::max(max_abs, x.at(k, 0, f) & 0x7FFFFFFFu);
      }
      code[size_t(b) * F + f] = fp::mx_scale_code(dt, max_abs);
    }
  }
  Tile e(rows, 2, F);  // widened element values (exact), cast back to the element format by write()
  std::vector<uint8_t> sbytes(size_t(rows) * F);
  for (int j = 0; j < rows; ++j) {
    for (int f = 0; f < F; ++f) {
      const uint8_t c = code[size_t(2 * j / int(isa::kMxBlockSize)) * F + f];
      sbytes[size_t(j) * F + f] = c;
      for (int r = 0; r < 2; ++r) {
        const int k = 2 * j + r;
        uint16_t pattern = 0;  // a NaN block's elements and the padding row are 0
        if (k < K && c != isa::kE8M0Nan) pattern = fp::narrow_scaled(dt, x.at(k, 0, f), int(c) - 127, true);
        e.at(j, f, r) = fp::widen(dt, pattern);
      }
    }
  }
  charge(isa::vector_cycles(instr, path_));
  if (control_.epoch() == epoch) {
    write(elems, e, /*no_sat=*/false, /*sr=*/false);
    write_bytes(scales, rows, F, sbytes);
  }
  return std::nullopt;
}

}  // namespace trnsim::model
