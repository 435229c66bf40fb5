// SPDX-License-Identifier: Apache-2.0
// backoff::strategy's keys for what the caller knows of a call: `idempotent` and the retry
// quota as a budget (`budget=quota(...)`). Their text round trip, their defaults left out of
// the canonical text, what retry() and instantiate() give the controller, the rules against a
// hedge, and that no driver running the controller is refused them.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <variant>

#include "backoff/error.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/strategy.hpp"

namespace strategy_inputs_test {

std::string strategy_error_of(std::string_view text) {
  try {
    (void)backoff::parse_strategy(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(StrategyInputs, IdempotentFalseRoundTripsAndReachesTheRetryPolicy) {
  const backoff::strategy s =
      backoff::parse_strategy("policy=constant(initial=1s), max_attempts=3, idempotent=false");
  EXPECT_FALSE(s.idempotent);
  EXPECT_TRUE(s.has("idempotent"));
  const std::string text = s.to_string();
  EXPECT_EQ(text, "policy=" + s.policy.to_string() + ", max_attempts=3, idempotent=false");
  EXPECT_EQ(backoff::parse_strategy(text), s);
  EXPECT_FALSE(s.retry().idempotent);
  EXPECT_EQ(s.retry().max_attempts, 3u);
}

TEST(StrategyInputs, IdempotentTrueIsTheDefaultAndLeftOut) {
  const backoff::strategy s = backoff::parse_strategy("idempotent=true");
  EXPECT_EQ(s, backoff::strategy{});
  EXPECT_EQ(s.to_string(), "policy=none");
  EXPECT_FALSE(s.has("idempotent"));
  EXPECT_TRUE(backoff::strategy{}.retry().idempotent);
  backoff::strategy set;
  set.set("idempotent", "false");
  EXPECT_FALSE(set.idempotent);
}

TEST(StrategyInputs, TheQuotaIsABudgetThatRoundTrips) {
  const backoff::strategy s = backoff::parse_strategy(
      "policy=exponential(initial=50ms, max=20s, jitter=full), max_attempts=3, "
      "budget=quota(retry_cost=14)");
  ASSERT_TRUE(s.budget);
  ASSERT_TRUE(std::holds_alternative<backoff::retry_quota_config>(*s.budget));
  EXPECT_EQ(std::get<backoff::retry_quota_config>(*s.budget).retry_cost, 14u);
  const std::string text = s.to_string();
  EXPECT_NE(text.find("budget=quota(capacity=500, retry_cost=14, timeout_cost=10, refund=1)"),
            std::string::npos)
      << text;
  EXPECT_EQ(backoff::parse_strategy(text), s);
  EXPECT_EQ(backoff::parse_strategy(text).to_string(), text);
}

TEST(StrategyInputs, InstantiateGivesAFullQuota) {
  const backoff::strategy s = backoff::parse_strategy("budget=quota(capacity=50)");
  backoff::strategy::live live = s.instantiate();
  ASSERT_TRUE(live.budget);
  EXPECT_EQ(std::get<backoff::retry_quota>(live.budget->get()).available(), 50u);
  EXPECT_EQ(live.gates().budget, &*live.budget);
}

TEST(StrategyInputs, BadValuesAreOneLineNamingTheKey) {
  const std::string bad_bool = strategy_error_of("idempotent=maybe");
  EXPECT_NE(bad_bool.find("idempotent"), std::string::npos) << bad_bool;
  EXPECT_NE(bad_bool.find("maybe"), std::string::npos) << bad_bool;
  EXPECT_EQ(bad_bool.find('\n'), std::string::npos) << bad_bool;
  const std::string misspelt = strategy_error_of("idempotant=false");
  EXPECT_NE(misspelt.find("did you mean 'idempotent'?"), std::string::npos) << misspelt;
  const std::string bad_quota = strategy_error_of("budget=quota(retry_cost=0)");
  EXPECT_NE(bad_quota.find("retry_cost=0 must be in 1..capacity (capacity=500)"), std::string::npos)
      << bad_quota;
  EXPECT_EQ(bad_quota.find('\n'), std::string::npos) << bad_quota;
}

TEST(StrategyInputs, AHedgeNeedsAnIdempotentCallAndABudgetItCanBeCharged) {
  const std::string not_idempotent =
      strategy_error_of("hedge=hedge(max_attempts=2, delay=1s), idempotent=false");
  EXPECT_NE(not_idempotent.find("not idempotent is not hedged"), std::string::npos)
      << not_idempotent;
  EXPECT_NE(not_idempotent.find("give it no hedge or idempotent"), std::string::npos)
      << not_idempotent;
  const std::string quota =
      strategy_error_of("hedge=hedge(max_attempts=2, delay=1s), budget=quota()");
  EXPECT_NE(quota.find("with hedge, a budget is a token-bucket or a ratio"), std::string::npos)
      << quota;
  EXPECT_EQ(strategy_error_of("hedge=hedge(max_attempts=2, delay=1s), budget=ratio()"),
            "(accepted)");
}

TEST(StrategyInputs, NoDriverIsRefusedTheNewKeys) {
  // Every driver runs retry_controller, which honours both.
  const backoff::strategy s =
      backoff::parse_strategy("policy=constant(initial=1s), idempotent=false, budget=quota()");
  EXPECT_FALSE(s.refusal(backoff::guard_support{}).has_value());
  EXPECT_FALSE(s.refusal(backoff::guard_support{.breaker = true, .hedge = true}).has_value());
}

}  // namespace strategy_inputs_test
