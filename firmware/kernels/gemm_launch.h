// Host side of the tiled GEMM: puts the operands into device HBM through the driver, runs the kernel program
// (gemm_kernel.h) and reads the result back. The device is reached only through driver::Driver.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/dtype.h"
#include "firmware/kernels/kernel_sequence.h"

namespace trnsim::kernels {

/// One GEMM's host operands: out[M, N] (+)= stationary[K, M]^T @ moving[K, N].
struct GemmHostOperands {
  isa::Dtype dtype = isa::Dtype::kBf16;
  int k = 0, m = 0, n = 0;
  std::vector<uint16_t> stationary;        ///< [K, M] narrow bit patterns, row-major (FP8 in the low 8 bits)
  std::vector<uint16_t> moving;            ///< [K, N]
  /// MX dtypes only (BRIEF section 3 rule 10): E8M0 scales [ceil(K / 32), M] and [ceil(K / 32), N].
  std::vector<uint8_t> stationary_scales, moving_scales;
  const std::vector<uint32_t>* accumulate_into = nullptr;  ///< optional P[M, N] FP32 bits: out = P + S^T @ M
  /// The output's type in HBM (GemmLayout::out_type): FP32, or a narrow type the sums are cast to; with out_sr the
  /// cast rounds stochastically (BRIEF rule 9) under SR_SEED = sr_seed.
  isa::DataType out_type = isa::DataType::kFp32;
  bool out_sr = false;
  uint32_t sr_seed = 0;
};

struct GemmDeviceRun {
  std::vector<uint32_t> out;     ///< [M, N] patterns of out_type (FP32 bits, or narrow in the low bits), row-major
  uint64_t out_hbm = 0;          ///< HBM address of out (stochastic rounding keys each element by its address)
  driver::RunResult run;         ///< cycles and retired instructions
  size_t instructions = 0;       ///< program size, all queues
};

/// Allocates HBM for the operands and the result (freeing every earlier allocation of `drv`), writes them, loads
/// and runs the kernel with `timeout_cycles`, and returns the result. Throws std::invalid_argument on a size
/// mismatch (scales included: present exactly for an MX dtype), plan_gemm's for the output type, and the driver's
/// errors (DeviceFault, DriverTimeout, OutOfDeviceMemory) as they come.
GemmDeviceRun run_gemm(driver::Driver& drv, const GemmHostOperands& ops, uint64_t timeout_cycles);

/// The floors a GEMM's time cannot go below at the kernel's tiling (docs/kernels.md "Bounds"), in TE cycles: the
/// Tensor Engine's (MACs / PEs, the busiest core), the DMA's (a core's bytes over the DMA, GemmPlan::dma_bytes, at
/// num_dma_engines x dma_bytes_per_ns: the busiest core) and the HBM model's (every core's bytes at the chip's
/// hbm_bytes_per_ns). A run reaches at best the largest.
struct GemmBound {
  uint64_t dma_bytes = 0;      ///< all cores
  double bytes_per_mac = 0;    ///< dma_bytes / MACs
  uint64_t te_cycles = 0, dma_cycles = 0, hbm_cycles = 0;
};

/// What run_gemm_cores reports: the whole result and each core's run.
struct GemmCoresRun {
  std::vector<uint32_t> out;                 ///< [M, N], as GemmDeviceRun::out
  std::vector<GemmPiece> pieces;             ///< piece c ran on cores[c]; the cores past them sat out
  std::vector<driver::RunResult> runs;       ///< per piece (in core order)
  uint64_t cycles = 0;                       ///< the longest core's cycles: the GEMM's time on the chip
  uint64_t out_hbm = 0;                      ///< HBM address of out (the shared output buffer)
  size_t instructions = 0;                   ///< programs' sizes, all cores and queues
  GemmBound bound;
};

/// The GEMM split over the cores of one chip (docs/kernels.md, "Multi-core GEMM"): split_gemm's pieces, piece c on
/// cores[c], so the result is bit for bit run_gemm's. Each operand and the output are one copy in HBM, in cores[0]'s
/// region, that every core reads and writes in place. `cores` are the drivers of distinct cores of one chip
/// (CoreDevice views with disjoint HbmRegions). Starts every core, then waits for each. Throws
/// std::invalid_argument as run_gemm does and for an empty `cores`; the drivers' errors as they come (the first core's
/// that fails).
GemmCoresRun run_gemm_cores(const std::vector<driver::Driver*>& cores, const GemmHostOperands& ops,
                            uint64_t timeout_cycles);

}  // namespace trnsim::kernels
