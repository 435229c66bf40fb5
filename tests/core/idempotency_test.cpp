// SPDX-License-Identifier: Apache-2.0
// retry_policy::idempotent = false in the sync loop (google-cloud-cpp's
// Idempotency::kNonIdempotent, google/cloud/internal/retry_loop.h): a failure that may have
// reached the server ends the loop with outcome::not_idempotent, one that proves nothing was
// sent (verdict.not_sent, a carrier-sense deferral) is retried as before. Exact calls and waits
// on recording_env's manual clock.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "backoff/hooks.hpp"
#include "backoff/policy.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/verdict.hpp"
#include "recording_env.hpp"

namespace idempotency_test {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::verdict;
using backoff::testing::recording_env;

// 1 s, 2 s, 4 s ... without jitter; not idempotent unless told.
backoff::retry_policy non_idempotent(std::uint32_t max_attempts = 0) {
  backoff::retry_policy p{backoff::backoff_policy::exponential(1s, 2.0, 30s), max_attempts, 0s};
  p.idempotent = false;
  return p;
}

verdict refused_connection() {  // what a classifier says of ECONNREFUSED
  verdict v = verdict::retryable();
  v.not_sent = true;
  return v;
}

// Runs `script` through the sync loop; `calls` counts the attempts made.
backoff::retry_result<verdict> run_idempotency_script(recording_env& rec,
                                                      const backoff::retry_policy& policy,
                                                      const std::vector<verdict>& script,
                                                      int& calls) {
  return backoff::retry([&] { return script.at(static_cast<std::size_t>(calls++)); },
                        backoff::retry_options{.policy = policy}, rec.env);
}

TEST(Idempotency, RetryPoliciesAreIdempotentByDefault) {
  const backoff::retry_policy p{};
  EXPECT_TRUE(p.idempotent);
  recording_env rec;
  int calls = 0;
  const auto r = run_idempotency_script(
      rec, {backoff::backoff_policy::exponential(1s, 2.0, 30s), 0, 0s},
      {verdict::retryable(), verdict::retryable(), verdict::success()}, calls);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s, 2s}));
}

TEST(Idempotency, AFailureThatMayHaveReachedTheServerEndsTheLoop) {
  recording_env rec;
  int calls = 0;
  const auto r = run_idempotency_script(rec, non_idempotent(),
                                        {verdict::retryable(), verdict::success()}, calls);
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_TRUE(rec.sleeps.empty());
  ASSERT_TRUE(r.last.has_value()) << "the result keeps the failure the loop ended on";
  EXPECT_EQ(*r.last, verdict::retryable());
  EXPECT_EQ(backoff::to_string(r.why), "not_idempotent");
  EXPECT_FALSE(backoff::is_exhausted(r.why));
}

TEST(Idempotency, AFailureThatProvesNothingWasSentIsRetried) {
  recording_env rec;
  int calls = 0;
  const auto r = run_idempotency_script(
      rec, non_idempotent(), {refused_connection(), refused_connection(), verdict::success()},
      calls);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s, 2s}));
}

TEST(Idempotency, StopsAtTheFirstFailureThatMayHaveReachedTheServer) {
  recording_env rec;
  int calls = 0;
  const auto r = run_idempotency_script(
      rec, non_idempotent(), {refused_connection(), verdict::retryable(3s), verdict::success()},
      calls);
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s})) << "a Retry-After alone proves nothing";
}

TEST(Idempotency, PermanentAndSuccessMeanWhatTheyAlwaysMeant) {
  recording_env rec;
  int calls = 0;
  EXPECT_EQ(run_idempotency_script(rec, non_idempotent(), {verdict::permanent()}, calls).why,
            outcome::permanent);
  calls = 0;
  EXPECT_EQ(run_idempotency_script(rec, non_idempotent(), {verdict::success()}, calls).why,
            outcome::succeeded);
}

TEST(Idempotency, AttemptsAndTimeRunningOutComeFirst) {
  // With no retry left anyway, the loop says so rather than blame idempotency.
  recording_env rec;
  int calls = 0;
  EXPECT_EQ(run_idempotency_script(rec, non_idempotent(1), {verdict::retryable()}, calls).why,
            outcome::attempts_exhausted);
  calls = 0;
  EXPECT_EQ(run_idempotency_script(rec, non_idempotent(2),
                                   {refused_connection(), verdict::retryable()}, calls)
                .why,
            outcome::attempts_exhausted);
}

TEST(Idempotency, CarrierSenseDeferralsSentNothingAndAreRetried) {
  recording_env rec;
  int busy_answers = 2;  // busy twice, then free
  rec.env.busy = [&] { return busy_answers-- > 0; };
  int calls = 0;
  const auto r = backoff::retry([&] { return (++calls, verdict::retryable()); },
                                backoff::retry_options{.policy = non_idempotent()}, rec.env);
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(r.deferred, 2u);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s, 2s}));
}

TEST(Idempotency, ARetriedExceptionMayHaveReachedTheServerToo) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&]() -> bool {
        ++calls;
        throw std::runtime_error("connection reset");
      },
      backoff::retry_options{.policy = non_idempotent(),
                             .classify = backoff::retry_on<std::runtime_error>{}},
      rec.env);
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(calls, 1);
  EXPECT_NE(r.error, nullptr) << "the exception the loop ended on";
}

TEST(Idempotency, TheBudgetIsNotChargedForARetryThatDoesNotHappen) {
  recording_env rec;
  backoff::retry_budget budget{backoff::retry_quota_config{}};
  int calls = 0;
  const auto r = backoff::retry(
      [&] { return (++calls, verdict::retryable()); },
      backoff::retry_options{.policy = non_idempotent(), .gates = {.budget = &budget}}, rec.env);
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(std::get<backoff::retry_quota>(budget.get()).available(), 500u);
}

TEST(Idempotency, HooksAndMetricsCountTheNewOutcome) {
  recording_env rec;
  backoff::retry_metrics metrics;
  std::vector<outcome> given_up;
  struct give_up_recorder {
    std::vector<outcome>* out;
    void on_give_up(const backoff::give_up_event& e) const { out->push_back(e.why); }
  };
  const auto r = backoff::retry(
      [] { return verdict::retryable(); },
      backoff::retry_options{.policy = non_idempotent(),
                             .hooks = backoff::hook_list{backoff::metrics_hooks{&metrics},
                                                         give_up_recorder{&given_up}}},
      rec.env);
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(given_up, (std::vector<outcome>{outcome::not_idempotent}));
  EXPECT_EQ(metrics.loops[static_cast<std::size_t>(outcome::not_idempotent)].load(), 1u);
  const std::string text = backoff::to_prometheus_text(metrics, "rpc");
  EXPECT_NE(text.find("rpc_loops_total{outcome=\"not_idempotent\"} 1\n"), std::string::npos)
      << text;
}

}  // namespace idempotency_test
