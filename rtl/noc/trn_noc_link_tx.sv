// trn_noc_link_tx: the sending end of one NeuronLink link: link bring-up, per-VC credit counters and the output
// register that drives the forward channel.
//
// Bring-up (trn_noc_link_bringup). In the second cycle after reset (never during reset) it sends one bring-up beat on the forward
// channel (init = 1, valid = 0, flit.data[9:0] = this end's link_cfg_t {NUM_VC, DEPTH}) for the receiver to
// check, then waits for the receiver's credit-init beat on the backward channel (tx_bwd_i.init). If that beat
// advertises the same NUM_VC and DEPTH, the link is up and every VC starts with DEPTH credits; otherwise the link
// goes to the error state (err_o, cause LINK_ERR_CREDIT, an assertion names both layouts) and never sends. No beat
// within LINK_TIMEOUT cycles of reset is an error too (LINK_ERR_TIMEOUT). A link is never left waiting silently.
//
// Credits (backward channel, tx_bwd_i.valid / .vc): one credit per beat, no handshake (the counter always takes
// it). The receiver returns a credit for every flit slot it frees; a credit that would lift a counter above DEPTH
// is a protocol violation (a_credit_overflow).
//
// Send (send_i / send_flit_i): the switch puts one flit on the link; allowed only while up_o is high and
// crd_avail_o[send_flit_i.vc] is high (a_credit_underflow). The flit leaves through a register: it is on
// tx_fwd_o the cycle after send_i. There is no ready: credits guarantee the receiver has room.
module trn_noc_link_tx
  import trn_noc_pkg::*;
