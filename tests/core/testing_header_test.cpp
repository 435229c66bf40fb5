// SPDX-License-Identifier: Apache-2.0
// backoff/testing.hpp as a user's test uses it: a retry loop over recording_env sleeps exactly
// the policy's delays without waiting, the clock shows the time the loop "took", the seed makes
// jittered waits repeat, and a stop request ends the loop before its next sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "backoff/policy.hpp"
#include "backoff/retry.hpp"
#include "backoff/testing.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::duration;
using backoff::retry_policy;
using backoff::testing::fails_then_succeeds;
using backoff::testing::recording_env;

using th_delays = std::vector<duration>;

TEST(TestingHeader, ARetryLoopSleepsExactlyThePolicysDelays) {
  recording_env rec;
  fails_then_succeeds flaky{3};
  const retry_policy policy{backoff_policy::exponential(100ms, 2.0, 1s), 10};
  const auto result = backoff::retry(flaky, policy, {}, rec.env);
  EXPECT_TRUE(result);
  EXPECT_EQ(result.attempts, 4u);
  EXPECT_EQ(flaky.calls(), 4u);
  EXPECT_EQ(rec.sleeps, (th_delays{100ms, 200ms, 400ms}));
  EXPECT_EQ(rec.total_slept(), 700ms);
  EXPECT_EQ(rec.clock.now().time_since_epoch(), 700ms);
}

TEST(TestingHeader, MoreFailuresThanAttemptsExhaustTheLoop) {
  recording_env rec{42, 5s};  // the clock starts at 5 s
  fails_then_succeeds flaky{10};
  const retry_policy policy{backoff_policy::constant(250ms), 4};
  const auto result = backoff::retry(flaky, policy, {}, rec.env);
  EXPECT_EQ(result.why, backoff::outcome::attempts_exhausted);
  EXPECT_EQ(flaky.calls(), 4u);
  EXPECT_EQ(rec.sleeps, (th_delays{250ms, 250ms, 250ms}));
  EXPECT_EQ(rec.clock.now().time_since_epoch(), 5750ms);
}

TEST(TestingHeader, ZeroFailuresSucceedsAtOnceWithoutSleeping) {
  recording_env rec;
  fails_then_succeeds at_once{0};
  EXPECT_TRUE(backoff::retry(at_once, retry_policy{backoff_policy::constant(1s), 3}, {}, rec.env));
  EXPECT_EQ(at_once.calls(), 1u);
  EXPECT_TRUE(rec.sleeps.empty());
}

// The fixed seed is what makes a jittered test repeatable: two envs of one seed sleep the same,
// another seed differently; with jitter=decorrelated-v2 each wait is also within Polly's bound.
TEST(TestingHeader, TheSeedMakesJitteredWaitsRepeat) {
  const retry_policy policy{
      backoff_policy::exponential(1s, 2.0, 60s).with_jitter(backoff::jitter_kind::decorrelated_v2),
      8};
  const auto sleeps_for = [&](std::uint64_t seed) {
    recording_env rec{seed};
    fails_then_succeeds never{100};
    (void)backoff::retry(never, policy, {}, rec.env);
    return rec.sleeps;
  };
  const th_delays first = sleeps_for(3);
  EXPECT_EQ(first.size(), 7u);
  EXPECT_EQ(sleeps_for(3), first);
  EXPECT_NE(sleeps_for(4), first);
  for (const duration d : first) EXPECT_LE(d, 60s);
  EXPECT_LE(first.front(), 1378ms);  // 2 tanh(2) / 1.4 s: the first wait's largest
}

TEST(TestingHeader, AStopRequestEndsTheLoopBeforeItsNextSleep) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        if (++calls == 2) rec.stop.request_stop();
        return false;
      },
      retry_policy{backoff_policy::constant(1s), 10}, {}, rec.env);
  EXPECT_EQ(result.why, backoff::outcome::cancelled);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps, (th_delays{1s}));
}

}  // namespace
