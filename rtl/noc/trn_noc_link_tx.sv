// trn_noc_link_tx: the sending end of one NeuronLink link: link bring-up, per-VC credits, the sequence numbers and
// replay buffer of the link-level retry, and the output register that drives the forward channel.
//
// Bring-up (trn_noc_link_bringup). In the second cycle after reset (never during reset) it sends one bring-up beat on
// the forward channel (init = 1, valid = 0, flit.data[9:0] = this end's link_cfg_t {NUM_VC, DEPTH}) for the receiver
// to check, then waits for the receiver's credit-init beat on the backward channel (tx_bwd_i.init). If that beat
// advertises the same NUM_VC and DEPTH, the link is up and every VC starts with DEPTH credits; otherwise the link
// goes to the error state (err_o, cause LINK_ERR_CREDIT, an assertion names both layouts) and never sends. No beat
// within LINK_TIMEOUT cycles of reset is an error too (LINK_ERR_TIMEOUT). A link is never left waiting silently.
//
// Send (send_i / send_flit_i): the switch puts one flit on the link; allowed only while crd_avail_o[send_flit_i.vc]
// is high (a_credit_underflow, a_send_in_replay). The flit gets the next sequence number, a copy goes into the replay
// buffer, and it leaves through the output register: it is on tx_fwd_o the cycle after send_i, with
// crc = fwd_crc(seq, flit). There is no ready: credits guarantee the receiver has room.
//
// Backward beats (tx_bwd_i.valid) are used only if their CRC is right (a bad one is dropped: every field is
// cumulative, so the next beat carries the news). Each carries:
//   ack   the receiver holds every flit before it: those leave the replay buffer. An ack outside [oldest unacked,
//         next sequence number] breaks the protocol (a_ack_window).
//   vc/fc how many slots of that VC the receiver has freed since reset (modulo 2^FC_W): the credits of the VC grow by
//         the difference to the last count seen. Credits are taken once per flit, when it is first sent; a replayed
//         flit reuses the slot its first copy reserved (the receiver never stored that copy), so replays neither take
//         nor return credits. A count that would lift the credits above DEPTH breaks the protocol
//         (a_credit_overflow).
//   nak   the receiver dropped a flit: replay every unacknowledged flit, oldest first (go-back-N).
// Unacknowledged flits and no acknowledgement for REPLAY_TIMEOUT cycles replay too (a lost flit with nothing behind
// it, or a lost NAK). No new flit is sent during a replay (crd_avail_o is low). After REPLAY_LIMIT replays in a row
// without an acknowledgement, the next one due takes the link down instead (down_o, err_o; the router reports
// LINK_ERR_DOWN): a link that keeps failing ends the run instead of retrying for ever.
//
// The replay buffer has RB_DEPTH = NUM_VC * DEPTH entries rounded up to a power of two: a flit is acknowledged no
// later than its credit comes back (both ride the same backward beats, and the receiver acknowledges a flit when it
// stores it, before it can free its slot), so the unacknowledged flits never outnumber the credits in use
// (a_replay_room).
module trn_noc_link_tx
  import trn_noc_pkg::*;
