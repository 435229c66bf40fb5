// SPDX-License-Identifier: Apache-2.0
// The retry tool's loop on a manual clock: attempts "take" the time the test says, sleeps are
// recorded, so the deadline, `every` and the stopping rules are checked exactly and instantly.
#include "tool/attempt_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::parse_policy;
using namespace backoff::tool;

// A loop whose attempts last `runtime` each and exit with statuses[n - 1] (the last repeats).
struct fake_run {
  duration clock{100s};  // any start: only differences matter
  std::vector<duration> sleeps;
  std::vector<attempt_info> infos;
  std::vector<duration> starts;
  std::vector<int> statuses{1};
  duration runtime = 1s;
  backoff::random_generator rng{7};
  cancel_scope scope;

  loop_env env() {
    loop_env e;
    e.now = [this] { return clock; };
    e.sleep = [this](duration d, std::stop_token stop) {
      if (stop.stop_requested()) return false;
      sleeps.push_back(d);
      clock += d;
      return true;
    };
    return e;
  }

  loop_result run(const loop_options& options,
                  const classify_function& classify = classify_status(std::nullopt, std::nullopt)) {
    const auto attempt = [this](const attempt_info& info) {
      infos.push_back(info);
      starts.push_back(clock);
      clock += runtime;
      attempt_result r;
      const std::size_t i = std::min(infos.size(), statuses.size()) - 1;
      r.exit_code = statuses[i];
      return r;
    };
    return run_attempt_loop(
        options, scope, rng, attempt, classify, [](const attempt_record&) {}, env());
  }
};

loop_options constant(duration wait, std::uint32_t times, duration within = duration{0}) {
  loop_options o;
  o.policy.backoff = parse_policy("constant(initial=" + backoff::format_duration(wait) + ")");
  o.policy.max_attempts = times;
  o.policy.max_elapsed = within;
  return o;
}

TEST(AttemptLoop, RetriesUntilSuccessWaitingAsThePolicySays) {
  fake_run f;
  f.statuses = {1, 1, 0};
  const loop_result r = f.run(constant(2s, 5));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.last.status(), 0);
  EXPECT_EQ(f.sleeps, (std::vector<duration>{2s, 2s}));
}

TEST(AttemptLoop, StopsAfterTheLastAttemptWithoutAFinalSleep) {
  fake_run f;
  f.statuses = {3};
  const loop_result r = f.run(constant(2s, 3));
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.last.status(), 3);
  EXPECT_EQ(f.sleeps.size(), 2u);  // minfrin/retry 1.0.5 sleeps once more after the last
}

// The deadline is a hard cap (issue 40): the library's rule would cut the wait to end at the
// deadline and make one last attempt there, with no time left, never stopped (a nested run got no
// BACKOFF_DEADLINE and ran for ten minutes). The tool's loop ends the run instead.
TEST(AttemptLoop, AWaitThatWouldReachTheDeadlineEndsTheRunAtOnce) {
  // 10 s budget, 1 s attempts, 4 s waits: attempts at 0 and 5; the next wait would end at 10 s,
  // the deadline: no attempt there, and no wait for nothing either.
  fake_run f;
  const loop_result r = f.run(constant(4s, 0, 10s));
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_TRUE(r.no_time_left);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(r.last.status(), 1);
  EXPECT_EQ(f.sleeps, (std::vector<duration>{4s}));
  EXPECT_EQ(f.starts, (std::vector<duration>{100s, 105s}));
  EXPECT_EQ(r.refused_delay, 4s);
  EXPECT_EQ(r.left, 4s);
  EXPECT_EQ(f.clock, 100s + 6s);
}

TEST(AttemptLoop, AWaitThatWouldPassTheDeadlineEndsTheRunAtOnce) {
  // Waits of 3 s: attempts at 0, 4 and 8 s; the wait after the third would end at 12 s.
  fake_run f;
  const loop_result r = f.run(constant(3s, 0, 10s));
  EXPECT_EQ(f.sleeps, (std::vector<duration>{3s, 3s}));
  EXPECT_EQ(f.starts.back(), 108s);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(f.clock, 109s) << "ended when the third attempt did";
}

