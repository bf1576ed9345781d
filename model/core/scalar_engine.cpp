#include "model/core/scalar_engine.h"

#include "model/fp/engine_ops.h"

namespace trnsim::model {

ScalarEngine::ScalarEngine(const sc_core::sc_module_name& name, CoreControl& control)
    : TensorOpEngine(name, isa::Engine::kAct, control, control.config().scalar_clock_mhz) {}

std::optional<Fault> ScalarEngine::execute(const isa::Instruction& instr, uint32_t /*index*/) {
  const isa::ActFields& a = instr.act;
  const int P = a.partitions, n0 = a.free[0], n1 = a.free[1];
  if (auto f = check_free(n0, n1)) return f;
  if (auto f = check(a.out, P, n0, n1, "out")) return f;
  if (auto f = check(a.in0, P, n0, n1, "in0")) return f;
  if (a.scale_tensor) {
    if (auto f = check(a.scale_ap, P, 1, 1, "scale")) return f;
  }
  if (a.bias_tensor) {
    if (auto f = check(a.bias_ap, P, 1, 1, "bias")) return f;
  }
  if (a.reduce) {
    if (auto f = check(a.sum, P, 1, 1, "sum")) return f;
  }

  const uint64_t epoch = run_epoch();  // the program's (a later one's would let an abandoned op write)
  const Tile in = read(a.in0, P, n0, n1);
  Tile scale, bias, start;
  if (a.scale_tensor) scale = read(a.scale_ap, P, 1, 1);
  if (a.bias_tensor) bias = read(a.bias_ap, P, 1, 1);
  if (a.reduce && a.sum_acc) start = read(a.sum, P, 1, 1);  // widened to FP32
  Tile out(P, n0, n1), sum(P, 1, 1);
  for (int p = 0; p < P; ++p) {
    const uint32_t s = a.scale_tensor ? scale.at(p, 0, 0) : a.scale;
    const uint32_t b = a.bias_tensor ? bias.at(p, 0, 0) : a.bias;
    // +0.0, or with sum_acc the sum column's value; adds the FP32 results in increasing free index (i1 outer, i0
    // inner).
    uint32_t acc = a.reduce && a.sum_acc ? start.at(p, 0, 0) : 0;
    for (int i1 = 0; i1 < n1; ++i1) {
      for (int i0 = 0; i0 < n0; ++i0) {
        const uint32_t z = fp::alu(isa::AluOp::kAdd, fp::alu(isa::AluOp::kMultiply, in.at(p, i1, i0), s), b);
        const uint32_t r = fp::activate(a.func, z);
        out.at(p, i1, i0) = r;
        acc = fp::alu(isa::AluOp::kAdd, acc, r);
      }
    }
    sum.at(p, 0, 0) = acc;
  }
  charge(op_cycles(uint64_t(n0) * n1) + (a.reduce ? kMinII : 0));
  if (control_.epoch() == epoch) {
    write(a.out, out, a.no_sat, a.sr);
    if (a.reduce) write(a.sum, sum, a.no_sat, a.sr);
  }
  return std::nullopt;
}

}  // namespace trnsim::model
