// `trnsim fpcheck`: runs Berkeley TestFloat-format vectors through the model's FP units (default) or the verilated
// RTL FP units (--rtl) and compares result bits (BRIEF section 4; vector format: shared/vectors/testfloat/FORMAT.md).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "cosim/fp/fp_rtl.h"
#include "firmware/golden/fp_golden.h"
#include "model/fp/fp_ops.h"
#include "tools/testfloat/testfloat_file.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
namespace {

/// Operand / result kinds of the vector file; `digits` is the hex width of the field.
/// kE2M1: the MXFP4 element (OCP MX v1.0 section 5.3.3), one hex digit.
enum class Kind { kF32, kF16, kBf16, kE4M3, kE5M2, kE2M1 };

int digits_of(Kind k) {
  switch (k) {
    case Kind::kF32: return 8;
    case Kind::kF16:
    case Kind::kBf16: return 4;
    case Kind::kE4M3:
    case Kind::kE5M2: return 2;
    case Kind::kE2M1: return 1;
  }
  return 8;
}

bool is_nan(Kind k, uint32_t bits) {
  switch (k) {
    case Kind::kF32: return (bits & 0x7FFFFFFFu) > 0x7F800000u;
    case Kind::kF16: return golden::is_nan(isa::Dtype::kFp16, static_cast<uint16_t>(bits));
    case Kind::kBf16: return golden::is_nan(isa::Dtype::kBf16, static_cast<uint16_t>(bits));
    case Kind::kE4M3: return golden::is_nan(isa::Dtype::kFp8E4M3, static_cast<uint16_t>(bits));
    case Kind::kE5M2: return golden::is_nan(isa::Dtype::kFp8E5M2, static_cast<uint16_t>(bits));
    case Kind::kE2M1: return false;  // E2M1 has no NaN
  }
  return false;
}

isa::Dtype dtype_of(Kind k) {
  switch (k) {
    case Kind::kF16: return isa::Dtype::kFp16;
    case Kind::kBf16: return isa::Dtype::kBf16;
    case Kind::kE4M3: return isa::Dtype::kFp8E4M3;
    case Kind::kE5M2: return isa::Dtype::kFp8E5M2;
    case Kind::kE2M1: return isa::Dtype::kMxFp4;  // the MX type stands for its element format
    case Kind::kF32: break;
  }
  throw std::logic_error("fpcheck: FP32 has no narrow dtype");
}

enum class OpClass { kAdd, kSub, kMul, kWiden, kNarrow };

struct OpSpec {
  std::string_view name;
  OpClass cls;
  Kind input;   ///< kind of every input operand
  Kind result;  ///< kind of the result field
  int inputs;   ///< number of input operands (2 for arithmetic, 1 for conversions)
};

constexpr OpSpec kOps[] = {
    {"f32_add", OpClass::kAdd, Kind::kF32, Kind::kF32, 2},
    {"f32_sub", OpClass::kSub, Kind::kF32, Kind::kF32, 2},
    {"f32_mul", OpClass::kMul, Kind::kF32, Kind::kF32, 2},
    {"f32_to_f16", OpClass::kNarrow, Kind::kF32, Kind::kF16, 1},
    {"f16_to_f32", OpClass::kWiden, Kind::kF16, Kind::kF32, 1},
    {"f32_to_bf16", OpClass::kNarrow, Kind::kF32, Kind::kBf16, 1},
    {"bf16_to_f32", OpClass::kWiden, Kind::kBf16, Kind::kF32, 1},
    {"f32_to_fp8e4m3", OpClass::kNarrow, Kind::kF32, Kind::kE4M3, 1},
    {"f32_to_fp8e5m2", OpClass::kNarrow, Kind::kF32, Kind::kE5M2, 1},
    {"fp8e4m3_to_f32", OpClass::kWiden, Kind::kE4M3, Kind::kF32, 1},
    {"fp8e5m2_to_f32", OpClass::kWiden, Kind::kE5M2, Kind::kF32, 1},
    // The MX element conversions (BRIEF rule 10): MXFP8 elements are the FP8 ops above; MXFP4's E2M1 (saturating,
    // no Inf or NaN: NaN gives +0), on the model and the RTL (trn_fp_widen / trn_fp_narrow with the MXFP4 code).
    {"f32_to_fp4e2m1", OpClass::kNarrow, Kind::kF32, Kind::kE2M1, 1},
    {"fp4e2m1_to_f32", OpClass::kWiden, Kind::kE2M1, Kind::kF32, 1},
};

std::string op_names(std::string_view sep) {
  std::string out;
  for (const OpSpec& op : kOps) {
    if (!out.empty()) out += sep;
    out += op.name;
  }
  return out;
}

/// The FP units under test: the model's (model/fp) or the verilated RTL's (cosim/fp).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual uint32_t widen(isa::Dtype dt, uint16_t bits) = 0;
  virtual uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate) = 0;
  /// Stochastic rounding (BRIEF rule 9) with the backend's own generator for element `key` under `seed`.
  virtual uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint32_t seed, uint64_t key) = 0;
  virtual uint32_t add(uint32_t a, uint32_t b) = 0;
  virtual uint32_t mul(uint32_t a, uint32_t b) = 0;
};

