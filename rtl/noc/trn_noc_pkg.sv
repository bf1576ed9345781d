// NeuronLink package: the flit and link formats shared by every NeuronLink module, and the routing helpers.
// The formats are fixed here (not parameters), so that routers built with different parameters still agree on the
// wire layout and can detect a flow-control mismatch at link bring-up instead of misreading each other's bits.
// docs/neuronlink.md has the bit tables.
package trn_noc_pkg;

  // ---------------------------------------------------------------------------------------------------------------
  // Limits of the format
  // ---------------------------------------------------------------------------------------------------------------
  localparam int unsigned MAX_DIM   = 3;   // x, y, z
  localparam int unsigned COORD_W   = 4;   // up to 16 routers per torus dimension
  localparam int unsigned VC_W      = 3;   // up to 8 (2 ** VC_W) virtual channels per port
  localparam int unsigned DATA_W    = 64;  // flit payload
  localparam int unsigned MCLASS_W  = 2;   // four message classes
  localparam int unsigned HPAYLD_W  = DATA_W - MAX_DIM * COORD_W - MCLASS_W;  // 50 endpoint bits in a head flit
  localparam int unsigned CFG_VC_W  = 4;   // link_cfg_t fields
  localparam int unsigned CFG_DEP_W = 6;   // up to 63 flit slots per VC buffer
  localparam int unsigned SEQ_W     = 10;  // link sequence numbers, modulo 1024: go-back-N needs more than the
                                           // replay window (<= 8 VCs x 63 flits = 504, rounded up to 512)
  localparam int unsigned FC_W      = 7;   // freed-slot counts per VC, modulo 128 (more than 63, the deepest buffer)
  localparam int unsigned FCRC_W    = 32;  // CRC of a forward beat
  localparam int unsigned BCRC_W    = 32;  // CRC of a backward beat

  // ---------------------------------------------------------------------------------------------------------------
  // Flits
  // ---------------------------------------------------------------------------------------------------------------
  // Router coordinates in the torus; x in the low bits. Dimensions a router does not have are 0.
  typedef struct packed {
    logic [COORD_W-1:0] z;
    logic [COORD_W-1:0] y;
    logic [COORD_W-1:0] x;
  } coord_t;

  // The data field of a head flit. The router reads dst and mclass; payload belongs to the endpoints.
  typedef struct packed {
    coord_t                dst;      // [63:52] destination router
    logic [MCLASS_W-1:0]   mclass;   // [51:50] message class: selects the VC group (VC_GROUPS parameter)
    logic [HPAYLD_W-1:0]   payload;  // [49:0]  endpoint-defined (source, tag, length, ...)
  } header_t;

  // One flit: a packet is a head flit, zero or more body flits and a tail flit; a single-flit packet has head and
  // tail both set. Flits of one packet travel on one VC per link, in order and contiguous on that VC.
  typedef struct packed {
    logic              head;  // [68] first flit; data is a header_t
    logic              tail;  // [67] last flit
    logic [VC_W-1:0]   vc;    // [66:64] virtual channel on the link it is on (rewritten at every hop)
    logic [DATA_W-1:0] data;  // [63:0] header_t (head) or payload (body, tail)
  } flit_t;

  // ---------------------------------------------------------------------------------------------------------------
  // Links: a forward channel (flits, upstream -> downstream) and a backward channel (credits and acknowledgements,
  // downstream -> upstream). Both ends send one bring-up beat in the second cycle after reset carrying their
  // flow-control parameters; the other end compares them with its own (trn_noc_link_bringup). After bring-up every
  // beat is protected by a CRC, every flit carries a sequence number, and the sender keeps each flit in a replay
  // buffer until the receiver acknowledges it (go-back-N; trn_noc_link_tx, trn_noc_link_rx, docs/neuronlink.md
  // "Link-level retry").
  // ---------------------------------------------------------------------------------------------------------------
  typedef struct packed {
    logic [CFG_VC_W-1:0]  num_vc;  // virtual channels per port
    logic [CFG_DEP_W-1:0] depth;   // flit slots per VC receive buffer
  } link_cfg_t;

  typedef struct packed {
    logic               valid;  // [112] a flit is on the link this cycle
    logic               init;   // [111] bring-up beat (valid is 0): flit.data[9:0] is the sender's link_cfg_t
    logic [SEQ_W-1:0]   seq;    // [110:101] link sequence number of the flit
    logic [FCRC_W-1:0]  crc;    // [100:69] fwd_crc(seq, flit)
    flit_t              flit;   // [68:0]
  } link_fwd_t;

  typedef struct packed {
    logic              valid;  // [54] a link-layer beat: credit update, acknowledgement or refresh
    logic              init;   // [53] bring-up beat (valid is 0): ack carries the receiver's link_cfg_t
    logic [VC_W-1:0]   vc;     // [52:50] the VC whose freed-slot count `fc` is
    logic [FC_W-1:0]   fc;     // [49:43] slots of VC `vc` freed since reset, modulo 128 (cumulative credits)
    logic [SEQ_W-1:0]  ack;    // [42:33] sequence number the receiver expects next: all before it arrived
    logic              nak;    // [32] the receiver dropped a flit (bad CRC or a gap): replay from `ack`
    logic [BCRC_W-1:0] crc;    // [31:0] bwd_crc(vc, fc, ack, nak)
  } link_bwd_t;

  // Error causes reported per link port (trn_noc_router link_err_cause_o).
  typedef enum logic [2:0] {
    LINK_OK           = 3'd0,
    LINK_ERR_CREDIT   = 3'd1,  // the receiver's credit-init beat advertised other NUM_VC / DEPTH than ours
    LINK_ERR_HELLO    = 3'd2,  // the sender's bring-up beat advertised other NUM_VC / DEPTH than ours
    LINK_ERR_TIMEOUT  = 3'd3,  // no bring-up beat within LINK_TIMEOUT cycles of reset
    LINK_ERR_DOWN     = 3'd4   // REPLAY_LIMIT replays in a row without an acknowledgement: the link is down
  } link_err_e;

  // ---------------------------------------------------------------------------------------------------------------
  // Link CRCs: CRC-32/MPEG-2 on both channels, most significant message bit first, no reflection, no final XOR (so
  // a beat with errors passes only if the error pattern is itself a code word). Parameters from the CRC catalogue
  // (Greg Cook, reveng.sourceforge.io/crc-catalogue): polynomial 04C11DB7 (the IEEE 802.3 and PCIe LCRC polynomial),
  // init FFFFFFFF, check value 0376E6E7. 32 bits on the backward channel too: a corrupted acknowledgement or credit
  // count that passed a 16-bit CRC (1 in 65536 of the corrupted beats) would break the protocol, which at a high
  // bit error rate happened in a few runs in a hundred. model/noc/noc_link.h computes the same functions in C++.
  // ---------------------------------------------------------------------------------------------------------------
  localparam logic [FCRC_W-1:0] FWD_CRC_POLY = 32'h04C1_1DB7;

  // Byte-at-a-time table of the forward CRC: FWD_CRC_TABLE[x] is the register after feeding byte x into a zero
  // register (Sarwate, "Computation of cyclic redundancy checks via table look-up", CACM 31(8), 1988). A table of
  // constants indexed by XORs is still combinational logic (synthesis flattens it into the XOR matrix of a
  // parallel CRC); it is written so because Verilator then computes a beat's CRC in 9 lookups instead of 79 bit
  // steps, and this logic sits on the router's input path, evaluated on every eval() call.
  typedef logic [FCRC_W-1:0] fwd_crc_table_t [256];
  function automatic fwd_crc_table_t fwd_crc_table();
    fwd_crc_table_t t;
    for (int x = 0; x < 256; x++) begin
      logic [FCRC_W-1:0] c;
      c = FCRC_W'(x) << (FCRC_W - 8);
      for (int k = 0; k < 8; k++) c = {c[FCRC_W-2:0], 1'b0} ^ (c[FCRC_W-1] ? FWD_CRC_POLY : '0);
      t[x] = c;
    end
    return t;
  endfunction
  localparam fwd_crc_table_t FWD_CRC_TABLE = fwd_crc_table();

  // Over the 79 bits {seq, flit}: the first 7 bits one at a time, then 9 bytes through the table.
  function automatic logic [FCRC_W-1:0] fwd_crc(logic [SEQ_W-1:0] seq, flit_t flit);
    logic [SEQ_W+4:0]   h;  // 15 bits {seq, head, tail, vc}
    logic [71:0]        m;  // the last 72 message bits
    logic [FCRC_W-1:0]  c;
    h = {seq, flit.head, flit.tail, flit.vc};
    m = {h[7:0], flit.data};
    c = '1;
    for (int i = 14; i >= 8; i--) c = {c[FCRC_W-2:0], 1'b0} ^ ((c[FCRC_W-1] ^ h[i]) ? FWD_CRC_POLY : '0);
    for (int k = 8; k >= 0; k--) c = {c[FCRC_W-9:0], 8'h00} ^ FWD_CRC_TABLE[c[FCRC_W-1:FCRC_W-8] ^ m[8*k +: 8]];
    return c;
  endfunction

  // Over the 21 bits {vc, fc, ack, nak}: the first 5 bits one at a time, then 2 bytes through the table.
  function automatic logic [BCRC_W-1:0] bwd_crc(logic [VC_W-1:0] vc, logic [FC_W-1:0] fc, logic [SEQ_W-1:0] ack,
                                                logic nak);
    logic [VC_W+FC_W+SEQ_W:0] m;
    logic [BCRC_W-1:0]        c;
    m = {vc, fc, ack, nak};
    c = '1;
    for (int i = 20; i >= 16; i--) c = {c[BCRC_W-2:0], 1'b0} ^ ((c[BCRC_W-1] ^ m[i]) ? FWD_CRC_POLY : '0);
    for (int k = 1; k >= 0; k--) c = {c[BCRC_W-9:0], 8'h00} ^ FWD_CRC_TABLE[c[BCRC_W-1:BCRC_W-8] ^ m[8*k +: 8]];
    return c;
  endfunction

  // The router's build parameters, readable on its params_o port.
  typedef struct packed {
    logic [15:0] replay_timeout;  // [63:48] link retry (trn_noc_link_tx, trn_noc_link_rx)
    logic [7:0]  replay_limit;    // [47:40]
    logic [7:0]  refresh;         // [39:32]
    logic [7:0] ndim;
    logic [7:0] num_vc;
    logic [7:0] vc_groups;
    logic [7:0] depth;
  } router_params_t;

  // ---------------------------------------------------------------------------------------------------------------
  // Ports of a router with NDIM dimensions: 0 is the local (endpoint) port, 1 + 2d is +d (towards coordinate + 1),
  // 2 + 2d is -d. Link port l = port - 1 (0 .. 2*NDIM-1): dimension l / 2, negative side when l is odd.
  // ---------------------------------------------------------------------------------------------------------------
  // Coordinate d of c (d >= 2: z). A conditional, not a unique case: the routers call this with run-time d in a loop
  // per input VC, and a verilated unique case adds a parallel_case check to every call (200 in a 2-D, 4-VC router,
  // in the logic evaluated every cycle).
  function automatic logic [COORD_W-1:0] coord_of(coord_t c, int unsigned d);
    return d == 0 ? c.x : d == 1 ? c.y : c.z;
  endfunction

  // The lowest set bit of m (0 when none): which VC, port or requester an assertion message names when a rule
  // checked over a whole vector at once breaks.
  function automatic int unsigned lowest_set(logic [63:0] m);
    for (int unsigned i = 0; i < 64; i++) begin
      if (m[i]) return i;
    end
    return 0;
  endfunction

endpackage
