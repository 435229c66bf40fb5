// SPDX-License-Identifier: Apache-2.0
// backoff::strategy: every guard of a call edge as one value, its text round trip, the rules
// between guards checked once, and what a driver that cannot honour a guard is told.
#include "backoff/strategy.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>

#include "backoff/presets.hpp"
#include "backoff/spec.hpp"

namespace {

using namespace std::chrono_literals;

std::string error_of(std::string_view text) {
  try {
    (void)backoff::parse_strategy(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Strategy, TextRoundTripsForEveryKey) {
  const backoff::strategy s = backoff::parse_strategy(
      "policy=exponential(initial=50ms, max=10s, jitter=full), max_attempts=4, "
      "window=aimd(decrease=0.9), budget=token-bucket(max=10, ratio=0.1), "
      "throttle=sre(k=2, window=2m), breaker=breaker(kind=consecutive, failures=5, open=5s), "
      "deadline=deadline(total=5s, per_attempt=1s)");
  EXPECT_EQ(s.max_attempts, 4U);
  ASSERT_TRUE(s.window && s.budget && s.throttle && s.breaker && s.deadline);
  EXPECT_FALSE(s.hedge);
  EXPECT_EQ(s.policy, backoff::parse_policy("exponential(initial=50ms, max=10s, jitter=full)"));
  const std::string text = s.to_string();
  EXPECT_EQ(backoff::parse_strategy(text), s) << text;
  EXPECT_EQ(backoff::parse_strategy(text).to_string(), text);
  // Keys in the table's order, each written by its own kind's to_string.
  EXPECT_EQ(text.find("policy="), 0U) << text;
  EXPECT_LT(text.find("max_attempts=4"), text.find("window=")) << text;
  EXPECT_LT(text.find("budget="), text.find("deadline=")) << text;
  EXPECT_NE(text.find("budget=" + backoff::to_string(*s.budget)), std::string::npos) << text;
}

TEST(Strategy, DefaultsAreLeftOutButThePolicyIsAlwaysWritten) {
  const backoff::strategy none;
  EXPECT_EQ(none.to_string(), "policy=none");
  EXPECT_TRUE(none.retries_at_once());
  EXPECT_EQ(backoff::parse_strategy(""), none);
  EXPECT_EQ(backoff::parse_strategy("policy=none"), none);
  EXPECT_EQ(backoff::parse_strategy(" max_attempts = 3 ").to_string(),
            "policy=none, max_attempts=3");
  const backoff::strategy hedged = backoff::parse_strategy("hedge=hedge(max_attempts=3, delay=1s)");
  EXPECT_EQ(backoff::parse_strategy(hedged.to_string()), hedged);
}

TEST(Strategy, RetryPolicyTakesTheDeadlineTotal) {
  backoff::strategy s;
  s.set("policy", "constant(initial=100ms)");
  s.set("max_attempts", "5");
  EXPECT_EQ(s.retry().max_elapsed, backoff::duration{0});
  s.set("deadline", "deadline(total=3s)");
  const backoff::retry_policy p = s.retry();
  EXPECT_EQ(p.max_attempts, 5U);
  EXPECT_EQ(p.max_elapsed, backoff::duration{3s});
  EXPECT_EQ(p.backoff, backoff::parse_policy("constant(initial=100ms)"));
}

TEST(Strategy, HedgingReplacesRetryingAndNamesEveryKeyInTheWay) {
  EXPECT_NE(error_of("hedge=hedge(max_attempts=3, delay=1s), max_attempts=2")
                .find("hedge replaces retrying (gRPC A6): give it no max_attempts"),
            std::string::npos);
  const std::string all = error_of(
      "policy=constant(initial=1s), max_attempts=2, window=aimd(), hedge=hedge(max_attempts=2, "
      "delay=1s)");
  EXPECT_NE(all.find("give it no policy, max_attempts or window"), std::string::npos) << all;
  EXPECT_EQ(all.find('\n'), std::string::npos);
  // `none` is no retry policy: hedging alone, or with a budget, is fine.
  EXPECT_EQ(error_of("policy=none, hedge=hedge(max_attempts=2, delay=1s), budget=token-bucket()"),
            "(accepted)");
  // A driver words the same rule with its own names (flags).
  backoff::strategy s;
  s.set("hedge", "hedge(max_attempts=2, delay=1s)");
  s.set("window", "aimd()");
  try {
    s.validate();
    FAIL() << "accepted a hedge beside a window";
  } catch (const backoff::strategy_error& e) {
    EXPECT_EQ(e.keys().size(), 1U);
    EXPECT_EQ(e.message([](std::string_view key) { return key == "window" ? "--aimd" : "?"; }),
              "hedge replaces retrying (gRPC A6): give it no --aimd");
  }
}

TEST(Strategy, HedgeCopiesHaveNoPerAttemptTimeout) {
  EXPECT_NE(
      error_of("hedge=hedge(max_attempts=2, delay=1s), deadline=deadline(total=5s, per_attempt=1s)")
          .find("copies have no per-attempt timeout"),
      std::string::npos);
  EXPECT_EQ(
      error_of(
          "hedge=hedge(max_attempts=2, delay=1s), deadline=deadline(total=5s, propagate=true)"),
      "(accepted)");
}

TEST(Strategy, BadTextIsOneLineNamingTheKey) {
  const std::string misspelt = error_of("budgte=token-bucket()");
  EXPECT_NE(misspelt.find("unknown strategy key \"budgte\" (did you mean 'budget'?)"),
            std::string::npos)
      << misspelt;
  EXPECT_NE(misspelt.find("(known: policy, max_attempts, idempotent, window, budget, throttle, "
                          "breaker, limiter, hedge, deadline, fallback)"),
            std::string::npos)
      << misspelt;
  EXPECT_NE(error_of("max_attempts=3, max_attempts=4").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("max_attempts=-1").find("max_attempts=-1 must be a whole number"),
            std::string::npos);
  EXPECT_NE(error_of("max_attempts=99999999999").find("must be a whole number"), std::string::npos);
  EXPECT_NE(error_of("policy").find("expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("policy=exponential(initial=1s").find("unbalanced"), std::string::npos);
  EXPECT_NE(error_of("policy=none,,max_attempts=2").find("empty item"), std::string::npos);
  const std::string bad_budget = error_of("budget=token-bucket(max=x)");
  EXPECT_NE(bad_budget.find("strategy \"budget=token-bucket(max=x)\": "), std::string::npos)
      << bad_budget;
  EXPECT_NE(bad_budget.find("max"), std::string::npos) << bad_budget;
}

TEST(Strategy, ADriverAsksWhichGuardItCannotHonour) {
  backoff::strategy s;
  EXPECT_FALSE(s.refusal({}));
  s.set("breaker", "breaker(kind=consecutive, failures=5, open=5s, keyed=true)");
  auto refused = s.refusal({});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->key, "breaker");
  EXPECT_NE(refused->why.find("retry controller"), std::string::npos);
  refused = s.refusal({.breaker = true});
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->why.find("keyed=true needs keys"), std::string::npos);
  EXPECT_FALSE(s.refusal({.breaker = true, .keys = true}));
  s.breaker.reset();
  s.set("hedge", "hedge(max_attempts=2, delay=1s)");
  ASSERT_TRUE(s.refusal({}));
  EXPECT_EQ(s.refusal({})->key, "hedge");
  EXPECT_FALSE(s.refusal({.hedge = true}));
}

TEST(Strategy, InstantiateGivesFreshGuardsForTheController) {
  const backoff::strategy s = backoff::parse_strategy(
      "policy=constant(initial=1s), budget=token-bucket(max=2, ratio=0.1), "
      "breaker=breaker(kind=consecutive, failures=1, open=5s)");
  backoff::strategy::live a = s.instantiate();
  backoff::strategy::live b = s.instantiate();
  ASSERT_TRUE(a.budget && b.budget && a.breaker && b.breaker);
  EXPECT_FALSE(a.window);
  EXPECT_FALSE(a.throttle);
  EXPECT_NE(a.breaker.get(), b.breaker.get());
  const backoff::retry_gates g = a.gates();
  EXPECT_EQ(g.budget, &*a.budget);
  EXPECT_EQ(g.breaker, a.breaker.get());
  EXPECT_EQ(g.throttle, nullptr);
}

TEST(Strategy, RetriesForeverAtZeroDelayOnlyWhenNothingBoundsIt) {
  backoff::strategy s;
  EXPECT_TRUE(s.retries_forever_at_zero_delay());
  s.max_attempts = 3;
  EXPECT_FALSE(s.retries_forever_at_zero_delay());
  s.max_attempts = 0;
  s.set("budget", "token-bucket()");
  EXPECT_FALSE(s.retries_forever_at_zero_delay());
  s.budget.reset();
  s.set("policy", "constant(initial=1ms)");
  EXPECT_FALSE(s.retries_forever_at_zero_delay());
  s.set("policy", "exponential(initial=0s, factor=2, jitter=full)");
  EXPECT_TRUE(s.retries_forever_at_zero_delay());
}

}  // namespace
