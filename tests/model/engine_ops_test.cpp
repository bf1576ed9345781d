// The Vector and Scalar engines on the device (config tiny, through the driver) against the golden host functions
// (firmware/golden/engine_golden.h): every op on seeded random data and on special values (NaN, +-Inf, -0,
// subnormals, FP8 edges), bit-exact where docs/isa.md promises one FP32 operation, within the ULP bound for the
// transcendental activation functions; access patterns (strides, broadcast, gaps, negative strides, PSUM operands);
// the cost model; both engines running concurrently; and the device errors of wrong programs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/mx_golden.h"
#include "tests/model/engine_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

using isa::ActFunc;
using isa::AluOp;
using isa::Instruction;

constexpr int kP = 16;  // tiny: 16 partitions

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

/// Every pair of the two types' special values, then random values, as two [kP, n] tiles.
void pairs_then_random(DataType ta, DataType tb, int n, std::mt19937_64& rng, std::vector<uint32_t>* a,
                       std::vector<uint32_t>* b) {
  const auto sa = special_values(ta), sb = special_values(tb);
  *a = random_values(ta, size_t(kP) * n, rng);
  *b = random_values(tb, size_t(kP) * n, rng);
  size_t k = 0;
  for (const uint32_t x : sa) {
    for (const uint32_t y : sb) {
      if (k < a->size()) {
        (*a)[k] = x;
        (*b)[k] = y;
      }
      ++k;
    }
  }
}

// ---- tensor_tensor

struct TypeCase {
  DataType in0, in1, out;
  bool no_sat;
  MemSpace in1_space;
};

std::string case_name(const TypeCase& c) {
  return type_name(c.in0) + "_" + type_name(c.in1) + (c.in1_space == MemSpace::kPsum ? "psum" : "") + "_to_" +
         type_name(c.out) + (c.no_sat ? "_nosat" : "");
}

class TensorTensorTest : public EngineTest, public ::testing::WithParamInterface<TypeCase> {};

TEST_P(TensorTensorTest, EveryOpBitExactOnSpecialsAndRandom) {
  const TypeCase c = GetParam();
  std::mt19937_64 rng(test_seed());
  const int n = 48;
  std::vector<uint32_t> a, b;
  pairs_then_random(c.in0, c.in1, n, rng, &a, &b);
  put(0, 0x0, c.in0, kP, n, a);
  put(c.in1_space, 0, 0x400, c.in1, kP, n, b);
  std::vector<Instruction> prog;
  std::vector<AluOp> ops;
  for (int o = 1; o < isa::kNumAluOps; ++o) ops.push_back(AluOp(o));
  for (size_t k = 0; k < ops.size(); ++k) {
    Instruction i = vec(Opcode::kTensorTensor, kP, n, 1, sbuf(c.out, uint32_t(0x1000 + 0x400 * k), n),
                        sbuf(c.in0, 0x0, n), opnd(c.in1_space, c.in1, 0, 0x400, 1, 0));
    i.vec.op = ops[k];
    i.vec.no_sat = c.no_sat;
    prog.push_back(i);
  }
  run_vec(prog);
  for (size_t k = 0; k < ops.size(); ++k) {
    const auto got = get(0, uint32_t(0x1000 + 0x400 * k), c.out, kP, n);
    for (size_t e = 0; e < got.size(); ++e) {
      const uint32_t fa = golden::element_to_f32(c.in0, a[e]), fb = golden::element_to_f32(c.in1, b[e]);
      const uint32_t want = golden::element_from_f32(c.out, golden::alu(ops[k], fa, fb), !c.no_sat);
      ASSERT_EQ(hex(got[e]), hex(want)) << isa::alu_op_name(ops[k]) << " element " << e << ": " << hex(a[e])
                                        << " (" << hex(fa) << "), " << hex(b[e]) << " (" << hex(fb) << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, TensorTensorTest,
    ::testing::Values(TypeCase{DataType::kFp32, DataType::kFp32, DataType::kFp32, false, MemSpace::kSbuf},
                      TypeCase{DataType::kBf16, DataType::kFp16, DataType::kBf16, false, MemSpace::kSbuf},
                      TypeCase{DataType::kFp8E4M3, DataType::kFp8E5M2, DataType::kFp8E4M3, false, MemSpace::kSbuf},
                      TypeCase{DataType::kFp32, DataType::kBf16, DataType::kFp8E5M2, true, MemSpace::kSbuf},
                      TypeCase{DataType::kBf16, DataType::kFp32, DataType::kFp8E4M3, true, MemSpace::kPsum},
                      TypeCase{DataType::kFp16, DataType::kFp32, DataType::kFp16, false, MemSpace::kPsum}),
    [](const auto& info) { return case_name(info.param); });

TEST_F(EngineTest, AccessPatternsStridesBroadcastGapsAndNegativeStrides) {
  std::mt19937_64 rng(test_seed());
  const int n0 = 6, n1 = 4;
  // in0: rows of 10 bf16 with only the first 6 used; in1: one FP32 per partition, broadcast over the free axes.
  const auto a = random_values(DataType::kBf16, size_t(kP) * 40, rng);
  const auto s = random_values(DataType::kFp32, kP, rng);
  put(0, 0x0, DataType::kBf16, kP, 40, a);
  put(0, 0x100, DataType::kFp32, kP, 1, s);
  fill(MemSpace::kSbuf, 0x200, 0x200, 0xA5);  // the output area: every byte not written must stay 0xA5
  // out: every other FP32, rows 20 elements apart. A second instruction walks in0 backwards (negative strides).
  Instruction fwd = vec(Opcode::kTensorTensor, kP, n0, n1, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x200, 2, 20),
                        opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0x0, 1, 10),
                        opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x100, 0, 0));
  fwd.vec.op = AluOp::kSubtract;
  Instruction back = vec(Opcode::kTensorTensor, kP, n0, n1, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x204, 2, 20),
                         opnd(MemSpace::kSbuf, DataType::kBf16, 0, 2 * (3 * 10 + 5), -1, -10),
                         opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x100, 0, 0));
  back.vec.op = AluOp::kMultiply;
  run_vec({fwd, back});
  const auto got = get(0, 0x200, DataType::kFp32, kP, 0x80);
  for (int p = 0; p < kP; ++p) {
    for (int w = 0; w < 0x80; ++w) {
      const uint32_t g = got[size_t(p) * 0x80 + w];
      const int row = w / 20, col = w % 20;
      if (row < n1 && col < 2 * n0) {
        const int i0 = col / 2;
        const uint32_t sc = s[size_t(p)];
        if (col % 2 == 0) {
          const uint32_t x = golden::element_to_f32(DataType::kBf16, a[size_t(p) * 40 + row * 10 + i0]);
          ASSERT_EQ(hex(g), hex(golden::element_from_f32(DataType::kFp32, golden::alu(AluOp::kSubtract, x, sc),
                                                         true)))
              << "forward p" << p << " [" << row << "," << i0 << "]";
        } else {
          const uint32_t x = golden::element_to_f32(DataType::kBf16,
                                                    a[size_t(p) * 40 + (3 - row) * 10 + (5 - i0)]);
          ASSERT_EQ(hex(g), hex(golden::element_from_f32(DataType::kFp32, golden::alu(AluOp::kMultiply, x, sc),
                                                         true)))
              << "backward p" << p << " [" << row << "," << i0 << "]";
        }
      } else {
        ASSERT_EQ(hex(g), "0xa5a5a5a5") << "gap word " << w << " of partition " << p << " was written";
      }
    }
  }
}

// ---- tensor_scalar

