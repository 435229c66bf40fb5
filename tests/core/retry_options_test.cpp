// SPDX-License-Identifier: Apache-2.0
// The options API of the sync loop (retry.hpp), its classifiers (classify.hpp) and hooks
// (hooks.hpp), on recording_env: a manual clock, recorded sleeps, a fixed seed. Nothing sleeps.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
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
using backoff::retry_reason;
using backoff::verdict;
using backoff::verdict_kind;
using backoff::testing::recording_env;

duration options_elapsed(const recording_env& rec) {
  return rec.clock.now().time_since_epoch();
}

backoff::retry_policy options_doubling(std::uint32_t max_attempts = 0, duration max_elapsed = 0s) {
  return {backoff::backoff_policy::exponential(1s, 2.0, 30s), max_attempts, max_elapsed};
}

struct transient_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct reset_error : transient_error {
  using transient_error::transient_error;
};
struct fatal_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --- options and the positional wrapper ------------------------------------------------------

TEST(RetryOptions, NamedOptionsAndThePositionalFormMakeTheSameDecisions) {
  recording_env by_name;
  recording_env by_position;
  int calls_a = 0;
  int calls_b = 0;
  const auto a = backoff::retry([&] { return ++calls_a == 4; },
                                backoff::retry_options{.policy = options_doubling(6)}, by_name.env);
  const auto b =
      backoff::retry([&] { return ++calls_b == 4; }, options_doubling(6), {}, by_position.env);
  EXPECT_EQ(a.why, outcome::succeeded);
  EXPECT_EQ(a.attempts, 4u);
  EXPECT_EQ(by_name.sleeps, (std::vector<duration>{1s, 2s, 4s}));
  EXPECT_EQ(by_name.sleeps, by_position.sleeps);
  EXPECT_EQ(b.attempts, a.attempts);
}

TEST(RetryOptions, BracedOptionsWithDefaultsNeedNoTypeNames) {
  recording_env rec;
  const auto r = backoff::retry([] { return false; }, {.policy = options_doubling(3)}, rec.env);
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  EXPECT_EQ(r.attempts, 3u);
}

// --- exceptions ------------------------------------------------------------------------------

TEST(RetryOptions, RetryOnRetriesTheListedExceptionsAndTheirSubclasses) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] {
        ++calls;
        if (calls == 1) throw transient_error("first");
        if (calls == 2) throw reset_error("second");  // derived from transient_error
        return true;
      },
      backoff::retry_options{.policy = options_doubling(5),
                             .classify = backoff::retry_on<transient_error>{}},
      rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_FALSE(r.error) << "a success clears the earlier attempts' exception";
  ASSERT_TRUE(r.last);
  EXPECT_TRUE(*r.last);
}

TEST(RetryOptions, AnExceptionNotListedPropagatesAtOnce) {
  recording_env rec;
  int calls = 0;
  const auto run = [&] {
    return backoff::retry(
        [&]() -> bool {
          ++calls;
          if (calls == 1) throw transient_error("retried");
          throw fatal_error("not listed");
        },
        backoff::retry_options{.policy = options_doubling(5),
                               .classify = backoff::retry_on<transient_error, std::logic_error>{}},
        rec.env);
  };
  EXPECT_THROW(run(), fatal_error);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps.size(), 1u);
}

TEST(RetryOptions, GivingUpAfterExceptionsKeepsTheLastOne) {
  recording_env rec;
  int calls = 0;
  const auto r =
      backoff::retry([&]() -> int { throw transient_error("call " + std::to_string(++calls)); },
                     backoff::retry_options{.policy = options_doubling(3),
                                            .classify = backoff::retry_on<transient_error>::with(
                                                [](int) { return verdict::success(); })},
                     rec.env);
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  EXPECT_FALSE(r.last);
  ASSERT_TRUE(r.error);
  try {
    std::rethrow_exception(r.error);
  } catch (const transient_error& e) {
    EXPECT_STREQ(e.what(), "call 3");
  }
}

TEST(RetryOptions, WithoutAnExceptionClassifierExceptionsPropagate) {
  recording_env rec;
  EXPECT_THROW(backoff::retry([]() -> bool { throw transient_error("x"); },
                              backoff::retry_options{.policy = options_doubling(3)}, rec.env),
               transient_error);
  EXPECT_TRUE(rec.sleeps.empty());
}

