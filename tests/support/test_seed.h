// The seed of a random test, chosen so that every run can be repeated (BRIEF section 5).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

namespace trnsim::test {

/// Seed of the running test, in this order: the TRNSIM_SEED environment variable; --gtest_random_seed when given
/// (non-zero); `default_seed` when non-zero; else a fixed value derived from the test's full name, so CI runs
/// repeat. Printed with the command that re-runs the test, and recorded as the test property "seed".
inline uint64_t test_seed(uint64_t default_seed = 0) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("(outside a test)");
  uint64_t seed = default_seed;
  if (const char* env = std::getenv("TRNSIM_SEED"); env != nullptr && *env != '\0') {
    seed = std::strtoull(env, nullptr, 0);
  } else if (GTEST_FLAG_GET(random_seed) != 0) {
    seed = static_cast<uint64_t>(GTEST_FLAG_GET(random_seed));
  } else if (seed == 0) {
    seed = std::hash<std::string>{}(name) & 0xFFFFFFFFu;
  }
  std::cout << "[ seed     ] " << name << " seed=" << seed << "  (re-run: TRNSIM_SEED=" << seed
            << " <test binary> --gtest_filter='" << name << "')\n";
  if (info) ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

}  // namespace trnsim::test
