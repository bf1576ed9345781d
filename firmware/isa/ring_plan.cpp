#include "firmware/isa/ring_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

namespace trnsim::isa {

std::vector<RingFlow> ring_plan(const std::vector<int>& dims, const std::vector<double>& link_gbytes_per_s,
                                 int slices) {
  if (dims.size() != link_gbytes_per_s.size()) {
    throw std::invalid_argument("ring_plan: " + std::to_string(dims.size()) + " dimensions but " +
                                std::to_string(link_gbytes_per_s.size()) + " link bandwidths");
  }
  std::vector<int> used;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 1 || !(link_gbytes_per_s[d] > 0)) {
      throw std::invalid_argument("ring_plan: dimension " + std::to_string(d) + " has size " +
                                  std::to_string(dims[d]) + " and bandwidth " + std::to_string(link_gbytes_per_s[d]));
    }
    if (dims[d] > 1) used.push_back(int(d));
  }
  // Flow f = (first dimension, direction); the + and - flows of one first dimension get equal shares. Per unit of
  // share, phase i of a flow sends (k_i - 1) / (k_0 ... k_i) of it over links of dimension d_i, at bw(d_i).
  std::vector<std::vector<int>> orders;
  std::vector<std::vector<double>> per_dim;  // per_dim[f][d]: time per unit of share on dimension d's links
  for (size_t first = 0; first < used.size(); ++first) {
    std::vector<int> order;
    std::vector<double> t(dims.size(), 0.0);
    double held = 1;
    // The first dimension, then the others in ascending order (z, the slow one on trn2-64, last unless first).
    for (size_t i = 0; i < used.size(); ++i) {
      const int d = i == 0 ? used[first] : used[i <= first ? i - 1 : i];
      order.push_back(d);
      held *= dims[size_t(d)];
      t[size_t(d)] += (dims[size_t(d)] - 1) / held / link_gbytes_per_s[size_t(d)];
    }
    orders.push_back(order);
    per_dim.push_back(t);
  }
  std::vector<RingFlow> flows;
  if (orders.empty()) return flows;
  const int kUnits = 100;
  std::vector<int> w(orders.size(), 1), best;
  double best_cost = 0;
  // Every split of kUnits into orders.size() positive parts (at most 3 dimensions: at most 4851 splits).
  std::function<void(size_t, int)> search = [&](size_t i, int left) {
    if (i + 1 == orders.size()) {
      w[i] = left;
      double worst = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        double link = 0;
        for (size_t f = 0; f < orders.size(); ++f) link += w[f] * per_dim[f][d];
        worst = std::max(worst, link);
      }
      for (size_t f = 0; f < orders.size(); ++f) {
        double chain = 0;
        for (double t : per_dim[f]) chain += w[f] * t;
        worst = std::max(worst, chain);
      }
      if (best.empty() || worst < best_cost * (1 - 1e-12)) {
        best = w;
        best_cost = worst;
      }
      return;
    }
    for (int x = 1; x <= left - int(orders.size() - i - 1); ++x) {
      w[i] = x;
      search(i + 1, left - x);
    }
  };
  search(0, kUnits);
  uint64_t g = 0;
  for (int x : best) g = std::gcd(g, uint64_t(x));
  for (size_t f = 0; f < orders.size(); ++f) {
    for (int dir : {+1, -1}) {
      for (int slice = 0; slice < std::max(slices, 1); ++slice) {
        flows.push_back(RingFlow{dir, orders[f], uint64_t(best[f]) / g, slice});
      }
    }
  }
  return flows;
}

}  // namespace trnsim::isa
