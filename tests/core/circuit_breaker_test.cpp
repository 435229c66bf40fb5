// SPDX-License-Identifier: Apache-2.0
// Circuit breakers on manual time values: each kind's rule, windows of time and of calls, the
// open time, half-open trials, the listener and the metrics, keyed breakers, the spec grammar
// and its presets, and threads hammering one breaker (run under TSan).
#include "backoff/circuit_breaker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/hooks.hpp"
#include "backoff/keyed_breakers.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::breaker_config;
using backoff::breaker_kind;
using backoff::breaker_state;
using backoff::breaker_transition;
using backoff::circuit_breaker;
using backoff::duration;
using backoff::parse_breaker;

// One attempt: acquire, then record its result at the same time. Returns whether it was let
// through.
bool attempt(circuit_breaker& b, duration now, bool failure, bool first_try = true) {
  const auto p = b.try_acquire(now, first_try);
  if (p) b.record(now, p, failure);
  return static_cast<bool>(p);
}

// ---------------------------------------------------------------------------------------------
// Consecutive failures.

TEST(ConsecutiveBreaker, OpensAfterNFailuresInARowAndASuccessResetsTheCount) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=3, open=5s, half_open=1)")};
  EXPECT_TRUE(attempt(b, 0s, true));
  EXPECT_TRUE(attempt(b, 0s, true));
  EXPECT_TRUE(attempt(b, 0s, false));  // resets
  EXPECT_TRUE(attempt(b, 1s, true));
  EXPECT_TRUE(attempt(b, 1s, true));
  EXPECT_EQ(b.state(1s), breaker_state::closed);
  EXPECT_EQ(b.current_counts(1s).failures, 2u);
  EXPECT_TRUE(attempt(b, 2s, true));  // the third in a row
  EXPECT_EQ(b.state(2s), breaker_state::open);
  EXPECT_FALSE(b.try_acquire(2s, true));
  EXPECT_FALSE(b.try_acquire(3s, false));
}

TEST(ConsecutiveBreaker, StaysOpenForItsOpenTimeThenAdmitsTheTrials) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=5s, half_open=1)")};
  EXPECT_TRUE(attempt(b, 10s, true));
  EXPECT_EQ(b.state(15s - 1ns), breaker_state::open);
  EXPECT_FALSE(b.try_acquire(15s - 1ns, true));
  EXPECT_EQ(b.state(15s), breaker_state::half_open);  // what the next call finds
  const auto trial = b.try_acquire(15s, true);
  ASSERT_TRUE(trial);
  EXPECT_TRUE(trial.trial);
  EXPECT_FALSE(b.try_acquire(15s, true));  // one trial at a time
  EXPECT_FALSE(b.try_acquire(60s, true));
  b.record(16s, trial, false);
  EXPECT_EQ(b.state(16s), breaker_state::closed);
  EXPECT_TRUE(attempt(b, 16s, false));
}

TEST(ConsecutiveBreaker, HalfOpenClosesOnlyWhenAllTrialsSucceed) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=2, open=1s, half_open=3)")};
  attempt(b, 0s, true);
  attempt(b, 0s, true);
  ASSERT_EQ(b.state(0s), breaker_state::open);
  std::vector<circuit_breaker::permit> trials;
  for (int i = 0; i < 5; ++i) {
    const auto p = b.try_acquire(1s, true);
    if (p) trials.push_back(p);
  }
  ASSERT_EQ(trials.size(), 3u);
  b.record(1s, trials[0], false);
  b.record(1s, trials[1], false);
  EXPECT_EQ(b.state(1s), breaker_state::half_open);
  EXPECT_FALSE(b.try_acquire(1s, true));  // three admitted already
  b.record(1s, trials[2], false);
  EXPECT_EQ(b.state(1s), breaker_state::closed);
  // Closing clears the count: one failure does not reopen it.
  EXPECT_TRUE(attempt(b, 1s, true));
  EXPECT_EQ(b.state(1s), breaker_state::closed);
}

TEST(ConsecutiveBreaker, AFailedTrialReopensForAnotherOpenTime) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=5s, half_open=2)")};
  attempt(b, 0s, true);
  const auto t1 = b.try_acquire(5s, true);
  const auto t2 = b.try_acquire(5s, true);
  ASSERT_TRUE(t1 && t2);
  b.record(7s, t1, true);
  EXPECT_EQ(b.state(7s), breaker_state::open);
  b.record(7s, t2, false);  // that episode is over: ignored
  EXPECT_EQ(b.state(12s - 1ns), breaker_state::open);
  EXPECT_EQ(b.state(12s), breaker_state::half_open);
}

