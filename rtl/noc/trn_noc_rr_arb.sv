// trn_noc_rr_arb: an N-way round-robin arbiter.
//
// req_i: requests of this cycle; they may change freely from cycle to cycle (an arbiter, not a stream).
// gnt_o / idx_o / valid_o: combinational from req_i and the priority pointer: gnt_o is one-hot (zero when nothing
// is requested), idx_o its index, valid_o = |req_i. The requester at or after the pointer wins.
// ack_i: the grant shown this cycle was used; at the clock edge the pointer moves to the requester after the winner,
// so the winner has the lowest priority next. Without ack_i the pointer stays, and the same requester keeps
// winning while it requests (a grant that was not used costs the requester nothing).
module trn_noc_rr_arb #(
  parameter int unsigned N = 4,   // >= 1
  localparam int unsigned IDX_W = (N > 1) ? $clog2(N) : 1
) (
  input  logic             clk_i,
  input  logic             rst_ni,   // asynchronous, active low; requester 0 has priority after reset
  input  logic [N-1:0]     req_i,
  input  logic             ack_i,
  output logic [N-1:0]     gnt_o,
  output logic [IDX_W-1:0] idx_o,
  output logic             valid_o
);

  logic [IDX_W-1:0] ptr_q;

  always_comb begin
    gnt_o = '0;
    idx_o = '0;
    for (int unsigned k = 0; k < N; k++) begin
      // Candidate k places after the pointer, wrapping (ptr_q < N, so one subtraction suffices).
      int unsigned j;
      j = 32'(ptr_q) + k;
      if (j >= N) j = j - N;
      if (req_i[j] && gnt_o == '0) begin
        gnt_o[j] = 1'b1;
        idx_o    = IDX_W'(j);
      end
    end
  end

  assign valid_o = |req_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ptr_q <= '0;
    end else if (ack_i && valid_o) begin
      ptr_q <= (32'(idx_o) == N - 1) ? '0 : idx_o + 1'b1;
    end
  end

`ifndef SYNTHESIS
  a_onehot: assert property (@(posedge clk_i) disable iff (!rst_ni) $onehot0(gnt_o))
    else $error("trn_noc_rr_arb: grant %b is not one-hot", gnt_o);
  a_grant_requested: assert property (@(posedge clk_i) disable iff (!rst_ni) (gnt_o & ~req_i) == '0)
    else $error("trn_noc_rr_arb: grant %b without a request (%b)", gnt_o, req_i);
  a_work_conserving: assert property (@(posedge clk_i) disable iff (!rst_ni) valid_o == (gnt_o != '0))
    else $error("trn_noc_rr_arb: requests %b but no grant", req_i);
  a_ptr_range: assert property (@(posedge clk_i) disable iff (!rst_ni) 32'(ptr_q) < N)
    else $error("trn_noc_rr_arb: pointer %0d out of range", ptr_q);
`endif

endmodule
