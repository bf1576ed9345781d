// Tiled GEMM on the verilated Tensor Engine. See te_gemm.h.
#include "cosim/te/te_gemm.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/core.h>

#include "model/fp/fp_ops.h"

namespace trnsim::cosim {
namespace {
constexpr int kPsumBankColumns = 512;  // FP32 entries per partition in one PSUM bank (BRIEF section 2)
}

std::vector<uint32_t> te_tiled_gemm(TeRtl& te, isa::Dtype dtype, int k, int m, int n,
                                    const std::vector<uint16_t>& stationary, const std::vector<uint16_t>& moving,
                                    TeGemmStats* stats, const std::function<void(uint64_t, uint64_t)>& progress) {
  if (k < 1 || m < 1 || n < 1) throw std::invalid_argument(fmt::format("GEMM K={} M={} N={}: all must be >= 1", k, m, n));
  const size_t ks = static_cast<size_t>(k), ms = static_cast<size_t>(m), ns = static_cast<size_t>(n);
  if (stationary.size() != ks * ms || moving.size() != ks * ns) {
    throw std::invalid_argument(fmt::format("GEMM K={} M={} N={}: stationary has {} elements (need {}), moving {} "
                                            "(need {})", k, m, n, stationary.size(), ks * ms, moving.size(), ks * ns));
  }
  const int tr = te.rows(), tc = te.cols();
  const uint64_t k_tiles = (k + tr - 1) / tr, m_tiles = (m + tc - 1) / tc,
                 n_tiles = (n + kPsumBankColumns - 1) / kPsumBankColumns;
  const uint64_t total = k_tiles * m_tiles * n_tiles;

  TeGemmStats st;
  st.macs = static_cast<uint64_t>(k) * ms * ns;
  std::vector<uint32_t> out(ms * ns, 0);
  std::vector<uint16_t> s_tile, mv_tile;

  for (int m0 = 0; m0 < m; m0 += tc) {
    const int mt = std::min(tc, m - m0);
    for (int n0 = 0; n0 < n; n0 += kPsumBankColumns) {
      const int nt = std::min(kPsumBankColumns, n - n0);
      for (int k0 = 0; k0 < k; k0 += tr) {
        const int kt = std::min(tr, k - k0);
        s_tile.assign(static_cast<size_t>(kt) * mt, 0);
        mv_tile.assign(static_cast<size_t>(kt) * nt, 0);
        for (int i = 0; i < kt; ++i) {
          std::copy_n(&stationary[(k0 + i) * ms + m0], mt, &s_tile[static_cast<size_t>(i) * mt]);
          std::copy_n(&moving[(k0 + i) * ns + n0], nt, &mv_tile[static_cast<size_t>(i) * nt]);
        }
        const uint64_t before = te.cycle();
        const std::vector<uint32_t> part = te.matmul(dtype, kt, mt, nt, s_tile, mv_tile);
        st.cycles += te.cycle() - before;
        st.busy_cycles += static_cast<uint64_t>(nt);
        ++st.passes;
        for (int i = 0; i < mt; ++i) {
          uint32_t* row = &out[(m0 + i) * ns + n0];
          const uint32_t* src = &part[static_cast<size_t>(i) * nt];
          for (int j = 0; j < nt; ++j) row[j] = (k0 == 0) ? src[j] : model::fp::add(row[j], src[j]);
        }
        if (progress) progress(st.passes, total);
      }
    }
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace trnsim::cosim