TEST(ConsecutiveBreaker, ResultsAdmittedByAnEarlierStateAreIgnored) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)")};
  const auto slow = b.try_acquire(0s, true);  // admitted while closed
  attempt(b, 0s, true);                       // opens
  const auto trial = b.try_acquire(1s, true);
  ASSERT_TRUE(trial.trial);
  b.record(1s, slow, true);  // the slow call fails now: not a trial, not counted
  EXPECT_EQ(b.state(1s), breaker_state::half_open);
  b.record(1s, trial, false);
  EXPECT_EQ(b.state(1s), breaker_state::closed);
  b.record(2s, slow, true);  // nor against the closed breaker that followed
  EXPECT_EQ(b.state(2s), breaker_state::closed);
}

TEST(ConsecutiveBreaker, AReleasedTrialGivesItsPlaceBack) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)")};
  attempt(b, 0s, true);
  const auto abandoned = b.try_acquire(1s, true);
  ASSERT_TRUE(abandoned.trial);
  EXPECT_FALSE(b.try_acquire(1s, true));
  b.release(abandoned);
  const auto next = b.try_acquire(1s, true);
  ASSERT_TRUE(next.trial);
  b.release(next);
  b.release(next);  // a second release of the same permit cannot make room for two
  const auto a = b.try_acquire(1s, true);
  EXPECT_TRUE(a);
  EXPECT_FALSE(b.try_acquire(1s, true));
}

// ---------------------------------------------------------------------------------------------
// Failure rate.

TEST(RateBreaker, WaitsForMinCallsThenOpensAtTheThreshold) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=4, open=5s, half_open=1)")};
  attempt(b, 0s, true);
  attempt(b, 1s, true);
  attempt(b, 2s, true);
  EXPECT_EQ(b.state(2s), breaker_state::closed);  // 3 of 3 failed, but fewer than min_calls
  attempt(b, 3s, false);                          // 3 of 4: 75 %
  EXPECT_EQ(b.state(3s), breaker_state::open);
}

TEST(RateBreaker, OpensAtExactlyTheThresholdAndNotBelow) {
  const auto config = parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=4, open=5s, half_open=1)");
  circuit_breaker below{config};
  for (const bool f : {false, true, false, false, true, false}) attempt(below, 1s, f);
  EXPECT_EQ(below.state(1s), breaker_state::closed);  // 2 of 6
  circuit_breaker at{config};
  for (const bool f : {false, true, false, true}) attempt(at, 1s, f);
  EXPECT_EQ(at.state(1s), breaker_state::open);  // 2 of 4 = 50 %: at the threshold opens
}

TEST(RateBreaker, FailuresOlderThanTheWindowAreForgotten) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=4, open=5s, half_open=1)")};
  for (int i = 0; i < 3; ++i) attempt(b, 0s, true);
  EXPECT_EQ(b.current_counts(0s).failures, 3u);
  EXPECT_EQ(b.current_counts(11s).calls, 0u);
  for (int i = 0; i < 3; ++i) attempt(b, 11s, false);
  attempt(b, 11s, true);  // 1 of 4 in the window; 4 of 7 had the old ones counted
  EXPECT_EQ(b.state(11s), breaker_state::closed);
}

TEST(RateBreaker, AWindowOfCallsCountsTheLastNCalls) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=75%, window=4calls, min_calls=4, open=5s, half_open=1)")};
  const std::vector<bool> calls{true, false, false, false, true, true};
  for (const bool f : calls) attempt(b, 0s, f);
  // The last four: false, false, true, true.
  EXPECT_EQ(b.current_counts(0s).calls, 4u);
  EXPECT_EQ(b.current_counts(0s).failures, 2u);
  EXPECT_EQ(b.state(0s), breaker_state::closed);
  attempt(b, 0s, true);  // false, true, true, true: 75 %
  EXPECT_EQ(b.state(0s), breaker_state::open);
}

