// SPDX-License-Identifier: Apache-2.0
// Hedging (hedge.hpp): the spec reader and its canonical text, its one-line errors, the HTTP
// classification under a policy, and hedge_controller's decisions step by step on a manual time
// line (delay, max_attempts, a non-fatal answer sending the next copy at once, fatal and success
// ending everything, pushback, the deadline, and what the budget and the throttle are charged).
#include "backoff/hedge.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::hedge_controller;
using backoff::hedge_policy;
using backoff::hedge_stop;
using backoff::outcome;
using backoff::parse_hedge;
using backoff::verdict;
using action = hedge_controller::action;

hedge_policy policy(std::uint32_t max_attempts, duration delay, std::vector<int> non_fatal = {}) {
  hedge_policy p;
  p.max_attempts = max_attempts;
  p.delay = delay;
  p.non_fatal = std::move(non_fatal);
  return p;
}

std::string hedge_error(std::string_view spec) {
  try {
    const hedge_policy p = parse_hedge(spec);
    return "parsed as " + p.to_string();
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// The spec.

TEST(HedgeSpec, ReadsTheIssueExample) {
  EXPECT_EQ(parse_hedge("hedge(max_attempts=3, delay=1s, non_fatal=[429, 503])"),
            policy(3, 1s, {429, 503}));
}

TEST(HedgeSpec, DelayAndNonFatalAreOptional) {
  const hedge_policy p = parse_hedge("hedge(max_attempts=2)");
  EXPECT_EQ(p.max_attempts, 2u);
  EXPECT_EQ(p.delay, 0s) << "A6: no delay means every copy at once";
  EXPECT_TRUE(p.non_fatal.empty());
  EXPECT_EQ(parse_hedge("hedge(max_attempts=1, non_fatal=[])"), policy(1, 0s));
}

TEST(HedgeSpec, NonFatalIsASetAndOneValueIsAListOfOne) {
  const hedge_policy p = parse_hedge("hedge(max_attempts=3, non_fatal=[503, 429, 503])");
  EXPECT_EQ(p.non_fatal, (std::vector<int>{429, 503})) << "sorted, each status once";
  EXPECT_EQ(parse_hedge("hedge(max_attempts=3, non_fatal=503)").non_fatal, std::vector<int>{503});
  EXPECT_EQ(policy(3, 1s, {503, 429}), policy(3, 1s, {429, 503, 429}));
  EXPECT_NE(policy(3, 1s, {503}), policy(3, 1s, {429, 503}));
  EXPECT_NE(policy(3, 1s), policy(3, 2s));
  EXPECT_NE(policy(3, 1s), policy(2, 1s));
}

TEST(HedgeSpec, CanonicalTextRoundTrips) {
  EXPECT_EQ(policy(3, 1s, {503, 429}).to_string(),
            "hedge(max_attempts=3, delay=1s, non_fatal=[429, 503])");
  EXPECT_EQ(policy(1, 0s).to_string(), "hedge(max_attempts=1, delay=0s, non_fatal=[])");
  const hedge_policy policies[] = {policy(3, 1s, {429, 503}), policy(1, 0s), policy(5, 1500ms),
                                   policy(2, 250us, {500, 502, 503, 504}),
                                   policy(4, 24h, {100, 599})};
  for (const hedge_policy& p : policies) {
    EXPECT_EQ(parse_hedge(p.to_string()), p) << p.to_string();
    EXPECT_EQ(parse_hedge(p.to_string()).to_string(), p.to_string());
  }
}

TEST(HedgeSpec, RejectsBadSpecsWithOneExactLine) {
  EXPECT_EQ(hedge_error("hedge(max_attempts=3, delay=1s, jitter=full)"),
            "bad hedge \"hedge(max_attempts=3, delay=1s, jitter=full)\": unknown parameter "
            "\"jitter\" (known: max_attempts, delay, non_fatal)");
  EXPECT_EQ(hedge_error("hedge(delay=1s)"),
            "bad hedge \"hedge(delay=1s)\": max_attempts is required (1..5)");
  EXPECT_EQ(hedge_error("hedge(max_attempts=6)"),
            "bad hedge \"hedge(max_attempts=6)\": max_attempts=6 must be a whole number in 1..5 "
            "(gRPC A6's cap on copies of a call)");
  EXPECT_EQ(hedge_error("hedge(max_attempts=0)"),
            "bad hedge \"hedge(max_attempts=0)\": max_attempts=0 must be a whole number in 1..5 "
            "(gRPC A6's cap on copies of a call)");
  EXPECT_EQ(hedge_error("hedge(max_attempts=2.5)"),
            "bad hedge \"hedge(max_attempts=2.5)\": max_attempts=2.5 must be a whole number in "
            "1..5 (gRPC A6's cap on copies of a call)");
  EXPECT_EQ(hedge_error("hedge(max_attempts=two)"),
            "bad hedge \"hedge(max_attempts=two)\": max_attempts=two is not a number");
  EXPECT_EQ(hedge_error("hedge(max_attempts=2, non_fatal=[429, 700])"),
            "bad hedge \"hedge(max_attempts=2, non_fatal=[429, 700])\": non_fatal: \"700\" is not "
            "an HTTP status (100..599)");
  EXPECT_EQ(hedge_error("hedge(max_attempts=2, non_fatal=[5xx])"),
            "bad hedge \"hedge(max_attempts=2, non_fatal=[5xx])\": non_fatal: \"5xx\" is not an "
            "HTTP status (100..599)");
  EXPECT_EQ(hedge_error("hedge(max_attempts=2, delay=2d)"),
            "bad hedge \"hedge(max_attempts=2, delay=2d)\": delay=2d must be in [0, 1d]");
  EXPECT_EQ(hedge_error("hedge(max_attempts=2, delay=[1s])"),
            "bad hedge \"hedge(max_attempts=2, delay=[1s])\": delay=[1s] is a list");
  EXPECT_EQ(hedge_error("retry(max_attempts=2)"),
            "bad hedge \"retry(max_attempts=2)\": unknown spec \"retry\" (known: hedge)");
  const std::string negative = hedge_error("hedge(max_attempts=2, delay=-1s)");
  EXPECT_EQ(negative.rfind("bad hedge \"hedge(max_attempts=2, delay=-1s)\": delay: ", 0), 0u)
      << negative;
  const std::string unclosed = hedge_error("hedge(max_attempts=2");
  EXPECT_EQ(unclosed.rfind("bad hedge \"hedge(max_attempts=2\": ", 0), 0u) << unclosed;
  for (const std::string& m : {negative, unclosed, hedge_error("hedge(max_attempts=\n2)")}) {
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(HedgePolicy, ValidateNamesTheBadValue) {
  const auto message = [](const hedge_policy& p) -> std::string {
    try {
      p.validate();
      return "valid";
    } catch (const backoff::parse_error& e) {
      return e.what();
    }
  };
  EXPECT_EQ(message(policy(3, 1s, {429})), "valid");
  EXPECT_EQ(message(policy(0, 1s)),
            "max_attempts=0 must be in 1..5 (gRPC A6's cap on copies of a call)");
  EXPECT_EQ(message(policy(9, 1s)),
            "max_attempts=9 must be in 1..5 (gRPC A6's cap on copies of a call)");
  EXPECT_EQ(message(policy(2, -1s)), "delay=-1s must be in [0, 1d]");
  EXPECT_EQ(message(policy(2, 1s, {503, 42})),
            "non_fatal=[42, 503] lists 42, not an HTTP status (100..599)");
}

TEST(HedgePolicy, ClassifiesHttpStatuses) {
  const hedge_policy p = policy(3, 1s, {429, 503});
  EXPECT_EQ(p.classify_status(200), verdict::success());
  EXPECT_EQ(p.classify_status(304), verdict::success());
  EXPECT_EQ(p.classify_status(503), verdict::retryable());
  EXPECT_EQ(p.classify_status(429, 2s), verdict::retryable(2s)) << "Retry-After is pushback";
  EXPECT_EQ(p.classify_status(500), verdict::permanent()) << "not listed: fatal";
  EXPECT_EQ(p.classify_status(404), verdict::permanent());
  EXPECT_EQ(p.classify_status(42), verdict::permanent());
  EXPECT_TRUE(p.is_non_fatal(429));
  EXPECT_FALSE(p.is_non_fatal(502));
}

// ---------------------------------------------------------------------------------------------
// The controller, step by step.

struct controller_test : ::testing::Test {
  backoff::random_generator rng{7};

  static ::testing::AssertionResult sends(const hedge_controller::step& s, std::uint32_t attempt) {
    if (s.what == action::send && s.attempt == attempt && s.wait == 0s)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "not \"send copy " << attempt << " now\": " << describe(s);
  }
  static ::testing::AssertionResult waits(const hedge_controller::step& s) {
    if (s.what == action::none) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "not \"none\": " << describe(s);
  }
  static ::testing::AssertionResult ends(const hedge_controller::step& s, outcome why) {
    if (s.what == action::done && s.why == why) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "not \"done: " << backoff::to_string(why) << "\": " << describe(s);
  }
  static std::string describe(const hedge_controller::step& s) {
    switch (s.what) {
      case action::none:
        return "none";
      case action::send:
        return "send " + std::to_string(s.attempt) + " after " + backoff::format_duration(s.wait);
      case action::done:
        return "done: " + std::string(backoff::to_string(s.why));
    }
    return "?";
  }
};

using HedgeController = controller_test;

TEST_F(HedgeController, SendsACopyEachDelayUpToMaxAttempts) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));
  EXPECT_EQ(c.wake_at(), 1s);
  EXPECT_FALSE(c.timer_due(999ms));
  EXPECT_TRUE(waits(c.on_timer(500ms, rng)));  // early: nothing
  EXPECT_TRUE(c.timer_due(1s));
  EXPECT_TRUE(sends(c.on_timer(1s, rng), 2));
  EXPECT_EQ(c.wake_at(), 2s) << "the delay counts from the last copy";
  EXPECT_TRUE(sends(c.on_timer(2s, rng), 3));
  EXPECT_EQ(c.stopped(), hedge_stop::max_attempts);
  EXPECT_EQ(c.wake_at(), duration::max()) << "nothing more to send: only an answer moves it";
  EXPECT_TRUE(waits(c.on_timer(60s, rng)));
  EXPECT_EQ(c.sent(), 3u);
  EXPECT_EQ(c.in_flight(), 3u);
  EXPECT_EQ(c.answered(), 0u);
  EXPECT_FALSE(c.done());
  EXPECT_TRUE(waits(c.start(3s, rng))) << "start only once";
  EXPECT_EQ(c.sent(), 3u);
}

TEST_F(HedgeController, ALateTimerSendsOneCopyNotTheBacklog) {
  const hedge_policy p = policy(4, 1s);
  hedge_controller c{p};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));
  EXPECT_TRUE(sends(c.on_timer(5s, rng), 2));
  EXPECT_EQ(c.wake_at(), 6s);
  EXPECT_FALSE(c.timer_due(5s));
}