TEST_F(EngineTest, TensorScalarEveryOpAndImmediateBitExact) {
  std::mt19937_64 rng(test_seed());
  const int n = 40;
  auto x = random_values(DataType::kFp32, size_t(kP) * n, rng);
  const auto sp = special_values(DataType::kFp32);
  std::copy(sp.begin(), sp.end(), x.begin());
  put(0, 0x0, DataType::kFp32, kP, n, x);
  const uint32_t imms[] = {0u, 0x80000000u, fbits(1.5f), 0xFF800000u, 0x7FC00001u, 0x7F7FFFFFu, 0x00000003u};
  std::vector<Instruction> prog;
  struct Step {
    AluOp op0;
    uint32_t imm0;
    AluOp op1;
    uint32_t imm1;
    DataType out;
    bool no_sat;
  };
  std::vector<Step> steps;
  for (int o = 1; o < isa::kNumAluOps; ++o) {
    for (const uint32_t imm : imms) steps.push_back({AluOp(o), imm, AluOp::kNone, 0, DataType::kFp32, false});
  }
  // Two ops, narrow outputs.
  steps.push_back({AluOp::kMultiply, fbits(3.0f), AluOp::kAdd, fbits(-1.0f), DataType::kBf16, false});
  steps.push_back({AluOp::kSubtract, fbits(0.25f), AluOp::kMax, 0x80000000u, DataType::kFp8E4M3, true});
  steps.push_back({AluOp::kRdivide, fbits(1.0f), AluOp::kIsLt, fbits(0.5f), DataType::kFp8E5M2, false});
  steps.push_back({AluOp::kDivide, fbits(1e-30f), AluOp::kRsubtract, 0x7F800000u, DataType::kFp16, false});
  for (size_t k = 0; k < steps.size(); ++k) {
    Instruction i = vec(Opcode::kTensorScalar, kP, n, 1, sbuf(steps[k].out, uint32_t(0x200 + 0xA0 * k), n),
                        sbuf(DataType::kFp32, 0x0, n));
    i.vec.op = steps[k].op0;
    i.vec.imm0 = steps[k].imm0;
    i.vec.op1 = steps[k].op1;
    i.vec.imm1 = steps[k].imm1;
    i.vec.no_sat = steps[k].no_sat;
    prog.push_back(i);
  }
  run_vec(prog);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    const auto got = get(0, uint32_t(0x200 + 0xA0 * k), s.out, kP, n);
    for (size_t e = 0; e < got.size(); ++e) {
      const uint32_t want =
          golden::element_from_f32(s.out, golden::tensor_scalar(s.op0, s.imm0, s.op1, s.imm1, x[e]), !s.no_sat);
      ASSERT_EQ(hex(got[e]), hex(want)) << "step " << k << " (" << isa::alu_op_name(s.op0) << " " << hex(s.imm0)
                                        << ", " << isa::alu_op_name(s.op1) << ") element " << e << " x=" << hex(x[e]);
    }
  }
}

// ---- tensor_reduce

TEST_F(EngineTest, TensorReduceSumMaxMinInIndexOrder) {
  std::mt19937_64 rng(test_seed());
  const int n0 = 12, n1 = 3, n = n0 * n1;
  for (const DataType in : {DataType::kFp32, DataType::kBf16, DataType::kFp8E4M3}) {
    SCOPED_TRACE(type_name(in));
    auto x = random_values(in, size_t(kP) * n, rng);
    if (in == DataType::kFp32) {
      // Row 0: 2^24 then ones: each +1 ties back to 2^24 (the reverse order would give 2^24 + 4); row 1: only -0
      // (a sum starts at +0.0: +0); row 2: -0 and +0 (max +0, min -0); row 3: a NaN in the middle.
      for (int i = 0; i < n; ++i) x[size_t(i)] = i == 0 ? 0x4B800000u : 0x3F800000u;
      for (int i = 0; i < n; ++i) x[size_t(n + i)] = 0x80000000u;
      for (int i = 0; i < n; ++i) x[size_t(2 * n + i)] = i % 2 ? 0u : 0x80000000u;
      x[size_t(3 * n + 17)] = 0x7F800001u;
      // Row 4: +inf and -inf (sum NaN); row 5: specials.
      x[size_t(4 * n + 3)] = 0x7F800000u;
      x[size_t(4 * n + 30)] = 0xFF800000u;
      const auto sp = special_values(DataType::kFp32);
      std::copy(sp.begin(), sp.begin() + std::min<size_t>(sp.size(), n), x.begin() + 5 * n);
    }
    put(0, 0x0, in, kP, n, x);
    struct Case {
      AluOp op;
      isa::ReduceAxis axis;
      DataType out;
    };
    std::vector<Case> cases;
    for (const AluOp op : {AluOp::kAdd, AluOp::kMax, AluOp::kMin}) {
      for (const auto axis : {isa::ReduceAxis::kAll, isa::ReduceAxis::kInner}) {
        for (const DataType out : {DataType::kFp32, DataType::kBf16}) cases.push_back({op, axis, out});
      }
    }
    std::vector<Instruction> prog;
    for (size_t k = 0; k < cases.size(); ++k) {
      const bool inner = cases[k].axis == isa::ReduceAxis::kInner;
      Instruction i = vec(Opcode::kTensorReduce, kP, n0, n1,
                          opnd(MemSpace::kSbuf, cases[k].out, 0, uint32_t(0x400 + 0x20 * k), 0, inner ? 1 : 0),
                          opnd(MemSpace::kSbuf, in, 0, 0, 1, n0));
      i.vec.op = cases[k].op;
      i.vec.axis = cases[k].axis;
      prog.push_back(i);
    }
    run_vec(prog);
    if (in == DataType::kFp32) {
      // The documented order-dependent case, spelled out: 2^24 + 1 + 1 + ... stays 2^24.
      EXPECT_EQ(hex(get(0, 0x400, DataType::kFp32, 1, 1)[0]), "0x4b800000");
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      const bool inner = cases[k].axis == isa::ReduceAxis::kInner;
      const int rows = inner ? n1 : 1;
      const auto got = get(0, uint32_t(0x400 + 0x20 * k), cases[k].out, kP, rows);
      for (int p = 0; p < kP; ++p) {
        for (int r = 0; r < rows; ++r) {
          std::vector<uint32_t> vals;
          for (int i1 = inner ? r : 0; i1 < (inner ? r + 1 : n1); ++i1) {
            for (int i0 = 0; i0 < n0; ++i0) {
              vals.push_back(golden::element_to_f32(in, x[size_t(p) * n + i1 * n0 + i0]));
            }
          }
          const uint32_t want =
              golden::element_from_f32(cases[k].out, golden::reduce(cases[k].op, vals), true);
          ASSERT_EQ(hex(got[size_t(p) * rows + r]), hex(want))
              << isa::alu_op_name(cases[k].op) << (inner ? " inner" : " all") << " -> " << type_name(cases[k].out)
              << ", partition " << p << " row " << r;
        }
      }
    }
  }
}

TEST_F(EngineTest, TensorReduceFromPsumToPsum) {
  std::mt19937_64 rng(test_seed());
  const int n = 100;
  const auto x = random_values(DataType::kFp32, size_t(kP) * n, rng);
  put(MemSpace::kPsum, 0, 0x800, DataType::kFp32, kP, n, x);
  Instruction i = vec(Opcode::kTensorReduce, kP, n, 1, opnd(MemSpace::kPsum, DataType::kFp32, 0, 0x10, 0, 0),
                      opnd(MemSpace::kPsum, DataType::kFp32, 0, 0x800, 1, 0));
  i.vec.op = AluOp::kAdd;
  run_vec({i});
  const auto got = get(MemSpace::kPsum, 0, 0x10, DataType::kFp32, kP, 1);
  for (int p = 0; p < kP; ++p) {
    const std::vector<uint32_t> row(x.begin() + p * n, x.begin() + (p + 1) * n);
    EXPECT_EQ(hex(got[size_t(p)]), hex(golden::reduce(AluOp::kAdd, row))) << "partition " << p;
  }
}

// ---- tensor_copy: every pattern of every type to every type

