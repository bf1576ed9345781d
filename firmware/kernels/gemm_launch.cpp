#include "firmware/kernels/gemm_launch.h"

#include <stdexcept>

#include <fmt/core.h>

#include "firmware/kernels/gemm_kernel.h"

namespace trnsim::kernels {

namespace {
// Narrow patterns as device bytes (little-endian; 1 or 2 bytes per element).
std::vector<uint8_t> pack(const std::vector<uint16_t>& v, isa::Dtype dt) {
  const unsigned es = isa::dtype_bits(dt) / 8;
  std::vector<uint8_t> out(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    out[i * es] = uint8_t(v[i]);
    if (es == 2) out[i * es + 1] = uint8_t(v[i] >> 8);
  }
  return out;
}
}  // namespace

GemmDeviceRun run_gemm(driver::Driver& drv, const GemmHostOperands& ops, uint64_t timeout_cycles) {
  const size_t km = size_t(ops.k) * ops.m, kn = size_t(ops.k) * ops.n, mn = size_t(ops.m) * ops.n;
  if (ops.k < 1 || ops.m < 1 || ops.n < 1 || ops.stationary.size() != km || ops.moving.size() != kn ||
      (ops.accumulate_into && ops.accumulate_into->size() != mn)) {
    throw std::invalid_argument(fmt::format("run_gemm: K={} M={} N={} do not match the operand sizes", ops.k,
                                            ops.m, ops.n));
  }
  const bool mx = isa::is_mx(ops.dtype);
  const size_t blocks = isa::mx_blocks(unsigned(ops.k));
  if (mx ? (ops.stationary_scales.size() != blocks * ops.m || ops.moving_scales.size() != blocks * ops.n)
         : (!ops.stationary_scales.empty() || !ops.moving_scales.empty())) {
    throw std::invalid_argument(fmt::format("run_gemm: {} needs {} scales ([ceil(K/32), M] and [ceil(K/32), N])",
                                            isa::dtype_name(ops.dtype), mx ? "its" : "no"));
  }
  if (ops.accumulate_into && ops.out_type != isa::DataType::kFp32) {
    throw std::invalid_argument("run_gemm: accumulate_into needs an FP32 output (P is FP32 in the output buffer)");
  }
  const unsigned es = isa::dtype_bits(ops.dtype) / 8;
  drv.free_all();
  GemmLayout layout;
  layout.dtype = ops.dtype;
  layout.k = ops.k;
  layout.m = ops.m;
  layout.n = ops.n;
  layout.stationary_hbm = drv.alloc(km * es);
  layout.moving_hbm = drv.alloc(kn * es);
  const unsigned ob = isa::data_type_bytes(ops.out_type);
  layout.out_hbm = drv.alloc(mn * ob);
  layout.out_type = ops.out_type;
  layout.out_sr = ops.out_sr;
  layout.accumulate_into = ops.accumulate_into != nullptr;
  drv.write_hbm(layout.stationary_hbm, pack(ops.stationary, ops.dtype).data(), km * es);
  drv.write_hbm(layout.moving_hbm, pack(ops.moving, ops.dtype).data(), kn * es);
  if (ops.accumulate_into) drv.write_hbm(layout.out_hbm, ops.accumulate_into->data(), mn * 4);
  if (mx) {
    layout.stationary_scales_hbm = drv.alloc(ops.stationary_scales.size());
    layout.moving_scales_hbm = drv.alloc(ops.moving_scales.size());
    drv.write_hbm(layout.stationary_scales_hbm, ops.stationary_scales.data(), ops.stationary_scales.size());
    drv.write_hbm(layout.moving_scales_hbm, ops.moving_scales.data(), ops.moving_scales.size());
  }

  const isa::Program program = make_gemm_program(drv.info(), layout);
  drv.load_program(program);
  if (ops.out_sr) drv.set_sr_seed(ops.sr_seed);
  GemmDeviceRun r;
  for (const auto& q : program.queues) r.instructions += q.size();
  r.run = drv.run(timeout_cycles);
  std::vector<uint8_t> out(mn * ob);
  drv.read_hbm(layout.out_hbm, out.data(), out.size());
  r.out = driver::unpack_elements(out, ops.out_type);
  r.out_hbm = layout.out_hbm;
  return r;
}

}  // namespace trnsim::kernels
