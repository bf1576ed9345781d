// trn_fp_widen: narrow floating-point element -> FP32, exact (numerics contract, BRIEF section 3 rule 1).
//
// Purely combinational. Every narrow format here has fewer exponent and significand bits than FP32, so each
// finite value has an exact FP32 encoding:
//   - BF16 is the upper half of an FP32 word; its subnormals stay FP32 subnormals.
//   - FP16, FP8 E4M3 and FP8 E5M2 subnormals become normal FP32 numbers (shifted left until the leading one
//     becomes the hidden bit, exponent lowered by the shift).
//   - Signed zero and +-Inf are kept. E4M3 has no Inf: S.1111.111 is NaN, every other S.1111.xxx is finite.
//   - The MX types convert their element formats: MXFP8 as FP8, MXFP4 as FP4 E2M1 (pattern in bits [3:0]; its
//     subnormal 0.5 becomes a normal FP32 number).
//   - Any NaN, and any illegal dtype code (4), gives the canonical quiet NaN 32'h7FC0_0000.
module trn_fp_widen (
  input  logic [2:0]  dtype_i,  // trn_fp_pkg::dtype_e code
  input  logic [15:0] data_i,   // narrow pattern; FP8 in bits [7:0], FP4 in bits [3:0]
  output logic [31:0] f32_o     // exact FP32 value; NaN -> 32'h7FC0_0000
);
  import trn_fp_pkg::*;

  // Unpacked fields, format independent: the exponent field zero-extended to 8 bits, the mantissa field
  // left-aligned in 23 bits (so it is already the FP32 mantissa of a normal number), and the exponent offset
  // 127 - bias that rebiases a normal exponent to FP32.
  logic        sign;
  logic [7:0]  exp_f;
  logic [22:0] man_al;
  logic [7:0]  exp_adj;
  logic        is_nan;
  logic        is_inf;
  logic        sub_norm;  // subnormals become normal FP32 numbers (all formats but BF16)

  // Field decode per format.
  always_comb begin
    sign     = 1'b0;
    exp_f    = '0;
    man_al   = '0;
    exp_adj  = '0;
    is_nan   = 1'b0;
    is_inf   = 1'b0;
    sub_norm = 1'b1;
    unique case (dtype_i)
      DT_BF16: begin
        sign     = data_i[15];
        exp_f    = data_i[14:7];
        man_al   = {data_i[6:0], 16'd0};
        exp_adj  = 8'd0;
        is_nan   = (&data_i[14:7]) && (data_i[6:0] != '0);
        is_inf   = (&data_i[14:7]) && (data_i[6:0] == '0);
        sub_norm = 1'b0;
      end
      DT_FP16: begin
        sign    = data_i[15];
        exp_f   = {3'd0, data_i[14:10]};
        man_al  = {data_i[9:0], 13'd0};
        exp_adj = 8'd112;
        is_nan  = (&data_i[14:10]) && (data_i[9:0] != '0);
        is_inf  = (&data_i[14:10]) && (data_i[9:0] == '0);
      end
      DT_FP8E4M3, DT_MXFP8E4M3: begin  // an MX type converts its element format
        sign    = data_i[7];
        exp_f   = {4'd0, data_i[6:3]};
        man_al  = {data_i[2:0], 20'd0};
        exp_adj = 8'd120;
        is_nan  = &data_i[6:0];
      end
      DT_FP8E5M2, DT_MXFP8E5M2: begin
        sign    = data_i[7];
        exp_f   = {3'd0, data_i[6:2]};
        man_al  = {data_i[1:0], 21'd0};
        exp_adj = 8'd112;
        is_nan  = (&data_i[6:2]) && (data_i[1:0] != '0);
        is_inf  = (&data_i[6:2]) && (data_i[1:0] == '0);
      end
      DT_MXFP4: begin  // E2M1 (OCP MX v1.0 section 5.3.3): bias 1, no Inf, no NaN; the code in bits [3:0]
        sign    = data_i[3];
        exp_f   = {6'd0, data_i[2:1]};
        man_al  = {data_i[0], 22'd0};
        exp_adj = 8'd126;
      end
      default: begin
        // Illegal dtype code: no value to convert.
        is_nan = 1'b1;
      end
    endcase
  end

  // Subnormal normalisation: count the zeros above the leading one of the aligned mantissa, shift the leading
  // one out (it becomes the hidden bit) and lower the exponent by the same amount.
  logic [4:0]  sub_lz;
  logic [22:0] sub_man;
  logic [7:0]  sub_exp;

  always_comb begin
    sub_lz  = lzc32({man_al, 9'd0});
    sub_man = man_al << (sub_lz + 5'd1);
    sub_exp = exp_adj - {3'd0, sub_lz};
  end

  // Result select.
  always_comb begin
    if (is_nan) begin
      f32_o = F32_QNAN;
    end else if (is_inf) begin
      f32_o = {sign, 8'hFF, 23'd0};
    end else if (exp_f != '0) begin
      f32_o = {sign, exp_f + exp_adj, man_al};
    end else if (man_al == '0) begin
      f32_o = {sign, 31'd0};
    end else if (sub_norm) begin
      f32_o = {sign, sub_exp, sub_man};
    end else begin
      f32_o = {sign, 8'd0, man_al};
    end
  end

endmodule