#(
  parameter int unsigned NUM_VC       = 2,
  parameter int unsigned DEPTH        = 4,
  parameter int unsigned LINK_TIMEOUT = 64
) (
  input  logic              clk_i,
  input  logic              rst_ni,        // asynchronous, active low
  // From the switch
  input  logic              send_i,
  input  flit_t             send_flit_i,   // vc = the output VC allocated to the packet
  output logic [NUM_VC-1:0] crd_avail_o,   // the VC has at least one credit
  // The link
  output link_fwd_t         tx_fwd_o,
  input  link_bwd_t         tx_bwd_i,
  // Status
  output logic              up_o,
  output logic              err_o,
  output logic              timeout_o,     // err_o because no credit-init beat came (else: a mismatch)
  output link_cfg_t         partner_cfg_o  // what the receiver advertised (valid once up_o or err_o)
);

  localparam int unsigned CRD_W = $clog2(DEPTH + 1);
  localparam int unsigned VCI_W = (NUM_VC > 1) ? $clog2(NUM_VC) : 1;

  logic                         hello;   // the bring-up beat goes out this cycle
  logic                         up, rise;
  link_cfg_t                    my_cfg;
  logic [NUM_VC-1:0][CRD_W-1:0] crd_q;
  logic                         out_valid_q;
  flit_t                        out_flit_q;
  logic                         crd_ret;

  assign crd_ret = tx_bwd_i.valid;

  trn_noc_link_bringup #(
    .NUM_VC(NUM_VC), .DEPTH(DEPTH), .LINK_TIMEOUT(LINK_TIMEOUT),
    .OWNER("trn_noc_link_tx"), .IS_SENDER(1'b1), .FAR_BEAT("credit-init beat")
  ) u_bringup (
    .clk_i, .rst_ni,
    .far_beat_i   (tx_bwd_i.init),
    .far_cfg_i    (tx_bwd_i.cfg),
    .beat_o       (hello),
    .my_cfg_o     (my_cfg),
    .rise_o       (rise),
    .up_o         (up),
    .err_o,
    .timeout_o,
    .partner_cfg_o
  );

  // Credits: DEPTH per VC once up; minus one per flit sent on the VC, plus one per credit returned.
  for (genvar v = 0; v < NUM_VC; v++) begin : g_crd
    logic take, give;
    assign take = send_i && (32'(send_flit_i.vc) == v);
    assign give = crd_ret && (32'(tx_bwd_i.vc) == v);
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        crd_q[v] <= '0;
      end else if (rise) begin
        crd_q[v] <= CRD_W'(DEPTH);
      end else if (take != give) begin
        crd_q[v] <= take ? crd_q[v] - 1'b1 : crd_q[v] + 1'b1;
      end
    end
    assign crd_avail_o[v] = up && (crd_q[v] != '0);
  end

  // Output register.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else begin
      out_valid_q <= send_i;
    end
  end
  always_ff @(posedge clk_i) begin
    if (send_i) out_flit_q <= send_flit_i;
  end

  always_comb begin
    tx_fwd_o       = '0;
    tx_fwd_o.valid = out_valid_q;
    tx_fwd_o.flit  = out_flit_q;
    if (hello) begin
      tx_fwd_o.init                         = 1'b1;
      tx_fwd_o.flit                         = '0;
      tx_fwd_o.flit.data[$bits(my_cfg)-1:0] = my_cfg;
    end
  end

  assign up_o = up;

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

  // Bring-up's own rules (layouts match, a beat within LINK_TIMEOUT, one beat only): trn_noc_link_bringup.
  a_credit_before_up: assert property (@(posedge clk_i) disable iff (!rst_ni) crd_ret |-> up)
    else $error("trn_noc_link_tx: credit returned before the link came up");
  a_credit_vc: assert property (@(posedge clk_i) disable iff (!rst_ni) crd_ret |-> 32'(tx_bwd_i.vc) < NUM_VC)
    else $error("trn_noc_link_tx: credit for VC %0d, only %0d VCs", tx_bwd_i.vc, NUM_VC);
  a_send_vc: assert property (@(posedge clk_i) disable iff (!rst_ni) send_i |-> 32'(send_flit_i.vc) < NUM_VC)
    else $error("trn_noc_link_tx: flit sent on VC %0d, only %0d VCs", send_flit_i.vc, NUM_VC);
  a_send_when_up: assert property (@(posedge clk_i) disable iff (!rst_ni) send_i |-> up)
    else $error("trn_noc_link_tx: flit sent while the link is not up");
  a_send_no_hello: assert property (@(posedge clk_i) disable iff (!rst_ni) !(hello && out_valid_q))
    else $error("trn_noc_link_tx: a flit collides with the bring-up beat");
  a_packet_contiguous: assert property (@(posedge clk_i) disable iff (!rst_ni)
      send_i && 32'(send_flit_i.vc) < NUM_VC |-> send_flit_i.head == !open_q[send_flit_i.vc[VCI_W-1:0]])
    else $error("trn_noc_link_tx: VC %0d: %s flit while a packet is %s (packets must stay contiguous per VC)",
                send_flit_i.vc, send_flit_i.head ? "head" : "body/tail",
                open_q[send_flit_i.vc[VCI_W-1:0]] ? "open" : "closed");
  for (genvar v = 0; v < NUM_VC; v++) begin : g_crd_sva
    a_credit_overflow: assert property (@(posedge clk_i) disable iff (!rst_ni)
        !(g_crd[v].give && !g_crd[v].take && 32'(crd_q[v]) >= DEPTH))
      else $error("trn_noc_link_tx: VC %0d: credit returned with %0d credits already (above the buffer depth %0d)",
                  v, crd_q[v], DEPTH);
    a_credit_underflow: assert property (@(posedge clk_i) disable iff (!rst_ni)
        !(g_crd[v].take && !g_crd[v].give && crd_q[v] == '0))
      else $error("trn_noc_link_tx: VC %0d: flit sent with no credit (credits would go below 0)", v);
    a_credit_range: assert property (@(posedge clk_i) disable iff (!rst_ni) 32'(crd_q[v]) <= DEPTH)
      else $error("trn_noc_link_tx: VC %0d: %0d credits, above the buffer depth %0d", v, crd_q[v], DEPTH);
  end
`endif

endmodule
