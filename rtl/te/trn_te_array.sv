// trn_te_array: ROWS x COLS grid of trn_te_pe, weight-stationary, built from ROWS trn_te_row (COLS PEs each).
//
// PE row r holds partition r of the stationary tile, or with FP8 operands partitions 2r and 2r + 1 (double-row,
// BRIEF section 3 rule 8: one pass contracts 2 * ROWS partitions); column c holds stationary column c (output row
// m = c).
// Moving values enter at the left edge (one per row, already skewed: row r is r cycles later than row 0) and flow
// right; partial sums start at +0.0 above row 0 and flow down; column c's sum leaves the bottom row, c cycles later
// than column 0. Dataflow: H. T. Kung, "Why systolic architectures?", IEEE Computer 15(1), 1982; the weight-
// stationary form as in SCALE-Sim (Samajdar et al., arXiv:1811.02883).
module trn_te_array #(
  parameter int unsigned ROWS = 16,
  parameter int unsigned COLS = 16
) (
  input  logic                      clk_i,
  input  logic                      en_i,       // pipeline advance for every PE (global stall when 0)
  input  logic [ROWS-1:0]           act0_i,     // per PE row, as loaded: its first partition is active (partition < K)
  input  logic [ROWS-1:0]           act1_i,     // per PE row: its second partition is active (FP8 only)
  input  logic [ROWS-1:0]           w_we_i,     // write the stationary rows w0_i, w1_i into PE row r's shadow registers
  input  logic [COLS-1:0][31:0]     w0_i,       // widened stationary row of the first partition (FP32 per column)
  input  logic [COLS-1:0][31:0]     w1_i,       // widened stationary row of the second partition (0 unless FP8)
  input  logic [COLS-1:0][7:0]      ws_i,       // E8M0 scales of the stationary row (MX; 127 otherwise)
  input  logic [ROWS-1:0][31:0]     mov0_i,     // skewed, widened moving values, first partition of each PE row
  input  logic [ROWS-1:0][31:0]     mov1_i,     // the same, second partition (0 unless FP8)
  input  logic [ROWS-1:0][7:0]      ms_i,       // skewed E8M0 scales of the moving values (MX; 127 otherwise)
  input  logic [ROWS-1:0]           sw_i,       // skewed swap flags (the first column after a LoadStationary)
  output logic [COLS-1:0][31:0]     psum_o      // column sums from the bottom row (column c lags column 0 by c)
);

  // psum[r] enters PE row r from above; psum[ROWS] leaves the bottom row.
  logic [COLS-1:0][31:0] psum [ROWS+1];

  assign psum[0] = '0;  // every column sum starts at +0.0 (numerics rule 3)

  for (genvar r = 0; r < ROWS; r++) begin : g_row
    trn_te_row #(.COLS(COLS)) u_row (
      .clk_i  (clk_i),
      .en_i   (en_i),
      .act0_i (act0_i[r]),
      .act1_i (act1_i[r]),
      .w_we_i (w_we_i[r]),
      .w0_i   (w0_i),
      .w1_i   (w1_i),
      .ws_i   (ws_i),
      .mov0_i (mov0_i[r]),
      .mov1_i (mov1_i[r]),
      .ms_i   (ms_i[r]),
      .sw_i   (sw_i[r]),
      .psum_i (psum[r]),
      .psum_o (psum[r+1])
    );
  end

  assign psum_o = psum[ROWS];

endmodule
