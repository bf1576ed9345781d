// `trnsim matmul`: O = S^T @ M from .npy files, computed on the simulated device by the tiled GEMM kernel and
// checked against the golden GEMM (BRIEF section 4).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include <fmt/core.h>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/mx_golden.h"
#include "firmware/kernels/gemm_launch.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/device_session.h"
#include "tools/trnsim/npy_io.h"

namespace trnsim::tool {
namespace {

struct MatmulOptions {
  std::string stationary, moving, out, accumulate_into, dtype;
  std::string out_dtype = "fp32";  ///< the output cast on the device (fp32: none)
  std::string round = "rne";       ///< rne or stochastic (the output cast)
  std::optional<uint32_t> seed;    ///< SR_SEED for --round stochastic
  DeviceFlags device;
};

constexpr int64_t kMaxDim = 1 << 20;

// Rounds float32 bit patterns to `dt` once, to nearest even (rule 6; FP8 saturating).
std::vector<uint16_t> round_to(isa::Dtype dt, const std::vector<uint32_t>& f32) {
  std::vector<uint16_t> v(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) v[i] = golden::narrow_from_f32(dt, f32[i], /*saturate=*/true);
  return v;
}

int run_matmul(MatmulOptions o) {
  const auto dt = isa::parse_dtype(o.dtype);
  if (!dt) throw BadInput(fmt::format("--dtype {}: unknown ({})", o.dtype, isa::kTeDtypeNames));
  const bool mx = isa::is_mx(*dt);
  const auto out_type = isa::parse_data_type(o.out_dtype);
  if (!out_type) {
    throw BadInput(fmt::format("--out-dtype {}: unknown (fp32, bf16, fp16, fp8e4m3, fp8e5m2)", o.out_dtype));
  }
  const bool narrow_out = *out_type != isa::DataType::kFp32;
  const bool stochastic = stochastic_rounding(o.round, o.seed.has_value());
  if (stochastic && !narrow_out) {
    throw BadInput("--round stochastic rounds the output cast: give a narrow --out-dtype (bf16, fp16, fp8e4m3, "
                   "fp8e5m2)");
  }
  if (narrow_out && !o.accumulate_into.empty()) {
    throw BadInput(fmt::format("--accumulate-into needs --out-dtype fp32 (P is accumulated in FP32), not {}",
                               o.out_dtype));
  }
  const F32Matrix s = load_f32_matrix(o.stationary, "--stationary");
  const F32Matrix m = load_f32_matrix(o.moving, "--moving");
  for (const auto& [flag, path, mat] : {std::tuple{"--stationary", &o.stationary, &s},
                                        std::tuple{"--moving", &o.moving, &m}}) {
    if (mat->rows < 1 || mat->cols < 1 || mat->rows > kMaxDim || mat->cols > kMaxDim) {
      throw BadInput(fmt::format("{} {}: shape [{}, {}] must have both sizes in 1..{}", flag, *path, mat->rows,
                                 mat->cols, kMaxDim));
    }
  }
  if (s.rows != m.rows) {
    throw BadInput(fmt::format("--stationary is [K={}, M={}] but --moving is [K={}, N={}]: K must agree", s.rows,
                               s.cols, m.rows, m.cols));
  }
  const int k = int(s.rows), mm = int(s.cols), n = int(m.cols);
  F32Matrix p;
  if (!o.accumulate_into.empty()) {
    p = load_f32_matrix(o.accumulate_into, "--accumulate-into");
    if (p.rows != mm || p.cols != n) {
      throw BadInput(fmt::format("--accumulate-into {}: shape [{}, {}], the result is [M={}, N={}]",
                                 o.accumulate_into, p.rows, p.cols, mm, n));
    }
  }
  {  // can be written (before the run); a file made only to find out is removed again, an old one kept
    std::error_code ec;
    const bool existed = std::filesystem::exists(o.out, ec);
    {
      std::ofstream probe(o.out, std::ios::binary | std::ios::app);
      if (!probe) throw BadInput(fmt::format("--out {}: cannot open for writing", o.out));
    }
    if (!existed) std::filesystem::remove(o.out, ec);
  }

  DeviceSession session = open_device(o.device);
  open_cores(session, o.device);
  kernels::GemmHostOperands ops;
  ops.dtype = *dt;
  ops.k = k;
  ops.m = mm;
  ops.n = n;
  if (mx) {  // rule 10: blocks of 32 along K, one E8M0 scale per block and column
    golden::MxTensor qs = golden::quantize_mx(*dt, k, mm, s.bits);
    golden::MxTensor qm = golden::quantize_mx(*dt, k, n, m.bits);
    ops.stationary = std::move(qs.elements);
    ops.stationary_scales = std::move(qs.scales);
    ops.moving = std::move(qm.elements);
    ops.moving_scales = std::move(qm.scales);
  } else {
    ops.stationary = round_to(*dt, s.bits);
    ops.moving = round_to(*dt, m.bits);
  }
  ops.accumulate_into = o.accumulate_into.empty() ? nullptr : &p.bits;
  ops.out_type = *out_type;
  ops.out_sr = stochastic;
  ops.sr_seed = o.seed.value_or(0);
  const std::string cast = !narrow_out ? ""
                           : stochastic ? fmt::format(", output cast to {} (stochastic rounding, seed {})",
                                                      o.out_dtype, ops.sr_seed)
                                        : fmt::format(", output cast to {} (round to nearest even)", o.out_dtype);
  fmt::print("trnsim matmul: O[M={}, N={}] = S[K={}, M]^T @ M[K, N]{}, dtype {}{}, config {} ({} datapath){}\n",
             mm, n, k, ops.accumulate_into ? " + P" : "", o.dtype, cast, session.info().config_name,
             session.info().te_backend,
             o.device.cores > 1
                 ? fmt::format(", split over cores 0..{} (blocks of output rows x columns)", o.device.cores - 1)
                 : "");
  std::fflush(stdout);

  return run_on_device(session, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    // docs/kernels.md, "Multi-core GEMM" (one core: the split over one core, as run_gemm).
    const kernels::GemmCoresRun r = kernels::run_gemm_cores(session.cores(), ops, o.device.timeout_cycles);
    if (o.device.cores > 1) {
      for (size_t i = 0; i < size_t(o.device.cores); ++i) {
        if (i >= r.pieces.size()) {
          fmt::print("  core {}: nothing left: it sat out\n", i);
          continue;
        }
        const kernels::GemmPiece& p = r.pieces[i];
        fmt::print("  core {}: {} rows x {} columns (rows {}..{}, columns {}..{})\n", i, p.layout.m, p.layout.n, p.m0,
                   p.m0 + p.layout.m - 1, p.n0, p.n0 + p.layout.n - 1);
      }
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The .npy holds FP32: a narrow output widened exactly.
    std::vector<uint32_t> out_f32 = r.out;
    if (narrow_out) {
      for (uint32_t& v : out_f32) v = golden::widen_to_f32(static_cast<isa::Dtype>(*out_type), uint16_t(v));
    }
    save_f32_matrix(o.out, "--out", {mm, n, out_f32});
    auto want = golden::gemm({*dt, k, mm, n, ops.stationary, ops.moving, ops.stationary_scales, ops.moving_scales},
                             session.info().te_rows, ops.accumulate_into);
    const std::string golden_cast = narrow_out ? " and its " + o.out_dtype + " cast" : "";
    if (narrow_out) {  // the golden output cast: rule 6, or rule 9 with each element's HBM address as its key
      const auto odt = static_cast<isa::Dtype>(*out_type);
      const unsigned ob = isa::data_type_bytes(*out_type);
      for (size_t i = 0; i < want.size(); ++i) {
        const uint64_t key = isa::sr_element_key(isa::MemSpace::kHbm, r.out_hbm + i * ob);
        want[i] = stochastic ? golden::narrow_stochastic(odt, want[i], true, golden::sr_random_bits(ops.sr_seed, key))
                             : golden::narrow_from_f32(odt, want[i], true);
      }
    }
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] != r.out[i] && bad++ < 5) {
        fmt::print("  MISMATCH O[{}][{}]: device 0x{:08X}, golden 0x{:08X}\n", i / n, i % n, r.out[i], want[i]);
      }
    }
    const double macs = double(k) * mm * n;
    fmt::print("  {} device cycles, {}, {:.3f} s host time; wrote {}\n", r.cycles,
               counted(r.instructions, "instruction"), wall, o.out);
    fmt::print("  TE utilization {:.1f}% of the {} array{}\n",
               100.0 * macs / (double(r.cycles) * session.info().te_rows * session.info().te_cols * r.runs.size()),
               fmt::format("{}x{}", session.info().te_rows, session.info().te_cols),
               r.runs.size() > 1 ? fmt::format("s of {} cores", r.runs.size()) : "");
    const kernels::GemmBound& b = r.bound;
    fmt::print("  bounds (cycles)  TE {} | DMA {} ({:.1f} MB, {:.4f} B/MAC at this tiling) | HBM {}; the run is at {} "
               "of the tightest\n",
               b.te_cycles, b.dma_cycles, b.dma_bytes / 1e6, b.bytes_per_mac, b.hbm_cycles,
               fmt::format("{:.1f}%", 100.0 * double(std::max({b.te_cycles, b.dma_cycles, b.hbm_cycles})) /
                                          double(r.cycles)));
    write_wave_layout(o.device.wave, session.info());
    session.write_timeline();  // before the PASS/FAIL line
    if (bad) {
      fmt::print("FAIL: {} of {} elements differ from the golden GEMM{}\n", bad, want.size(), golden_cast);
      return kExitFail;
    }
    fmt::print("PASS: {} bit-exact against the golden GEMM{}\n", counted(want.size(), "element"), golden_cast);
    return kExitOk;
  });
}

}  // namespace

