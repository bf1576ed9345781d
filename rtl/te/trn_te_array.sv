// trn_te_array: ROWS x COLS grid of trn_te_pe, weight-stationary.
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

  // mov[r][c] enters PE (r, c) from the left; psum[r][c] enters PE (r, c) from above.
  logic [31:0] mov  [ROWS][COLS+1];
  logic [31:0] psum [ROWS+1][COLS];

  for (genvar r = 0; r < ROWS; r++) begin : g_row
    assign mov[r][0] = mov_i[r];
    for (genvar c = 0; c < COLS; c++) begin : g_col
      trn_te_pe u_pe (
        .clk_i  (clk_i),
        .en_i   (en_i),
        .act_i  (act_i[r]),
        .w_we_i (w_we_i[r]),
        .w_i    (w_i[c]),
        .mov_i  (mov[r][c]),
        .psum_i (psum[r][c]),
        .mov_o  (mov[r][c+1]),
        .psum_o (psum[r+1][c])
      );
    end
  end

  for (genvar c = 0; c < COLS; c++) begin : g_edge
    assign psum[0][c] = 32'h0000_0000;  // every column sum starts at +0.0 (numerics rule 3)
    assign psum_o[c]  = psum[ROWS][c];
  end

  // The right-most column's moving outputs leave the array unused.
  logic [ROWS-1:0] unused_mov_last;
  for (genvar r = 0; r < ROWS; r++) begin : g_unused
    assign unused_mov_last[r] = ^mov[r][COLS];
  end

endmodule
