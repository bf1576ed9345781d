#include "model/mem/hbm_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

namespace trnsim::model {

using sc_core::sc_time;

HbmModel::HbmModel(double bytes_per_ns, sc_time slot)
    : bytes_per_ns_(bytes_per_ns), slot_(slot), slot_ns_(slot.to_seconds() * 1e9) {
  if (!(bytes_per_ns > 0) || !(slot_ns_ > 0)) {
    throw std::invalid_argument(fmt::format("HbmModel: bandwidth {} B/ns and slot {} ns must be positive",
                                            bytes_per_ns, slot_ns_));
  }
  slot_capacity_ = bytes_per_ns_ * slot_ns_;
}

sc_time HbmModel::stream(const sc_time& start, uint64_t bytes, double rate) {
  if (!(rate > 0)) throw std::invalid_argument(fmt::format("HbmModel::stream: rate {} B/ns is not positive", rate));
  if (bytes == 0) return start;
  // Slots wholly before the present are over: nobody books them any more.
  const auto now_slot = uint64_t(std::floor(sc_core::sc_time_stamp().to_seconds() * 1e9 / slot_ns_));
  while (!used_.empty() && first_slot_ < now_slot) {
    used_.pop_front();
    ++first_slot_;
  }
  if (used_.empty()) first_slot_ = std::max(first_slot_, now_slot);

  const double t0 = start.to_seconds() * 1e9;
  double t = t0, left = double(bytes);
  bool limited = false;
  for (auto s = std::max(first_slot_, uint64_t(std::floor(t0 / slot_ns_)));; ++s) {
    if (s - first_slot_ >= kMaxBookedSlots) {
      // Past the booking horizon: the rest runs at the engine's rate, or the HBM's if that is less, and books
      // nothing (so a copy of any length costs bounded host time; a found defect, docs/verification.md).
      const double pace = std::min(rate, bytes_per_ns_);
      if (limited || pace < rate) ++throttled_;
      if (!limited && pace == rate) return start + sc_time(double(bytes) / rate, sc_core::SC_NS);
      return sc_time(t + left / pace, sc_core::SC_NS);
    }
    while (used_.size() <= s - first_slot_) used_.push_back(0.0);
    double& booked = used_[size_t(s - first_slot_)];
    const double slot_end = double(s + 1) * slot_ns_;
    const double span = slot_end - t;  // the part of this slot the stream covers
    const double take = std::min(rate * span, std::max(0.0, slot_capacity_ - booked));
    if (left <= take) {
      booked += left;
      if (!limited) return start + sc_time(double(bytes) / rate, sc_core::SC_NS);
      ++throttled_;
      return sc_time(t + left / (take / span), sc_core::SC_NS);  // at this slot's pace
    }
    if (take < rate * span) limited = true;
    booked += take;
    left -= take;
    t = slot_end;
  }
}

}  // namespace trnsim::model
