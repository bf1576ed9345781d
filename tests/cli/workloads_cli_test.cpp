// `trnsim run` with the composite workloads as a user runs them: every workload passes on small shapes (tiny, TLM
// datapath); --inputs/--outputs read and write .npy tensors by name (a softmax round trip checked against the
// golden softmax of the file's values); bad tensors and bad shapes exit 2 naming the file/flag; --help lists them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "firmware/golden/nn_golden.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/npy_files.h"

namespace {

using namespace trnsim;
using namespace trnsim::test;

const std::string kSmall = " --te tlm --seq 20 --d-model 48 --heads 3 --d-ff 40";

std::string fresh_dir(const std::string& suffix) {
  const std::string d = scratch(suffix);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(WorkloadsCli, EveryCompositeWorkloadPassesOnSmallShapes) {
  for (const std::string w : {"softmax", "layernorm", "rmsnorm", "mlp", "attention", "transformer-block"}) {
    const std::string report = next_scratch(".json");
    const Result r = run("run --workload " + w + kSmall + " --report " + report);
    EXPECT_EQ(r.exit_code, 0) << w << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << w << "\n" << r.out;
    const std::string json = slurp(report);
    EXPECT_NE(json.find("\"pass\": true"), std::string::npos) << w << "\n" << json;
    EXPECT_NE(json.find("\"workload\": \"" + w + "\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"cycles\""), std::string::npos) << json;
  }
}

TEST(WorkloadsCli, OneHeadAttentionWithDmaTransposes) {
  const Result r = run("run --workload attention --te tlm --seq 17 --d-model 24 --heads 1 --dma-transpose");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1 head x 24"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
}

TEST(WorkloadsCli, TransformerBlockDefaultIsTheRunDefaultAndNamesItsSteps) {
  const Result r = run("run --te tlm --seq 9 --d-model 32 --heads 2 --d-ff 24");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("GPT-2 transformer block"), std::string::npos) << r.out;
  for (const char* step : {"ln1", "qkv gemm+bias", "head * attention", "proj gemm+bias+residual"}) {
    EXPECT_NE(r.out.find(step), std::string::npos) << step << "\n" << r.out;
  }
  // The MLP: its two GEMM steps, or one rows program per core where the kernel's cost model prefers them
  // (docs/kernels.md "GELU MLP"), never both.
  const bool rows = r.out.find("mlp rows gemm+gelu+gemm+bias+residual") != std::string::npos;
  const bool split = r.out.find("mlp up gemm+gelu") != std::string::npos &&
                     r.out.find("mlp down gemm+bias+residual") != std::string::npos;
  EXPECT_NE(rows, split) << r.out;
}

TEST(WorkloadsCli, InputsAndOutputsRoundTripThroughTheDevice) {
  // softmax of a given x [heads*seq, seq] = [3*20, 20]; out.npy must be the golden softmax of exactly these values.
  const int rows = 60, cols = 20;
  std::mt19937_64 rng(42);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<uint32_t> x(size_t(rows) * cols);
  for (auto& v : x) {
    const float f = dist(rng);
    std::memcpy(&v, &f, 4);
  }
  const std::string in = fresh_dir(".in"), out = fresh_dir(".out");
  write_npy_to(in + "/x.npy", x, {rows, cols});
  const Result r = run("run --workload softmax" + kSmall + " --inputs " + in + " --outputs " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("from " + in + "/x.npy"), std::string::npos) << r.out;
  golden::SoftmaxSpec s;
  s.rows = rows;
  s.cols = cols;
  s.scale = static_cast<float>(1.0 / std::sqrt(16.0));  // head dim 48 / 3
  const std::vector<uint32_t> want = golden::softmax_rows(s, x);
  const std::vector<uint32_t> got = read_npy_f32(out + "/out.npy", want.size());
  EXPECT_EQ(got, want);

  // The transformer block writes its result and named intermediates, each with its shape.
  const std::string out2 = fresh_dir(".block");
  const Result b = run("run --workload transformer-block" + kSmall + " --outputs " + out2);
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_NE(slurp(out2 + "/out.npy").find("'shape': (20, 48)"), std::string::npos);
  EXPECT_NE(slurp(out2 + "/attnT.npy").find("'shape': (48, 20)"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out2 + "/probs.npy"));  // the probabilities stay on chip
  // g^T is written (and checked) where the MLP ran as two GEMM steps; the rows programs keep it on chip.
  if (b.out.find("mlp rows") == std::string::npos) {
    EXPECT_NE(slurp(out2 + "/gT.npy").find("'shape': (40, 20)"), std::string::npos);
  } else {
    EXPECT_FALSE(std::filesystem::exists(out2 + "/gT.npy"));
  }
  // Fed back as the next block's x, the output is read from the file (and the run still passes).
  const std::string in2 = fresh_dir(".in2");
  std::filesystem::copy_file(out2 + "/out.npy", in2 + "/x.npy");
  // A misspelt name beside it is read by nothing: a warning names it (the input is drawn from the seed).
  std::filesystem::copy_file(out2 + "/out.npy", in2 + "/gama.npy");
  const Result c = run("run --workload transformer-block" + kSmall + " --inputs " + in2);
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("from " + in2 + "/x.npy"), std::string::npos) << c.out;
  EXPECT_NE(c.err.find("trnsim: warning: --inputs " + in2 + ": gama.npy names no input of this workload (x, "),
            std::string::npos)
      << c.err;
}

