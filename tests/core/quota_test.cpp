// SPDX-License-Identifier: Apache-2.0
// The AWS SDKs' standard-mode retry quota (retry_budget.hpp, retry_quota): botocore's own test
// cases replayed token by token (tests/unit/retries/test_quota.py TestRetryQuota and
// tests/unit/retries/test_standard.py TestRetryQuotaChecker, boto/botocore 2026), then the same
// rules through the retry loop, whose controller keeps what each operation took, the spec text,
// and a stress test of the shared quota under contention (exact final counts, for TSan).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "backoff/verdict.hpp"
#include "recording_env.hpp"

namespace quota_test {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::retry_budget;
using backoff::retry_quota;
using backoff::retry_quota_config;
using backoff::verdict;

retry_quota_config quota_config(std::uint32_t capacity, std::uint32_t retry_cost = 5,
                                std::uint32_t timeout_cost = 10, std::uint32_t refund = 1) {
  retry_quota_config c;
  c.capacity = capacity;
  c.retry_cost = retry_cost;
  c.timeout_cost = timeout_cost;
  c.refund = refund;
  return c;
}

std::uint32_t available_of(const retry_budget& b) {
  return std::get<retry_quota>(b.get()).available();
}

verdict timed_out_verdict() {
  verdict v = verdict::retryable();
  v.timeout = true;
  return v;
}

// 100 ms apart, no jitter: the waits do not matter here, the tokens do.
const backoff::retry_policy quota_test_policy{backoff::parse_policy("constant(initial=100ms)"), 0,
                                              0s};

// Runs one operation whose attempts answer `script` in turn through the sync loop.
backoff::retry_result<verdict> run_script(retry_budget& budget, const std::vector<verdict>& script,
                                          std::uint32_t max_attempts = 0) {
  backoff::testing::recording_env rec;
  backoff::retry_policy policy = quota_test_policy;
  policy.max_attempts = max_attempts;
  std::size_t next = 0;
  return backoff::retry([&] { return script.at(next++); },
                        backoff::retry_options{.policy = policy, .gates = {.budget = &budget}},
                        rec.env);
}

// ---- botocore tests/unit/retries/test_quota.py, TestRetryQuota (setUp: RetryQuota(50)) ------

TEST(RetryQuota, CanAcquireAmount) {  // test_can_acquire_amount
  retry_quota q{quota_config(50)};
  EXPECT_TRUE(q.acquire(5));
  EXPECT_EQ(q.available(), 45u);
}

TEST(RetryQuota, CanReleaseAmount) {  // test_can_release_amount
  retry_quota q{quota_config(50)};
  EXPECT_TRUE(q.acquire(5));
  EXPECT_EQ(q.available(), 45u);
  EXPECT_EQ(q.release(5), 5u);
  EXPECT_EQ(q.available(), 50u);
}

TEST(RetryQuota, CannotExceedMaxCapacity) {  // test_cant_exceed_max_capacity
  retry_quota q{quota_config(50)};
  EXPECT_TRUE(q.acquire(5));
  EXPECT_EQ(q.available(), 45u);
  EXPECT_EQ(q.release(10), 5u) << "only what fits below capacity is added";
  EXPECT_EQ(q.available(), 50u);
}

TEST(RetryQuota, ReleaseIsANoOpAtMaxCapacity) {  // test_noop_if_at_max_capacity
  retry_quota q{quota_config(50)};
  EXPECT_EQ(q.release(10), 0u);
  EXPECT_EQ(q.available(), 50u);
}

TEST(RetryQuota, CannotGoBelowZero) {  // test_cant_go_below_zero
  retry_quota q{quota_config(50)};
  EXPECT_TRUE(q.acquire(49));
  EXPECT_EQ(q.available(), 1u);
  EXPECT_FALSE(q.acquire(10));
  EXPECT_EQ(q.available(), 1u) << "a refused acquire takes nothing";
  EXPECT_TRUE(q.acquire(1));
  EXPECT_EQ(q.available(), 0u);
}

TEST(RetryQuota, StartsFullWithTheAwsDefaults) {
  const retry_quota q;
  EXPECT_EQ(q.available(), 500u);
  EXPECT_EQ(q.cost(false), 5u);
  EXPECT_EQ(q.cost(true), 10u);
  EXPECT_EQ(q.config().refund, 1u);
}

TEST(RetryQuota, CopiesTakeTheCount) {
  retry_quota q{quota_config(50)};
  ASSERT_TRUE(q.acquire(20));
  const retry_quota copy = q;
  EXPECT_EQ(copy.available(), 30u);
  ASSERT_TRUE(q.acquire(5));
  EXPECT_EQ(copy.available(), 30u) << "a snapshot, not a view";
}

// ---- botocore tests/unit/retries/test_standard.py, TestRetryQuotaChecker (RetryQuota(500)) ----
// The checker's request context ('retry_quota_capacity') is the operation's `taken`.

TEST(RetryQuotaChecker, AcquiresTheRetryCostForAFailureThatIsNoTimeout) {
  // test_can_acquire_quota_non_timeout_error
  retry_budget b{quota_config(500)};
  std::uint32_t taken = 0;
  EXPECT_TRUE(b.try_retry(0s, false, taken));
  EXPECT_EQ(taken, 5u);
  EXPECT_EQ(available_of(b), 495u);
}

TEST(RetryQuotaChecker, AcquiresTheTimeoutCostForATimeout) {
  // test_can_acquire_quota_for_timeout_error
  retry_budget b{quota_config(500)};
  std::uint32_t taken = 0;
  EXPECT_TRUE(b.try_retry(0s, true, taken));
  EXPECT_EQ(taken, 10u);
  EXPECT_EQ(available_of(b), 490u);
}

TEST(RetryQuotaChecker, ASuccessReleasesWhatTheOperationTook) {
  // test_can_release_quota_based_on_context_value_on_success
  retry_budget b{quota_config(500)};
  std::uint32_t taken = 0;
  ASSERT_TRUE(b.try_retry(0s, false, taken));
  EXPECT_EQ(available_of(b), 495u);
  b.on_outcome(0s, true, true, taken);
  EXPECT_EQ(available_of(b), 500u);
}

TEST(RetryQuotaChecker, AFailureReleasesNothing) {
  // test_dont_release_quota_if_all_retries_failed
  retry_budget b{quota_config(500)};
  std::uint32_t taken = 0;
  ASSERT_TRUE(b.try_retry(0s, false, taken));
  EXPECT_EQ(available_of(b), 495u);
  b.on_outcome(0s, false, true, taken);
  EXPECT_EQ(available_of(b), 495u);
}

TEST(RetryQuotaChecker, ASuccessWithoutRetriesReleasesTheNoRetryIncrement) {
  // test_can_release_default_quota_if_not_in_context
  retry_budget b{quota_config(500)};
  std::uint32_t taken = 0;
  ASSERT_TRUE(b.try_retry(0s, false, taken));
  EXPECT_EQ(available_of(b), 495u);
  b.on_outcome(0s, true, false, 0);  // another operation, which took nothing
  EXPECT_EQ(available_of(b), 496u);
}

TEST(RetryQuotaChecker, RefusesOnceTheQuotaIsSpentAndRecordsNothing) {
  // test_acquire_quota_fails
  retry_budget b{quota_config(5)};
  std::uint32_t taken = 0;
  EXPECT_TRUE(b.try_retry(0s, false, taken));
  std::uint32_t second = 0;
  EXPECT_FALSE(b.try_retry(0s, false, second));
  EXPECT_EQ(second, 0u) << "a refused retry took nothing";
  EXPECT_EQ(available_of(b), 0u);
}

TEST(RetryQuotaChecker, TheLoopEndsWithBudgetExhaustedWhenTheQuotaIsReached) {
  // test_quota_reached_adds_retry_metadata: RetryQuotaReached is outcome::budget_exhausted.
  retry_budget b{quota_config(5)};
  const auto r = run_script(b, {verdict::retryable(), verdict::retryable(), verdict::success()});
  EXPECT_EQ(r.why, outcome::budget_exhausted);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(available_of(b), 0u);
}

TEST(RetryQuotaChecker, APermanentFailureGivesNothingBack) {
  // test_single_failed_request_does_not_give_back_quota (a 400: not 2xx, not retried)
  retry_budget b{quota_config(500)};
  std::uint32_t taken = 0;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(b.try_retry(0s, false, taken));  // others' retries
  EXPECT_EQ(available_of(b), 450u);
  const auto r = run_script(b, {verdict::permanent()});
  EXPECT_EQ(r.why, outcome::permanent);
  EXPECT_EQ(available_of(b), 450u);
}

// ---- Through the loop: the controller's per-operation account ---------------------------------

TEST(RetryQuotaLoop, RefundsOnlyWhatTheLastRetryTook) {
  // botocore keeps the last acquisition only: two retries take 10, the success gives back 5.
  retry_budget b{quota_config(20)};
  const auto r = run_script(b, {verdict::retryable(), verdict::retryable(), verdict::success()});
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(available_of(b), 15u);
}

TEST(RetryQuotaLoop, ATimeoutCostsTheTimeoutCostStepByStep) {
  retry_budget b{quota_config(500)};
  std::vector<std::uint32_t> seen;
  backoff::testing::recording_env rec;
  const std::vector<verdict> script = {timed_out_verdict(), verdict::retryable(),
                                       timed_out_verdict(), verdict::success()};
  std::size_t next = 0;
  const auto r = backoff::retry(
      [&] {
        seen.push_back(available_of(b));
        return script.at(next++);
      },
      backoff::retry_options{.policy = quota_test_policy, .gates = {.budget = &b}}, rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  // Before each attempt: full, -10 (timeout), -5, -10 (timeout); the success refunds the last 10.
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{500, 490, 485, 475}));
  EXPECT_EQ(available_of(b), 485u);
}

