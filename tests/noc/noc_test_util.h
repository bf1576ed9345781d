// Helpers shared by the NeuronLink RTL tests.
#pragma once

#include <iostream>
#include <utility>
#include <string>

#include <gtest/gtest.h>

#include "cosim/noc/noc_rtl.h"
#include "cosim/noc/noc_traffic.h"
#include "model/noc/noc_tlm.h"

namespace trnsim::test {

/// A torus: "2x2", "4x4", "3x5" (2-D) or "2x2x2" (3-D), with the default router build for its dimension count.
inline cosim::noc::NocOptions torus(const std::string& dims, const std::string& router = "", int link_latency = 0) {
  cosim::noc::NocOptions o;
  o.size = {1, 1, 1};
  o.ndim = 0;
  size_t pos = 0;
  while (pos <= dims.size() && o.ndim < 3) {
    const size_t x = dims.find('x', pos);
    o.size[static_cast<size_t>(o.ndim++)] = std::stoi(dims.substr(pos, x == std::string::npos ? x : x - pos));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  o.router = router;
  o.link_latency = link_latency;
  return o;
}

/// TLM options for "4x4" / "3x5" / "2x2x2" with the parameters of the RTL's default build for that dimension count
/// (d2v2, d3v4g2); `is_torus` false: a mesh of that size.
inline model::noc::TlmOptions tlm_net(const std::string& dims, bool is_torus = true) {
  const cosim::noc::NocOptions o = torus(dims);
  model::noc::TlmOptions t;
  t.ndim = o.ndim;
  t.size = o.size;
  t.torus = is_torus;
  t.num_vc = o.ndim == 3 ? 4 : 2;
  t.vc_groups = o.ndim == 3 ? 2 : 1;
  return t;
}

/// Runs the traffic and checks the run delivered every packet exactly once, intact and in order.
inline cosim::noc::TrafficResult expect_clean_run(cosim::noc::NocPorts& net, const cosim::noc::TrafficOptions& t,
                                                  const std::string& what) {
  const cosim::noc::TrafficResult r = cosim::noc::run_traffic(net, t);
  std::cout << "[ noc      ] " << what << ": " << r.summary() << "\n";
  for (const std::string& e : r.errors) ADD_FAILURE() << what << ": " << e;
  EXPECT_EQ(r.lost, 0u) << what;
  EXPECT_EQ(r.duplicated, 0u) << what;
  EXPECT_EQ(r.corrupted, 0u) << what;
  EXPECT_EQ(r.out_of_order, 0u) << what;
  EXPECT_EQ(r.packets_delivered, r.packets_created) << what;
  EXPECT_EQ(r.packets_injected, r.packets_created) << what;
  EXPECT_EQ(r.flits_delivered, r.flits_injected) << what;
  return r;
}

}  // namespace trnsim::test

namespace trnsim::test {

/// Captures what the verilated routers print (assertion messages go to stdout) while `body` runs, and returns the
/// NocError text it threw ("" if none) together with the captured output.
template <class F>
std::pair<std::string, std::string> error_and_output(F&& body) {
  std::string error;
  ::testing::internal::CaptureStdout();
  try {
    body();
  } catch (const cosim::noc::NocError& e) {
    error = e.what();
  }
  std::string out = ::testing::internal::GetCapturedStdout();
  std::cout << out;  // keep the messages visible in the test log
  return {error, out};
}

}  // namespace trnsim::test
