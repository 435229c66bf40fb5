// SPDX-License-Identifier: Apache-2.0
// The sync retry loop and its decision helper (retry.hpp), driven by recording_env: a manual
// clock, sleeps that are recorded instead of waited, and a fixed seed. Nothing here sleeps.
#include "backoff/retry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/http.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "backoff/verdict.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::duration;
using backoff::outcome;
using backoff::retry_policy;
using backoff::verdict;
using backoff::testing::recording_env;

using delays = std::vector<duration>;

// 1 s, 2 s, 4 s, 8 s, ... capped at 30 s, no jitter.
retry_policy doubling(std::uint32_t max_attempts = 0, duration max_elapsed = 0s) {
  return retry_policy{backoff_policy::exponential(1s, 2.0, 30s), max_attempts, max_elapsed};
}

// A call site's view of time: how far the manual clock is from where the test started it.
duration since(const recording_env& rec, duration start) {
  return rec.clock.now().time_since_epoch() - start;
}

// ---------------------------------------------------------------------------------------------

TEST(Retry, SleepsExactlyThePolicysDelaysWithoutJitter) {
  recording_env rec;
  const auto result = backoff::retry([] { return false; }, doubling(6), {}, rec.env);
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s, 4s, 8s, 16s}));
  EXPECT_EQ(result.why, outcome::attempts_exhausted);
  EXPECT_EQ(rec.clock.now().time_since_epoch(), 31s);
}

TEST(Retry, StopsAfterExactlyMaxAttemptsCalls) {
  for (std::uint32_t n : {1u, 2u, 5u, 20u}) {
    recording_env rec;
    int calls = 0;
    const auto result = backoff::retry(
        [&] {
          ++calls;
          return false;
        },
        doubling(n), {}, rec.env);
    EXPECT_EQ(calls, static_cast<int>(n));
    EXPECT_EQ(result.attempts, n);
    EXPECT_EQ(rec.sleeps.size(), n - 1) << "no sleep after the last attempt";
    EXPECT_EQ(result.why, outcome::attempts_exhausted);
    EXPECT_FALSE(result);
    EXPECT_TRUE(backoff::is_exhausted(result.why));
  }
}

TEST(Retry, PermanentFailureStopsAtOnce) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return 404;
      },
      doubling(10), [](int status) { return backoff::classify_http_status(status); }, rec.env);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.why, outcome::permanent);
  EXPECT_EQ(result.attempts, 1u);
  EXPECT_TRUE(rec.sleeps.empty());
  EXPECT_EQ(result.last, std::optional<int>{404});
}

TEST(Retry, SucceedsOnTheKthAttempt) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return calls == 4 ? 200 : 503;
      },
      doubling(10), [](int status) { return backoff::classify_http_status(status); }, rec.env);
  EXPECT_TRUE(result);
  EXPECT_EQ(result.why, outcome::succeeded);
  EXPECT_EQ(result.attempts, 4u);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(result.last, std::optional<int>{200});
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s, 4s}));
}

TEST(Retry, SucceedsAtOnceWithoutSleeping) {
  recording_env rec;
  const auto result = backoff::retry([] { return true; }, doubling(), {}, rec.env);
  EXPECT_TRUE(result);
  EXPECT_EQ(result.attempts, 1u);
  EXPECT_TRUE(rec.sleeps.empty());
  EXPECT_EQ(result.slept, 0s);
}

TEST(Retry, RetryAfterRaisesADelayButNeverLowersIt) {
  recording_env rec;
  const std::vector<verdict> script = {verdict::retryable(5s),     // raises 1 s to 5 s
                                       verdict::retryable(100ms),  // below 2 s: ignored
                                       verdict::retryable(),       // 4 s
                                       verdict::retryable(4s),     // below 8 s: ignored
                                       verdict::success()};
  std::size_t i = 0;
  const auto result = backoff::retry([&] { return script.at(i++); }, doubling(), {}, rec.env);
  EXPECT_TRUE(result);
  EXPECT_EQ(rec.sleeps, (delays{5s, 2s, 4s, 8s}));
}