TEST(RetryQuotaLoop, AFirstTrySuccessAddsTheRefundUpToCapacity) {
  retry_budget b{quota_config(20)};
  ASSERT_EQ(run_script(b, {verdict::retryable()}, 1).why, outcome::attempts_exhausted);
  EXPECT_EQ(available_of(b), 20u) << "no retry was allowed by max_attempts: nothing taken";
  ASSERT_EQ(run_script(b, {verdict::retryable(), verdict::retryable()}, 2).why,
            outcome::attempts_exhausted);
  EXPECT_EQ(available_of(b), 15u);
  for (std::uint32_t expected : {16u, 17u, 18u, 19u, 20u, 20u}) {
    ASSERT_EQ(run_script(b, {verdict::success()}).why, outcome::succeeded);
    EXPECT_EQ(available_of(b), expected);
  }
}

TEST(RetryQuotaLoop, ExhaustionStopsAtTheRetryThatDoesNotFit) {
  // 12 tokens at 5 a retry: two retries (12 -> 7 -> 2), the third does not fit.
  retry_budget b{quota_config(12)};
  backoff::testing::recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] { return (++calls, verdict::retryable()); },
      backoff::retry_options{.policy = quota_test_policy, .gates = {.budget = &b}}, rec.env);
  EXPECT_EQ(r.why, outcome::budget_exhausted);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{100ms, 100ms}));
  EXPECT_EQ(available_of(b), 2u);
}

