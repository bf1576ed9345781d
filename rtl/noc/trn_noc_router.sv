// trn_noc_router: a NeuronLink router for a NDIM-dimensional torus (NDIM = 2: 4 link ports + local; NDIM = 3:
// 6 + local). Wormhole switching with NUM_VC virtual channels per port, dimension-order routing with dateline VC
// classes (deadlock-free on the torus), credit-based flow control with a checked link bring-up, separable
// round-robin VC and switch allocation. docs/neuronlink.md describes the format, the deadlock-freedom argument and
// the timing; trn_noc_pkg has the flit and link types.
//
// Pipeline of one flit (no contention, every stage one clock edge):
//   arrival (pushed into its VC buffer) -> route computation + VC allocation (head flits only) -> switch allocation
//   and traversal into the output register -> on the link (tx_fwd_o) the next cycle.
// A head flit spends 3 cycles in a router (arrival edge to the edge it enters the next router's buffer, with a
// 0-cycle link); body flits follow one per cycle.
//
// Ports:
//   my_coord_i, dim_max_i   straps, constant after reset (registered inside): this router's coordinates and the
//                           largest coordinate of each dimension (torus size - 1; dimensions >= NDIM must be 0, each
//                           size >= 2).
//   inj_*                   local injection, valid/ready: a beat is taken when inj_valid_i && inj_ready_o at a clock
//                           edge, and must be held unchanged until taken. inj_flit_i.vc (< NUM_VC) picks the local
//                           input VC; a packet's flits go on one VC, in order, without another packet's flits on
//                           that VC in between. One packet at a time: from a head flit to its tail every beat is on
//                           the head's VC (a_inj_whole_packet; a beat of another VC could wait in the spill register
//                           in front of the open packet's tail for ever). inj_ready_o comes from a register.
//                           Head-of-line: a beat for a full VC blocks the stream until that VC drains.
//   ej_*                    local ejection, valid/ready with the same rules; ej_flit_o.vc is the ejection VC the
//                           packet was allocated: flits of packets on different VCs may interleave, flits of one VC
//                           are one packet after another, in order. ej_valid_o and ej_flit_o come from registers.
//   rx_fwd_i / rx_bwd_o     link port l (0 .. 2*NDIM-1; dimension l/2, negative side when l is odd), receiving end:
//                           flits in, credits and the credit-init beat out (trn_noc_link_rx).
//   tx_fwd_o / tx_bwd_i     link port l, sending end: flits and the bring-up beat out, credits in (trn_noc_link_tx).
//                           Connect tx_fwd_o[l] of one router to rx_fwd_i[l ^ 1] of its neighbour on that side, and
//                           rx_bwd_o[l ^ 1] back to tx_bwd_i[l], through any number of register stages (link
//                           latency); every output is a register, so links add no combinational paths.
//   link_up_o[l]            both directions of link port l came up with matching flow-control parameters.
//   link_err_o[l]           bring-up of link port l failed, or the link went down (REPLAY_LIMIT replays in a row
//                           without an acknowledgement); link_err_cause_o[l] says why (link_err_e). Packets routed
//                           to a port that is not up wait; the error output is the signal that they will.
//   link_peer_cfg_o[l]      {NUM_VC, DEPTH} the receiver at the far end advertised (its credit-init beat), and
//   link_peer_hello_o[l]    {NUM_VC, DEPTH} the sender at the far end advertised (its bring-up beat); 0 until seen.
//   link_crc_err_o[l]       one cycle per flit that arrived on link port l with a bad CRC (dropped, replayed);
//   link_replay_o[l]        one cycle per replay that link port l's sender starts (after a NAK or its timeout);
//   link_bwd_err_o[l]       one cycle per backward beat (credits, acknowledgement) with a bad CRC that link port
//                           l's sender dropped. Event outputs for counters, from registers: high in the cycle after
//                           the edge of the event (docs/neuronlink.md "Link-level retry").
//   params_o                the build parameters.
module trn_noc_router
  import trn_noc_pkg::*;
