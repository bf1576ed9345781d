// A multi-chip system simulated by several processes (docs/distributed.md): which process (rank) owns which chip,
// and the one exchange the ranks use to agree on the hub's decisions and to move collective payloads between
// chips they do not share. The model knows no MPI: cosim/mpi/ implements RankExchange over MPI; LoopbackExchange
// is the exchange of a single rank (a distributed run on one process, the reference of the others).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::model::collective {

/// Chips to ranks: rank q owns chips [floor(q * n / R), floor((q + 1) * n / R)) of n chips and R ranks, chip ids
/// in the topology's order (x fastest, Topology), so a rank owns a slab of whole z planes when R divides the z size.
/// Throws std::invalid_argument for ranks < 1, a rank outside [0, ranks) or more ranks than chips.
class Partition {
 public:
  Partition(int chips, int ranks, int rank);

  int chips() const { return chips_; }
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  /// The rank that owns `chip`.
  int owner(int chip) const;
  bool local(int chip) const { return owner(chip) == rank_; }
  int first_chip(int rank) const { return int(int64_t(chips_) * rank / ranks_); }
  /// One past the last chip of `rank`.
  int end_chip(int rank) const { return first_chip(rank + 1); }
  /// "chips 8..15" (or "chip 3") of `rank`.
  std::string chips_text(int rank) const;

 private:
  int chips_, ranks_, rank_;
};

/// The exchange every rank calls at the same points in the same order (a collective operation: each call returns
/// only when every rank made it). Implementations throw std::runtime_error naming the rank that failed or stayed
/// silent past their bound.
class RankExchange {
 public:
  virtual ~RankExchange() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  /// Every rank's `mine`, indexed by rank.
  virtual std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) = 0;
  /// out[q] goes to rank q; returns what every rank sent to this one, indexed by sender (out.size() == ranks()).
  virtual std::vector<std::vector<uint8_t>> all_to_all(std::vector<std::vector<uint8_t>> out) = 0;
};

/// The exchange of one rank: everything comes back to itself.
class LoopbackExchange final : public RankExchange {
 public:
  int rank() const override { return 0; }
  int ranks() const override { return 1; }
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) override { return {mine}; }
  std::vector<std::vector<uint8_t>> all_to_all(std::vector<std::vector<uint8_t>> out) override {
    if (out.size() != 1) throw std::invalid_argument("LoopbackExchange::all_to_all: one rank, one buffer");
    return out;
  }
};

/// Little-endian packing of the exchanged records (one mechanism for the hub's events and the payload rounds).
class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_bytes(const uint8_t* p, size_t n) { bytes.insert(bytes.end(), p, p + n); }
  std::vector<uint8_t> bytes;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<uint8_t>& b) : b_(b) {}
  template <class T>
  T get() {
    T v{};
    take(reinterpret_cast<uint8_t*>(&v), sizeof(T));
    return v;
  }
  void take(uint8_t* out, size_t n);
  /// The next n bytes in place (valid while the buffer lives); runtime_error past the end.
  const uint8_t* skip(size_t n);
  bool done() const { return pos_ == b_.size(); }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_ = 0;
};

}  // namespace trnsim::model::collective
