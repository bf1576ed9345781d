// The chip-to-chip network of a multi-chip system as the collectives see it: a torus of chips, each link a
// resource with a bandwidth per direction and a latency per hop (docs/neuronlink.md "Collectives").
#pragma once

#include <cstdint>
#include <vector>

#include "model/config/chip_config.h"

namespace trnsim::model::collective {

/// One directed link: leaves `chip` along dimension `dim`, towards coordinate +1 (`positive`) or -1.
struct LinkId {
  int chip = 0;
  int dim = 0;
  bool positive = true;
};

/// A torus of chips. Rank r has coordinates (x, y, z) with x fastest: r = x + X * (y + Y * z).
/// Every chip has two directed output links per dimension (to +1 and to -1, wrapping), also in a dimension of size 2
/// (two separate links to the same neighbour) and none in a dimension of size 1.
class Topology {
 public:
  /// dims: torus sizes (each >= 1, at most 3 dimensions, product >= 1). gbytes_per_s: per-link, per-direction
  /// bandwidth of each dimension (same length as dims, > 0). hop_latency_ns >= 0. Throws std::invalid_argument.
  Topology(std::vector<int> dims, std::vector<double> gbytes_per_s, double hop_latency_ns);
  /// The network of a configuration: its torus_dims with link_gbytes_per_s in x and y and z_link_gbytes_per_s in z;
  /// a single-chip configuration gives one chip and no links.
  static Topology from_config(const ChipConfig& c);

  int chips() const { return chips_; }
  int num_dims() const { return int(dims_.size()); }
  const std::vector<int>& dims() const { return dims_; }
  int dim(int d) const { return dims_[size_t(d)]; }
  double gbytes_per_s(int d) const { return gbps_[size_t(d)]; }
  double hop_latency_ns() const { return latency_ns_; }

  int coord(int rank, int d) const;
  /// The rank whose coordinates equal `rank`'s except coordinate d, which is `value` (taken modulo dim(d)).
  int with_coord(int rank, int d, int value) const;
  /// Number of directed links (2 * chips * num_dims; links of size-1 dimensions exist but are never used).
  int num_links() const { return 2 * chips_ * num_dims(); }
  int link_index(const LinkId& l) const { return (l.chip * num_dims() + l.dim) * 2 + (l.positive ? 0 : 1); }
  /// Dimension-order route from src to dst: x first, then y, then z; in each dimension the shorter way round. A tie
  /// (even ring of k chips, destination exactly k/2 away) goes + if the coordinate in that dimension of the chip where
  /// the route enters the dimension's ring (src's coordinate there) is even, - if it is odd: the routers' rule
  /// (rtl/noc/trn_noc_input_port.sv route(), model/noc/noc_tlm.cpp; docs/neuronlink.md "Routing"), so these are the
  /// links a packet takes through the router network. One LinkId per hop, in order; empty if src == dst.
  std::vector<LinkId> route(int src, int dst) const;
  /// Sum of a chip's output link bandwidths (all dimensions of size > 1, both directions), GB/s: the most a chip
  /// can send per second, which bounds the bus bandwidth of any collective.
  double chip_egress_gbytes_per_s() const;

 private:
  std::vector<int> dims_;
  std::vector<double> gbps_;
  double latency_ns_;
  int chips_ = 1;
};

}  // namespace trnsim::model::collective