TEST_F(EngineTest, TensorCopyEveryPatternToEveryTypeBothFp8Modes) {
  std::mt19937_64 rng(test_seed());
  for (const DataType src : kAllTypes) {
    SCOPED_TRACE("from " + type_name(src));
    std::vector<uint32_t> x;
    if (src == DataType::kFp32) {
      x = special_values(DataType::kFp32);
      const auto r = random_values(DataType::kFp32, 4096 - x.size(), rng);
      x.insert(x.end(), r.begin(), r.end());
    } else {
      const uint32_t count = isa::data_type_bytes(src) == 2 ? 65536u : 256u;
      for (uint32_t v = 0; v < count; ++v) x.push_back(v);
      while (x.size() % kP) x.push_back(0);
    }
    const int n = int(x.size()) / kP;
    put(0, 0x0, src, kP, n, x);
    std::vector<std::pair<DataType, bool>> outs;
    for (const DataType dst : kAllTypes) {
      outs.push_back({dst, false});
      outs.push_back({dst, true});
    }
    std::vector<Instruction> prog;
    for (size_t k = 0; k < outs.size(); ++k) {
      Instruction i = vec(Opcode::kTensorCopy, kP, n, 1, sbuf(outs[k].first, uint32_t(0x2000 + 0x4000 * k), n),
                          sbuf(src, 0x0, n));
      i.vec.no_sat = outs[k].second;
      prog.push_back(i);
    }
    run_vec(prog);
    for (size_t k = 0; k < outs.size(); ++k) {
      const auto got = get(0, uint32_t(0x2000 + 0x4000 * k), outs[k].first, kP, n);
      for (size_t e = 0; e < got.size(); ++e) {
        const uint32_t want =
            golden::element_from_f32(outs[k].first, golden::element_to_f32(src, x[e]), !outs[k].second);
        ASSERT_EQ(hex(got[e]), hex(want)) << "to " << type_name(outs[k].first) << (outs[k].second ? " no_sat" : "")
                                          << ", pattern " << hex(x[e]);
      }
    }
  }
}

// ---- stochastic rounding (BRIEF rule 9): casts with the sr flag, keyed by the destination

/// The golden's stochastic cast of FP32 `x` to `t` for the element at byte `address` of `space` under `seed`.
uint32_t golden_sr(DataType t, uint32_t x, uint32_t seed, MemSpace space, uint64_t address) {
  const uint16_t r = golden::sr_random_bits(seed, isa::sr_element_key(space, address));
  return golden::narrow_stochastic(static_cast<isa::Dtype>(t), x, true, r);
}

TEST_F(EngineTest, StochasticCastsOfVectorAndScalarMatchTheGoldenKeyedByDestination) {
  std::mt19937_64 rng(test_seed());
  constexpr int n = 64;
  const auto x = random_values(DataType::kFp32, size_t(kP) * n, rng);
  put(0, 0x0, DataType::kFp32, kP, n, x);
  const uint32_t pb = partition_bytes(MemSpace::kSbuf);
  struct Out {
    DataType type;
    uint32_t offset;
    int stride;  // elements: 2 interleaves, so that the key must follow the element's real address
  };
  const Out outs[] = {{DataType::kBf16, 0x1000, 1}, {DataType::kFp8E4M3, 0x2000, 2}, {DataType::kFp16, 0x3000, 1}};
  std::vector<std::vector<uint32_t>> first;
  for (const uint32_t seed : {12345u, 12345u, 777u}) {
    drv_->set_sr_seed(seed);
    std::vector<Instruction> vprog;
    for (const Out& o : {outs[0], outs[1]}) {
      Instruction i = vec(Opcode::kTensorCopy, kP, n, 1, opnd(MemSpace::kSbuf, o.type, 0, o.offset, o.stride),
                          sbuf(DataType::kFp32, 0x0, n));
      i.vec.sr = true;
      vprog.push_back(i);
    }
    run_vec(vprog);
    Instruction a = activation(isa::ActFunc::kIdentity, kP, n, 1, sbuf(outs[2].type, outs[2].offset, n),
                               sbuf(DataType::kFp32, 0x0, n));
    a.act.sr = true;
    run_act({a});
    std::vector<std::vector<uint32_t>> got;
    for (const Out& o : outs) {
      const unsigned es = isa::data_type_bytes(o.type);
      const auto all = get(0, o.offset, o.type, kP, n * o.stride);
      std::vector<uint32_t> mine;
      for (int p = 0; p < kP; ++p) {
        for (int i = 0; i < n; ++i) {
          const uint32_t v = all[size_t(p) * n * o.stride + size_t(i) * o.stride];
          const uint64_t at = uint64_t(p) * pb + o.offset + uint64_t(i) * o.stride * es;
          ASSERT_EQ(hex(v), hex(golden_sr(o.type, x[size_t(p) * n + i], seed, MemSpace::kSbuf, at)))
              << type_name(o.type) << " seed " << seed << " p " << p << " i " << i;
          mine.push_back(v);
        }
      }
      got.push_back(mine);
    }
    if (first.empty()) {
      first = got;
    } else if (seed == 12345u) {
      EXPECT_EQ(got, first) << "same seed, same results";
    } else {
      EXPECT_NE(got[0], first[0]) << "another seed rounds some BF16 elements the other way";
    }
  }
  drv_->set_sr_seed(0);
}

TEST_F(EngineTest, StochasticDmaCopyMatchesTheGoldenKeyedByTheHbmDestination) {
  std::mt19937_64 rng(test_seed());
  constexpr int n = 4096;
  const auto x = random_values(DataType::kFp32, n, rng);
  std::vector<uint8_t> bytes(size_t(n) * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  const uint64_t src = drv_->alloc(bytes.size()), dst = drv_->alloc(size_t(n) * 2);
  drv_->write_hbm(src, bytes.data(), bytes.size());
  drv_->set_sr_seed(0xC0FFEEu);
  Instruction c;
  c.op = Opcode::kDmaCopy;
  c.copy.src_space = c.copy.dst_space = MemSpace::kHbm;
  c.copy.src_type = DataType::kFp32;
  c.copy.dst_type = DataType::kBf16;
  c.copy.src_addr = src;
  c.copy.dst_addr = dst;
  c.copy.count = {uint16_t(n / 8), 8, 1, 1};
  c.copy.src_stride = {4, int32_t(n / 8 * 4), 0, 0};
  c.copy.dst_stride = {2, int32_t(n / 8 * 2), 0, 0};
  c.copy.sr = true;
  run_on(isa::Engine::kDma, {c});
  std::vector<uint8_t> out(size_t(n) * 2);
  drv_->read_hbm(dst, out.data(), out.size());
  int up = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t got = uint32_t(out[2 * i] | out[2 * i + 1] << 8);
    ASSERT_EQ(hex(got), hex(golden_sr(DataType::kBf16, x[size_t(i)], 0xC0FFEEu, MemSpace::kHbm, dst + 2 * i)))
        << "element " << i;
    up += got != golden::narrow_from_f32(isa::Dtype::kBf16, x[size_t(i)], true);
  }
  EXPECT_GT(up, 0) << "some elements round away from the nearest value";
  drv_->set_sr_seed(0);
}

// ---- quantize_mx (BRIEF rule 10): elements and scales in the TE's MX layout, against the golden quantizer

TEST_F(EngineTest, QuantizeMxWritesTheGoldenElementsAndScalesInTheTeLayout) {
  std::mt19937_64 rng(test_seed());
  constexpr int F = 40;
  for (const isa::Dtype dt : isa::kMxTypes) {
    for (const int K : {kP, kP - 3}) {  // a whole tile and an odd K (its last pair half padding)
      SCOPED_TRACE(std::string(isa::dtype_name(dt)) + " K=" + std::to_string(K));
      auto x = random_values(DataType::kFp32, size_t(K) * F, rng);
      // Columns with a block rule 10 treats apart: a NaN, an Inf, all zeros (one -0), subnormals, huge values.
      for (int k = 0; k < K; ++k) {
        x[size_t(k) * F + 5] = k == 0 ? 0x80000000u : 0;
        x[size_t(k) * F + 7] = 0x00000100u * uint32_t(k + 1);
        x[size_t(k) * F + 9] = fbits(3e38f) ^ (uint32_t(k & 1) << 31);
      }
      x[size_t(K / 2) * F + 3] = 0x7FC00001u;
      x[size_t(K - 1) * F + 4] = 0xFF800000u;
      put(0, 0x0, DataType::kFp32, K, F, x);
      fill(MemSpace::kSbuf, 0x400, 0x100, 0xAB);  // so that every byte written is seen to be written
      Instruction q;
      q.op = Opcode::kQuantizeMx;
      q.vec.mx_dtype = dt;
      q.vec.partitions = uint16_t(K);
      q.vec.free = {uint16_t(F), 1};
      q.vec.out = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x400);
      q.vec.in0 = sbuf(DataType::kFp32, 0x0, F);
      q.vec.scales = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x480);
      run_vec({q});
      const golden::MxTensor want = golden::quantize_mx(dt, K, F, x);
      const int rows = (K + 1) / 2;
      const auto elems = get(0, 0x400, DataType::kFp8E4M3, rows, 2 * F);
      const auto scales = get(0, 0x480, DataType::kFp8E4M3, rows, F);
      for (int k = 0; k < 2 * rows; ++k) {
        for (int f = 0; f < F; ++f) {
          const uint32_t got = elems[size_t(k / 2) * 2 * F + 2 * f + k % 2];
          const uint32_t expect = k < K ? want.elements[size_t(k) * F + f] : 0;  // the padding row is 0
          ASSERT_EQ(hex(got), hex(expect)) << "element k=" << k << " f=" << f;
        }
      }
      for (int j = 0; j < rows; ++j) {
        for (int f = 0; f < F; ++f) {
          ASSERT_EQ(hex(scales[size_t(j) * F + f]), hex(want.scales[size_t(2 * j / 32) * F + f]))
              << "scale row " << j << " f=" << f;
        }
      }
      EXPECT_EQ(want.scales[3], isa::kE8M0Nan);
      EXPECT_EQ(want.scales[5], 0) << "an all-zero block";
    }
  }
}

