// Host-side launch of the softmax, norm and transpose kernels (nn_launch.h).
#include "firmware/kernels/nn_launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace trnsim::kernels {
namespace {

void check_size(const char* kernel, const char* what, std::size_t have, uint64_t want) {
  if (have != want) {
    throw std::invalid_argument(fmt::format("{}: {} has {} elements, the layout needs {}", kernel, what, have, want));
  }
}

/// Allocates and writes one input tensor; returns its HBM address.
uint64_t put(driver::Driver& drv, const std::vector<uint32_t>& v, isa::DataType type) {
  const uint64_t addr = drv.alloc(v.size() * isa::data_type_bytes(type));
  drv.write_tensor(addr, v, type);
  return addr;
}

KernelRun launch(driver::Driver& drv, const isa::Program& program, uint64_t out_hbm, uint64_t out_elems,
                 isa::DataType out_type, uint64_t timeout_cycles) {
  drv.load_program(program);
  KernelRun r;
  for (const auto& q : program.queues) r.instructions += q.size();
  r.run = drv.run(timeout_cycles);
  r.out = drv.read_tensor(out_hbm, out_elems, out_type);
  return r;
}

}  // namespace

KernelRun run_softmax(driver::Driver& drv, SoftmaxLayout l, const std::vector<uint32_t>& in, uint64_t timeout_cycles) {
  const uint64_t n = uint64_t(std::max(l.rows, 0)) * uint64_t(std::max(l.cols, 0));
  check_size("run_softmax", "in", in.size(), n);
  drv.free_all();
  l.in_hbm = put(drv, in, l.in_type);
  l.out_hbm = drv.alloc(n * isa::data_type_bytes(l.out_type));
  return launch(drv, make_softmax_program(drv.info(), l), l.out_hbm, n, l.out_type, timeout_cycles);
}

KernelRun run_layernorm(driver::Driver& drv, LayerNormLayout l, const std::vector<uint32_t>& in,
                        const std::vector<uint32_t>& gamma, const std::vector<uint32_t>& beta,
                        uint64_t timeout_cycles) {
  const uint64_t n = uint64_t(std::max(l.rows, 0)) * uint64_t(std::max(l.cols, 0));
  check_size("run_layernorm", "in", in.size(), n);
  check_size("run_layernorm", "gamma", gamma.size(), uint64_t(std::max(l.cols, 0)));
  check_size("run_layernorm", "beta", beta.size(), uint64_t(std::max(l.cols, 0)));
  drv.free_all();
  l.in_hbm = put(drv, in, l.in_type);
  l.gamma_hbm = put(drv, gamma, isa::DataType::kFp32);
  l.beta_hbm = put(drv, beta, isa::DataType::kFp32);
  l.out_hbm = drv.alloc(n * isa::data_type_bytes(l.out_type));
  return launch(drv, make_layernorm_program(drv.info(), l), l.out_hbm, n, l.out_type, timeout_cycles);
}

KernelRun run_rmsnorm(driver::Driver& drv, RmsNormLayout l, const std::vector<uint32_t>& in,
                      const std::vector<uint32_t>& gamma, uint64_t timeout_cycles) {
  const uint64_t n = uint64_t(std::max(l.rows, 0)) * uint64_t(std::max(l.cols, 0));
  check_size("run_rmsnorm", "in", in.size(), n);
  check_size("run_rmsnorm", "gamma", gamma.size(), uint64_t(std::max(l.cols, 0)));
  drv.free_all();
  l.in_hbm = put(drv, in, l.in_type);
  l.gamma_hbm = put(drv, gamma, isa::DataType::kFp32);
  l.out_hbm = drv.alloc(n * isa::data_type_bytes(l.out_type));
  return launch(drv, make_rmsnorm_program(drv.info(), l), l.out_hbm, n, l.out_type, timeout_cycles);
}

KernelRun run_transpose(driver::Driver& drv, TransposeLayout l, const std::vector<uint32_t>& in,
                        uint64_t timeout_cycles) {
  const uint64_t n = uint64_t(std::max(l.rows, 0)) * uint64_t(std::max(l.cols, 0));
  check_size("run_transpose", "in", in.size(), n);
  drv.free_all();
  l.in_hbm = put(drv, in, static_cast<isa::DataType>(static_cast<uint8_t>(l.dtype)));
  l.out_hbm = drv.alloc(n * isa::data_type_bytes(l.out_type));
  return launch(drv, make_transpose_program(drv.info(), l), l.out_hbm, n, l.out_type, timeout_cycles);
}

}  // namespace trnsim::kernels
