#include "model/collective/topology.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trnsim::model::collective {

Topology::Topology(std::vector<int> dims, std::vector<double> gbytes_per_s, double hop_latency_ns, int pods,
                   double efa_gbytes_per_s, double efa_latency_ns)
    : dims_(std::move(dims)), gbps_(std::move(gbytes_per_s)), latency_ns_(hop_latency_ns), pods_(pods),
      efa_gbps_(efa_gbytes_per_s), efa_latency_ns_(efa_latency_ns) {
  if (dims_.empty() || dims_.size() > 3) {
    throw std::invalid_argument("torus: 1 to 3 dimensions, got " + std::to_string(dims_.size()));
  }
  if (gbps_.size() != dims_.size()) {
    throw std::invalid_argument("torus: one link bandwidth per dimension (" + std::to_string(dims_.size()) +
                                "), got " + std::to_string(gbps_.size()));
  }
  for (size_t d = 0; d < dims_.size(); ++d) {
    if (dims_[d] < 1 || dims_[d] > 64) {
      throw std::invalid_argument("torus: dimension " + std::to_string(d) + " has size " +
                                  std::to_string(dims_[d]) + " (1..64)");
    }
    if (!(gbps_[d] > 0)) throw std::invalid_argument("torus: link bandwidth must be > 0");
    chips_ *= dims_[d];
  }
  if (pods_ < 1 || pods_ > 64) throw std::invalid_argument("system: 1 to 64 pods, got " + std::to_string(pods_));
  if (pods_ > 1 && !(efa_gbps_ > 0 && efa_latency_ns_ >= 0)) {
    throw std::invalid_argument("system: pods need an EFA bandwidth > 0 and a latency >= 0");
  }
  chips_ *= pods_;
  if (chips_ > 4096) throw std::invalid_argument("torus: more than 4096 chips");
  if (!(latency_ns_ >= 0)) throw std::invalid_argument("torus: hop latency must be >= 0");
}

double Topology::min_link_latency_ns() const {
  return pods_ > 1 ? std::min(latency_ns_, efa_latency_ns_) : latency_ns_;
}

Topology Topology::from_config(const ChipConfig& c) {
  if (c.torus_dims.empty()) return Topology({1}, {c.link_gbytes_per_s}, c.link_hop_latency_ns);
  std::vector<double> bw;
  for (size_t d = 0; d < c.torus_dims.size(); ++d) bw.push_back(d < 2 ? c.link_gbytes_per_s : c.z_link_gbytes_per_s);
  if (c.pods > 1) {
    return Topology(c.torus_dims, bw, c.link_hop_latency_ns, c.pods, c.efa_gbytes_per_s, c.efa_latency_ns);
  }
  return Topology(c.torus_dims, bw, c.link_hop_latency_ns);
}

int Topology::coord(int rank, int d) const {
  for (int i = 0; i < d; ++i) rank /= dims_[size_t(i)];
  return rank % dim(d);
}

int Topology::with_coord(int rank, int d, int value) const {
  int stride = 1;
  for (int i = 0; i < d; ++i) stride *= dims_[size_t(i)];
  const int k = dim(d);
  const int v = ((value % k) + k) % k;
  return rank + (v - coord(rank, d)) * stride;
}

std::vector<LinkId> Topology::route(int src, int dst) const {
  std::vector<LinkId> hops;
  if (pods_ > 1 && src / torus_chips() != dst / torus_chips()) {
    return {{src, num_dims(), true}, {dst, num_dims(), false}};  // through the EFA switch
  }
  int at = src;
  for (int d = 0; d < num_dims(); ++d) {
    const int k = dims_[size_t(d)];
    const int forward = ((coord(dst, d) - coord(at, d)) % k + k) % k;  // hops the positive way
    // A tie (2 forward == k) goes + from an even coordinate in d, - from an odd one; `at` is where the packet
    // enters this dimension's ring (trn_noc_input_port route(), TlmNetwork::eval_router).
    const bool positive = 2 * forward == k ? coord(at, d) % 2 == 0 : 2 * forward < k;
    const int n = positive ? forward : k - forward;
    for (int h = 0; h < n; ++h) {
      hops.push_back({at, d, positive});
      at = with_coord(at, d, coord(at, d) + (positive ? 1 : -1));
    }
  }
  return hops;
}

double Topology::chip_egress_gbytes_per_s() const {
  double sum = 0;
  for (int d = 0; d < num_dims(); ++d) {
    if (dims_[size_t(d)] > 1) sum += 2 * gbps_[size_t(d)];
  }
  return sum;
}

}  // namespace trnsim::model::collective