TEST_F(EngineTest, QuantizeMxOutsideSbufStopsTheDeviceNamingTheScales) {
  Instruction q;
  q.op = Opcode::kQuantizeMx;
  q.vec.mx_dtype = isa::Dtype::kMxFp4;
  q.vec.partitions = uint16_t(kP);
  q.vec.free = {8, 1};
  q.vec.out = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x0);
  q.vec.in0 = sbuf(DataType::kFp32, 0x100, 8);
  q.vec.scales = opnd(MemSpace::kSbuf, DataType::kFp32, 0, partition_bytes(MemSpace::kSbuf) - 4);  // 8 bytes
  expect_fault(isa::Engine::kVec, {isa::encode(q), isa::encode(isa::Instruction::halt())}, regs::ERR_SBUF_RANGE, 0,
               "scales_offset");
}

// ---- memset, iota, select, transpose

TEST_F(EngineTest, MemsetEveryValueClassToEveryType) {
  const auto values = special_values(DataType::kFp32);
  std::vector<Instruction> prog;
  struct Case {
    uint32_t value;
    DataType out;
    bool no_sat;
  };
  std::vector<Case> cases;
  for (const uint32_t v : values) {
    for (const DataType t : kAllTypes) {
      cases.push_back({v, t, false});
      if (isa::data_type_bytes(t) == 1) cases.push_back({v, t, true});
    }
  }
  for (size_t k = 0; k < cases.size(); ++k) {
    Instruction i = vec(Opcode::kMemset, kP, 3, 2, sbuf(cases[k].out, uint32_t(0x40 * k), 3));
    i.vec.imm0 = cases[k].value;
    i.vec.no_sat = cases[k].no_sat;
    prog.push_back(i);
  }
  run_vec(prog);
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto got = get(0, uint32_t(0x40 * k), cases[k].out, kP, 6);
    const uint32_t want = golden::element_from_f32(cases[k].out, cases[k].value, !cases[k].no_sat);
    for (size_t e = 0; e < got.size(); ++e) {
      ASSERT_EQ(hex(got[e]), hex(want)) << "memset " << hex(cases[k].value) << " -> " << type_name(cases[k].out);
    }
  }
}

TEST_F(EngineTest, IotaIntegersRoundOnceThenCast) {
  struct Case {
    int32_t base, pstep, s0, s1;
    DataType out;
    bool no_sat;
  };
  const std::vector<Case> cases = {
      {0, 1, 1, 16, DataType::kFp32, false},                // flat index p + i0 + 16 i1
      {-5, -3, 2, -40, DataType::kFp32, false},             // negative steps
      {16777215, 1, 1, 0, DataType::kFp32, false},          // crosses 2^24: odd integers round to even
      {2147483647, 2147483647, -2147483647 - 1, 3, DataType::kFp32, false},  // far past 2^31: exact then rounded
      {-200, 100, 30, 7, DataType::kBf16, false},           // bf16 rounding of integers
      {300, 50, 1, 0, DataType::kFp8E4M3, false},           // saturates at 448
      {300, 50, 1, 0, DataType::kFp8E4M3, true},            // NaN past 464
      {60000, 1000, 1, 0, DataType::kFp16, false},          // fp16 overflow to inf
  };
  std::vector<Instruction> prog;
  for (size_t k = 0; k < cases.size(); ++k) {
    Instruction i = vec(Opcode::kIota, kP, 5, 3, sbuf(cases[k].out, uint32_t(0x100 * k), 5));
    i.vec.base = cases[k].base;
    i.vec.pstep = cases[k].pstep;
    i.vec.step = {cases[k].s0, cases[k].s1};
    i.vec.no_sat = cases[k].no_sat;
    prog.push_back(i);
  }
  run_vec(prog);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const auto got = get(0, uint32_t(0x100 * k), c.out, kP, 15);
    for (int p = 0; p < kP; ++p) {
      for (int i1 = 0; i1 < 3; ++i1) {
        for (int i0 = 0; i0 < 5; ++i0) {
          const uint32_t want =
              golden::element_from_f32(c.out, golden::iota(c.base, c.pstep, c.s0, c.s1, p, i0, i1), !c.no_sat);
          ASSERT_EQ(hex(got[size_t(p) * 15 + i1 * 5 + i0]), hex(want))
              << "case " << k << " p" << p << " [" << i1 << "," << i0 << "]";
        }
      }
    }
  }
  EXPECT_EQ(get(0, 0x200 + 4, DataType::kFp32, 1, 1)[0], 0x4B800000u) << "16777216 (16777215 + 1)";
}

TEST_F(EngineTest, SelectPredicateIsNonZeroIncludingNaN) {
  std::mt19937_64 rng(test_seed());
  const int n = 30;
  std::vector<uint32_t> pred = random_values(DataType::kFp32, size_t(kP) * n, rng);
  const auto sp = special_values(DataType::kFp32);
  std::copy(sp.begin(), sp.end(), pred.begin());
  const auto t = random_values(DataType::kBf16, size_t(kP) * n, rng);
  const auto f = random_values(DataType::kFp16, size_t(kP) * n, rng);
  put(0, 0x0, DataType::kFp32, kP, n, pred);
  put(0, 0x200, DataType::kBf16, kP, n, t);
  put(0, 0x300, DataType::kFp16, kP, n, f);
  for (const DataType out : {DataType::kFp32, DataType::kBf16, DataType::kFp8E5M2}) {
    run_vec({vec(Opcode::kSelect, kP, n, 1, sbuf(out, 0x400, n), sbuf(DataType::kFp32, 0, n),
                 sbuf(DataType::kBf16, 0x200, n), sbuf(DataType::kFp16, 0x300, n))});
    const auto got = get(0, 0x400, out, kP, n);
    for (size_t e = 0; e < got.size(); ++e) {
      const bool p = golden::select_predicate(pred[e]);
      const uint32_t v =
          p ? golden::element_to_f32(DataType::kBf16, t[e]) : golden::element_to_f32(DataType::kFp16, f[e]);
      ASSERT_EQ(hex(got[e]), hex(golden::element_from_f32(out, v, true)))
          << "to " << type_name(out) << ", predicate " << hex(pred[e]);
    }
  }
  // The predicate's classes, spelled out.
  EXPECT_FALSE(golden::select_predicate(0x80000000u));
  EXPECT_TRUE(golden::select_predicate(0x7FC00000u));
  EXPECT_TRUE(golden::select_predicate(0x00000001u));
}

