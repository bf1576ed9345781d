// trn_te: the Tensor Engine, a ROWS x COLS weight-stationary systolic array with whole-row/column interfaces.
//
// It computes result[M, N] = stationary[K, M]^T @ moving[K, N] one moving column at a time (BRIEF section 2):
//   1. LoadStationary (cmd_op_i = OP_LOAD_STATIONARY, cmd_k_i = K, cmd_dtype_i): one beat per PE row on the stat
//      stream, beat j carrying PE row j's stationary row [COLS] of 16-bit lanes. BF16/FP16: K <= ROWS beats, beat k
//      = partition k. FP8 (double-row, BRIEF section 3 rule 8): K <= 2 * ROWS, ceil(K / 2) beats, lane bits [7:0] =
//      partition 2j and [15:8] = partition 2j + 1. Partitions k >= K are marked inactive and pass partial sums
//      through. The beats go to the PEs' shadow registers, so they may be taken while the columns of earlier
//      MultiplyMovings are still in flight; the next MultiplyMoving's first column swaps them in, PE by PE as it
//      passes (trn_te_pe). A beat waits only until the earlier swap has passed its PE row: beat j (PE row j)
//      until COLS + 1 + j cycles after the swapping column was taken, the last beat (which also sets the rows past
//      K inactive) until that swap has left the array, ROWS + COLS cycles after it. The MX types (rule 10) pair
//      as FP8 and come with an E8M0 scale per lane (stat_scale_i, mov_scale_i) that each PE applies to its
//      products before their one rounding.
//   2. MultiplyMoving (cmd_op_i = OP_MULTIPLY_MOVING, cmd_n_i = N, cmd_dtype_i): N beats on the mov stream, beat n
//      carrying moving[:, n] for all ROWS PE rows (lane r = PE row r's partitions, paired as above for FP8; the
//      dtype must pair as the loaded stationary's did); N beats come out on the out stream, beat n carrying the FP32
//      column sums result[0..COLS-1, n], out_last_o on the last. Several MultiplyMoving commands may follow one
//      LoadStationary back to back. cmd_acc_i is the command's PSUM write-back mode (the ISA's accumulate flag); it
//      travels with each moving column and comes out as out_acc_o on the column's result beat, telling the PSUM
//      write port to add the column to what the addressed PSUM entries hold (1) or to overwrite them (0).
//      A LoadStationary with cmd_acc_i set is illegal.
// Inside: widening at the edges (trn_fp_widen), input skew (row r delayed r+1 cycles), the PE grid, output de-skew
// (column c delayed COLS-c cycles) and a control pipeline of the same depth carrying valid/last/acc. The whole pipeline
// advances together and stalls together when the output beat is not taken (out_ready_i low).
// Timing, with every valid/ready high (docs/architecture.md derives it):
//   LoadStationary:  1 command cycle + ceil(K / P) beat cycles (P = 2 for FP8, else 1); its first beat no earlier
//                    than COLS + 1 cycles, its last no earlier than ROWS + COLS cycles, after the last swapping
//                    moving column was taken
//   MultiplyMoving:  1 command cycle + N beat cycles + ROWS + COLS + 1 pipeline stages to the last result beat;
//                    the next command is taken the cycle after its last moving beat
// Numerics: BRIEF section 3 rules 1-3, 5 and 8. PSUM accumulation (rule 4) is done by the PSUM write port outside the
// engine, in the mode out_acc_o gives it.
//
// Array size: ROWS and COLS default to 16, or to the macros TRN_TE_ROWS / TRN_TE_COLS when defined. Flat builds set
// them with -GROWS=R -GCOLS=C; hierarchical builds (64x64 and up, rtl/CMakeLists.txt) with
// +define+TRN_TE_ROWS=R+TRN_TE_COLS=C, because Verilator 5.006 passes -G options on to the verilation of each
// hierarchy block (trn_te_row), which has no ROWS parameter and stops on it.
`ifndef TRN_TE_ROWS
`define TRN_TE_ROWS 16
`endif
`ifndef TRN_TE_COLS
`define TRN_TE_COLS 16
`endif
module trn_te
  import trn_fp_pkg::*;
  import trn_te_pkg::*;