TEST_F(HedgeController, ZeroDelaySendsEveryCopyAtOnce) {
  const hedge_policy p = policy(3, 0s);
  hedge_controller c{p};
  EXPECT_TRUE(sends(c.start(5s, rng), 1));
  EXPECT_TRUE(c.timer_due(5s));
  EXPECT_TRUE(sends(c.on_timer(5s, rng), 2));
  EXPECT_TRUE(sends(c.on_timer(5s, rng), 3));
  EXPECT_FALSE(c.timer_due(5s));
  EXPECT_EQ(c.in_flight(), 3u);
}

TEST_F(HedgeController, TheFirstSuccessWinsAndTheRestAreCancelled) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  c.start(0s, rng);
  c.on_timer(1s, rng);
  c.on_timer(2s, rng);
  EXPECT_TRUE(ends(c.on_answer(2, verdict::success(), 2500ms, rng), outcome::succeeded));
  EXPECT_TRUE(c.done());
  EXPECT_EQ(c.result(), outcome::succeeded);
  EXPECT_EQ(c.winner(), 2u);
  EXPECT_EQ(c.answered(), 1u);
  EXPECT_EQ(c.cancelled(), 2u);
  EXPECT_EQ(c.in_flight(), 0u);
  // Nothing after the end: one terminal decision, no copy sent.
  EXPECT_TRUE(waits(c.on_answer(1, verdict::success(), 3s, rng)));
  EXPECT_TRUE(waits(c.on_timer(10s, rng)));
  EXPECT_TRUE(waits(c.cancel()));
  EXPECT_EQ(c.answered(), 1u);
  EXPECT_EQ(c.sent(), 3u);
  EXPECT_EQ(c.wake_at(), duration::max());
}

