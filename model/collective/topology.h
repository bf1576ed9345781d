// The chip-to-chip network of a multi-chip system as the collectives see it: a torus of chips, each link a
// resource with a bandwidth per direction and a latency per hop (docs/neuronlink.md "Collectives").
#pragma once

#include <cstdint>
#include <vector>

#include "model/config/chip_config.h"

namespace trnsim::model::collective {

/// One directed link: leaves `chip` along dimension `dim`, towards coordinate +1 (`positive`) or -1. In a system of
/// several UltraServers, dim == Topology::num_dims() names the chip's EFA links: positive = chip to switch, negative
/// = switch to chip.
struct LinkId {
  int chip = 0;
  int dim = 0;
  bool positive = true;
};

/// A torus of chips, or several (pods: UltraServers) joined by an EFA switch. Rank r has coordinates (x, y, z) with x
/// fastest and then its pod: r = x + X * (y + Y * (z + Z * pod)).
/// Every chip has two directed output links per dimension (to +1 and to -1, wrapping), also in a dimension of size 2
/// (two separate links to the same neighbour) and none in a dimension of size 1. With pods > 1 every chip also has an
/// EFA link to the switch and one from it (a non-blocking switch: only those two links are modelled).
/// The pod is dimension num_dims() for coord(), with_coord() and dim() (the collectives' last ring phase).
class Topology {
 public:
  /// dims: torus sizes (each >= 1, at most 3 dimensions, product >= 1). gbytes_per_s: per-link, per-direction
  /// bandwidth of each dimension (same length as dims, > 0). hop_latency_ns >= 0. pods >= 1 tori joined by EFA links
  /// of efa_gbytes_per_s (> 0 when pods > 1) and efa_latency_ns per pass. Throws std::invalid_argument.
  Topology(std::vector<int> dims, std::vector<double> gbytes_per_s, double hop_latency_ns, int pods = 1,
           double efa_gbytes_per_s = 0, double efa_latency_ns = 0);
  /// The network of a configuration: its torus_dims with link_gbytes_per_s in x and y and z_link_gbytes_per_s in z;
  /// a single-chip configuration gives one chip and no links.
  static Topology from_config(const ChipConfig& c);

  int chips() const { return chips_; }
  /// Torus dimensions (the pod is not one of them).
  int num_dims() const { return int(dims_.size()); }
  /// Torus sizes.
  const std::vector<int>& dims() const { return dims_; }
  /// Size of torus dimension d, or pods() for d == num_dims().
  int dim(int d) const { return d == num_dims() ? pods_ : dims_[size_t(d)]; }
  /// Bandwidth of a link of dimension d, GB/s per direction (d == num_dims(): EFA).
  double gbytes_per_s(int d) const { return d == num_dims() ? efa_gbps_ : gbps_[size_t(d)]; }
  double hop_latency_ns() const { return latency_ns_; }
  int pods() const { return pods_; }
  int torus_chips() const { return chips_ / pods_; }
  double efa_latency_ns() const { return efa_latency_ns_; }
  /// Latency of one pass over a link of dimension d (a NeuronLink hop, or EFA).
  double link_latency_ns(int d) const { return d == num_dims() ? efa_latency_ns_ : latency_ns_; }
  /// The shortest latency of any link: the lookahead of a system split over processes (docs/distributed.md).
  double min_link_latency_ns() const;

  int coord(int rank, int d) const;
  /// The rank whose coordinates equal `rank`'s except coordinate d, which is `value` (taken modulo dim(d)).
  int with_coord(int rank, int d, int value) const;
  /// Number of directed links (2 * chips * num_dims; links of size-1 dimensions exist but are never used), then
  /// 2 * chips EFA links when pods > 1.
  int num_links() const { return 2 * chips_ * (num_dims() + (pods_ > 1 ? 1 : 0)); }
  int link_index(const LinkId& l) const {
    if (l.dim == num_dims()) return 2 * chips_ * num_dims() + 2 * l.chip + (l.positive ? 0 : 1);
    return (l.chip * num_dims() + l.dim) * 2 + (l.positive ? 0 : 1);
  }
  /// Dimension-order route from src to dst: x first, then y, then z; in each dimension the shorter way round. A tie
  /// (even ring of k chips, destination exactly k/2 away) goes + if the coordinate in that dimension of the chip where
  /// the route enters the dimension's ring (src's coordinate there) is even, - if it is odd: the routers' rule
  /// (rtl/noc/trn_noc_input_port.sv route(), model/noc/noc_tlm.cpp; docs/neuronlink.md "Routing"), so these are the
  /// links a packet takes through the router network. One LinkId per hop, in order; empty if src == dst. Between
  /// pods: src's EFA link to the switch, then the switch's to dst.
  std::vector<LinkId> route(int src, int dst) const;
  /// Sum of a chip's output link bandwidths (all dimensions of size > 1, both directions), GB/s: the most a chip
  /// can send per second, which bounds the bus bandwidth of any collective.
  double chip_egress_gbytes_per_s() const;

 private:
  std::vector<int> dims_;
  std::vector<double> gbps_;
  double latency_ns_;
  int pods_ = 1;
  double efa_gbps_ = 0, efa_latency_ns_ = 0;
  int chips_ = 1;
};

}  // namespace trnsim::model::collective
