#include "firmware/kernels/gemm_launch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "firmware/kernels/gemm_kernel.h"
#include "firmware/kernels/kernel_sequence.h"

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

/// run_gemm's checks of the operands' sizes and options (std::invalid_argument).
void check_operands(const GemmHostOperands& ops) {
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
}
}  // namespace

GemmDeviceRun run_gemm(driver::Driver& drv, const GemmHostOperands& ops, uint64_t timeout_cycles) {
  // One core is the split over one core: the same buffers in the same order, the same program.
  GemmCoresRun c = run_gemm_cores({&drv}, ops, timeout_cycles);
  GemmDeviceRun r;
  r.out = std::move(c.out);
  r.out_hbm = c.out_hbm;
  r.run = c.runs.front();
  r.instructions = c.instructions;
  return r;
}

GemmCoresRun run_gemm_cores(const std::vector<driver::Driver*>& cores, const GemmHostOperands& ops,
                            uint64_t timeout_cycles) {
  if (cores.empty()) throw std::invalid_argument("run_gemm_cores: no cores");
  check_operands(ops);
  const bool mx = isa::is_mx(ops.dtype);
  const size_t km = size_t(ops.k) * ops.m, kn = size_t(ops.k) * ops.n, mn = size_t(ops.m) * ops.n;
  const unsigned es = isa::dtype_bits(ops.dtype) / 8, ob = isa::data_type_bytes(ops.out_type);
  for (driver::Driver* d : cores) d->free_all();
  // One copy of each operand and of the output in HBM (cores[0]'s region); every core reads its columns of the
  // operands in place and writes its block of the output (split_gemm).
  driver::Driver& d0 = *cores[0];
  GemmLayout shared;
  shared.dtype = ops.dtype;
  shared.k = ops.k;
  shared.m = ops.m;
  shared.n = ops.n;
  shared.out_type = ops.out_type;
  shared.out_sr = ops.out_sr;
  shared.accumulate_into = ops.accumulate_into != nullptr;
  shared.stationary_hbm = d0.alloc(km * es);
  d0.write_hbm(shared.stationary_hbm, pack(ops.stationary, ops.dtype).data(), km * es);
  shared.moving_hbm = d0.alloc(kn * es);
  d0.write_hbm(shared.moving_hbm, pack(ops.moving, ops.dtype).data(), kn * es);
  shared.out_hbm = d0.alloc(mn * ob);
  if (ops.accumulate_into) d0.write_hbm(shared.out_hbm, ops.accumulate_into->data(), mn * 4);
  if (mx) {
    shared.stationary_scales_hbm = d0.alloc(ops.stationary_scales.size());
    d0.write_hbm(shared.stationary_scales_hbm, ops.stationary_scales.data(), ops.stationary_scales.size());
    shared.moving_scales_hbm = d0.alloc(ops.moving_scales.size());
    d0.write_hbm(shared.moving_scales_hbm, ops.moving_scales.data(), ops.moving_scales.size());
  }
  GemmCoresRun r;
  r.pieces = split_gemm(d0.info(), shared, int(cores.size()));
  std::vector<driver::Driver*> active;
  for (size_t c = 0; c < r.pieces.size(); ++c) {
    const GemmLayout& layout = r.pieces[c].layout;
    driver::Driver& d = *cores[c];
    const isa::Program program = make_gemm_program(d.info(), layout);
    const driver::DeviceInfo& info = d.info();
    const double to_cycles = info.te_clock_mhz / 1000.0;  // TE cycles per ns
    const uint64_t bytes = plan_gemm(info, layout).dma_bytes;
    r.bound.dma_bytes += bytes;
    r.bound.te_cycles = std::max<uint64_t>(r.bound.te_cycles, uint64_t(std::ceil(
        double(ops.k) * layout.m * layout.n / (info.te_rows * info.te_cols))));
    r.bound.dma_cycles = std::max<uint64_t>(r.bound.dma_cycles,
        uint64_t(std::ceil(bytes / (info.num_dma_engines * info.dma_bytes_per_ns) * to_cycles)));
    for (const auto& q : program.queues) r.instructions += q.size();
    d.load_program(program);
    if (ops.out_sr) d.set_sr_seed(ops.sr_seed);
    active.push_back(&d);
  }
  r.bound.bytes_per_mac = double(r.bound.dma_bytes) / (double(ops.k) * ops.m * ops.n);
  const driver::DeviceInfo& chip = d0.info();  // the HBM is the chip's: every core's bytes at its bandwidth
  if (chip.hbm_bytes_per_ns > 0) {
    r.bound.hbm_cycles = uint64_t(std::ceil(double(r.bound.dma_bytes) / chip.hbm_bytes_per_ns *
                                            (chip.te_clock_mhz / 1000.0)));
  }
  for (driver::Driver* d : active) d->start();
  for (driver::Driver* d : active) {
    r.runs.push_back(d->wait(timeout_cycles));
    r.cycles = std::max(r.cycles, r.runs.back().cycles);
  }
  std::vector<uint8_t> out(mn * ob);
  d0.read_hbm(shared.out_hbm, out.data(), out.size());
  r.out = driver::unpack_elements(out, ops.out_type);
  r.out_hbm = shared.out_hbm;
  return r;
}

}  // namespace trnsim::kernels
