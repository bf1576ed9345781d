// trn_te_array: ROWS x COLS grid of trn_te_pe, weight-stationary, built from ROWS trn_te_row (COLS PEs each).
//
// Row r holds partition r of the stationary tile; column c holds stationary column c (output row m = c).
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
  input  logic [ROWS-1:0]           act_i,      // per-partition active flag (partition < K)
  input  logic [ROWS-1:0]           w_we_i,     // write the stationary row w_i into partition r
  input  logic [COLS-1:0][31:0]     w_i,        // one widened stationary row (FP32 per column)
  input  logic [ROWS-1:0][31:0]     mov_i,      // skewed, widened moving values, one per partition
  output logic [COLS-1:0][31:0]     psum_o      // column sums from the bottom row (column c lags column 0 by c)
);

  // psum[r] enters partition row r from above; psum[ROWS] leaves the bottom row.
  logic [COLS-1:0][31:0] psum [ROWS+1];

  assign psum[0] = '0;  // every column sum starts at +0.0 (numerics rule 3)

  for (genvar r = 0; r < ROWS; r++) begin : g_row
    trn_te_row #(.COLS(COLS)) u_row (
      .clk_i  (clk_i),
      .en_i   (en_i),
      .act_i  (act_i[r]),
      .w_we_i (w_we_i[r]),
      .w_i    (w_i),
      .mov_i  (mov_i[r]),
      .psum_i (psum[r]),
      .psum_o (psum[r+1])
    );
  end

  assign psum_o = psum[ROWS];

endmodule
