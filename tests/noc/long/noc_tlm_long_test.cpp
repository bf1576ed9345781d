// Long TLM runs (label long): every traffic pattern at low load and near saturation for 100k injection cycles on the
// 4x4, 3x5 and 2x2x2 tori: 0 lost, 0 duplicated, in order, no deadlock (the 1k-cycle watchdog), drains.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cosim/noc/noc_traffic.h"
#include "model/noc/noc_tlm.h"
#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

using cosim::noc::Pattern;

struct LongCase {
  std::string dims;
  Pattern pattern;
  double rate;
  std::string load;
};

class NocTlmLong : public ::testing::TestWithParam<LongCase> {};

TEST_P(NocTlmLong, HundredThousandCyclesClean) {
  const LongCase& c = GetParam();
  model::noc::TlmNetwork net(tlm_net(c.dims));
  cosim::noc::TrafficOptions tr;
  tr.pattern = c.pattern;
  tr.rate = c.rate;
  tr.min_len = 1;
  tr.max_len = 5;
  tr.inject_cycles = 100000;
  tr.check_order = true;
  tr.seed = test_seed();
  const auto r = expect_clean_run(net, tr, c.dims + " " + cosim::noc::to_string(c.pattern) + " " + c.load);
  EXPECT_GT(r.packets_delivered, 5000u);  // 2x2x2 transpose at 0.05: 4 senders x 100k x 0.05 / 3 flits = 6.7k
}

std::vector<LongCase> long_cases() {
  // Near saturation: about 90 % of the saturation throughput per pattern (docs/neuronlink.md).
  const std::vector<std::pair<std::string, std::vector<double>>> nets = {
      {"4x4", {0.53, 0.36, 0.64, 0.23, 0.64}}, {"3x5", {0.48, 0.37, 0.64, 0.24, 0.64}},
      {"2x2x2", {0.65, 0.78, 0.78, 0.40, 0.78}}};
  const Pattern pats[] = {Pattern::kUniform, Pattern::kTranspose, Pattern::kBitComp, Pattern::kHotspot,
                          Pattern::kNeighbor};
  std::vector<LongCase> v;
  for (const auto& [dims, sat] : nets) {
    for (size_t p = 0; p < 5; ++p) {
      v.push_back({dims, pats[p], 0.05, "low"});
      v.push_back({dims, pats[p], sat[p], "sat"});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tori, NocTlmLong, ::testing::ValuesIn(long_cases()), [](const auto& info) {
  return "t" + info.param.dims + "_" + cosim::noc::to_string(info.param.pattern) + "_" + info.param.load;
});

}  // namespace
}  // namespace trnsim::test
