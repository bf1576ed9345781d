// Throughput of the TLM Tensor Engine datapath (model::TeFunctional) against OpenBLAS sgemm on one thread.
//
// One iteration is one full Tensor Engine matmul of the shape: LoadStationary(stationary[K, M]) then
// MultiplyMoving(moving[K, N]) -> out[M, N], narrow BF16 inputs widened inside the model, canonical NaNs out.
// The reference is cblas_sgemm(out = stationary^T @ moving) on the same values already in FP32, with
// openblas_set_num_threads(1). FLOP/s = 2 K M N / time. A third contender, "loop", is the textbook loop the model
// used before its register-blocked kernels (widen each element with fp::widen, then k / m / n loops): the speedup
// TLM / loop is measured in the same rounds.
//
// The machine is shared and noisy, so the two are measured in alternating rounds (TLM, sgemm, TLM, sgemm, ...): each
// round gives one rate of each and one ratio, and the medians over the rounds are printed. Times are the thread's
// CPU time (both run in the calling thread); wall-clock rates are printed beside them.
//
// Before timing, the TLM output is checked bit for bit against golden::gemm (exit 1 on a mismatch).
//
// Usage: te_tlm_bench [--shapes=tiny,trn2] [--rounds=R] [--round-time=SECONDS] [--dtype=bf16|fp16|fp8e4m3|fp8e5m2]
//                     [--kernel=avx512|avx2|generic]   (default: the kernel the model picks for this CPU)
// Output: a table, then one machine-readable line per figure: `RESULT <shape> <key> <value>`.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <cblas.h>

#include "firmware/golden/gemm_golden.h"
#include "firmware/isa/dtype.h"
#include "model/fp/fp_ops.h"
#include "model/te/te_functional.h"

