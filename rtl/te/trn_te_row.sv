// trn_te_row: one partition row of the weight-stationary systolic array, COLS trn_te_pe chained left to right.
//
// The row's moving value enters PE 0 from the left (already skewed for this partition) and moves one PE to the right
// per enabled cycle; the partial sums of all COLS columns enter from the row above and leave, one PE stage later,
// towards the row below. A PE row holds one partition, or two with FP8 operands (double-row, BRIEF section 3 rule
// 8): each has its own moving value, stationary row and active flag, shared by every PE of the row; PE c takes
// column c of the widened stationary rows.
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
  input  logic                  act0_i,   // loaded activity: this row's first partition is in the contraction (k < K)
  input  logic                  act1_i,   // loaded activity: its second partition is (FP8 double-row only)
  input  logic                  w_we_i,   // write the stationary rows w0_i, w1_i into this PE row's shadow registers
  input  logic [COLS-1:0][31:0] w0_i,     // widened stationary row of the first partition (FP32 per column)
  input  logic [COLS-1:0][31:0] w1_i,     // widened stationary row of the second partition (0 unless FP8)
  input  logic [COLS-1:0][7:0]  ws_i,     // E8M0 scales of the stationary row (MX; 127 otherwise)
  input  logic [31:0]           mov0_i,   // skewed, widened moving value of the first partition
  input  logic [31:0]           mov1_i,   // skewed, widened moving value of the second partition (0 unless FP8)
  input  logic [7:0]            ms_i,     // skewed E8M0 scale of the moving values (MX; 127 otherwise)
  input  logic                  sw_i,     // skewed swap flag: the first column after a LoadStationary
  input  logic [COLS-1:0][31:0] psum_i,   // partial column sums from the row above
  output logic [COLS-1:0][31:0] psum_o    // partial column sums to the row below (registered in the PEs)
);

  // mov0[c], mov1[c] enter PE c from the left; index COLS leaves the right-most PE unused.
  logic [31:0] mov0 [COLS+1];
  logic [31:0] mov1 [COLS+1];
  logic [7:0]  ms [COLS+1];
  logic        sw [COLS+1];

  assign mov0[0] = mov0_i;
  assign mov1[0] = mov1_i;
  assign ms[0]   = ms_i;
  assign sw[0]   = sw_i;

  for (genvar c = 0; c < COLS; c++) begin : g_col
    trn_te_pe u_pe (
      .clk_i  (clk_i),
      .en_i   (en_i),
      .act0_i (act0_i),
      .act1_i (act1_i),
      .w_we_i (w_we_i),
      .w0_i   (w0_i[c]),
      .w1_i   (w1_i[c]),
      .ws_i   (ws_i[c]),
      .mov0_i (mov0[c]),
      .mov1_i (mov1[c]),
      .ms_i   (ms[c]),
      .sw_i   (sw[c]),
      .psum_i (psum_i[c]),
      .mov0_o (mov0[c+1]),
      .mov1_o (mov1[c+1]),
      .ms_o   (ms[c+1]),
      .sw_o   (sw[c+1]),
      .psum_o (psum_o[c])
    );
  end

  // The right-most PE's moving outputs leave the array unused.
  logic unused_mov_last;
  assign unused_mov_last = ^{mov0[COLS], mov1[COLS], ms[COLS], sw[COLS]};

endmodule