TEST_F(EngineTest, TransposeSwapsPartitionsAndFreeWithCast) {
  std::mt19937_64 rng(test_seed());
  struct Case {
    int p, n0;
    DataType in, out;
  };
  for (const Case c :
       {Case{16, 16, DataType::kBf16, DataType::kFp32}, Case{5, 11, DataType::kFp32, DataType::kFp32},
        Case{1, 16, DataType::kFp8E4M3, DataType::kBf16}, Case{16, 1, DataType::kFp16, DataType::kFp16}}) {
    SCOPED_TRACE(std::to_string(c.p) + "x" + std::to_string(c.n0));
    const auto x = random_values(c.in, size_t(c.p) * c.n0, rng);
    put(0, 0x0, c.in, c.p, c.n0, x);
    fill(MemSpace::kSbuf, 0x100, 0x200, 0x5A);
    // out rows of P elements, every element 2 apart (a stride > 1 on the output).
    run_vec({vec(Opcode::kTranspose, c.p, c.n0, 1, opnd(MemSpace::kSbuf, c.out, 0, 0x100, 2, 0),
                 opnd(MemSpace::kSbuf, c.in, 0, 0, 1, 0))});
    const auto got = get(0, 0x100, c.out, c.n0, 2 * c.p);
    for (int j = 0; j < c.n0; ++j) {
      for (int i = 0; i < c.p; ++i) {
        const uint32_t want =
            golden::element_from_f32(c.out, golden::element_to_f32(c.in, x[size_t(i) * c.n0 + j]), true);
        ASSERT_EQ(hex(got[size_t(j) * 2 * c.p + 2 * i]), hex(want)) << "out[" << j << "][" << i << "]";
      }
    }
    const auto untouched = get(c.n0 < kP ? c.n0 : 0, c.n0 < kP ? 0x100 : 0x200, DataType::kFp32, 1, 1);
    EXPECT_EQ(untouched[0], 0x5A5A5A5Au) << "outside the transposed tile";
  }
}

// ---- activation

struct ActCase {
  ActFunc func;
  float lo, hi;  ///< range of the random inputs
};

std::vector<uint32_t> activation_inputs(DataType t, float lo, float hi, int count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<uint32_t> v(static_cast<size_t>(count));
  for (auto& e : v) e = golden::element_from_f32(t, fbits(u(rng)), true);
  // Special values first (inputs of the function after scale 1, bias 0 in the exact check).
  const auto sp = special_values(t);
  std::copy(sp.begin(), sp.end(), v.begin());
  return v;
}

class ActivationTest : public EngineTest, public ::testing::WithParamInterface<ActCase> {};

TEST_P(ActivationTest, MatchesGoldenWithinTheDocumentedBoundAndSumsInOrder) {
  const ActCase c = GetParam();
  std::mt19937_64 rng(test_seed());
  const int n0 = 40, n1 = 2, n = n0 * n1;
  const bool exact = golden::activation_is_exact(c.func);
  struct Run {
    DataType in, out;
    uint32_t scale, bias;
    bool bias_tensor, no_sat;
  };
  const std::vector<Run> runs = {
      {DataType::kFp32, DataType::kFp32, 0x3F800000u, 0x80000000u, false, false},  // scale 1, bias -0: f(x)
      {DataType::kBf16, DataType::kFp32, fbits(0.75f), fbits(-0.125f), false, false},
      {DataType::kFp32, DataType::kBf16, 0x3F800000u, 0, true, false},           // per-partition bias tensor
      {DataType::kFp16, DataType::kFp8E4M3, fbits(1.5f), fbits(0.5f), false, true},
  };
  std::vector<uint32_t> bias_col(kP);
  for (int p = 0; p < kP; ++p) bias_col[size_t(p)] = fbits(float(p - 8) / 16.0f);
  put(0, 0x3000, DataType::kFp32, kP, 1, bias_col);
  uint64_t checked = 0, correctly_rounded = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const Run& run = runs[r];
    SCOPED_TRACE("run " + std::to_string(r) + ": " + type_name(run.in) + " -> " + type_name(run.out));
    const auto x = activation_inputs(run.in, c.lo, c.hi, kP * n, rng);
    put(0, 0x0, run.in, kP, n, x);
    Instruction i = activation(c.func, kP, n0, n1, opnd(MemSpace::kSbuf, run.out, 0, 0x1000, 1, n0),
                               opnd(MemSpace::kSbuf, run.in, 0, 0, 1, n0), run.scale, run.bias);
    i.act.no_sat = run.no_sat;
    i.act.bias_tensor = run.bias_tensor;
    if (run.bias_tensor) i.act.bias_ap = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x3000, 0, 0);
    i.act.reduce = true;
    i.act.sum = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x3100, 0, 0);
    run_act({i});
    const auto got = get(0, 0x1000, run.out, kP, n);
    const auto sums = get(0, 0x3100, DataType::kFp32, kP, 1);
    for (int p = 0; p < kP; ++p) {
      const uint32_t bias = run.bias_tensor ? bias_col[size_t(p)] : run.bias;
      std::vector<uint32_t> results;  // the FP32 results, when they can be known exactly
      for (int e = 0; e < n; ++e) {
        const size_t at = size_t(p) * n + e;
        const uint32_t z = golden::activation_input(golden::element_to_f32(run.in, x[at]), run.scale, bias);
        if (exact) {
          const uint32_t f = golden::activation_exact(c.func, z);
          results.push_back(f);
          ASSERT_EQ(hex(got[at]), hex(golden::element_from_f32(run.out, f, !run.no_sat)))
              << "element " << at << " x=" << hex(x[at]) << " z=" << hex(z);
        } else {
          std::string why;
          const long double ref = golden::activation_reference(c.func, z);
          ASSERT_TRUE(golden::within_ulps(run.out, !run.no_sat, got[at], ref, golden::kActivationUlpBound, &why))
              << "element " << at << " x=" << hex(x[at]) << " z=" << hex(z) << " got " << hex(got[at]) << ": " << why;
          if (run.out == DataType::kFp32) {
            results.push_back(got[at]);
            ++checked;
            if (got[at] == golden::element_from_f32(DataType::kFp32, fbits(float(ref)), true)) ++correctly_rounded;
          }
        }
      }
      // The sum adds the FP32 results in index order from +0.0: known exactly for exact functions and for FP32
      // outputs (which are the results themselves).
      if (results.size() == size_t(n)) {
        ASSERT_EQ(hex(sums[size_t(p)]), hex(golden::reduce(AluOp::kAdd, results))) << "sum of partition " << p;
      }
    }
  }
  if (checked > 0) {
    std::cout << "[ ulp      ] " << isa::act_func_name(c.func) << ": " << correctly_rounded << " of " << checked
              << " FP32 results correctly rounded, the rest within " << golden::kActivationUlpBound << " ULP\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Functions, ActivationTest,
                         ::testing::Values(ActCase{ActFunc::kIdentity, -100.0f, 100.0f},
                                           ActCase{ActFunc::kRelu, -10.0f, 10.0f},
                                           ActCase{ActFunc::kGeluTanh, -12.0f, 12.0f},
                                           ActCase{ActFunc::kGelu, -12.0f, 12.0f},
                                           ActCase{ActFunc::kSigmoid, -110.0f, 110.0f},
                                           ActCase{ActFunc::kTanh, -12.0f, 12.0f},
                                           ActCase{ActFunc::kExp, -110.0f, 90.0f},
                                           ActCase{ActFunc::kSilu, -110.0f, 110.0f},
                                           ActCase{ActFunc::kRsqrt, 0.0f, 1000.0f},
                                           ActCase{ActFunc::kReciprocal, -10.0f, 10.0f},
                                           ActCase{ActFunc::kSquare, -1e20f, 1e20f},
                                           ActCase{ActFunc::kLog, 0.0f, 1e6f}),
                         [](const auto& info) { return std::string(isa::act_func_name(info.param.func)); });

