#include "model/collective/partition.h"

#include <cstring>

#include <fmt/core.h>

namespace trnsim::model::collective {

Partition::Partition(int chips, int ranks, int rank) : chips_(chips), ranks_(ranks), rank_(rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw std::invalid_argument(fmt::format("partition: rank {} of {} ranks", rank, ranks));
  }
  if (ranks > chips) {
    throw std::invalid_argument(fmt::format("partition: {} ranks for a {}-chip system: every rank needs a chip "
                                            "(run at most {} ranks)", ranks, chips, chips));
  }
}

int Partition::owner(int chip) const {
  if (chip < 0 || chip >= chips_) {
    throw std::out_of_range(fmt::format("partition: chip {} of a {}-chip system", chip, chips_));
  }
  // The largest q with floor(q * n / R) <= chip.
  int q = int((int64_t(chip) * ranks_ + ranks_ - 1) / chips_);
  while (q > 0 && first_chip(q) > chip) --q;
  while (q + 1 < ranks_ && first_chip(q + 1) <= chip) ++q;
  return q;
}

std::string Partition::chips_text(int rank) const {
  const int a = first_chip(rank), b = end_chip(rank) - 1;
  return a == b ? fmt::format("chip {}", a) : fmt::format("chips {}..{}", a, b);
}

const uint8_t* ByteReader::skip(size_t n) {
  if (n > b_.size() - pos_) {
    throw std::runtime_error(fmt::format("rank exchange: a record of {} bytes at offset {} runs past the end of the "
                                         "{}-byte message", n, pos_, b_.size()));
  }
  const uint8_t* p = b_.data() + pos_;
  pos_ += n;
  return p;
}

void ByteReader::take(uint8_t* out, size_t n) { std::memcpy(out, skip(n), n); }

}  // namespace trnsim::model::collective
