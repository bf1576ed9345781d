// The rendezvous of the collective engines of a simulated multi-chip system (docs/neuronlink.md "Collective
// instructions"): every chip's cc queue hands its all_reduce / all_gather / reduce_scatter / send / recv here, the hub
// matches them across chips, runs the matched collective with CollectiveSystem on the chips' own HBMs and wakes
// every participant when the collective's simulated time has passed.
//
// Matching: the k-th collective instruction of every chip (k counted per launch) forms one rendezvous; all of them
// must be the same call (op, dtype, algorithm, hbm_addr, count), else every participant faults with CC_MISMATCH
// naming the first differing field. send/recv are synchronous: the k-th send from chip a to chip b pairs with the
// k-th recv on b from a, both complete together; their byte counts must agree (CC_MISMATCH, field bytes).
// Timing: when the last participant arrives at SystemC time T the data moves (in the HBMs) and every participant
// completes at T + the collective's time (CollectiveSystem::Result::time_ns) rounded up to whole TE cycles.
// Counters (docs/registers.md "Collective counters"): at completion every participant adds its share (CC_, NET_:
// what it sent and its router ejected) and every chip whose output links carried the call's messages, participant
// or not, adds their traffic to its LINK block.
// Errors never hang: a participant whose peer's cc queue halted, faulted or never started gets CC_PEER_STOPPED;
// when every chip's cc queue waits in the hub with no rendezvous able to complete, every waiter gets CC_DEADLOCK.
// A failure of the simulation itself while it runs a matched call (the router network's NocError: its watchdog, a
// protocol check) is no device fault: the hub keeps the exception, pauses the kernel (sc_pause) and the host's
// caller gets it, type and one-line text intact, from rethrow_failure() (SimSystem calls it after every sc_start),
// instead of SystemC's multi-line report of an exception that left a process.
//
// Distributed (docs/distributed.md): one hub per rank, holding only that rank's chips. The hub then decides nothing
// while the kernel runs: arrivals, launches and abandoned waits are events with their times, and at the end of every
// window (sync(), between two sc_start calls of all ranks) the ranks exchange them with their chips' cc states and
// every rank applies all of them in one order (time, chip, order on the chip), so every rank reaches the same
// decisions. A collective completes at the last arrival + its time, as in one process; that time is at least one hop
// latency (the window), so it never lies in a rank's past. Faults found at a window's end (CC_PEER_STOPPED,
// CC_DEADLOCK, CC_MISMATCH) are raised there, up to one window after one process would.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <systemc>

#include "firmware/isa/isa.h"
#include "model/collective/collective_system.h"
#include "model/collective/partition.h"
#include "model/core/core_control.h"

namespace trnsim::model::collective {

/// The checks of one cc instruction of chip `chip` that need no other chip, in a system of `chips` chips with HBMs
/// of `hbm_bytes`: the buffer inside HBM (HBM_RANGE, field count or bytes), a send/recv peer that is another chip
/// of the system (BAD_FIELD, field peer), rhd only on a power-of-two chip count (CC_UNSUPPORTED, field algorithm).
std::optional<Fault> check_cc(const isa::Instruction& instr, int chip, int chips, uint64_t hbm_bytes);

class CollectiveHub : public sc_core::sc_module {
 public:
  /// controls[r] and hbms[r]: chip r's control block and HBM (owned by its NeuronCore, outliving the hub); one
  /// per chip of `topology`. Create during elaboration. Throws std::invalid_argument for mismatched sizes.
  CollectiveHub(const sc_core::sc_module_name& name, const Topology& topology, std::vector<CoreControl*> controls,
                std::vector<Memory*> hbms);
  /// One rank's hub of a distributed system: controls[r] and hbms[r] for the chips `partition` makes local, null
  /// for the others; `exchange` outlives the hub. Every rank calls sync() at the end of every window.
  CollectiveHub(const sc_core::sc_module_name& name, const Topology& topology, std::vector<CoreControl*> controls,
                std::vector<Memory*> hbms, const Partition& partition, RankExchange& exchange);
  ~CollectiveHub() override;
  SC_HAS_PROCESS(CollectiveHub);

  int chips() const { return system_.chips(); }
  const Topology& topology() const { return system_.topology(); }
  /// The collective system the hub runs matched calls on (e.g. to choose its transport).
  CollectiveSystem& system() { return system_; }

  /// Executes cc instruction `instr` (a collective, send or recv) at index `index` of chip `chip`'s cc queue:
  /// waits (SystemC) until it completed or failed. Returns the fault of this chip, or nullopt (also when the chip
  /// was stopped or reset meanwhile: the caller checks). Call from the chip's cc engine thread only.
  std::optional<Fault> execute(int chip, uint32_t index, const isa::Instruction& instr);
  /// The chip's cc queue started (doorbell): its collective sequence restarts at 0.
  void on_start(int chip);
  /// The chip's cc queue halted: rendezvous that still need it fail.
  void on_halt(int chip);

