// The local ports of a NeuronLink network, one clock cycle at a time: what traffic generators, checkers and
// endpoints (DMA, collective engines) see of a network, whichever model is behind it: the TLM network
// (model/noc/noc_tlm.h), the verilated routers (cosim/noc/noc_rtl.h) or both in lockstep (cosim/noc/noc_lockstep.h).
//
// Every router has one local port: injection (valid/ready into the router) and ejection (valid/ready out of it),
// with the handshake rules of rtl/noc/trn_noc_router.sv: a beat offered with drive_inject() is taken at the coming
// step() iff inj_ready() was true before it; an ejected beat (ej_valid()/ej_flit()) is taken at the coming step()
// iff drive_eject_ready(true). Set the inputs, read the outputs, then step(). One packet at a time per injection
// port: from a head flit on VC v to its tail, every flit injected at that port is on VC v.
#pragma once

#include <cstdint>
#include <string>

#include "model/noc/noc_flit.h"
#include "model/noc/noc_link.h"

namespace trnsim::model::noc {

class NocPorts {
 public:
  virtual ~NocPorts() = default;

  virtual int ndim() const = 0;          ///< dimensions, 1..3
  virtual int size(int d) const = 0;     ///< routers in dimension d (1 for d >= ndim())
  virtual bool torus() const { return true; }  ///< false: a mesh (no wrap-around links)
  virtual int num_vc(int node) const = 0;      ///< VCs per port of the router at `node`
  int nodes() const { return size(0) * size(1) * size(2); }
  /// Node index n = x + X * (y + Y * z).
  Coord coord(int node) const;
  int node(const Coord& c) const;
  std::string node_name(int node) const;  ///< "(x,y)" / "(x,y,z)"

  /// inj_ready_o of `node` this cycle (a register output: valid until the next step()).
  virtual bool inj_ready(int node) const = 0;
  /// Drives inj_valid_i / inj_flit_i for the coming edge (nullptr: valid low). The beat is taken iff inj_ready().
  virtual void drive_inject(int node, const Flit* flit) = 0;
  /// ej_valid_o / ej_flit_o of `node` this cycle.
  virtual bool ej_valid(int node) const = 0;
  virtual Flit ej_flit(int node) const = 0;
  /// Drives ej_ready_i for the coming edge. The beat is taken iff ej_valid().
  virtual void drive_eject_ready(int node, bool ready) = 0;

  /// One clock cycle. Throws NocError on a protocol violation (RTL assertion, TLM check, lockstep mismatch).
  virtual void step() = 0;
  /// Cycles since reset release.
  virtual uint64_t cycle() const = 0;
  /// Flits carried by links so far (every hop counts).
  virtual uint64_t link_flits() const = 0;
  /// Seconds spent inside step(), by the monotonic clock (step_clock_seconds): the network model's share of a run,
  /// for simulation speed figures. Equal to the thread's CPU time inside step() while the process is not
  /// descheduled; a CPU-time clock would cost a system call per read (about 10 % of a TLM step on an 8x8 torus).
  virtual double step_seconds() const = 0;
  /// "tlm", "rtl" or "lockstep".
  virtual std::string backend() const = 0;
  /// What the link layer did since reset: flits sent and replayed, CRC errors, replays, injected faults.
  virtual LinkStats link_stats() const = 0;
};

/// CPU time of the calling thread, seconds (CLOCK_THREAD_CPUTIME_ID; a system call on Linux).
double thread_cpu_seconds();
/// Monotonic time, seconds (CLOCK_MONOTONIC, read without a system call through the vDSO): what step() is timed by.
double step_clock_seconds();

}  // namespace trnsim::model::noc
