// A GEMM of any size on the verilated Tensor Engine, tiled to the array, with PSUM accumulation modelled in C++.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cosim/te/te_rtl.h"
#include "firmware/isa/dtype.h"

namespace trnsim::cosim {

/// Figures of one tiled GEMM run.
struct TeGemmStats {
  uint64_t passes = 0;       ///< LoadStationary + MultiplyMoving pairs issued
  uint64_t cycles = 0;       ///< engine clock cycles, passes run one after another
  uint64_t busy_cycles = 0;  ///< cycles with a moving column being taken (one per N per pass)
  uint64_t macs = 0;         ///< useful multiply-accumulates, K * M * N
};

/// out[M, N] = stationary[K, M]^T @ moving[K, N] for any K, M, N >= 1, as FP32 bits, row-major.
///
/// Tiles: K in tiles of te.rows() partitions, M in tiles of te.cols(), N in tiles of 512 (one PSUM bank). For each
/// (M, N) tile the K tiles run in increasing order; the first writes the PSUM tile, each later one is added to it
/// with one FP32 RNE addition per element (BRIEF section 3 rule 4), here in the model's PSUM adder (model/fp).
/// `progress`, if set, is called after each pass with (passes done, passes total).
/// Throws std::invalid_argument on a non-positive dimension or a size mismatch; TeRtlError from the engine.
std::vector<uint32_t> te_tiled_gemm(TeRtl& te, isa::Dtype dtype, int k, int m, int n,
                                    const std::vector<uint16_t>& stationary, const std::vector<uint16_t>& moving,
                                    TeGemmStats* stats = nullptr,
                                    const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace trnsim::cosim
