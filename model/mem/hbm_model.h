// The bandwidth of a chip's HBM, shared by every core's DMA engines (docs/architecture.md, "The HBM model").
//
// A DMA copy that reads or writes HBM is a stream of its HBM bytes that asks for up to its engine's rate (BRIEF
// section 2: ~23 B/ns per DMA engine). The streams in flight share the bandwidth max-min fairly, as a fluid: while
// the rates asked for fit the bandwidth every stream gets its own; when they do not, the slowest streams keep
// theirs and the others get equal shares of the rest (Bertsekas and Gallager, "Data Networks", 2nd ed., section
// 6.5.2, max-min fairness), recomputed whenever a stream starts or ends. It is the fluid limit of a round-robin
// arbiter between equal requesters: no stream waits behind another (FCFS would leave the last of 128 engines that
// ask 23 B/ns each of 2900 almost nothing until the others end). A stream that never meets a full HBM ends exactly
// at start + bytes / rate, the engine's own formula.
//
// Left out, on purpose: channels and banks (the address does not matter), refresh, read/write turnaround, row
// buffers, an access latency of its own (the DMA start latency, ~1.3 us, covers the HBM's), and any arbitration but
// the fair share.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <vector>

#include <systemc>

namespace trnsim::model {

class HbmModel {
 public:
  /// `bytes_per_ns`: the chip's HBM bandwidth (trn2: 2900, BRIEF section 2: 2.9 TB/s). std::invalid_argument for a
  /// bandwidth that is not positive.
  explicit HbmModel(double bytes_per_ns);

  /// How a stream ended.
  enum class Carried {
    kAtRate,     ///< at its own rate all along: it ended at start + bytes / rate exactly
    kThrottled,  ///< later than that: it got less than its rate for a while
    kWithdrawn,  ///< given up before its end
  };
  /// From a SystemC thread: carries a stream of `bytes` HBM bytes at up to `rate` bytes/ns, starting now, and
  /// returns when its last byte is carried. Woken by `interrupt`, it asks `give_up`: true withdraws the stream (its
  /// share goes to the others) and returns kWithdrawn at once. `bytes` 0 returns kAtRate at once;
  /// std::invalid_argument for a rate that is not positive.
  Carried carry(uint64_t bytes, double rate, const sc_core::sc_event& interrupt, const std::function<bool()>& give_up);

  /// Max-min fair shares of `bandwidth` between streams asking for `rates` (bytes/ns each, positive): the shares in
  /// the same order. Every share is at most its rate; their sum is min(bandwidth, sum of rates).
  static std::vector<double> fair_shares(const std::vector<double>& rates, double bandwidth);

  /// Streams in flight now.
  std::size_t streams() const { return streams_.size(); }

 private:
  struct Stream {
    double rate = 0;            ///< bytes/ns asked for
    double share = 0;           ///< bytes/ns it gets now
    double left = 0;            ///< bytes still to carry at settled_ns_
    sc_core::sc_time unthrottled_end;  ///< start + bytes / rate: its end while it has never been throttled
    bool throttled = false;
    sc_core::sc_time end;       ///< when it ends at the present shares
    sc_core::sc_event done;     ///< notified at `end`
  };
  /// Takes every stream's bytes carried since the last settle off its `left`.
  void settle();
  /// Gives every stream its fair share and (re)notifies its end.
  void reshare();

  double bytes_per_ns_;
  std::list<Stream> streams_;  ///< stable addresses: each carry() holds its own
  double settled_ns_ = 0;
};

}  // namespace trnsim::model