TEST(RateBreaker, MinCallsAppliesToAWindowOfCalls) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10calls, min_calls=5, open=1s, half_open=1)")};
  for (int i = 0; i < 4; ++i) attempt(b, 0s, true);
  EXPECT_EQ(b.state(0s), breaker_state::closed);
  attempt(b, 0s, true);
  EXPECT_EQ(b.state(0s), breaker_state::open);
}

TEST(RateBreaker, ClosingClearsTheWindow) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=2, open=1s, half_open=1)")};
  attempt(b, 0s, true);
  attempt(b, 0s, true);
  ASSERT_EQ(b.state(0s), breaker_state::open);
  EXPECT_TRUE(attempt(b, 1s, false));  // the trial closes it
  EXPECT_EQ(b.state(1s), breaker_state::closed);
  EXPECT_EQ(b.current_counts(1s).calls, 0u);
  attempt(b, 1s, false);
  attempt(b, 1s, true);  // 1 of 2: 50 %, a fresh count
  EXPECT_EQ(b.state(1s), breaker_state::open);
}

// trials=ratio (jirfag/simulations' CircuitBreaker): the half-open trials decide together.

TEST(RateBreaker, TrialsRatioClosesDespiteAFailureBelowTheThreshold) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=2, open=1s, half_open=4, "
      "trials=ratio)")};
  attempt(b, 0s, true);
  attempt(b, 0s, true);
  ASSERT_EQ(b.state(0s), breaker_state::open);
  EXPECT_TRUE(attempt(b, 1s, true));  // a failed trial does not reopen it at once
  EXPECT_EQ(b.state(1s), breaker_state::half_open);
  EXPECT_TRUE(attempt(b, 1s, false));
  EXPECT_TRUE(attempt(b, 1s, false));
  EXPECT_EQ(b.state(1s), breaker_state::half_open);  // 3 of 4 answered
  EXPECT_TRUE(attempt(b, 1s, false));                // 1 of 4 failed: 25 % < 50 %
  EXPECT_EQ(b.state(1s), breaker_state::closed);
  EXPECT_EQ(b.current_counts(1s).calls, 0u);  // closing clears the window, as with `all`
}

TEST(RateBreaker, TrialsRatioReopensAtTheThreshold) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=2, open=1s, half_open=4, "
      "trials=ratio)")};
  attempt(b, 0s, true);
  attempt(b, 0s, true);
  ASSERT_EQ(b.state(0s), breaker_state::open);
  for (const bool f : {true, false, true}) EXPECT_TRUE(attempt(b, 1s, f));
  EXPECT_EQ(b.state(1s), breaker_state::half_open);
  EXPECT_TRUE(attempt(b, 1s, false));  // 2 of 4 failed: 50 %, at the threshold
  EXPECT_EQ(b.state(1s), breaker_state::open);
  EXPECT_FALSE(attempt(b, 1500ms, false));  // open for another second
  // The next half-open episode counts afresh.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(attempt(b, 2s, false));
  EXPECT_EQ(b.state(2s), breaker_state::closed);
}

TEST(RateBreaker, TrialsRatioAdmitsNoMoreThanHalfOpenTrialsAndTakesBackReleasedOnes) {
  circuit_breaker b{parse_breaker(
      "breaker(kind=rate, threshold=10%, window=10s, min_calls=1, open=1s, half_open=2, "
      "trials=ratio)")};
  attempt(b, 0s, true);
  ASSERT_EQ(b.state(0s), breaker_state::open);
  const auto p1 = b.try_acquire(1s, true);
  const auto p2 = b.try_acquire(1s, false);
  ASSERT_TRUE(p1 && p2);
  EXPECT_TRUE(p1.trial && p2.trial);
  EXPECT_FALSE(b.try_acquire(1s, true));  // both trials are out
  b.release(p2);
  const auto p3 = b.try_acquire(1s, true);
  ASSERT_TRUE(p3);
  b.record(1s, p1, false);
  EXPECT_EQ(b.state(1s), breaker_state::half_open);  // one answer of two
  b.record(1s, p3, false);
  EXPECT_EQ(b.state(1s), breaker_state::closed);
}

TEST(RateBreaker, TrialsAllIsTheDefaultAndReopensAtTheFirstFailure) {
  const auto c = parse_breaker("breaker(kind=rate, min_calls=2, open=1s, half_open=4)");
  EXPECT_EQ(c.trials, backoff::half_open_rule::all);
  EXPECT_EQ(parse_breaker("breaker(kind=rate, min_calls=2, open=1s, half_open=4, trials=all)"), c);
  circuit_breaker b{c};
  attempt(b, 0s, true);
  attempt(b, 0s, true);
  ASSERT_EQ(b.state(0s), breaker_state::open);
  EXPECT_TRUE(attempt(b, 1s, true));
  EXPECT_EQ(b.state(1s), breaker_state::open);
}

