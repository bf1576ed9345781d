// trnsim floating-point package: data-type codes and format constants shared by the FP units and the
// Tensor Engine. The dtype codes are part of the ISA (firmware/isa/dtype.h); keep the two in step.
package trn_fp_pkg;

  // 3-bit dtype field; codes 4..7 are illegal and flagged by the units that decode them.
  typedef enum logic [2:0] {
    DT_BF16    = 3'd0,  // 1-8-7, bias 127
    DT_FP16    = 3'd1,  // 1-5-10, bias 15
    DT_FP8E4M3 = 3'd2,  // OCP OFP8 E4M3: 1-4-3, bias 7, no Inf, NaN = S.1111.111
    DT_FP8E5M2 = 3'd3   // OCP OFP8 E5M2: 1-5-2, bias 15, IEEE-style Inf/NaN
  } dtype_e;

  // Canonical quiet NaN written for every NaN result (numerics contract, rule 5).
  localparam logic [31:0] F32_QNAN = 32'h7FC0_0000;

  // True for the dtype codes the hardware implements.
  function automatic logic dtype_legal(logic [2:0] code);
    return code <= 3'd3;
  endfunction

endpackage