TEST(Retry, RetryAfterDoesNotShiftTheSchedule) {
  // The schedule keeps counting retries: after a Retry-After of 1 min the next delay is 2 s.
  recording_env rec;
  const std::vector<verdict> script = {verdict::retryable(1min), verdict::retryable(),
                                       verdict::success()};
  std::size_t i = 0;
  (void)backoff::retry([&] { return script.at(i++); }, doubling(), {}, rec.env);
  EXPECT_EQ(rec.sleeps, (delays{1min, 2s}));
}

TEST(Retry, OperationGetsTheAttemptNumberFromOne) {
  recording_env rec;
  std::vector<std::uint32_t> seen;
  const auto result = backoff::retry(
      [&](std::uint32_t attempt) {
        seen.push_back(attempt);
        return false;
      },
      doubling(4), {}, rec.env);
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(result.attempts, 4u);
}

TEST(Retry, SleptIsTheSumOfTheSleeps) {
  recording_env rec;
  const retry_policy policy{
      backoff_policy::exponential(100ms, 2.0, 1s).with_jitter(backoff::jitter_kind::full), 12, 0s};
  const auto result = backoff::retry([] { return false; }, policy, {}, rec.env);
  ASSERT_EQ(rec.sleeps.size(), 11u);
  EXPECT_EQ(result.slept, rec.total_slept());
  EXPECT_GT(result.slept, 0s);
}

TEST(Retry, JitteredDelaysComeFromTheEnvsGenerator) {
  const retry_policy policy{
      backoff_policy::exponential(100ms, 2.0, 1s).with_jitter(backoff::jitter_kind::full), 10, 0s};
  recording_env a{7};
  recording_env b{7};
  recording_env c{8};
  (void)backoff::retry([] { return false; }, policy, {}, a.env);
  (void)backoff::retry([] { return false; }, policy, {}, b.env);
  (void)backoff::retry([] { return false; }, policy, {}, c.env);
  EXPECT_EQ(a.sleeps, b.sleeps);
  EXPECT_NE(a.sleeps, c.sleeps);
  // And they are the policy's own delays for that seed.
  backoff::random_generator g{7};
  auto state = policy.backoff.start();
  for (duration d : a.sleeps) EXPECT_EQ(d, state.next_delay(g));
}

TEST(Retry, AnExceptionFromTheOperationPropagates) {
  recording_env rec;
  int calls = 0;
  EXPECT_THROW((void)backoff::retry(
                   [&]() -> bool {
                     if (++calls == 2) throw std::runtime_error("boom");
                     return false;
                   },
                   doubling(5), {}, rec.env),
               std::runtime_error);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps, (delays{1s}));
}

// ---------------------------------------------------------------------------------------------
// The deadline (max_elapsed).

TEST(RetryDeadline, NoAttemptStartsAfterItAndTheLastSleepEndsExactlyThere) {
  const duration start = 1h;  // the deadline is relative to the first attempt, not to 0
  recording_env rec{42, start};
  std::vector<duration> starts;
  const auto result = backoff::retry(
      [&] {
        starts.push_back(since(rec, start));
        return false;
      },
      doubling(0, 10s), {}, rec.env);
  // Attempts at 0, 1, 3, 7 s; the next delay (8 s) would end at 15 s, so it is clamped to 3 s
  // and one last attempt is made at exactly 10 s.
  EXPECT_EQ(starts, (delays{0s, 1s, 3s, 7s, 10s}));
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s, 4s, 3s}));
  EXPECT_EQ(result.why, outcome::deadline_exceeded);
  EXPECT_EQ(result.attempts, 5u);
  EXPECT_TRUE(backoff::is_exhausted(result.why));
}

TEST(RetryDeadline, ClampsTheSleepToTheTimeLeftAfterASlowAttempt) {
  recording_env rec;
  std::vector<duration> starts;
  const auto result = backoff::retry(
      [&] {
        starts.push_back(since(rec, 0s));
        rec.clock.advance(500ms);  // each attempt takes half a second
        return false;
      },
      doubling(0, 10s), {}, rec.env);
  // 0 -> 0.5, sleep 1 -> 1.5 -> 2, sleep 2 -> 4 -> 4.5, sleep 4 -> 8.5 -> 9, then 8 s is
  // clamped to the 1 s left -> 10 -> 10.5: past the deadline, stop.
  EXPECT_EQ(starts, (delays{0s, 1500ms, 4s, 8500ms, 10s}));
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s, 4s, 1s}));
  EXPECT_EQ(result.why, outcome::deadline_exceeded);
}

