// SPDX-License-Identifier: Apache-2.0
// The sync retry loop with a circuit breaker in its gates: consecutive and rate breakers refuse
// attempts (outcome::breaker_open), retry-only and run-ratio breakers refuse retries only, a
// permanent verdict is not a breaker failure, and an attempt abandoned by an exception gives
// its half-open trial back. The async loop's test is tests/asio/async_breaker_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/hooks.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::breaker_state;
using backoff::circuit_breaker;
using backoff::outcome;
using backoff::parse_breaker;
using backoff::verdict;

const backoff::retry_policy breaker_test_policy{backoff::parse_policy("constant(initial=100ms)"),
                                                10, 0s};

backoff::retry_options<> with_breaker(circuit_breaker& b) {
  return {.policy = breaker_test_policy, .gates = {.breaker = &b}};
}

TEST(BreakerRetry, AnOpenBreakerEndsTheLoopWithoutCallingTheOperation) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=5s, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, true); }, with_breaker(b), rec.env);
  EXPECT_EQ(r.why, outcome::breaker_open);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_FALSE(r.last.has_value());
  EXPECT_TRUE(rec.sleeps.empty());
}

TEST(BreakerRetry, FailuresOpenTheBreakerMidLoopAndTheLoopEndsWithoutWaiting) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=3, open=5s, half_open=1)")};
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, false); }, with_breaker(b), rec.env);
  EXPECT_EQ(r.why, outcome::breaker_open);
  EXPECT_EQ(calls, 3);
  // The third failure opened it for 5 s, longer than the 100 ms wait: the loop ends at once
  // instead of sleeping for an attempt the breaker would refuse.
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{100ms, 100ms}));
  EXPECT_EQ(b.state(rec.env.now()), breaker_state::open);
}

TEST(BreakerRetry, AHalfOpenTrialThatSucceedsClosesTheBreaker) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  rec.clock.advance(1s);
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, true); }, with_breaker(b), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(b.state(rec.env.now()), breaker_state::closed);
}

TEST(BreakerRetry, PermanentVerdictsAreNotBreakerFailures) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=5s, half_open=1)")};
  for (int i = 0; i < 5; ++i) {
    const auto r = backoff::retry([] { return verdict::permanent(); }, with_breaker(b), rec.env);
    EXPECT_EQ(r.why, outcome::permanent);
  }
  EXPECT_EQ(b.state(rec.env.now()), breaker_state::closed);
  EXPECT_EQ(b.current_counts(rec.env.now()).failures, 0u);
}

TEST(BreakerRetry, AnAbandonedTrialGivesItsPlaceBack) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  rec.clock.advance(1s);
  // The default classifier does not retry exceptions: this one leaves the loop mid-attempt.
  EXPECT_THROW(
      backoff::retry([]() -> bool { throw std::runtime_error("boom"); }, with_breaker(b), rec.env),
      std::runtime_error);
  EXPECT_EQ(b.state(rec.env.now()), breaker_state::half_open);
  const auto trial = b.try_acquire(rec.env.now(), true);
  EXPECT_TRUE(trial.trial);  // the trial the exception took was released
}

TEST(BreakerRetry, RetryOnlyNeverBlocksTheFirstTryButRefusesTheRetry) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("retry-only-10pct")};
  int calls = 0;
  const auto ok = backoff::retry([&] { return (++calls, true); }, with_breaker(b), rec.env);
  EXPECT_EQ(ok.why, outcome::succeeded);
  // 1 failure of 2 attempts in the window: 50 %, at or above 10 %: no retry.
  const auto failed = backoff::retry([&] { return (++calls, false); }, with_breaker(b), rec.env);
  EXPECT_EQ(failed.why, outcome::breaker_open);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(rec.sleeps.empty());
  // Later first tries still go out.
  const auto again = backoff::retry([&] { return (++calls, true); }, with_breaker(b), rec.env);
  EXPECT_EQ(again.why, outcome::succeeded);
}

TEST(BreakerRetry, RetryOnlyLetsRetriesThroughWhileTheRatioIsLow) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("retry-only-10pct(window=10s)")};
  for (int i = 0; i < 20; ++i) (void)backoff::retry([] { return true; }, with_breaker(b), rec.env);
  int calls = 0;
  const auto r = backoff::retry([&] { return ++calls == 2; }, with_breaker(b), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);  // 1 failure of 21: below 10 %
  EXPECT_EQ(calls, 2);
}

TEST(BreakerRetry, RunRatioCountsFirstTriesAndFailedAttempts) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("run-ratio-10pct")};
  for (int i = 0; i < 10; ++i) (void)backoff::retry([] { return true; }, with_breaker(b), rec.env);
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, false); }, with_breaker(b), rec.env);
  // First tries 11; failures 1 (1/11: retry), 2 (2/11 > 10 %: no retry).
  EXPECT_EQ(r.why, outcome::breaker_open);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(b.current_counts(rec.env.now()).calls, 11u);
  EXPECT_EQ(b.current_counts(rec.env.now()).failures, 2u);
}

TEST(BreakerRetry, ARefusedRetryDoesNotSpendTheBudget) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("run-ratio-10pct")};
  backoff::retry_budget budget{backoff::parse_budget("ratio(percent=0, min_per_s=1, window=10s)")};
  const backoff::retry_options<> options{.policy = breaker_test_policy,
                                         .gates = {.budget = &budget, .breaker = &b}};
  const auto r = backoff::retry([] { return false; }, options, rec.env);
  EXPECT_EQ(r.why, outcome::breaker_open);  // 1 failure / 1 first try
  const auto& ratio = std::get<backoff::ratio_budget>(budget.get());
  EXPECT_EQ(ratio.window_counts(rec.env.now()).retries, 0u);
}

TEST(BreakerRetry, GiveUpsAreCountedUnderBreakerOpen) {
  backoff::testing::recording_env rec;
  backoff::retry_metrics metrics;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=5s, half_open=1)"),
                    backoff::count_transitions(&metrics)};
  const backoff::retry_options<backoff::default_classifier, backoff::metrics_hooks> options{
      .policy = breaker_test_policy, .hooks = {&metrics}, .gates = {.breaker = &b}};
  (void)backoff::retry([] { return false; }, options, rec.env);
  (void)backoff::retry([] { return true; }, options, rec.env);
  EXPECT_EQ(metrics.loops[static_cast<std::size_t>(outcome::breaker_open)], 2u);
  EXPECT_EQ(metrics.breaker_transitions[static_cast<std::size_t>(breaker_state::open)], 1u);
  EXPECT_EQ(backoff::to_string(outcome::breaker_open), "breaker_open");
}

}  // namespace

namespace {

// An open time shorter than the wait: the loop waits, and the attempt after it is the breaker's
// half-open trial.
TEST(BreakerRetry, ABreakerOpenForLessThanTheWaitLetsTheLoopWaitForItsTrial) {
  backoff::testing::recording_env rec;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=50ms, half_open=1)")};
  int calls = 0;
  const auto r = backoff::retry([&] { return ++calls == 2; }, with_breaker(b), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{100ms}));
  EXPECT_EQ(b.state(rec.env.now()), breaker_state::closed);  // the trial succeeded
}

}  // namespace