TEST_F(HedgeController, AFatalAnswerEndsEverything) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  c.start(0s, rng);
  c.on_timer(1s, rng);
  EXPECT_TRUE(ends(c.on_answer(1, verdict::permanent(), 1200ms, rng), outcome::permanent));
  EXPECT_EQ(c.winner(), 1u);
  EXPECT_EQ(c.cancelled(), 1u);
  EXPECT_EQ(c.sent(), 2u) << "no third copy";
}

TEST_F(HedgeController, ANonFatalAnswerSendsTheNextCopyAtOnce) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  c.start(0s, rng);
  EXPECT_TRUE(sends(c.on_answer(1, verdict::retryable(), 300ms, rng), 2));
  EXPECT_EQ(c.wake_at(), 1300ms) << "A6: later copies resume `delay` after it";
  EXPECT_TRUE(sends(c.on_timer(1300ms, rng), 3));
  EXPECT_TRUE(waits(c.on_answer(3, verdict::retryable(), 1400ms, rng))) << "copy 2 is still out";
  EXPECT_TRUE(ends(c.on_answer(2, verdict::retryable(), 1500ms, rng), outcome::attempts_exhausted));
  EXPECT_EQ(c.winner(), 0u);
  EXPECT_EQ(c.cancelled(), 0u);
  EXPECT_EQ(c.answered(), 3u);
}

