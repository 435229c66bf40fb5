// SPDX-License-Identifier: Apache-2.0
// retry_on<E...> on any result type (classify.hpp): a value the default classifier has no rule
// for is a success, as tenacity's retry_if_exception_type reads a return (jd/tenacity,
// tests/test_tenacity.py, test_retry_if_exception_of_type, replayed below); a type with a rule
// keeps it. On recording_env: nothing sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "backoff/classify.hpp"
#include "backoff/hooks.hpp"
#include "backoff/policy.hpp"
#include "backoff/retry.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::verdict;
using backoff::verdict_kind;
using backoff::testing::recording_env;

struct any_result_flaky : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct any_result_record {
  std::string name;
  int size = 0;
};

template <class T, class E>
struct any_result_expected {
  std::optional<T> value;
  E err{};
  bool has_value() const { return value.has_value(); }
  const E& error() const { return err; }
};

using any_result_on_flaky = backoff::retry_on<any_result_flaky>;

backoff::retry_options<any_result_on_flaky> any_result_options(std::uint32_t max_attempts) {
  return {.policy = {backoff::backoff_policy::constant(1s), max_attempts, 0s}};
}

// --- what compiles ---------------------------------------------------------------------------

static_assert(std::is_invocable_r_v<verdict, const any_result_on_flaky&, const std::string&>);
static_assert(std::is_invocable_r_v<verdict, const any_result_on_flaky&, const any_result_record&>);
static_assert(std::is_invocable_r_v<verdict, const any_result_on_flaky&, const std::vector<int>&>);
// A number is still refused: a status or a count taken for a success would hide a failure.
static_assert(!std::is_invocable_v<const any_result_on_flaky&, int>);
static_assert(!std::is_invocable_v<const any_result_on_flaky&, long>);
static_assert(!std::is_invocable_v<const any_result_on_flaky&, unsigned char>);
enum class any_result_status { ok, busy };
static_assert(!std::is_invocable_v<const any_result_on_flaky&, any_result_status>);
// The default classifier alone still refuses a type it has no rule for.
static_assert(!std::is_invocable_v<const backoff::default_classifier&, const std::string&>);
static_assert(!std::is_invocable_v<const backoff::default_classifier&, const any_result_record&>);
// with(c): the results are c's, and c must take them.
inline constexpr auto any_result_ints_only = [](int) { return verdict::success(); };
using any_result_with_ints = decltype(any_result_on_flaky::with(any_result_ints_only));
static_assert(std::is_invocable_v<const any_result_with_ints&, int>);
static_assert(!std::is_invocable_v<const any_result_with_ints&, const std::string&>);

// --- the classifier alone --------------------------------------------------------------------

TEST(RetryOnAnyResult, ValuesWithoutARuleSucceedAndRulesAreKept) {
  const any_result_on_flaky c;
  EXPECT_EQ(c(std::string("done")), verdict::success());
  EXPECT_EQ(c(std::string()), verdict::success()) << "an empty string is a value too";
  EXPECT_EQ(c(any_result_record{"x", 1}), verdict::success());
  EXPECT_EQ(c(std::monostate{}), verdict::success());
  EXPECT_EQ(c(true), verdict::success());
  EXPECT_EQ(c(false), verdict::retryable());
  EXPECT_EQ(c(std::optional<std::string>()), verdict::retryable());
  EXPECT_EQ(c(std::optional<std::string>("x")), verdict::success());
  EXPECT_EQ(c(verdict::permanent()), verdict::permanent());
  EXPECT_EQ(c(make_error_code(std::errc::permission_denied)), verdict::permanent());
  EXPECT_EQ(c(std::error_code{}), verdict::success());
  using io = any_result_expected<std::string, std::error_code>;
  EXPECT_EQ(c(io{std::nullopt, make_error_code(std::errc::invalid_argument)}),
            verdict::permanent());
  EXPECT_EQ(c(io{"body", {}}), verdict::success());
  // An expected-like value whose error type has no rule: retryable, as the default classifier.
  EXPECT_EQ(c(any_result_expected<int, std::string>{std::nullopt, "bad"}), verdict::retryable());
}

// --- through the loop ------------------------------------------------------------------------

TEST(RetryOnAnyResult, AStringOperationRetriesItsExceptionsAndReturnsItsValue) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&]() -> std::string {
        if (++calls < 3) throw any_result_flaky("not yet");
        return "done";
      },
      any_result_options(5), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.last, std::optional<std::string>("done"));
  EXPECT_FALSE(r.error);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s, 1s}));
}