#(
  parameter int unsigned ROWS = `TRN_TE_ROWS,  // partitions: the contraction size K of one pass
  parameter int unsigned COLS = `TRN_TE_COLS   // stationary free size M of one pass
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,        // asynchronous, active low
  // Command stream (valid/ready): one LoadStationary or MultiplyMoving per handshake.
  input  logic                          cmd_valid_i,
  output logic                          cmd_ready_o,
  input  te_op_e                        cmd_op_i,
  input  logic [2:0]                    cmd_dtype_i,   // trn_fp_pkg::dtype_e; 4 illegal
  input  logic [$clog2(2*ROWS+1)-1:0]   cmd_k_i,       // LoadStationary: K, 1..ROWS (FP8: 1..2*ROWS)
  input  logic [N_W-1:0]                cmd_n_i,       // MultiplyMoving: N, 1..NMAX
  input  logic                          cmd_acc_i,     // MultiplyMoving: 1 = add results to PSUM, 0 = overwrite;
                                                       // LoadStationary: must be 0
  // Stationary stream (valid/ready): one PE row per beat (one partition, or an FP8 pair), PE row 0 first.
  input  logic                          stat_valid_i,
  output logic                          stat_ready_o,
  input  logic [COLS-1:0][15:0]         stat_data_i,
  input  logic [COLS-1:0][7:0]          stat_scale_i,  // MX dtypes: E8M0 scale of each lane's block; else unused
  // Moving stream (valid/ready): one moving column (all PE rows) per beat, n = 0 first.
  input  logic                          mov_valid_i,
  output logic                          mov_ready_o,
  input  logic [ROWS-1:0][15:0]         mov_data_i,
  input  logic [ROWS-1:0][7:0]          mov_scale_i,   // MX dtypes: E8M0 scale of each PE row's block; else unused
  // Result stream (valid/ready, backpressure allowed): one FP32 result column per beat.
  output logic                          out_valid_o,
  input  logic                          out_ready_i,
  output logic [COLS-1:0][31:0]         out_data_o,
  output logic                          out_last_o,    // last column of a MultiplyMoving
  output logic                          out_acc_o,     // PSUM write-back mode of the beat: 1 = add, 0 = overwrite
  // Status
  output logic                          busy_o,        // a command is running or results are in flight
  output logic                          err_o          // sticky: a command with an illegal field was dropped
);

  localparam int unsigned K_W        = $clog2(2 * ROWS + 1);
  localparam int unsigned CTRL_DEPTH = ROWS + COLS + 1;  // mov handshake -> result beat on the out port
  localparam int unsigned FLIGHT_W   = $clog2(CTRL_DEPTH + 1);
  localparam int unsigned SWAP_DEPTH = ROWS + COLS - 1;  // pipeline stages a swap flag spends inside the array

  // Two sequencers share the command port, in command order: the load sequencer takes a LoadStationary's beats into
  // the shadow weights while the stream sequencer may still take an earlier MultiplyMoving's columns.
  logic                    ld_busy_q;            // a LoadStationary's beats are being taken
  logic [N_W-1:0]          ld_count_q;           // its beats taken so far
  logic [2:0]              ld_dtype_q;           // its dtype (stationary widening)
  logic                    mv_busy_q;            // a MultiplyMoving's columns are being taken
  logic [N_W-1:0]          mv_count_q;           // its columns still to take
  logic [2:0]              mv_dtype_q;           // its dtype (moving widening)
  logic                    acc_q;                // its PSUM write-back mode
  logic [K_W-1:0]          k_q;
  logic                    dbl_q;                // the loaded stationary pairs two partitions per PE row (FP8)
  logic [K_W-1:0]          stat_beats;           // beats of the LoadStationary being taken: ceil(K / P)
  logic [ROWS-1:0]         row_act0_q;           // per PE row: first partition active
  logic [ROWS-1:0]         row_act1_q;           // per PE row: second partition active (FP8 only)
  logic [FLIGHT_W-1:0]     inflight_q;           // result columns in the pipeline
  logic                    swap_pend_q;          // a LoadStationary completed: the next MultiplyMoving swaps
  logic                    mv_swap_q;            // the MultiplyMoving taken swaps on its first column, not yet taken
  logic [SWAP_DEPTH-1:0]   swap_q;               // stage i: the column reaching the PEs with r + c = i swaps
  logic                    swap_in;              // this moving beat carries the swap flag
  logic [SWAP_DEPTH-1:0]   stat_swap_mask;       // the stages a swap flag must have left before the next beat
  logic [ROWS-1:0]         stat_row;             // the PE row the next beat writes (one-hot)
  logic [ROWS-1:0]         stat_rows_past;       // on the last beat: the PE rows past it (inactive from the swap)
  logic                    err_q;

  logic cmd_hs, stat_hs, mov_hs, out_hs;
  logic cmd_illegal, cmd_load, cmd_mult, last_stat;
  logic adv;                                    // the datapath pipeline advances this cycle

  // ---------------------------------------------------------------------------------------------------------------
  // Command sequencing
  // ---------------------------------------------------------------------------------------------------------------
  // A LoadStationary is taken while no other is loading and no taken MultiplyMoving still waits to swap the previous
  // weights in (its beats would overwrite them); a MultiplyMoving (and any other command) once both sequencers are
  // idle, so it streams with the weights of every LoadStationary before it.
  assign adv          = !out_valid_o || out_ready_i;
  assign cmd_ready_o  = (cmd_op_i == OP_LOAD_STATIONARY) ? (!ld_busy_q && !mv_swap_q) : (!ld_busy_q && !mv_busy_q);
  assign stat_ready_o = ld_busy_q && ((swap_q & stat_swap_mask) == '0);
  assign mov_ready_o  = mv_busy_q && adv;

  assign cmd_hs  = cmd_valid_i && cmd_ready_o;
  assign stat_hs = stat_valid_i && stat_ready_o;
  assign mov_hs  = mov_valid_i && mov_ready_o;
  assign out_hs  = out_valid_o && out_ready_i;

  always_comb begin
    cmd_illegal = !dtype_legal(cmd_dtype_i);
    unique case (cmd_op_i)
      OP_LOAD_STATIONARY: if (cmd_k_i == '0 || 32'(cmd_k_i) > ROWS * 32'(dtype_pe_partitions(cmd_dtype_i)) ||
                              cmd_acc_i) cmd_illegal = 1'b1;
      OP_MULTIPLY_MOVING: if (cmd_n_i == '0 || 32'(cmd_n_i) > NMAX) cmd_illegal = 1'b1;
      default:            cmd_illegal = 1'b1;
    endcase
  end

  // Beat j writes PE row j's shadow registers, so it waits until the last swap flag has passed every PE of row j
  // (r + c <= j + COLS - 1: stages 0 .. j + COLS - 1 clear); the last beat also sets the rows past it inactive, so
  // it waits until the flag has left the array (all stages clear).
  assign stat_swap_mask = (ld_count_q + 1'b1 == N_W'(stat_beats)) ? '1 :
                          SWAP_DEPTH'(({{SWAP_DEPTH{1'b0}}, 1'b1} << (32'(ld_count_q) + COLS)) - 1'b1);
  assign stat_row       = ROWS'(1) << ld_count_q;
  assign stat_rows_past = last_stat ? ~(ROWS'((({{ROWS{1'b0}}, 1'b1} << (32'(ld_count_q) + 1)) - 1'b1))) : '0;

  assign cmd_load  = cmd_hs && !cmd_illegal && cmd_op_i == OP_LOAD_STATIONARY;
  assign cmd_mult  = cmd_hs && !cmd_illegal && cmd_op_i == OP_MULTIPLY_MOVING;
  assign last_stat = stat_hs && (ld_count_q + 1'b1 == N_W'(stat_beats));

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ld_busy_q  <= 1'b0;
      ld_count_q <= '0;
      ld_dtype_q <= DT_BF16;
      mv_busy_q  <= 1'b0;
      mv_count_q <= '0;
      mv_dtype_q <= DT_BF16;
      acc_q      <= 1'b0;
      k_q        <= '0;
      dbl_q      <= 1'b0;
      row_act0_q <= '0;
      row_act1_q <= '0;
      err_q      <= 1'b0;
    end else begin
      if (cmd_load) begin
        ld_busy_q  <= 1'b1;
        ld_count_q <= '0;
        ld_dtype_q <= cmd_dtype_i;
        k_q        <= cmd_k_i;
        dbl_q      <= dtype_pe_partitions(cmd_dtype_i) == 2'd2;
      end else if (stat_hs) begin
        ld_count_q <= ld_count_q + 1'b1;
        if (last_stat) ld_busy_q <= 1'b0;
      end
      if (cmd_mult) begin
        mv_busy_q  <= 1'b1;
        mv_count_q <= cmd_n_i;
        mv_dtype_q <= cmd_dtype_i;
        acc_q      <= cmd_acc_i;
      end else if (mov_hs) begin
        mv_count_q <= mv_count_q - 1'b1;
        if (mv_count_q == N_W'(1)) mv_busy_q <= 1'b0;
      end
      if (cmd_hs && cmd_illegal) err_q <= 1'b1;
      // The loaded partition activity, which the PEs of a row take on the swap. A row's bits change only after the
      // last swap has passed the row (stat_ready_o): beat j activates PE row j's first partition, and for FP8 its
      // second unless K is odd and this is the last beat; the last beat deactivates the rows past it.
      if (stat_hs) begin
        row_act0_q <= (row_act0_q | stat_row) & ~stat_rows_past;
        row_act1_q <= ((row_act1_q & ~stat_row) |
                       (ROWS'(dbl_q && 32'(ld_count_q) * 2 + 1 < 32'(k_q)) << ld_count_q)) & ~stat_rows_past;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      inflight_q <= '0;
    end else if (mov_hs != out_hs) begin
      inflight_q <= mov_hs ? inflight_q + 1'b1 : inflight_q - 1'b1;
    end
  end

  // Weight swap: a completed LoadStationary arms the next MultiplyMoving, whose first column carries the flag
  // through the skew and the array; swap_q follows it (in step with the datapath) while it is inside the array.
  assign swap_in = mov_hs && mv_swap_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      swap_pend_q <= 1'b0;
      mv_swap_q   <= 1'b0;
      swap_q      <= '0;
    end else begin
      if (last_stat) swap_pend_q <= 1'b1;
      else if (cmd_mult) swap_pend_q <= 1'b0;
      if (cmd_mult) mv_swap_q <= swap_pend_q;
      else if (swap_in) mv_swap_q <= 1'b0;
      if (adv) swap_q <= SWAP_DEPTH'({swap_q, swap_in});
    end
  end

  assign stat_beats = dbl_q ? K_W'((32'(k_q) + 1) / 2) : k_q;
  assign busy_o = ld_busy_q || mv_busy_q || (inflight_q != '0);
  assign err_o  = err_q;

  // ---------------------------------------------------------------------------------------------------------------
  // Edge widening: stationary rows on load, moving columns on entry
  // ---------------------------------------------------------------------------------------------------------------
  // The low lane byte (FP8) or the whole lane widens to a row's first partition; for FP8 the high byte widens to
  // its second partition (zero otherwise, so the second adder of every PE sees +0.0 operands).
  logic [COLS-1:0][31:0] stat0_f32, stat1_f32;
  logic [ROWS-1:0][31:0] mov0_f32, mov1_f32;
  logic [ROWS-1:0]       w_we;
  logic                  ld_dbl, mv_dbl;  // the dtype being loaded / streamed pairs partitions (FP8)

  assign ld_dbl = dtype_pe_partitions(ld_dtype_q) == 2'd2;
  assign mv_dbl = dtype_pe_partitions(mv_dtype_q) == 2'd2;

  // MX scales (rule 10) go to the PEs with their values; every other dtype multiplies by 2^0 (code 127).
  logic [COLS-1:0][7:0]  stat_scale;
  logic [ROWS-1:0][7:0]  mov_scale;
  assign stat_scale = dtype_is_mx(ld_dtype_q) ? stat_scale_i : {COLS{8'd127}};
  assign mov_scale  = dtype_is_mx(mv_dtype_q) ? mov_scale_i : {ROWS{8'd127}};

  for (genvar c = 0; c < COLS; c++) begin : g_stat_widen
    logic [31:0] hi_f32;
    trn_fp_widen u_widen (
      .dtype_i (ld_dtype_q),
      .data_i  (stat_data_i[c]),
      .f32_o   (stat0_f32[c])
    );
    trn_fp_widen u_widen_hi (
      .dtype_i (ld_dtype_q),
      .data_i  ({8'd0, stat_data_i[c][15:8]}),
      .f32_o   (hi_f32)
    );
    assign stat1_f32[c] = ld_dbl ? hi_f32 : '0;
  end

  for (genvar r = 0; r < ROWS; r++) begin : g_mov_widen
    logic [31:0] hi_f32;
    trn_fp_widen u_widen (
      .dtype_i (mv_dtype_q),
      .data_i  (mov_data_i[r]),
      .f32_o   (mov0_f32[r])
    );
    trn_fp_widen u_widen_hi (
      .dtype_i (mv_dtype_q),
      .data_i  ({8'd0, mov_data_i[r][15:8]}),
      .f32_o   (hi_f32)
    );
    assign mov1_f32[r] = mv_dbl ? hi_f32 : '0;
    assign w_we[r] = stat_hs && (ld_count_q == N_W'(r));
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Input skew -> PE array -> output de-skew
  // ---------------------------------------------------------------------------------------------------------------
  logic [ROWS-1:0][31:0] mov0_skewed, mov1_skewed;
  logic [ROWS-1:0][7:0]  ms_skewed;
  logic [ROWS-1:0]       sw_skewed;
  logic [COLS-1:0][31:0] col_sum;

  for (genvar r = 0; r < ROWS; r++) begin : g_skew
    trn_prim_delay #(.WIDTH(73), .DEPTH(r + 1)) u_skew (
      .clk_i  (clk_i),
      .en_i   (adv),
      .data_i ({swap_in, mov_scale[r], mov1_f32[r], mov0_f32[r]}),
      .data_o ({sw_skewed[r], ms_skewed[r], mov1_skewed[r], mov0_skewed[r]})
    );
  end

  trn_te_array #(.ROWS(ROWS), .COLS(COLS)) u_array (
    .clk_i  (clk_i),
    .en_i   (adv),
    .act0_i (row_act0_q),
    .act1_i (row_act1_q),
    .w_we_i (w_we),
    .w0_i   (stat0_f32),
    .w1_i   (stat1_f32),
    .ws_i   (stat_scale),
    .mov0_i (mov0_skewed),
    .mov1_i (mov1_skewed),
    .ms_i   (ms_skewed),
    .sw_i   (sw_skewed),
    .psum_o (col_sum)
  );

  for (genvar c = 0; c < COLS; c++) begin : g_deskew
    trn_prim_delay #(.WIDTH(32), .DEPTH(COLS - c)) u_deskew (
      .clk_i  (clk_i),
      .en_i   (adv),
      .data_i (col_sum[c]),
      .data_o (out_data_o[c])
    );
  end

  // Control pipeline: valid, last and PSUM write-back mode of each moving column, aligned with its result column.
  logic [CTRL_DEPTH-1:0] vld_q, last_q;
  logic [CTRL_DEPTH-1:0] accp_q;  // forceable from C++ in the flat builds (rtl/te/trn_te_force.vlt): negative tests
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      vld_q  <= '0;
      last_q <= '0;
      accp_q <= '0;
    end else if (adv) begin
      vld_q  <= {vld_q[CTRL_DEPTH-2:0], mov_hs};
      last_q <= {last_q[CTRL_DEPTH-2:0], mov_hs && (mv_count_q == N_W'(1))};
      accp_q <= {accp_q[CTRL_DEPTH-2:0], mov_hs && acc_q};
    end
  end

  assign out_valid_o = vld_q[CTRL_DEPTH-1];
  assign out_last_o  = last_q[CTRL_DEPTH-1];
  assign out_acc_o   = accp_q[CTRL_DEPTH-1];

  // ---------------------------------------------------------------------------------------------------------------
  // Assertions: interface rules
  // ---------------------------------------------------------------------------------------------------------------
`ifndef SYNTHESIS
  // A valid beat is held, unchanged, until it is taken. The wide payloads are compared against a copy captured while
  // the beat waited, and the 1-bit verdict is registered before it reaches an assertion (so a violation is reported
  // one cycle after it happens): a wide port inside an assertion, directly or through an assign, makes Verilator
  // 5.006 emit uncompilable sampled-value code (an undeclared loop variable, `__Vilp`) at ROWS = 128.
  logic                  stat_wait_q, mov_wait_q, out_wait_q;
  logic [COLS-1:0][15:0] stat_data_q;
  logic [ROWS-1:0][15:0] mov_data_q;
  logic [COLS-1:0][31:0] out_data_q;
  logic                  out_last_q;
  logic                  stat_hold_bad_q, mov_hold_bad_q, out_hold_bad_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      stat_wait_q     <= 1'b0;
      mov_wait_q      <= 1'b0;
      out_wait_q      <= 1'b0;
      stat_hold_bad_q <= 1'b0;
      mov_hold_bad_q  <= 1'b0;
      out_hold_bad_q  <= 1'b0;
    end else begin
      stat_wait_q     <= stat_valid_i && !stat_ready_o;
      mov_wait_q      <= mov_valid_i && !mov_ready_o;
      out_wait_q      <= out_valid_o && !out_ready_i;
      stat_hold_bad_q <= stat_wait_q && !(stat_valid_i && stat_data_i == stat_data_q);
      mov_hold_bad_q  <= mov_wait_q && !(mov_valid_i && mov_data_i == mov_data_q);
      out_hold_bad_q  <= out_wait_q &&
                         !(out_valid_o && out_data_o == out_data_q && out_last_o == out_last_q);
    end
  end

  always_ff @(posedge clk_i) begin
    stat_data_q <= stat_data_i;
    mov_data_q  <= mov_data_i;
    out_data_q  <= out_data_o;
    out_last_q  <= out_last_o;
  end

  a_cmd_hold: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cmd_valid_i && !cmd_ready_o |=> cmd_valid_i && $stable({cmd_op_i, cmd_dtype_i, cmd_k_i, cmd_n_i, cmd_acc_i}))
    else $error("trn_te: cmd_valid_i dropped or command changed while cmd_ready_o was low");
  a_stat_hold: assert property (@(posedge clk_i) disable iff (!rst_ni) !stat_hold_bad_q)
    else $error("trn_te: stat_valid_i dropped or stat_data_i changed while stat_ready_o was low");
  a_mov_hold: assert property (@(posedge clk_i) disable iff (!rst_ni) !mov_hold_bad_q)
    else $error("trn_te: mov_valid_i dropped or mov_data_i changed while mov_ready_o was low");
  a_out_hold: assert property (@(posedge clk_i) disable iff (!rst_ni) !out_hold_bad_q)
    else $error("trn_te: result beat changed while stalled");
  // Command fields are legal when a command is taken.
  a_cmd_dtype: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cmd_hs |-> dtype_legal(cmd_dtype_i))
    else $error("trn_te: illegal dtype code %0d (legal: 0..3, MX 5..7)", cmd_dtype_i);
  a_cmd_k: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cmd_hs && cmd_op_i == OP_LOAD_STATIONARY && dtype_legal(cmd_dtype_i) |->
      cmd_k_i != '0 && 32'(cmd_k_i) <= ROWS * 32'(dtype_pe_partitions(cmd_dtype_i)))
    else $error("trn_te: LoadStationary K=%0d outside 1..%0d for dtype %0d", cmd_k_i,
                ROWS * 32'(dtype_pe_partitions(cmd_dtype_i)), cmd_dtype_i);
  // A MultiplyMoving pairs partitions as the loaded stationary does (rule 8): FP8 moving data on an FP8 stationary,
  // BF16/FP16 on BF16/FP16; otherwise its lanes would be read as partitions the array does not hold.
  a_cmd_pairing: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cmd_hs && cmd_op_i == OP_MULTIPLY_MOVING && dtype_legal(cmd_dtype_i) |->
      (dtype_pe_partitions(cmd_dtype_i) == 2'd2) == dbl_q)
    else $error("trn_te: MultiplyMoving dtype %0d pairs %0d partition(s) per PE row, the loaded stationary %0d",
                cmd_dtype_i, dtype_pe_partitions(cmd_dtype_i), dbl_q ? 2 : 1);
  a_cmd_n: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cmd_hs && cmd_op_i == OP_MULTIPLY_MOVING |-> cmd_n_i != '0 && 32'(cmd_n_i) <= NMAX)
    else $error("trn_te: MultiplyMoving N=%0d outside 1..%0d", cmd_n_i, NMAX);
  a_cmd_acc: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cmd_hs && cmd_op_i == OP_LOAD_STATIONARY |-> !cmd_acc_i)
    else $error("trn_te: LoadStationary with cmd_acc_i=1 (accumulate applies to MultiplyMoving only)");

  // PSUM write-back mode of the result beats. A beat's out_acc_o is stable while the beat is stalled, and equals
  // the cmd_acc_i of the MultiplyMoving it belongs to. The reference is a FIFO of the accepted MultiplyMovings'
  // cmd_acc_i, written on the command handshake and read on the last result beat: independent of the control
  // pipeline above. At most CTRL_DEPTH + 1 MultiplyMovings are in flight (at most CTRL_DEPTH with a column in the
  // pipeline, plus the one being streamed). As above, the 1-bit verdict is registered (the FIFO is up to 259 bits
  // wide at 128x128) and reported one cycle after the beat; out_acc_q is out_acc_o one cycle back.
  localparam int unsigned ACC_FIFO_DEPTH = CTRL_DEPTH + 2;
  localparam int unsigned ACC_PTR_W      = $clog2(ACC_FIFO_DEPTH);
  logic [ACC_FIFO_DEPTH-1:0] acc_fifo_q;
  logic [ACC_PTR_W-1:0]      acc_wr_q, acc_rd_q;
  logic [ACC_PTR_W:0]        acc_cnt_q;
  logic                      acc_bad_q, acc_want_q, out_acc_q, acc_mult_cmd;

  assign acc_mult_cmd = cmd_hs && !cmd_illegal && cmd_op_i == OP_MULTIPLY_MOVING;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_wr_q   <= '0;
      acc_rd_q   <= '0;
      acc_cnt_q  <= '0;
      acc_bad_q  <= 1'b0;
      acc_want_q <= 1'b0;
      out_acc_q  <= 1'b0;
    end else begin
      if (acc_mult_cmd) acc_wr_q <= (32'(acc_wr_q) == ACC_FIFO_DEPTH - 1) ? '0 : acc_wr_q + 1'b1;
      if (out_hs && out_last_o) acc_rd_q <= (32'(acc_rd_q) == ACC_FIFO_DEPTH - 1) ? '0 : acc_rd_q + 1'b1;
      if (acc_mult_cmd != (out_hs && out_last_o)) acc_cnt_q <= acc_mult_cmd ? acc_cnt_q + 1'b1 : acc_cnt_q - 1'b1;
      acc_bad_q  <= out_valid_o && acc_cnt_q != '0 && out_acc_o != acc_fifo_q[acc_rd_q];
      acc_want_q <= acc_fifo_q[acc_rd_q];
      out_acc_q  <= out_acc_o;
    end
  end

  always_ff @(posedge clk_i) begin
    if (acc_mult_cmd) acc_fifo_q[acc_wr_q] <= cmd_acc_i;
  end

  a_out_acc_hold: assert property (@(posedge clk_i) disable iff (!rst_ni)
      out_valid_o && !out_ready_i |=> $stable(out_acc_o))
    else $error("trn_te: out_acc_o changed from %0d to %0d while the result beat was stalled (out_ready_i low)",
                $past(out_acc_o), $sampled(out_acc_o));
  a_out_acc_cmd: assert property (@(posedge clk_i) disable iff (!rst_ni) !acc_bad_q)
    else $error("trn_te: result beat with out_acc_o=%0d, but its MultiplyMoving was taken with cmd_acc_i=%0d",
                out_acc_q, acc_want_q);
  a_acc_fifo: assert property (@(posedge clk_i) disable iff (!rst_ni)
      32'(acc_cnt_q) <= ACC_FIFO_DEPTH && !(out_hs && out_last_o && acc_cnt_q == '0))
    else $error("trn_te: MultiplyMoving tracking FIFO out of range (%0d entries)", acc_cnt_q);
  // Shadow weights: a beat writes PE row r's shadow registers only once every swap flag has passed all of the row's
  // PEs (none at a stage r + c <= r + COLS - 1: a PE that has not swapped yet would lose the values it is about to
  // take), and the last beat, which deactivates the rows past K, only once no flag is inside the array (a row the
  // flag has not reached would take the new activity with the old weights). Checked per PE row from the write
  // enables, independently of stat_ready_o; the verdicts are registered (reported one cycle after the beat), as
  // swap_q is up to 255 bits wide.
  logic [ROWS-1:0] stat_row_early;
  logic            stat_early_q, stat_last_early_q;
  for (genvar r = 0; r < ROWS; r++) begin : g_stat_swap_chk
    assign stat_row_early[r] = w_we[r] && (swap_q[r + COLS - 1:0] != '0);
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      stat_early_q      <= 1'b0;
      stat_last_early_q <= 1'b0;
    end else begin
      stat_early_q      <= stat_row_early != '0;
      stat_last_early_q <= last_stat && swap_q != '0;
    end
  end
  a_stat_swap: assert property (@(posedge clk_i) disable iff (!rst_ni) !stat_early_q)
    else $error("trn_te: stationary beat wrote a PE row that a weight swap had not passed yet");
  a_stat_last_swap: assert property (@(posedge clk_i) disable iff (!rst_ni) !stat_last_early_q)
    else $error("trn_te: last stationary beat (row activity past K) taken while a weight swap was inside the array");
  // Internal bookkeeping.
  a_inflight: assert property (@(posedge clk_i) disable iff (!rst_ni)
      32'(inflight_q) <= CTRL_DEPTH && !(out_hs && inflight_q == '0))
    else $error("trn_te: in-flight count out of range (%0d)", inflight_q);
`endif

endmodule