// Every attempt is bounded by the deadline: none is ever handed "no deadline" inside a run that
// has one.
TEST(AttemptLoop, EveryAttemptIsGivenTheDeadline) {
  fake_run f;
  f.runtime = 100ms;
  f.run(constant(1s, 0, 10s));
  // At 0, 1.1, ..., 9.9 s (the tenth with exactly the 100 ms minimum left).
  ASSERT_EQ(f.infos.size(), 10u);
  for (const attempt_info& info : f.infos) {
    EXPECT_EQ(info.deadline, std::optional<duration>(110s)) << "attempt " << info.number;
  }
}

TEST(AttemptLoop, TheObserverSeesNoDelayAfterTheAttemptThatTimeRanOutOn) {
  fake_run f;
  std::vector<std::optional<duration>> delays;
  const auto attempt = [&](const attempt_info&) {
    f.clock += f.runtime;
    attempt_result a;
    a.exit_code = 1;
    return a;
  };
  run_attempt_loop(
      constant(4s, 0, 10s), f.scope, f.rng, attempt, classify_status(std::nullopt, std::nullopt),
      [&](const attempt_record& r) { delays.push_back(r.delay); }, f.env());
  EXPECT_EQ(delays, (std::vector<std::optional<duration>>{4s, std::nullopt}));
}

// A retry starts only with at least minimum_left (100 ms) before the deadline.
TEST(AttemptLoop, ARetryStartsOnlyWithTheMinimumTimeLeft) {
  {
    fake_run f;  // attempts at 0 and 5 s; the third would start at 10 s with exactly 100 ms left
    const loop_result r = f.run(constant(4s, 0, 10s + 100ms));
    EXPECT_EQ(r.attempts, 3u);
    EXPECT_EQ(f.starts.back(), 110s);
    EXPECT_FALSE(r.no_time_left) << "ended by the third attempt's deadline, not by the rule";
  }
  {
    fake_run f;  // 99 ms left then: not made
    const loop_result r = f.run(constant(4s, 0, 10s + 99ms));
    EXPECT_EQ(r.attempts, 2u);
    EXPECT_TRUE(r.no_time_left);
    EXPECT_EQ(f.sleeps, (std::vector<duration>{4s}));
  }
  {
    fake_run f;  // a minimum of its own
    loop_options o = constant(4s, 0, 10s + 99ms);
    o.minimum_left = 50ms;
    EXPECT_EQ(f.run(o).attempts, 3u);
  }
}

TEST(AttemptLoop, EveryKeepsTheMinimumTimeLeftToo) {
  fake_run f;
  f.runtime = 300ms;
  loop_options o = constant(1h, 0, 950ms);
  o.every = 200ms;  // shorter than an attempt: no wait; starts at 0, 0.3, 0.6; 50 ms left at 0.9
  const loop_result r = f.run(o);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_TRUE(r.no_time_left);
  EXPECT_EQ(f.clock, 100s + 900ms);
}

TEST(AttemptLoop, AWaitThatOverranTheDeadlineStartsNoAttempt) {
  // A wait planned to end before the deadline but woken after it (a suspended machine).
  fake_run f;
  loop_env env = f.env();
  const auto planned_sleep = env.sleep;
  env.sleep = [&](duration d, std::stop_token stop) {
    const bool ok = planned_sleep(d, stop);
    f.clock += 20s;
    return ok;
  };
  const auto attempt = [&](const attempt_info& info) {
    f.infos.push_back(info);
    f.clock += f.runtime;
    attempt_result a;
    a.exit_code = 1;
    return a;
  };
  const loop_result r = run_attempt_loop(
      constant(2s, 0, 10s), f.scope, f.rng, attempt, classify_status(std::nullopt, std::nullopt),
      [](const attempt_record&) {}, env);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(r.last.status(), 1);
}

