// SPDX-License-Identifier: Apache-2.0
// The retry loop with the overload controls as gates (retry_gates): a budget that refuses a
// retry, a throttle that refuses or paces an attempt. The same controller decides in the sync
// loop here and in the async loop (tests/asio).
#include <gtest/gtest.h>

#include <chrono>
#include <variant>

#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::outcome;

const backoff::retry_policy constant_policy{backoff::parse_policy("constant(initial=100ms)"), 0,
                                            0s};

TEST(RetryGates, TokenBucketStopsRetryingWhenHalfTheTokensAreGone) {
  backoff::testing::recording_env rec;
  backoff::retry_budget budget{backoff::parse_budget("token-bucket(max=10, ratio=0.1)")};
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, false); }, constant_policy,
                                backoff::default_classifier{}, rec.env, backoff::no_retry_hook{},
                                {&budget, nullptr});
  // 10 tokens; each failure costs one; a retry needs more than 5 left: failures 1-4 leave 9..6
  // and retry, failure 5 leaves 5 and stops.
  EXPECT_EQ(r.why, outcome::budget_exhausted);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(r.attempts, 5u);
  EXPECT_EQ(rec.sleeps.size(), 4u);
}

TEST(RetryGates, TokenBucketIsSharedAcrossOperationsAndRefilledBySuccesses) {
  backoff::testing::recording_env rec;
  backoff::retry_budget budget{backoff::parse_budget("token-bucket(max=4, ratio=1)")};
  const backoff::retry_gates gates{&budget, nullptr};
  // Operation 1 fails once then succeeds: tokens 4 -> 3 -> 4.
  int calls = 0;
  auto first =
      backoff::retry([&] { return ++calls == 2; }, constant_policy, backoff::default_classifier{},
                     rec.env, backoff::no_retry_hook{}, gates);
  EXPECT_EQ(first.why, outcome::succeeded);
  // Operation 2 always fails: 4 -> 3 (retry), 3 -> 2 (2 is not > 2: stop).
  int calls2 = 0;
  auto second =
      backoff::retry([&] { return (++calls2, false); }, constant_policy,
                     backoff::default_classifier{}, rec.env, backoff::no_retry_hook{}, gates);
  EXPECT_EQ(second.why, outcome::budget_exhausted);
  EXPECT_EQ(calls2, 2);
}

// jirfag/simulations' budget through the loop: the loop tells the bucket which answers were
// retries, so a successful retry earns nothing while a successful first try does.
TEST(RetryGates, TokenBucketEarningOnFirstSuccessesKnowsRetriesFromFirstTries) {
  backoff::testing::recording_env rec;
  backoff::retry_budget budget{backoff::parse_budget(
      "token-bucket(max=3, ratio=0.5, earn=first-success, spend=retry, at_least=1)")};
  const backoff::retry_gates gates{&budget, nullptr};
  const auto tokens = [&] {
    return std::get<backoff::token_bucket_budget>(budget.get()).milli_tokens();
  };
  int calls = 0;
  const auto retried =
      backoff::retry([&] { return ++calls == 2; }, constant_policy, backoff::default_classifier{},
                     rec.env, backoff::no_retry_hook{}, gates);
  EXPECT_EQ(retried.why, outcome::succeeded);
  EXPECT_EQ(tokens(), 2000) << "the retry took a token; its success earned nothing";
  const auto first =
      backoff::retry([] { return true; }, constant_policy, backoff::default_classifier{}, rec.env,
                     backoff::no_retry_hook{}, gates);
  EXPECT_EQ(first.why, outcome::succeeded);
  EXPECT_EQ(tokens(), 2500) << "a first try that succeeds earns the ratio";
}

TEST(RetryGates, PermanentFailuresDoNotSpendTheBudget) {
  backoff::testing::recording_env rec;
  backoff::retry_budget budget{backoff::parse_budget("token-bucket(max=2, ratio=0.1)")};
  for (int i = 0; i < 5; ++i) {
    const auto r = backoff::retry([] { return backoff::verdict::permanent(); }, constant_policy,
                                  backoff::default_classifier{}, rec.env, backoff::no_retry_hook{},
                                  {&budget, nullptr});
    EXPECT_EQ(r.why, outcome::permanent);
  }
  const auto& bucket = std::get<backoff::token_bucket_budget>(budget.get());
  EXPECT_EQ(bucket.milli_tokens(), 2000);
}

TEST(RetryGates, RatioBudgetWithoutCreditRefusesTheFirstRetry) {
  backoff::testing::recording_env rec;
  backoff::retry_budget budget{backoff::parse_budget("ratio(percent=0, min_per_s=0, window=10s)")};
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, false); }, constant_policy,
                                backoff::default_classifier{}, rec.env, backoff::no_retry_hook{},
                                {&budget, nullptr});
  EXPECT_EQ(r.why, outcome::budget_exhausted);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(rec.sleeps.empty());
}

TEST(RetryGates, AnOverloadedSreThrottleRefusesTheAttemptWithoutCallingTheServer) {
  backoff::testing::recording_env rec;
  backoff::throttle throttle{backoff::parse_throttle("sre(k=2, window=2m)")};
  // 1000 requests, none accepted: p = 1000 / 1001.
  for (int i = 0; i < 1000; ++i) throttle.on_response(rec.env.now(), true);
  int calls = 0;
  int refused = 0;
  for (int i = 0; i < 20; ++i) {
    const auto r = backoff::retry([&] { return (++calls, true); }, constant_policy,
                                  backoff::default_classifier{}, rec.env, backoff::no_retry_hook{},
                                  {nullptr, &throttle});
    if (r.why == outcome::throttled) {
      ++refused;
      EXPECT_FALSE(r.last.has_value());
    }
  }
  EXPECT_GE(refused, 18);  // each refused with probability 0.999 (fixed seed)
  EXPECT_EQ(calls + refused, 20);
}

TEST(RetryGates, AHealthySreThrottleLetsEverythingThrough) {
  backoff::testing::recording_env rec;
  backoff::throttle throttle{backoff::parse_throttle("sre(k=2, window=2m)")};
  int calls = 0;
  for (int i = 0; i < 50; ++i) {
    const auto r = backoff::retry([&] { return (++calls, true); }, constant_policy,
                                  backoff::default_classifier{}, rec.env, backoff::no_retry_hook{},
                                  {nullptr, &throttle});
    EXPECT_EQ(r.why, outcome::succeeded);
  }
  EXPECT_EQ(calls, 50);
}

TEST(RetryGates, CubicRateLimiterPacesAttemptsAfterThrottling) {
  backoff::testing::recording_env rec;
  backoff::throttle throttle{backoff::parse_throttle("cubic()")};
  std::vector<std::size_t> sleeps_before_call;
  int calls = 0;
  // Throttled replies drop the fill rate; later attempts then wait for tokens before sending.
  for (int i = 0; i < 30; ++i) {
    (void)backoff::retry(
        [&] {
          sleeps_before_call.push_back(rec.sleeps.size());
          return (++calls, backoff::verdict::retryable());
        },
        backoff::retry_policy{backoff::parse_policy("none"), 1, 0s}, backoff::default_classifier{},
        rec.env, backoff::no_retry_hook{}, {nullptr, &throttle});
  }
  EXPECT_EQ(calls, 30);
  EXPECT_FALSE(rec.sleeps.empty());  // some attempt waited for the limiter
  EXPECT_GT(rec.total_slept(), 0s);
}

}  // namespace
