// trn_noc_sw_alloc: separable, input-first switch allocator with round-robin arbiters: at most one flit per input
// port and one per output port each cycle.
//
// req_i[i], oport_i[i]: input VC i = p * NUM_VC + v has a flit at its front, holds an output VC at port oport_i[i]
// and that VC has room downstream (a credit, or the ejection register is free); it asks to send it this cycle.
// gnt_o[i]: the flit of i crosses the switch this cycle (the input port pops it, the output port sends it).
// out_valid_o[o], out_sel_o[o]: output port o takes the flit of input VC out_sel_o[o] this cycle.
// Stage 1: per input port, round robin over its requesting VCs. Stage 2: per output port, round robin over the
// input ports whose stage-1 winner wants it. Stage-1 pointers move only when the input port wins stage 2.
module trn_noc_sw_alloc #(
  parameter int unsigned NPORT  = 5,
  parameter int unsigned NUM_VC = 2,
  localparam int unsigned NIN    = NPORT * NUM_VC,
  localparam int unsigned PORT_W = $clog2(NPORT),
  localparam int unsigned VCI_W  = (NUM_VC > 1) ? $clog2(NUM_VC) : 1,
  localparam int unsigned IN_W   = $clog2(NIN)
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic [NIN-1:0]              req_i,
  input  logic [NIN-1:0][PORT_W-1:0]  oport_i,
  output logic [NIN-1:0]              gnt_o,
  output logic [NPORT-1:0]            out_valid_o,
  output logic [NPORT-1:0][IN_W-1:0]  out_sel_o
);

  logic [NPORT-1:0][NUM_VC-1:0] pick;        // stage 1, one-hot per input port
  logic [NPORT-1:0][VCI_W-1:0]  pick_vc;
  logic [NPORT-1:0]             picked;
  logic [NPORT-1:0][PORT_W-1:0] pick_oport;  // where the stage-1 winner of each input port wants to go
  logic [NPORT-1:0][NPORT-1:0]  win;         // win[o][p]: output o takes input port p
  logic [NPORT-1:0][PORT_W-1:0] win_p;
  logic [NPORT-1:0]             in_won;

  for (genvar p = 0; p < NPORT; p++) begin : g_in
    trn_prim_rr_arb #(.N(NUM_VC)) u_arb (
      .clk_i   (clk_i),
      .rst_ni  (rst_ni),
      .req_i   (req_i[p*NUM_VC +: NUM_VC]),
      .ack_i   (in_won[p]),
      .gnt_o   (pick[p]),
      .idx_o   (pick_vc[p]),
      .valid_o (picked[p])
    );
    assign pick_oport[p] = oport_i[p * NUM_VC + 32'(pick_vc[p])];
  end

  // req2[o]: the input ports whose stage-1 winner wants output o (one indexed write per input port).
  logic [NPORT-1:0][NPORT-1:0] req2;
  always_comb begin
    req2 = '0;
    for (int unsigned p = 0; p < NPORT; p++) begin
      if (picked[p] && 32'(pick_oport[p]) < NPORT) req2[pick_oport[p]][p] = 1'b1;
    end
  end

  for (genvar o = 0; o < NPORT; o++) begin : g_out
    trn_prim_rr_arb #(.N(NPORT)) u_arb (
      .clk_i   (clk_i),
      .rst_ni  (rst_ni),
      .req_i   (req2[o]),
      .ack_i   (1'b1),
      .gnt_o   (win[o]),
      .idx_o   (win_p[o]),
      .valid_o (out_valid_o[o])
    );
    assign out_sel_o[o] = IN_W'(32'(win_p[o]) * NUM_VC + 32'(pick_vc[win_p[o]]));
  end

  always_comb begin
    in_won = '0;
    for (int unsigned o = 0; o < NPORT; o++) in_won = in_won | win[o];
  end

  for (genvar p = 0; p < NPORT; p++) begin : g_gnt
    assign gnt_o[p*NUM_VC +: NUM_VC] = in_won[p] ? pick[p] : '0;
  end

`ifndef SYNTHESIS
  // Input ports that won more than one output port: the winners of each output port that were already among the
  // winners of the ones before (the same pass as trn_noc_vc_alloc's a_one_grant).
  function automatic logic [NPORT-1:0] multi_winners(logic [NPORT-1:0][NPORT-1:0] wv);
    logic [NPORT-1:0] seen, twice;
    seen  = '0;
    twice = '0;
    for (int unsigned o = 0; o < NPORT; o++) begin
      twice = twice | (seen & wv[o]);
      seen  = seen | wv[o];
    end
    return twice;
  endfunction
  // Input ports that send more than one flit (more than one of their VCs granted).
  function automatic logic [NPORT-1:0] multi_vc(logic [NIN-1:0] gnt);
    logic [NPORT-1:0] bad;
    for (int unsigned p = 0; p < NPORT; p++) bad[p] = !$onehot0(gnt[p*NUM_VC +: NUM_VC]);
    return bad;
  endfunction
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      a_one_output: assert (multi_winners(win) == '0)
        else $error("trn_noc_sw_alloc: input port %0d won more than one output port",
                    trn_noc_pkg::lowest_set(64'(multi_winners(win))));
      a_one_vc: assert (multi_vc(gnt_o) == '0)
        else $error("trn_noc_sw_alloc: input port %0d sends more than one flit",
                    trn_noc_pkg::lowest_set(64'(multi_vc(gnt_o))));
      a_grant_requested: assert ((gnt_o & ~req_i) == '0)
        else $error("trn_noc_sw_alloc: flit sent without a request");
      a_grants_match_outputs: assert ($countones(gnt_o) == $countones(out_valid_o))
        else $error("trn_noc_sw_alloc: %0d flits leave input ports but %0d enter output ports", $countones(gnt_o),
                    $countones(out_valid_o));
    end
  end
`endif

endmodule