TEST(RetryQuotaLoop, OperationsShareTheQuotaButEachRefundsItsOwn) {
  retry_budget b{quota_config(100, 14)};  // the newer SDKs' retry cost
  backoff::testing::recording_env rec;
  // Two operations interleaved by hand through their controllers: A retries after a timeout
  // (10), B after a failure (14); B succeeds first and gives back 14, then A gives back 10.
  const backoff::retry_options options{.policy = quota_test_policy, .gates = {.budget = &b}};
  backoff::retry_controller a{options.policy, 0s, options.gates};
  backoff::retry_controller c{options.policy, 0s, options.gates};
  const auto now = [] { return duration{0}; };
  const auto a1 = a.begin_attempt(false, now, rec.rng);
  const auto c1 = c.begin_attempt(false, now, rec.rng);
  ASSERT_TRUE(a.end_attempt(a1, timed_out_verdict(), now, rec.rng).retry);
  ASSERT_TRUE(c.end_attempt(c1, verdict::retryable(), now, rec.rng).retry);
  EXPECT_EQ(available_of(b), 76u);
  const auto c2 = c.begin_attempt(false, now, rec.rng);
  EXPECT_EQ(c.end_attempt(c2, verdict::success(), now, rec.rng).stop, outcome::succeeded);
  EXPECT_EQ(available_of(b), 90u);
  const auto a2 = a.begin_attempt(false, now, rec.rng);
  EXPECT_EQ(a.end_attempt(a2, verdict::success(), now, rec.rng).stop, outcome::succeeded);
  EXPECT_EQ(available_of(b), 100u);
}

// ---- The spec ---------------------------------------------------------------------------------