namespace {

struct Shape {
  const char* name;
  int rows, cols;  ///< engine size
  int k, m, n;     ///< one full-size command of that engine
};
constexpr Shape kShapes[] = {
    {"tiny", 16, 16, 16, 16, 512},     // --config tiny: 16x16 engine, N = one PSUM bank
    {"trn2", 128, 128, 128, 128, 512}, // --config trn2: 128x128 engine
};

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
double wall_now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

uint32_t xorshift32(uint32_t x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

// Finite, non-zero operands around 1.0 of the given dtype (random sign and mantissa, a few binades).
uint16_t random_pattern(trnsim::isa::Dtype dt, uint32_t x) {
  const uint32_t sign = (x >> 15) & 1u;
  switch (dt) {
    case trnsim::isa::Dtype::kBf16: return uint16_t((sign << 15) | ((120u + ((x >> 7) & 15u)) << 7) | (x & 0x7Fu));
    case trnsim::isa::Dtype::kFp16: return uint16_t((sign << 15) | ((11u + ((x >> 10) & 7u)) << 10) | (x & 0x3FFu));
    case trnsim::isa::Dtype::kFp8E4M3:
    case trnsim::isa::Dtype::kMxFp8E4M3: return uint16_t((sign << 7) | ((4u + ((x >> 3) & 7u)) << 3) | (x & 7u));
    case trnsim::isa::Dtype::kFp8E5M2:
    case trnsim::isa::Dtype::kMxFp8E5M2: return uint16_t((sign << 7) | ((12u + ((x >> 2) & 7u)) << 2) | (x & 3u));
    case trnsim::isa::Dtype::kMxFp4: return uint16_t((sign << 3) | (1u + (x % 7u)));  // E2M1 0.5 .. 6
    case trnsim::isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return 0;
}

float to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The model's datapath before the register-blocked kernels (model/te/te_functional.cpp up to commit 3f68721), kept
// here as the speedup baseline: per-element fp::widen, acc[m][n] += w[k][m] * x[k][n] with k outermost.
void textbook_loop(trnsim::isa::Dtype dt, int k, int m, int n, const std::vector<uint16_t>& st,
                   const std::vector<uint16_t>& mv, std::vector<uint32_t>& out) {
  std::vector<float> w(st.size()), x(mv.size());
  for (size_t i = 0; i < st.size(); ++i) w[i] = to_float(trnsim::model::fp::widen(dt, st[i]));
  for (size_t i = 0; i < mv.size(); ++i) x[i] = to_float(trnsim::model::fp::widen(dt, mv[i]));
  std::vector<float> acc(size_t(m) * n, 0.0f);
  for (int kk = 0; kk < k; ++kk) {
    const float* xr = &x[size_t(kk) * n];
    for (int mm = 0; mm < m; ++mm) {
      const float wv = w[size_t(kk) * m + mm];
      float* a = &acc[size_t(mm) * n];
      for (int nn = 0; nn < n; ++nn) {
        const float p = wv * xr[nn];
        a[nn] = a[nn] + p;
      }
    }
  }
  out.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &acc[i], 4);
    out[i] = ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu)) ? trnsim::model::fp::kF32Qnan : b;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

struct Rates {
  double cpu = 0, wall = 0;  ///< FLOP/s
};

// Runs fn `iters` times; FLOP/s by CPU and wall time.
template <class Fn>
Rates time_it(Fn&& fn, long iters, double flops_per_iter) {
  const double c0 = cpu_now(), w0 = wall_now();
  for (long i = 0; i < iters; ++i) fn();
  const double c = cpu_now() - c0, w = wall_now() - w0;
  return {flops_per_iter * double(iters) / std::max(c, 1e-9), flops_per_iter * double(iters) / std::max(w, 1e-9)};
}

// Iterations that take about `seconds` of CPU time.
template <class Fn>
long calibrate(Fn&& fn, double seconds) {
  long iters = 1;
  for (;;) {
    const double c0 = cpu_now();
    for (long i = 0; i < iters; ++i) fn();
    const double c = cpu_now() - c0;
    if (c >= 0.05 || iters >= (1L << 30)) return std::max(1L, long(double(iters) * seconds / std::max(c, 1e-9)));
    iters *= 4;
  }
}

int bench_shape(const Shape& s, trnsim::isa::Dtype dt, const std::string& kernel, int rounds, double round_time) {
  using trnsim::model::TeFunctional;
  uint32_t seed = 0x2545F491u;
  std::vector<uint16_t> st(size_t(s.k) * s.m), mv(size_t(s.k) * s.n);
  for (auto& v : st) v = random_pattern(dt, seed = xorshift32(seed));
  for (auto& v : mv) v = random_pattern(dt, seed = xorshift32(seed));

  TeFunctional te(s.rows, s.cols);
  if (!kernel.empty() && !te.use_kernel(kernel)) {
    std::fprintf(stderr, "te_tlm_bench: --kernel=%s: not available on this CPU\n", kernel.c_str());
    return 2;
  }
  std::vector<uint32_t> out;
  te.load_stationary(dt, s.k, s.m, st);
  te.multiply_moving(dt, s.k, s.n, mv, out, 0);
  const std::vector<uint32_t> want = trnsim::golden::gemm({dt, s.k, s.m, s.n, st, mv}, s.rows);
  std::vector<uint32_t> out_loop;
  textbook_loop(dt, s.k, s.m, s.n, st, mv, out_loop);
  if (out != want || out_loop != want) {
    std::fprintf(stderr, "te_tlm_bench: %s: %s output differs from golden::gemm\n", s.name,
                 out != want ? "TLM" : "textbook loop");
    return 1;
  }

  std::vector<float> a(st.size()), b(mv.size()), c(size_t(s.m) * s.n);
  for (size_t i = 0; i < st.size(); ++i) a[i] = to_float(trnsim::model::fp::widen(dt, st[i]));
  for (size_t i = 0; i < mv.size(); ++i) b[i] = to_float(trnsim::model::fp::widen(dt, mv[i]));

  const auto tlm = [&] {
    te.load_stationary(dt, s.k, s.m, st);
    te.multiply_moving(dt, s.k, s.n, mv, out, 0);
  };
  const auto blas = [&] {
    // out[M, N] = stationary[K, M]^T @ moving[K, N], row-major.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.m, b.data(), s.n, 0.0f,
                c.data(), s.n);
  };
  const auto loop = [&] { textbook_loop(dt, s.k, s.m, s.n, st, mv, out_loop); };
  const double flops = 2.0 * s.k * s.m * s.n;
  const long it_tlm = calibrate(tlm, round_time), it_blas = calibrate(blas, round_time);
  const long it_loop = calibrate(loop, round_time / 3);
  std::vector<double> tc, tw, bc, bw, lc, ratio, speedup;
  for (int r = 0; r < rounds; ++r) {
    const Rates t = time_it(tlm, it_tlm, flops);
    const Rates b2 = time_it(blas, it_blas, flops);
    const Rates l = time_it(loop, it_loop, flops);
    tc.push_back(t.cpu);
    tw.push_back(t.wall);
    bc.push_back(b2.cpu);
    bw.push_back(b2.wall);
    lc.push_back(l.cpu);
    ratio.push_back(t.cpu / b2.cpu);
    speedup.push_back(t.cpu / l.cpu);
  }
  const double rt = median(tc), rb = median(bc), q = median(ratio), sp = median(speedup);
  const double q_min = *std::min_element(ratio.begin(), ratio.end());
  const double q_max = *std::max_element(ratio.begin(), ratio.end());
  std::printf("%-5s %4dx%-4d K=%-4d M=%-4d N=%-4d %-7s  TLM %7.2f GFLOP/s (wall %6.2f)  sgemm %7.2f GFLOP/s "
              "(wall %6.2f)  TLM/sgemm %.3f (rounds %.3f..%.3f)\n",
              s.name, s.rows, s.cols, s.k, s.m, s.n, trnsim::isa::dtype_name(dt).data(), rt / 1e9,
              median(tw) / 1e9, rb / 1e9, median(bw) / 1e9, q, q_min, q_max);
  std::printf("RESULT %s tlm_gflops %.4g\n", s.name, rt / 1e9);
  std::printf("RESULT %s tlm_gflops_wall %.4g\n", s.name, median(tw) / 1e9);
  std::printf("RESULT %s sgemm_gflops %.4g\n", s.name, rb / 1e9);
  std::printf("RESULT %s sgemm_gflops_wall %.4g\n", s.name, median(bw) / 1e9);
  std::printf("RESULT %s ratio %.4g\n", s.name, q);
  std::printf("RESULT %s ratio_min %.4g\n", s.name, q_min);
  std::printf("RESULT %s ratio_max %.4g\n", s.name, q_max);
  std::printf("%-5s textbook loop %6.2f GFLOP/s: TLM kernel speedup %.1fx\n", s.name, median(lc) / 1e9, sp);
  std::printf("RESULT %s loop_gflops %.4g\n", s.name, median(lc) / 1e9);
  std::printf("RESULT %s speedup %.4g\n", s.name, sp);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = "tiny,trn2", dtype = "bf16", kernel;
  int rounds = 7;
  double round_time = 0.3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--shapes=", 0) == 0) {
      shapes = a.substr(9);
    } else if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::atoi(a.c_str() + 9));
    } else if (a.rfind("--round-time=", 0) == 0) {
      round_time = std::max(0.001, std::atof(a.c_str() + 13));
    } else if (a.rfind("--kernel=", 0) == 0) {
      kernel = a.substr(9);
    } else if (a.rfind("--dtype=", 0) == 0) {
      dtype = a.substr(8);
    } else {
      std::fprintf(stderr,
                   "usage: te_tlm_bench [--shapes=tiny,trn2] [--rounds=R] [--round-time=SECONDS] "
                   "[--dtype=bf16|fp16|fp8e4m3|fp8e5m2] [--kernel=avx512|avx2|generic]\n");
      return 2;
    }
  }
  const auto dt = trnsim::isa::parse_dtype(dtype);
  if (!dt) {
    std::fprintf(stderr, "te_tlm_bench: --dtype=%s: unknown\n", dtype.c_str());
    return 2;
  }
  openblas_set_num_threads(1);
  std::printf("TLM Tensor Engine datapath vs OpenBLAS sgemm (1 thread, core %s); TLM kernel: %s; %d rounds of "
              "~%.2f s each\n",
              openblas_get_corename(), kernel.empty() ? trnsim::model::TeFunctional::kernel_name() : kernel.c_str(), rounds,
              round_time);
  int rc = 0;
  for (const Shape& s : kShapes) {
    if (("," + shapes + ",").find("," + std::string(s.name) + ",") == std::string::npos) continue;
    rc |= bench_shape(s, *dt, kernel, rounds, round_time);
  }
  return rc;
}
