#include "model/te/te_functional.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "model/fp/fp_ops.h"

// The kernels are written with GCC/Clang vector extensions: `a * b` and `a + b` on vector types are element-wise
// IEEE binary32 operations, each rounded once; with -ffp-contract=off the compiler never fuses them. Per-ISA
// entry points carry a target attribute, so one binary holds all of them and picks one at run time.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TRNSIM_TE_X86 1
#define TRNSIM_TARGET(isa) __attribute__((target(isa)))
#else
#define TRNSIM_TE_X86 0
#define TRNSIM_TARGET(isa)
#endif

namespace trnsim::model {

namespace {

// ---- widening ----------------------------------------------------------------------------------------------------

/// FP16 and FP8 patterns -> FP32 through a table filled once from fp::widen (65536 entries for FP16, 256 for
/// FP8, indexed by the low 8 bits as fp::widen does). BF16 needs no table: widening is a shift (plus the canonical
/// NaN), which vectorises; te_functional_test checks all 65536 patterns of every dtype against fp::widen.
template <isa::Dtype kDt, size_t kSize>
const float* widen_table() {
  // On the heap: the first call may come from a SystemC thread, whose stack is far smaller than a 256 KiB FP16
  // table built in a temporary (found by the mmio fuzz target: a stack overflow under AddressSanitizer).
  static const std::vector<float> table = [] {
    std::vector<float> t(kSize);
    for (size_t i = 0; i < kSize; ++i) {
      const uint32_t bits = fp::widen(kDt, static_cast<uint16_t>(i));
      std::memcpy(&t[i], &bits, 4);
    }
    return t;
  }();
  return table.data();
}

inline float widen_bf16(uint16_t b) {
  uint32_t w = uint32_t(b) << 16;
  if ((w & 0x7FFFFFFFu) > 0x7F800000u) w = fp::kF32Qnan;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

/// An MX operand element with its scale: index (scale << 8) | element code -> element * 2^(scale - 127), exactly
/// (`real`, a double: at most 4 significant bits, |exponent| < 170), as FP32 (`value`) and whether that is exact
/// (`exact`; when not, `value` is unused and the pass takes the exact path). Scale 0xFF is NaN (rule 10); a NaN
/// element stays NaN, an infinite one (E5M2) infinite.
struct MxTable {
  std::vector<double> real;
  std::vector<float> value;
  std::vector<uint8_t> exact;
};

template <isa::Dtype kDt>
const MxTable& mx_table() {
  static const MxTable table = [] {
    MxTable t;
    t.real.resize(65536);
    t.value.resize(65536);
    t.exact.resize(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      const uint32_t scale = i >> 8;
      const uint32_t bits = fp::widen(kDt, static_cast<uint16_t>(i & 0xFF));
      float e;
      std::memcpy(&e, &bits, 4);
      if (scale == isa::kE8M0Nan || !std::isfinite(e)) {
        t.value[i] = scale == isa::kE8M0Nan ? std::numeric_limits<float>::quiet_NaN() : e;
        t.real[i] = double(t.value[i]);
        t.exact[i] = 1;
        continue;
      }
      const double v = std::ldexp(double(e), int(scale) - 127);
      t.real[i] = v;
      const float f = static_cast<float>(v);
      t.value[i] = f;
      t.exact[i] = double(f) == v ? 1 : 0;
    }
    return t;
  }();
  return table;
}

const MxTable& mx_table(isa::Dtype dt) {
  switch (dt) {
    case isa::Dtype::kMxFp8E5M2: return mx_table<isa::Dtype::kMxFp8E5M2>();
    case isa::Dtype::kMxFp4: return mx_table<isa::Dtype::kMxFp4>();
    default: return mx_table<isa::Dtype::kMxFp8E4M3>();
  }
}

/// Where widen_pack reads its values: a table (FP16, FP8, MX; index masked as fp::widen masks) or, without one,
/// BF16.
struct WidenSource {
  const float* table;
  unsigned mask;
};

WidenSource widen_source(isa::Dtype dt) {
  switch (dt) {
    case isa::Dtype::kBf16: return {nullptr, 0xFFFF};
    case isa::Dtype::kFp16: return {widen_table<isa::Dtype::kFp16, 65536>(), 0xFFFF};
    case isa::Dtype::kFp8E4M3: return {widen_table<isa::Dtype::kFp8E4M3, 256>(), 0xFF};
    case isa::Dtype::kFp8E5M2: return {widen_table<isa::Dtype::kFp8E5M2, 256>(), 0xFF};
    case isa::Dtype::kMxFp8E4M3:
    case isa::Dtype::kMxFp8E5M2:
    case isa::Dtype::kMxFp4: return {mx_table(dt).value.data(), 0xFFFF};
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return {nullptr, 0xFFFF};
}

/// MX operand patterns (scale << 8) | element from elements [rows, cols] and their scales [rows, cols]; returns
/// whether every scaled element is an FP32 value (mx_table exact).
bool mx_combine(isa::Dtype dt, const std::vector<uint16_t>& elements, const std::vector<uint8_t>& scales,
                std::vector<uint16_t>& out) {
  const MxTable& t = mx_table(dt);
  out.resize(elements.size());
  bool exact = true;
  for (size_t i = 0; i < elements.size(); ++i) {
    out[i] = static_cast<uint16_t>((unsigned(scales[i]) << 8) | (elements[i] & 0xFF));
    exact = exact && t.exact[out[i]];
  }
  return exact;
}

/// The exact MX pass: out[m, n] = column sums over k of round_to_fp32(exact product), products from (scale << 8) |
/// element patterns w[k, m] and x[k, n]; sums FP32 in increasing k from +0.0, NaNs canonical.
void mx_exact_pass(isa::Dtype dt, const std::vector<uint16_t>& w, const std::vector<uint16_t>& x, int k, int m, int n,
                   std::vector<uint32_t>& out) {
  const std::vector<double>& real = mx_table(dt).real;
  std::vector<double> wv(w.size()), xv(x.size());
  for (size_t i = 0; i < w.size(); ++i) wv[i] = real[w[i]];
  for (size_t i = 0; i < x.size(); ++i) xv[i] = real[x[i]];
  out.resize(size_t(m) * n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int kk = 0; kk < k; ++kk) {
        // The exact product (<= 8 significant bits, |exponent| < 340: a double) rounded once to FP32.
        const float p = static_cast<float>(wv[size_t(kk) * m + i] * xv[size_t(kk) * n + j]);
        sum = sum + p;
      }
      uint32_t bits;
      std::memcpy(&bits, &sum, 4);
      out[size_t(i) * n + j] = std::isnan(sum) ? fp::kF32Qnan : bits;
    }
  }
}

// Vectors of C = 4, 8 or 16 elements for widening BF16 (C at most the target's FP32 lanes: wider generic vectors
// would be split, and their compares lowered element by element).
typedef uint16_t v4hu __attribute__((vector_size(8)));
typedef uint16_t v8hu __attribute__((vector_size(16)));
typedef uint16_t v16hu __attribute__((vector_size(32)));
typedef uint32_t v4su __attribute__((vector_size(16)));
typedef uint32_t v8su __attribute__((vector_size(32)));
typedef uint32_t v16su __attribute__((vector_size(64)));
typedef int32_t v4si __attribute__((vector_size(16)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef int32_t v16si __attribute__((vector_size(64)));
template <int C>
struct Bf16Chunk;
template <>
struct Bf16Chunk<4> {
  using H = v4hu;
  using U = v4su;
  using S = v4si;
};
template <>
struct Bf16Chunk<8> {
  using H = v8hu;
  using U = v8su;
  using S = v8si;
};
template <>
struct Bf16Chunk<16> {
  using H = v16hu;
  using U = v16su;
  using S = v16si;
};

/// dst[0..C) = widened BF16 src[0..C): the pattern shifted into the high half, NaN -> 0x7FC00000.
template <int C>
[[gnu::always_inline]] inline void widen_bf16_chunk(const uint16_t* src, float* dst) {
  using H = typename Bf16Chunk<C>::H;
  using U = typename Bf16Chunk<C>::U;
  using S = typename Bf16Chunk<C>::S;
  H h;
  std::memcpy(&h, src, sizeof h);
  const S w = (S)(__builtin_convertvector(h, U) << 16);  // FP32 bit pattern (bit-cast to signed lanes)
  const S nan = (w & 0x7FFFFFFF) > 0x7F800000;           // signed compare of non-negative values: SSE/AVX have it
  const S out = (w & ~nan) | (int32_t(fp::kF32Qnan) & nan);
  std::memcpy(dst, &out, sizeof out);
}

/// Widens src[rows, cols] (row-major) into dst as [ceil(cols / NB)][rows][NB], zero-padded in the last block: the
/// packed layout of both kernel operands (stationary with NB = MB, moving with NB = the kernel's column block).
/// LANES: FP32 lanes of the target's vectors.
template <int NB, int LANES>
[[gnu::always_inline]] inline void widen_pack(WidenSource ws, const uint16_t* src, int rows, int cols, float* dst) {
  constexpr int C = NB < LANES ? NB : LANES;
  static_assert(NB % C == 0 && (C == 4 || C == 8 || C == 16), "block of 4, 8 or a multiple of 16");
  for (int c0 = 0; c0 < cols; c0 += NB) {
    const int width = cols - c0 < NB ? cols - c0 : NB;
    for (int r = 0; r < rows; ++r) {
      const uint16_t* s = src + size_t(r) * cols + c0;
      if (width == NB && !ws.table) {
        for (int j = 0; j < NB; j += C) widen_bf16_chunk<C>(s + j, dst + j);
      } else if (width == NB) {
        for (int j = 0; j < NB; ++j) dst[j] = ws.table[s[j] & ws.mask];
      } else {
        for (int j = 0; j < width; ++j) dst[j] = ws.table ? ws.table[s[j] & ws.mask] : widen_bf16(s[j]);
        for (int j = width; j < NB; ++j) dst[j] = 0.0f;
      }
      dst += NB;
    }
  }
}

// ---- kernels -----------------------------------------------------------------------------------------------------

typedef float v4sf __attribute__((vector_size(16)));
typedef float v8sf __attribute__((vector_size(32)));
typedef float v16sf __attribute__((vector_size(64)));

template <class V>
struct VecTraits;
template <>
struct VecTraits<v4sf> {
  typedef int32_t Mask __attribute__((vector_size(16)));
};
template <>
struct VecTraits<v8sf> {
  typedef int32_t Mask __attribute__((vector_size(32)));
};
template <>
struct VecTraits<v16sf> {
  typedef int32_t Mask __attribute__((vector_size(64)));
};

/// out[m0 + i, n0 + j] for i < MB, j < NV * lanes: column sums of wp[k][MB]^T @ xp[k][NB], k in increasing order
/// from +0.0 for every (i, j). Only rows < mvalid and columns < nvalid are stored; NaNs are stored canonical.
template <class V, int MB, int NV>
[[gnu::always_inline]] inline void micro_kernel(const float* wp, const float* xp, int k, uint32_t* out, int ldo,
                                                int mvalid, int nvalid) {
  constexpr int L = int(sizeof(V) / sizeof(float));
  constexpr int NB = NV * L;
  using Mask = typename VecTraits<V>::Mask;
  V acc[MB][NV];
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = V{};  // +0.0: the column sum's start (rule 3)
  for (int kk = 0; kk < k; ++kk) {
    V x[NV];
    for (int j = 0; j < NV; ++j) std::memcpy(&x[j], xp + size_t(kk) * NB + j * L, sizeof(V));
    for (int i = 0; i < MB; ++i) {
      const float w = wp[size_t(kk) * MB + i];
      for (int j = 0; j < NV; ++j) {
        const V p = x[j] * w;        // one RNE product per element (rule 2)
        acc[i][j] = acc[i][j] + p;   // one RNE sum, partitions in increasing order (rule 3)
      }
    }
  }
  // Store with NaNs canonical (rule 5); a ragged last column block goes through a buffer.
  const Mask qnan = Mask{} + int32_t(fp::kF32Qnan);
  for (int i = 0; i < MB && i < mvalid; ++i) {
    uint32_t row[NB];
    for (int j = 0; j < NV; ++j) {
      Mask bits;
      std::memcpy(&bits, &acc[i][j], sizeof(V));
      const Mask nan = acc[i][j] != acc[i][j];
      bits = (bits & ~nan) | (qnan & nan);
      std::memcpy(row + j * L, &bits, sizeof(V));
    }
    if (nvalid == NB) {
      std::memcpy(out + size_t(i) * ldo, row, sizeof row);  // constant size: vector stores
    } else {
      std::memcpy(out + size_t(i) * ldo, row, sizeof(uint32_t) * size_t(nvalid));
    }
  }
}

/// All blocks: n blocks outer (one packed moving block, k * NB floats, stays in L1 across the m blocks).
template <class V, int MB, int NV>
[[gnu::always_inline]] inline void run_blocks(const float* wpack, const float* xpack, int k, int m, int n,
                                              uint32_t* out) {
  constexpr int NB = NV * int(sizeof(V) / sizeof(float));
  for (int n0 = 0; n0 < n; n0 += NB) {
    const float* xp = xpack + size_t(n0 / NB) * k * NB;
    const int nvalid = n - n0 < NB ? n - n0 : NB;
    for (int m0 = 0; m0 < m; m0 += MB) {
      micro_kernel<V, MB, NV>(wpack + size_t(m0 / MB) * k * MB, xp, k, out + size_t(m0) * n + n0, n, m - m0, nvalid);
    }
  }
}

using PackFn = void (*)(WidenSource ws, const uint16_t* src, int rows, int cols, float* dst);
using RunFn = void (*)(const float* wpack, const float* xpack, int k, int m, int n, uint32_t* out);

struct Kernel {
  const char* name;
  int mb, nb;  ///< block: MB output rows x NB output columns
  PackFn pack_w, pack_x;
  RunFn run;
  bool (*supported)();
};

// One kernel = a vector type V and a block of MB rows x NV vectors; its entry points (packing the stationary with
// NB = MB, packing the moving operand, computing) are compiled for its instruction set.
#define TRNSIM_TE_KERNEL(NAME, ATTR, V, MB, NV)                                                           \
  constexpr int NAME##_lanes = int(sizeof(V) / sizeof(float));                                           \
  ATTR void pack_w_##NAME(WidenSource ws, const uint16_t* src, int rows, int cols, float* dst) {       \
    widen_pack<MB, NAME##_lanes>(ws, src, rows, cols, dst);                                              \
  }                                                                                                      \
  ATTR void pack_x_##NAME(WidenSource ws, const uint16_t* src, int rows, int cols, float* dst) {       \
    widen_pack<NV * NAME##_lanes, NAME##_lanes>(ws, src, rows, cols, dst);                               \
  }                                                                                                      \
  ATTR void run_##NAME(const float* wpack, const float* xpack, int k, int m, int n, uint32_t* out) {   \
    run_blocks<V, MB, NV>(wpack, xpack, k, m, n, out);                                                   \
  }                                                                                                      \
  constexpr Kernel kernel_##NAME(bool (*supported)()) {                                                  \
    return {#NAME, MB, NV * NAME##_lanes, pack_w_##NAME, pack_x_##NAME, run_##NAME, supported};          \
  }

// Blocks measured on the project machine (docs/performance.md): AVX-512 8 x 32 (16 of 32 zmm registers hold
// sums), AVX2 4 x 16 (8 of 16 ymm), 128-bit 4 x 8 (8 of 16 xmm).
TRNSIM_TE_KERNEL(generic, , v4sf, 4, 2)
#if TRNSIM_TE_X86
TRNSIM_TE_KERNEL(avx2, TRNSIM_TARGET("avx2"), v8sf, 4, 2)
TRNSIM_TE_KERNEL(avx512, TRNSIM_TARGET("avx512f"), v16sf, 8, 2)
#endif
#undef TRNSIM_TE_KERNEL

const Kernel kKernels[] = {
#if TRNSIM_TE_X86
    kernel_avx512([] { return bool(__builtin_cpu_supports("avx512f")); }),
    kernel_avx2([] { return bool(__builtin_cpu_supports("avx2")); }),
#endif
    kernel_generic([] { return true; }),
};
constexpr int kNumKernels = int(sizeof(kKernels) / sizeof(kKernels[0]));

int best_kernel() {
  static const int best = [] {
    for (int i = 0; i < kNumKernels; ++i)
      if (kKernels[i].supported()) return i;
    return kNumKernels - 1;
  }();
  return best;
}

}  // namespace