Action add_matmul(CLI::App& app) {
  auto o = std::make_shared<MatmulOptions>();
  CLI::App* cmd = app.add_subcommand(
      "matmul", "O = S^T @ M from .npy files on the simulated device (tiled GEMM kernel), checked against golden");
  cmd->add_option("--stationary", o->stationary, "S: float32 [K, M] .npy")->required();
  cmd->add_option("--moving", o->moving, "M: float32 [K, N] .npy")->required();
  cmd->add_option("--dtype", o->dtype,
                  "Input dtype the operands are rounded to: bf16, fp16, fp8e4m3, fp8e5m2, or quantized to (OCP MX, "
                  "blocks of 32 along K): mxfp8e4m3, mxfp8e5m2, mxfp4")
      ->required();
  cmd->add_option("--out", o->out, "O: float32 [M, N] .npy to write (a narrow --out-dtype widened exactly)")
      ->required();
  cmd->add_option("--out-dtype", o->out_dtype,
                  "Type the device casts O to on its way to HBM: fp32 (no cast), bf16, fp16, fp8e4m3, fp8e5m2 (FP8 "
                  "saturating)")
      ->capture_default_str();
  cmd->add_option("--round", o->round,
                  "Rounding of that cast: rne (nearest even) or stochastic (BRIEF rule 9, seeded by --seed)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "--round stochastic: SR_SEED, the generator's seed (default 0)")
      ->check(CLI::Range(int64_t(0), int64_t(0xFFFFFFFF)));
  cmd->add_option("--accumulate-into", o->accumulate_into, "P: float32 [M, N] .npy; O = P + S^T @ M");
  cmd->add_option("--config", o->device.config, "Machine configuration: tiny (2 cores), trn2 or trn3 (8 cores)")->capture_default_str();
  cmd->add_option("--te", o->device.te,
                  "Tensor Engine datapath: rtl, tlm or lockstep")
      ->capture_default_str();
  cmd->add_option("--timeout-cycles", o->device.timeout_cycles,
                  "Give up when one program launch runs this many device cycles without finishing (every launch of "
                  "a multi-program run has the whole limit)")
      ->check(kNonNegative)
      ->capture_default_str();
  add_watchdog_flag(*cmd, o->device);
  add_cores_flag(*cmd, o->device);
  cmd->add_option("--wave", o->device.wave, "Write an FST waveform of the RTL Tensor Engine");
  add_wave_window_flags(*cmd, o->device);
  add_trace_flags(*cmd, o->device);
  add_connect_flag(*cmd, o->device);
  return [o, cmd] {
    check_connect_flags(*cmd, o->device);
    return run_matmul(*o);
  };
}

}  // namespace trnsim::tool