TEST(RetryDeadline, AnAttemptEndingAfterTheDeadlineIsNotFollowedByASleep) {
  recording_env rec;
  const auto result = backoff::retry(
      [&] {
        rec.clock.advance(11s);
        return false;
      },
      doubling(0, 10s), {}, rec.env);
  EXPECT_EQ(result.why, outcome::deadline_exceeded);
  EXPECT_EQ(result.attempts, 1u);
  EXPECT_TRUE(rec.sleeps.empty());
}

TEST(RetryDeadline, RetryAfterBeyondTheDeadlineStopsWithoutSleeping) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return verdict::retryable(30s);
      },
      doubling(0, 10s), {}, rec.env);
  EXPECT_EQ(result.why, outcome::deadline_exceeded);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(rec.sleeps.empty());
  EXPECT_EQ(result.slept, 0s);
}

TEST(RetryDeadline, RetryAfterEqualToTheTimeLeftIsHonoured) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return calls == 1 ? verdict::retryable(10s) : verdict::success();
      },
      doubling(0, 10s), {}, rec.env);
  EXPECT_TRUE(result);
  EXPECT_EQ(rec.sleeps, (delays{10s}));
}

// A wait that was planned to end before the deadline but woke after it (a suspended machine)
// starts no attempt; the clamped last wait may overrun a little and still gets its attempt.
TEST(RetryDeadline, AWaitThatOverranTheDeadlineStartsNoAttempt) {
  recording_env rec;
  backoff::retry_env env = rec.env;
  env.sleep = [&](duration d, std::stop_token stop) {
    const bool ok = rec.env.sleep(d, stop);
    rec.clock.advance(20s);  // the machine slept
    return ok;
  };
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return false;
      },
      doubling(0, 10s), {}, env);
  EXPECT_EQ(result.why, outcome::deadline_exceeded);
  EXPECT_EQ(calls, 1);
}

TEST(RetryDeadline, TheClampedLastWaitMayOverrunAndStillGetsItsAttempt) {
  recording_env rec;
  backoff::retry_env env = rec.env;
  env.sleep = [&](duration d, std::stop_token stop) {
    const bool ok = rec.env.sleep(d, stop);
    rec.clock.advance(1ms);  // every wake-up is a little late
    return ok;
  };
  std::vector<duration> starts;
  const auto result = backoff::retry(
      [&] {
        starts.push_back(since(rec, 0s));
        return false;
      },
      doubling(0, 5s), {}, env);
  // 0, then 1 s waits: 1.001; 2 s: 3.002; then 4 s is clamped to 1.998 s: 5.001, the last.
  EXPECT_EQ(starts, (delays{0s, 1001ms, 3002ms, 5001ms}));
  EXPECT_EQ(result.why, outcome::deadline_exceeded);
}

TEST(RetryController, TheStepReadsNoClockWithoutADeadlineOrGates) {
  const retry_policy policy = doubling(3);
  backoff::retry_controller c(policy, 0s);
  backoff::random_generator g{1};
  int reads = 0;
  const auto now = [&] {
    ++reads;
    return 5s;
  };
  const auto s = c.begin_attempt(false, now, g);
  EXPECT_EQ(s.what, backoff::retry_controller::attempt_start::send);
  EXPECT_EQ(c.end_attempt(s, verdict::retryable(), now, g).delay, 1s);
  const auto deferred = c.begin_attempt(true, now, g);
  EXPECT_EQ(deferred.what, backoff::retry_controller::attempt_start::defer);
  EXPECT_EQ(c.end_attempt(deferred, verdict::success(), now, g).delay, 2s)
      << "a deferred attempt is a retryable failure, whatever verdict is passed";
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(c.attempts(), 2u);
}

TEST(RetryController, APlannedDelayReplacesTheBackoffButNotTheDeadline) {
  const retry_policy policy = doubling(0, 10s);
  backoff::retry_controller c(policy, 0s);
  backoff::random_generator g{1};
  duration t = 0s;
  const auto now = [&] { return t; };
  auto s = c.begin_attempt(false, now, g);
  EXPECT_EQ(c.end_attempt(s, verdict::retryable(), now, g, 700ms).delay, 700ms);
  EXPECT_FALSE(c.at_deadline());
  t = 9s;
  s = c.begin_attempt(false, now, g);
  const auto d = c.end_attempt(s, verdict::retryable(), now, g, 5s);
  EXPECT_EQ(d.delay, 1s);
  EXPECT_TRUE(c.at_deadline());
}