TEST(RetryOptions, VoidOperationsSucceedWhenTheyReturn) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] {
        if (++calls < 3) throw transient_error("not yet");
      },
      backoff::retry_options{.policy = options_doubling(5),
                             .classify = backoff::retry_on<transient_error>{}},
      rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_TRUE(r.last.has_value());
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s, 2s}));
}

// --- default classifiers ---------------------------------------------------------------------

// Any type with has_value() and error() is expected-like (std::expected is tested in the C++23
// target, tests/cxx23).
template <class T, class E>
struct toy_expected {
  std::optional<T> value;
  E err{};
  bool has_value() const { return value.has_value(); }
  const E& error() const { return err; }
};

TEST(DefaultClassifier, ReadsOptionalsAndExpectedLikeResults) {
  const backoff::default_classifier c;
  EXPECT_EQ(c(std::optional<int>(3)).kind, verdict_kind::success);
  EXPECT_EQ(c(std::optional<int>()).kind, verdict_kind::retryable);
  EXPECT_EQ(c(toy_expected<int, std::string>{1, {}}).kind, verdict_kind::success);
  EXPECT_EQ(c(toy_expected<int, std::string>{std::nullopt, "bad"}).kind, verdict_kind::retryable);
  // An error code inside is classified as an error code.
  using io = toy_expected<int, std::error_code>;
  EXPECT_EQ(c(io{std::nullopt, make_error_code(std::errc::connection_refused)}).kind,
            verdict_kind::retryable);
  EXPECT_EQ(c(io{std::nullopt, make_error_code(std::errc::permission_denied)}).kind,
            verdict_kind::permanent);
  EXPECT_EQ(c(io{std::nullopt, std::error_code{}}).kind, verdict_kind::retryable)
      << "an empty result is a failure even when its error says none";
}

TEST(DefaultClassifier, TransientErrorCodesRetryAndOthersArePermanent) {
  const backoff::default_classifier c;
  EXPECT_EQ(c(std::error_code{}).kind, verdict_kind::success);
  for (const std::errc e : {std::errc::connection_refused, std::errc::connection_reset,
                            std::errc::timed_out, std::errc::resource_unavailable_try_again,
                            std::errc::host_unreachable, std::errc::broken_pipe}) {
    EXPECT_EQ(c(make_error_code(e)).kind, verdict_kind::retryable) << make_error_code(e).message();
  }
  for (const std::errc e : {std::errc::operation_canceled, std::errc::permission_denied,
                            std::errc::invalid_argument, std::errc::no_such_file_or_directory}) {
    EXPECT_EQ(c(make_error_code(e)).kind, verdict_kind::permanent) << make_error_code(e).message();
  }
  // The system category's errno values are equivalent to the generic conditions.
  EXPECT_EQ(c(std::error_code(ECONNRESET, std::system_category())).kind, verdict_kind::retryable);
}

struct toy_response {
  unsigned status;
  std::string retry_after;
  unsigned result_int() const { return status; }
  std::string_view operator[](std::string_view field) const {
    return field == "Retry-After" ? std::string_view(retry_after) : std::string_view();
  }
};

TEST(HttpStatusClassifier, ReadsTheStatusAndRetryAfter) {
  const backoff::http_status_classifier c;
  EXPECT_EQ(c(200).kind, verdict_kind::success);
  EXPECT_EQ(c(404).kind, verdict_kind::permanent);
  EXPECT_EQ(c(503).kind, verdict_kind::retryable);
  EXPECT_EQ(c(toy_response{429, "7"}), verdict::retryable(7s));
  EXPECT_EQ(c(toy_response{503, ""}), verdict::retryable());
  EXPECT_EQ(c(toy_response{503, "soon"}), verdict::retryable()) << "an invalid value is ignored";
  EXPECT_EQ(c(toy_response{400, "7"}).kind, verdict_kind::permanent);
}

