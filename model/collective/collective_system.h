// A multi-chip system for collectives: one HBM per chip (allocated on touch), the fabric between the chips, and a
// collective engine beside compute on each chip that runs all-reduce, all-gather, reduce-scatter and send/recv
// on HBM (docs/neuronlink.md "Collectives": algorithms, reduction order, link model).
//
// This is a system-level API (the workload calls it), not yet an instruction queue of the NeuronCore model.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware/isa/ring_plan.h"
#include "spec/isa_spec.h"
#include "model/collective/fabric.h"
#include "model/collective/partition.h"
#include "model/collective/topology.h"
#include "model/collective/transport.h"
#include "model/config/chip_config.h"
#include "model/mem/memory.h"

namespace trnsim::model::collective {

enum class Op { kAllReduce, kAllGather, kReduceScatter };
enum class Algorithm { kRing, kRhd };
/// Element types a collective sums: kFp32 or kBf16 of the ISA's one data-type enum (spec/isa.json).
using ElemType = isa::DataType;

const char* op_name(Op op);
const char* algorithm_name(Algorithm a);
inline uint64_t elem_bytes(ElemType t) { return t == ElemType::kFp32 ? 4 : 2; }

/// A collective the system cannot run as asked (algorithm vs chip count, buffer outside HBM, ...).
class CollectiveError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// One collective, the same call on every chip. The buffer is `count` elements at HBM byte address `hbm_addr` on
/// every chip and the operation is in place:
///   all-reduce      every chip's buffer becomes the element-wise sum over the chips;
///   reduce-scatter  chip r's block r of the buffer becomes the sum of block r over the chips (other blocks: scratch);
///   all-gather      chip r contributes its block r; every chip's buffer becomes all blocks.
/// Block r is elements [floor(r * count / n), floor((r + 1) * count / n)) of n chips (blocks may differ by one
/// element and may be empty).
struct Call {
  Op op = Op::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  ElemType type = ElemType::kFp32;
  uint64_t count = 0;
  uint64_t hbm_addr = 0;
};

/// What a run took.
struct Result {
  double time_ns = 0;        ///< simulated time from the start (all chips together) to the last chip's last step
  uint64_t messages = 0;     ///< chip-to-chip messages
  uint64_t link_bytes = 0;   ///< bytes carried, summed over links (a 2-hop message counts twice)
  double max_link_busy_ns = 0;  ///< the busiest directed link's reserved time
  int steps = 0;             ///< the longest chain of send/receive steps of one chip and flow
  NetworkFigures network;    ///< the router network's figures (flit-level transports only; zeros on the fabric)
  std::vector<ChipTraffic> chips;  ///< per chip: what it sent (and its router ejected)
  std::vector<LinkTraffic> links;  ///< per directed link (Topology::link_index)
  std::vector<int> chip_steps;     ///< per chip: the longest chain of steps of one of its flows
};

/// One ring flow of the ring algorithm (firmware/isa/ring_plan.h: the plan the golden collective follows too).
using RingFlow = isa::RingFlow;

class CollectiveSystem {
 public:
  /// hbm_bytes: each chip's HBM size (address range; storage on touch).
  CollectiveSystem(const Topology& topology, uint64_t hbm_bytes);
  /// The system of a configuration (Topology::from_config, its HBM size).
  explicit CollectiveSystem(const ChipConfig& c);
  /// A system on HBMs it does not own (the NeuronCores' of a simulated system): hbms[r] is chip r's, all of one
  /// size, one per chip of `topology`, each outliving this object. Throws std::invalid_argument otherwise.
  CollectiveSystem(const Topology& topology, std::vector<Memory*> hbms);
  /// One rank's part of a system simulated by several processes (docs/distributed.md): hbms[r] is chip r's HBM for
  /// the chips `partition` makes local, null for the others. Every rank makes the same run() / send_recv() calls in
  /// the same order; they time the whole system on the message-level fabric (its timing depends only on message
  /// sizes, so every rank computes the same Result) and move the payloads between ranks through `exchange`
  /// (outliving this). A transport (set_transport) is refused there: std::invalid_argument.
  CollectiveSystem(const Topology& topology, std::vector<Memory*> hbms, const Partition& partition,
                   RankExchange& exchange);
  ~CollectiveSystem();

  const Topology& topology() const { return topo_; }
  int chips() const { return topo_.chips(); }
  /// Chip `chip`'s HBM (distributed: a local chip's only).
  Memory& hbm(int chip) { return *hbm_.at(size_t(chip)); }
  /// Each chip's HBM size, bytes.
  uint64_t hbm_bytes() const;

  /// The ring algorithm's flows on this torus: isa::ring_plan of its sizes and link bandwidths (docs/neuronlink.md
  /// "Weights").
  std::vector<RingFlow> ring_flows() const;
  /// Flows per (first dimension, direction) of the ring algorithm: isa::kRingSlices.
  static constexpr int ring_slices() { return isa::kRingSlices; }

  /// Runs `call` on every chip from simulated time 0. Throws CollectiveError: --algo rhd on a chip count that is
  /// not a power of two; a buffer past the end of HBM. count 0 is a no-op (time 0, no message).
  Result run(const Call& call);
  /// Copies `bytes` from chip src's HBM at src_addr to chip dst's at dst_addr (one message). Throws
  /// CollectiveError for a chip or range outside the system.
  Result send_recv(int src, uint64_t src_addr, int dst, uint64_t dst_addr, uint64_t bytes);

  /// The network the next run() / send_recv() use: a fresh transport from `make` per call (transport.h); empty
  /// (the default): the message-level Fabric at the topology's link figures.
  void set_transport(TransportFactory make);
  /// True when this is one rank's part of a distributed system.
  bool distributed() const { return exchange_ != nullptr; }

 private:
  struct Step;
  struct Plan;
  Plan plan(const Call& call) const;
  Result execute(const Call& call, const Plan& plan);
  /// Step `st` of chip r in flow f: the payload it sends (read from its HBM).
  void read_step(const Call& call, const Plan& plan, size_t f, int r, const Step& st,
                 std::vector<uint8_t>* payload) const;
  /// Reduces (or copies) the step's received payload into chip r's HBM.
  void apply_step(const Call& call, const Plan& plan, size_t f, int r, const Step& st, const uint8_t* data,
                  size_t size);
  /// The payloads of a plan timed on the message-level fabric, `rounds` steps, moved between the chips (and the
  /// ranks, distributed).
  void move_data(const Call& call, const Plan& plan, int rounds);
  std::unique_ptr<Transport> new_transport() const;

  Topology topo_;
  std::vector<std::unique_ptr<Memory>> owned_;  ///< the HBMs of the owning constructors (empty otherwise)
  std::vector<Memory*> hbm_;                    ///< chip r's HBM: owned_[r] or an external one
  TransportFactory make_transport_;
  Partition part_{1, 1, 0};
  RankExchange* exchange_ = nullptr;  ///< distributed: the ranks' exchange; null in process
};

}  // namespace trnsim::model::collective
