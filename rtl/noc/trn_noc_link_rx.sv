// trn_noc_link_rx: the receiving end of one NeuronLink link: link bring-up and the credit return.
//
// Bring-up. In the second cycle after reset (never during reset) it sends one credit-init beat on the backward
// channel (init = 1, valid = 0, cfg = this end's {NUM_VC, DEPTH}): the sender takes it as "DEPTH credits for each
// of NUM_VC VCs" if its own parameters agree. It also checks the sender's bring-up beat (rx_fwd_i.init,
// flit.data[9:0]) against its own parameters: equal = up, different = error (err_o, LINK_ERR_HELLO, an assertion
// names both layouts); no beat within LINK_TIMEOUT cycles of reset = error (LINK_ERR_TIMEOUT).
//
// Credits (free_i / free_vc_i): the input buffer freed one slot of VC free_vc_i this cycle (at most one per cycle:
// the switch takes at most one flit per input port per cycle). The credit goes upstream through a register, on
// rx_bwd_o the next cycle.
module trn_noc_link_rx
  import trn_noc_pkg::*;
#(
  parameter int unsigned NUM_VC       = 2,
  parameter int unsigned DEPTH        = 4,
  parameter int unsigned LINK_TIMEOUT = 64
) (
  input  logic            clk_i,
  input  logic            rst_ni,       // asynchronous, active low
  input  link_fwd_t       rx_fwd_i,     // only the bring-up beat is read here; flits go to the input port
  output link_bwd_t       rx_bwd_o,
  input  logic            free_i,
  input  logic [VC_W-1:0] free_vc_i,
  output logic            up_o,
  output logic            err_o,
  output logic            timeout_o,    // err_o because no bring-up beat came (else: a mismatch)
  output link_cfg_t       partner_cfg_o // what the sender advertised
);

  localparam int unsigned TMO_W  = $clog2(LINK_TIMEOUT + 1);
  localparam link_cfg_t   MY_CFG = '{num_vc: CFG_VC_W'(NUM_VC), depth: CFG_DEP_W'(DEPTH)};

  typedef enum logic [1:0] {
    LK_DOWN = 2'd0,
    LK_UP   = 2'd1,
    LK_ERR  = 2'd2
  } lk_state_e;

  lk_state_e        state_q, state_d;
  logic             boot_q;        // 1 from the first clock edge after reset on
  logic             init_q;        // the credit-init beat goes out this cycle
  logic [TMO_W-1:0] timer_q;
  logic             timeout_q;
  link_cfg_t        partner_q, hello_cfg;
  logic             crd_valid_q;
  logic [VC_W-1:0]  crd_vc_q;
  logic             hello, cfg_ok;

  assign hello     = rx_fwd_i.init;
  assign hello_cfg = rx_fwd_i.flit.data[$bits(link_cfg_t)-1:0];
  assign cfg_ok    = (hello_cfg == MY_CFG);

  always_comb begin
    state_d = state_q;
    unique case (state_q)
      LK_DOWN: begin
        if (hello)                              state_d = cfg_ok ? LK_UP : LK_ERR;
        else if (32'(timer_q) >= LINK_TIMEOUT)  state_d = LK_ERR;
      end
      LK_UP:   state_d = LK_UP;
      LK_ERR:  state_d = LK_ERR;
      default: state_d = LK_ERR;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= LK_DOWN;
      boot_q      <= 1'b0;
      init_q      <= 1'b0;
      timer_q     <= '0;
      timeout_q   <= 1'b0;
      partner_q   <= '0;
      crd_valid_q <= 1'b0;
      crd_vc_q    <= '0;
    end else begin
      state_q     <= state_d;
      boot_q      <= 1'b1;
      init_q      <= !boot_q;  // exactly the second cycle after reset: nothing is sent during reset
      crd_valid_q <= free_i;
      crd_vc_q    <= free_vc_i;
      if (state_q == LK_DOWN) begin
        timer_q <= timer_q + 1'b1;
        if (hello) partner_q <= hello_cfg;
        else if (state_d == LK_ERR) timeout_q <= 1'b1;
      end
    end
  end

  always_comb begin
    rx_bwd_o       = '0;
    rx_bwd_o.valid = crd_valid_q;
    rx_bwd_o.vc    = crd_vc_q;
    if (init_q) begin
      rx_bwd_o.init = 1'b1;
      rx_bwd_o.cfg  = MY_CFG;
    end
  end

  assign up_o          = (state_q == LK_UP);
  assign err_o         = (state_q == LK_ERR);
  assign timeout_o     = timeout_q;
  assign partner_cfg_o = partner_q;

  // The unused part of the forward channel: flits are taken by the input port.
  logic unused_fwd;
  assign unused_fwd = ^{rx_fwd_i.valid, rx_fwd_i.flit.head, rx_fwd_i.flit.tail, rx_fwd_i.flit.vc,
                        rx_fwd_i.flit.data[DATA_W-1:$bits(link_cfg_t)]};

`ifndef SYNTHESIS
  a_cfg_match: assert property (@(posedge clk_i) disable iff (!rst_ni) state_q == LK_DOWN && hello |-> cfg_ok)
    else $error("trn_noc_link_rx: link bring-up failed: %s %0d VCs x %0d flits %s %0d VCs x %0d flits %s",
                "flow-control mismatch: the sender is built for", hello_cfg.num_vc, hello_cfg.depth,
                "per VC buffer, this receiver has", NUM_VC, DEPTH, "(NUM_VC and DEPTH must match on both ends)");
  a_bringup_timeout: assert property (@(posedge clk_i) disable iff (!rst_ni)
      !(state_q == LK_DOWN && !hello && 32'(timer_q) >= LINK_TIMEOUT))
    else $error("trn_noc_link_rx: link bring-up failed: %s %0d cycles of reset (link not connected?)",
                "no bring-up beat from the sender within", LINK_TIMEOUT);
  a_hello_once: assert property (@(posedge clk_i) disable iff (!rst_ni) !(hello && state_q != LK_DOWN))
    else $error("trn_noc_link_rx: a second bring-up beat after bring-up");
  a_flit_when_up: assert property (@(posedge clk_i) disable iff (!rst_ni) rx_fwd_i.valid |-> state_q == LK_UP)
    else $error("trn_noc_link_rx: flit arrived while the link is not up");
  a_free_vc: assert property (@(posedge clk_i) disable iff (!rst_ni) free_i |-> 32'(free_vc_i) < NUM_VC)
    else $error("trn_noc_link_rx: credit for VC %0d, only %0d VCs", free_vc_i, NUM_VC);
  a_no_credit_at_init: assert property (@(posedge clk_i) disable iff (!rst_ni) !(init_q && crd_valid_q))
    else $error("trn_noc_link_rx: a credit collides with the credit-init beat");
`endif

endmodule