// ---------------------------------------------------------------------------------------------
// Retry-only (jirfag/simulations) and run-ratio (Brooker's retry_sim).

TEST(RetryOnlyBreaker, NeverBlocksAnAttempt) {
  circuit_breaker b{parse_breaker("breaker(kind=retry-only, threshold=10%, window=200ms)")};
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(attempt(b, 0ms, true, i % 2 == 0));
  }
  EXPECT_FALSE(b.retry_allowed(0ms));
  EXPECT_EQ(b.state(0ms), breaker_state::closed);
}

TEST(RetryOnlyBreaker, AnEmptyWindowRefusesRetries) {
  circuit_breaker b{parse_breaker("breaker(kind=retry-only, threshold=10%, window=200ms)")};
  EXPECT_FALSE(b.retry_allowed(0ms));
  attempt(b, 0ms, false);
  EXPECT_TRUE(b.retry_allowed(0ms));
  EXPECT_FALSE(b.retry_allowed(1s));  // the window has emptied again
}

TEST(RetryOnlyBreaker, RefusesAtOrAboveTheThreshold) {
  circuit_breaker b{parse_breaker("breaker(kind=retry-only, threshold=10%, window=200ms)")};
  for (int i = 0; i < 10; ++i) attempt(b, 10ms, false);
  attempt(b, 10ms, true);
  EXPECT_TRUE(b.retry_allowed(10ms));  // 1 of 11: below 10 %
  circuit_breaker at{b.config()};
  for (int i = 0; i < 9; ++i) attempt(at, 10ms, false);
  attempt(at, 10ms, true);
  EXPECT_FALSE(at.retry_allowed(10ms));  // 1 of 10: at 10 %
}

TEST(RetryOnlyBreaker, AWindowOfCallsForgetsAllButTheLastN) {
  circuit_breaker b{parse_breaker("breaker(kind=retry-only, threshold=50%, window=4calls)")};
  for (int i = 0; i < 4; ++i) attempt(b, 0s, true);
  EXPECT_FALSE(b.retry_allowed(0s));
  for (int i = 0; i < 3; ++i) attempt(b, 0s, false);
  EXPECT_TRUE(b.retry_allowed(0s));  // 1 of the last 4
}

TEST(RunRatioBreaker, ComparesFailedAttemptsWithFirstTriesSinceTheStart) {
  circuit_breaker b{parse_breaker("run-ratio-10pct")};
  EXPECT_FALSE(b.retry_allowed(0s));  // nothing counted yet
  for (int i = 0; i < 10; ++i) attempt(b, 0s, false, true);
  EXPECT_TRUE(b.retry_allowed(0s));
  EXPECT_TRUE(attempt(b, 0s, true, false));  // a retry that fails: 1 / 10, not above 10 %
  EXPECT_TRUE(b.retry_allowed(0s));
  EXPECT_EQ(b.current_counts(0s).calls, 10u);
  EXPECT_EQ(b.current_counts(0s).failures, 1u);
  EXPECT_TRUE(attempt(b, 1h, true, false));  // 2 / 10: above; time does not matter
  EXPECT_FALSE(b.retry_allowed(1h));
  for (int i = 0; i < 10; ++i) attempt(b, 2h, false, true);
  EXPECT_TRUE(b.retry_allowed(2h));  // 2 / 20
}

// ---------------------------------------------------------------------------------------------
// Transitions: the listener and the metrics.

TEST(BreakerTransitions, ReachTheListenerInOrderWithTheirTimes) {
  std::vector<breaker_transition> seen;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=2s, half_open=1)"),
                    [&](const breaker_transition& t) { seen.push_back(t); }};
  attempt(b, 1s, true);
  const auto trial = b.try_acquire(4s, true);
  b.record(5s, trial, true);
  attempt(b, 7s, false);
  ASSERT_EQ(seen.size(), 5u);
  const auto is = [](const breaker_transition& t, breaker_state from, breaker_state to,
                     duration at) { return t.from == from && t.to == to && t.at == at; };
  EXPECT_TRUE(is(seen[0], breaker_state::closed, breaker_state::open, 1s));
  EXPECT_TRUE(is(seen[1], breaker_state::open, breaker_state::half_open, 4s));
  EXPECT_TRUE(is(seen[2], breaker_state::half_open, breaker_state::open, 5s));
  EXPECT_TRUE(is(seen[3], breaker_state::open, breaker_state::half_open, 7s));
  EXPECT_TRUE(is(seen[4], breaker_state::half_open, breaker_state::closed, 7s));
}