TEST(AttemptLoop, RetryAfterBeyondTheDeadlineEndsAtOnce) {
  fake_run f;
  const loop_result r = f.run(
      constant(1s, 0, 10s), [](const attempt_result&) { return backoff::verdict::retryable(30s); });
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_TRUE(f.sleeps.empty());
}

TEST(AttemptLoop, EachAttemptKnowsTheDeadline) {
  fake_run f;
  f.run(constant(1s, 2, 30s));
  ASSERT_EQ(f.infos.size(), 2u);
  EXPECT_EQ(f.infos[0].number, 1u);
  EXPECT_EQ(f.infos[1].number, 2u);
  EXPECT_EQ(f.infos[0].deadline, std::optional<duration>(100s + 30s));
}

TEST(AttemptLoop, TheTighterOfTheOuterAndOwnDeadlineWins) {
  fake_run f;
  loop_options o = constant(1s, 0, 1h);
  o.outer_deadline = f.clock + 5s;
  const loop_result r = f.run(o);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(f.infos[0].deadline, std::optional<duration>(100s + 5s));
  EXPECT_LE(f.clock, 100s + 5s);
}

// The same rule at an enclosing deadline: the loop ends instead of waiting for it.
TEST(AttemptLoop, NoLastAttemptAtAnEnclosingDeadline) {
  fake_run f;
  loop_options o = constant(3s, 0, 1h);
  o.outer_deadline = f.clock + 6s;
  const loop_result r = f.run(o);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 2u);  // at 0 and 4; a 3 s wait from 5 would pass 6
  EXPECT_EQ(f.sleeps, (std::vector<duration>{3s}));
  EXPECT_EQ(f.clock, 100s + 5s);
}

// Own deadline first, an outer one later: every attempt is bounded by the tighter, the own one.
TEST(AttemptLoop, EveryAttemptKeepsTheTighterDeadline) {
  fake_run f;
  loop_options o = constant(4s, 0, 10s);
  o.outer_deadline = f.clock + 1h;
  f.run(o);
  ASSERT_EQ(f.infos.size(), 2u);
  EXPECT_EQ(f.infos[0].deadline, std::optional<duration>(110s));
  EXPECT_EQ(f.infos[1].deadline, std::optional<duration>(110s));
}

TEST(AttemptLoop, ADeadlineAlreadyPastRunsNothingAndTimesOut) {
  fake_run f;
  loop_options o = constant(1s, 3);
  o.outer_deadline = f.clock - 1s;
  const loop_result r = f.run(o);
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 0u);
  EXPECT_EQ(r.last.status(), status_timed_out);
  EXPECT_TRUE(f.infos.empty());
}

TEST(AttemptLoop, EveryMeasuresStartToStart) {
  fake_run f;
  f.runtime = 300ms;
  loop_options o = constant(1h, 4);  // the policy's waits are not used with `every`
  o.every = 1s;
  f.run(o);
  EXPECT_EQ(f.sleeps, (std::vector<duration>{700ms, 700ms, 700ms}));
  EXPECT_EQ(f.starts[3] - f.starts[0], 3s);
}

TEST(AttemptLoop, EveryShorterThanAnAttemptDoesNotWait) {
  fake_run f;
  f.runtime = 2s;
  loop_options o = constant(1h, 3);
  o.every = 1s;
  f.run(o);
  EXPECT_EQ(f.sleeps, (std::vector<duration>{0s, 0s}));
}

TEST(AttemptLoop, CancellationDuringTheWaitEndsTheLoop) {
  fake_run f;
  loop_env env = f.env();
  int calls = 0;
  const auto attempt = [&](const attempt_info&) {
    if (++calls == 1) f.scope.cancel(SIGINT);  // the signal arrives while the first one runs
    attempt_result r;
    r.exit_code = 1;
    return r;
  };
  const loop_result r = run_attempt_loop(
      constant(1s, 5), f.scope, f.rng, attempt, classify_status(std::nullopt, std::nullopt),
      [](const auto&) {}, env);
  EXPECT_EQ(r.why, outcome::cancelled);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(f.scope.signal(), SIGINT);
}

