// A stand-in randomized test for the runner's own tests (regress_runner_test.cpp): it takes its seed like every
// random test (tests/support/test_seed.h) and misbehaves for one chosen seed only, so that the runner's handling of a
// failure, a crash and a hang can be checked in seconds. Built only for those tests; not in any regression list.
//   Fake.Passes          always passes
//   Fake.ProvokesAnError prints a "[ fail-at  ]" line (an error it caused on purpose) and passes
//   Fake.FailsOnSeed     fails when the seed is REGRESS_FAKE_FAIL_SEED (default 4242)
//   Fake.CrashesOnSeed   aborts when the seed is REGRESS_FAKE_CRASH_SEED (unset: never)
//   Fake.HangsOnSeed     sleeps 10 minutes when the seed is REGRESS_FAKE_HANG_SEED (unset: never); writes its pid to
//                        REGRESS_FAKE_PID_FILE first, when set
//   Fake.Skips           always skips
#include <cstdio>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

// The seed named by environment variable `var`, or `fallback` when unset.
uint64_t env_seed(const char* var, uint64_t fallback) {
  const char* v = std::getenv(var);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

constexpr uint64_t kNever = ~uint64_t{0};

TEST(Fake, Passes) {
  const uint64_t seed = test::test_seed();
  EXPECT_NE(seed, kNever);
}

// Like a negative test of an RTL harness: the failure line of an error it provoked, then it passes. A later test's
// failure must not get this window.
TEST(Fake, ProvokesAnError) {
  std::fprintf(stderr, "[ fail-at  ] block=fake cycle=10 wave-from=0 wave-to=20\n");
}

TEST(Fake, FailsOnSeed) {
  const uint64_t seed = test::test_seed();
  // An RTL engine that fails prints where (cosim/te/te_rtl.cpp); the runner puts that window in the re-run command.
  if (seed == env_seed("REGRESS_FAKE_FAIL_SEED", 4242)) {
    std::fprintf(stderr, "[ fail-at  ] block=fake cycle=1234 wave-from=1034 wave-to=1254\n");
  }
  EXPECT_NE(seed, env_seed("REGRESS_FAKE_FAIL_SEED", 4242)) << "injected failure for seed " << seed
                                                          << " (UTF-8 \xC3\xA9, a stray byte \xFF, a control \x01)";
}

TEST(Fake, CrashesOnSeed) {
  const uint64_t seed = test::test_seed();
  if (seed == env_seed("REGRESS_FAKE_CRASH_SEED", kNever)) std::abort();
}

TEST(Fake, HangsOnSeed) {
  const uint64_t seed = test::test_seed();
  if (seed == env_seed("REGRESS_FAKE_HANG_SEED", kNever)) {
    if (const char* f = std::getenv("REGRESS_FAKE_PID_FILE")) std::ofstream(f) << getpid() << "\n";
    std::this_thread::sleep_for(std::chrono::minutes(10));
  }
}

TEST(Fake, Skips) { GTEST_SKIP() << "always skipped"; }

}  // namespace
}  // namespace trnsim