TEST(BreakerTransitions, AreCountedInRetryMetricsAndPrinted) {
  backoff::retry_metrics metrics;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)"),
                    backoff::count_transitions(&metrics)};
  attempt(b, 0s, true);
  attempt(b, 1s, true);
  attempt(b, 2s, false);
  EXPECT_EQ(metrics.breaker_transitions[static_cast<std::size_t>(breaker_state::open)], 2u);
  EXPECT_EQ(metrics.breaker_transitions[static_cast<std::size_t>(breaker_state::half_open)], 2u);
  EXPECT_EQ(metrics.breaker_transitions[static_cast<std::size_t>(breaker_state::closed)], 1u);
  metrics.loops[static_cast<std::size_t>(backoff::outcome::breaker_open)] = 3;
  const std::string text = backoff::to_prometheus_text(metrics, "rpc");
  EXPECT_NE(text.find("# TYPE rpc_breaker_transitions_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("rpc_breaker_transitions_total{to=\"closed\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("rpc_breaker_transitions_total{to=\"open\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("rpc_breaker_transitions_total{to=\"half_open\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("rpc_loops_total{outcome=\"breaker_open\"} 3\n"), std::string::npos) << text;
}

// ---------------------------------------------------------------------------------------------
// Keyed breakers.

TEST(KeyedBreakers, TheSameKeyGivesTheSameBreaker) {
  backoff::keyed_breakers breakers{parse_breaker("breaker(keyed=true, max_keys=10)")};
  const auto a = breakers.get("host-a");
  EXPECT_EQ(breakers.get("host-a"), a);
  EXPECT_NE(breakers.get("host-b"), a);
  EXPECT_EQ(breakers.size(), 2u);
}

TEST(KeyedBreakers, OneKeyFailingLeavesTheOthersClosed) {
  backoff::keyed_breakers breakers{
      parse_breaker("breaker(kind=consecutive, failures=2, keyed=true, max_keys=10)")};
  attempt(*breakers.get("shard-1"), 0s, true);
  attempt(*breakers.get("shard-1"), 0s, true);
  EXPECT_EQ(breakers.get("shard-1")->state(0s), breaker_state::open);
  EXPECT_TRUE(attempt(*breakers.get("shard-2"), 0s, false));
}

TEST(KeyedBreakers, EvictsTheLeastRecentlyUsedAtTheBound) {
  std::vector<std::string> keys_seen;
  backoff::keyed_breakers breakers{
      parse_breaker("breaker(kind=consecutive, failures=1, keyed=true, max_keys=3)"),
      [&](std::string_view key, const breaker_transition&) { keys_seen.emplace_back(key); }};
  const auto a = breakers.get("a");
  const auto b = breakers.get("b");
  breakers.get("c");
  breakers.get("a");  // b is now the idlest
  breakers.get("d");
  EXPECT_EQ(breakers.size(), 3u);
  EXPECT_EQ(breakers.find("b"), nullptr);
  EXPECT_EQ(breakers.find("a"), a);
  EXPECT_NE(breakers.find("c"), nullptr);
  EXPECT_NE(breakers.find("d"), nullptr);
  // The evicted breaker stays usable by whoever holds it, and still reports its key.
  attempt(*b, 0s, true);
  EXPECT_EQ(b->state(0s), breaker_state::open);
  ASSERT_EQ(keys_seen.size(), 1u);
  EXPECT_EQ(keys_seen[0], "b");
  // It comes back fresh.
  EXPECT_NE(breakers.get("b"), b);
  EXPECT_EQ(breakers.get("b")->state(0s), breaker_state::closed);
  EXPECT_EQ(breakers.find("c"), nullptr);  // c was the idlest then
}

TEST(KeyedBreakers, NeverKeepMoreThanMaxKeys) {
  backoff::keyed_breakers breakers{parse_breaker("breaker(keyed=true, max_keys=1000)")};
  for (int i = 0; i < 5000; ++i) breakers.get("user-" + std::to_string(i));
  EXPECT_EQ(breakers.size(), 1000u);
  EXPECT_NE(breakers.find("user-4999"), nullptr);
  EXPECT_EQ(breakers.find("user-0"), nullptr);
}

TEST(KeyedBreakers, AWorkingSetOfMaxKeysEvictsNothing) {
  // Sharded (1000 keys): however the keys hash, the bound counts across the shards.
  backoff::keyed_breakers breakers{parse_breaker("breaker(keyed=true, max_keys=1000)")};
  std::vector<std::shared_ptr<circuit_breaker>> first;
  for (int i = 0; i < 1000; ++i) first.push_back(breakers.get("host-" + std::to_string(i)));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(breakers.get("host-" + std::to_string(i)), first[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(breakers.size(), 1000u);
}

// ---------------------------------------------------------------------------------------------
// The spec grammar.

std::string parse_error_of(std::string_view text) {
  try {
    (void)parse_breaker(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BreakerSpec, ReadsEachRowOfTheGrammar) {
  const auto c = parse_breaker("breaker(kind=consecutive, failures=5, open=5s, half_open=1)");
  EXPECT_EQ(c, breaker_config{});
  const auto r = parse_breaker(
      "breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s, half_open=3)");
  EXPECT_EQ(r.kind, breaker_kind::rate);
  EXPECT_EQ(r.threshold, 0.5);
  EXPECT_EQ(r.window, 10s);
  EXPECT_EQ(r.window_calls, 0u);
  EXPECT_EQ(r.min_calls, 20u);
  EXPECT_EQ(r.half_open, 3u);
  EXPECT_EQ(r, breaker_config::defaults(breaker_kind::rate));
  const auto calls = parse_breaker("breaker(kind=rate, window=100calls)");
  EXPECT_EQ(calls.window_calls, 100u);
  EXPECT_EQ(calls.window, 0s);
  const auto ro = parse_breaker("breaker(kind=retry-only, threshold=10%, window=200ms)");
  EXPECT_EQ(ro.kind, breaker_kind::retry_only);
  EXPECT_EQ(ro.threshold, 0.1);
  EXPECT_EQ(ro.window, 200ms);
  const auto rr = parse_breaker("breaker(kind=run-ratio, threshold=10%)");
  EXPECT_EQ(rr.kind, breaker_kind::run_ratio);
  EXPECT_EQ(rr.threshold, 0.1);
  const auto keyed = parse_breaker("breaker(kind=rate, keyed=true, max_keys=1000)");
  EXPECT_TRUE(keyed.keyed);
  EXPECT_EQ(keyed.max_keys, 1000u);
  EXPECT_EQ(parse_breaker("breaker(threshold=0.25, kind=rate)").threshold, 0.25);
}

TEST(BreakerSpec, CanonicalTextReadsBackEqual) {
  for (const char* text :
       {"breaker(kind=consecutive, failures=5, open=5s, half_open=1)",
        "breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s, half_open=3)",
        "breaker(kind=rate, threshold=12.5%, window=100calls, min_calls=20, open=1m, "
        "half_open=3)",
        "breaker(kind=retry-only, threshold=10%, window=200ms)",
        "breaker(kind=retry-only, threshold=33.3333%, window=50calls)",
        "breaker(kind=run-ratio, threshold=10%)",
        "breaker(kind=rate, threshold=10%, window=200ms, min_calls=100, open=100ms, "
        "half_open=100, trials=ratio)",
        "breaker(kind=consecutive, failures=5, open=5s, half_open=1, keyed=true, max_keys=7)"}) {
    const breaker_config c = parse_breaker(text);
    EXPECT_EQ(c.to_string(), text);
    EXPECT_EQ(parse_breaker(c.to_string()), c);
  }
  EXPECT_EQ(parse_breaker("breaker").to_string(),
            "breaker(kind=consecutive, failures=5, open=5s, half_open=1)");
  EXPECT_EQ(parse_breaker("breaker(kind=rate, threshold=0.3)").to_string(),
            "breaker(kind=rate, threshold=30%, window=10s, min_calls=20, open=5s, half_open=3)");
}

TEST(BreakerSpec, PresetsAreSpecNamesAndTakeOverrides) {
  EXPECT_EQ(parse_breaker("retry-only-10pct"),
            parse_breaker("breaker(kind=retry-only, threshold=10%, window=200ms)"));
  EXPECT_EQ(parse_breaker("run-ratio-10pct"),
            parse_breaker("breaker(kind=run-ratio, threshold=10%)"));
  const auto wider = parse_breaker("retry-only-10pct(window=1s)");
  EXPECT_EQ(wider.window, 1s);
  EXPECT_EQ(wider.threshold, 0.1);
  EXPECT_EQ(parse_breaker("run-ratio-10pct(threshold=20%, keyed=true)").to_string(),
            "breaker(kind=run-ratio, threshold=20%, keyed=true, max_keys=1000)");
}

TEST(BreakerSpec, ErrorsAreOneLineNamingTheBadPart) {
  EXPECT_EQ(parse_error_of("breaker(kind=rate, failures=5)"),
            "bad breaker \"breaker(kind=rate, failures=5)\": parameter \"failures\" does not "
            "apply to kind=rate (it takes threshold, window, min_calls, open, open_growth, "
            "open_max, half_open, trials, slow, slow_threshold, keyed, max_keys)");
  EXPECT_EQ(parse_error_of("breaker(kind=run-ratio, window=1s)"),
            "bad breaker \"breaker(kind=run-ratio, window=1s)\": parameter \"window\" does not "
            "apply to kind=run-ratio (it takes threshold, keyed, max_keys)");
  EXPECT_EQ(parse_error_of("breaker(kind=fast)"),
            "bad breaker \"breaker(kind=fast)\": kind=fast is not a breaker kind (known: "
            "consecutive, rate, retry-only, run-ratio)");
  EXPECT_EQ(
      parse_error_of("breaker(failurs=5)"),
      "bad breaker \"breaker(failurs=5)\": unknown parameter \"failurs\" (known: kind, "
      "failures, threshold, window, min_calls, open, open_growth, open_max, half_open, trials, "
      "slow, slow_threshold, keyed, max_keys); did you mean 'failures'?");
  EXPECT_EQ(parse_error_of("breaker(max_keys=10)"),
            "bad breaker \"breaker(max_keys=10)\": parameter \"max_keys\" applies only with "
            "keyed=true");
  EXPECT_EQ(parse_error_of("breaker(kind=rate, window=10calls)"),
            "bad breaker \"breaker(kind=rate, window=10calls)\": min_calls=20 is more than "
            "window=10calls: the breaker could never open");
  EXPECT_EQ(parse_error_of("retry-only-10pct(kind=rate)"),
            "bad breaker \"retry-only-10pct(kind=rate)\": parameter \"kind\" is fixed by the "
            "preset retry-only-10pct (it is kind=retry-only)");
  EXPECT_EQ(parse_error_of("breaker(kind=run-ratio, threshold=0%)"),
            "bad breaker \"breaker(kind=run-ratio, threshold=0%)\": threshold=0% must be in "
            "(0%, 100%]");
  EXPECT_EQ(parse_error_of("breaker(failures=0)"),
            "bad breaker \"breaker(failures=0)\": failures=0 must be a whole number in "
            "1..1000000");
  EXPECT_EQ(parse_error_of("breaker(half_open=2.5)"),
            "bad breaker \"breaker(half_open=2.5)\": half_open=2.5 must be a whole number in "
            "1..1000");
  EXPECT_EQ(parse_error_of("breaker(kind=rate, window=0calls)"),
            "bad breaker \"breaker(kind=rate, window=0calls)\": window=0calls must be "
            "1calls..1000000calls");
  EXPECT_EQ(parse_error_of("breaker(kind=rate, threshold=12.34567%)"),
            "bad breaker \"breaker(kind=rate, threshold=12.34567%)\": threshold=12.34567% is "
            "finer than a millionth (4 decimals of a percent)");
  EXPECT_EQ(parse_error_of("breaker(open=0s)"),
            "bad breaker \"breaker(open=0s)\": open=0s must be in (0, 1d]");
  EXPECT_EQ(parse_error_of("breaker(trials=ratio)"),
            "bad breaker \"breaker(trials=ratio)\": parameter \"trials\" does not apply to "
            "kind=consecutive (it takes failures, open, open_growth, open_max, half_open, keyed, "
            "max_keys)");
  EXPECT_EQ(parse_error_of("breaker(kind=rate, trials=most)"),
            "bad breaker \"breaker(kind=rate, trials=most)\": trials=most is not a half-open "
            "rule (known: all, ratio)");
  EXPECT_EQ(parse_error_of("circuit(failures=1)"),
            "bad breaker \"circuit(failures=1)\": unknown breaker \"circuit\" (known: breaker, "
            "retry-only-10pct, run-ratio-10pct)");
  for (const char* text : {"breaker(kind=rate, failures=5)", "breaker(kind=\"x\ny\")"}) {
    EXPECT_EQ(parse_error_of(text).find('\n'), std::string::npos) << text;
  }
}

TEST(BreakerSpec, ConfigsBuiltInCodeAreCheckedToo) {
  breaker_config c;
  c.kind = breaker_kind::run_ratio;
  c.failures = 3;
  EXPECT_THROW(c.validate(), backoff::parse_error);
  try {
    c.validate();
  } catch (const backoff::parse_error& e) {
    EXPECT_STREQ(e.what(), "failures=3 does not apply to kind=run-ratio");
  }
  breaker_config both = breaker_config::defaults(breaker_kind::rate);
  both.window_calls = 10;
  both.min_calls = 5;
  EXPECT_THROW(circuit_breaker{both}, backoff::parse_error);  // window=10s and 10calls
  EXPECT_THROW(backoff::keyed_breakers{both}, backoff::parse_error);
  breaker_config ratio_on_consecutive;
  ratio_on_consecutive.trials = backoff::half_open_rule::ratio;
  EXPECT_THROW(ratio_on_consecutive.validate(), backoff::parse_error);
}

// ---------------------------------------------------------------------------------------------
// Threads (the TSan build checks this one for races).

TEST(BreakerThreads, HammeringKeepsTheInvariants) {
  constexpr int threads = 4;
  constexpr int rounds = 20000;
  constexpr std::uint32_t half_open = 2;
  std::vector<breaker_transition> transitions;  // appended under the breaker's lock
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=3, open=1ms, half_open=2)"),
                    [&](const breaker_transition& t) { transitions.push_back(t); }};
  circuit_breaker rate{parse_breaker(
      "breaker(kind=rate, threshold=50%, window=64calls, min_calls=8, open=1ms, half_open=2)")};
  std::atomic<std::int64_t> clock{0};
  std::vector<std::vector<std::uint64_t>> trial_generations(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::uint64_t x = 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(t + 1);
      for (int i = 0; i < rounds; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const duration now{
            clock.fetch_add(static_cast<std::int64_t>(x % 50'000), std::memory_order_relaxed)};
        const bool failure = x % 3 == 0;
        for (circuit_breaker* which : {&b, &rate}) {
          const auto p = which->try_acquire(now, i % 4 == 0);
          if (!p) continue;
          if (p.trial && which == &b) trial_generations[t].push_back(p.generation);
          if (x % 97 == 0 && which == &rate) {  // abandoned: only here, so b's bound is exact
            which->release(p);
          } else {
            which->record(now, p, failure);
          }
          const auto c = which->current_counts(now);
          EXPECT_LE(c.failures, c.calls);
        }
        EXPECT_LE(rate.current_counts(now).calls, 64u);
      }
    });
  }
  for (auto& th : pool) th.join();
  // No half-open episode admitted more than half_open trials.
  std::map<std::uint64_t, std::uint32_t> per_generation;
  for (const auto& v : trial_generations) {
    for (const std::uint64_t g : v) ++per_generation[g];
  }
  EXPECT_FALSE(per_generation.empty());
  for (const auto& [g, n] : per_generation) EXPECT_LE(n, half_open) << "generation " << g;
  // The transitions chain: each starts where the previous ended, along allowed edges.
  ASSERT_FALSE(transitions.empty());
  breaker_state at = breaker_state::closed;
  for (const auto& tr : transitions) {
    EXPECT_EQ(tr.from, at);
    const bool allowed = (tr.from == breaker_state::closed && tr.to == breaker_state::open) ||
                         (tr.from == breaker_state::open && tr.to == breaker_state::half_open) ||
                         (tr.from == breaker_state::half_open && tr.to != breaker_state::half_open);
    EXPECT_TRUE(allowed);
    at = tr.to;
  }
}

}  // namespace