TEST_F(EngineTest, ActivationSpecialValuesOfEveryFunction) {
  // Every function of every FP32 special value (and a few hard spots), FP32 out: exact where promised, else within
  // the bound; NaN results are the canonical NaN.
  std::vector<uint32_t> z = special_values(DataType::kFp32);
  for (const float v : {-0.5f, 1e-8f, -1e-8f, 88.7228f, 88.72284f, -87.33654f, -103.97208f, -10.0f, 20.0f, -20.0f,
                        1e-38f, 5.0f, -5.0f, 0.99999994f, 1.0000001f}) {
    z.push_back(fbits(v));
  }
  const int n = int(z.size());
  put(0, 0x0, DataType::kFp32, 1, n, z);
  std::vector<Instruction> prog;
  for (int f = 0; f < isa::kNumActFuncs; ++f) {
    prog.push_back(activation(ActFunc(f), 1, n, 1, sbuf(DataType::kFp32, uint32_t(0x400 + 0x100 * f), n),
                              sbuf(DataType::kFp32, 0, n), 0x3F800000u, 0x80000000u));
  }
  run_act(prog);
  for (int f = 0; f < isa::kNumActFuncs; ++f) {
    const auto got = get(0, uint32_t(0x400 + 0x100 * f), DataType::kFp32, 1, n);
    for (int e = 0; e < n; ++e) {
      const uint32_t in = golden::activation_input(z[size_t(e)], 0x3F800000u, 0x80000000u);
      SCOPED_TRACE(std::string(isa::act_func_name(ActFunc(f))) + " of " + hex(z[size_t(e)]));
      if (std::isnan(golden::activation_reference(ActFunc(f), in))) {
        EXPECT_EQ(hex(got[size_t(e)]), "0x7fc00000");
      } else if (golden::activation_is_exact(ActFunc(f))) {
        EXPECT_EQ(hex(got[size_t(e)]), hex(golden::activation_exact(ActFunc(f), in)));
      } else {
        std::string why;
        EXPECT_TRUE(golden::within_ulps(DataType::kFp32, true, got[size_t(e)],
                                        golden::activation_reference(ActFunc(f), in), golden::kActivationUlpBound,
                                        &why))
            << "got " << hex(got[size_t(e)]) << ": " << why;
      }
    }
  }
  // A few exact values, spelled out: exp(-inf) = +0, log(-0) = -inf, rsqrt(-0) = -inf, tanh(+inf) = 1,
  // gelu(-inf) = -0, silu(+inf) = +inf, sigmoid(-inf) = +0.
  const auto at = [&](ActFunc f, uint32_t v) {
    const auto it = std::find(z.begin(), z.end(), v);
    return get(0, uint32_t(0x400 + 0x100 * int(f) + 4 * (it - z.begin())), DataType::kFp32, 1, 1)[0];
  };
  EXPECT_EQ(hex(at(ActFunc::kExp, 0xFF800000u)), "0x0");
  EXPECT_EQ(hex(at(ActFunc::kLog, 0x80000000u)), "0xff800000");
  EXPECT_EQ(hex(at(ActFunc::kRsqrt, 0x80000000u)), "0xff800000");
  EXPECT_EQ(hex(at(ActFunc::kTanh, 0x7F800000u)), "0x3f800000");
  EXPECT_EQ(hex(at(ActFunc::kGelu, 0xFF800000u)), "0x80000000");
  EXPECT_EQ(hex(at(ActFunc::kGeluTanh, 0xFF800000u)), "0x80000000");
  EXPECT_EQ(hex(at(ActFunc::kSilu, 0x7F800000u)), "0x7f800000");
  EXPECT_EQ(hex(at(ActFunc::kSigmoid, 0xFF800000u)), "0x0");
  EXPECT_EQ(hex(at(ActFunc::kRelu, 0x80000000u)), "0x0") << "relu(-0) = +0";
}

TEST_F(EngineTest, ActivationBiasOfPlusZeroTurnsMinusZeroIntoPlusZero) {
  // out = f(x * scale + bias) always adds the bias: +0 bias gives -0 + +0 = +0; a -0 bias keeps -0.
  put(0, 0x0, DataType::kFp32, 1, 1, {0x80000000u});
  run_act({activation(ActFunc::kIdentity, 1, 1, 1, sbuf(DataType::kFp32, 0x10, 1), sbuf(DataType::kFp32, 0, 1),
                      0x3F800000u, 0u),
           activation(ActFunc::kIdentity, 1, 1, 1, sbuf(DataType::kFp32, 0x14, 1), sbuf(DataType::kFp32, 0, 1),
                      0x3F800000u, 0x80000000u)});
  EXPECT_EQ(hex(get(0, 0x10, DataType::kFp32, 1, 1)[0]), "0x0");
  EXPECT_EQ(hex(get(0, 0x14, DataType::kFp32, 1, 1)[0]), "0x80000000");
}

TEST_F(EngineTest, ActivationSumAccContinuesTheSumAcrossInstructions) {
  // The order-sensitive row 2^24, 1, 1, 1, then 1, 1 (docs/isa.md "Vector and Scalar numerics": each + 1 after 2^24
  // is a tie that rounds back to even): one instruction over all six gives 2^24; two instructions over [0, 4) and
  // [4, 6), the second with sum_acc, continue the same sum and give 2^24 too; without sum_acc the second restarts
  // at +0 and gives 2. A sum column of 7.0 before the first sum_acc instruction is where that sum starts.
  const uint32_t big = fbits(16777216.0f), one = fbits(1.0f);
  put(0, 0x0, DataType::kFp32, 1, 6, {big, one, one, one, one, one});
  put(0, 0x200, DataType::kFp32, 1, 1, {fbits(7.0f)});
  auto act = [&](int first, int n, uint32_t sum_at, bool acc) {
    Instruction i = activation(ActFunc::kIdentity, 1, n, 1, sbuf(DataType::kFp32, 0x100 + uint32_t(4 * first), n),
                               sbuf(DataType::kFp32, uint32_t(4 * first), n), 0x3F800000u, 0x80000000u);
    i.act.reduce = true;
    i.act.sum_acc = acc;
    i.act.sum = opnd(MemSpace::kSbuf, DataType::kFp32, 0, sum_at, 0, 0);
    return i;
  };
  run_act({act(0, 6, 0x300, false), act(0, 4, 0x304, false), act(4, 2, 0x304, true), act(4, 2, 0x308, false),
           act(1, 2, 0x200, true)});
  EXPECT_EQ(hex(get(0, 0x300, DataType::kFp32, 1, 1)[0]), hex(big)) << "one instruction";
  EXPECT_EQ(hex(get(0, 0x304, DataType::kFp32, 1, 1)[0]), hex(big)) << "two, the second with sum_acc";
  EXPECT_EQ(hex(get(0, 0x308, DataType::kFp32, 1, 1)[0]), hex(fbits(2.0f))) << "the second alone";
  EXPECT_EQ(hex(get(0, 0x200, DataType::kFp32, 1, 1)[0]), hex(fbits(9.0f))) << "7 + 1 + 1";
}

TEST_F(EngineTest, ActivationScaleTensorScalesEachPartitionByItsOwnFactor) {
  // scale=SPACE:PARTITION:OFFSET: partition p multiplies by its column's value, then adds the bias (here -0, which
  // leaves every value unchanged): 3 x 0.5 = 1.5 in partition 0, 3 x 4 = 12 in partition 1, 3 x -1 = -3 in 2; a
  // bias immediate with it (+1) is added after the product.
  put(0, 0x0, DataType::kFp32, 3, 2, {fbits(3.0f), fbits(3.0f), fbits(3.0f), fbits(3.0f), fbits(3.0f), fbits(3.0f)});
  put(0, 0x40, DataType::kFp32, 3, 1, {fbits(0.5f), fbits(4.0f), fbits(-1.0f)});
  auto act = [&](uint32_t out, uint32_t bias) {
    Instruction i = activation(ActFunc::kIdentity, 3, 2, 1, sbuf(DataType::kFp32, out, 2), sbuf(DataType::kFp32, 0, 2),
                               0, bias);
    i.act.scale_tensor = true;
    i.act.scale_ap = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x40, 0, 0);
    return i;
  };
  run_act({act(0x100, 0x80000000u), act(0x200, fbits(1.0f))});
  const auto got = get(0, 0x100, DataType::kFp32, 3, 2), plus = get(0, 0x200, DataType::kFp32, 3, 2);
  const float want[] = {1.5f, 12.0f, -3.0f};
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(hex(got[size_t(2 * p)]), hex(fbits(want[p]))) << "partition " << p;
    EXPECT_EQ(hex(got[size_t(2 * p + 1)]), hex(fbits(want[p]))) << "partition " << p;
    EXPECT_EQ(hex(plus[size_t(2 * p)]), hex(fbits(want[p] + 1.0f))) << "partition " << p << " with bias 1";
  }
}

// ---- PSUM written by the TE, read by the engines

