// SPDX-License-Identifier: Apache-2.0
// Retry budgets (retry_budget.hpp): the gRPC token bucket's milli-token arithmetic step by step
// (floor, ceiling, the strict "> max/2" threshold), the ratio budget's percentage, floor and
// sliding window on a manual time line, the common retry_budget interface, and the spec reader.
#include "backoff/retry_budget.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <variant>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::budget_config;
using backoff::duration;
using backoff::parse_budget;
using backoff::ratio_budget;
using backoff::ratio_budget_config;
using backoff::retry_budget;
using backoff::token_bucket_budget;
using backoff::token_bucket_config;

token_bucket_config bucket(std::uint32_t max, double ratio) {
  token_bucket_config c;
  c.max_tokens = max;
  c.token_ratio = ratio;
  return c;
}

ratio_budget_config ratio(double percent, double min_per_s, duration window) {
  ratio_budget_config c;
  c.percent = percent;
  c.min_per_s = min_per_s;
  c.window = window;
  return c;
}

// Spends every retry the budget allows at `now`; returns how many there were.
int drain(ratio_budget& b, duration now) {
  int n = 0;
  while (b.try_retry(now)) {
    if (++n > 1'000'000) break;  // a budget that never says no is a failure, not a hang
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Token bucket.

TEST(TokenBucketBudget, StartsFull) {
  const token_bucket_budget b{bucket(10, 0.1)};
  EXPECT_EQ(b.milli_tokens(), 10'000);
  EXPECT_TRUE(b.retry_allowed());
}

TEST(TokenBucketBudget, FollowsGrpcsMilliTokenArithmetic) {
  // Max 4 tokens (threshold 2), ratio 1.6, as in gRPC's retry_throttle_test.cc.
  token_bucket_budget b{bucket(4, 1.6)};
  EXPECT_TRUE(b.on_failure());  // 3.0 > 2
  EXPECT_EQ(b.milli_tokens(), 3000);
  EXPECT_FALSE(b.on_failure());  // 2.0, not above the threshold
  EXPECT_FALSE(b.on_failure());  // 1.0
  EXPECT_FALSE(b.on_failure());  // 0.0
  EXPECT_FALSE(b.on_failure());  // stays at 0
  EXPECT_EQ(b.milli_tokens(), 0);
  b.on_success();  // 1.6
  EXPECT_EQ(b.milli_tokens(), 1600);
  EXPECT_FALSE(b.on_failure());  // 0.6
  b.on_success();                // 2.2
  EXPECT_TRUE(b.retry_allowed());
  EXPECT_FALSE(b.on_failure());  // 1.2
  b.on_success();                // 2.8
  EXPECT_FALSE(b.on_failure());  // 1.8
  b.on_success();                // 3.4
  EXPECT_TRUE(b.on_failure());   // 2.4
  EXPECT_EQ(b.milli_tokens(), 2400);
  EXPECT_DOUBLE_EQ(b.tokens(), 2.4);
}

TEST(TokenBucketBudget, NeverExceedsMax) {
  token_bucket_budget b{bucket(10, 0.7)};
  for (int i = 0; i < 100; ++i) b.on_success();
  EXPECT_EQ(b.milli_tokens(), 10'000);
  b.on_failure();
  b.on_success();  // 9.0 + 0.7 = 9.7
  b.on_success();  // 10.4 -> 10
  EXPECT_EQ(b.milli_tokens(), 10'000);
}

TEST(TokenBucketBudget, ThresholdIsStrictlyAboveHalf) {
  token_bucket_budget b{bucket(10, 0.1)};
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(b.on_failure());  // 9, 8, 7, 6
  EXPECT_FALSE(b.on_failure()) << "5 tokens is not more than 10 / 2";
  b.on_success();  // 5.1
  EXPECT_TRUE(b.retry_allowed());
}

TEST(TokenBucketBudget, KeepsThousandthsExactly) {
  // 1000 successes of 0.001 refill exactly one token: integer milli-tokens do not drift.
  token_bucket_budget b{bucket(2, 0.001)};
  b.on_failure();
  b.on_failure();
  for (int i = 0; i < 1000; ++i) b.on_success();
  EXPECT_EQ(b.milli_tokens(), 1000);
}

TEST(TokenBucketBudget, StopsRetriesWhenFailuresOutrunTenPercentOfSuccesses) {
  // max 10, ratio 0.1: ten successes per failure hold the level; eight drain it.
  token_bucket_budget steady{bucket(10, 0.1)};
  token_bucket_budget drained{bucket(10, 0.1)};
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 10; ++i) steady.on_success();
    steady.on_failure();
    for (int i = 0; i < 8; ++i) drained.on_success();
    drained.on_failure();
  }
  EXPECT_TRUE(steady.retry_allowed());
  EXPECT_FALSE(drained.retry_allowed());
}

// ---------------------------------------------------------------------------------------------
// Ratio budget.

TEST(RatioBudget, AllowsPercentOfRequests) {
  ratio_budget b{ratio(20, 0, 10s)};
  EXPECT_FALSE(b.try_retry(0s)) << "no requests, no floor: no retries";
  for (int i = 0; i < 10; ++i) b.on_request(1s);
  EXPECT_EQ(drain(b, 1s), 2);
  for (int i = 0; i < 5; ++i) b.on_request(2s);
  EXPECT_EQ(drain(b, 2s), 1);
  const auto c = b.window_counts(2s);
  EXPECT_EQ(c.requests, 15U);
  EXPECT_EQ(c.retries, 3U);
}

TEST(RatioBudget, ComparesExactlyWhereFinagleRounds) {
  // 1/3 of a percent: 300 requests pay for exactly one retry, 299 do not.
  ratio_budget b{ratio(0.333, 0, 10s)};
  for (int i = 0; i < 300; ++i) b.on_request(0s);
  EXPECT_EQ(drain(b, 0s), 0) << "300 * 0.333 % = 0.999 retries";
  b.on_request(0s);
  EXPECT_EQ(drain(b, 0s), 1);
}

TEST(RatioBudget, FloorAllowsMinPerSecondOverTheWindow) {
  ratio_budget b{ratio(0, 2, 10s)};
  EXPECT_EQ(drain(b, 0s), 20) << "2 per second over 10 s";
  EXPECT_DOUBLE_EQ(b.available(0s), 0.0);
}

TEST(RatioBudget, PercentAndFloorAdd) {
  ratio_budget b{ratio(20, 1, 10s)};
  for (int i = 0; i < 10; ++i) b.on_request(0s);
  EXPECT_DOUBLE_EQ(b.available(0s), 12.0);
  EXPECT_EQ(drain(b, 0s), 12);
}

TEST(RatioBudget, ForgetsWhatLeavesTheWindow) {
  // 10 s window in ten 1 s slices: what happened in [0, 1 s) counts until 10 s.
  ratio_budget b{ratio(50, 0, 10s)};
  for (int i = 0; i < 10; ++i) b.on_request(500ms);
  EXPECT_EQ(drain(b, 500ms), 5);
  EXPECT_EQ(b.window_counts(9999ms).requests, 10U);
  EXPECT_FALSE(b.try_retry(9999ms));
  EXPECT_EQ(b.window_counts(10s).requests, 0U) << "the first slice left the window";
  EXPECT_EQ(b.window_counts(10s).retries, 0U);
  for (int i = 0; i < 4; ++i) b.on_request(10s);
  EXPECT_EQ(drain(b, 10s), 2) << "old retries no longer weigh on the budget";
}

TEST(RatioBudget, SlidesSliceBySlice) {
  ratio_budget b{ratio(100, 0, 10s)};
  for (int s = 0; s < 10; ++s) b.on_request(std::chrono::seconds{s});  // one per slice
  EXPECT_EQ(b.window_counts(9s).requests, 10U);
  EXPECT_EQ(b.window_counts(10s).requests, 9U);
  EXPECT_EQ(b.window_counts(15s).requests, 4U);
  EXPECT_EQ(b.window_counts(19s).requests, 0U);
  // Asking about a time before the newest slice answers for the newest window.
  b.on_request(12s);
  EXPECT_EQ(b.window_counts(5s).requests, b.window_counts(12s).requests);
}

TEST(RatioBudget, WorksAtAnyEpochAndBeforeIt) {
  for (const duration origin : {duration{0}, duration{-37s}, duration{1'700'000'000'000'000'000}}) {
    ratio_budget b{ratio(50, 0, 10s)};
    for (int i = 0; i < 4; ++i) b.on_request(origin + 3s);
    EXPECT_EQ(drain(b, origin + 3s), 2) << origin.count();
    EXPECT_EQ(b.window_counts(origin + 20s).requests, 0U);
  }
}

TEST(RatioBudget, CopiesTakeTheCounts) {
  ratio_budget b{ratio(50, 0, 10s)};
  for (int i = 0; i < 4; ++i) b.on_request(1s);
  ratio_budget copy{b};
  EXPECT_EQ(drain(copy, 1s), 2);
  EXPECT_EQ(drain(b, 1s), 2) << "the copy spent its own budget";
}

// ---------------------------------------------------------------------------------------------
// The common interface.

TEST(RetryBudget, TokenBucketCountsOutcomesAndNeverSpendsOnRetry) {
  retry_budget b{bucket(4, 1)};
  b.on_request(0s);  // ignored by the token bucket
  b.on_outcome(0s, false);
  EXPECT_TRUE(b.try_retry(0s));  // 3 > 2
  EXPECT_TRUE(b.try_retry(0s)) << "asking does not take a token";
  b.on_outcome(0s, false);
  EXPECT_FALSE(b.try_retry(0s));  // 2
  b.on_outcome(0s, true);
  EXPECT_TRUE(b.try_retry(0s));  // 3
  EXPECT_EQ(std::get<token_bucket_budget>(b.get()).milli_tokens(), 3000);
}

// Brooker's retry_sim bucket: +0.1 per first try, a retry needs more than one token and takes it.
TEST(RetryBudget, TokenBucketEarningPerRequestSpendsPerRetry) {
  retry_budget b{
      parse_budget("token-bucket(max=5, ratio=0.1, earn=request, spend=retry, above=1)")};
  b.on_outcome(0s, false);  // failures cost nothing with spend=retry
  b.on_outcome(0s, true);   // and successes earn nothing with earn=request
  EXPECT_EQ(std::get<token_bucket_budget>(b.get()).milli_tokens(), 5000);
  int retries = 0;
  while (b.try_retry(0s) && retries < 100) ++retries;
  EXPECT_EQ(retries, 4) << "5 -> 1 in four retries; 1 is not more than one";
  for (int i = 0; i < 9; ++i) b.on_request(0s);  // 1.9
  EXPECT_TRUE(b.try_retry(0s));                  // 0.9
  EXPECT_FALSE(b.try_retry(0s));
  EXPECT_EQ(std::get<token_bucket_budget>(b.get()).milli_tokens(), 900);
}

// jirfag/simulations' retry budget: a retry needs a whole token; only first tries that succeed
// earn.
TEST(RetryBudget, TokenBucketEarningOnFirstSuccessesOnly) {
  retry_budget b{
      parse_budget("token-bucket(max=2, ratio=0.5, earn=first-success, spend=retry, "
                   "at_least=1)")};
  EXPECT_TRUE(b.try_retry(0s));
  EXPECT_TRUE(b.try_retry(0s)) << "exactly one token left is enough with at_least=1";
  EXPECT_FALSE(b.try_retry(0s));
  b.on_outcome(0s, true, /*retry=*/true);
  EXPECT_FALSE(b.try_retry(0s)) << "a successful retry earns nothing";
  b.on_request(0s);
  EXPECT_FALSE(b.try_retry(0s)) << "a request earns nothing";
  b.on_outcome(0s, true);
  b.on_outcome(0s, true);
  EXPECT_TRUE(b.try_retry(0s));
  EXPECT_EQ(std::get<token_bucket_budget>(b.get()).milli_tokens(), 0);
}

TEST(RetryBudget, RatioCountsRequestsAndSpendsOnRetry) {
  retry_budget b{ratio(50, 0, 10s)};
  b.on_outcome(0s, false);  // ignored by the ratio budget
  EXPECT_FALSE(b.try_retry(0s));
  b.on_request(0s);
  b.on_request(0s);
  EXPECT_TRUE(b.try_retry(0s));
  EXPECT_FALSE(b.try_retry(0s)) << "the one retry was spent";
}

// ---------------------------------------------------------------------------------------------
// Specs.

void budget_should_fail(std::string_view text, std::string_view fragment,
                        std::source_location where = std::source_location::current()) {
  const auto fail_at = [&](const std::string& why) {
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << why;
  };
  try {
    const budget_config c = parse_budget(text);
    fail_at("\"" + std::string(text) + "\" parsed as " + backoff::to_string(c));
  } catch (const backoff::parse_error& e) {
    const std::string message = e.what();
    if (message.find(fragment) == std::string::npos) {
      fail_at("message: " + message + "\nexpected to contain: " + std::string(fragment));
    }
    if (message.find('\n') != std::string::npos) fail_at("not one line: " + message);
    if (message.find(std::string(text)) == std::string::npos)
      fail_at("spec not quoted: " + message);
  }
}

TEST(BudgetSpec, ReadsTheScenarioFileExamples) {
  EXPECT_EQ(parse_budget("token-bucket(max=10, ratio=0.1)"), budget_config{bucket(10, 0.1)});
  EXPECT_EQ(parse_budget("ratio(percent=20, min_per_s=10, window=10s)"),
            budget_config{ratio(20, 10, 10s)});
  EXPECT_EQ(parse_budget("token-bucket"), budget_config{token_bucket_config{}});
  EXPECT_EQ(parse_budget("ratio()"), budget_config{ratio_budget_config{}});
}

TEST(BudgetSpec, ReadsTheOtherTokenBucketRules) {
  token_bucket_config brooker = bucket(5, 0.1);
  brooker.earn = backoff::token_earn::request;
  brooker.spend = backoff::token_spend::retry;
  brooker.threshold = 1.0;
  EXPECT_EQ(parse_budget("token-bucket(max=5, ratio=0.1, earn=request, spend=retry, above=1)"),
            budget_config{brooker});
  token_bucket_config jirfag = bucket(30, 0.1);
  jirfag.earn = backoff::token_earn::first_success;
  jirfag.spend = backoff::token_spend::retry;
  jirfag.threshold = 1.0;
  jirfag.inclusive = true;
  EXPECT_EQ(parse_budget("token-bucket(max=30, ratio=0.1, earn=first-success, spend=retry, "
                         "at_least=1)"),
            budget_config{jirfag});
  EXPECT_EQ(backoff::to_string(jirfag),
            "token-bucket(max=30, ratio=0.1, earn=first-success, spend=retry, at_least=1)");
  EXPECT_EQ(parse_budget(backoff::to_string(brooker)), budget_config{brooker});
}

TEST(BudgetSpec, CanonicalTextRoundTrips) {
  const budget_config configs[] = {bucket(10, 0.1), bucket(1000, 0.001), ratio(20, 10, 10s),
                                   ratio(0.5, 0, 1500ms)};
  for (const budget_config& c : configs) EXPECT_EQ(parse_budget(backoff::to_string(c)), c);
  EXPECT_EQ(backoff::to_string(bucket(10, 0.1)), "token-bucket(max=10, ratio=0.1)");
  EXPECT_EQ(backoff::to_string(ratio(20, 10, 10s)), "ratio(percent=20, min_per_s=10, window=10s)");
}

TEST(BudgetSpec, RejectsBadSpecsWithOneLine) {
  budget_should_fail("leaky(max=10)",
                     "unknown budget \"leaky\" (known: token-bucket, ratio, quota)");
  budget_should_fail("token-bucket(tokens=10)",
                     "unknown parameter \"tokens\" (known: max, ratio, earn, spend, above, "
                     "at_least)");
  budget_should_fail("token-bucket(earn=failure)",
                     "earn=failure is not one of success, request, first-success");
  budget_should_fail("token-bucket(spend=success)", "spend=success is not one of failure, retry");
  budget_should_fail("token-bucket(max=5, above=6)", "above=6 must be in [0, max] (max=5)");
  budget_should_fail("token-bucket(at_least=-1)", "at_least=-1 must be in [0, max]");
  budget_should_fail("token-bucket(above=1.0005)", "above=1.0005 has more than 3 decimals");
  budget_should_fail("token-bucket(above=1, at_least=1)", "not both");
  budget_should_fail("token-bucket(max=0)", "max=0 must be a whole number of tokens in 1..1000");
  budget_should_fail("token-bucket(max=2.5)", "max=2.5 must be a whole number");
  budget_should_fail("token-bucket(max=1001)", "in 1..1000");
  budget_should_fail("token-bucket(ratio=0)", "ratio=0 must be in (0, 1000]");
  budget_should_fail("token-bucket(ratio=0.0005)", "ratio=0.0005 has more than 3 decimals");
  budget_should_fail("ratio(percent=-1)", "percent=-1 must be in [0, 1000]");
  budget_should_fail("ratio(percent=12.3456)", "more than 3 decimals");
  budget_should_fail("ratio(min_per_s=-2)", "min_per_s=-2 must be in [0, 1000000]");
  budget_should_fail("ratio(window=0s)", "window=0s must be in (0, 1d]");
  budget_should_fail("ratio(window=10)", "window");
  budget_should_fail("ratio(percent=20", "missing ')'");
}

}  // namespace
