// Host side of the softmax, LayerNorm, RMSNorm and transpose kernels: puts host tensors into device HBM through
// the driver, runs the kernel program and reads the result back (like gemm_launch.h). The device is reached only
// through driver::Driver.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/kernels/norm_kernel.h"
#include "firmware/kernels/softmax_kernel.h"
#include "firmware/kernels/transpose_kernel.h"

namespace trnsim::kernels {

/// Result of one kernel run on the device.
struct KernelRun {
  std::vector<uint32_t> out;  ///< output element patterns, row-major (narrow patterns in the low bits)
  driver::RunResult run;      ///< cycles and retired instructions per queue
  size_t instructions = 0;    ///< program size, all queues
};

/// Each call frees every earlier allocation of `drv`, allocates and writes the inputs (element patterns of the
/// layout's input type, row-major; gamma/beta FP32 bits), fills in the layout's addresses (the other fields of
/// `layout` are used as given), runs the program with `timeout_cycles` and returns the output. Throws
/// std::invalid_argument on a size mismatch or a bad layout, and the driver's errors as they come.
KernelRun run_softmax(driver::Driver& drv, SoftmaxLayout layout, const std::vector<uint32_t>& in,
                      uint64_t timeout_cycles);
KernelRun run_layernorm(driver::Driver& drv, LayerNormLayout layout, const std::vector<uint32_t>& in,
                        const std::vector<uint32_t>& gamma, const std::vector<uint32_t>& beta, uint64_t timeout_cycles);
KernelRun run_rmsnorm(driver::Driver& drv, RmsNormLayout layout, const std::vector<uint32_t>& in,
                      const std::vector<uint32_t>& gamma, uint64_t timeout_cycles);
KernelRun run_transpose(driver::Driver& drv, TransposeLayout layout, const std::vector<uint32_t>& in,
                        uint64_t timeout_cycles);

}  // namespace trnsim::kernels