TEST_F(EngineTest, TeResultInPsumEvictedByTheVectorEngineAfterASemaphore) {
  std::mt19937_64 rng(test_seed());
  const int k = 16, m = 16, n = 64;
  const auto s = random_values(DataType::kBf16, size_t(k) * m, rng, 1.0f);
  const auto mv = random_values(DataType::kBf16, size_t(k) * n, rng, 1.0f);
  std::vector<uint16_t> s16(s.begin(), s.end()), m16(mv.begin(), mv.end());
  for (auto& v : s16) v = golden::is_nan(isa::Dtype::kBf16, v) ? 0 : v;
  for (auto& v : m16) v = golden::is_nan(isa::Dtype::kBf16, v) ? 0 : v;
  put(0, 0x0, DataType::kBf16, k, m, std::vector<uint32_t>(s16.begin(), s16.end()));
  put(0, 0x100, DataType::kBf16, k, n, std::vector<uint32_t>(m16.begin(), m16.end()));
  isa::Program p;
  Instruction ls;
  ls.op = Opcode::kLoadStationary;
  ls.te = {isa::Dtype::kBf16, false, 0x0, 0, uint16_t(k), uint16_t(m)};
  Instruction mm;
  mm.op = Opcode::kMultiplyMoving;
  mm.te = {isa::Dtype::kBf16, false, 0x100, 0x0, uint16_t(k), uint16_t(n)};
  Instruction sig;
  sig.op = Opcode::kSemSignal;
  sig.sem = {4, 1};
  Instruction wait;
  wait.op = Opcode::kSemWait;
  wait.sem = {4, 1};
  p.queue(isa::Engine::kTe) = {ls, mm, sig, Instruction::halt()};
  p.queue(isa::Engine::kVec) = {wait,
                                vec(Opcode::kTensorCopy, m, n, 1, sbuf(DataType::kBf16, 0x1000, n),
                                    opnd(MemSpace::kPsum, DataType::kFp32, 0, 0x0, 1, 0)),
                                Instruction::halt()};
  drv_->load_program(p);
  drv_->run(10'000'000);
  const auto want = golden::gemm({isa::Dtype::kBf16, k, m, n, s16, m16}, k);
  const auto got = get(0, 0x1000, DataType::kBf16, m, n);
  for (size_t e = 0; e < got.size(); ++e) {
    ASSERT_EQ(hex(got[e]), hex(golden::element_from_f32(DataType::kBf16, want[e], true))) << "element " << e;
  }
}

// quantize_mx feeds the Tensor Engine: S and M quantized on the device, then load_stationary / multiply_moving of
// the MX type read the elements and scales where quantize_mx left them; PSUM = the golden MX GEMM of the golden
// quantization (tiny: K <= 16, one partial block).
TEST_F(EngineTest, QuantizeMxOutputIsWhatTheTensorEngineReads) {
  std::mt19937_64 rng(test_seed());
  const int k = 15, m = 12, n = 20;
  for (const isa::Dtype dt : isa::kMxTypes) {
    SCOPED_TRACE(isa::dtype_name(dt));
    const auto s = random_values(DataType::kFp32, size_t(k) * m, rng, 3.0f);
    const auto mv = random_values(DataType::kFp32, size_t(k) * n, rng, 3.0f);
    put(0, 0x0, DataType::kFp32, k, m, s);
    put(0, 0x100, DataType::kFp32, k, n, mv);
    const auto quantize = [&](uint32_t in, int f, uint32_t out, uint32_t scales) {
      Instruction q;
      q.op = Opcode::kQuantizeMx;
      q.vec.mx_dtype = dt;
      q.vec.partitions = uint16_t(k);
      q.vec.free = {uint16_t(f), 1};
      q.vec.out = opnd(MemSpace::kSbuf, DataType::kFp32, 0, out);
      q.vec.in0 = sbuf(DataType::kFp32, in, f);
      q.vec.scales = opnd(MemSpace::kSbuf, DataType::kFp32, 0, scales);
      return q;
    };
    Instruction ls;
    ls.op = Opcode::kLoadStationary;
    ls.te = {dt, false, 0x400, 0, uint16_t(k), uint16_t(m)};
    ls.te.scale_addr = 0x500;
    Instruction mm;
    mm.op = Opcode::kMultiplyMoving;
    mm.te = {dt, false, 0x600, 0x0, uint16_t(k), uint16_t(n)};
    mm.te.scale_addr = 0x700;
    Instruction sig, wait;
    sig.op = Opcode::kSemSignal;
    sig.sem = {5, 1};
    wait.op = Opcode::kSemWait;
    wait.sem = {5, 1};
    isa::Program p;
    p.queue(isa::Engine::kVec) = {quantize(0x0, m, 0x400, 0x500), quantize(0x100, n, 0x600, 0x700), sig,
                                  Instruction::halt()};
    p.queue(isa::Engine::kTe) = {wait, ls, mm, Instruction::halt()};
    drv_->load_program(p);
    drv_->run(10'000'000);
    ASSERT_EQ(dev_->read_reg(regs::STATUS) & regs::STATUS_ERROR_MASK, 0u) << dev_->fault_detail();
    const golden::MxTensor qs = golden::quantize_mx(dt, k, m, s), qm = golden::quantize_mx(dt, k, n, mv);
    const auto want = golden::gemm({dt, k, m, n, qs.elements, qm.elements, qs.scales, qm.scales}, kP);
    const auto got = get(MemSpace::kPsum, 0, 0x0, DataType::kFp32, m, n);
    for (size_t e = 0; e < got.size(); ++e) {
      ASSERT_EQ(hex(got[e]), hex(want[e])) << "O[" << e / n << "][" << e % n << "]";
    }
  }
}

// ---- cost model (docs/isa.md "Costs")

TEST_F(EngineTest, CyclesFollowTheDocumentedCostModel) {
  // Every instruction: 1 issue cycle. Vector: max(64, N) cycles at 0.96 GHz = x2.5 TE cycles (rounded up);
  // Scalar: max(64, N) (+64 with a sum) at 1.2 GHz = x2 TE cycles. N = elements per partition.
  const auto copy = [](int n0, int n1) {
    return vec(Opcode::kTensorCopy, kP, n0, n1, sbuf(DataType::kFp32, 0x8000, n0), sbuf(DataType::kFp32, 0, n0));
  };
  EXPECT_EQ(run_vec({copy(10, 1)}).cycles, 2u + 160u) << "64 Vector cycles";
  EXPECT_EQ(run_vec({copy(1000, 1)}).cycles, 2u + 2500u);
  EXPECT_EQ(run_vec({copy(33, 3)}).cycles, 2u + 248u) << "99 Vector cycles = 247.5 TE cycles, rounded up";
  EXPECT_EQ(run_vec({copy(100, 1), copy(100, 1)}).cycles, 3u + 2 * 250u);
  Instruction tp = vec(Opcode::kTranspose, 16, 8, 1, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x8000, 1, 0),
                       sbuf(DataType::kFp32, 0, 8));
  EXPECT_EQ(run_vec({tp}).cycles, 2u + 160u) << "transpose N = P = 16 -> the 64-cycle minimum";
  Instruction act = activation(ActFunc::kExp, kP, 1000, 1, sbuf(DataType::kFp32, 0x8000, 1000),
                               sbuf(DataType::kFp32, 0, 1000));
  EXPECT_EQ(run_act({act}).cycles, 2u + 2000u);
  act.act.reduce = true;
  act.act.sum = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x10000, 0, 0);
  EXPECT_EQ(run_act({act}).cycles, 2u + 2128u);
  EXPECT_EQ(run_act({activation(ActFunc::kExp, kP, 4, 1, sbuf(DataType::kFp32, 0x8000, 4),
                                sbuf(DataType::kFp32, 0, 4))})
                .cycles,
            2u + 128u);
}