TEST(RetryDeadline, MaxAttemptsStillAppliesWithADeadline) {
  recording_env rec;
  const auto result = backoff::retry([] { return false; }, doubling(3, 1h), {}, rec.env);
  EXPECT_EQ(result.why, outcome::attempts_exhausted);
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s}));
}

// ---------------------------------------------------------------------------------------------
// Cancellation.

TEST(RetryCancel, StopRequestedBeforeTheStartMakesNoAttempt) {
  recording_env rec;
  rec.stop.request_stop();
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return true;
      },
      doubling(), {}, rec.env);
  EXPECT_EQ(result.why, outcome::cancelled);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(result.attempts, 0u);
  EXPECT_FALSE(result.last.has_value());
}

TEST(RetryCancel, StopRequestedInsideTheOperationEndsTheLoop) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        if (++calls == 3) rec.stop.request_stop();
        return false;
      },
      doubling(), {}, rec.env);
  EXPECT_EQ(result.why, outcome::cancelled);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s}));
}

TEST(RetryCancel, AnOperationThatSucceedsWhileCancelledStillSucceeds) {
  recording_env rec;
  const auto result = backoff::retry(
      [&] {
        rec.stop.request_stop();
        return true;
      },
      doubling(), {}, rec.env);
  EXPECT_EQ(result.why, outcome::succeeded);
}

TEST(RetryCancel, StopRequestedFromTheOnRetryHookEndsTheLoop) {
  recording_env rec;
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return false;
      },
      doubling(), {}, rec.env,
      [&](const backoff::retry_event<bool>& e) {
        if (e.attempt == 2) rec.stop.request_stop();
      });
  EXPECT_EQ(result.why, outcome::cancelled);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rec.sleeps, (delays{1s}));
}

// `slept` is "total time spent waiting" (retry.hpp). A sleep that the stop request cut short
// before it began took no time, so it must not be counted.
TEST(RetryCancel, SleptDoesNotCountASleepThatWasCancelled) {
  recording_env rec;
  const auto result = backoff::retry([] { return false; }, doubling(), {}, rec.env,
                                     [&](const backoff::retry_event<bool>& e) {
                                       if (e.attempt == 3) rec.stop.request_stop();
                                     });
  EXPECT_EQ(result.why, outcome::cancelled);
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s}));
  EXPECT_EQ(result.slept, rec.total_slept());  // 3 s, not 3 s + the 4 s never slept
}

// ---------------------------------------------------------------------------------------------
// The on-retry hook.

TEST(RetryHook, SeesAttemptDelayVerdictAndResultBeforeEachWait) {
  recording_env rec;
  const std::vector<int> statuses = {503, 429, 200};
  std::size_t i = 0;
  struct seen {
    std::uint32_t attempt;
    duration delay;
    verdict why;
    int status;
    duration at;  // when the hook ran
  };
  std::vector<seen> events;
  const auto result =
      backoff::retry([&] { return statuses.at(i++); }, doubling(),
                     [](int status) {
                       return backoff::classify_http_status(
                           status, status == 429 ? std::optional<duration>{7s} : std::nullopt);
                     },
                     rec.env,
                     [&](const backoff::retry_event<int>& e) {
                       ASSERT_NE(e.result, nullptr);
                       events.push_back({e.attempt, e.delay, e.why, *e.result, since(rec, 0s)});
                     });
  EXPECT_TRUE(result);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].attempt, 1u);
  EXPECT_EQ(events[0].delay, 1s);
  EXPECT_EQ(events[0].why, verdict::retryable());
  EXPECT_EQ(events[0].status, 503);
  EXPECT_EQ(events[0].at, 0s);  // before the wait
  EXPECT_EQ(events[1].attempt, 2u);
  EXPECT_EQ(events[1].delay, 7s);  // Retry-After raised the 2 s
  EXPECT_EQ(events[1].why, verdict::retryable(7s));
  EXPECT_EQ(events[1].status, 429);
  EXPECT_EQ(events[1].at, 1s);
}

