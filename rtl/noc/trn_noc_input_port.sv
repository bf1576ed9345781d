// trn_noc_input_port: one input port of a NeuronLink router: a FIFO per virtual channel, per-VC packet state, and
// route computation (dimension-order routing with dateline VC classes) for the head flit at the front of each VC.
//
// Push (push_i / push_flit_i): one flit arrives, into the FIFO of VC push_flit_i.vc. There is no ready: a link
// port's upstream sends only with a credit, and the local port is pushed only when full_o[vc] is low. A push into a
// full VC buffer would drop the flit: a_no_overflow.
// Per VC v, towards the allocators:
//   va_req_o[v]       v is idle (no output VC) and a head flit is at its front; va_oport_o / va_mask_o give the
//                     output port and the output VCs it may take there (its dateline class and VC group).
//   va_gnt_i[v]       output VC va_gnt_vc_i[v] at va_oport_o[v] is now the packet's, until its tail leaves.
//   active_o[v]       v holds output VC ovc_o[v] at output port oport_o[v].
//   head_valid_o[v]   the VC's FIFO is not empty; head_flit_o[v] is the flit at its front.
//   pop_i[v]          the switch takes the front flit of v this cycle (only while active_o[v]; one-hot or zero).
module trn_noc_input_port
  import trn_noc_pkg::*;
