// trn_noc_link_bringup: the bring-up of one end of a NeuronLink link, the same on both ends (trn_noc_link_tx and
// trn_noc_link_rx each hold one; docs/neuronlink.md, "Link bring-up").
//
// Each end sends one beat advertising its flow-control layout (MY_CFG = {NUM_VC, DEPTH}) in the second cycle after
// reset, never during reset: beat_o is high in exactly that cycle. It then waits for the far end's beat
// (far_beat_i with far_cfg_i): the same layout takes the link up at the next clock edge (up_o), another takes it to
// the error state (err_o), and no beat within LINK_TIMEOUT cycles of reset is an error too (err_o with timeout_o). Up and error last until reset: a link is
// never left waiting silently. partner_cfg_o holds the far end's layout once its beat came.
module trn_noc_link_bringup
  import trn_noc_pkg::*;
#(
  parameter int unsigned NUM_VC       = 2,
  parameter int unsigned DEPTH        = 4,
  parameter int unsigned LINK_TIMEOUT = 64,
  // Assertion messages: the owning module, its role and the far end's, and what the far end's beat is called.
  parameter string       OWNER        = "trn_noc_link_tx",
  parameter bit          IS_SENDER    = 1'b1,
  parameter string       FAR_BEAT     = "credit-init beat"
) (
  input  logic      clk_i,
  input  logic      rst_ni,         // asynchronous, active low
  input  logic      far_beat_i,     // the far end's beat arrives this cycle
  input  link_cfg_t far_cfg_i,      // the layout it advertises (read with far_beat_i)
  output logic      beat_o,         // this end's beat goes out this cycle
  output link_cfg_t my_cfg_o,       // what this end advertises: {NUM_VC, DEPTH}
  output logic      up_o,
  output logic      err_o,
  output logic      timeout_o,      // err_o because no beat came (else: a mismatch)
  output link_cfg_t partner_cfg_o
);

  localparam int unsigned TMO_W  = $clog2(LINK_TIMEOUT + 1);
  localparam link_cfg_t   MY_CFG = '{num_vc: CFG_VC_W'(NUM_VC), depth: CFG_DEP_W'(DEPTH)};

  typedef enum logic [1:0] {
    LK_DOWN = 2'd0,  // waiting for the far end's beat
    LK_UP   = 2'd1,
    LK_ERR  = 2'd2   // mismatch or timeout
  } lk_state_e;

  lk_state_e        state_q;
  logic             boot_q;   // 1 from the first clock edge after reset on
  logic             beat_q;   // this end's beat goes out this cycle
  logic [TMO_W-1:0] timer_q;
  logic             timeout_q;
  link_cfg_t        partner_q;
  // The next state is computed in the clocked block: it reads the far end's beat, a top-level input of the router,
  // and feeds registers only (trn_noc_link_tx, "At the clock edge", says why). Up and error are final.
  always_ff @(posedge clk_i or negedge rst_ni) begin : at_edge
    lk_state_e state_d;
    if (!rst_ni) begin
      state_q   <= LK_DOWN;
      boot_q    <= 1'b0;
      beat_q    <= 1'b0;
      timer_q   <= '0;
      timeout_q <= 1'b0;
      partner_q <= '0;
    end else begin
      state_d = state_q;
      if (state_q == LK_DOWN) begin
        if (far_beat_i)                        state_d = (far_cfg_i == MY_CFG) ? LK_UP : LK_ERR;
        else if (32'(timer_q) >= LINK_TIMEOUT) state_d = LK_ERR;
      end else if (state_q != LK_UP) begin
        state_d = LK_ERR;
      end
      state_q <= state_d;
      boot_q  <= 1'b1;
      beat_q  <= !boot_q;  // exactly the second cycle after reset: nothing is sent during reset
      if (state_q == LK_DOWN) begin
        timer_q <= timer_q + 1'b1;
        if (far_beat_i) partner_q <= far_cfg_i;
        else if (state_d == LK_ERR) timeout_q <= 1'b1;
      end
    end
  end

  assign beat_o        = beat_q;
  assign my_cfg_o      = MY_CFG;
  assign up_o          = (state_q == LK_UP);
  assign err_o         = (state_q == LK_ERR);
  assign timeout_o     = timeout_q;
  assign partner_cfg_o = partner_q;

`ifndef SYNTHESIS
  // "the receiver has" / "the sender is built for": the far end's layout, then this end's.
  localparam string FAR  = IS_SENDER ? "the receiver has" : "the sender is built for";
  localparam string NEAR = IS_SENDER ? "this sender is built for" : "this receiver has";
  localparam string FROM = IS_SENDER ? "the receiver" : "the sender";

  // Each rule is about a cycle in which the link is down or the far end's beat arrives; after bring-up, with no
  // beat, there is nothing to check (and a simulator skips the branch).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni && (state_q == LK_DOWN || far_beat_i)) begin
      a_cfg_match: assert (!(state_q == LK_DOWN && far_beat_i) || far_cfg_i == MY_CFG)
        else $error("%s: link bring-up failed: flow-control mismatch: %s %0d VCs x %0d flits %s %0d VCs x %0d flits %s",
                    OWNER, FAR, far_cfg_i.num_vc, far_cfg_i.depth, {"per VC buffer, ", NEAR}, NUM_VC, DEPTH,
                    "(NUM_VC and DEPTH must match on both ends)");
      a_bringup_timeout: assert (!(state_q == LK_DOWN && !far_beat_i && 32'(timer_q) >= LINK_TIMEOUT))
        else $error("%s: link bring-up failed: no %s from %s within %0d cycles of reset (link not connected?)",
                    OWNER, FAR_BEAT, FROM, LINK_TIMEOUT);
      a_beat_once: assert (!(far_beat_i && state_q != LK_DOWN))
        else $error("%s: a second %s after bring-up", OWNER, FAR_BEAT);
    end
  end
`endif

endmodule
