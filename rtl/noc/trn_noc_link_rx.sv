// trn_noc_link_rx: the receiving end of one NeuronLink link: link bring-up, the check of every arriving flit
// (CRC and sequence number), and the backward channel (credits, acknowledgements, NAKs).
//
// Bring-up (trn_noc_link_bringup). In the second cycle after reset (never during reset) it sends one credit-init
// beat on the backward channel (init = 1, valid = 0, ack = this end's {NUM_VC, DEPTH}): the sender takes it as
// "DEPTH credits for each of NUM_VC VCs" if its own parameters agree. It also checks the sender's bring-up beat
// (rx_fwd_i.init, flit.data[9:0]) against its own parameters: equal = up, different = error (err_o,
// LINK_ERR_HELLO, an assertion names both layouts); no beat within LINK_TIMEOUT cycles of reset = error
// (LINK_ERR_TIMEOUT).
//
// Arrival (rx_fwd_i.valid). A flit is accepted (accept_o: the input port stores it this cycle) only if its CRC is
// right and its sequence number is the one expected next. Otherwise it is dropped: a bad CRC (crc_err_o) or a
// sequence number ahead of the expected one (a flit before it was lost) starts an error episode: one beat with the
// NAK bit asks the sender to replay from the expected flit, and later bad flits are dropped silently until that
// flit arrives (the sender's replay timeout covers a lost NAK). A flit behind the expected one (a replay of one
// already stored) is dropped and acknowledged again.
//
// Backward beats, one per cycle at most, through a register (rx_bwd_o the next cycle): whenever the input buffer
// frees a slot (free_i / free_vc_i; at most one per cycle, the switch takes at most one flit per input port per
// cycle), a flit is accepted or dropped, and every REFRESH cycles regardless (round robin over the VCs). Each beat
// carries the count of slots freed so far on one VC, the next expected sequence number and the NAK bit, with their
// CRC. Because the counts are cumulative, a beat lost to a bit error costs nothing once a later one arrives; the
// refresh bounds how long that takes when the link is otherwise idle.
module trn_noc_link_rx
  import trn_noc_pkg::*;
