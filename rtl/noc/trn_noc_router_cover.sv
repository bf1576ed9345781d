// trn_noc_router_cover: functional cover points of a NeuronLink router (rtl/noc/trn_noc_router.sv), bound into every
// trn_noc_router in coverage builds only (-DTRNSIM_COVERAGE=ON, `make coverage`; the bind statement is at the end of
// this file). docs/verification.md lists the points; the router's signals are read, never driven.
//   c_in_port[p]          a flit entered input port p (0 = local injection, 1 + l = link port l)
//   c_out_vc[o].c_vc[v]   a flit left output port o on output VC v (o = 0: the ejection VC)
//   c_credit_out[l]       link port l is up and one of its VCs has no credit left (credit exhaustion, or a replay)
//   c_crc_err[l]          a flit arrived on link port l with a bad CRC (link-level retry)
//   c_replay[l]           link port l's sender starts a replay (after a NAK or its timeout)
//   c_bwd_err[l]          link port l's sender dropped a backward beat with a bad CRC
//   c_dateline[l]         a head flit leaves on the wrap-around link of its ring through link port l (dateline)
//   c_hol_inj             head-of-line blocking at injection: the flit at the front waits for a full VC while
//                         another local VC has room
//   c_vc_blocked          a packet holding an output VC waits for room downstream (credit or ejection stall)
module trn_noc_router_cover
  import trn_noc_pkg::*;
#(
  parameter int unsigned NDIM   = 2,
  parameter int unsigned NUM_VC = 2,
  localparam int unsigned NLINK = 2 * NDIM,
  localparam int unsigned NPORT = 1 + NLINK,
  localparam int unsigned NIN   = NPORT * NUM_VC
) (
  input logic                         clk_i,
  input logic                         rst_ni,
  input coord_t                       my_coord_i,
  input coord_t                       dim_max_i,
  input logic [NPORT-1:0]             push,
  input logic [NPORT-1:0]             out_valid,
  input flit_t [NPORT-1:0]            out_flit,
  input logic [NLINK-1:0]             tx_up,
  input logic [NLINK-1:0][NUM_VC-1:0] crd_avail,
  input logic [NLINK-1:0]             crc_err,
  input logic [NLINK-1:0]             replay,
  input logic [NLINK-1:0]             bwd_err,
  input logic                         inj_valid,
  input logic                         inj_ready,
  input logic [NUM_VC-1:0]            local_full,
  input logic [NIN-1:0]               active,
  input logic [NIN-1:0]               head_valid,
  input logic [NIN-1:0]               sa_req
);

  for (genvar p = 0; p < NPORT; p++) begin : c_in_port
    c_in: cover property (@(posedge clk_i) disable iff (!rst_ni) push[p]);
  end

  for (genvar o = 0; o < NPORT; o++) begin : c_out_vc
    for (genvar v = 0; v < NUM_VC; v++) begin : c_vc
      c_out: cover property (@(posedge clk_i) disable iff (!rst_ni) out_valid[o] && 32'(out_flit[o].vc) == v);
    end
  end

  for (genvar l = 0; l < NLINK; l++) begin : c_link
    localparam int unsigned D   = l / 2;
    localparam bit          NEG = (l % 2) == 1;
    logic wrap;  // this router sits at the end of ring D that link port l leaves through the wrap-around link
    assign wrap = NEG ? coord_of(my_coord_i, D) == '0 : coord_of(my_coord_i, D) == coord_of(dim_max_i, D);
    c_credit_out: cover property (@(posedge clk_i) disable iff (!rst_ni) tx_up[l] && crd_avail[l] != '1);
    c_dateline: cover property (@(posedge clk_i) disable iff (!rst_ni)
        out_valid[l+1] && out_flit[l+1].head && wrap);
    c_crc_err: cover property (@(posedge clk_i) disable iff (!rst_ni) crc_err[l]);
    c_replay: cover property (@(posedge clk_i) disable iff (!rst_ni) replay[l]);
    c_bwd_err: cover property (@(posedge clk_i) disable iff (!rst_ni) bwd_err[l]);
  end

  c_hol_inj: cover property (@(posedge clk_i) disable iff (!rst_ni) inj_valid && !inj_ready && local_full != '1);
  c_vc_blocked: cover property (@(posedge clk_i) disable iff (!rst_ni) (active & head_valid & ~sa_req) != '0);

endmodule

bind trn_noc_router trn_noc_router_cover #(.NDIM(NDIM), .NUM_VC(NUM_VC)) u_cover (
  .clk_i      (clk_i),
  .rst_ni     (rst_ni),
  .my_coord_i (my_coord_i),
  .dim_max_i  (dim_max_i),
  .push       (push),
  .out_valid  (out_valid),
  .out_flit   (out_flit),
  .tx_up      (tx_up),
  .crd_avail  (crd_avail),
  .crc_err    (link_crc_err_o),
  .replay     (link_replay_o),
  .bwd_err    (link_bwd_err_o),
  .inj_valid  (inj_valid),
  .inj_ready  (inj_ready),
  .local_full (full[0]),
  .active     (active),
  .head_valid (head_valid),
  .sa_req     (sa_req)
);