class ModelBackend final : public Backend {
 public:
  uint32_t widen(isa::Dtype dt, uint16_t bits) override { return model::fp::widen(dt, bits); }
  uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate) override {
    return model::fp::narrow(dt, f32, saturate);
  }
  uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint32_t seed, uint64_t key) override {
    return model::fp::narrow_stochastic(dt, f32, saturate, model::fp::sr_bits(seed, key));
  }
  uint32_t add(uint32_t a, uint32_t b) override { return model::fp::add(a, b); }
  uint32_t mul(uint32_t a, uint32_t b) override { return model::fp::mul(a, b); }
};

class RtlBackend final : public Backend {
 public:
  uint32_t widen(isa::Dtype dt, uint16_t bits) override { return rtl_.widen(dt, bits); }
  uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate) override { return rtl_.narrow(dt, f32, saturate); }
  uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint32_t seed, uint64_t key) override {
    return rtl_.narrow_stochastic(dt, f32, saturate, seed, key);
  }
  uint32_t add(uint32_t a, uint32_t b) override { return rtl_.add(a, b); }
  uint32_t mul(uint32_t a, uint32_t b) override { return rtl_.mul(a, b); }

 private:
  cosim::FpRtl rtl_;
};

uint32_t apply(const OpSpec& op, Backend& be, const uint32_t* in, bool saturate) {
  switch (op.cls) {
    case OpClass::kAdd: return be.add(in[0], in[1]);
    case OpClass::kSub: return be.add(in[0], in[1] ^ 0x80000000u);  // IEEE 754-2019 5.4.1: a - b is a + (-b)
    case OpClass::kMul: return be.mul(in[0], in[1]);
    case OpClass::kWiden: return be.widen(dtype_of(op.input), static_cast<uint16_t>(in[0]));
    case OpClass::kNarrow: return be.narrow(dtype_of(op.result), in[0], saturate);
  }
  return 0;
}

std::string hex(uint32_t value, Kind k) { return fmt::format("{:0{}X}", value, digits_of(k)); }

struct Options {
  std::string op;
  std::string vectors;
  bool rtl = false;
  bool no_sat = false;
  std::string round = "rne";  ///< rne or stochastic (narrowing ops)
  std::optional<uint32_t> seed;
  int max_failures = 20;
};

