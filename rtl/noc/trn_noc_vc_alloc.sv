// trn_noc_vc_alloc: separable, input-first virtual-channel allocator with round-robin arbiters. It owns the
// free/busy state of every output VC.
//
// Input VC i = p * NUM_VC + v (input port p, VC v):
//   req_i[i], oport_i[i], mask_i[i]  i holds a head flit and wants one output VC of mask_i[i] at port oport_i[i].
//   gnt_o[i], gnt_vc_o[i]            granted: output VC gnt_vc_o[i] of oport_i[i] is i's from the next cycle on.
// port_ok_i[o]: output port o may be allocated (its link is up); a port that is down or in error gets no packet.
// release_i[o][w]: the tail of the packet holding output VC w of port o leaves this cycle; w is free from the next
// cycle on (never re-granted in the same cycle, so a single-flit packet right behind a tail waits one cycle).
// Stage 1: each requesting input VC picks one free output VC of its mask (round robin). Stage 2: each output VC
// picks one of the input VCs that picked it (round robin over all P * NUM_VC input VCs). An input VC that loses
// stage 2 tries again next cycle; its stage-1 pointer only moves when it wins.
module trn_noc_vc_alloc #(
  parameter int unsigned NPORT  = 5,
  parameter int unsigned NUM_VC = 2,
  localparam int unsigned NIN    = NPORT * NUM_VC,
  localparam int unsigned PORT_W = $clog2(NPORT),
  localparam int unsigned VCI_W  = (NUM_VC > 1) ? $clog2(NUM_VC) : 1
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  input  logic [NIN-1:0]                req_i,
  input  logic [NIN-1:0][PORT_W-1:0]    oport_i,
  input  logic [NIN-1:0][NUM_VC-1:0]    mask_i,
  input  logic [NPORT-1:0]              port_ok_i,
  input  logic [NPORT-1:0][NUM_VC-1:0]  release_i,
  output logic [NIN-1:0]                gnt_o,
  output logic [NIN-1:0][VCI_W-1:0]     gnt_vc_o,
  output logic [NPORT-1:0][NUM_VC-1:0]  busy_o
);

  logic [NPORT-1:0][NUM_VC-1:0] busy_q;
  logic [NIN-1:0][NUM_VC-1:0]   pick;      // stage 1 choice, one-hot
  logic [NIN-1:0][VCI_W-1:0]    pick_idx;
  logic [NIN-1:0]               picked;

  // Stage 1: per input VC, over the free output VCs it may take.
  for (genvar i = 0; i < NIN; i++) begin : g_in
    logic [NUM_VC-1:0] cand;
    assign cand = (req_i[i] && port_ok_i[oport_i[i]]) ? (mask_i[i] & ~busy_q[oport_i[i]]) : '0;
    trn_prim_rr_arb #(.N(NUM_VC)) u_arb (
      .clk_i   (clk_i),
      .rst_ni  (rst_ni),
      .req_i   (cand),
      .ack_i   (gnt_o[i]),
      .gnt_o   (pick[i]),
      .idx_o   (pick_idx[i]),
      .valid_o (picked[i])
    );
  end

  // Stage 2: per output VC, over the input VCs that picked it. req2[o][w] holds the input VCs that picked output VC
  // w of port o: each input VC sets its one bit, where its pick points (a decoder per input; written as one indexed
  // write per input rather than a bit per (input, output VC) pair, which the verilated model evaluates as 400
  // separate bit operations every cycle in a 2-D, 4-VC router). Unpacked per output VC, as are the winners: each
  // set is a word of its own, not a slice across the words of one 400-bit vector.
  logic [NIN-1:0] req2 [NPORT][NUM_VC];
  always_comb begin
    for (int unsigned o = 0; o < NPORT; o++) begin
      for (int unsigned w = 0; w < NUM_VC; w++) req2[o][w] = '0;
    end
    for (int unsigned i = 0; i < NIN; i++) begin
      if (picked[i] && 32'(oport_i[i]) < NPORT) req2[oport_i[i]][pick_idx[i]][i] = 1'b1;
    end
  end

  logic unused_pick;
  assign unused_pick = ^pick;  // stage 2 reads the index of the pick (pick_idx); the one-hot grant is not needed

  logic [NIN-1:0]               win [NPORT][NUM_VC];
  logic [NPORT-1:0][NUM_VC-1:0] alloc;
  for (genvar o = 0; o < NPORT; o++) begin : g_out
    for (genvar w = 0; w < NUM_VC; w++) begin : g_vc
      logic [$clog2(NIN)-1:0] unused_idx;
      trn_prim_rr_arb #(.N(NIN), .WITH_IDX(1'b0)) u_arb (
        .clk_i   (clk_i),
        .rst_ni  (rst_ni),
        .req_i   (req2[o][w]),
        .ack_i   (1'b1),
        .gnt_o   (win[o][w]),
        .idx_o   (unused_idx),
        .valid_o (alloc[o][w])
      );
    end
  end

  always_comb begin
    gnt_o = '0;
    for (int unsigned o = 0; o < NPORT; o++) begin
      for (int unsigned w = 0; w < NUM_VC; w++) gnt_o = gnt_o | win[o][w];
    end
  end
  assign gnt_vc_o = pick_idx;  // an input VC can only win the output VC it picked

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= '0;
    end else begin
      busy_q <= (busy_q & ~release_i) | alloc;
    end
  end
  assign busy_o = busy_q;

`ifndef SYNTHESIS
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      a_alloc_free: assert ((alloc & busy_q) == '0)
        else $error("trn_noc_vc_alloc: an output VC that is in use was allocated again");
      a_release_busy: assert ((release_i & ~busy_q) == '0)
        else $error("trn_noc_vc_alloc: a free output VC was released");
    end
  end
  // Per input VC, one check over all of them (the message names the lowest input VC that breaks the rule).
  // One output VC per input VC: the stage-2 winners are disjoint sets. Input VCs that won more than one: the
  // winners of each output VC that were already among the winners of the ones before (a pass over the 20 output
  // VCs of a 2-D, 4-VC router, instead of gathering each input VC's wins across the arbiters).
  function automatic logic [NIN-1:0] multi_winners(logic [NIN-1:0] wv [NPORT][NUM_VC]);
    logic [NIN-1:0] seen, twice;
    seen  = '0;
    twice = '0;
    for (int unsigned o = 0; o < NPORT; o++) begin
      for (int unsigned w = 0; w < NUM_VC; w++) begin
        twice = twice | (seen & wv[o][w]);
        seen  = seen | wv[o][w];
      end
    end
    return twice;
  endfunction
  // Input VCs among `gnt` granted an output VC they cannot have (no request, port down, VC busy).
  function automatic logic [NIN-1:0] bad_grants(logic [NIN-1:0] gnt, logic [NIN-1:0] req,
                                                logic [NIN-1:0][PORT_W-1:0] oport, logic [NPORT-1:0] port_ok,
                                                logic [NPORT-1:0][NUM_VC-1:0] busy, logic [NIN-1:0][VCI_W-1:0] gnt_vc);
    logic [NIN-1:0] bad;
    bad = '0;
    for (int unsigned i = 0; i < NIN; i++) begin
      if (gnt[i]) bad[i] = !(req[i] && port_ok[oport[i]] && !busy[oport[i]][gnt_vc[i]]);
    end
    return bad;
  endfunction
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      if (gnt_o != '0) begin  // gnt_o is the union of the wins: none without it
        a_one_grant: assert (multi_winners(win) == '0)
          else $error("trn_noc_vc_alloc: input VC %0d won more than one output VC",
                      trn_noc_pkg::lowest_set(64'(multi_winners(win))));
        a_grant_port: assert (bad_grants(gnt_o, req_i, oport_i, port_ok_i, busy_q, gnt_vc_o) == '0)
          else $error("trn_noc_vc_alloc: input VC %0d granted an output VC it cannot have",
                      trn_noc_pkg::lowest_set(64'(bad_grants(gnt_o, req_i, oport_i, port_ok_i, busy_q, gnt_vc_o))));
      end
    end
  end
`endif

endmodule