#(
  parameter int unsigned NUM_VC       = 2,
  parameter int unsigned DEPTH        = 4,
  parameter int unsigned LINK_TIMEOUT = 64,
  parameter int unsigned REFRESH      = 32   // cycles between refresh beats, a power of two
) (
  input  logic            clk_i,
  input  logic            rst_ni,       // asynchronous, active low
  input  link_fwd_t       rx_fwd_i,
  output logic            accept_o,     // rx_fwd_i.flit goes into the input buffer this cycle
  output link_bwd_t       rx_bwd_o,
  input  logic            free_i,
  input  logic [VC_W-1:0] free_vc_i,
  output logic            up_o,
  output logic            err_o,
  output logic            timeout_o,    // err_o because no bring-up beat came (else: a mismatch)
  output link_cfg_t       partner_cfg_o,// what the sender advertised
  output logic            crc_err_o     // from a register: a flit with a bad CRC was dropped at the last edge
);

  localparam int unsigned RFR_W = $clog2(REFRESH);
  localparam int unsigned VCI_W = (NUM_VC > 1) ? $clog2(NUM_VC) : 1;

  logic                        init_beat;  // the credit-init beat goes out this cycle
  logic                        up;
  link_cfg_t                   my_cfg;
  logic [SEQ_W-1:0]            exp_q;      // sequence number expected next
  logic                        nak_q;      // in an error episode: NAK sent, waiting for flit exp_q
  logic [NUM_VC-1:0][FC_W-1:0] fc_q;       // slots freed per VC since reset
  logic [RFR_W-1:0]            rfr_q;      // refresh timer, free running from reset
  logic [VCI_W-1:0]            rvc_q;      // VC of the next refresh beat
  link_bwd_t                   bwd_q;
  logic                        crc_err_q;

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
    .up_o         (up),
    .err_o,
    .timeout_o,
    .partner_cfg_o
  );

  // ---- Arrival check: a flit goes into the input buffer this cycle (accept_o) ----
  logic valid, crc_ok, accept;
  assign valid = up && rx_fwd_i.valid;
  // Checked only when a flit is there: a simulator then skips the CRC on idle cycles (Verilator: this logic reads
  // top-level inputs, so it is evaluated on every eval() call).
  always_comb begin
    crc_ok = 1'b1;
    if (rx_fwd_i.valid) crc_ok = fwd_crc(rx_fwd_i.seq, rx_fwd_i.flit) == rx_fwd_i.crc;
  end
  assign accept = valid && crc_ok && rx_fwd_i.seq == exp_q;

  // ---- At the clock edge: error episodes, freed-slot counts, the next backward beat ----
  // Computed in the clocked block, once per edge: it reads the arriving beat (a top-level input of the router) and
  // feeds registers only (trn_noc_link_tx, "At the clock edge", says why).
  always_ff @(posedge clk_i or negedge rst_ni) begin : at_edge
    logic                        drop_err, nak_now, tick;
    logic [SEQ_W-1:0]            ahead;
    logic [NUM_VC-1:0][FC_W-1:0] fc_d;
    logic [VCI_W-1:0]            beat_vc;
    link_bwd_t                   bwd_d;
    if (!rst_ni) begin
      exp_q     <= '0;
      nak_q     <= 1'b0;
      fc_q      <= '0;
      rfr_q     <= '0;
      rvc_q     <= '0;
      bwd_q     <= '0;
      crc_err_q <= 1'b0;
    end else begin
      // A bad CRC, or a gap (a sequence number ahead of the expected one); one behind it is a replayed duplicate,
      // dropped and acknowledged again.
      ahead    = rx_fwd_i.seq - exp_q;
      drop_err = valid && (!crc_ok || (ahead != '0 && !ahead[SEQ_W-1]));
      nak_now  = drop_err && !nak_q;
      tick     = rfr_q == '1;
      fc_d     = fc_q;
      if (free_i) fc_d[free_vc_i[VCI_W-1:0]] = fc_q[free_vc_i[VCI_W-1:0]] + 1'b1;
      beat_vc     = free_i ? free_vc_i[VCI_W-1:0] : rvc_q;
      bwd_d       = '0;
      bwd_d.valid = up && (free_i || valid || tick);
      bwd_d.vc    = VC_W'(beat_vc);
      bwd_d.fc    = fc_d[beat_vc];
      bwd_d.ack   = exp_q + SEQ_W'(accept);
      bwd_d.nak   = nak_now;
      // The CRC once per beat, here rather than in a continuous assignment.
      if (bwd_d.valid) bwd_d.crc = bwd_crc(bwd_d.vc, bwd_d.fc, bwd_d.ack, bwd_d.nak);

      crc_err_q <= valid && !crc_ok;
      if (accept) exp_q <= exp_q + 1'b1;
      if (accept) nak_q <= 1'b0;
      else if (nak_now) nak_q <= 1'b1;
      fc_q  <= fc_d;
      rfr_q <= rfr_q + 1'b1;
      if (tick) rvc_q <= (32'(rvc_q) == NUM_VC - 1) ? '0 : rvc_q + 1'b1;
      bwd_q <= bwd_d;
    end
  end

  always_comb begin
    rx_bwd_o = bwd_q;
    if (init_beat) begin
      rx_bwd_o      = '0;
      rx_bwd_o.init = 1'b1;
      rx_bwd_o.ack  = SEQ_W'(my_cfg);
    end
  end

  assign accept_o  = accept;
  assign up_o      = up;
  assign crc_err_o = crc_err_q;  // registered: no path from the link's inputs to the router's outputs

  // The unused part of the forward channel at bring-up.
  logic unused;
  assign unused = ^{rx_fwd_i.flit.data[DATA_W-1:$bits(link_cfg_t)]};

`ifndef SYNTHESIS
  // Bring-up's own rules (layouts match, a beat within LINK_TIMEOUT, one beat only): trn_noc_link_bringup.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      a_flit_when_up: assert (!rx_fwd_i.valid || up)
        else $error("trn_noc_link_rx: flit arrived while the link is not up");
      a_free_vc: assert (!free_i || 32'(free_vc_i) < NUM_VC)
        else $error("trn_noc_link_rx: credit for VC %0d, only %0d VCs", free_vc_i, NUM_VC);
      a_no_beat_at_init: assert (!(init_beat && bwd_q.valid))
        else $error("trn_noc_link_rx: a backward beat collides with the credit-init beat");
    end
  end
`endif

endmodule