TEST(HttpStatusClassifier, RetryAfterRaisesTheWaitInTheLoop) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] {
        return ++calls < 2 ? toy_response{503, "9"} : toy_response{200, ""};
      },
      backoff::retry_options{.policy = options_doubling(5),
                             .classify = backoff::http_status_classifier{}},
      rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{9s}));
}

// --- hooks -----------------------------------------------------------------------------------

struct journal_hooks {
  std::vector<std::string>* lines;
  void on_attempt(const backoff::attempt_event& e) const {
    lines->push_back("attempt " + std::to_string(e.attempt));
  }
  template <class R>
  void on_retry(const backoff::retry_event<R>& e) const {
    lines->push_back(
        "retry " + std::to_string(e.attempt) + " after " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(e.delay).count()) + "s " +
        std::string(backoff::to_string(e.reason)) + (e.result != nullptr ? " with result" : ""));
  }
  void on_success(const backoff::success_event& e) const {
    lines->push_back("success after " + std::to_string(e.attempts));
  }
  void on_give_up(const backoff::give_up_event& e) const {
    lines->push_back("give up " + std::string(backoff::to_string(e.why)) +
                     (e.error ? " with error" : ""));
  }
};

TEST(RetryHooks, AreCalledInTheDocumentedSequence) {
  recording_env rec;
  std::vector<std::string> lines;
  int calls = 0;
  const auto r = backoff::retry(
      [&]() -> verdict {
        ++calls;
        if (calls == 1) return verdict::retryable();
        if (calls == 2) return verdict::retryable(5s);
        if (calls == 3) throw transient_error("x");
        return verdict::success();
      },
      backoff::retry_options{.policy = options_doubling(6),
                             .classify = backoff::retry_on<transient_error>{},
                             .hooks = journal_hooks{&lines}},
      rec.env);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(lines,
            (std::vector<std::string>{"attempt 1", "retry 1 after 1s failed with result",       //
                                      "attempt 2", "retry 2 after 5s retry_after with result",  //
                                      "attempt 3", "retry 3 after 4s exception",                //
                                      "attempt 4", "success after 4"}));
}

TEST(RetryHooks, GiveUpCarriesTheOutcomeAndTheException) {
  std::vector<std::string> lines;
  recording_env rec;
  const auto r =
      backoff::retry([]() -> bool { throw transient_error("x"); },
                     backoff::retry_options{.policy = options_doubling(2),
                                            .classify = backoff::retry_on<transient_error>{},
                                            .hooks = journal_hooks{&lines}},
                     rec.env);
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "give up attempts_exhausted with error");
}

TEST(RetryHooks, DeferredAttemptsAreReportedAsSuch) {
  recording_env rec;
  int busy = 2;
  rec.env.busy = [&] { return busy-- > 0; };
  std::vector<std::string> lines;
  const auto r = backoff::retry(
      [] { return true; },
      backoff::retry_options{.policy = options_doubling(5), .hooks = journal_hooks{&lines}},
      rec.env);
  EXPECT_EQ(r.deferred, 2u);
  EXPECT_EQ(lines,
            (std::vector<std::string>{"retry 1 after 1s deferred", "retry 2 after 2s deferred",
                                      "attempt 3", "success after 3"}));
}

TEST(RetryHooks, MetricsCountAcrossLoopsAndRenderAsPrometheusText) {
  backoff::retry_metrics metrics;
  for (int loop = 0; loop < 2; ++loop) {
    recording_env rec;
    int calls = 0;
    (void)backoff::retry([&] { return ++calls == 3; },
                         backoff::retry_options{.policy = options_doubling(5),
                                                .hooks = backoff::metrics_hooks{&metrics}},
                         rec.env);
  }
  recording_env rec;
  (void)backoff::retry([] { return verdict::permanent(); },
                       backoff::retry_options{.policy = options_doubling(5),
                                              .hooks = backoff::metrics_hooks{&metrics}},
                       rec.env);
  EXPECT_EQ(metrics.attempts.load(), 7u);
  EXPECT_EQ(metrics.retries.load(), 4u);
  const std::string text = backoff::to_prometheus_text(metrics, "rpc");
  EXPECT_NE(text.find("# TYPE rpc_attempts_total counter\nrpc_attempts_total 7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rpc_retries_total 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rpc_retry_wait_seconds_total 6\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rpc_loops_total{outcome=\"succeeded\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rpc_loops_total{outcome=\"permanent\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rpc_loops_total{outcome=\"throttled\"} 0\n"), std::string::npos) << text;
  EXPECT_THROW((void)backoff::to_prometheus_text(metrics, "9lives"), std::invalid_argument);
  EXPECT_THROW((void)backoff::to_prometheus_text(metrics, "a-b"), std::invalid_argument);
  EXPECT_THROW((void)backoff::to_prometheus_text(metrics, ""), std::invalid_argument);
}

