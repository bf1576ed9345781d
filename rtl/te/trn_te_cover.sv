// trn_te_cover: functional cover points of the Tensor Engine (rtl/te/trn_te.sv), bound into every trn_te instance
// in coverage builds only (-DTRNSIM_COVERAGE=ON, `make coverage`; the bind statement is at the end of this file).
// Each `cover property` is one functional point of docs/verification.md ("Functional cover points"); the per-block
// summary of `make coverage` lists the ones never hit. The engine's signals are read, never driven.
//
// Partial tiles: K, the contraction size of one pass, is partial when a LoadStationary loads fewer than ROWS
// partitions (FP8: 2 * ROWS, double-row); M, the stationary free size, when the last array column is all zero in every row of a load (the
// padding TeRtl::matmul writes for M < COLS); N, the moving free size, when a MultiplyMoving streams fewer than NMAX
// columns (a full one: exactly NMAX, one whole PSUM bank).
//
// Accumulate: the PSUM write-back mode of a MultiplyMoving (cmd_acc_i: add to PSUM or overwrite). K-tiling, a
// contraction longer than ROWS, writes the first K tile's sums (accumulate off) and adds the later tiles' sums
// (accumulate on); c_mult_acc_after_off is that step on one stationary: an accumulate-on MultiplyMoving taken
// directly after an accumulate-off one, with no LoadStationary between them.
module trn_te_cover
  import trn_fp_pkg::*;
  import trn_te_pkg::*;