TeFunctional::TeFunctional(int rows, int cols) : rows_(rows), cols_(cols), kernel_(best_kernel()) {}

std::vector<std::string> TeFunctional::available_kernels() {
  std::vector<std::string> names;
  for (const Kernel& k : kKernels)
    if (k.supported()) names.emplace_back(k.name);
  return names;
}

const char* TeFunctional::kernel_name() { return kKernels[best_kernel()].name; }

const char* TeFunctional::kernel() const { return kKernels[kernel_].name; }

bool TeFunctional::use_kernel(const std::string& name) {
  for (int i = 0; i < kNumKernels; ++i) {
    if (name == kKernels[i].name && kKernels[i].supported()) {
      kernel_ = i;
      if (k_ > 0) pack_weights();
      return true;
    }
  }
  return false;
}

void TeFunctional::pack_weights() {
  const Kernel& kern = kKernels[kernel_];
  wpack_.resize(size_t((m_ + kern.mb - 1) / kern.mb) * k_ * kern.mb);
  kern.pack_w(widen_source(dtype_), stationary_.data(), k_, m_, wpack_.data());
}

uint64_t TeFunctional::load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                                       const std::vector<uint8_t>& scales) {
  if (!supports(dtype) || k < 1 || k > max_k(dtype) || m < 1 || m > cols_ || stationary.size() != size_t(k) * m) {
    throw std::invalid_argument("TeFunctional::load_stationary: shape outside the array");
  }
  if (scales.size() != (isa::is_mx(dtype) ? stationary.size() : 0)) {
    throw std::invalid_argument("TeFunctional::load_stationary: MX dtypes need one scale per element, others none");
  }
  k_ = k;
  m_ = m;
  dtype_ = dtype;
  if (isa::is_mx(dtype)) {
    stationary_exact_ = mx_combine(dtype, stationary, scales, stationary_);
  } else {
    stationary_ = stationary;
    stationary_exact_ = true;
  }
  pack_weights();
  issue_ = TeTiming::issue_load(dtype, k);
  return TeTiming::load_stationary(dtype, k);
}

