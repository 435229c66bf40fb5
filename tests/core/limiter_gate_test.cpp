// SPDX-License-Identifier: Apache-2.0
// A strategy's limiter in the retry loop: asked after the breaker and before the throttle, a
// refusal ends the loop with outcome::limited, a rate reservation is waited before the attempt,
// a bulkhead's line is waited in through the env's sleep, and each attempt's end reaches an
// adaptive limit as a sample. Exact sequences on a manual clock.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "backoff/limiter.hpp"
#include "backoff/retry.hpp"
#include "backoff/strategy.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;

backoff::retry_policy gate_test_policy(std::uint32_t attempts) {
  return {backoff::parse_policy("constant(initial=1s)"), attempts, backoff::duration{0}};
}

TEST(LimiterGate, ARateReservationIsWaitedBeforeTheAttempt) {
  backoff::testing::recording_env rec;
  backoff::limiter gate{backoff::parse_limiter("rate(per_s=2, burst=1, wait=1s)")};
  const auto policy = gate_test_policy(3);
  std::vector<backoff::duration> sent_at;
  auto result = backoff::retry(
      [&] {
        sent_at.push_back(rec.clock.now().time_since_epoch());
        return false;
      },
      backoff::retry_options<>{.policy = policy, .gates = {.limiter = &gate}}, rec.env);
  EXPECT_EQ(result.why, backoff::outcome::attempts_exhausted);
  // Attempt 1 takes the burst token at 0; after the 1 s backoff, two tokens have come back at
  // 500 ms each, so the retries go at once after their backoff.
  EXPECT_EQ(sent_at, (std::vector<backoff::duration>{0s, 1s, 2s}));
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 1s}));
}

TEST(LimiterGate, AReservationBeyondTheBackoffIsPacing) {
  backoff::testing::recording_env rec;
  backoff::limiter gate{backoff::parse_limiter("rate(per_s=0.5, burst=1, wait=5s)")};
  const auto policy = gate_test_policy(2);
  auto result = backoff::retry(
      [] { return false; }, backoff::retry_options<>{.policy = policy, .gates = {.limiter = &gate}},
      rec.env);
  EXPECT_EQ(result.why, backoff::outcome::attempts_exhausted);
  // The second token is due 2 s after the first: 1 s of backoff, then 1 s of pacing.
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 1s}));
}

TEST(LimiterGate, ABulkheadThatIsFullEndsTheLoopAsLimited) {
  backoff::testing::recording_env rec;
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=1)")};
  const auto held = gate.acquire(0s);  // another call holds the only slot
  ASSERT_EQ(held.what, backoff::limiter_answer::admitted);
  const auto policy = gate_test_policy(3);
  int calls = 0;
  auto result = backoff::retry(
      [&] {
        ++calls;
        return true;
      },
      backoff::retry_options<>{.policy = policy, .gates = {.limiter = &gate}}, rec.env);
  EXPECT_EQ(result.why, backoff::outcome::limited);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(result.attempts, 1U);
  EXPECT_EQ(backoff::to_string(result.why), "limited");
  gate.release(held, 1s, backoff::limit_outcome::success);
  EXPECT_EQ(gate.as_bulkhead()->in_use(), 0U);
}

TEST(LimiterGate, ABulkheadsLineIsWaitedThroughTheEnvsSleep) {
  backoff::testing::recording_env rec;
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=1, queue=2, wait=300ms)")};
  const auto held = gate.acquire(0s);
  const auto policy = gate_test_policy(1);
  auto result = backoff::retry(
      [] { return true; }, backoff::retry_options<>{.policy = policy, .gates = {.limiter = &gate}},
      rec.env);
  // Nobody left: the wait in line ran its 300 ms (recorded by the env's sleep) and timed out.
  EXPECT_EQ(result.why, backoff::outcome::limited);
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{300ms}));
  EXPECT_EQ(gate.as_bulkhead()->waiting(), 0U);
  gate.release(held, 1s, backoff::limit_outcome::success);
}

TEST(LimiterGate, EachAttemptsEndIsASampleForTheAdaptiveLimit) {
  backoff::testing::recording_env rec;
  backoff::limiter gate{backoff::parse_limiter("limit(kind=aimd, initial=10, min=1, max=20)")};
  const auto policy = gate_test_policy(3);
  int calls = 0;
  auto result = backoff::retry(
      [&] {
        rec.clock.advance(20ms);
        return ++calls == 3;
      },
      backoff::retry_options<>{.policy = policy, .gates = {.limiter = &gate}}, rec.env);
  ASSERT_TRUE(result);
  const backoff::limiter_stats stats = gate.as_limit()->stats();
  EXPECT_EQ(stats.dropped, 2U);  // the two retryable failures
  EXPECT_EQ(stats.succeeded, 1U);
  EXPECT_EQ(stats.rejected, 0U);
  EXPECT_EQ(gate.as_limit()->inflight(), 0U);
  // AIMD: 10 -> floor(9) -> floor(8.1) = 8; the success at inflight 1 < 8 / 2 does not grow it.
  EXPECT_EQ(gate.as_limit()->limit(), 8U);
}

TEST(LimiterGate, TheBreakerIsAskedFirstAndALimiterRefusalTakesNoBreakerTrial) {
  backoff::testing::recording_env rec;
  backoff::circuit_breaker breaker{backoff::parse_breaker("breaker(kind=consecutive, failures=1)")};
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=1)")};
  const auto held = gate.acquire(0s);
  const auto policy = gate_test_policy(2);
  auto result = backoff::retry(
      [] { return true; },
      backoff::retry_options<>{.policy = policy, .gates = {.breaker = &breaker, .limiter = &gate}},
      rec.env);
  EXPECT_EQ(result.why, backoff::outcome::limited);
  EXPECT_EQ(breaker.state(0s), backoff::breaker_state::closed);
  EXPECT_EQ(breaker.current_counts(0s).failures, 0U);  // the permit was released, not recorded
  gate.release(held, 0s, backoff::limit_outcome::success);
}

TEST(LimiterGate, TheStrategyCarriesItsLimiter) {
  const backoff::strategy s = backoff::parse_strategy(
      "policy=constant(initial=1s), max_attempts=3, limiter=rate(per_s=10, burst=5)");
  ASSERT_TRUE(s.limiter.has_value());
  EXPECT_EQ(backoff::parse_strategy(s.to_string()), s);
  EXPECT_NE(s.to_string().find("limiter=rate(per_s=10, burst=5"), std::string::npos);
  backoff::strategy::live guards = s.instantiate();
  ASSERT_NE(guards.limiter, nullptr);
  EXPECT_EQ(guards.gates().limiter, guards.limiter.get());
  // A driver that cannot park an attempt in a bulkhead's line refuses a queue.
  const backoff::strategy queued =
      backoff::parse_strategy("limiter=bulkhead(max=2, queue=4, wait=1s)");
  const auto refused = queued.refusal({.breaker = true});
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->key, "limiter");
  EXPECT_FALSE(queued.refusal({.breaker = true, .queue = true}).has_value());
  EXPECT_FALSE(
      backoff::parse_strategy("limiter=bulkhead(max=2)").refusal({.breaker = true}).has_value());
}

}  // namespace