int run_fpcheck(const Options& opt) {
  const OpSpec* op = nullptr;
  for (const OpSpec& candidate : kOps) {
    if (candidate.name == opt.op) op = &candidate;
  }
  if (op == nullptr) {
    throw BadInput(fmt::format("--op: unknown operation '{}' (expected one of: {})", opt.op, op_names(", ")));
  }
  if (opt.max_failures < 0) throw BadInput("--max-failures: must be >= 0");
  // An option the op does not use is a usage error, as everywhere else (not silently ignored).
  const bool fp8_narrow = op->cls == OpClass::kNarrow && (op->result == Kind::kE4M3 || op->result == Kind::kE5M2);
  if (opt.no_sat && !fp8_narrow) {
    throw BadInput(fmt::format("--no-sat applies to the FP8 narrowing ops (f32_to_fp8e4m3, f32_to_fp8e5m2) only, "
                               "not {}", op->name));
  }

  const bool stochastic = stochastic_rounding(opt.round, opt.seed.has_value());
  if (stochastic && op->cls != OpClass::kNarrow) {
    throw BadInput(fmt::format("--round stochastic applies to the narrowing ops (f32_to_*) only, not {}", op->name));
  }
  const uint32_t seed = opt.seed.value_or(0);

  // Read and validate the whole file first, so that bad input (exit 2) is never mixed with a partial report.
  const std::string& path = opt.vectors;
  std::vector<int> digits(op->inputs, digits_of(op->input));
  digits.push_back(digits_of(op->result));
  std::vector<testfloat::Line> vectors;
  check_input_file(path, "--vectors " + path);
  try {
    vectors = testfloat::read_file(path, digits);
  } catch (const testfloat::FormatError& e) {
    throw BadInput(e.what());
  }

  std::unique_ptr<Backend> backend;
  if (opt.rtl) {
    backend = std::make_unique<RtlBackend>();
  } else {
    backend = std::make_unique<ModelBackend>();
  }
  const bool saturate = !opt.no_sat;

  long passed = 0;
  long failed = 0;
  for (size_t index = 0; index < vectors.size(); ++index) {
    const testfloat::Line& v = vectors[index];
    const uint32_t* in = v.fields.data();
    uint32_t expected = v.fields[op->inputs];
    uint32_t got;
    if (stochastic) {
      // The file's result is round-to-nearest; a stochastic result is checked against the golden's, both with
      // the random bits of element `index` (the vector's position in the file).
      const isa::Dtype dt = dtype_of(op->result);
      expected = golden::narrow_stochastic(dt, in[0], saturate, golden::sr_random_bits(seed, index));
      got = backend->narrow_stochastic(dt, in[0], saturate, seed, index);
    } else {
      got = apply(*op, *backend, in, saturate);
    }
    const bool ok = got == expected || (is_nan(op->result, got) && is_nan(op->result, expected));
    if (ok) {
      ++passed;
      continue;
    }
    ++failed;
    if (failed <= opt.max_failures) {
      std::string args = hex(in[0], op->input);
      if (op->inputs == 2) args += ", " + hex(in[1], op->input);
      fmt::print("{}:{}: {}({}) = {}, expected {}\n", path, v.line, op->name, args, hex(got, op->result),
                 hex(expected, op->result));
    }
  }
  if (failed > opt.max_failures) {
    fmt::print("... {} more failing lines not shown (--max-failures {})\n", failed - opt.max_failures,
               opt.max_failures);
  }
  fmt::print("backend: {}; exception flags of {} lines parsed but not compared (the FP units raise none)\n",
             opt.rtl ? "rtl" : "model", vectors.size());
  if (stochastic) {
    fmt::print("rounding: stochastic, seed {}, element key = line index from 0; results compared with the golden's "
               "stochastic rounding, not the file's\n", seed);
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? kExitOk : kExitFail;
}

}  // namespace

Action add_fpcheck(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "fpcheck",
      "Run Berkeley TestFloat-format vectors through the FP units and compare result bits.\n"
      "Each line: 'A B RESULT FLAGS' (f32_add/sub/mul) or 'INPUT RESULT FLAGS' (conversions), upper- or\n"
      "lower-case hex without 0x: FP32 = 8 digits, FP16/BF16 = 4, FP8 = 2, FLAGS = 2 (parsed, not compared).\n"
      "Any NaN result matches any expected NaN. Prints each failing line (up to --max-failures) and ends with\n"
      "'N passed, M failed'. Exit 0: all passed; 1: some failed; 2: bad input (message names file:line).");
  auto opt = std::make_shared<Options>();
  sub->add_option("--op", opt->op, "Operation: " + op_names(", "))->required();
  sub->add_option("--vectors", opt->vectors, "TestFloat-format vector file (.tv), read in place")->required();
  sub->add_flag("--rtl", opt->rtl, "Use the verilated RTL FP units instead of the model's");
  sub->add_flag("--no-sat", opt->no_sat,
                "f32_to_fp8e4m3/f32_to_fp8e5m2 only: OCP non-saturating overflow (E4M3 -> NaN, E5M2 -> +-Inf) "
                "instead of saturating to +-max finite");
  sub->add_option("--round", opt->round,
                  "Narrowing ops: rne (round to nearest even, the file's results) or stochastic (BRIEF rule 9, "
                  "compared with the golden's stochastic rounding of each input)")
      ->capture_default_str();
  sub->add_option("--seed", opt->seed, "--round stochastic: the generator's seed (default 0)")
      ->check(CLI::Range(int64_t(0), int64_t(0xFFFFFFFF)));
  sub->add_option("--max-failures", opt->max_failures, "Print at most this many failing lines")
      ->capture_default_str();
  return [opt] { return run_fpcheck(*opt); };
}

}  // namespace trnsim::tool