#(
  parameter int unsigned PORT      = 0,  // 0 = local, 1 + 2d = +d, 2 + 2d = -d
  parameter int unsigned NDIM      = 2,
  parameter int unsigned NUM_VC    = 2,
  parameter int unsigned VC_GROUPS = 1,
  parameter int unsigned DEPTH     = 4,
  localparam int unsigned NPORT  = 1 + 2 * NDIM,
  localparam int unsigned PORT_W = $clog2(NPORT),
  localparam int unsigned VCI_W  = (NUM_VC > 1) ? $clog2(NUM_VC) : 1
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,
  input  coord_t                         my_coord_i,  // straps: this router's coordinates
  input  coord_t                         dim_max_i,   // straps: largest coordinate per dimension (size - 1)
  input  logic                           push_i,
  input  flit_t                          push_flit_i,
  output logic [NUM_VC-1:0]              full_o,
  input  logic [NUM_VC-1:0]              pop_i,
  output logic [NUM_VC-1:0]              head_valid_o,
  output flit_t                          head_flit_o [NUM_VC],  // unpacked: one flit per VC, word-aligned
  output logic [NUM_VC-1:0]              va_req_o,
  output logic [NUM_VC-1:0][PORT_W-1:0]  va_oport_o,
  output logic [NUM_VC-1:0][NUM_VC-1:0]  va_mask_o,
  input  logic [NUM_VC-1:0]              va_gnt_i,
  input  logic [NUM_VC-1:0][VCI_W-1:0]   va_gnt_vc_i,
  output logic [NUM_VC-1:0]              active_o,
  output logic [NUM_VC-1:0][PORT_W-1:0]  oport_o,
  output logic [NUM_VC-1:0][VCI_W-1:0]   ovc_o
);

  localparam int unsigned SET_SIZE = NUM_VC / (2 * VC_GROUPS);  // VCs per (group, dateline class)
  localparam int unsigned IN_DIM   = (PORT == 0) ? 0 : (PORT - 1) / 2;
  localparam bit          IN_NEG   = (PORT != 0) && ((PORT - 1) % 2 == 1);
  localparam int unsigned CNT_W    = $clog2(DEPTH + 1);

  // Output port of dimension-order routing: the lowest dimension whose coordinate differs, in the direction of the
  // shorter way round the ring; the local port when dst is this router. A tie (dst exactly half a ring away, even
  // ring size) goes + from a router at an even coordinate in that dimension and - from an odd one, so the two
  // directions carry the same load (docs/neuronlink.md, "Routing"). A tie only arises where the packet enters the
  // ring: one hop later the way on is shorter than half the ring.
  function automatic logic [PORT_W-1:0] route(coord_t dst, coord_t me, coord_t max);
    logic [PORT_W-1:0] port;
    logic              found;
    port  = '0;
    found = 1'b0;
    for (int unsigned d = 0; d < NDIM; d++) begin
      logic [COORD_W:0] a, b, size, delta;
      logic             neg;
      a    = {1'b0, coord_of(dst, d)};
      b    = {1'b0, coord_of(me, d)};
      size = {1'b0, coord_of(max, d)} + 1'b1;
      if (!found && a != b) begin
        found = 1'b1;
        delta = (a >= b) ? a - b : a + size - b;  // hops in the positive direction
        neg   = ({delta, 1'b0} == {1'b0, size}) ? b[0] : ({delta, 1'b0} > {1'b0, size});
        port  = PORT_W'(1 + 2 * d) + PORT_W'(neg);
      end
    end
    return port;
  endfunction

  // The output VCs of (VC group g, dateline class c).
  function automatic logic [NUM_VC-1:0] set_mask(int unsigned g, int unsigned c);
    logic [NUM_VC-1:0] m;
    for (int unsigned w = 0; w < NUM_VC; w++) m[w] = (w / SET_SIZE == 2 * g + c);
    return m;
  endfunction

  // ---------------------------------------------------------------------------------------------------------------
  // VC buffers
  // ---------------------------------------------------------------------------------------------------------------
  logic [NUM_VC-1:0]            push_vc, push_ready;
  logic [NUM_VC-1:0][CNT_W-1:0] count;

  // The VC the arriving flit names, one-hot (a decoder: one shift; none for a VC that does not exist).
  assign push_vc = push_i ? NUM_VC'((NUM_VC + 1)'(1) << push_flit_i.vc) : '0;

  for (genvar v = 0; v < NUM_VC; v++) begin : g_vc
    trn_prim_fifo #(.WIDTH($bits(flit_t)), .DEPTH(DEPTH)) u_fifo (
      .clk_i        (clk_i),
      .rst_ni       (rst_ni),
      .push_valid_i (push_vc[v]),
      .push_ready_o (push_ready[v]),
      .push_data_i  (push_flit_i),
      .pop_valid_o  (head_valid_o[v]),
      .pop_ready_i  (pop_i[v]),
      .pop_data_o   (head_flit_o[v]),
      .count_o      (count[v])
    );
    assign full_o[v] = !push_ready[v];
  end

  // ---------------------------------------------------------------------------------------------------------------
  // Route computation and VC state
  // ---------------------------------------------------------------------------------------------------------------
  logic [NUM_VC-1:0]             active_q;
  logic [NUM_VC-1:0][PORT_W-1:0] oport_q;
  logic [NUM_VC-1:0][VCI_W-1:0]  ovc_q;

  for (genvar v = 0; v < NUM_VC; v++) begin : g_route
    header_t             hdr;
    logic [PORT_W-1:0]   oport;
    int unsigned         group, dclass, d_out;
    logic                neg_out, wraps, cont;

    assign hdr = header_t'(head_flit_o[v].data);

    // The route of the head flit waiting for an output VC; 0 (port and mask) while the VC requests none, when
    // nothing reads them. Computed only then: a simulator skips the branch on the other cycles.
    always_comb begin
      oport        = '0;
      group        = 0;
      d_out        = 0;
      neg_out      = 1'b0;
      wraps        = 1'b0;
      cont         = 1'b0;
      dclass       = 0;
      va_mask_o[v] = '0;
      if (va_req_o[v]) begin
        oport   = route(hdr.dst, my_coord_i, dim_max_i);
        group   = 32'(hdr.mclass) % VC_GROUPS;
        d_out   = (32'(oport) - 1) / 2;
        neg_out = (32'(oport) - 1) % 2 == 1;
        // The way from here to dst in this ring takes its wrap-around link (positive direction: from the largest
        // coordinate to 0, so dst is below this router; negative: from 0 to the largest, so dst is above it).
        wraps   = neg_out ? (coord_of(hdr.dst, d_out) > coord_of(my_coord_i, d_out))
                          : (coord_of(hdr.dst, d_out) < coord_of(my_coord_i, d_out));
        // Continuing along the same ring in the same direction: the flit came in on the opposite side.
        cont    = (PORT != 0) && (d_out == IN_DIM) && (neg_out != IN_NEG);
        // Dateline class, chosen where the packet enters a ring and kept along it: 1 if its way in this ring takes
        // the wrap-around link, else 0 (the partition of BookSim2's dim_order torus routing; docs/neuronlink.md).
        dclass  = cont ? (v / SET_SIZE) % 2 : (wraps ? 1 : 0);
        if (oport == '0) va_mask_o[v] = set_mask(group, 0) | set_mask(group, 1);
        else             va_mask_o[v] = set_mask(group, dclass);
      end
    end

    assign va_req_o[v]   = head_valid_o[v] && !active_q[v];
    assign va_oport_o[v] = oport;

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        active_q[v] <= 1'b0;
        oport_q[v]  <= '0;
        ovc_q[v]    <= '0;
      end else if (va_gnt_i[v]) begin
        active_q[v] <= 1'b1;
        oport_q[v]  <= oport;
        ovc_q[v]    <= va_gnt_vc_i[v];
      end else if (pop_i[v] && head_flit_o[v].tail) begin
        active_q[v] <= 1'b0;
      end
    end

    logic unused_hdr;
    assign unused_hdr = ^hdr.payload;
  end

  assign active_o = active_q;
  assign oport_o  = oport_q;
  assign ovc_o    = ovc_q;

  // ---------------------------------------------------------------------------------------------------------------
  // Assertions
  // ---------------------------------------------------------------------------------------------------------------
`ifndef SYNTHESIS
  // Per VC: a packet is in progress on arrival (in_open_q) / on departure (out_open_q) after its head and before
  // its tail. Together with the FIFOs this checks that every packet's flits arrive and leave in order, contiguous
  // on their VC: head, bodies, tail, and nothing of another packet in between.
  logic [NUM_VC-1:0] in_open_q, out_open_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      in_open_q  <= '0;
      out_open_q <= '0;
    end else begin
      for (int unsigned v = 0; v < NUM_VC; v++) begin
        if (push_vc[v]) in_open_q[v] <= !push_flit_i.tail;
        if (pop_i[v])   out_open_q[v] <= !head_flit_o[v].tail;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (rst_ni) begin
      if (push_i) begin  // push_vc is 0 without a push
        a_push_vc: assert (32'(push_flit_i.vc) < NUM_VC)
          else $error("trn_noc_input_port %0d: flit on VC %0d, only %0d VCs", PORT, push_flit_i.vc, NUM_VC);
        a_no_overflow: assert ((push_vc & ~push_ready) == '0)
          else $error("trn_noc_input_port %0d: flit arrived on VC %0d with its buffer full (%0d flits): %s",
                      PORT, push_flit_i.vc, DEPTH, "flit dropped (sent without a credit?)");
      end
      a_pop_onehot: assert ($onehot0(pop_i))
        else $error("trn_noc_input_port %0d: more than one VC popped in a cycle (%b)", PORT, pop_i);
    end
  end

  // The per-VC rules, each one check over all VCs of the port (Verilator evaluates every assertion instance every
  // cycle; per-VC copies were 211 of a 2-D, 4-VC router's 682 checks: docs/neuronlink.md, "What is checked"). A bit
  // vector holds each VC's violation; a rule is broken when it is not zero, and the message names the lowest VC that
  // breaks it. The vectors are computed in the clocked block, at the edge only: as continuous assignments the
  // simulator would also settle them on every input change.
  function automatic int unsigned vc_of(logic [NUM_VC-1:0] m);  // the VC a message names
    return lowest_set(64'(m));
  endfunction
  // The destination in the header of flit f (header_t's dst: its top bits; the rest of the flit is not needed).
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic coord_t dst_of(flit_t f);
    return coord_t'(f.data[DATA_W-1 -: $bits(coord_t)]);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  function automatic logic [NUM_VC-1:0] front_heads(flit_t front [NUM_VC]);
    logic [NUM_VC-1:0] h;
    for (int unsigned v = 0; v < NUM_VC; v++) h[v] = front[v].head;
    return h;
  endfunction
  // VCs among `req` whose front flit names a destination outside the torus.
  function automatic logic [NUM_VC-1:0] outside(logic [NUM_VC-1:0] req, flit_t front [NUM_VC], coord_t max);
    logic [NUM_VC-1:0] bad;
    bad = '0;
    for (int unsigned v = 0; v < NUM_VC; v++) begin
      if (req[v]) begin
        coord_t d;
        d      = dst_of(front[v]);
        bad[v] = !(d.x <= max.x && (NDIM >= 2 ? d.y <= max.y : d.y == '0) && (NDIM >= 3 ? d.z <= max.z : d.z == '0));
      end
    end
    return bad;
  endfunction
  // VCs among `gnt` granted an output VC outside their mask.
  function automatic logic [NUM_VC-1:0] outside_mask(logic [NUM_VC-1:0] gnt, logic [NUM_VC-1:0][VCI_W-1:0] gnt_vc,
                                                     logic [NUM_VC-1:0][NUM_VC-1:0] mask);
    logic [NUM_VC-1:0] bad;
    for (int unsigned v = 0; v < NUM_VC; v++) bad[v] = gnt[v] && !mask[v][gnt_vc[v]];
    return bad;
  endfunction
  // VCs among `req` routed back to this port.
  function automatic logic [NUM_VC-1:0] u_turns(logic [NUM_VC-1:0] req, logic [NUM_VC-1:0][PORT_W-1:0] oport);
    logic [NUM_VC-1:0] bad;
    for (int unsigned v = 0; v < NUM_VC; v++) bad[v] = req[v] && PORT != 0 && 32'(oport[v]) == PORT;
    return bad;
  endfunction
  function automatic logic [NUM_VC-1:0] nonzero(logic [NUM_VC-1:0][CNT_W-1:0] cnt);
    logic [NUM_VC-1:0] nz;
    for (int unsigned v = 0; v < NUM_VC; v++) nz[v] = cnt[v] != '0;
    return nz;
  endfunction

  // The words of the messages; each names the lowest VC v set in `bad`.
  function automatic string arrival_msg(logic [NUM_VC-1:0] bad, logic [NUM_VC-1:0] open, logic head);
    int unsigned v;
    v = vc_of(bad);
    return $sformatf("trn_noc_input_port %0d VC %0d: %s flit arrived while a packet was %s %s", PORT, v,
                     head ? "head" : "body/tail", open[v] ? "in progress" : "not started",
                     "(flits must arrive in order, packets contiguous per VC)");
  endfunction
  function automatic string departure_msg(logic [NUM_VC-1:0] bad, logic [NUM_VC-1:0] open,
                                          logic [NUM_VC-1:0] head);
    int unsigned v;
    v = vc_of(bad);
    return $sformatf("trn_noc_input_port %0d VC %0d: %s flit left while a packet was %s", PORT, v,
                     head[v] ? "head" : "body/tail", open[v] ? "in progress" : "not started");
  endfunction
  function automatic string mask_msg(logic [NUM_VC-1:0] bad, logic [NUM_VC-1:0][VCI_W-1:0] gnt_vc,
                                     logic [NUM_VC-1:0][NUM_VC-1:0] mask);
    int unsigned v;
    v = vc_of(bad);
    return $sformatf("trn_noc_input_port %0d VC %0d: granted output VC %0d outside its class (mask %b)", PORT, v,
                     gnt_vc[v], mask[v]);
  endfunction
  function automatic string dst_msg(logic [NUM_VC-1:0] bad, flit_t front [NUM_VC], coord_t max);
    int unsigned v;
    coord_t d;
    v = vc_of(bad);
    d = dst_of(front[v]);
    return $sformatf("trn_noc_input_port %0d VC %0d: destination (%0d,%0d,%0d) outside the %0d-D torus %s %0d,%0d,%0d)",
                     PORT, v, d.x, d.y, d.z, NDIM, "(largest coordinates", max.x, max.y, max.z);
  endfunction

  // Each rule's violation vector is computed once, into the block's own variable, and read by the assertion and its
  // message.
  always_ff @(posedge clk_i or negedge rst_ni) begin : at_edge
    logic [NUM_VC-1:0] bad;
    if (rst_ni) begin
      // A head flit arrives only when no packet is open on its VC, a body or tail only when one is. The rules about
      // an arrival, a departure or a grant are checked in the cycles that have one (a branch a simulator skips).
      if (push_i) begin
        bad = push_vc & ~(in_open_q ^ {NUM_VC{push_flit_i.head}});
        a_arrival_order: assert (bad == '0)
          else $error("%s", arrival_msg(bad, in_open_q, push_flit_i.head));
      end
      if (pop_i != '0) begin
        bad = pop_i & ~(out_open_q ^ front_heads(head_flit_o));
        a_departure_order: assert (bad == '0)
          else $error("%s", departure_msg(bad, out_open_q, front_heads(head_flit_o)));
        bad = pop_i & ~(active_q & head_valid_o);
        a_pop_allocated: assert (bad == '0)
          else $error("trn_noc_input_port %0d VC %0d: flit taken without an output VC or from an empty buffer", PORT,
                      vc_of(bad));
      end
      bad = head_valid_o & ~active_q & ~front_heads(head_flit_o);
      a_idle_front_is_head: assert (bad == '0)
        else $error("trn_noc_input_port %0d VC %0d: a body/tail flit at the front of an idle VC (head lost)", PORT,
                    vc_of(bad));
      if (va_gnt_i != '0) begin
        bad = va_gnt_i & ~va_req_o;
        a_gnt_idle: assert (bad == '0)
          else $error("trn_noc_input_port %0d VC %0d: VC granted without a request", PORT, vc_of(bad));
        bad = outside_mask(va_gnt_i, va_gnt_vc_i, va_mask_o);
        a_gnt_in_mask: assert (bad == '0)
          else $error("%s", mask_msg(bad, va_gnt_vc_i, va_mask_o));
      end
      // Destination inside the torus, and dimension-order routing never sends a packet back where it came from.
      if (va_req_o != '0) begin
        bad = outside(va_req_o, head_flit_o, dim_max_i);
        a_dst_in_torus: assert (bad == '0)
          else $error("%s", dst_msg(bad, head_flit_o, dim_max_i));
        bad = u_turns(va_req_o, va_oport_o);
        a_no_u_turn: assert (bad == '0)
          else $error("trn_noc_input_port %0d VC %0d: route turns the packet back on its own link", PORT, vc_of(bad));
      end
      bad = nonzero(count) ^ head_valid_o;
      a_count_matches: assert (bad == '0)
        else $error("trn_noc_input_port %0d VC %0d: FIFO count and valid disagree", PORT, vc_of(bad));
    end
  end
`endif

endmodule