TEST_F(HedgeController, OneAttemptIsAPlainCall) {
  const hedge_policy p = policy(1, 1s);
  hedge_controller c{p};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));
  EXPECT_EQ(c.wake_at(), duration::max());
  EXPECT_TRUE(ends(c.on_answer(1, verdict::retryable(), 5s, rng), outcome::attempts_exhausted));
}

TEST_F(HedgeController, PushbackStopsFurtherCopies) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  c.start(0s, rng);
  c.on_timer(1s, rng);
  EXPECT_TRUE(waits(c.on_answer(1, verdict::retryable(2s), 1200ms, rng))) << "no copy 3 at once";
  EXPECT_TRUE(c.pushed_back());
  EXPECT_EQ(c.stopped(), hedge_stop::pushback);
  EXPECT_EQ(c.wake_at(), duration::max());
  EXPECT_TRUE(waits(c.on_timer(5s, rng))) << "nor later";
  EXPECT_TRUE(ends(c.on_answer(2, verdict::success(), 6s, rng), outcome::succeeded));
  EXPECT_EQ(c.sent(), 2u);
}

TEST_F(HedgeController, PushbackOnTheOnlyCopyEndsTheCall) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  c.start(0s, rng);
  EXPECT_TRUE(
      ends(c.on_answer(1, verdict::retryable(0s), 100ms, rng), outcome::attempts_exhausted));
  EXPECT_EQ(c.stopped(), hedge_stop::pushback);
  EXPECT_EQ(c.sent(), 1u);
}

TEST_F(HedgeController, TheDeadlineEndsTheCallWhateverIsInFlight) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {}, 1500ms};
  c.start(10s, rng);
  EXPECT_EQ(c.deadline(), 11500ms);
  EXPECT_TRUE(sends(c.on_timer(11s, rng), 2));
  EXPECT_EQ(c.wake_at(), 11500ms) << "the deadline comes before copy 3's time";
  EXPECT_TRUE(ends(c.on_timer(11500ms, rng), outcome::deadline_exceeded));
  EXPECT_EQ(c.cancelled(), 2u);
}

TEST_F(HedgeController, NoCopyAfterTheDeadlineEvenOnANonFatalAnswer) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {}, 500ms};
  c.start(0s, rng);
  EXPECT_TRUE(ends(c.on_answer(1, verdict::retryable(), 600ms, rng), outcome::deadline_exceeded));
  EXPECT_EQ(c.sent(), 1u);
}