// jd/tenacity tests/test_tenacity.py, test_retry_if_exception_of_type: an IOError five times,
// then a return, is a success at the sixth attempt; a NameError (not listed) propagates at once;
// with stop_after_attempt(3) the third attempt's exception is kept.
TEST(RetryOnAnyResult, ReplaysTenacitysRetryIfExceptionOfType) {
  recording_env rec;
  int calls = 0;
  const auto five_then_value = [&]() -> std::string {
    if (++calls <= 5) throw any_result_flaky("io");
    return "value";
  };
  const auto r = backoff::retry(five_then_value, any_result_options(0), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 6u);
  EXPECT_EQ(r.last, std::optional<std::string>("value"));

  recording_env rec_name;
  int name_calls = 0;
  EXPECT_THROW((void)backoff::retry(
                   [&]() -> std::string {
                     ++name_calls;
                     throw std::invalid_argument("name");
                   },
                   any_result_options(0), rec_name.env),
               std::invalid_argument);
  EXPECT_EQ(name_calls, 1);

  recording_env rec_limit;
  calls = 0;
  const auto limited = backoff::retry(five_then_value, any_result_options(3), rec_limit.env);
  EXPECT_EQ(limited.why, outcome::attempts_exhausted);
  EXPECT_EQ(limited.attempts, 3u);
  EXPECT_TRUE(limited.error);
  EXPECT_FALSE(limited.last);
}

TEST(RetryOnAnyResult, AStructIsASuccessAtTheFirstReturn) {
  recording_env rec;
  const auto r = backoff::retry(
      [] {
        return any_result_record{"a", 2};
      },
      any_result_options(5), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 1u);
  ASSERT_TRUE(r.last);
  EXPECT_EQ(r.last->size, 2);
  EXPECT_TRUE(rec.sleeps.empty());
}

TEST(RetryOnAnyResult, AVoidOperationRetriesItsExceptions) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] {
        if (++calls < 2) throw any_result_flaky("once");
      },
      any_result_options(5), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s}));
}

TEST(RetryOnAnyResult, AFalseIsStillRetried) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry([&] { return ++calls == 3; }, any_result_options(5), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s, 1s}));
}

TEST(RetryOnAnyResult, AnEmptyOptionalIsStillRetried) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&]() -> std::optional<std::string> {
        if (++calls < 2) return std::nullopt;
        return "x";
      },
      any_result_options(5), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 2u);
}

// Records the verdict of each failed attempt.
struct any_result_verdicts {
  std::vector<verdict>* seen;
  template <class R>
  void on_retry(const backoff::retry_event<R>& e) const {
    seen->push_back(e.why);
  }
};

TEST(RetryOnAnyResult, ErrorCodesAreStillClassified) {
  recording_env rec;
  int calls = 0;
  std::vector<verdict> seen;
  const auto r = backoff::retry(
      [&] {
        return ++calls < 2 ? make_error_code(std::errc::connection_refused) : std::error_code{};
      },
      backoff::retry_options<any_result_on_flaky, any_result_verdicts>{
          .policy = {backoff::backoff_policy::constant(1s), 5, 0s},
          .hooks = any_result_verdicts{&seen}},
      rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 2u);
  verdict refused = verdict::retryable();
  refused.not_sent = true;
  EXPECT_EQ(seen, (std::vector<verdict>{refused}));
  recording_env rec2;
  const auto p = backoff::retry([] { return make_error_code(std::errc::permission_denied); },
                                any_result_options(5), rec2.env);
  EXPECT_EQ(p.why, outcome::permanent);
  EXPECT_EQ(p.attempts, 1u);
}

TEST(RetryOnAnyResult, AnExpectedLikeResultKeepsItsErrorsRule) {
  using io = any_result_expected<std::string, std::error_code>;
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&]() -> io {
        if (++calls < 3) return {std::nullopt, make_error_code(std::errc::connection_reset)};
        return {"body", {}};
      },
      any_result_options(5), rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
}

TEST(RetryOnAnyResult, AnExceptionNotListedStillPropagates) {
  recording_env rec;
  EXPECT_THROW((void)backoff::retry([]() -> std::string { throw std::logic_error("bug"); },
                                    any_result_options(5), rec.env),
               std::logic_error);
}

// Classifiers hold no state: threads share one, and every verdict is the one a lone call gives.
TEST(RetryOnAnyResult, OneClassifierSharedByThreads) {
  const any_result_on_flaky shared;
  const backoff::http_status_classifier http;
  std::atomic<int> successes{0};
  std::atomic<int> retryable{0};
  std::atomic<int> pushbacks{0};
  std::vector<std::thread> threads;
  constexpr int any_result_threads = 4;
  constexpr int any_result_rounds = 5000;
  for (int t = 0; t < any_result_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < any_result_rounds; ++i) {
        if (shared(std::string(1, 'a')).kind == verdict_kind::success) ++successes;
        if (shared((i + t) % 2 == 0).kind == verdict_kind::retryable) ++retryable;
        const verdict v = backoff::classify_http_reply(503, {.grpc_retry_pushback_ms = "7"},
                                                       std::chrono::system_clock::time_point{});
        if (v.pushback && v.retry_after == duration{7ms}) ++pushbacks;
        (void)http(200);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(successes.load(), any_result_threads * any_result_rounds);
  EXPECT_EQ(retryable.load(), any_result_threads * any_result_rounds / 2);
  EXPECT_EQ(pushbacks.load(), any_result_threads * any_result_rounds);
}

}  // namespace