TEST_F(EngineTest, VectorAndScalarQueuesRunConcurrently) {
  // Two independent streams: the run takes as long as the longer one, not their sum.
  std::vector<Instruction> v, a;
  for (int i = 0; i < 4; ++i) {
    v.push_back(vec(Opcode::kTensorCopy, kP, 1000, 1, sbuf(DataType::kFp32, 0x8000, 1000),
                    sbuf(DataType::kFp32, 0, 1000)));
    a.push_back(activation(ActFunc::kTanh, kP, 1000, 1, sbuf(DataType::kFp32, 0x10000, 1000),
                           sbuf(DataType::kFp32, 0, 1000)));
  }
  v.push_back(Instruction::halt());
  a.push_back(Instruction::halt());
  isa::Program p;
  p.queue(isa::Engine::kVec) = v;
  p.queue(isa::Engine::kAct) = a;
  drv_->load_program(p);
  const auto r = drv_->run(10'000'000);
  EXPECT_EQ(r.cycles, 5u + 4 * 2500u) << "the Vector stream (10,005 cycles) is the longer";
  EXPECT_EQ(r.retired[size_t(isa::Engine::kVec)], 5u);
  EXPECT_EQ(r.retired[size_t(isa::Engine::kAct)], 5u);
}

// ---- wrong programs

struct FaultCase {
  const char* name;
  isa::Engine queue;
  std::vector<std::array<uint8_t, isa::kInstrBytes>> program;
  uint32_t code;
  uint32_t index;
  const char* field;
};

std::array<uint8_t, isa::kInstrBytes> enc(const Instruction& i) { return isa::encode(i); }

std::vector<FaultCase> fault_cases() {
  const auto cfg = model::chip_config("tiny");
  const auto halt = enc(Instruction::halt());
  const auto nop = enc(Instruction::nop());
  const auto copy = [](const isa::Operand& out, const isa::Operand& in, int parts = 1, int n0 = 4, int n1 = 1) {
    return vec(Opcode::kTensorCopy, parts, n0, n1, out, in);
  };
  const isa::Operand ok = sbuf(DataType::kFp32, 0, 4);
  // The quadrant rule: 1 partition starting at partition 1 (must start at a multiple of 32).
  const auto misaligned = enc(copy(opnd(MemSpace::kSbuf, DataType::kFp32, 1, 0), ok));
  const auto misaligned_in = enc(copy(ok, opnd(MemSpace::kSbuf, DataType::kFp32, 8, 0)));
  Instruction act_bias = activation(ActFunc::kExp, 1, 4, 1, ok, ok);
  act_bias.act.bias_tensor = true;
  act_bias.act.bias_ap = opnd(MemSpace::kSbuf, DataType::kFp32, 3, 0x100);
  Instruction act_sum = activation(ActFunc::kExp, 4, 4, 1, ok, ok);
  act_sum.act.reduce = true;
  act_sum.act.sum = opnd(MemSpace::kPsum, DataType::kFp32, 0, cfg.psum_partition_bytes);
  // Accumulate (flags bit 0) on a Vector / Scalar instruction.
  auto acc_vec = enc(copy(ok, ok));
  acc_vec[1] |= 1;
  auto acc_act = enc(activation(ActFunc::kRelu, 1, 4, 1, ok, ok));
  acc_act[1] |= 1;
  auto hbm = enc(copy(ok, ok));
  hbm[24] = 0;  // in0 space hbm
  Instruction tt = vec(Opcode::kTensorTensor, 2, 4, 1, ok, ok, opnd(MemSpace::kPsum, DataType::kFp32, 0, 16376));
  tt.vec.op = AluOp::kAdd;
  // A transpose's out has free[0] partitions: 20 of a 16-partition SBUF.
  Instruction tp = vec(Opcode::kTranspose, 4, 20, 1, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0, 1, 0), ok);
  // A broadcast output of 65535 x 65535 elements per partition: more than an SBUF partition's bytes.
  Instruction huge = vec(Opcode::kMemset, 1, 65535, 65535, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0, 0, 0));
  return {
      {"misaligned_out", isa::Engine::kVec, {nop, misaligned, halt}, regs::ERR_PARTITION_ALIGN, 1, "out_partition"},
      {"misaligned_in0", isa::Engine::kVec, {misaligned_in, halt}, regs::ERR_PARTITION_ALIGN, 0, "in0_partition"},
      {"misaligned_bias", isa::Engine::kAct, {nop, nop, enc(act_bias), halt}, regs::ERR_PARTITION_ALIGN, 2,
       "bias_partition"},
      {"accumulate_vec", isa::Engine::kVec, {nop, acc_vec, halt}, regs::ERR_BAD_FIELD, 1, "flags"},
      {"accumulate_act", isa::Engine::kAct, {acc_act, halt}, regs::ERR_BAD_FIELD, 0, "flags"},
      {"partitions_past_sbuf", isa::Engine::kVec, {enc(copy(ok, ok, 17)), halt}, regs::ERR_SBUF_RANGE, 0,
       "out_partition"},
      {"offset_past_partition", isa::Engine::kVec,
       {enc(copy(ok, sbuf(DataType::kFp32, cfg.sbuf_partition_bytes - 8, 4))), halt}, regs::ERR_SBUF_RANGE, 0,
       "in0_offset"},
      {"stride_below_zero", isa::Engine::kVec,
       {enc(copy(opnd(MemSpace::kSbuf, DataType::kBf16, 0, 4, -1, 0), ok)), halt}, regs::ERR_SBUF_RANGE, 0,
       "out_offset"},
      {"psum_in1_range", isa::Engine::kVec, {enc(tt), halt}, regs::ERR_PSUM_RANGE, 0, "in1_offset"},
      {"sum_past_psum", isa::Engine::kAct, {enc(act_sum), halt}, regs::ERR_PSUM_RANGE, 0, "sum_offset"},
      {"hbm_operand", isa::Engine::kVec, {hbm, halt}, regs::ERR_BAD_FIELD, 0, "in0_space"},
      {"transpose_out_partitions", isa::Engine::kVec, {enc(tp), halt}, regs::ERR_SBUF_RANGE, 0, "out_partition"},
      {"too_many_elements", isa::Engine::kVec, {enc(huge), halt}, regs::ERR_BAD_FIELD, 0, "free"},
      {"activation_on_vec", isa::Engine::kVec, {enc(activation(ActFunc::kExp, 1, 4, 1, ok, ok)), halt},
       regs::ERR_WRONG_ENGINE, 0, "opcode"},
      {"vector_op_on_act", isa::Engine::kAct, {nop, enc(copy(ok, ok)), halt}, regs::ERR_WRONG_ENGINE, 1, "opcode"},
      {"psum_copy_on_vec", isa::Engine::kVec,
       {enc([] {
          Instruction i;
          i.op = Opcode::kPsumCopy;
          i.copy.src_space = MemSpace::kPsum;
          i.copy.dst_space = MemSpace::kSbuf;
          return i;
        }()),
        halt},
       regs::ERR_WRONG_ENGINE, 0, "opcode"},
  };
}

class EngineFaultTest : public EngineTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(EngineFaultTest, StopsTheDeviceNamingQueueIndexAndField) {
  const FaultCase& c = GetParam();
  expect_fault(c.queue, c.program, c.code, c.index, c.field);
}

INSTANTIATE_TEST_SUITE_P(WrongPrograms, EngineFaultTest, ::testing::ValuesIn(fault_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(EngineTest, DriverReportsAMisalignedPartitionAsADeviceFault) {
  isa::Program p;
  p.queue(isa::Engine::kVec) = {Instruction::nop(),
                                vec(Opcode::kTensorCopy, 2, 4, 1, sbuf(DataType::kFp32, 0, 4),
                                    opnd(MemSpace::kSbuf, DataType::kFp32, 4, 0)),
                                Instruction::halt()};
  drv_->load_program(p);
  try {
    drv_->run(1'000'000);
    FAIL() << "expected a DeviceFault";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.code(), regs::ERR_PARTITION_ALIGN);
    EXPECT_EQ(e.queue(), uint32_t(isa::Engine::kVec));
    EXPECT_EQ(e.index(), 1u);
    EXPECT_EQ(isa::field_name(int(e.info())), "in0_partition");
    const std::string what = e.what();
    EXPECT_NE(what.find("partition_align"), std::string::npos) << what;
    EXPECT_NE(what.find("queue vec, instruction 1, field in0_partition"), std::string::npos) << what;
    EXPECT_NE(e.instruction().find("tensor_copy"), std::string::npos) << e.instruction();
  }
}

}  // namespace
}  // namespace trnsim::test
