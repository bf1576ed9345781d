// trn_prim_spill_reg: a two-entry register slice on a valid/ready stream (the "spill register" of PULP
// common_cells). Full throughput, and it cuts every combinational path between its two sides: in_ready_o and
// out_valid_o / out_data_o come from registers only.
//
// In side (in_valid_i / in_ready_o / in_data_i): a beat is taken when valid and ready are high at a clock edge. The
// sender must hold a beat, unchanged, until it is taken (checked: a_in_hold).
// Out side (out_valid_o / out_ready_i / out_data_o): the oldest beat held; it is held unchanged until taken, and
// beats leave in the order they came.
module trn_prim_spill_reg #(
  parameter int unsigned WIDTH = 8
) (
  input  logic             clk_i,
  input  logic             rst_ni,     // asynchronous, active low
  input  logic             in_valid_i,
  output logic             in_ready_o,
  input  logic [WIDTH-1:0] in_data_i,
  output logic             out_valid_o,
  input  logic             out_ready_i,
  output logic [WIDTH-1:0] out_data_o
);

  // A is the entry a new beat goes to; B holds a beat that could not leave while A was refilled (the "spill").
  logic             a_full_q, b_full_q;
  logic [WIDTH-1:0] a_data_q, b_data_q;
  logic             a_fill, a_drain, b_fill, b_drain;

  assign in_ready_o  = !a_full_q || !b_full_q;
  assign out_valid_o = a_full_q || b_full_q;
  assign out_data_o  = b_full_q ? b_data_q : a_data_q;  // B is older than A whenever both are full

  assign a_fill  = in_valid_i && in_ready_o;
  assign a_drain = a_full_q && !b_full_q;   // A moves on: out to the consumer or into B
  assign b_fill  = a_drain && !out_ready_i; // A's beat was not taken: park it in B
  assign b_drain = b_full_q && out_ready_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      a_full_q <= 1'b0;
      b_full_q <= 1'b0;
    end else begin
      if (a_fill || a_drain) a_full_q <= a_fill;
      if (b_fill || b_drain) b_full_q <= b_fill;
    end
  end

  always_ff @(posedge clk_i) begin
    if (a_fill) a_data_q <= in_data_i;
    if (b_fill) b_data_q <= a_data_q;
  end

`ifndef SYNTHESIS
  a_in_hold: assert property (@(posedge clk_i) disable iff (!rst_ni)
      in_valid_i && !in_ready_o |=> in_valid_i && $stable(in_data_i))
    else $error("trn_prim_spill_reg: in_valid_i dropped or in_data_i changed while in_ready_o was low");
  a_out_hold: assert property (@(posedge clk_i) disable iff (!rst_ni)
      out_valid_o && !out_ready_i |=> out_valid_o && $stable(out_data_o))
    else $error("trn_prim_spill_reg: the held beat changed while out_ready_i was low");
`endif

endmodule
