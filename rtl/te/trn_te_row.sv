// trn_te_row: one partition row of the weight-stationary systolic array, COLS trn_te_pe chained left to right.
//
// The row's moving value enters PE 0 from the left (already skewed for this partition) and moves one PE to the right
// per enabled cycle; the partial sums of all COLS columns enter from the row above and leave, one PE stage later,
// towards the row below. Every PE of the row shares the partition's active flag and stationary write enable; PE c
// takes column c of the widened stationary row.
//
// This module is the unit of hierarchical verilation for the large engines (rtl/te/trn_te_hier.vlt marks it as a
// hierarchy block): Verilator then builds one row model per COLS value and the array instantiates it ROWS times,
// instead of cloning ROWS x COLS PEs into one flat netlist (docs/performance.md). Only whole-vector ports cross the
// row boundary, as hierarchy blocks require.
module trn_te_row #(
  parameter int unsigned COLS = 16
) (
  input  logic                  clk_i,
  input  logic                  en_i,     // pipeline advance for every PE (global stall when 0)
  input  logic                  act_i,    // this partition is part of the contraction (k < K)
  input  logic                  w_we_i,   // write the stationary row w_i into this partition
  input  logic [COLS-1:0][31:0] w_i,      // one widened stationary row (FP32 per column)
  input  logic [31:0]           mov_i,    // skewed, widened moving value of this partition
  input  logic [COLS-1:0][31:0] psum_i,   // partial column sums from the row above
  output logic [COLS-1:0][31:0] psum_o    // partial column sums to the row below (registered in the PEs)
);

  // mov[c] enters PE c from the left; mov[COLS] leaves the right-most PE unused.
  logic [31:0] mov [COLS+1];

  assign mov[0] = mov_i;

  for (genvar c = 0; c < COLS; c++) begin : g_col
    trn_te_pe u_pe (
      .clk_i  (clk_i),
      .en_i   (en_i),
      .act_i  (act_i),
      .w_we_i (w_we_i),
      .w_i    (w_i[c]),
      .mov_i  (mov[c]),
      .psum_i (psum_i[c]),
      .mov_o  (mov[c+1]),
      .psum_o (psum_o[c])
    );
  end

  // The right-most PE's moving output leaves the array unused.
  logic unused_mov_last;
  assign unused_mov_last = ^mov[COLS];

endmodule