TEST(RetryHook, IsNotCalledWhenTheLoopStops) {
  recording_env rec;
  int hooks = 0;
  (void)backoff::retry([] { return false; }, doubling(3), {}, rec.env,
                       [&](const backoff::retry_event<bool>&) { ++hooks; });
  EXPECT_EQ(hooks, 2);  // before the 2nd and 3rd attempts, not after the 3rd
}

// ---------------------------------------------------------------------------------------------
// Carrier sense.

TEST(RetryCarrierSense, BusyDefersAttemptsWithoutCallingTheOperation) {
  recording_env rec;
  int busy_checks = 0;
  rec.env.busy = [&] { return ++busy_checks <= 2; };
  int calls = 0;
  std::vector<const bool*> results;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return true;
      },
      doubling(), {}, rec.env,
      [&](const backoff::retry_event<bool>& e) { results.push_back(e.result); });
  EXPECT_TRUE(result);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.attempts, 3u);
  EXPECT_EQ(result.deferred, 2u);
  EXPECT_EQ(rec.sleeps, (delays{1s, 2s}));  // a deferral backs off like a failure
  EXPECT_EQ(results, (std::vector<const bool*>{nullptr, nullptr}));
}

TEST(RetryCarrierSense, AlwaysBusyExhaustsTheAttemptsWithoutTouchingTheResource) {
  recording_env rec;
  rec.env.busy = [] { return true; };
  int calls = 0;
  const auto result = backoff::retry(
      [&] {
        ++calls;
        return true;
      },
      doubling(4), {}, rec.env);
  EXPECT_EQ(result.why, outcome::attempts_exhausted);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(result.attempts, 4u);
  EXPECT_EQ(result.deferred, 4u);
  EXPECT_FALSE(result.last.has_value());
}

// ---------------------------------------------------------------------------------------------
// retry_controller, the decision helper every driver shares.

TEST(RetryController, GivesTheSameDecisionsAsTheLoop) {
  const retry_policy policy{
      backoff_policy::exponential(100ms, 2.0, 5s).with_jitter(backoff::jitter_kind::decorrelated),
      0, 20s};
  recording_env rec{99};
  const auto result = backoff::retry([] { return false; }, policy, {}, rec.env);

  backoff::random_generator g{99};
  backoff::retry_controller c{policy, 0s};
  duration now = 0s;
  delays waits;
  outcome why = outcome::succeeded;
  for (;;) {
    const auto gate = c.before_attempt(now, g);
    ASSERT_TRUE(gate.send);  // no throttle: always send, at once
    ASSERT_EQ(gate.wait, 0s);
    const auto d = c.after(verdict::retryable(), now, g);
    if (!d.retry) {
      why = d.stop;
      break;
    }
    waits.push_back(d.delay);
    now += d.delay;
  }
  EXPECT_EQ(waits, rec.sleeps);
  EXPECT_EQ(why, result.why);
  EXPECT_EQ(c.attempts(), result.attempts);
  EXPECT_EQ(now, 20s);  // the last wait ended exactly at the deadline
}

TEST(RetryController, StopsOnSuccessPermanentAttemptsAndDeadline) {
  backoff::random_generator g{1};
  const retry_policy limited = doubling(2, 10s);
  backoff::retry_controller c{limited, 5s};
  EXPECT_TRUE(c.has_deadline());
  EXPECT_EQ(c.deadline(), 15s);

  (void)c.before_attempt(5s, g);
  EXPECT_EQ(c.attempts(), 1u);
  EXPECT_EQ(c.after(verdict::success(), 5s, g).stop, outcome::succeeded);
  EXPECT_FALSE(c.after(verdict::success(), 5s, g).retry);
  EXPECT_EQ(c.after(verdict::permanent(), 5s, g).stop, outcome::permanent);
  const auto first = c.after(verdict::retryable(), 5s, g);
  EXPECT_TRUE(first.retry);
  EXPECT_EQ(first.delay, 1s);
  (void)c.before_attempt(6s, g);
  EXPECT_EQ(c.after(verdict::retryable(), 6s, g).stop, outcome::attempts_exhausted);

  const retry_policy ten_seconds = doubling(0, 10s);
  backoff::retry_controller late{ten_seconds, 0s};
  (void)late.before_attempt(0s, g);
  EXPECT_EQ(late.after(verdict::retryable(), 10s, g).stop, outcome::deadline_exceeded);
  EXPECT_EQ(late.after(verdict::retryable(), 9500ms, g).delay, 500ms);
}