// prometheus-cpp's Counter has Increment(); any such type works.
struct toy_counter {
  double value = 0;
  void Increment() { value += 1; }
};

TEST(RetryHooks, CounterHooksAndHookListsCountIntoEveryListedHook) {
  toy_counter attempts;
  toy_counter retries;
  toy_counter exhausted;
  backoff::counter_hooks<toy_counter> counters{.attempts = &attempts, .retries = &retries};
  counters.loops[static_cast<std::size_t>(outcome::attempts_exhausted)] = &exhausted;
  std::vector<std::string> lines;
  recording_env rec;
  (void)backoff::retry(
      [] { return false; },
      backoff::retry_options{.policy = options_doubling(3),
                             .hooks = backoff::hook_list{journal_hooks{&lines}, counters}},
      rec.env);
  EXPECT_EQ(attempts.value, 3);
  EXPECT_EQ(retries.value, 2);
  EXPECT_EQ(exhausted.value, 1);
  EXPECT_EQ(lines.size(), 6u);  // 3 attempts, 2 retries, 1 give up
}

// --- the attempt's time ----------------------------------------------------------------------

TEST(RetryOptions, EachAttemptIsToldMinOfItsTimeoutAndTheTimeLeft) {
  recording_env rec;
  std::vector<duration> timeouts;
  const auto r = backoff::retry(
      [&](const backoff::attempt_context& c) {
        timeouts.push_back(c.timeout);
        rec.clock.advance(1s);  // each attempt takes a second
        return false;
      },
      backoff::retry_options{.policy = options_doubling(0, 7s), .attempt_timeout = 4s}, rec.env);
  // Attempts start at 0 s, 2 s (1 s + a 1 s wait) and 5 s (+1 s +2 s: 2 s left); the next wait is
  // clamped to end at 7 s, where the last attempt is made with its whole 4 s (it would otherwise
  // have none), and ends at 8 s.
  EXPECT_EQ(timeouts, (std::vector<duration>{4s, 4s, 2s, 4s}));
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 4u);
  EXPECT_EQ(options_elapsed(rec), 8s);
}

TEST(RetryOptions, NoAttemptStartsWithLessThanTheMinimumUsefulTime) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] {
        ++calls;
        rec.clock.advance(1s);  // each attempt takes a second
        return false;
      },
      backoff::retry_options{.policy = {backoff::backoff_policy::constant(1s), 0, 5s},
                             .min_attempt_time = 1500ms},
      rec.env);
  // Attempt 1 at 0 s, attempt 2 at 2 s; after it (3 s) a 1 s wait would leave 1 s < 1.5 s: the
  // loop ends there instead of waiting.
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{1s}));
  EXPECT_EQ(options_elapsed(rec), 3s);
}

TEST(RetryOptions, ADeadlineShorterThanTheMinimumUsefulTimeMakesNoAttempt) {
  recording_env rec;
  int calls = 0;
  const auto r = backoff::retry(
      [&] { return ++calls > 0; },
      backoff::retry_options{.policy = {backoff::backoff_policy::constant(1s), 0, 1s},
                             .min_attempt_time = 2s},
      rec.env);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.attempts, 0u);
}

TEST(RetryOptions, WithoutATimeoutOrDeadlineTheAttemptIsToldNone) {
  recording_env rec;
  std::vector<duration> timeouts;
  (void)backoff::retry(
      [&](const backoff::attempt_context& c) {
        timeouts.push_back(c.timeout);
        return c.attempt == 2;
      },
      backoff::retry_options{.policy = options_doubling(5)}, rec.env);
  EXPECT_EQ(timeouts, (std::vector<duration>{0s, 0s}));
}

}  // namespace
