# NeuronLink router models, included from rtl/CMakeLists.txt into the trn_rtl library.
#
#   Vtrn_noc_router_<name>   rtl/noc/trn_noc_router.sv   one router; networks of any size are wired in C++
#                                                        (cosim/noc/noc_rtl.cpp, docs/neuronlink.md says why)
#
# The builds (name: NDIM NUM_VC VC_GROUPS DEPTH). The C++ side reads the parameters back from the router's params_o.
#   d2v2     2-D torus router, 2 VCs, 4-flit buffers: the default 2-D router (2x2, 4x4, 3x5 tori)
#   d2v4     2-D, 4 VCs (2 per dateline class: both stages of VC allocation choose), 4-flit buffers; it also has a
#            different VC count from d2v2, for the link-mismatch test
#   d3v4g2   3-D, 4 VCs in 2 message-class groups, 4-flit buffers: the 2x2x2 torus
#   d2v4b8   2-D, 4 VCs, 8-flit buffers: BookSim2's default buffer (vc_buf_size 8) for the saturation comparison
#            (docs/neuronlink.md, "BookSim2 conditions"); costs 1.8 s CPU to verilate + 44 s CPU to compile (13
#            objects; about as much as d2v4, well under 2 minutes on 2 cores), so it is built always, like the others
set(TRN_NOC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_pkg.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/prim/trn_prim_fifo.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/prim/trn_prim_spill_reg.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/prim/trn_prim_rr_arb.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_input_port.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_link_bringup.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_link_rx.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_link_tx.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_vc_alloc.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_sw_alloc.sv
  ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_router.sv
)
set(TRN_NOC_ROUTERS "d2v2:2:2:1:4" "d2v4:2:4:1:4" "d3v4g2:3:4:2:4" "d2v4b8:2:4:1:8")
foreach(spec IN LISTS TRN_NOC_ROUTERS)
  string(REPLACE ":" ";" f ${spec})
  list(GET f 0 name)
  list(GET f 1 ndim)
  list(GET f 2 num_vc)
  list(GET f 3 vc_groups)
  list(GET f 4 depth)
  verilate(trn_rtl
    PREFIX Vtrn_noc_router_${name}
    TOP_MODULE trn_noc_router
    SOURCES ${TRN_NOC_SOURCES} ${TRN_NOC_COVER_SOURCES}  # cover points: coverage builds only (rtl/CMakeLists.txt)
    VERILATOR_ARGS ${TRN_VERILATOR_ARGS} ${CMAKE_CURRENT_SOURCE_DIR}/noc/trn_noc_lint.vlt
                   -GNDIM=${ndim} -GNUM_VC=${num_vc} -GVC_GROUPS=${vc_groups} -GDEPTH=${depth}
    # -O2: with the link-level retry, 8-9 % more cycles per second than -O1 (4.47 k against 4.12 k on 8x8 d2v4,
    # best of 6 interleaved runs, 2026-12-05), in the same compile time (17.3 s CPU against 18.0 s for d2v4's five
    # fast files); -O3 is no faster. The "slow" code (construction, first settle) runs once.
    OPT_FAST -O2
    OPT_SLOW -O0
    TRACE_FST)
  string(TOUPPER ${name} uname)
  target_compile_definitions(trn_rtl PUBLIC TRNSIM_HAVE_NOC_ROUTER_${uname}=1)
endforeach()
