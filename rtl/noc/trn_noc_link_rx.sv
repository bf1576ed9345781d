// trn_noc_link_rx: the receiving end of one NeuronLink link: link bring-up and the credit return.
//
// Bring-up (trn_noc_link_bringup). In the second cycle after reset (never during reset) it sends one credit-init
// beat on the backward channel (init = 1, valid = 0, cfg = this end's {NUM_VC, DEPTH}): the sender takes it as
// "DEPTH credits for each of NUM_VC VCs" if its own parameters agree. It also checks the sender's bring-up beat
// (rx_fwd_i.init, flit.data[9:0]) against its own parameters: equal = up, different = error (err_o,
// LINK_ERR_HELLO, an assertion names both layouts); no beat within LINK_TIMEOUT cycles of reset = error
// (LINK_ERR_TIMEOUT).
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

  logic            init_beat;  // the credit-init beat goes out this cycle
  logic            crd_valid_q;
  logic [VC_W-1:0] crd_vc_q;
  logic            up, rise;
  link_cfg_t       my_cfg;

  // The sender's bring-up beat carries its layout in flit.data[9:0].
  trn_noc_link_bringup #(
    .NUM_VC(NUM_VC), .DEPTH(DEPTH), .LINK_TIMEOUT(LINK_TIMEOUT),
    .OWNER("trn_noc_link_rx"), .IS_SENDER(1'b0), .FAR_BEAT("bring-up beat")
  ) u_bringup (
    .clk_i, .rst_ni,
    .far_beat_i   (rx_fwd_i.init),
    .far_cfg_i    (rx_fwd_i.flit.data[$bits(link_cfg_t)-1:0]),
    .beat_o       (init_beat),
    .my_cfg_o     (my_cfg),
    .rise_o       (rise),
    .up_o         (up),
    .err_o,
    .timeout_o,
    .partner_cfg_o
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      crd_valid_q <= 1'b0;
      crd_vc_q    <= '0;
    end else begin
      crd_valid_q <= free_i;
      crd_vc_q    <= free_vc_i;
    end
  end

  always_comb begin
    rx_bwd_o       = '0;
    rx_bwd_o.valid = crd_valid_q;
    rx_bwd_o.vc    = crd_vc_q;
    if (init_beat) begin
      rx_bwd_o.init = 1'b1;
      rx_bwd_o.cfg  = my_cfg;
    end
  end

  assign up_o = up;

  // The unused part of the forward channel: flits are taken by the input port.
  logic unused;
  assign unused = ^{rx_fwd_i.valid, rx_fwd_i.flit.head, rx_fwd_i.flit.tail, rx_fwd_i.flit.vc,
                    rx_fwd_i.flit.data[DATA_W-1:$bits(link_cfg_t)], rise};

`ifndef SYNTHESIS
  // Bring-up's own rules (layouts match, a beat within LINK_TIMEOUT, one beat only): trn_noc_link_bringup.
  a_flit_when_up: assert property (@(posedge clk_i) disable iff (!rst_ni) rx_fwd_i.valid |-> up)
    else $error("trn_noc_link_rx: flit arrived while the link is not up");
  a_free_vc: assert property (@(posedge clk_i) disable iff (!rst_ni) free_i |-> 32'(free_vc_i) < NUM_VC)
    else $error("trn_noc_link_rx: credit for VC %0d, only %0d VCs", free_vc_i, NUM_VC);
  a_no_credit_at_init: assert property (@(posedge clk_i) disable iff (!rst_ni) !(init_beat && crd_valid_q))
    else $error("trn_noc_link_rx: a credit collides with the credit-init beat");
`endif

endmodule
