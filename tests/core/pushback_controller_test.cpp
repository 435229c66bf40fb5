// SPDX-License-Identifier: Apache-2.0
// Server pushback in retry_controller (gRFC A6, "Pushback"): a retryable verdict with `pushback`
// and a retry_after is waited exactly (not max(backoff, it), as a plain Retry-After is), and the
// backoff restarts from its first step after it. The deadline rule and the gates still apply.
// Exact waits on recording_env's manual clock, and the controller driven by hand.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/policy.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/verdict.hpp"
#include "recording_env.hpp"

namespace pushback_controller_test {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::verdict;
using backoff::testing::recording_env;

// 1 s, 2 s, 4 s, 8 s ... capped at 30 s, no jitter.
backoff::retry_policy pushback_doubling(duration max_elapsed = 0s) {
  return {backoff::backoff_policy::exponential(1s, 2.0, 30s), 0, max_elapsed};
}

verdict pushback_of(duration d) {
  verdict v = verdict::retryable(d);
  v.pushback = true;
  return v;
}

std::vector<duration> waits_of(const std::vector<verdict>& script,
                               const backoff::retry_policy& policy, outcome expected) {
  recording_env rec;
  std::size_t next = 0;
  const auto r = backoff::retry([&] { return script.at(next++); },
                                backoff::retry_options{.policy = policy}, rec.env);
  EXPECT_EQ(r.why, expected);
  return rec.sleeps;
}

TEST(Pushback, WaitsExactlyAndRestartsTheBackoff) {
  // Exponential 1 s, 2 s, 4 s: after a pushback of 300 ms the next backoff wait is 1 s again.
  EXPECT_EQ(waits_of({verdict::retryable(), verdict::retryable(), pushback_of(300ms),
                      verdict::retryable(), verdict::retryable(), verdict::success()},
                     pushback_doubling(), outcome::succeeded),
            (std::vector<duration>{1s, 2s, 300ms, 1s, 2s}));
}

TEST(Pushback, IsTheWaitWhereARetryAfterIsOnlyAMinimum) {
  // The same 300 ms: as a plain Retry-After it loses to the 1 s backoff and the schedule goes
  // on; as a pushback it is the wait.
  EXPECT_EQ(waits_of({verdict::retryable(300ms), verdict::retryable(), verdict::success()},
                     pushback_doubling(), outcome::succeeded),
            (std::vector<duration>{1s, 2s}));
  EXPECT_EQ(waits_of({pushback_of(300ms), verdict::retryable(), verdict::success()},
                     pushback_doubling(), outcome::succeeded),
            (std::vector<duration>{300ms, 1s}));
  // Above the backoff both wait it; only the pushback restarts the schedule.
  EXPECT_EQ(waits_of({verdict::retryable(), verdict::retryable(1min), verdict::retryable(),
                      verdict::success()},
                     pushback_doubling(), outcome::succeeded),
            (std::vector<duration>{1s, 1min, 4s}));
  EXPECT_EQ(
      waits_of({verdict::retryable(), pushback_of(1min), verdict::retryable(), verdict::success()},
               pushback_doubling(), outcome::succeeded),
      (std::vector<duration>{1s, 1min, 1s}));
}

TEST(Pushback, OfZeroRetriesAtOnce) {
  EXPECT_EQ(
      waits_of({verdict::retryable(), pushback_of(0s), verdict::retryable(), verdict::success()},
               pushback_doubling(), outcome::succeeded),
      (std::vector<duration>{1s, 0s, 1s}));
}

TEST(Pushback, WithoutADurationIsAPlainFailure) {
  verdict flag_only = verdict::retryable();
  flag_only.pushback = true;
  EXPECT_EQ(waits_of({verdict::retryable(), flag_only, verdict::retryable(), verdict::success()},
                     pushback_doubling(), outcome::succeeded),
            (std::vector<duration>{1s, 2s, 4s}));
}

TEST(Pushback, BeyondTheTimeLeftEndsTheLoopAtOnce) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, pushback_of(30s)); },
                                backoff::retry_options{.policy = pushback_doubling(10s)}, rec.env);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(rec.sleeps.empty());
}