TEST_F(HedgeController, IgnoresAnswersForCopiesNeverSentOrAlreadyAnswered) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  EXPECT_TRUE(waits(c.on_answer(1, verdict::success(), 0s, rng))) << "before start";
  EXPECT_TRUE(waits(c.on_timer(5s, rng))) << "before start";
  c.start(0s, rng);
  EXPECT_TRUE(waits(c.on_answer(0, verdict::success(), 100ms, rng)));
  EXPECT_TRUE(waits(c.on_answer(2, verdict::success(), 100ms, rng)));
  EXPECT_EQ(c.answered(), 0u);
  c.on_timer(1s, rng);
  EXPECT_TRUE(sends(c.on_answer(2, verdict::retryable(), 1100ms, rng), 3));
  EXPECT_EQ(c.sent(), 3u);
  EXPECT_TRUE(waits(c.on_answer(2, verdict::success(), 1200ms, rng)))
      << "a second answer from copy 2";
  EXPECT_EQ(c.answered(), 1u);
  EXPECT_FALSE(c.done());
}

TEST_F(HedgeController, CancelEndsWithEverythingInFlightCancelled) {
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p};
  c.start(0s, rng);
  c.on_timer(1s, rng);
  EXPECT_TRUE(ends(c.cancel(), outcome::cancelled));
  EXPECT_EQ(c.cancelled(), 2u);
  EXPECT_EQ(c.in_flight(), 0u);
}

TEST_F(HedgeController, EveryCopyAfterTheFirstIsChargedToTheBudgetAndARefusalStopsHedging) {
  // percent 0 and a floor of exactly one retry in the window: one hedge, then a refusal.
  backoff::retry_budget budget{backoff::ratio_budget_config{0.0, 0.1, 10s}};
  const hedge_policy p = policy(4, 1s);
  hedge_controller c{p, {.budget = &budget}};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));
  EXPECT_TRUE(sends(c.on_timer(1s, rng), 2));
  EXPECT_TRUE(waits(c.on_timer(2s, rng))) << "the budget refuses copy 3";
  EXPECT_EQ(c.stopped(), hedge_stop::budget);
  EXPECT_EQ(c.wake_at(), duration::max());
  const auto counts = std::get<backoff::ratio_budget>(budget.get()).window_counts(2s);
  EXPECT_EQ(counts.requests, 1u) << "on_request once per call";
  EXPECT_EQ(counts.retries, 1u) << "one retry spent: copy 2";
  EXPECT_TRUE(waits(c.on_answer(1, verdict::retryable(), 2500ms, rng))) << "not asked again";
  EXPECT_EQ(std::get<backoff::ratio_budget>(budget.get()).window_counts(3s).retries, 1u);
  EXPECT_TRUE(ends(c.on_answer(2, verdict::retryable(), 3s, rng), outcome::budget_exhausted));
}

TEST_F(HedgeController, EachAnswerIsReportedToTheTokenBucketOnce) {
  backoff::retry_budget budget{backoff::token_bucket_config{10, 0.5}};
  const auto tokens = [&] { return std::get<backoff::token_bucket_budget>(budget.get()).tokens(); };
  const hedge_policy p = policy(3, 0s);
  hedge_controller c{p, {.budget = &budget}};
  c.start(0s, rng);
  c.on_timer(0s, rng);
  c.on_timer(0s, rng);
  c.on_answer(1, verdict::retryable(), 1s, rng);
  c.on_answer(1, verdict::retryable(), 1s, rng);  // a repeat: not reported
  EXPECT_DOUBLE_EQ(tokens(), 9.0);
  c.on_answer(2, verdict::permanent(), 1s, rng);
  EXPECT_DOUBLE_EQ(tokens(), 9.0) << "a fatal answer is not a failure of the server (A6)";
  c.on_answer(3, verdict::success(), 1s, rng);
  EXPECT_DOUBLE_EQ(tokens(), 9.0) << "after the end, nothing is reported";
}

TEST_F(HedgeController, TheTokenBucketBelowHalfAllowsTheFirstCopyOnly) {
  backoff::retry_budget budget{backoff::token_bucket_config{4, 0.1}};
  budget.on_outcome(0s, false);
  budget.on_outcome(0s, false);  // 2 tokens of 4: not above half
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {.budget = &budget}};
  EXPECT_TRUE(sends(c.start(0s, rng), 1)) << "A6: the first copy always goes";
  EXPECT_TRUE(waits(c.on_timer(1s, rng)));
  EXPECT_EQ(c.stopped(), hedge_stop::budget);
  EXPECT_TRUE(ends(c.on_answer(1, verdict::retryable(), 2s, rng), outcome::budget_exhausted));
}

