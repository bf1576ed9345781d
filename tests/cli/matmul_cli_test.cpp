// `trnsim matmul` as a user runs it (BRIEF section 4): .npy operands in, O.npy out, bit-exact against the golden
// GEMM computed here from the same files; ragged shapes, 1x1x1, --accumulate-into; bad files exit 2 naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/mx_golden.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/npy_files.h"

namespace {

using namespace trnsim;
using namespace trnsim::test;

std::vector<uint32_t> random_f32(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<uint32_t> v(n);
  for (auto& x : v) {
    const float f = d(rng);
    std::memcpy(&x, &f, 4);
  }
  return v;
}

std::vector<uint16_t> rounded(isa::Dtype dt, const std::vector<uint32_t>& f32) {
  std::vector<uint16_t> v(f32.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = golden::narrow_from_f32(dt, f32[i], true);
  return v;
}

struct Shape {
  const char* dtype;
  isa::Dtype dt;
  int k, m, n;
  bool accumulate;
};

class MatmulCli : public ::testing::TestWithParam<Shape> {};

TEST_P(MatmulCli, DeviceResultMatchesGoldenBitForBit) {
  const Shape sh = GetParam();
  std::mt19937_64 rng(1000 + sh.k * 7 + sh.n);
  const auto s = random_f32(size_t(sh.k) * sh.m, rng), mv = random_f32(size_t(sh.k) * sh.n, rng);
  const auto p = random_f32(size_t(sh.m) * sh.n, rng);
  const std::string out = next_scratch(".npy");
  std::string cmd = "matmul --te tlm --stationary " + write_npy(s, sh.k, sh.m) + " --moving " +
                    write_npy(mv, sh.k, sh.n) + " --dtype " + sh.dtype + " --out " + out;
  if (sh.accumulate) cmd += " --accumulate-into " + write_npy(p, sh.m, sh.n);
  const Result r = run(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  const auto want = golden::gemm({sh.dt, sh.k, sh.m, sh.n, rounded(sh.dt, s), rounded(sh.dt, mv)}, 16,
                                 sh.accumulate ? &p : nullptr);
  const auto got = read_npy_f32(out, want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "O[" << i / sh.n << "][" << i % sh.n << "]";
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulCli,
                         ::testing::Values(Shape{"bf16", isa::Dtype::kBf16, 37, 20, 45, false},
                                           Shape{"fp16", isa::Dtype::kFp16, 1, 1, 1, false},
                                           Shape{"fp8e5m2", isa::Dtype::kFp8E5M2, 16, 16, 513, false},
                                           Shape{"fp8e4m3", isa::Dtype::kFp8E4M3, 33, 17, 9, true}));

// The bounds line: one tile (K = M = 16, N = 512 on tiny's 16x16 array) moves each operand and the FP32 output once
// over the DMA: 16 x 512 x 2 + 16 x 16 x 2 + 16 x 512 x 4 = 49,664 bytes for 131,072 MACs. The floors, from the
// config's figures (BRIEF section 2: 16 DMA engines x 23 B/ns per core, HBM 2900 B/ns, TE 2.4 GHz): TE 131072 / 256
// = 512 cycles, DMA ceil(49664 / 368 x 2.4) = 324, HBM ceil(49664 / 2900 x 2.4) = 42.
TEST(MatmulCliBounds, OneTileMovesEachOperandOnce) {
  std::mt19937_64 rng(7);
  const auto s = random_f32(16 * 16, rng), mv = random_f32(16 * 512, rng);
  const Result r = run("matmul --te tlm --dtype bf16 --stationary " + write_npy(s, 16, 16) + " --moving " +
                       write_npy(mv, 16, 512) + " --out " + next_scratch(".npy"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bounds (cycles)  TE 512 | DMA 324 (0.0 MB, 0.3789 B/MAC at this tiling) | HBM 42;"),
            std::string::npos)
      << r.out;
}

// BRIEF section 3 rule 8 through the command line, with values worked out by hand (tiny: 16 TE rows). K = 32:
// products 2048 * 2048 = 2^22 at k = 0..3 sum to 2^24, then 28 products 1 * 1. FP8 contracts 2 x 16 = 32
// partitions in one pass, where each + 1 on 2^24 is a tie back to 2^24: O = 2^24. BF16 tiles K by 16: the first
// tile is 2^24 (its 12 ones are lost the same way), the second 16, so O = 2^24 + 16. On the RTL, the TLM model
// and in lockstep.
TEST(MatmulCliDoubleRow, Fp8ContractsTwiceTheRowsPerPassAsRuleEightSays) {
  const float big = 2048.0f, one = 1.0f;
  std::vector<uint32_t> col(32);
  for (int k = 0; k < 32; ++k) std::memcpy(&col[size_t(k)], k < 4 ? &big : &one, 4);
  const std::string s = write_npy(col, 32, 1), mv = write_npy(col, 32, 1);
  for (const char* te : {"tlm", "rtl", "lockstep"}) {
    for (const auto& [dtype, want] : {std::pair<std::string, float>{"fp8e5m2", 16777216.0f}, {"bf16", 16777232.0f}}) {
      const std::string out = next_scratch(".npy");
      const Result r = run(std::string("matmul --te ") + te + " --stationary " + s + " --moving " + mv +
                           " --dtype " + dtype + " --out " + out);
      ASSERT_EQ(r.exit_code, 0) << te << " " << dtype << "\n" << r.out << r.err;
      float got;
      const uint32_t bits = read_npy_f32(out, 1).at(0);
      std::memcpy(&got, &bits, 4);
      EXPECT_EQ(got, want) << te << " " << dtype;
    }
  }
}

TEST(MatmulCliLockstep, RtlAndTlmAgreeOnARaggedProduct) {
  std::mt19937_64 rng(5);
  const auto s = random_f32(23 * 19, rng), mv = random_f32(23 * 31, rng);
  const Result r = run("matmul --te lockstep --stationary " + write_npy(s, 23, 19) + " --moving " +
                       write_npy(mv, 23, 31) + " --dtype bf16 --out " + next_scratch(".npy"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
}

TEST(MatmulCliErrors, MismatchedKIsBadInput) {
  std::mt19937_64 rng(1);
  const Result r = run("matmul --te tlm --stationary " + write_npy(random_f32(12, rng), 4, 3) + " --moving " +
                       write_npy(random_f32(10, rng), 5, 2) + " --dtype bf16 --out " + next_scratch(".npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("K must agree"), std::string::npos) << r.err;
}

TEST(MatmulCliErrors, TruncatedWrongTypeAndMissingFilesAreBadInputNamingTheFlag) {
  std::mt19937_64 rng(2);
  const std::string good = write_npy(random_f32(12, rng), 4, 3);
  std::string truncated = slurp(good);
  truncated.resize(truncated.size() - 5);
  const std::string trunc_path = next_scratch(".npy");
  std::ofstream(trunc_path, std::ios::binary) << truncated;
  const std::string f64_path = next_scratch(".npy");
  {
    std::ofstream f(f64_path, std::ios::binary);
    f << npy_header("<f8", 4, 3) << std::string(12 * 8, '\0');
  }
  const std::string out = " --dtype bf16 --out " + next_scratch(".npy");
  Result r = run("matmul --te tlm --stationary " + good + " --moving " + trunc_path + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--moving " + trunc_path), std::string::npos) << r.err;
  r = run("matmul --te tlm --stationary " + f64_path + " --moving " + good + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stationary " + f64_path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("element type '<f8', expected float32"), std::string::npos) << r.err;
  // Shapes a header may claim: negative, or more than any file (checked before anything is allocated).
  for (const auto& [shape, reason] :
       {std::pair<std::string, std::string>{"(-1, 3)", "shape (-1, 3) has a dimension '-1' that is not a size"},
        {"(100000000000, 100000000)", "shape (100000000000, 100000000) describes more than 2^64 float32 bytes"},
        {"(4000000, 3000)", "shape (4000000, 3000) describes 48000000000 float32 bytes, the file has 48 after"},
        {"(0, 6722330222111922528, 2)",
         "shape (0, 6722330222111922528, 2) is too large (its non-zero dimensions hold more than 2^62 elements)"}}) {
    const size_t data = shape.rfind("(0,", 0) == 0 ? 0 : 48;  // an empty array has no data
    const std::string path = next_scratch(".npy");
    std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    h += std::string(63 - (h.size() + 10) % 64, ' ') + "\n";
    std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8) << char(h.size() & 0xFF)
                                          << char(h.size() >> 8) << h << std::string(data, '\0');
    r = run("matmul --te tlm --stationary " + path + " --moving " + good + out);
    EXPECT_EQ(r.exit_code, 2) << shape;
    EXPECT_NE(r.err.find("--stationary " + path + ": " + reason), std::string::npos) << r.err;
  }
  r = run("matmul --te tlm --stationary /nonexistent.npy --moving " + good + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent.npy"), std::string::npos) << r.err;
  r = run("matmul --te tlm --stationary " + good + " --moving " + good + " --dtype int4 --out x.npy");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("int4"), std::string::npos) << r.err;
}

// A .npy 1.0 header of any length is read: 182 bytes has a low length byte of 0xB6, which xtensor's reader took as a
// negative char (found by the npy fuzz target; trnsim reads the data itself now). Column-major files are refused by
// name, and so are format versions other than 1, 2 and 3.
TEST(MatmulCliNpy, LongHeadersAreReadFortranOrderAndUnknownVersionsRefused) {
  std::mt19937_64 rng(3);
  const auto s = random_f32(4 * 3, rng), mv = random_f32(4 * 2, rng);
  auto with_header = [](std::string h, const std::vector<uint32_t>& bits, size_t header_bytes, char version) {
    const size_t nl = h.rfind('\n');
    h.insert(nl, std::string(header_bytes - (h.size() - 10), ' '));
    h[6] = version;
    h[8] = char(header_bytes & 0xFF);
    h[9] = char(header_bytes >> 8);
    const std::string path = next_scratch(".npy");
    std::ofstream f(path, std::ios::binary);
    f << h;
    f.write(reinterpret_cast<const char*>(bits.data()), std::streamsize(bits.size() * 4));
    return path;
  };
  const std::string stationary = with_header(npy_header("<f4", 4, 3), s, 182, 1);
  const std::string out = next_scratch(".npy");
  Result r = run("matmul --te tlm --stationary " + stationary + " --moving " + write_npy(mv, 4, 2) +
                 " --dtype bf16 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto want = golden::gemm({isa::Dtype::kBf16, 4, 3, 2, rounded(isa::Dtype::kBf16, s),
                                  rounded(isa::Dtype::kBf16, mv)}, 16, nullptr);
  EXPECT_EQ(read_npy_f32(out, want.size()), want);

  std::string fortran = npy_header("<f4", 4, 3);
  fortran.replace(fortran.find("False"), 5, "True ");
  const std::string f_path = with_header(fortran, s, fortran.size() - 10, 1);
  r = run("matmul --te tlm --stationary " + f_path + " --moving " + write_npy(mv, 4, 2) + " --dtype bf16 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stationary " + f_path + ": a column-major array ('fortran_order': True)"), std::string::npos)
      << r.err;
  // The header is a dictionary, read as one: a key's value, not a string that mentions it, says the order (numpy
  // never writes such a header; a hand-made one must not be read transposed).
  std::string trick = npy_header("<f4", 4, 3);
  trick.replace(trick.find("'fortran_order': False"), 22, "'fortran_order': True, 'x': \"'fortran_order': False\"");
  const size_t dict = trick.size() - 10;
  const std::string t_path = with_header(trick, s, dict + (64 - (10 + dict) % 64) % 64, 1);
  r = run("matmul --te tlm --stationary " + t_path + " --moving " + write_npy(mv, 4, 2) + " --dtype bf16 --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--stationary " + t_path + ": the .npy header's dictionary at byte "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("key 'x' (a .npy header has 'descr', 'fortran_order' and 'shape')"), std::string::npos)
      << r.err;
  const std::string v4 = with_header(npy_header("<f4", 4, 3), s, 118, 4);
  r = run("matmul --te tlm --stationary " + v4 + " --moving " + write_npy(mv, 4, 2) + " --dtype bf16 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(".npy format version 4.0, expected 1.0, 2.0 or 3.0"), std::string::npos) << r.err;
}

TEST(MatmulCli, AWaveformComesWithItsGtkwaveLayoutAsRunsDoes) {
  std::mt19937_64 rng(4);
  const std::string fst = next_scratch(".fst");
  const std::string gtkw = fst.substr(0, fst.size() - 4) + ".gtkw";
  const Result r = run("matmul --te rtl --stationary " + write_npy(random_f32(12, rng), 4, 3) + " --moving " +
                       write_npy(random_f32(8, rng), 4, 2) + " --dtype bf16 --out " + next_scratch(".npy") +
                       " --wave " + fst);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  waveform          " + fst + " (layout " + gtkw + "; open with: gtkwave " + gtkw + ")"),
            std::string::npos)
      << r.out;
  EXPECT_NE(slurp(gtkw).find(fst), std::string::npos) << "the layout names its dump file";
}

TEST(MatmulCliErrors, AccumulateIntoOfTheWrongShapeIsBadInput) {
  std::mt19937_64 rng(3);
  const Result r = run("matmul --te tlm --stationary " + write_npy(random_f32(12, rng), 4, 3) + " --moving " +
                       write_npy(random_f32(8, rng), 4, 2) + " --accumulate-into " +
                       write_npy(random_f32(6, rng), 2, 3) + " --dtype bf16 --out " + next_scratch(".npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--accumulate-into"), std::string::npos) << r.err;
}

// MX (BRIEF section 3 rule 10, issue 15): S and M quantized along K here by the golden quantizer, the product by
// the golden GEMM; the device must give the same bits. No --te: an MX dtype runs on the TLM datapath by default.
struct MxShape {
  const char* dtype;
  isa::Dtype dt;
  const char* config;
  const char* te;  ///< Tensor Engine datapath (the 128x128 RTL engine is in the long build only)
  int rows;  ///< TE rows of the config (the golden's K tile is 2 * rows)
  int k, m, n;
  bool accumulate;
};

class MatmulCliMx : public ::testing::TestWithParam<MxShape> {};

TEST_P(MatmulCliMx, DeviceResultMatchesGoldenBitForBit) {
  const MxShape sh = GetParam();
  std::mt19937_64 rng(77 + sh.k * 3 + sh.n);
  auto s = random_f32(size_t(sh.k) * sh.m, rng), mv = random_f32(size_t(sh.k) * sh.n, rng);
  for (size_t i = 0; i < s.size(); i += 7) s[i] += 0x03000000u;  // widen the range inside blocks (x 64)
  const auto p = random_f32(size_t(sh.m) * sh.n, rng);
  const std::string out = next_scratch(".npy");
  std::string cmd = std::string("matmul --config ") + sh.config + " --te " + sh.te + " --stationary " +
                    write_npy(s, sh.k, sh.m) +
                    " --moving " + write_npy(mv, sh.k, sh.n) + " --dtype " + sh.dtype + " --out " + out;
  if (sh.accumulate) cmd += " --accumulate-into " + write_npy(p, sh.m, sh.n);
  const Result r = run(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(std::string("(") + sh.te + " datapath)"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  const golden::MxTensor qs = golden::quantize_mx(sh.dt, sh.k, sh.m, s), qm = golden::quantize_mx(sh.dt, sh.k, sh.n, mv);
  const auto want = golden::gemm({sh.dt, sh.k, sh.m, sh.n, qs.elements, qm.elements, qs.scales, qm.scales}, sh.rows,
                                 sh.accumulate ? &p : nullptr);
  const auto got = read_npy_f32(out, want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "O[" << i / sh.n << "][" << i % sh.n << "]";
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulCliMx,
                         ::testing::Values(
                             MxShape{"mxfp8e4m3", isa::Dtype::kMxFp8E4M3, "tiny", "rtl", 16, 45, 20, 37, false},
                             MxShape{"mxfp8e5m2", isa::Dtype::kMxFp8E5M2, "tiny", "lockstep", 16, 70, 3, 300, true},
                             MxShape{"mxfp4", isa::Dtype::kMxFp4, "tiny", "rtl", 16, 1, 1, 1, false},
                             MxShape{"mxfp4", isa::Dtype::kMxFp4, "tiny", "lockstep", 16, 77, 17, 40, false},
                             MxShape{"mxfp8e4m3", isa::Dtype::kMxFp8E4M3, "tiny", "tlm", 16, 33, 5, 9, false},
                             MxShape{"mxfp4", isa::Dtype::kMxFp4, "trn3", "tlm", 128, 300, 20, 33, false}));

// Worked by hand from rule 10 (MXFP4, E2M1 elements 0, 0.5, 1, 1.5, 2, 3, 4, 6):
//   S = [1.0, 0.3]: max 1, code 0 - 2 + 127 = 125 (scale 1/4): elements 4 and 1.2 -> 1.0; values 1 and 0.25.
//   M = [1.0, 1.0]: code 125, elements 4, 4: values 1 and 1. O = 1 * 1 + 0.25 * 1 = 1.25 (exactly: 1.3).
//   S = [6, 1], M = [0.5, 3]: S code 127 (6, 1); M: max 3, code 1 - 2 + 127 = 126 (scale 1/2), elements 1 and 6.
//   O = 6 * 1 * 1/2 + 1 * 6 * 1/2 = 6.
TEST(MatmulCliMx, HandWorkedMxfp4Products) {
  auto column = [](std::vector<float> v) {
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), 4 * v.size());
    return b;
  };
  for (const auto& [sv, mvv, want] : {std::tuple<std::vector<float>, std::vector<float>, float>{{1.0f, 0.3f},
                                                                                                {1.0f, 1.0f}, 1.25f},
                                      {{6.0f, 1.0f}, {0.5f, 3.0f}, 6.0f}}) {
    const std::string out = next_scratch(".npy");
    const Result r = run("matmul --te tlm --stationary " + write_npy(column(sv), 2, 1) + " --moving " +
                         write_npy(column(mvv), 2, 1) + " --dtype mxfp4 --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    float got;
    const uint32_t bits = read_npy_f32(out, 1).at(0);
    std::memcpy(&got, &bits, 4);
    EXPECT_EQ(got, want);
  }
}

TEST(MatmulCliErrors, AnUnknownMxDtypeIsBadInputListingTheDtypes) {
  std::mt19937_64 rng(2);
  const Result bad = run("matmul --te tlm --stationary " + write_npy(random_f32(8, rng), 4, 2) + " --moving " +
                         write_npy(random_f32(8, rng), 4, 2) + " --dtype mxfp6 --out " + next_scratch(".npy"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("mxfp4"), std::string::npos) << bad.err;  // lists the dtypes
  const Result run_mx = run("run --workload gemm --te tlm -m 4 -k 4 -n 4 --dtype mxfp4");
  EXPECT_EQ(run_mx.exit_code, 2);
  EXPECT_NE(run_mx.err.find("--dtype mxfp4: not a workload dtype"), std::string::npos) << run_mx.err;
}

// The output cast (--out-dtype) and stochastic rounding (BRIEF rule 9, --round stochastic --seed S). The device
// keys each element's random bits by its HBM address, which the test does not know; the CLI checks the bits
// against the golden itself (PASS). Here: RNE equals the golden GEMM cast once; every stochastic result is one of
// the two neighbours of the FP32 sum; the same seed gives the same file, another seed another one; and about the
// expected share of elements rounds away from zero.
TEST(MatmulCliOutputCast, NearestAndStochasticCastsOfTheFp32Sums) {
  std::mt19937_64 rng(77);
  const int k = 40, m = 24, n = 33;
  const auto s = random_f32(size_t(k) * m, rng), mv = random_f32(size_t(k) * n, rng);
  const std::string sf = write_npy(s, k, m), mf = write_npy(mv, k, n);
  const auto sums = golden::gemm({isa::Dtype::kBf16, k, m, n, rounded(isa::Dtype::kBf16, s),
                                  rounded(isa::Dtype::kBf16, mv)},
                                 16, nullptr);
  const auto matmul = [&](const std::string& flags) {
    const std::string out = next_scratch(".npy");
    const Result r = run("matmul --te tlm --stationary " + sf + " --moving " + mf + " --dtype bf16 --out " + out +
                         " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
    return std::pair{r.out, read_npy_f32(out, sums.size())};
  };
  const auto [rne_text, rne] = matmul("--out-dtype bf16");
  EXPECT_NE(rne_text.find("output cast to bf16 (round to nearest even)"), std::string::npos) << rne_text;
  for (size_t i = 0; i < sums.size(); ++i) {
    ASSERT_EQ(rne[i], golden::widen_to_f32(isa::Dtype::kBf16, golden::narrow_from_f32(isa::Dtype::kBf16, sums[i],
                                                                                      true)));
  }
  const auto [sr_text, sr5] = matmul("--out-dtype bf16 --round stochastic --seed 5");
  EXPECT_NE(sr_text.find("output cast to bf16 (stochastic rounding, seed 5)"), std::string::npos) << sr_text;
  const auto sr5_again = matmul("--out-dtype bf16 --round stochastic --seed 5").second;
  const auto sr6 = matmul("--out-dtype bf16 --round stochastic --seed 6").second;
  EXPECT_EQ(sr5, sr5_again) << "same seed, same result";
  EXPECT_NE(sr5, sr6) << "another seed rounds some elements the other way";
  long away = 0, inexact = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    const uint16_t toward_zero = golden::narrow_stochastic(isa::Dtype::kBf16, sums[i], true, 0);  // r = 0: lo
    const uint32_t lo = golden::widen_to_f32(isa::Dtype::kBf16, toward_zero);
    const uint32_t hi = golden::widen_to_f32(isa::Dtype::kBf16, uint16_t(toward_zero + 1));
    ASSERT_TRUE(sr5[i] == lo || sr5[i] == hi) << "O[" << i / n << "][" << i % n << "]";
    inexact += lo != sums[i];
    away += sr5[i] == hi && lo != sums[i];
  }
  // Each inexact element rounds away with probability f, its own fraction; over ~800 elements with fractions
  // spread over [0, 1) about half do. 5 standard deviations (sqrt(800 / 4) = 14) either side.
  EXPECT_NEAR(double(away), double(inexact) / 2, 5 * std::sqrt(double(inexact) / 4)) << away << " of " << inexact;
}

TEST(MatmulCliCores, SplitByRowsOverTwoCoresGivesTheOneCoreResultAndTheGolden) {
  // M = 37 on a 16-column TE: core 0 takes two tiles (32 rows), core 1 the last 5 (docs/kernels.md "Multi-core
  // GEMM"); the result is the one-core result.
  std::mt19937_64 rng(91);
  const int k = 40, m = 37, n = 21;
  const std::string sf = write_npy(random_f32(size_t(k) * m, rng), k, m);
  const std::string mf = write_npy(random_f32(size_t(k) * n, rng), k, n);
  const auto matmul = [&](const std::string& flags) {
    const std::string out = next_scratch(".npy");
    const Result r =
        run("matmul --te tlm --stationary " + sf + " --moving " + mf + " --dtype bf16 --out " + out + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
    return std::pair{r.out, read_npy_f32(out, size_t(m) * n)};
  };
  const auto [text, two] = matmul("--cores 2");
  EXPECT_NE(text.find("split over cores 0..1 (blocks of output rows x columns)"), std::string::npos) << text;
  EXPECT_NE(text.find("core 0: 32 rows"), std::string::npos) << text;
  EXPECT_NE(text.find("core 1: 5 rows"), std::string::npos) << text;
  EXPECT_EQ(two, matmul("--cores 1").second);
  // The cast on the device keys each element by its address in the shared output, which the golden cast uses too
  // (PASS); a second run gives the same bits.
  const auto sr = matmul("--cores 2 --out-dtype bf16 --round stochastic --seed 3").second;
  EXPECT_EQ(sr, matmul("--cores 2 --out-dtype bf16 --round stochastic --seed 3").second);
  // MX: each core reads its columns of the stationary elements and of their scales in place.
  const Result mx = run("matmul --te tlm --stationary " + sf + " --moving " + mf +
                        " --dtype mxfp8e4m3 --cores 2 --out " + next_scratch(".npy"));
  EXPECT_EQ(mx.exit_code, 0) << mx.out << mx.err;
  EXPECT_EQ(last_line(mx.out).rfind("PASS", 0), 0u) << mx.out;
}

TEST(MatmulCliErrors, OutputCastOptionsOutsideTheirUseAreBadInput) {
  std::mt19937_64 rng(4);
  const std::string base = "matmul --te tlm --stationary " + write_npy(random_f32(8, rng), 4, 2) + " --moving " +
                           write_npy(random_f32(8, rng), 4, 2) + " --dtype bf16 --out " + next_scratch(".npy");
  const std::pair<const char*, const char*> cases[] = {
      {"--round stochastic", "--round stochastic rounds the output cast: give a narrow --out-dtype"},
      {"--out-dtype bf16 --seed 3", "--seed applies to --round stochastic only"},
      {"--out-dtype bf16 --round up", "--round: unknown rounding 'up'"},
      {"--out-dtype mxfp4", "--out-dtype mxfp4: unknown (fp32, bf16, fp16, fp8e4m3, fp8e5m2)"},
      {"--out-dtype fp16 --accumulate-into X", "--accumulate-into needs --out-dtype fp32"},
  };
  for (const auto& [flags, message] : cases) {
    std::string f = flags;
    if (const auto x = f.find(" X"); x != std::string::npos) {
      f = f.substr(0, x) + " " + write_npy(random_f32(4, rng), 2, 2);
    }
    const Result r = run(base + " " + f);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.out;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << "\n" << r.err;
  }
}

}  // namespace
