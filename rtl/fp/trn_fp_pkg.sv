// trnsim floating-point package: data-type codes and format constants shared by the FP units and the
// Tensor Engine. The dtype codes are part of the ISA: the region marked GENERATED comes from spec/isa.json, like the
// C++ isa::DataType (spec/isa_spec.h).
package trn_fp_pkg;

  // ---- GENERATED from spec/isa.json by scripts/gen-isa.cmake (make isa-gen): do not edit this region
  // 3-bit dtype field: the narrow TE operand types (codes 0..3) and the MX types (dtype_legal),
  // whose element formats the FP units convert. Other codes are illegal and flagged by the units that decode them.
  typedef enum logic [2:0] {
    DT_BF16 = 3'd0,  // bfloat16: 1-8-7, bias 127
    DT_FP16 = 3'd1,  // IEEE 754 binary16: 1-5-10, bias 15
    DT_FP8E4M3 = 3'd2,  // OCP OFP8 E4M3: 1-4-3, bias 7, no Inf, NaN = S.1111.111, max 448
    DT_FP8E5M2 = 3'd3,  // OCP OFP8 E5M2: 1-5-2, bias 15, IEEE-style Inf/NaN, max 57344
    DT_MXFP8E4M3 = 3'd5,  // OCP MXFP8 E4M3: FP8 E4M3 elements (emax 8) in blocks of 32 partitions sharing an E8M0 scale
    DT_MXFP8E5M2 = 3'd6,  // OCP MXFP8 E5M2: FP8 E5M2 elements (emax 15) in blocks of 32 partitions sharing an E8M0 scale
    DT_MXFP4 = 3'd7   // OCP MXFP4: FP4 E2M1 elements (emax 2, one per byte in the low nibble) in blocks of 32 partitions sharing an E8M0 scale
  } dtype_e;
  // Random bits stochastic rounding compares with the discarded fraction (BRIEF section 3 rule 9) (C++ isa::kSrBits).
  localparam int unsigned SR_BITS = 16;
  // ---- END GENERATED

  // Canonical quiet NaN written for every NaN result (numerics contract, rule 5).
  localparam logic [31:0] F32_QNAN = 32'h7FC0_0000;

  // True for the MX (block-scaled) dtype codes (BRIEF section 3 rule 10).
  function automatic logic dtype_is_mx(logic [2:0] code);
    return code == DT_MXFP8E4M3 || code == DT_MXFP8E5M2 || code == DT_MXFP4;
  endfunction

  // True for the dtype codes the Tensor Engine implements: the narrow types and the MX types (not 4, fp32).
  function automatic logic dtype_legal(logic [2:0] code);
    return code <= 3'd3 || dtype_is_mx(code);
  endfunction

  // Leading-zero count of a 32-bit word, as a 5-stage binary search: each stage tests the upper part of what
  // is left and shifts it out when it is all zero. Shifts by {flag, zeros} and one flag variable per stage
  // keep the verilated code short and free of branches. Returns 31 for x == 0 (callers handle zero).
  function automatic logic [4:0] lzc32(logic [31:0] x);
    logic [31:0] v;
    logic        z16, z8, z4, z2, z1;
    v   = x;
    z16 = v[31:16] == '0;
    v   = v << {z16, 4'd0};
    z8  = v[31:24] == '0;
    v   = v << {z8, 3'd0};
    z4  = v[31:28] == '0;
    v   = v << {z4, 2'd0};
    z2  = v[31:30] == '0;
    v   = v << {z2, 1'd0};
    z1  = ~v[31];
    return {z16, z8, z4, z2, z1};
  endfunction

endpackage