TEST(Pushback, EqualToTheTimeLeftIsHonouredForOneLastAttempt) {
  EXPECT_EQ(waits_of({pushback_of(10s), verdict::retryable(), verdict::success()},
                     pushback_doubling(10s), outcome::deadline_exceeded),
            (std::vector<duration>{10s}));
}

TEST(Pushback, StillAsksTheBudget) {
  // A quota of 10 at 5 a retry pays for two pushbacks, not three.
  backoff::retry_quota_config c;
  c.capacity = 10;
  backoff::retry_budget budget{c};
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] { return (++calls, pushback_of(100ms)); },
      backoff::retry_options{.policy = pushback_doubling(), .gates = {.budget = &budget}}, rec.env);
  EXPECT_EQ(r.why, outcome::budget_exhausted);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{100ms, 100ms}));
}

TEST(Pushback, StillAsksTheBreaker) {
  // A consecutive breaker opening at 2 failures for 1 min: a pushback of 100 ms would retry into
  // the open breaker, so the loop ends at the second failure.
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=2, open=1m)")};
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] { return (++calls, pushback_of(100ms)); },
      backoff::retry_options{.policy = pushback_doubling(), .gates = {.breaker = &breaker}},
      rec.env);
  EXPECT_EQ(r.why, outcome::breaker_open);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{100ms}));
}

TEST(Pushback, ReplacesAPlannedDelayAndResetsTheBackoffState) {
  const backoff::retry_policy policy = pushback_doubling();
  backoff::retry_controller c{policy, 0s};
  backoff::random_generator rng{3};
  const auto now = [] { return duration{0}; };
  for (int i = 0; i < 3; ++i) {
    const auto s = c.begin_attempt(false, now, rng);
    ASSERT_TRUE(c.end_attempt(s, verdict::retryable(), now, rng).retry);
  }
  EXPECT_EQ(c.backoff().retries(), 3u);
  const auto s = c.begin_attempt(false, now, rng);
  const auto d = c.end_attempt(s, pushback_of(250ms), now, rng, duration{5s});
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.delay, 250ms) << "the retry tool's planned start-to-start wait gives way too";
  EXPECT_EQ(c.backoff().retries(), 0u) << "the schedule starts again";
  const auto s2 = c.begin_attempt(false, now, rng);
  EXPECT_EQ(c.end_attempt(s2, verdict::retryable(), now, rng).delay, 1s);
}

TEST(Pushback, AJitteredBackoffRestartsWithinItsFirstStep) {
  // Full jitter over 1 s, 2 s, 4 s ...: after pushbacks, every next wait is drawn from [0, 1 s].
  const backoff::retry_policy policy{backoff::parse_policy("exponential(initial=1s, jitter=full)"),
                                     0, 0s};
  recording_env rec{17};
  std::vector<verdict> script;
  for (int i = 0; i < 50; ++i) {
    script.push_back(verdict::retryable());
    script.push_back(verdict::retryable());
    script.push_back(pushback_of(1ms));
  }
  script.push_back(verdict::success());
  std::size_t next = 0;
  const auto r = backoff::retry([&] { return script.at(next++); },
                                backoff::retry_options{.policy = policy}, rec.env);
  ASSERT_EQ(r.why, outcome::succeeded);
  ASSERT_EQ(rec.sleeps.size(), 150u);
  bool second_step_above_first = false;
  for (std::size_t i = 0; i < rec.sleeps.size(); i += 3) {
    EXPECT_LE(rec.sleeps[i], 1s) << "wait " << i << " is a first step";
    EXPECT_LE(rec.sleeps[i + 1], 2s);
    second_step_above_first |= rec.sleeps[i + 1] > 1s;
    EXPECT_EQ(rec.sleeps[i + 2], 1ms);
  }
  EXPECT_TRUE(second_step_above_first) << "50 draws of [0, 2 s] all below 1 s: no second step";
}

}  // namespace pushback_controller_test