TEST(AttemptLoop, ObserverSeesEveryAttemptAndTheDelayAfterIt) {
  fake_run f;
  f.statuses = {1, 0};
  std::vector<attempt_record> seen;
  const auto attempt = [&](const attempt_info&) {
    attempt_result r;
    r.exit_code = seen.empty() ? 1 : 0;
    return r;
  };
  run_attempt_loop(
      constant(3s, 5), f.scope, f.rng, attempt, classify_status(std::nullopt, std::nullopt),
      [&](const attempt_record& rec) { seen.push_back(rec); }, f.env());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].delay, std::optional<duration>(3s));
  EXPECT_FALSE(seen[1].delay.has_value());
  EXPECT_GT(seen[0].start_unix_s, 1.6e9);
}

// A result whose status() is `status`, ended as `how`.
attempt_result ended_with(int status, attempt_end how = attempt_end::exited) {
  attempt_result r;
  r.ended = how;
  if (how == attempt_end::exited) r.exit_code = status;
  if (how == attempt_end::signaled) r.signal = status - status_signal_base;
  if (how == attempt_end::cancelled) r.cancel_signal = status - status_signal_base;
  EXPECT_EQ(r.status(), status);
  return r;
}

TEST(ClassifyStatus, DefaultRetriesFailuresButNotCannotRun) {
  const auto c = classify_status(std::nullopt, std::nullopt);
  EXPECT_EQ(c(ended_with(0)).kind, backoff::verdict_kind::success);
  EXPECT_EQ(c(ended_with(1)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(ended_with(124, attempt_end::timed_out)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(ended_with(137, attempt_end::signaled)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(ended_with(127, attempt_end::not_found)).kind, backoff::verdict_kind::permanent);
  EXPECT_EQ(c(ended_with(126, attempt_end::not_executable)).kind, backoff::verdict_kind::permanent);
  EXPECT_EQ(c(ended_with(127)).kind, backoff::verdict_kind::permanent);  // sh: not found
  EXPECT_EQ(c(ended_with(130, attempt_end::cancelled)).kind, backoff::verdict_kind::permanent);
}

TEST(ClassifyStatus, UntilStopsOnAnyListedStatus) {
  const auto c = classify_status(parse_status_list("3,4"), std::nullopt);
  EXPECT_EQ(c(ended_with(3)).kind, backoff::verdict_kind::success);
  EXPECT_EQ(c(ended_with(4)).kind, backoff::verdict_kind::success);  // not only the first item
  EXPECT_EQ(c(ended_with(0)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(ended_with(5)).kind, backoff::verdict_kind::retryable);
}

TEST(ClassifyStatus, WhileRetriesOnlyListedStatuses) {
  const auto c = classify_status(std::nullopt, parse_status_list("1-2, 75"));
  EXPECT_EQ(c(ended_with(1)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(ended_with(75)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(ended_with(3)).kind, backoff::verdict_kind::permanent);
  EXPECT_EQ(c(ended_with(0)).kind, backoff::verdict_kind::success);
}

TEST(StatusList, ParsesKeywordsNumbersAndRanges) {
  const status_list l = parse_status_list("success, 3,10-12 ,fail");
  EXPECT_TRUE(l.matches(0));
  EXPECT_TRUE(l.matches(3));
  EXPECT_TRUE(l.matches(11));
  EXPECT_TRUE(l.matches(255));
  const status_list only = parse_status_list("true,5-6");
  EXPECT_TRUE(only.matches(0));
  EXPECT_TRUE(only.matches(6));
  EXPECT_FALSE(only.matches(1));
  EXPECT_FALSE(only.matches(7));
}

TEST(StatusList, RejectsBadItemsNamingThem) {
  for (const char* bad : {"", "3-1", "256", "-1", "x", "3,,4", "1-", "1-2-3", "0x10", " "}) {
    try {
      parse_status_list(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const backoff::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find("bad status list"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