std::string budget_error(std::string_view text) {
  try {
    (void)backoff::parse_budget(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(QuotaSpec, ReadsTheAwsDefaultsAndEveryKey) {
  EXPECT_EQ(backoff::parse_budget("quota()"), backoff::budget_config{retry_quota_config{}});
  EXPECT_EQ(backoff::parse_budget("quota"), backoff::budget_config{retry_quota_config{}});
  EXPECT_EQ(backoff::parse_budget("quota(capacity=500, retry_cost=14, timeout_cost=10, refund=0)"),
            backoff::budget_config{quota_config(500, 14, 10, 0)});
}

TEST(QuotaSpec, CanonicalTextWritesEveryKeyAndRoundTrips) {
  EXPECT_EQ(backoff::to_string(retry_quota_config{}),
            "quota(capacity=500, retry_cost=5, timeout_cost=10, refund=1)");
  EXPECT_EQ(retry_quota_config{}.to_string(),
            "quota(capacity=500, retry_cost=5, timeout_cost=10, refund=1)");
  for (const retry_quota_config& c :
       {retry_quota_config{}, quota_config(1, 1, 1, 0), quota_config(1'000'000, 14, 5, 1'000'000),
        quota_config(50, 5, 10, 1)}) {
    const backoff::budget_config config{c};
    EXPECT_EQ(backoff::parse_budget(backoff::to_string(config)), config)
        << backoff::to_string(config);
  }
}

TEST(QuotaSpec, RejectsBadValuesWithOneLineNamingTheKey) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"quota(capacity=0)", "capacity=0 must be a whole number of tokens in 1..1000000"},
      {"quota(capacity=1000001)",
       "capacity=1000001 must be a whole number of tokens, at most 1000000"},
      {"quota(capacity=2.5)", "capacity=2.5 must be a whole number of tokens"},
      {"quota(retry_cost=0)", "retry_cost=0 must be in 1..capacity (capacity=500)"},
      {"quota(retry_cost=501)", "retry_cost=501 must be in 1..capacity (capacity=500)"},
      {"quota(capacity=8, timeout_cost=10)", "timeout_cost=10 must be in 1..capacity (capacity=8)"},
      {"quota(refund=-1)", "refund=-1 must be a whole number of tokens"},
      {"quota(refund=600)", "refund=600 must be in 0..capacity (capacity=500)"},
      {"quota(cost=5)",
       "unknown parameter \"cost\" (known: capacity, retry_cost, timeout_cost, refund)"},
      {"quota(max=10)", "unknown parameter \"max\""},
      {"token-bucket(capacity=10)", "unknown parameter \"capacity\""},
      {"leaky(max=10)", "(known: token-bucket, ratio, quota)"},
      {"qouta()", "did you mean 'quota'?"},
  };
  for (const auto& [text, fragment] : cases) {
    const std::string message = budget_error(text);
    EXPECT_NE(message.find(fragment), std::string::npos) << text << " -> " << message;
    EXPECT_NE(message.find(std::string(text)), std::string::npos) << "spec not quoted: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(QuotaSpec, TheDocsTableComesFromTheSameRows) {
  const std::string table = backoff::spec_keys_markdown("budget");
  EXPECT_NE(table.find("| `capacity` | quota | a whole number in 1..1000000 | 500 |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| `retry_cost` | quota |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `timeout_cost` | quota |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `refund` | quota |"), std::string::npos) << table;
}

// ---- Contention (run under TSan in CI) ---------------------------------------------------------

TEST(RetryQuotaContention, ConcurrentAcquiresNeverOverdraw) {
  // 1000 tokens at 7 a take: exactly 142 takes succeed, 6 tokens stay, whatever the interleaving.
  retry_quota q{quota_config(1000, 7)};
  constexpr int threads = 4;
  constexpr int tries = 2000;
  std::vector<int> granted(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&q, &granted, t] {
      for (int i = 0; i < tries; ++i) granted[static_cast<std::size_t>(t)] += q.acquire(7) ? 1 : 0;
    });
  }
  for (std::thread& th : pool) th.join();
  int total = 0;
  for (int g : granted) total += g;
  EXPECT_EQ(total, 142);
  EXPECT_EQ(q.available(), 6u);
}

TEST(RetryQuotaContention, LoopsThatRetryOnceAndSucceedLeaveTheQuotaFull) {
  // Each operation fails once (5 taken, or 10 after a timeout) and then succeeds (its own
  // amount refunded exactly): four threads can hold at most 40 at once, so no retry is ever
  // refused and the quota ends full.
  retry_budget b{quota_config(500)};
  constexpr int threads = 4;
  constexpr int operations = 1000;
  std::vector<int> succeeded(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&b, &succeeded, t] {
      backoff::testing::recording_env rec{static_cast<std::uint64_t>(t)};
      const backoff::retry_options options{.policy = quota_test_policy, .gates = {.budget = &b}};
      for (int i = 0; i < operations; ++i) {
        int calls = 0;
        const auto r = backoff::retry(
            [&] {
              if (++calls == 2) return verdict::success();
              return i % 2 == 0 ? timed_out_verdict() : verdict::retryable();
            },
            options, rec.env);
        if (r.why == outcome::succeeded && r.attempts == 2)
          ++succeeded[static_cast<std::size_t>(t)];
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (int s : succeeded) EXPECT_EQ(s, operations);
  EXPECT_EQ(available_of(b), 500u);
}

}  // namespace quota_test
