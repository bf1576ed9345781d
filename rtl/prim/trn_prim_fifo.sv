// trn_prim_fifo: a DEPTH-entry first-in first-out queue with valid/ready streams on both sides.
//
// Push side (push_valid_i / push_ready_o / push_data_i): a beat is taken when valid and ready are both high at a
// clock edge. push_ready_o is high while the queue is not full; it depends on the queue's state only, never on
// push_valid_i. The caller may drop valid or change the data while ready is low (the queue is a sink that never
// holds a beat it has not taken), but a caller that must never be stalled (a credit-fed buffer) asserts that.
// Pop side (pop_valid_o / pop_ready_i / pop_data_o): pop_valid_o is high while the queue holds a beat and
// pop_data_o is the oldest beat; a high pop_ready_i with pop_valid_o removes it at the clock edge. The head beat is
// held, unchanged, until it is taken. A push and a pop may happen in the same cycle, also when full (the pop frees
// the slot only at the edge, so push_ready_o stays low then: no combinational path from pop_ready_i to push_ready_o).
// No fall-through: a beat pushed at an edge is visible on the pop side from the next cycle.
module trn_prim_fifo #(
  parameter int unsigned WIDTH = 8,
  parameter int unsigned DEPTH = 4,    // >= 1
  localparam int unsigned CNT_W = $clog2(DEPTH + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,        // asynchronous, active low; empties the queue
  input  logic             push_valid_i,
  output logic             push_ready_o,
  input  logic [WIDTH-1:0] push_data_i,
  output logic             pop_valid_o,
  input  logic             pop_ready_i,
  output logic [WIDTH-1:0] pop_data_o,
  output logic [CNT_W-1:0] count_o        // beats held
);

  localparam int unsigned PTR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1;

  // Unpacked storage: one word per entry (a simulator indexes an entry directly; as a packed array, reading entry
  // rd_q is a shift of the whole DEPTH x WIDTH vector, which the verilated router did for each of its 20 queues in
  // every cycle).
  logic [WIDTH-1:0]            mem_q [DEPTH];
  logic [PTR_W-1:0]            rd_q, wr_q;
  logic [CNT_W-1:0]            count_q;

  assign push_ready_o = (count_q != CNT_W'(DEPTH));
  assign pop_valid_o  = (count_q != '0);
  assign pop_data_o   = mem_q[rd_q];
  assign count_o      = count_q;

  function automatic logic [PTR_W-1:0] next_ptr(logic [PTR_W-1:0] ptr);
    return (ptr == PTR_W'(DEPTH - 1)) ? '0 : ptr + 1'b1;
  endfunction

  // The handshakes are computed at the edge, in the clocked blocks: push_valid_i may come straight from a top-level
  // input (the NeuronLink router's link ports), and a verilated model evaluates logic that reads one on every eval()
  // call (trn_noc_link_tx, "At the clock edge").
  always_ff @(posedge clk_i or negedge rst_ni) begin : at_edge
    logic push, pop;
    if (!rst_ni) begin
      rd_q    <= '0;
      wr_q    <= '0;
      count_q <= '0;
    end else begin
      push = push_valid_i && push_ready_o;
      pop  = pop_valid_o && pop_ready_i;
      if (push) wr_q <= next_ptr(wr_q);
      if (pop)  rd_q <= next_ptr(rd_q);
      if (push != pop) count_q <= push ? count_q + 1'b1 : count_q - 1'b1;
    end
  end

  // Storage: datapath only, no reset.
  always_ff @(posedge clk_i) begin
    if (push_valid_i && push_ready_o) mem_q[wr_q] <= push_data_i;
  end

`ifndef SYNTHESIS
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      a_count_range: assert (32'(count_q) <= DEPTH)
        else $error("trn_prim_fifo: occupancy %0d above DEPTH %0d", count_q, DEPTH);
      a_ptrs_agree: assert ((count_q == '0 || 32'(count_q) == DEPTH) == (rd_q == wr_q))
        else $error("trn_prim_fifo: read/write pointers disagree with the occupancy %0d", count_q);
    end
  end
`endif

endmodule
