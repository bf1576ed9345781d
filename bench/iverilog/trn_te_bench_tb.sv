// trn_te_bench_tb: simulation-speed testbench of the Tensor Engine under Icarus Verilog (scripts/bench.sh).
//
// Workload (the same one bench/te_sim_bench.cpp drives through the verilated engine):
//   reset; one LoadStationary (K = ROWS, BF16) with a pseudo-random stationary tile; then NCMD MultiplyMoving
//   commands of N = 512 back to back, all valid/ready high, every command streaming the same 512 moving columns.
// Every signal the testbench drives changes on the rising edge (nonblocking), like a flop, so the engine sees a
// new beat one cycle after the previous one was taken.
//
// Output lines (read by scripts/bench.sh):
//   BENCH start ...        after reset, when the first command is presented
//   BENCH mark cycle=<m>   at rising edge <m> = WARM: the stationary tile is loaded and the first moving column has
//                          reached the last result register, so every PE works on data from here on
//   BENCH done cycles=<c> beats=<b> hash=<h> [partial]
//                          after the last result beat: <c> counts rising edges from reset release to the last result
//                          handshake inclusive (= TeRunResult::cycles of the same run; bench/te_sim_bench --hash
//                          prints the same line), <h> is an FNV-1a-style hash of every FP32 result word in order.
//                          With +cycles=<n> the run stops after edge <n> instead and the line ends in "partial".
//   BENCH error ...        err_o raised or watchdog; the simulation then stops with $fatal
// Each BENCH line is flushed at once, so the script can time the steady-state part between mark and done.
//
// Plusargs: +ncmd=<n> (>= 1) overrides NCMD; +cycles=<n> stops after n rising edges (0 = run to completion).
`timescale 1ns / 1ps

module trn_te_bench_tb;
  // (A package-scoped type name on a testbench variable, trn_te_pkg::te_op_e, crashes Icarus 11's elaborator;
  // importing the package works.)
  import trn_te_pkg::*;

  parameter int ROWS = 16;
  parameter int COLS = 16;
  parameter int NCMD = 4;        // MultiplyMoving commands (N = 512 each)
  localparam int N = 512;
  localparam int K_W = $clog2(ROWS + 1);
  localparam logic [31:0] SEED = 32'h2545_F491;
  // 1 command + ROWS stationary beats, 1 command, then ROWS + COLS + 1 stages to the first result beat.
  localparam int WARM = 2 * ROWS + COLS + 3;

  // Data generator shared with bench/te_sim_bench.cpp: xorshift32, mapped to BF16 patterns with a random sign,
  // exponent field 120..135 and a random 7-bit mantissa (finite, nonzero values from about 2^-7 to 2^9).
  function automatic logic [31:0] xorshift32(logic [31:0] x);
    logic [31:0] y;
    y = x ^ (x << 13);
    y = y ^ (y >> 17);
    y = y ^ (y << 5);
    return y;
  endfunction

  function automatic logic [15:0] to_bf16(logic [31:0] x);
    logic [7:0] e;
    e = 8'd120 + {4'd0, x[10:7]};
    return {x[15], e, x[6:0]};
  endfunction

  logic clk = 1'b0;
  logic rst_n = 1'b0;
  always #5 clk = ~clk;

  // Engine ports.
  logic                   cmd_valid, cmd_ready;
  te_op_e                 cmd_op;
  logic [2:0]             cmd_dtype;
  logic [K_W-1:0]         cmd_k;
  logic [9:0]             cmd_n;
  logic                   stat_valid, stat_ready;
  logic [COLS-1:0][15:0]  stat_data;
  logic                   mov_valid, mov_ready;
  logic [ROWS-1:0][15:0]  mov_data;
  logic                   out_valid, out_ready, out_last;
  logic [COLS-1:0][31:0]  out_data;
  logic                   busy, err;

  trn_te #(.ROWS(ROWS), .COLS(COLS)) dut (
    .clk_i        (clk),
    .rst_ni       (rst_n),
    .cmd_valid_i  (cmd_valid),
    .cmd_ready_o  (cmd_ready),
    .cmd_op_i     (cmd_op),
    .cmd_dtype_i  (cmd_dtype),
    .cmd_k_i      (cmd_k),
    .cmd_n_i      (cmd_n),
    .stat_valid_i (stat_valid),
    .stat_ready_o (stat_ready),
    .stat_data_i  (stat_data),
    .mov_valid_i  (mov_valid),
    .mov_ready_o  (mov_ready),
    .mov_data_i   (mov_data),
    .out_valid_o  (out_valid),
    .out_ready_i  (out_ready),
    .out_data_o   (out_data),
    .out_last_o   (out_last),
    .busy_o       (busy),
    .err_o        (err)
  );

  // Stimulus memories: stationary rows (beat k = partition k), then the 512 moving columns.
  logic [COLS-1:0][15:0] stat_mem [ROWS];
  logic [ROWS-1:0][15:0] mov_mem  [N];
  int ncmd;
  longint max_cycles;

  initial begin : gen
    logic [31:0] s;
    s = SEED;
    for (int k = 0; k < ROWS; k++) begin
      for (int c = 0; c < COLS; c++) begin
        s = xorshift32(s);
        stat_mem[k][c] = to_bf16(s);
      end
    end
    for (int n = 0; n < N; n++) begin
      for (int r = 0; r < ROWS; r++) begin
        s = xorshift32(s);
        mov_mem[n][r] = to_bf16(s);
      end
    end
    if (!$value$plusargs("ncmd=%d", ncmd)) ncmd = NCMD;
    if (!$value$plusargs("cycles=%d", max_cycles)) max_cycles = 0;
    if (ncmd < 1) begin
      $display("BENCH error: +ncmd must be at least 1");
      $fatal(1);
    end
  end

  // Stream sequencing, all on the rising edge.
  int          cmd_idx;      // commands taken: 0 = the LoadStationary, 1..ncmd = MultiplyMoving
  int          stat_idx;     // stationary beats taken
  longint      mov_idx;      // moving beats taken, over all commands
  longint      out_idx;      // result beats taken
  longint      cycle;        // rising edges since reset release
  longint      last_hs;      // cycle of the last handshake (watchdog)
  logic [31:0] hash;
  logic [31:0] h;

  always @(posedge clk) begin
    if (rst_n) begin
      if (cmd_valid && cmd_ready) begin
        cmd_idx <= cmd_idx + 1;
        last_hs <= cycle;
        if (cmd_idx + 1 <= ncmd) begin
          cmd_op <= OP_MULTIPLY_MOVING;
          cmd_k  <= '0;
          cmd_n  <= 10'(N);
        end else begin
          cmd_valid <= 1'b0;
        end
      end
      if (stat_valid && stat_ready) begin
        stat_idx <= stat_idx + 1;
        last_hs  <= cycle;
        if (stat_idx + 1 < ROWS) stat_data <= stat_mem[stat_idx + 1];
        else stat_valid <= 1'b0;
      end
      if (mov_valid && mov_ready) begin
        mov_idx <= mov_idx + 1;
        last_hs <= cycle;
        if (mov_idx + 1 < longint'(ncmd) * N) mov_data <= mov_mem[(mov_idx + 1) % N];
        else mov_valid <= 1'b0;
      end
      if (out_valid && out_ready) begin
        h = hash;
        for (int c = 0; c < COLS; c++) h = (h ^ out_data[c]) * 32'd16777619;
        hash    <= h;
        out_idx <= out_idx + 1;
        last_hs <= cycle;
        if (out_idx + 1 == longint'(ncmd) * N) begin
          $display("BENCH done cycles=%0d beats=%0d hash=%08h", cycle + 1, out_idx + 1, h);
          $fflush();
          $finish;
        end
      end
      if (err) begin
        $display("BENCH error: engine raised err_o at cycle %0d", cycle);
        $fflush();
        $fatal(1);
      end
      if (cycle - last_hs > 10000) begin
        $display("BENCH error: watchdog at cycle %0d (cmd %0d, stat %0d, mov %0d, out %0d)", cycle, cmd_idx,
                 stat_idx, mov_idx, out_idx);
        $fflush();
        $fatal(1);
      end
      if (cycle == WARM) begin
        $display("BENCH mark cycle=%0d", cycle);
        $fflush();
      end
      if (max_cycles > 0 && cycle + 1 >= max_cycles) begin
        $display("BENCH done cycles=%0d beats=%0d hash=%08h partial", cycle + 1, out_idx, hash);
        $fflush();
        $finish;
      end
      cycle <= cycle + 1;
    end
  end

  initial begin
    cmd_valid  = 1'b0;
    cmd_op     = OP_LOAD_STATIONARY;
    cmd_dtype  = 3'd0;  // BF16
    cmd_k      = '0;
    cmd_n      = '0;
    stat_valid = 1'b0;
    stat_data  = '0;
    mov_valid  = 1'b0;
    mov_data   = '0;
    out_ready  = 1'b1;
    cmd_idx    = 0;
    stat_idx   = 0;
    mov_idx    = 0;
    out_idx    = 0;
    cycle      = 0;
    last_hs    = 0;
    hash       = 32'h811C_9DC5;
    // Hold reset over several edges, release it away from the rising edge.
    repeat (4) @(posedge clk);
    @(negedge clk);
    rst_n = 1'b1;
    // Present the LoadStationary, its first row and the first moving column; the moving stream waits for its
    // command (mov_ready_o is low until then).
    cmd_valid  = 1'b1;
    cmd_op     = OP_LOAD_STATIONARY;
    cmd_k      = K_W'(ROWS);
    stat_valid = 1'b1;
    stat_data  = stat_mem[0];
    mov_valid  = (ncmd > 0);
    mov_data   = mov_mem[0];
    $display("BENCH start rows=%0d cols=%0d ncmd=%0d n=%0d", ROWS, COLS, ncmd, N);
    $fflush();
  end

endmodule
