// The bandwidth of a chip's HBM, shared by every core's DMA engines (docs/architecture.md, "The HBM model").
//
// Time is cut into slots of `slot` length; all of a slot's HBM traffic together carries at most
// bytes_per_ns * slot bytes. A DMA copy that reads or writes HBM is a stream: from the moment its bytes start to
// move it asks each slot for what its engine could move in it (its rate times the part of the slot it covers) and
// takes what the slot has left; streams are served in the order they start (first come, first served), so a stream
// that starts later gets what earlier ones left. A stream that never meets a full slot ends exactly at
// start + bytes / rate, the engine's own formula (BRIEF section 2: ~23 B/ns per DMA engine).
//
// Bookings reach kMaxBookedSlots slots (about 105 ms of simulated time at 100 ns) past the present: the part of a
// stream beyond that runs at min(rate, bandwidth) and books nothing, which keeps the host cost of one copy bounded.
//
// Left out, on purpose: channels and banks (the address does not matter), refresh, read/write turnaround, row
// buffers, an access latency of its own (the DMA start latency, ~1.3 us, covers the HBM's), any scheduling but
// first come, first served.
#pragma once

#include <cstdint>
#include <deque>

#include <systemc>

namespace trnsim::model {

class HbmModel {
 public:
  /// `bytes_per_ns`: the chip's HBM bandwidth (trn2: 2900, BRIEF section 2: 2.9 TB/s); `slot`: the model's time
  /// slot. std::invalid_argument for a bandwidth or a slot that is not positive.
  HbmModel(double bytes_per_ns, sc_core::sc_time slot);

  /// A stream of `bytes` HBM bytes, starting at `start` (not before the current simulated time of any earlier
  /// call), at up to `rate` bytes/ns: returns the time its last byte is carried. Books the stream's share of every
  /// slot it crosses. `bytes` 0 returns `start`; std::invalid_argument for a rate that is not positive.
  sc_core::sc_time stream(const sc_core::sc_time& start, uint64_t bytes, double rate);

  /// Slots a stream books at most, counted from the oldest slot still kept (the present's).
  static constexpr uint64_t kMaxBookedSlots = uint64_t{1} << 20;

  double bytes_per_ns() const { return bytes_per_ns_; }
  const sc_core::sc_time& slot() const { return slot_; }
  /// Streams that met a full slot (and so took longer than bytes / rate) since creation.
  uint64_t throttled_streams() const { return throttled_; }

 private:
  double bytes_per_ns_;
  sc_core::sc_time slot_;
  double slot_ns_;
  double slot_capacity_;       ///< bytes one slot carries
  uint64_t first_slot_ = 0;    ///< slot index of used_.front()
  std::deque<double> used_;    ///< bytes booked per slot from first_slot_ on
  uint64_t throttled_ = 0;
};

}  // namespace trnsim::model
