// SPDX-License-Identifier: Apache-2.0
// fallback.hpp: the answer when every other guard failed, with the reason, in Polly's and
// failsafe-go's cases (a fixed value, a function of the failure, which failures it handles).
#include "backoff/fallback.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/spec.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;

backoff::retry_policy fallback_test_policy(std::uint32_t attempts) {
  return {backoff::parse_policy("constant(initial=1s)"), attempts, backoff::duration{0}};
}

TEST(Fallback, SuccessPassesTheValueThrough) {
  backoff::testing::recording_env rec;
  const auto policy = fallback_test_policy(3);
  int calls = 0;
  auto result = backoff::retry(
      [&]() -> std::optional<std::string> {
        ++calls;
        return std::string("fresh");
      },
      policy, {}, rec.env);
  ASSERT_TRUE(result);
  // The loop's R is the operation's return type; the answer unwraps nothing itself.
  const backoff::fallback<std::optional<std::string>> wrapped{std::optional<std::string>("cached")};
  const auto a = wrapped.apply(std::move(result));
  EXPECT_FALSE(a.fell_back);
  EXPECT_EQ(a.why, backoff::outcome::succeeded);
  EXPECT_EQ(a.value, std::optional<std::string>("fresh"));
  EXPECT_EQ(a.attempts, 1U);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(rec.sleeps.empty());
}

// Polly FallbackResilienceStrategyTests "Handle_Result_Ok": a handled failure gets the fallback's
// value after the retries ran out, and the reason says how the loop ended.
TEST(Fallback, FixedValueAfterAttemptsExhausted) {
  backoff::testing::recording_env rec;
  const auto policy = fallback_test_policy(3);
  const backoff::fallback<bool> fb{true};
  auto result = backoff::retry([] { return false; }, policy, {}, rec.env);
  EXPECT_EQ(result.why, backoff::outcome::attempts_exhausted);
  const auto a = fb.apply(std::move(result));
  EXPECT_TRUE(a.fell_back);
  EXPECT_TRUE(a.value);
  EXPECT_EQ(a.why, backoff::outcome::attempts_exhausted);
  EXPECT_EQ(a.attempts, 3U);
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 1s}));
}

// failsafe-go fallback OfFunc: the function sees the failure (here the last exception).
TEST(Fallback, FunctionSeesTheReasonAndTheLastException) {
  backoff::testing::recording_env rec;
  const auto policy = fallback_test_policy(2);
  std::vector<backoff::outcome> seen;
  std::string message;
  const backoff::fallback<bool> fb{[&](const backoff::fallback_reason& why) {
    seen.push_back(why.why);
    try {
      std::rethrow_exception(why.error);
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    return true;
  }};
  auto result = backoff::retry([]() -> bool { throw std::runtime_error("down"); }, policy,
                               backoff::retry_on<std::runtime_error>{}, rec.env);
  const auto a = fb.apply(std::move(result));
  EXPECT_TRUE(a.fell_back);
  EXPECT_TRUE(a.value);
  EXPECT_EQ(seen, (std::vector<backoff::outcome>{backoff::outcome::attempts_exhausted}));
  EXPECT_EQ(message, "down");
}

TEST(Fallback, BreakerRefusalIsAnsweredWithoutCallingTheServer) {
  backoff::testing::recording_env rec;
  backoff::circuit_breaker breaker{backoff::parse_breaker("breaker(kind=consecutive, failures=1)")};
  const auto policy = fallback_test_policy(5);
  int calls = 0;
  const backoff::fallback<bool> fb{false};
  backoff::retry_options<> options{.policy = policy, .gates = {.breaker = &breaker}};
  auto first = backoff::retry(
      [&] {
        ++calls;
        return std::make_error_code(std::errc::timed_out);
      },
      backoff::retry_options<>{.policy = policy, .gates = {.breaker = &breaker}}, rec.env);
  EXPECT_EQ(first.why, backoff::outcome::breaker_open);
  EXPECT_EQ(calls, 1);
  auto second = backoff::retry(
      [&] {
        ++calls;
        return true;
      },
      options, rec.env);
  const auto a = fb.apply(std::move(second));
  EXPECT_EQ(calls, 1);  // refused locally
  EXPECT_TRUE(a.fell_back);
  EXPECT_EQ(a.why, backoff::outcome::breaker_open);
  EXPECT_FALSE(a.value);
}

TEST(Fallback, CancellationIsNotAnsweredByDefault) {
  backoff::testing::recording_env rec;
  rec.stop.request_stop();
  const auto policy = fallback_test_policy(3);
  const backoff::fallback<bool> fb{true};
  auto result = backoff::retry([] { return true; }, policy, {}, rec.env);
  EXPECT_EQ(result.why, backoff::outcome::cancelled);
  const auto a = fb.apply(std::move(result));
  EXPECT_FALSE(a.fell_back);
  EXPECT_EQ(a.why, backoff::outcome::cancelled);
  EXPECT_FALSE(a.value);  // no value came back: R{}
}

TEST(Fallback, HandlesOnlyTheOutcomesItIsGiven) {
  backoff::testing::recording_env rec;
  const auto policy = fallback_test_policy(1);
  const backoff::fallback<int> only_exhausted{7, {backoff::outcome::attempts_exhausted}};
  EXPECT_TRUE(only_exhausted.handles(backoff::outcome::attempts_exhausted));
  EXPECT_FALSE(only_exhausted.handles(backoff::outcome::permanent));
  const auto permanent = [] { return std::error_code(EACCES, std::generic_category()); };
  auto result = backoff::retry(permanent, policy, {}, rec.env);
  ASSERT_EQ(result.why, backoff::outcome::permanent);
  const backoff::fallback<std::error_code> keeps_permanent{std::error_code{},
                                                           {backoff::outcome::attempts_exhausted}};
  const auto a = keeps_permanent.apply(std::move(result));
  EXPECT_FALSE(a.fell_back);
  EXPECT_EQ(a.value, std::error_code(EACCES, std::generic_category()));
}

TEST(Fallback, AnExceptionTheLoopDoesNotRetryIsAnsweredAsPermanent) {
  const backoff::fallback<int> fb{
      [](const backoff::fallback_reason& why) { return why.error ? 1 : 0; }};
  backoff::answer<int> a{};
  try {
    throw std::logic_error("bug");
  } catch (...) {
    a = fb.from_exception(2);
  }
  EXPECT_TRUE(a.fell_back);
  EXPECT_EQ(a.why, backoff::outcome::permanent);
  EXPECT_EQ(a.value, 1);
  EXPECT_EQ(a.attempts, 2U);

  const backoff::fallback<int> not_for_permanent{0, {backoff::outcome::attempts_exhausted}};
  EXPECT_THROW(
      {
        try {
          throw std::logic_error("bug");
        } catch (...) {
          static_cast<void>(not_for_permanent.from_exception());
        }
      },
      std::logic_error);
}

}  // namespace
