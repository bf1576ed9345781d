// trn_prim_rr_arb: an N-way round-robin arbiter.
//
// req_i: requests of this cycle; they may change freely from cycle to cycle (an arbiter, not a stream).
// gnt_o / idx_o / valid_o: combinational from req_i and the priority pointer: gnt_o is one-hot (zero when nothing
// is requested), idx_o its index, valid_o = |req_i. The requester at or after the pointer wins.
// ack_i: the grant shown this cycle was used; at the clock edge the pointer moves to the requester after the winner,
// so the winner has the lowest priority next. Without ack_i the pointer stays, and the same requester keeps
// winning while it requests (a grant that was not used costs the requester nothing).
module trn_prim_rr_arb #(
  parameter int unsigned N       = 4,     // >= 1
  parameter bit          WITH_IDX = 1'b1, // 0: idx_o is 0 (callers that only need gnt_o save its encoder)
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
  logic [N-1:0]     at_or_after_ptr, req_hi, sel;

  function automatic logic [IDX_W-1:0] next_ptr(logic [N-1:0] onehot);
    logic [IDX_W-1:0] p;
    p = '0;
    for (int unsigned j = 0; j + 1 < N; j++) begin
      if (onehot[j]) p = IDX_W'(j + 1);
    end
    return p;
  endfunction

  // Requests at or after the pointer first; if there are none, all requests (the wrap-around). The winner is the
  // lowest set bit of that vector (x & -x). Vector operations rather than a loop over requesters: the verilated
  // model evaluates them several times faster (the allocators hold dozens of these arbiters). Without a request
  // nothing is computed: a simulator skips the branch, and most arbiters are idle in most cycles.
  always_comb begin
    at_or_after_ptr = '0;
    req_hi          = '0;
    sel             = '0;
    gnt_o           = '0;
    if (req_i != '0) begin
      at_or_after_ptr = ~((N'(1) << ptr_q) - N'(1));
      req_hi          = req_i & at_or_after_ptr;
      sel             = (req_hi != '0) ? req_hi : req_i;
      gnt_o           = sel & (~sel + N'(1));
    end
  end

  // One-hot to index: bit b of the index is set when the winner's index has bit b set.
  if (WITH_IDX) begin : g_idx
    always_comb begin
      idx_o = '0;
      if (req_i != '0) begin
        for (int unsigned b = 0; b < IDX_W; b++) begin
          for (int unsigned j = 0; j < N; j++) begin
            if (((j >> b) & 1) == 1) idx_o[b] = idx_o[b] | gnt_o[j];
          end
        end
      end
    end
  end else begin : g_no_idx
    assign idx_o = '0;
  end

  assign valid_o = |req_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ptr_q <= '0;
    end else if (ack_i && valid_o) begin
      // The requester after the winner: the lowest requester position above the grant, wrapping to 0.
      ptr_q <= next_ptr(gnt_o);
    end
  end

`ifndef SYNTHESIS
  // One assertion for the arbiter's whole contract (the allocators hold dozens of arbiters; one check each keeps
  // the verilated model fast): the grant is one-hot or zero, only requesters win, some requester wins whenever any
  // requests, the pointer stays in range. Checked in a clocked block on the values before the edge, what a
  // concurrent assertion samples (docs/verification.md "Assertions at the clock edge").
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      if (req_i != '0 || gnt_o != '0) begin
        a_grant: assert ($onehot0(gnt_o) && (gnt_o & ~req_i) == '0 && valid_o == (gnt_o != '0) && 32'(ptr_q) < N)
          else $error("trn_prim_rr_arb: grant %b for requests %b with the pointer at %0d", gnt_o, req_i, ptr_q);
      end else begin
        // No request and no grant: the rest of a_grant holds, the pointer must still be in range.
        a_grant_idle: assert (!valid_o && 32'(ptr_q) < N)
          else $error("trn_prim_rr_arb: grant %b for requests %b with the pointer at %0d", gnt_o, req_i, ptr_q);
      end
    end
  end
`endif

endmodule