TEST(RetryController, WithoutLimitsRetriesForever) {
  backoff::random_generator g{1};
  const retry_policy forever = doubling();
  backoff::retry_controller c{forever, 0s};
  EXPECT_FALSE(c.has_deadline());
  EXPECT_FALSE(c.needs_clock());
  for (int i = 0; i < 10'000; ++i) {
    (void)c.before_attempt(0s, g);
    const auto d = c.after(verdict::retryable(), duration{i} * 1'000'000'000LL, g);
    ASSERT_TRUE(d.retry) << i;
    ASSERT_LE(d.delay, 30s);
  }
  EXPECT_EQ(c.attempts(), 10'000u);
  EXPECT_EQ(c.backoff().retries(), 10'000u);
}

TEST(RetryController, DeferredAttemptsCountAndBackOffLikeFailures) {
  backoff::random_generator g{1};
  const retry_policy three = doubling(3);
  backoff::retry_controller c{three, 0s};
  c.attempt_deferred();
  EXPECT_EQ(c.after_deferred(0s, g).delay, 1s);
  c.attempt_deferred();
  EXPECT_EQ(c.after_deferred(0s, g).delay, 2s);
  (void)c.before_attempt(0s, g);
  EXPECT_EQ(c.attempts(), 3u);
  EXPECT_EQ(c.after(verdict::retryable(), 0s, g).stop, outcome::attempts_exhausted);
}

// ---------------------------------------------------------------------------------------------
// The real-world environment, without waiting.

// One env, built here with a stop token and shared with worker threads (the natural way to
// cancel them all): each thread draws its jitter from its own generator, never from the
// generator of the thread that built the env (a data race TSan reports, and a draw that moves
// this thread's generator).
TEST(SystemEnv, OneEnvCanBeSharedBetweenThreads) {
  std::stop_source stop;
  backoff::retry_env env;
  env.stop = stop.get_token();
  env.sleep = [](duration, std::stop_token) { return true; };  // no real waits
  const retry_policy policy{
      backoff::parse_policy("exponential(initial=1ms, max=10ms, jitter=full)"), 50, 0s};
  const backoff::random_generator before = backoff::detail::thread_generator();
  std::atomic<std::uint32_t> attempts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      const auto r = backoff::retry([] { return false; }, policy, {}, env);
      attempts += r.attempts;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(attempts.load(), 4u * 50u);
  backoff::random_generator expected = before;
  EXPECT_EQ(backoff::detail::thread_generator()(), expected())
      << "the other threads drew from this thread's generator";
}

TEST(SystemEnv, InterruptibleSleepReturnsAtOnceWhenStopWasRequested) {
  std::stop_source source;
  source.request_stop();
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(backoff::detail::interruptible_sleep(10s, source.get_token()));
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
}

TEST(SystemEnv, ZeroSleepReturnsTrueAtOnce) {
  std::stop_source source;
  EXPECT_TRUE(backoff::detail::interruptible_sleep(0s, source.get_token()));
  EXPECT_TRUE(backoff::detail::interruptible_sleep(-1s, std::stop_token{}));
}

TEST(SystemEnv, SteadyNowMovesForward) {
  const duration a = backoff::detail::steady_now();
  const duration b = backoff::detail::steady_now();
  EXPECT_LE(a, b);
}

TEST(Outcome, HasStableNames) {
  EXPECT_EQ(backoff::to_string(outcome::succeeded), "succeeded");
  EXPECT_EQ(backoff::to_string(outcome::attempts_exhausted), "attempts_exhausted");
  EXPECT_EQ(backoff::to_string(outcome::deadline_exceeded), "deadline_exceeded");
  EXPECT_EQ(backoff::to_string(outcome::permanent), "permanent");
  EXPECT_EQ(backoff::to_string(outcome::cancelled), "cancelled");
  EXPECT_FALSE(backoff::is_exhausted(outcome::permanent));
  EXPECT_FALSE(backoff::is_exhausted(outcome::cancelled));
}

}  // namespace