#(
  parameter int unsigned NDIM         = 2,   // 1..3
  parameter int unsigned NUM_VC       = 2,   // VCs per port, a multiple of 2 * VC_GROUPS, <= 8
  parameter int unsigned VC_GROUPS    = 1,   // message-class groups: class c uses VC group c % VC_GROUPS
  parameter int unsigned DEPTH        = 4,   // flit slots per VC buffer, 1..63
  parameter int unsigned LINK_TIMEOUT = 64,  // cycles after reset within which both bring-up beats must arrive
  parameter int unsigned REPLAY_TIMEOUT = 128,  // link retry: cycles without an acknowledgement before a replay
  parameter int unsigned REPLAY_LIMIT   = 8,    // link retry: replays in a row without one before the link is down
  parameter int unsigned REFRESH        = 32,   // link retry: cycles between the receivers' refresh beats
  localparam int unsigned NLINK = 2 * NDIM
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,           // asynchronous, active low
  input  coord_t                      my_coord_i,
  input  coord_t                      dim_max_i,
  output router_params_t              params_o,
  input  logic                        inj_valid_i,
  output logic                        inj_ready_o,
  input  flit_t                       inj_flit_i,
  output logic                        ej_valid_o,
  input  logic                        ej_ready_i,
  output flit_t                       ej_flit_o,
  input  link_fwd_t [NLINK-1:0]       rx_fwd_i,
  output link_bwd_t [NLINK-1:0]       rx_bwd_o,
  output link_fwd_t [NLINK-1:0]       tx_fwd_o,
  input  link_bwd_t [NLINK-1:0]       tx_bwd_i,
  output logic [NLINK-1:0]            link_up_o,
  output logic [NLINK-1:0]            link_err_o,
  output logic [NLINK-1:0][2:0]       link_err_cause_o,
  output link_cfg_t [NLINK-1:0]       link_peer_cfg_o,
  output link_cfg_t [NLINK-1:0]       link_peer_hello_o,
  output logic [NLINK-1:0]            link_crc_err_o,
  output logic [NLINK-1:0]            link_replay_o,
  output logic [NLINK-1:0]            link_bwd_err_o
);

  localparam int unsigned NPORT  = 1 + NLINK;
  localparam int unsigned NIN    = NPORT * NUM_VC;
  localparam int unsigned PORT_W = $clog2(NPORT);
  localparam int unsigned VCI_W  = (NUM_VC > 1) ? $clog2(NUM_VC) : 1;
  localparam int unsigned IN_W   = $clog2(NIN);

  assign params_o = '{replay_timeout: 16'(REPLAY_TIMEOUT), replay_limit: 8'(REPLAY_LIMIT), refresh: 8'(REFRESH),
                      ndim: 8'(NDIM), num_vc: 8'(NUM_VC), vc_groups: 8'(VC_GROUPS), depth: 8'(DEPTH)};

  // ---------------------------------------------------------------------------------------------------------------
  // Signals per input VC (index i = port * NUM_VC + vc) and per output port
  // ---------------------------------------------------------------------------------------------------------------
  logic [NPORT-1:0]                  push;
  flit_t [NPORT-1:0]                 push_flit;
  logic [NPORT-1:0][NUM_VC-1:0]      full;
  logic [NIN-1:0]                    pop;
  logic [NIN-1:0]                    head_valid;
  flit_t                             head_flit [NPORT][NUM_VC];  // unpacked: word-aligned flits
  logic [NIN-1:0]                    va_req, va_gnt;
  logic [NIN-1:0][PORT_W-1:0]        va_oport;
  logic [NIN-1:0][NUM_VC-1:0]        va_mask;
  logic [NIN-1:0][VCI_W-1:0]         va_gnt_vc;
  logic [NIN-1:0]                    active;
  logic [NIN-1:0][PORT_W-1:0]        oport;
  logic [NIN-1:0][VCI_W-1:0]         ovc;
  logic [NIN-1:0]                    sa_req;
  logic [NPORT-1:0]                  port_ok;
  logic [NPORT-1:0][NUM_VC-1:0]      release_vc;
  logic [NPORT-1:0][NUM_VC-1:0]      room;        // output VC has space downstream
  logic [NPORT-1:0]                  out_valid;
  logic [NPORT-1:0][IN_W-1:0]        out_sel;
  flit_t [NPORT-1:0]                 out_flit;
  logic [NUM_VC-1:0]                 unused_busy_0;
  logic [NPORT-1:0][NUM_VC-1:0]      ovc_busy;

  // ---------------------------------------------------------------------------------------------------------------
  // Local injection: a spill register, then into the VC buffer the flit names
  // ---------------------------------------------------------------------------------------------------------------
  logic  inj_valid, inj_ready, inj_vc_ok;
  flit_t inj_flit;

  trn_prim_spill_reg #(.WIDTH($bits(flit_t))) u_inj (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .in_valid_i  (inj_valid_i),
    .in_ready_o  (inj_ready_o),
    .in_data_i   (inj_flit_i),
    .out_valid_o (inj_valid),
    .out_ready_i (inj_ready),
    .out_data_o  (inj_flit)
  );
  assign inj_vc_ok = 32'(inj_flit.vc) < NUM_VC;
  // A flit naming a VC that does not exist is taken and dropped (a_inj_vc reports it) rather than blocking.
  assign inj_ready = inj_vc_ok ? !full[0][inj_flit.vc[VCI_W-1:0]] : 1'b1;
  assign push[0]      = inj_valid && inj_ready && inj_vc_ok;
  assign push_flit[0] = inj_flit;

  for (genvar l = 0; l < NLINK; l++) begin : g_rx_push
    assign push[l+1]      = rx_accept[l];
    assign push_flit[l+1] = rx_fwd_i[l].flit;
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Straps, registered: the route computation reads these flops, never the top-level inputs, so that a simulator
  // does not settle the routing logic again whenever the harness drives an input (Verilator: 1.5x, docs/
  // performance.md). No head flit is routed before the first clock edge after reset, the edge that loads them.
  // ---------------------------------------------------------------------------------------------------------------
  coord_t my_coord_q, dim_max_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      my_coord_q <= '0;
      dim_max_q  <= '0;
    end else begin
      my_coord_q <= my_coord_i;
      dim_max_q  <= dim_max_i;
    end
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Input ports
  // ---------------------------------------------------------------------------------------------------------------
  for (genvar p = 0; p < NPORT; p++) begin : g_in
    trn_noc_input_port #(
      .PORT(p), .NDIM(NDIM), .NUM_VC(NUM_VC), .VC_GROUPS(VC_GROUPS), .DEPTH(DEPTH)
    ) u_port (
      .clk_i        (clk_i),
      .rst_ni       (rst_ni),
      .my_coord_i   (my_coord_q),
      .dim_max_i    (dim_max_q),
      .push_i       (push[p]),
      .push_flit_i  (push_flit[p]),
      .full_o       (full[p]),
      .pop_i        (pop[p*NUM_VC +: NUM_VC]),
      .head_valid_o (head_valid[p*NUM_VC +: NUM_VC]),
      .head_flit_o  (head_flit[p]),
      .va_req_o     (va_req[p*NUM_VC +: NUM_VC]),
      .va_oport_o   (va_oport[p*NUM_VC +: NUM_VC]),
      .va_mask_o    (va_mask[p*NUM_VC +: NUM_VC]),
      .va_gnt_i     (va_gnt[p*NUM_VC +: NUM_VC]),
      .va_gnt_vc_i  (va_gnt_vc[p*NUM_VC +: NUM_VC]),
      .active_o     (active[p*NUM_VC +: NUM_VC]),
      .oport_o      (oport[p*NUM_VC +: NUM_VC]),
      .ovc_o        (ovc[p*NUM_VC +: NUM_VC])
    );
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Allocation
  // ---------------------------------------------------------------------------------------------------------------
  logic [NLINK-1:0]             tx_up, tx_err, tx_timeout, tx_down, rx_up, rx_err, rx_timeout, rx_accept;
  logic [NLINK-1:0][NUM_VC-1:0] crd_avail;
  logic                         ej_in_ready;

  assign port_ok[0] = 1'b1;
  assign room[0]    = {NUM_VC{ej_in_ready}};
  for (genvar l = 0; l < NLINK; l++) begin : g_port_ok
    assign port_ok[l+1] = tx_up[l];
    assign room[l+1]    = crd_avail[l];
  end

  always_comb begin
    release_vc = '0;
    for (int unsigned i = 0; i < NIN; i++) begin
      if (pop[i] && head_flit[i / NUM_VC][i % NUM_VC].tail) release_vc[oport[i]][ovc[i]] = 1'b1;
    end
  end

  trn_noc_vc_alloc #(.NPORT(NPORT), .NUM_VC(NUM_VC)) u_va (
    .clk_i     (clk_i),
    .rst_ni    (rst_ni),
    .req_i     (va_req),
    .oport_i   (va_oport),
    .mask_i    (va_mask),
    .port_ok_i (port_ok),
    .release_i (release_vc),
    .gnt_o     (va_gnt),
    .gnt_vc_o  (va_gnt_vc),
    .busy_o    (ovc_busy)
  );
  assign unused_busy_0 = ovc_busy[0];
  // Link input ports never need full: their upstream counts credits (trn_noc_input_port checks it).
  logic [NLINK-1:0][NUM_VC-1:0] unused_full;
  assign unused_full = full[NPORT-1:1];

  for (genvar i = 0; i < NIN; i++) begin : g_sa_req
    assign sa_req[i] = active[i] && head_valid[i] && room[oport[i]][ovc[i]];
  end

  trn_noc_sw_alloc #(.NPORT(NPORT), .NUM_VC(NUM_VC)) u_sa (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .req_i       (sa_req),
    .oport_i     (oport),
    .gnt_o       (pop),
    .out_valid_o (out_valid),
    .out_sel_o   (out_sel)
  );

  // Crossbar: the selected input VC's front flit, relabelled with its output VC.
  for (genvar o = 0; o < NPORT; o++) begin : g_xbar
    always_comb begin
      out_flit[o] = '0;  // no flit: nothing reads it (a simulator skips the copy)
      if (out_valid[o]) begin
        out_flit[o]    = head_flit[32'(out_sel[o]) / NUM_VC][32'(out_sel[o]) % NUM_VC];
        out_flit[o].vc = VC_W'(ovc[out_sel[o]]);
      end
    end
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Links
  // ---------------------------------------------------------------------------------------------------------------
  for (genvar l = 0; l < NLINK; l++) begin : g_link
    logic            free;
    logic [VC_W-1:0] free_vc;
    always_comb begin
      free    = 1'b0;
      free_vc = '0;
      for (int unsigned v = 0; v < NUM_VC; v++) begin
        if (pop[(l + 1) * NUM_VC + v]) begin
          free    = 1'b1;
          free_vc = VC_W'(v);
        end
      end
    end

    trn_noc_link_rx #(
      .NUM_VC(NUM_VC), .DEPTH(DEPTH), .LINK_TIMEOUT(LINK_TIMEOUT), .REFRESH(REFRESH)
    ) u_rx (
      .clk_i         (clk_i),
      .rst_ni        (rst_ni),
      .rx_fwd_i      (rx_fwd_i[l]),
      .accept_o      (rx_accept[l]),
      .rx_bwd_o      (rx_bwd_o[l]),
      .free_i        (free),
      .free_vc_i     (free_vc),
      .up_o          (rx_up[l]),
      .err_o         (rx_err[l]),
      .timeout_o     (rx_timeout[l]),
      .partner_cfg_o (link_peer_hello_o[l]),
      .crc_err_o     (link_crc_err_o[l])
    );

    trn_noc_link_tx #(
      .NUM_VC(NUM_VC), .DEPTH(DEPTH), .LINK_TIMEOUT(LINK_TIMEOUT), .REPLAY_TIMEOUT(REPLAY_TIMEOUT),
      .REPLAY_LIMIT(REPLAY_LIMIT)
    ) u_tx (
      .clk_i         (clk_i),
      .rst_ni        (rst_ni),
      .send_i        (out_valid[l+1]),
      .send_flit_i   (out_flit[l+1]),
      .crd_avail_o   (crd_avail[l]),
      .tx_fwd_o      (tx_fwd_o[l]),
      .tx_bwd_i      (tx_bwd_i[l]),
      .up_o          (tx_up[l]),
      .err_o         (tx_err[l]),
      .timeout_o     (tx_timeout[l]),
      .down_o        (tx_down[l]),
      .partner_cfg_o (link_peer_cfg_o[l]),
      .replay_o      (link_replay_o[l]),
      .bwd_crc_err_o (link_bwd_err_o[l])
    );

    assign link_up_o[l]  = tx_up[l] && rx_up[l];
    assign link_err_o[l] = tx_err[l] || rx_err[l];
    always_comb begin
      if (tx_down[l])                       link_err_cause_o[l] = LINK_ERR_DOWN;
      else if (tx_err[l] && !tx_timeout[l]) link_err_cause_o[l] = LINK_ERR_CREDIT;
      else if (rx_err[l] && !rx_timeout[l]) link_err_cause_o[l] = LINK_ERR_HELLO;
      else if (tx_err[l] || rx_err[l])      link_err_cause_o[l] = LINK_ERR_TIMEOUT;
      else                                  link_err_cause_o[l] = LINK_OK;
    end
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Local ejection: a spill register
  // ---------------------------------------------------------------------------------------------------------------
  trn_prim_spill_reg #(.WIDTH($bits(flit_t))) u_ej (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .in_valid_i  (out_valid[0]),
    .in_ready_o  (ej_in_ready),
    .in_data_i   (out_flit[0]),
    .out_valid_o (ej_valid_o),
    .out_ready_i (ej_ready_i),
    .out_data_o  (ej_flit_o)
  );

  // ---------------------------------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------------------------------