#(
  parameter int unsigned NUM_VC         = 2,
  parameter int unsigned DEPTH          = 4,
  parameter int unsigned LINK_TIMEOUT   = 64,
  parameter int unsigned REPLAY_TIMEOUT = 128,  // cycles without an acknowledgement before a replay
  parameter int unsigned REPLAY_LIMIT   = 8     // replays in a row without an acknowledgement before link down
) (
  input  logic              clk_i,
  input  logic              rst_ni,        // asynchronous, active low
  // From the switch
  input  logic              send_i,
  input  flit_t             send_flit_i,   // vc = the output VC allocated to the packet
  output logic [NUM_VC-1:0] crd_avail_o,   // the VC has at least one credit and the link may take a new flit
  // The link
  output link_fwd_t         tx_fwd_o,
  input  link_bwd_t         tx_bwd_i,
  // Status
  output logic              up_o,
  output logic              err_o,         // bring-up failed or the link went down
  output logic              timeout_o,     // err_o because no credit-init beat came
  output logic              down_o,        // err_o because REPLAY_LIMIT replays in a row went unacknowledged
  output link_cfg_t         partner_cfg_o, // what the receiver advertised (valid once up_o or err_o)
  // Events, from registers: high for one cycle after the edge of the event (counters in the harness)
  output logic              replay_o,      // a replay started at the last edge (after a NAK or the timeout)
  output logic              bwd_crc_err_o  // a backward beat with a bad CRC was dropped at the last edge
);

  localparam int unsigned CRD_W  = $clog2(DEPTH + 1);
  localparam int unsigned VCI_W  = (NUM_VC > 1) ? $clog2(NUM_VC) : 1;
  localparam int unsigned RB_W   = $clog2(NUM_VC * DEPTH);
  localparam int unsigned RB_DEPTH = 1 << RB_W;
  localparam int unsigned TMR_W  = $clog2(REPLAY_TIMEOUT);
  localparam int unsigned RTY_W  = $clog2(REPLAY_LIMIT + 1);

  logic                         hello;   // the bring-up beat goes out this cycle
  logic                         up, bringup_err;
  link_cfg_t                    my_cfg;
  logic [NUM_VC-1:0][CRD_W-1:0] crd_q;
  logic [NUM_VC-1:0][FC_W-1:0]  fc_q;     // the receiver's freed-slot count per VC, as last heard
  logic [SEQ_W-1:0]             seq_q;    // sequence number of the next new flit
  logic [SEQ_W-1:0]             una_q;    // oldest unacknowledged flit (== seq_q: none)
  flit_t                        rb_q [RB_DEPTH];  // replay buffer, by sequence number modulo RB_DEPTH (unpacked:
                                                  // an entry is an index, not a shift of the whole buffer)
  logic                         rp_q;     // replaying
  logic [SEQ_W-1:0]             rp_seq_q; // next flit to replay
  logic [TMR_W-1:0]             tmr_q;    // cycles waiting for an acknowledgement
  logic [RTY_W-1:0]             rty_q;    // replays since the last acknowledgement
  logic                         down_q;
  logic                         replay_q, bwd_err_q;  // the event outputs
  logic                         out_valid_q;
  logic [SEQ_W-1:0]             out_seq_q;
  logic [FCRC_W-1:0]            out_crc_q;
  flit_t                        out_flit_q;

  trn_noc_link_bringup #(
    .NUM_VC(NUM_VC), .DEPTH(DEPTH), .LINK_TIMEOUT(LINK_TIMEOUT),
    .OWNER("trn_noc_link_tx"), .IS_SENDER(1'b1), .FAR_BEAT("credit-init beat")
  ) u_bringup (
    .clk_i, .rst_ni,
    .far_beat_i   (tx_bwd_i.init),
    .far_cfg_i    (link_cfg_t'(tx_bwd_i.ack)),
    .beat_o       (hello),
    .my_cfg_o     (my_cfg),
    .up_o         (up),
    .err_o        (bringup_err),
    .timeout_o,
    .partner_cfg_o
  );

  // ---- At the clock edge: the backward beat, credits, acknowledgements, replay, the output register ----
  // All of this reads tx_bwd_i, a top-level input of the router, and feeds registers only, so it is computed in the
  // clocked block with the block's own variables: once per edge. As continuous logic a simulator evaluates it again
  // whenever an input may have changed (Verilator 5.006: on every eval() call, and the harness needs two per cycle);
  // nothing outside reads it in the same cycle. In a waveform the block's variables (scope at_edge) hold what was
  // computed at the last edge.
  //
  // Credits: DEPTH per VC while the link is not up (crd_avail_o is low then: no flit is sent and no beat is taken),
  // so every VC has DEPTH when it comes up; then minus one per new flit sent on the VC, plus what the receiver freed.
  // A backward beat carries one VC's cumulative freed-slot count: the credits it returns are the count's advance
  // since the last beat of that VC (modulo 2^FC_W).
  always_ff @(posedge clk_i or negedge rst_ni) begin : at_edge
    logic             bwd_valid, bwd_crc_ok, beat, progress, nak, timeout, replay, waiting, replaying;
    logic [SEQ_W-1:0] outstanding, ack_adv, una_d;
    logic [VCI_W-1:0] bwd_vc;
    logic [FC_W-1:0]  returned;
    logic [NUM_VC-1:0][CRD_W-1:0] crd_d;
    if (!rst_ni) begin
      crd_q       <= '0;
      fc_q        <= '0;
      seq_q       <= '0;
      una_q       <= '0;
      rp_q        <= 1'b0;
      rp_seq_q    <= '0;
      tmr_q       <= '0;
      rty_q       <= '0;
      down_q      <= 1'b0;
      replay_q    <= 1'b0;
      bwd_err_q   <= 1'b0;
      out_valid_q <= 1'b0;
      out_seq_q   <= '0;
      out_crc_q   <= '0;
      out_flit_q  <= '0;
    end else begin
      // The backward beat: its CRC only when there is one (a branch a simulator skips on the other cycles).
      bwd_valid  = up && !down_q && tx_bwd_i.valid;
      bwd_crc_ok = 1'b1;
      if (tx_bwd_i.valid) bwd_crc_ok = bwd_crc(tx_bwd_i.vc, tx_bwd_i.fc, tx_bwd_i.ack, tx_bwd_i.nak) == tx_bwd_i.crc;
      beat        = bwd_valid && bwd_crc_ok;
      outstanding = seq_q - una_q;
      ack_adv     = tx_bwd_i.ack - una_q;
      progress    = beat && ack_adv != '0;
      una_d       = beat ? tx_bwd_i.ack : una_q;
      nak         = beat && tx_bwd_i.nak;
      waiting     = outstanding != '0 && !rp_q;
      timeout     = waiting && !progress && 32'(tmr_q) == REPLAY_TIMEOUT - 1;
      // A NAK when everything is acknowledged (the flit it asks for is the one being sent now) needs no replay.
      replay      = !down_q && ((nak && una_d != seq_q) || timeout);
      bwd_vc      = tx_bwd_i.vc[VCI_W-1:0];
      returned    = tx_bwd_i.fc - fc_q[bwd_vc];

      // Credits: only the beat's VC and the sent flit's VC change (the same one, possibly).
      if (!up) begin
        for (int unsigned v = 0; v < NUM_VC; v++) crd_q[v] <= CRD_W'(DEPTH);
      end else if (beat || send_i) begin
        crd_d = crd_q;
        if (beat && 32'(tx_bwd_i.vc) < NUM_VC) crd_d[bwd_vc] = crd_d[bwd_vc] + CRD_W'(returned);
        if (send_i && 32'(send_flit_i.vc) < NUM_VC) begin
          crd_d[send_flit_i.vc[VCI_W-1:0]] = crd_d[send_flit_i.vc[VCI_W-1:0]] - 1'b1;
        end
        crd_q <= crd_d;
      end
      if (beat && 32'(tx_bwd_i.vc) < NUM_VC) fc_q[bwd_vc] <= tx_bwd_i.fc;

      // Sequence numbers, replay.
      replay_q  <= replay;
      bwd_err_q <= bwd_valid && !bwd_crc_ok;
      if (send_i) seq_q <= seq_q + 1'b1;
      una_q <= una_d;
      tmr_q <= (!waiting || progress || replay) ? '0 : tmr_q + 1'b1;
      if (replay) begin
        rp_q     <= 1'b1;
        rp_seq_q <= una_d;
      end else if (rp_q) begin
        rp_seq_q <= rp_seq_q + 1'b1;
        rp_q     <= rp_seq_q + 1'b1 != seq_q;
      end
      if (replay && (progress ? '0 : rty_q) == RTY_W'(REPLAY_LIMIT)) begin
        down_q <= 1'b1;
        rp_q   <= 1'b0;
      end else if (replay) begin
        rty_q <= (progress ? '0 : rty_q) + 1'b1;
      end else if (progress) begin
        rty_q <= '0;
      end

      // The output register: a replayed flit, else a new one; its CRC computed here, once per flit.
      replaying   = rp_q && !replay && !down_q;
      out_valid_q <= send_i || replaying;
      if (replaying) begin
        out_seq_q  <= rp_seq_q;
        out_flit_q <= rb_q[rp_seq_q[RB_W-1:0]];
        out_crc_q  <= fwd_crc(rp_seq_q, rb_q[rp_seq_q[RB_W-1:0]]);
      end else if (send_i) begin
        out_seq_q  <= seq_q;
        out_flit_q <= send_flit_i;
        out_crc_q  <= fwd_crc(seq_q, send_flit_i);
      end

`ifndef SYNTHESIS
      // The rules about a backward beat, in the cycles that have one.
      if (tx_bwd_i.valid) begin
        a_credit_before_up: assert (up || down_q)
          else $error("trn_noc_link_tx: backward beat before the link came up");
      end
      if (beat) begin
        a_credit_vc: assert (32'(tx_bwd_i.vc) < NUM_VC)
          else $error("trn_noc_link_tx: credit count for VC %0d, only %0d VCs", tx_bwd_i.vc, NUM_VC);
        a_ack_window: assert (ack_adv <= outstanding)
          else $error("trn_noc_link_tx: acknowledgement up to sequence number %0d, but only %0d .. %0d are %s",
                      tx_bwd_i.ack, una_q, seq_q, "unacknowledged");
        a_credit_overflow: assert (32'(tx_bwd_i.vc) >= NUM_VC || 32'(crd_q[bwd_vc]) + 32'(returned) <= DEPTH)
          else $error("%s: VC %0d: %0d credits returned with %0d credits already (above the buffer depth %0d)",
                      "trn_noc_link_tx", tx_bwd_i.vc, returned, crd_q[bwd_vc], DEPTH);
      end
`endif
    end
  end
  always_ff @(posedge clk_i) begin
    if (send_i) rb_q[seq_q[RB_W-1:0]] <= send_flit_i;
  end
  for (genvar v = 0; v < NUM_VC; v++) begin : g_crd
    assign crd_avail_o[v] = up && !down_q && !rp_q && (crd_q[v] != '0);
  end

  always_comb begin
    tx_fwd_o       = '0;
    tx_fwd_o.valid = out_valid_q;
    tx_fwd_o.seq   = out_seq_q;
    tx_fwd_o.crc   = out_crc_q;
    tx_fwd_o.flit  = out_flit_q;
    if (hello) begin
      tx_fwd_o                              = '0;
      tx_fwd_o.init                         = 1'b1;
      tx_fwd_o.flit.data[$bits(my_cfg)-1:0] = my_cfg;
    end
  end

  assign up_o          = up && !down_q;
  assign err_o         = bringup_err || down_q;
  assign down_o        = down_q;
  assign replay_o      = replay_q;  // registered: no path from the link's inputs to the router's outputs
  assign bwd_crc_err_o = bwd_err_q;

  // A flit leaves at most one cycle after it was sent; `open_q` tracks, per VC, whether a packet is in progress on
  // the link (a head without tail went out), to check that packets stay contiguous and in order per VC.
`ifndef SYNTHESIS
  logic [NUM_VC-1:0] open_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      open_q <= '0;
    end else if (send_i && 32'(send_flit_i.vc) < NUM_VC) begin
      open_q[send_flit_i.vc[VCI_W-1:0]] <= !send_flit_i.tail;
    end
  end

  // Bring-up's own rules (layouts match, a beat within LINK_TIMEOUT, one beat only): trn_noc_link_bringup. The
  // rules about a backward beat are in the clocked block above (they read its variables); the rules about a flit sent
  // are checked in the cycles that have one (a branch a simulator skips on the others).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      a_send_no_hello: assert (!(hello && out_valid_q))
        else $error("trn_noc_link_tx: a flit collides with the bring-up beat");
      if (send_i) begin
        a_send_vc: assert (32'(send_flit_i.vc) < NUM_VC)
          else $error("trn_noc_link_tx: flit sent on VC %0d, only %0d VCs", send_flit_i.vc, NUM_VC);
        a_send_when_up: assert (up && !down_q)
          else $error("trn_noc_link_tx: flit sent while the link is not up");
        a_send_in_replay: assert (!rp_q)
          else $error("trn_noc_link_tx: new flit sent during a replay (sequence number %0d of %0d)", rp_seq_q,
                      seq_q);
        a_replay_room: assert (32'(SEQ_W'(seq_q - una_q)) < RB_DEPTH)
          else $error("trn_noc_link_tx: flit sent with the replay buffer full (%0d unacknowledged, %0d entries)",
                      SEQ_W'(seq_q - una_q), RB_DEPTH);
        a_packet_contiguous: assert (32'(send_flit_i.vc) >= NUM_VC ||
                                     send_flit_i.head == !open_q[send_flit_i.vc[VCI_W-1:0]])
          else $error("trn_noc_link_tx: VC %0d: %s flit while a packet is %s (packets must stay contiguous per VC)",
                      send_flit_i.vc, send_flit_i.head ? "head" : "body/tail",
                      open_q[send_flit_i.vc[VCI_W-1:0]] ? "open" : "closed");
      end
    end
  end
  // Credit bounds. A backward beat returns credits to one VC and a flit takes one from one VC, so the overflow rule
  // (above, with the beat) and the underflow rule look at that VC only; the range rule at every VC. The message names
  // the VC.
  logic [VCI_W-1:0] send_vc;
  assign send_vc = send_flit_i.vc[VCI_W-1:0];
  function automatic logic [NUM_VC-1:0] above_depth(logic [NUM_VC-1:0][CRD_W-1:0] crd);
    logic [NUM_VC-1:0] bad;
    for (int unsigned v = 0; v < NUM_VC; v++) bad[v] = 32'(crd[v]) > DEPTH;
    return bad;
  endfunction
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      if (send_i) begin
        a_credit_underflow: assert (32'(send_flit_i.vc) >= NUM_VC || crd_q[send_vc] != '0)
          else $error("trn_noc_link_tx: VC %0d: flit sent with no credit (credits would go below 0)",
                      send_flit_i.vc);
      end
      a_credit_range: assert (above_depth(crd_q) == '0)
        else $error("trn_noc_link_tx: VC %0d: %0d credits, above the buffer depth %0d",
                    lowest_set(64'(above_depth(crd_q))), crd_q[lowest_set(64'(above_depth(crd_q)))], DEPTH);
    end
  end
`endif

endmodule
