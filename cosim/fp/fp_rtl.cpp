// FpRtl: drives the verilated `trn_fp_units` top. The design is purely combinational, so every call sets the
// input ports of one unit, evaluates the model and reads that unit's output; no clock and no time advance.
#include "cosim/fp/fp_rtl.h"

#include "cosim/rtl_coverage.h"
#include "Vtrn_fp_units.h"  // system header via trn_rtl: Verilator's headers are not held to our warnings
#include "verilated.h"

namespace trnsim::cosim {

struct FpRtl::Impl {
  // The context owns the simulation state (time, finish flag, assertion settings) of this model only, so several
  // FpRtl objects (or an FpRtl next to other verilated models) do not share anything.
  VerilatedContext ctx;
  Vtrn_fp_units model;

  Impl() : ctx(), model(&ctx, "trn_fp_units") {}
  ~Impl() {
    model.final();
    write_rtl_coverage(ctx, "fp");  // coverage builds only
  }
};

FpRtl::FpRtl() : impl_(std::make_unique<Impl>()) {}

FpRtl::~FpRtl() = default;

uint32_t FpRtl::widen(isa::Dtype dt, uint16_t bits) {
  Vtrn_fp_units& m = impl_->model;
  m.widen_dtype_i = static_cast<uint8_t>(dt);
  m.widen_data_i = bits;
  m.eval();
  return m.widen_f32_o;
}

uint16_t FpRtl::narrow(isa::Dtype dt, uint32_t f32, bool saturate) {
  Vtrn_fp_units& m = impl_->model;
  m.narrow_dtype_i = static_cast<uint8_t>(dt);
  m.narrow_sat_i = saturate ? 1 : 0;
  m.narrow_sr_i = 0;
  m.narrow_f32_i = f32;
  m.eval();
  return m.narrow_data_o;
}

uint16_t FpRtl::narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint32_t seed, uint64_t key) {
  Vtrn_fp_units& m = impl_->model;
  m.narrow_dtype_i = static_cast<uint8_t>(dt);
  m.narrow_sat_i = saturate ? 1 : 0;
  m.narrow_sr_i = 1;
  m.sr_seed_i = seed;
  m.sr_key_i = key;
  m.narrow_f32_i = f32;
  m.eval();
  return m.narrow_data_o;
}

uint32_t FpRtl::add(uint32_t a, uint32_t b) {
  Vtrn_fp_units& m = impl_->model;
  m.a_i = a;
  m.b_i = b;
  m.eval();
  return m.sum_o;
}

uint32_t FpRtl::mul(uint32_t a, uint32_t b) { return mul_scaled(a, b, 0); }

uint32_t FpRtl::mul_scaled(uint32_t a, uint32_t b, int scale) {
  Vtrn_fp_units& m = impl_->model;
  m.a_i = a;
  m.b_i = b;
  m.mul_scale_i = static_cast<uint16_t>(scale) & 0x3FFu;  // 10-bit two's complement
  m.eval();
  return m.prod_o;
}

}  // namespace trnsim::cosim