TEST_F(HedgeController, AThrottleRefusalStopsHedgingAndEveryAnswerIsReported) {
  backoff::throttle throttle{backoff::adaptive_throttle_config{2.0, std::chrono::minutes{2}}};
  const auto requests = [&](duration now) {
    return std::get<backoff::adaptive_throttle>(throttle.get()).window_counts(now).requests;
  };
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {.throttle = &throttle}};
  EXPECT_TRUE(sends(c.start(0s, rng), 1)) << "a healthy throttle sends";
  // The server then refuses everything for a while: the throttle all but closes.
  for (int i = 0; i < 10'000; ++i) throttle.on_response(100ms, true);
  EXPECT_TRUE(waits(c.on_timer(1s, rng)));
  EXPECT_EQ(c.stopped(), hedge_stop::throttle);
  EXPECT_EQ(requests(1s), 10'001u) << "the refused copy counts as a request (SRE book)";
  EXPECT_TRUE(ends(c.on_answer(1, verdict::retryable(), 2s, rng), outcome::throttled));
  EXPECT_EQ(requests(2s), 10'002u) << "the answer is reported";
}

TEST_F(HedgeController, AThrottleRefusingTheFirstCopySendsNothing) {
  backoff::throttle throttle{backoff::adaptive_throttle_config{}};
  for (int i = 0; i < 10'000; ++i) throttle.on_response(0s, true);
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {.throttle = &throttle}};
  EXPECT_TRUE(ends(c.start(1s, rng), outcome::throttled));
  EXPECT_EQ(c.sent(), 0u);
  EXPECT_EQ(c.cancelled(), 0u);
  EXPECT_TRUE(waits(c.on_timer(2s, rng)));
}

TEST_F(HedgeController, ThePacingOfARateLimiterComesWithTheSend) {
  backoff::throttle throttle{backoff::cubic_rate_config{}};
  throttle.on_response(0s, true);  // turns the limiter on: its bucket starts empty
  const hedge_policy p = policy(2, 1s);
  hedge_controller c{p, {.throttle = &throttle}};
  const auto s = c.start(0s, rng);
  EXPECT_EQ(s.what, action::send);
  EXPECT_GT(s.wait, 0s) << "the driver waits this long before sending";
}

TEST_F(HedgeController, APolicyOutOfRangeIsClamped) {
  const hedge_policy p = policy(50, -1s);
  hedge_controller c{p};
  EXPECT_EQ(c.max_attempts(), hedge_policy::max_attempts_limit);
  c.start(0s, rng);
  for (int i = 0; i < 10; ++i) c.on_timer(0s, rng);
  EXPECT_EQ(c.sent(), hedge_policy::max_attempts_limit);
}

TEST(HedgeStop, HasNames) {
  EXPECT_EQ(backoff::to_string(hedge_stop::none), "none");
  EXPECT_EQ(backoff::to_string(hedge_stop::max_attempts), "max_attempts");
  EXPECT_EQ(backoff::to_string(hedge_stop::pushback), "pushback");
  EXPECT_EQ(backoff::to_string(hedge_stop::budget), "budget");
  EXPECT_EQ(backoff::to_string(hedge_stop::throttle), "throttle");
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------------------------
// A circuit breaker in the gates: asked before every copy, told every answer.

using HedgeBreaker = controller_test;

TEST_F(HedgeBreaker, AnOpenBreakerRefusesTheFirstCopyAndNothingIsSent) {
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=1, open=10s)")};
  const auto first = breaker.try_acquire(0s, true);
  breaker.record(0s, first, true);  // opens
  ASSERT_EQ(breaker.state(1s), backoff::breaker_state::open);
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {.breaker = &breaker}};
  EXPECT_TRUE(ends(c.start(1s, rng), outcome::breaker_open));
  EXPECT_EQ(c.sent(), 0u);
  EXPECT_EQ(c.stopped(), hedge_stop::breaker);
}

TEST_F(HedgeBreaker, NonFatalAnswersAreFailuresThatOpenItAndStopTheCopies) {
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=2, open=10s)")};
  const hedge_policy p = policy(4, 1s);
  hedge_controller c{p, {.breaker = &breaker}};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));
  EXPECT_TRUE(sends(c.on_answer(1, verdict::retryable(), 100ms, rng), 2));
  // The second failure opens the breaker: copy 3 is refused, and with nothing in flight the
  // call ends as the breaker's.
  EXPECT_TRUE(ends(c.on_answer(2, verdict::retryable(), 200ms, rng), outcome::breaker_open));
  EXPECT_EQ(c.sent(), 2u);
  EXPECT_EQ(breaker.state(300ms), backoff::breaker_state::open);
}

