// The workload library: every single-chip workload `trnsim run` offers (GEMM, softmax, norms, MLP, attention, the
// GPT-2 transformer block) in one registry, each declaring its inputs, building its programs from the device's
// DeviceInfo, computing its golden with the golden host kernels and naming its outputs; and one run_and_check that
// runs a workload through a driver::Driver and returns a report (figures, checks, PASS/FAIL). `trnsim run` and the
// tests use it; they only format, print and assert on the report. Any backend works: the driver is all it needs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/dtype.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/kernel_sequence.h"

namespace trnsim::workloads {

using Shape = std::vector<int64_t>;
/// Element bit patterns, row-major (narrow types in the low bits).
using Patterns = std::vector<uint32_t>;
using Tensors = std::map<std::string, Patterns>;

/// The shape parameters of the workloads; each uses some of them (Entry::uses).
struct Params {
  int seq = 128, d_model = 768, heads = 12, d_ff = 3072;  ///< GPT-2 small, 128 tokens
  bool dma_transpose = false;  ///< transpose by strided DMA copies instead of the TE (identity matmul)
  isa::Dtype dtype = isa::Dtype::kBf16;  ///< gemm: operand type
  int m = 128, k = 128, n = 128;         ///< gemm: out[M, N] = stationary[K, M]^T @ moving[K, N]
  /// Cores the composite workloads' programs are built for: their GEMMs split by M, the attention heads spread
  /// (KernelStep::with_previous); run them with run_and_check over this many cores.
  int cores = 1;
};

/// A named input: its shape, the type it has on the device (values are drawn or given as FP32 and cast to it: RNE,
/// saturating), and the normal distribution it is drawn from when not given.
struct InputSpec {
  std::string name;
  Shape shape;
  isa::DataType type = isa::DataType::kFp32;
  float mean = 0.0f, sigma = 1.0f;
  std::string what;  ///< one line for the report
};

/// A tensor the workload leaves in HBM: the result (the first one) or a named intermediate.
struct OutputSpec {
  std::string name;
  Shape shape;
  isa::DataType type = isa::DataType::kFp32;
  uint64_t hbm = 0;
};

/// A workload made concrete for one set of parameters.
struct Workload {
  std::string name;
  std::string title;              ///< one line: what and which shape
  std::string golden_name;        ///< "the golden GEMM", "the golden host kernels"
  std::vector<InputSpec> inputs;
  /// Allocates outputs and scratch (the inputs are in HBM at `in` already), returns the programs and the outputs.
  std::function<void(driver::Driver&, const std::map<std::string, uint64_t>& in, kernels::KernelSequence*,
                     std::vector<OutputSpec>*)>
      build;
  /// Expected patterns of (some of) the outputs, by name, on the device `info` describes (its TE rows; the kernels'
  /// choices that set the operation order, e.g. kernels::transformer_attention_in_pieces).
  std::function<Tensors(const Tensors& in, const driver::DeviceInfo& info)> golden;
  /// Workloads that split over the cores of a chip (the GEMM, docs/kernels.md "Multi-core GEMM"): writes `in`,
  /// runs on every core of `cores` (drivers of distinct cores with disjoint HBM regions) and returns the outputs
  /// and each core's run. Empty: the workload runs on one core.
  struct CoresRun {
    Tensors got;
    std::vector<OutputSpec> outputs;
    std::vector<driver::RunResult> runs;  ///< per core that computed (in core order)
    std::vector<int> cores;               ///< their indices in `cores`
    std::size_t instructions = 0;
  };
  std::function<CoresRun(const std::vector<driver::Driver*>& cores, const Tensors& in, uint64_t timeout_cycles)>
      run_cores;
};

/// One entry of the registry.
struct Entry {
  std::string name;
  std::string summary;  ///< one line for --help
  enum Uses { kGemmShape, kModelShape } uses;  ///< which Params it reads: m/k/n/dtype, or seq/d_model/heads/d_ff
  /// Throws std::invalid_argument naming the parameter for a shape it cannot run.
  std::function<Workload(const Params&)> make;
};

/// Every workload, in --help order.
const std::vector<Entry>& registry();
/// The entry named `name`, or null.
const Entry* find(std::string_view name);

/// The inputs of `specs`: given[name] (FP32 bit patterns of the spec's shape) where present, else drawn from `seed`;
/// then cast to each spec's device type. Every spec draws its values (in spec order) whether or not `given`
/// replaces them, so a given input does not change the others. Throws std::invalid_argument for a given tensor of
/// the wrong size.
Tensors make_inputs(const std::vector<InputSpec>& specs, uint64_t seed, const Tensors& given = {});

/// Elements of a shape.
uint64_t elements(const Shape& s);
/// "[2, 3]".
std::string shape_text(const Shape& s);

struct Mismatch {
  uint64_t index = 0;
  uint32_t got = 0, want = 0;
};
/// One output compared with the golden.
struct Check {
  std::string name;
  Shape shape;
  isa::DataType type = isa::DataType::kFp32;
  uint64_t elements = 0, mismatches = 0;
  std::vector<Mismatch> first;  ///< the first few mismatches (at most 5)
};
/// Steps of one kind and their cycles ("head * scores" sums the heads).
struct StepGroup {
  std::string name;
  int programs = 0;
  uint64_t cycles = 0;
};

/// What a run found. Every figure comes from the driver (registers), so it is the same on every backend.
struct Report {
  std::string workload, title, golden_name;
  std::size_t programs = 0, instructions = 0;
  std::array<uint64_t, isa::kNumQueues> retired{};  ///< per queue, over the programs
  uint64_t cycles = 0;  ///< TE cycles of the programs back to back
  uint64_t macs = 0;    ///< TE multiply-accumulates of the programs
  double wall_s = 0;    ///< host time of writing nothing but running the programs (load, run)
  std::vector<StepGroup> steps;
  std::vector<Check> checks;
  uint64_t mismatches = 0, compared = 0;
  bool pass = false;
  std::vector<OutputSpec> outputs;  ///< every output, with its HBM address
  Tensors got;                      ///< every output as read back
  /// run_and_check_cores: each core's run and its index among the drivers given (cores with nothing to do skipped).
  std::vector<driver::RunResult> core_runs;
  std::vector<int> core_index;
  std::vector<uint64_t> core_macs;  ///< each one's TE multiply-accumulates
};

/// Called once the inputs are in HBM and the programs built, before the first runs: (programs, instructions).
using OnBuilt = std::function<void(std::size_t programs, std::size_t instructions)>;
/// Called before each program runs: its index (from 0) and name ("qkv gemm", "head 3 scores").
using OnStep = std::function<void(std::size_t index, const std::string& name)>;

/// Runs `w` on `drv`: frees every earlier allocation, writes `inputs` (make_inputs), builds, runs the programs one
/// after another (timeout each), reads every output back and compares the ones the golden names. Throws
/// std::invalid_argument when the tensors do not fit the device or a layout is bad (`what()` says which), and the
/// driver's errors (DeviceFault, DriverTimeout, ...) as they come; `failed_step` (if given) then holds the name and
/// number of the program that failed ("program 3 of 62 (\"qkv gemm\")").
Report run_and_check(driver::Driver& drv, const Workload& w, const Tensors& inputs, uint64_t timeout_cycles,
                     const OnBuilt& on_built = {}, std::string* failed_step = nullptr, const OnStep& on_step = {});
/// The same over the cores `cores` (core 0's driver first: it allocates and holds every tensor): the programs run
/// as kernels::run_sequence runs them; Report::cycles is the sequence's time, each step group's cycles what its
/// rounds add to it, and `core_runs` / `core_macs` each core's sums (with more than one core).
Report run_and_check(const std::vector<driver::Driver*>& cores, const Workload& w, const Tensors& inputs,
                     uint64_t timeout_cycles, const OnBuilt& on_built = {}, std::string* failed_step = nullptr,
                     const OnStep& on_step = {});

/// The same over the cores `cores` (the first is core 0's driver) with Workload::run_cores: one launch per core, all
/// at once; Report::cycles is the longest core's, `macs` and `retired` the sums, `core_runs` each core's.
/// std::invalid_argument naming the workload when it does not split over cores.
Report run_and_check_cores(const std::vector<driver::Driver*>& cores, const Workload& w, const Tensors& inputs,
                           uint64_t timeout_cycles);

}  // namespace trnsim::workloads