  /// What every completed collective and send/recv took, in completion order (for reports).
  struct Completed {
    isa::Opcode op = isa::Opcode::kNop;
    uint64_t bytes = 0;           ///< buffer bytes (collectives: count x element size; send/recv: bytes)
    sc_core::sc_time start;       ///< when the last participant arrived
    sc_core::sc_time end;         ///< when the participants completed
    Result result;                ///< the collective system's figures
  };
  const std::vector<Completed>& completed() const { return completed_; }
  void clear_completed() { completed_.clear(); }

  /// Rethrows (once) the exception a matched call's run raised inside the simulation, if any (see above). The chips
  /// whose cc queues took part stay waiting until a soft reset.
  void rethrow_failure();

  /// Distributed: the end of a window (call with the kernel stopped, on every rank at the same simulated time).
  /// Exchanges this rank's events and cc states, applies every rank's, and schedules the local chips' completions.
  /// Throws std::runtime_error for a failed exchange and whatever a matched call's run throws.
  void sync();
  bool distributed() const { return exchange_ != nullptr; }
  /// Chip `chip`'s interrupt line: live for a local chip in process, as of the last sync() distributed.
  bool irq(int chip) const;

 private:
  struct Waiter;
  struct Slot;
  struct Ticket;
  /// What the hub needs to know of a chip's cc queue (live in process, the last sync's snapshot distributed).
  struct ChipState {
    bool stopped = false;
    uint32_t cc_state = regs::QSTATE_IDLE;
    bool irq = false;  ///< the interrupt line (for the hosts' waits: SimSystem)
  };
  /// An event of a distributed hub, applied at the next sync().
  struct Event {
    enum Kind : uint8_t { kStart, kArrive, kLeave } kind = kStart;
    uint64_t time_ps = 0;
    int chip = 0;
    uint64_t seq = 0;  ///< order on the chip
    uint32_t index = 0;
    isa::Instruction instr;
  };
  void init(const Topology& topology);
  ChipState state(int chip) const;
  /// Adds the waiter of `chip` (a new arrival at `at`) to its rendezvous and matches what can be matched.
  void arrive(int chip, uint32_t index, const isa::Instruction& instr, std::shared_ptr<Ticket> ticket,
              sc_core::sc_time at);
  void record(Event e);
  void reevaluate();
  /// Removes every waiter of `chip` from the unfinished rendezvous.
  void drop(int chip);
  bool can_join(int chip) const;
  /// The rendezvous ends `delay` after `at` (its last arrival): every local participant's ticket is filled.
  void finish(const std::shared_ptr<Slot>& slot, const std::optional<Fault>& all, sc_core::sc_time at,
              sc_core::sc_time delay);
  void try_match_collective(uint64_t k, sc_core::sc_time at);
  void try_match_p2p(int src, int dst, sc_core::sc_time at);
  /// Runs `match` (try_match_*), keeping an exception it raises for rethrow_failure() and pausing the kernel.
  template <class Match>
  void guarded(Match&& match);
  void stop_watch();
  /// Every local chip's output links' share of `r` goes into its LINK counters at `due` (when the call completes).
  void schedule_link_traffic(const Result& r, sc_core::sc_time due);
  void apply_link_traffic();  ///< SC_METHOD on links_due_
  /// `ns` rounded up to whole TE cycles.
  sc_core::sc_time whole_cycles(double ns) const;

  CollectiveSystem system_;
  std::vector<CoreControl*> controls_;
  std::vector<uint64_t> next_k_;                               ///< per chip: its next collective's k
  std::map<uint64_t, std::shared_ptr<Slot>> collectives_;       ///< pending rendezvous by k
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<Slot>>> sends_, recvs_;  ///< unmatched, by (src, dst)
  std::vector<std::shared_ptr<Slot>> waiting_;                  ///< every slot with a waiter, for reevaluate()
  std::vector<Completed> completed_;
  std::exception_ptr failure_;
  sc_core::sc_event changed_;  ///< notified by on_halt(); the stop-watch reevaluates
  struct PendingLinks {
    sc_core::sc_time due;
    int chip = 0;
    CcLinks links{};
  };
  std::vector<PendingLinks> pending_links_;
  sc_core::sc_event_queue links_due_;
  // Distributed only.
  Partition part_{1, 1, 0};
  RankExchange* exchange_ = nullptr;
  std::vector<Event> events_;                       ///< this rank's events since the last sync
  std::vector<uint64_t> event_seq_;                 ///< per chip
  std::vector<ChipState> states_;                   ///< every chip's, as of the last sync
  std::map<std::pair<int, uint64_t>, std::shared_ptr<Ticket>> arriving_;  ///< (chip, event seq) -> local waiter
  sc_core::sc_time cycle_;  ///< the chips' TE clock period
};

}  // namespace trnsim::model::collective