TEST_F(HedgeBreaker, TheRetryOnlyKindLetsTheFirstCopyGoButNoOtherWhileFailuresAreHigh) {
  backoff::circuit_breaker breaker{backoff::parse_breaker("retry-only-10pct")};
  const hedge_policy p = policy(3, 1s);
  hedge_controller c{p, {.breaker = &breaker}};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));  // a first try: never blocked
  // Its window (200 ms) holds only this call's copy, still in flight: empty, so a copy is
  // refused (jirfag/simulations: an empty window refuses).
  EXPECT_TRUE(waits(c.on_timer(1s, rng)));
  EXPECT_EQ(c.stopped(), hedge_stop::breaker);
  EXPECT_TRUE(ends(c.on_answer(1, verdict::success(), 1100ms, rng), outcome::succeeded));
}

TEST_F(HedgeBreaker, ACancelledLoserGivesItsHalfOpenTrialBack) {
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=2)")};
  const auto opener = breaker.try_acquire(0s, true);
  breaker.record(0s, opener, true);
  const hedge_policy p = policy(2, 0s);
  hedge_controller c{p, {.breaker = &breaker}};
  // Half-open at 2 s: both copies are its two trials.
  EXPECT_TRUE(sends(c.start(2s, rng), 1));
  EXPECT_TRUE(sends(c.on_timer(2s, rng), 2));
  EXPECT_FALSE(breaker.try_acquire(2s, true).allowed) << "no third trial";
  // Copy 2 wins; copy 1 is cancelled unanswered and releases its trial, so the one success
  // does not close the breaker, and a new trial may go.
  EXPECT_TRUE(ends(c.on_answer(2, verdict::success(), 2100ms, rng), outcome::succeeded));
  EXPECT_EQ(c.cancelled(), 1u);
  EXPECT_EQ(breaker.state(2100ms), backoff::breaker_state::half_open);
  EXPECT_TRUE(breaker.try_acquire(2100ms, true).allowed);
}

}  // namespace

namespace {

using HedgeBreakerLifetime = controller_test;

TEST_F(HedgeBreakerLifetime, ACallAbandonedMidFlightGivesItsTrialBack) {
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)")};
  const auto opener = breaker.try_acquire(0s, true);
  breaker.record(0s, opener, true);
  const hedge_policy p = policy(2, 10s);
  {
    hedge_controller c{p, {.breaker = &breaker}};
    EXPECT_TRUE(sends(c.start(2s, rng), 1));  // the one half-open trial
    EXPECT_FALSE(breaker.try_acquire(2s, true).allowed);
    hedge_controller moved{std::move(c)};  // the permits go with it, released once
  }  // destroyed without an answer or an end: its coroutine was destroyed, say
  EXPECT_TRUE(breaker.try_acquire(2s, true).allowed) << "the trial is free again";
}

TEST_F(HedgeBreakerLifetime, ACallEndedByItsDeadlineCountsItsOldestCopyAsAFailure) {
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=1, open=1m)")};
  const hedge_policy p = policy(3, 100ms);
  hedge_controller c{p, {.breaker = &breaker}, 1s};
  EXPECT_TRUE(sends(c.start(0s, rng), 1));
  EXPECT_TRUE(sends(c.on_timer(100ms, rng), 2));
  EXPECT_TRUE(sends(c.on_timer(200ms, rng), 3));
  // Nothing answers: a dependency that hangs must open the breaker as failures would.
  EXPECT_TRUE(ends(c.on_timer(1s, rng), outcome::deadline_exceeded));
  EXPECT_EQ(breaker.state(1s), backoff::breaker_state::open);
}

}  // namespace