TEST(WorkloadsCli, SpecialValuesInTheInputsStayBitExactThroughTheBlock) {
  // +-inf, NaN, -0, a subnormal and a value near FLT_MAX in x and in w1: every step carries them as its golden does.
  std::mt19937_64 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<uint32_t> v(n);
    for (auto& b : v) {
      const float f = dist(rng);
      std::memcpy(&b, &f, 4);
    }
    return v;
  };
  std::vector<uint32_t> x = random(20 * 48), w1 = random(48 * 40);
  x[5] = 0x7F800000u;    // +inf
  x[100] = 0x7FC00001u;  // NaN with a payload
  x[200] = 0x80000000u;  // -0
  x[300] = 0x00000100u;  // subnormal
  x[400] = 0x7F000000u;  // 1.7e38
  w1[9] = 0xFF800000u;   // -inf
  const std::string in = fresh_dir(".in");
  write_npy_to(in + "/x.npy", x, {20, 48});
  write_npy_to(in + "/w1.npy", w1, {48, 40});
  const Result r = run("run --workload transformer-block" + kSmall + " --inputs " + in);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
}

TEST(WorkloadsCli, BadInputTensorsAreExit2NamingTheFileAndShape) {
  const std::string in = fresh_dir(".in");
  write_npy_to(in + "/w1.npy", std::vector<uint32_t>(6, 0), {2, 3});
  Result r = run("run --workload mlp" + kSmall + " --inputs " + in);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("w1.npy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[48, 40]"), std::string::npos) << r.err;  // the expected shape

  const std::string in2 = fresh_dir(".f64");
  {
    std::ofstream f(in2 + "/gamma.npy", std::ios::binary);
    f << npy_header("<f8", std::vector<int64_t>{48}) << std::string(48 * 8, '\0');
  }
  r = run("run --workload layernorm" + kSmall + " --inputs " + in2);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("gamma.npy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gamma must be [48] float32"), std::string::npos) << r.err;

  r = run("run --workload layernorm" + kSmall + " --inputs " + in2 + "/missing-dir");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
}

TEST(WorkloadsCli, BadShapesAreUsageErrors) {
  Result r = run("run --workload attention --te tlm --d-model 50 --heads 3");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--heads 3"), std::string::npos) << r.err;
  r = run("run --workload mlp --te tlm --seq 0");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--seq"), std::string::npos) << r.err;
}

TEST(WorkloadsCli, HelpListsEveryWorkloadWithOneLine) {
  const Result r = run("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* w : {"gpt2-mlp-up", "gemm", "softmax", "layernorm", "rmsnorm", "mlp", "attention",
                        "transformer-block"}) {
    EXPECT_NE(r.out.find(std::string("  ") + w + " "), std::string::npos) << w << "\n" << r.out;
  }
}

}  // namespace
