#include "model/mem/hbm_model.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/core.h>

namespace trnsim::model {

using sc_core::sc_time;
using sc_core::SC_NS;

namespace {
double now_ns() { return sc_core::sc_time_stamp().to_seconds() * 1e9; }
}  // namespace

HbmModel::HbmModel(double bytes_per_ns) : bytes_per_ns_(bytes_per_ns) {
  if (!(bytes_per_ns > 0)) {
    throw std::invalid_argument(fmt::format("HbmModel: bandwidth {} B/ns must be positive", bytes_per_ns));
  }
}

std::vector<double> HbmModel::fair_shares(const std::vector<double>& rates, double bandwidth) {
  // Water-filling: in increasing rate, each stream gets its rate or an equal part of what is left, if that is less.
  std::vector<std::size_t> order(rates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rates[a] < rates[b]; });
  std::vector<double> shares(rates.size(), 0.0);
  double left = bandwidth;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const double equal = left / double(order.size() - i);
    const double s = std::min(rates[order[i]], equal);
    shares[order[i]] = s;
    left -= s;
  }
  return shares;
}

void HbmModel::settle() {
  const double t = now_ns();
  const double dt = t - settled_ns_;
  if (dt > 0) {
    for (Stream& s : streams_) s.left = std::max(0.0, s.left - s.share * dt);
  }
  settled_ns_ = t;
}

void HbmModel::reshare() {
  std::vector<double> rates;
  rates.reserve(streams_.size());
  for (const Stream& s : streams_) rates.push_back(s.rate);
  const std::vector<double> shares = fair_shares(rates, bytes_per_ns_);
  const sc_time now = sc_core::sc_time_stamp();
  std::size_t i = 0;
  for (Stream& s : streams_) {
    s.share = shares[i++];
    s.throttled = s.throttled || s.share < s.rate;
    // A stream that has always had its rate ends on the engine's formula exactly (no rounding of settled bytes).
    const sc_time end = s.throttled ? now + sc_time(s.left / s.share, SC_NS) : s.unthrottled_end;
    if (end != s.end) {
      s.end = end;
      s.done.cancel();
      s.done.notify(end > now ? end - now : sc_core::SC_ZERO_TIME);
    }
  }
}

HbmModel::Carried HbmModel::carry(uint64_t bytes, double rate, const sc_core::sc_event& interrupt,
                     const std::function<bool()>& give_up) {
  if (!(rate > 0)) throw std::invalid_argument(fmt::format("HbmModel::carry: rate {} B/ns is not positive", rate));
  if (bytes == 0) return Carried::kAtRate;
  settle();
  const sc_time now = sc_core::sc_time_stamp();
  streams_.emplace_back();
  const auto self = std::prev(streams_.end());
  self->rate = rate;
  self->left = double(bytes);
  self->unthrottled_end = now + sc_time(double(bytes) / rate, SC_NS);
  self->end = sc_core::sc_max_time();  // differs from every real end: reshare() notifies it
  reshare();
  Carried how = Carried::kAtRate;
  for (;;) {
    sc_core::wait(self->done | interrupt);
    if (sc_core::sc_time_stamp() >= self->end) break;
    if (give_up()) {
      how = Carried::kWithdrawn;
      break;
    }
  }
  if (how != Carried::kWithdrawn && self->throttled) how = Carried::kThrottled;
  settle();
  self->done.cancel();
  streams_.erase(self);
  reshare();
  return how;
}

}  // namespace trnsim::model