uint64_t TeFunctional::multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                                       const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                                       PsumWrite& /*psum_write: unchanged*/, uint32_t /*instr_index*/) {
  if (dtype != dtype_ || k != k_ || n < 1 || moving.size() != size_t(k) * n) {
    throw std::invalid_argument("TeFunctional::multiply_moving: shape does not match the loaded stationary");
  }
  if (scales.size() != (isa::is_mx(dtype) ? moving.size() : 0)) {
    throw std::invalid_argument("TeFunctional::multiply_moving: MX dtypes need one scale per element, others none");
  }
  const std::vector<uint16_t>* x = &moving;
  std::vector<uint16_t> combined;
  if (isa::is_mx(dtype)) {
    const bool exact = mx_combine(dtype, moving, scales, combined);
    x = &combined;
    if (!exact || !stationary_exact_) {
      mx_exact_pass(dtype, stationary_, combined, k, m_, n, out);
      issue_ = TeTiming::issue_multiply(n);
      return TeTiming::multiply_moving(rows_, cols_, n);
    }
  }
  const Kernel& kern = kKernels[kernel_];
  xpack_.resize(size_t((n + kern.nb - 1) / kern.nb) * k * kern.nb);
  kern.pack_x(widen_source(dtype), x->data(), k, n, xpack_.data());
  out.resize(size_t(m_) * n);
  kern.run(wpack_.data(), xpack_.data(), k, m_, n, out.data());
  issue_ = TeTiming::issue_multiply(n);
  return TeTiming::multiply_moving(rows_, cols_, n);
}

}  // namespace trnsim::model