#(
  parameter int unsigned ROWS = 16
) (
  input logic                      clk_i,
  input logic                      rst_ni,
  input logic                      cmd_hs,
  input logic                      cmd_illegal,
  input te_op_e                    cmd_op_i,
  input logic [2:0]                cmd_dtype_i,
  input logic [$clog2(2*ROWS+1)-1:0] cmd_k_i,
  input logic [N_W-1:0]            cmd_n_i,
  input logic                      cmd_acc_i,
  input logic                      stat_hs,
  input logic                      in_flight,       // result columns are in the pipeline
  input logic                      streaming,       // a MultiplyMoving's columns are being taken
  input logic                      swapping,        // a weight swap flag is inside the array
  input logic [15:0]               stat_last_col,   // stat_data_i[COLS-1]
  input logic [N_W-1:0]            count_q,
  input logic [$clog2(2*ROWS+1)-1:0] stat_beats,  // beats of the load being taken: ceil(K / P)
  input logic                      out_valid_o,
  input logic                      out_ready_i,
  input logic                      out_last_o
);

  logic cmd_ok, load, mult;
  assign cmd_ok = cmd_hs && !cmd_illegal;
  assign load   = cmd_ok && cmd_op_i == OP_LOAD_STATIONARY;
  assign mult   = cmd_ok && cmd_op_i == OP_MULTIPLY_MOVING;

  // Output backpressure: out_valid_o held with out_ready_i low for a second cycle in a row.
  logic stall_q;
  // M padding: the last column was zero in every stationary row taken so far in this load.
  logic m_pad_q;
  logic last_stat_beat;
  // The last command taken was a MultiplyMoving with accumulate off.
  logic mult_off_q;
  assign last_stat_beat = stat_hs && (count_q + 1'b1 == N_W'(stat_beats));
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      stall_q    <= 1'b0;
      m_pad_q    <= 1'b1;
      mult_off_q <= 1'b0;
    end else begin
      stall_q <= out_valid_o && !out_ready_i;
      if (cmd_ok) mult_off_q <= mult && !cmd_acc_i;
      if (stat_hs) m_pad_q <= (count_q == '0 || m_pad_q) && stat_last_col == '0;
    end
  end

  // Each dtype, on each command kind.
  c_load_bf16:     cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_BF16);
  c_load_fp16:     cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_FP16);
  c_load_fp8e4m3:  cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_FP8E4M3);
  c_load_fp8e5m2:  cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_FP8E5M2);
  c_mult_bf16:     cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_BF16);
  c_mult_fp16:     cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_FP16);
  c_mult_fp8e4m3:  cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_FP8E4M3);
  c_mult_fp8e5m2:  cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_FP8E5M2);
  // MX (rule 10): each type on each command kind.
  c_load_mxfp8e4m3: cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_MXFP8E4M3);
  c_load_mxfp8e5m2: cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_MXFP8E5M2);
  c_load_mxfp4:     cover property (@(posedge clk_i) disable iff (!rst_ni) load && cmd_dtype_i == DT_MXFP4);
  c_mult_mxfp8e4m3: cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_MXFP8E4M3);
  c_mult_mxfp8e5m2: cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_MXFP8E5M2);
  c_mult_mxfp4:     cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_dtype_i == DT_MXFP4);
  // Tiles: K partial and full, M partial, N partial and full.
  logic [31:0] k_max;  // partitions one pass of this dtype contracts: ROWS, or 2 * ROWS for FP8 (rule 8)
  logic        dbl;    // the command's dtype pairs two partitions per PE row
  assign k_max = ROWS * 32'(dtype_pe_partitions(cmd_dtype_i));
  assign dbl   = dtype_pe_partitions(cmd_dtype_i) == 2'd2;
  c_k_partial:     cover property (@(posedge clk_i) disable iff (!rst_ni) load && 32'(cmd_k_i) < k_max);
  c_k_full:        cover property (@(posedge clk_i) disable iff (!rst_ni) load && 32'(cmd_k_i) == k_max);
  // FP8 double-row: a pass longer than ROWS (every PE row contracts two partitions), and an odd K (the last PE
  // row's second partition inactive).
  c_k_double_row:  cover property (@(posedge clk_i) disable iff (!rst_ni) load && dbl && 32'(cmd_k_i) > ROWS);
  c_k_double_odd:  cover property (@(posedge clk_i) disable iff (!rst_ni) load && dbl && cmd_k_i[0]);
  c_m_partial:     cover property (@(posedge clk_i) disable iff (!rst_ni)
                       last_stat_beat && (count_q == '0 || m_pad_q) && stat_last_col == '0);
  c_n_partial:     cover property (@(posedge clk_i) disable iff (!rst_ni) mult && 32'(cmd_n_i) < NMAX);
  c_n_full:        cover property (@(posedge clk_i) disable iff (!rst_ni) mult && 32'(cmd_n_i) == NMAX);
  c_n_one:         cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_n_i == N_W'(1));
  // PSUM write-back mode: accumulate on, off, and on directly after off with the same stationary (K-tiling).
  c_mult_acc_on:   cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_acc_i);
  c_mult_acc_off:  cover property (@(posedge clk_i) disable iff (!rst_ni) mult && !cmd_acc_i);
  c_mult_acc_after_off: cover property (@(posedge clk_i) disable iff (!rst_ni) mult && cmd_acc_i && mult_off_q);
  // Flow: result backpressure held >= 2 cycles, and on the last beat of a command; an illegal command dropped.
  c_out_stall_2:   cover property (@(posedge clk_i) disable iff (!rst_ni) stall_q && out_valid_o && !out_ready_i);
  c_out_stall_last: cover property (@(posedge clk_i) disable iff (!rst_ni)
                       stall_q && out_valid_o && !out_ready_i && out_last_o);
  c_cmd_illegal:   cover property (@(posedge clk_i) disable iff (!rst_ni) cmd_hs && cmd_illegal);
  // Shadow weights: a stationary beat taken while an earlier MultiplyMoving's columns are still in the pipeline.
  c_load_in_flight: cover property (@(posedge clk_i) disable iff (!rst_ni) stat_hs && in_flight);
  // ... and while an earlier MultiplyMoving still streams its columns (the two sequencers at once).
  c_load_streaming: cover property (@(posedge clk_i) disable iff (!rst_ni) stat_hs && streaming);
  // ... and while the swap of the previous weights is still inside the array, in the PE rows past the one written.
  c_load_behind_swap: cover property (@(posedge clk_i) disable iff (!rst_ni) stat_hs && swapping);

endmodule

bind trn_te trn_te_cover #(.ROWS(ROWS)) u_cover (
  .clk_i         (clk_i),
  .rst_ni        (rst_ni),
  .cmd_hs        (cmd_hs),
  .cmd_illegal   (cmd_illegal),
  .cmd_op_i      (cmd_op_i),
  .cmd_dtype_i   (cmd_dtype_i),
  .cmd_k_i       (cmd_k_i),
  .cmd_n_i       (cmd_n_i),
  .cmd_acc_i     (cmd_acc_i),
  .stat_hs       (stat_hs),
  .in_flight     (inflight_q != '0),
  .streaming     (mv_busy_q),
  .swapping      (swap_q != '0),
  .stat_last_col (stat_data_i[COLS-1]),
  .count_q       (ld_count_q),
  .stat_beats    (stat_beats),
  .out_valid_o   (out_valid_o),
  .out_ready_i   (out_ready_i),
  .out_last_o    (out_last_o)
);