`ifndef SYNTHESIS
  // Per ejection VC: a packet is in progress between its head and its tail.
  logic [NUM_VC-1:0] ej_open_q;
  logic              ej_hs;
  assign ej_hs = ej_valid_o && ej_ready_i;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ej_open_q <= '0;
    end else if (ej_hs && 32'(ej_flit_o.vc) < NUM_VC) begin
      ej_open_q[ej_flit_o.vc[VCI_W-1:0]] <= !ej_flit_o.tail;
    end
  end
  // Injection port: a packet is open (inj_open_q, on VC inj_open_vc_q) from its head's push to its tail's.
  logic            inj_open_q;
  logic [VC_W-1:0] inj_open_vc_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      inj_open_q    <= 1'b0;
      inj_open_vc_q <= '0;
    end else if (push[0]) begin
      inj_open_q    <= !inj_flit.tail;
      inj_open_vc_q <= inj_flit.vc;
    end
  end

  // Rules without time (each on the values before the clock edge, as a concurrent assertion samples them; docs/
  // verification.md "Assertions at the clock edge"). The two that span cycles stay concurrent, below.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      // Straps: legal.
      a_params: assert (NDIM >= 1 && NDIM <= MAX_DIM && NUM_VC >= 2 && NUM_VC <= (1 << VC_W) &&
                        NUM_VC % (2 * VC_GROUPS) == 0 && DEPTH >= 1 && DEPTH < (1 << CFG_DEP_W) &&
                        REPLAY_TIMEOUT >= 2 && REPLAY_TIMEOUT < (1 << 16) && REPLAY_LIMIT >= 1 &&
                        REPLAY_LIMIT < (1 << 8) && REFRESH >= 2 && REFRESH <= 128 && (REFRESH & (REFRESH - 1)) == 0)
        else $error("trn_noc_router: illegal parameters NDIM=%0d NUM_VC=%0d VC_GROUPS=%0d DEPTH=%0d %s", NDIM, NUM_VC,
                    VC_GROUPS, DEPTH, $sformatf("REPLAY_TIMEOUT=%0d REPLAY_LIMIT=%0d REFRESH=%0d", REPLAY_TIMEOUT,
                                                REPLAY_LIMIT, REFRESH));
      a_straps_legal: assert (my_coord_i.x <= dim_max_i.x && my_coord_i.y <= dim_max_i.y &&
                              my_coord_i.z <= dim_max_i.z && dim_max_i.x != '0 && (NDIM < 2 || dim_max_i.y != '0) &&
                              (NDIM < 3 || dim_max_i.z != '0) && (NDIM >= 2 || dim_max_i.y == '0) &&
                              (NDIM >= 3 || dim_max_i.z == '0))
        else $error("trn_noc_router: straps: coordinates (%0d,%0d,%0d) %s (%0d,%0d,%0d) in a %0d-D torus %s",
                    my_coord_i.x, my_coord_i.y, my_coord_i.z, "with largest coordinates",
                    dim_max_i.x, dim_max_i.y, dim_max_i.z, NDIM, "(every size >= 2)");
      // Local ports.
      a_inj_vc: assert (!inj_valid || inj_vc_ok)
        else $error("trn_noc_router: injected flit names VC %0d, the router has %0d VCs (flit dropped)", inj_flit.vc,
                    NUM_VC);
      a_inj_whole_packet: assert (!(push[0] && inj_open_q) || inj_flit.vc == inj_open_vc_q)
        else $error("trn_noc_router: injected flit names VC %0d while the packet on VC %0d is open (%s)", inj_flit.vc,
                    inj_open_vc_q, "one packet at a time per injection port: its tail first");
      a_ej_contiguous: assert (!ej_hs || (32'(ej_flit_o.vc) < NUM_VC &&
                                          ej_flit_o.head == !ej_open_q[ej_flit_o.vc[VCI_W-1:0]]))
        else $error("trn_noc_router: ejection VC %0d: %s flit while a packet is %s", ej_flit_o.vc,
                    ej_flit_o.head ? "head" : "body/tail", ej_open_q[ej_flit_o.vc[VCI_W-1:0]] ? "open" : "closed");
    end
  end
  // Switch: a flit goes only where its packet holds an output VC with room, and only on a link that is up.
  for (genvar o = 0; o < NPORT; o++) begin : g_out_sva
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (rst_ni) begin
        a_out_room: assert (!out_valid[o] || (pop[out_sel[o]] && 32'(oport[out_sel[o]]) == o &&
                                              room[o][ovc[out_sel[o]]] && ovc_busy[o][ovc[out_sel[o]]]))
          else $error("trn_noc_router: output port %0d takes a flit that does not belong there", o);
      end
    end
  end
  for (genvar l = 0; l < NLINK; l++) begin : g_link_sva
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (rst_ni) begin
        a_flit_link_up: assert (!rx_accept[l] || rx_up[l])
          else $error("trn_noc_router: link port %0d: flit arrived before the link came up", l);
      end
    end
  end
  // Straps constant; the ejected beat held while it waits.
  a_straps_stable: assert property (@(posedge clk_i) disable iff (!rst_ni) $stable({my_coord_i, dim_max_i}))
    else $error("trn_noc_router: coordinate straps changed after reset");
  a_ej_hold: assert property (@(posedge clk_i) disable iff (!rst_ni)
      ej_valid_o && !ej_ready_i |=> ej_valid_o && $stable(ej_flit_o))
    else $error("trn_noc_router: ejected beat changed while ej_ready_i was low");
`endif

endmodule
