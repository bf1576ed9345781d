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
  // Links: a forward channel (flits, upstream -> downstream) and a backward channel (credits, downstream ->
  // upstream). Both ends send one bring-up beat in the second cycle after reset carrying their flow-control
  // parameters; the other end compares them with its own (trn_noc_link_tx, trn_noc_link_rx).
  // ---------------------------------------------------------------------------------------------------------------
  typedef struct packed {
    logic [CFG_VC_W-1:0]  num_vc;  // virtual channels per port
    logic [CFG_DEP_W-1:0] depth;   // flit slots per VC receive buffer
  } link_cfg_t;

  typedef struct packed {
    logic  valid;  // [70] a flit is on the link this cycle
    logic  init;   // [69] bring-up beat (valid is 0): flit.data[9:0] is the sender's link_cfg_t
    flit_t flit;   // [68:0]
  } link_fwd_t;

  typedef struct packed {
    logic            valid;  // [14] one credit: a slot of VC `vc` in the downstream buffer was freed
    logic [VC_W-1:0] vc;     // [13:11]
    logic            init;   // [10] bring-up beat (valid is 0): cfg is the receiver's buffer layout
    link_cfg_t       cfg;    // [9:0]
  } link_bwd_t;

  // Error causes reported per link port (trn_noc_router link_err_cause_o).
  typedef enum logic [1:0] {
    LINK_OK           = 2'd0,
    LINK_ERR_CREDIT   = 2'd1,  // the receiver's credit-init beat advertised other NUM_VC / DEPTH than ours
    LINK_ERR_HELLO    = 2'd2,  // the sender's bring-up beat advertised other NUM_VC / DEPTH than ours
    LINK_ERR_TIMEOUT  = 2'd3   // no bring-up beat within LINK_TIMEOUT cycles of reset
  } link_err_e;

  // The router's build parameters, readable on its params_o port.
  typedef struct packed {
    logic [7:0] ndim;
    logic [7:0] num_vc;
    logic [7:0] vc_groups;
    logic [7:0] depth;
  } router_params_t;

  // ---------------------------------------------------------------------------------------------------------------
  // Ports of a router with NDIM dimensions: 0 is the local (endpoint) port, 1 + 2d is +d (towards coordinate + 1),
  // 2 + 2d is -d. Link port l = port - 1 (0 .. 2*NDIM-1): dimension l / 2, negative side when l is odd.
  // ---------------------------------------------------------------------------------------------------------------
  function automatic logic [COORD_W-1:0] coord_of(coord_t c, int unsigned d);
    unique case (d)
      0:       return c.x;
      1:       return c.y;
      default: return c.z;
    endcase
  endfunction

endpackage
