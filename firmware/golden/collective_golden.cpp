#include "firmware/golden/collective_golden.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include "firmware/golden/fp_golden.h"
#include "firmware/isa/ring_plan.h"

namespace trnsim::golden {
namespace {

int chip_count(const std::vector<int>& dims) {
  int n = 1;
  for (int k : dims) {
    if (k < 1) throw std::invalid_argument("collective golden: dimension size " + std::to_string(k));
    n *= k;
  }
  return n;
}

uint32_t add(CollectiveDtype dt, uint32_t a, uint32_t b) {
  if (dt == CollectiveDtype::kFp32) return f32_add(a, b);
  const uint32_t s = f32_add(widen_to_f32(isa::Dtype::kBf16, uint16_t(a)), widen_to_f32(isa::Dtype::kBf16, uint16_t(b)));
  return narrow_from_f32(isa::Dtype::kBf16, s, /*saturate=*/false);
}

/// Torus coordinates, x fastest.
struct Coords {
  std::vector<int> dims, stride;
  explicit Coords(const std::vector<int>& d) : dims(d) {
    int s = 1;
    for (int k : d) {
      stride.push_back(s);
      s *= k;
    }
  }
  int get(int rank, size_t d) const { return rank / stride[d] % dims[d]; }
  int set(int rank, size_t d, int v) const {
    const int k = dims[d];
    return rank + (((v % k) + k) % k - get(rank, d)) * stride[d];
  }
};

struct Flow {
  int dir;
  std::vector<size_t> order;  ///< reduce-scatter phase dimensions
};

}  // namespace

uint32_t collective_test_value(CollectiveDtype dtype, uint64_t seed, int rank, uint64_t element) {
  // splitmix64 (Steele, Lea, Flood 2014) of a mix of the three inputs.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t(rank) << 40) + element + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const uint32_t sign = uint32_t(z >> 63) << 31;
  const uint32_t exponent = uint32_t(127 - 8 + (z >> 32) % 17) << 23;
  const uint32_t bits = sign | exponent | uint32_t(z & 0x7FFFFF);
  return dtype == CollectiveDtype::kFp32 ? bits : bits >> 16;  // BF16: the top 16 bits (a BF16 value as is)
}

uint64_t collective_block_begin(uint64_t count, int n, int r) {
  return uint64_t((unsigned __int128)count * unsigned(r) / unsigned(n));
}

std::vector<uint32_t> collective_reduced(const CollectiveAlgorithm& algo, CollectiveDtype dtype, uint64_t count,
                                         const CollectiveInput& input) {
  if (algo.pods < 1) throw std::invalid_argument("collective golden: " + std::to_string(algo.pods) + " pods");
  // The pods (UltraServers) are the last coordinate: rank = torus position + torus chips x pod.
  std::vector<int> all_dims = algo.dims;
  if (algo.pods > 1) all_dims.push_back(algo.pods);
  const int n = chip_count(all_dims);
  const Coords co(all_dims);
  std::vector<Flow> flows;
  std::vector<uint64_t> weights;
  if (algo.rhd) {
    if (n & (n - 1)) {
      throw std::invalid_argument("collective golden: rhd needs a power-of-two chip count, got " + std::to_string(n));
    }
    flows.push_back({+1, {}});
    weights = {1};
  } else {
    for (const isa::RingFlow& f : isa::ring_plan(algo.dims, algo.link_gbytes_per_s, algo.slices)) {
      flows.push_back({f.direction, std::vector<size_t>(f.dims.begin(), f.dims.end())});
      // Several pods: each flow's reduce-scatter ends with the ring over the pods (its all-gather starts there).
      if (algo.pods > 1) flows.back().order.push_back(algo.dims.size());
      weights.push_back(f.weight);
    }
    if (flows.empty()) {  // one chip: nothing to reduce
      flows.push_back({+1, {}});
      weights = {1};
    }
  }
  uint64_t total_w = 0;
  for (uint64_t w : weights) total_w += w;
  if (total_w == 0) throw std::invalid_argument("collective golden: flow weights sum to 0");

  // The order of a ring flow is the same for every element of one block: as a list of sums, each "v[target] =
  // ((v[s0] + v[s1]) + ...)" over the chips of one ring, phase after phase. Built once per block and flow.
  struct Sum {
    int target;
    std::vector<int> sources;
  };
  const auto ring_order = [&](const Flow& fl, int b) {
    std::vector<Sum> sums;
    std::vector<bool> alive(size_t(n), true);
    for (size_t d : fl.order) {
      const int k = all_dims[d], c = co.get(b, d);
      // The ring along d collapses onto coordinate c: ((v[c + s] + v[c + 2s]) + ...) + v[c].
      for (int r = 0; r < n; ++r) {
        if (!alive[size_t(r)] || co.get(r, d) != c) continue;
        Sum sum{r, {}};
        for (int t = 1; t <= k; ++t) sum.sources.push_back(co.set(r, d, c + t * fl.dir));
        sums.push_back(std::move(sum));
      }
      for (int r = 0; r < n; ++r) alive[size_t(r)] = alive[size_t(r)] && co.get(r, d) == c;
    }
    return sums;
  };

  std::vector<uint32_t> out(count);
  // Block b's elements, each summed over its own copy of the chips' values (v).
  const auto reduce_block = [&](int b, std::vector<uint32_t>& v) {
    const uint64_t lo = collective_block_begin(count, n, b), hi = collective_block_begin(count, n, b + 1);
    uint64_t w = 0;
    for (size_t f = 0; f < flows.size(); ++f) {
      const uint64_t first = lo + uint64_t((unsigned __int128)(hi - lo) * w / total_w);
      w += weights[f];
      const uint64_t last = lo + uint64_t((unsigned __int128)(hi - lo) * w / total_w);
      const std::vector<Sum> sums = algo.rhd || first == last ? std::vector<Sum>{} : ring_order(flows[f], b);
      for (uint64_t j = first; j < last; ++j) {
        for (int r = 0; r < n; ++r) v[size_t(r)] = input(r, j);
        if (algo.rhd) {
          // Pairwise in rank order: level k adds the partial of ranks with bit k = 0 and the one with bit k = 1.
          for (int half = 1; half < n; half *= 2) {
            for (int r = 0; r < n; r += 2 * half) v[size_t(r)] = add(dtype, v[size_t(r)], v[size_t(r + half)]);
          }
          out[j] = v[0];
          continue;
        }
        for (const Sum& sum : sums) {
          uint32_t acc = v[size_t(sum.sources[0])];
          for (size_t i = 1; i < sum.sources.size(); ++i) acc = add(dtype, acc, v[size_t(sum.sources[i])]);
          v[size_t(sum.target)] = acc;
        }
        out[j] = v[size_t(b)];
      }
    }
  };
  // Blocks are independent: one thread per host core takes every T-th block (a few thousand elements at least each,
  // so small buffers stay on this thread).
  const uint64_t kMinElementsPerThread = 1 << 16;
  const int threads = int(std::max<uint64_t>(1, std::min<uint64_t>({std::max(1u, std::thread::hardware_concurrency()),
                                                                    uint64_t(n), count / kMinElementsPerThread})));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const auto work = [&, t] {
      std::vector<uint32_t> v(static_cast<size_t>(n));
      for (int b = t; b < n; b += threads) reduce_block(b, v);
    };
    if (t + 1 < threads) {
      pool.emplace_back(work);
      continue;
    }
    try {
      work();
    } catch (...) {
      for (std::thread& th : pool) th.join();
      throw;
    }
  }
  for (std::thread& th : pool) th.join();
  return out;
}

std::vector<uint32_t> collective_gathered(int chips, uint64_t count, const CollectiveInput& input) {
  if (chips < 1) throw std::invalid_argument("collective golden: " + std::to_string(chips) + " chips");
  std::vector<uint32_t> out(count);
  for (int r = 0; r < chips; ++r) {
    for (uint64_t j = collective_block_begin(count, chips, r); j < collective_block_begin(count, chips, r + 1); ++j) {
      out[j] = input(r, j);
    }
  }
  return out;
}

}  // namespace trnsim::golden
