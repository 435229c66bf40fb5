// SPDX-License-Identifier: Apache-2.0
// The breaker's manual states (resilience4j's transitionToForcedOpenState,
// transitionToDisabledState, transitionToMetricsOnlyState and reset; Polly's Isolate and
// Close), open_remaining for Retry-After, state() on the steady clock, and threads racing manual
// transitions against try_acquire and record (run under TSan). The resilience4j cases replay
// resilience4j-circuitbreaker/src/test/java/io/github/resilience4j/circuitbreaker/internal/
// CircuitBreakerStateMachineTest.java.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/hooks.hpp"
#include "backoff/retry.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::breaker_state;
using backoff::breaker_transition;
using backoff::circuit_breaker;
using backoff::duration;
using backoff::parse_breaker;

bool manual_attempt(circuit_breaker& b, duration now, bool failure, bool first_try = true) {
  const auto p = b.try_acquire(now, first_try);
  if (p) b.record(now, p, failure);
  return static_cast<bool>(p);
}

bool manual_is(const breaker_transition& t, breaker_state from, breaker_state to, duration at) {
  return t.from == from && t.to == to && t.at == at;
}

// CircuitBreakerStateMachineTest.shouldThrowCallNotPermittedExceptionWhenStateIsForcedOpen.
TEST(BreakerManualStates, ForcedOpenRefusesEveryAttemptUntilReset) {
  std::vector<breaker_transition> seen;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)"),
                    [&](const breaker_transition& t) { seen.push_back(t); }};
  b.force_open(1s);
  EXPECT_EQ(b.state(1s), breaker_state::forced_open);
  EXPECT_FALSE(b.try_acquire(1s, true));
  EXPECT_FALSE(b.try_acquire(1h, false));  // no open time ends it
  EXPECT_EQ(b.state(1h), breaker_state::forced_open);
  EXPECT_FALSE(b.retry_allowed(1h));
  EXPECT_EQ(b.open_remaining(1h), std::nullopt);
  b.force_open(2h);  // already: nothing happens
  b.reset(2h);
  EXPECT_EQ(b.state(2h), breaker_state::closed);
  EXPECT_TRUE(manual_attempt(b, 2h, false));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(manual_is(seen[0], breaker_state::closed, breaker_state::forced_open, 1s));
  EXPECT_TRUE(manual_is(seen[1], breaker_state::forced_open, breaker_state::closed, 2h));
}

TEST(BreakerManualStates, ForcedOpenOverridesAnOpenOrHalfOpenBreaker) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=2)")};
  manual_attempt(b, 0s, true);
  const auto trial = b.try_acquire(1s, true);
  ASSERT_TRUE(trial.trial);
  b.force_open(1s);
  b.record(1s, trial, false);  // of the half-open episode: ignored
  EXPECT_EQ(b.state(10s), breaker_state::forced_open);
  EXPECT_FALSE(b.try_acquire(10s, true));
}

// CircuitBreakerStateMachineTest.shouldResetToClosedState and shouldResetClosedState.
TEST(BreakerManualStates, ResetClosesAnOpenBreakerAndClearsAClosedOnesCounts) {
  std::vector<breaker_transition> seen;
  circuit_breaker b{parse_breaker("breaker(kind=rate, window=10calls, min_calls=4, open=1m)"),
                    [&](const breaker_transition& t) { seen.push_back(t); }};
  manual_attempt(b, 0s, false);
  manual_attempt(b, 0s, false);
  EXPECT_EQ(b.current_counts(0s).calls, 2u);
  b.reset(1s);  // closed already: counts cleared, no transition
  EXPECT_EQ(b.current_counts(1s).calls, 0u);
  EXPECT_TRUE(seen.empty());
  for (int i = 0; i < 4; ++i) manual_attempt(b, 2s, true);
  ASSERT_EQ(b.state(2s), breaker_state::open);
  b.reset(3s);
  EXPECT_EQ(b.state(3s), breaker_state::closed);
  EXPECT_EQ(b.current_counts(3s).calls, 0u);
  EXPECT_TRUE(manual_attempt(b, 3s, true));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(manual_is(seen[1], breaker_state::open, breaker_state::closed, 3s));
}

TEST(BreakerManualStates, DisabledAdmitsEverythingAndCountsNothing) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=2, open=1s, half_open=1)")};
  manual_attempt(b, 0s, true);
  EXPECT_EQ(b.current_counts(0s).failures, 1u);
  const auto before = b.try_acquire(0s, true);  // admitted while closed, recorded after
  b.disable(0s);
  EXPECT_EQ(b.state(0s), breaker_state::disabled);
  EXPECT_EQ(b.current_counts(0s).failures, 0u);  // fresh, as resilience4j's DisabledState
  b.record(0s, before, true);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(manual_attempt(b, 1s, true));
  EXPECT_EQ(b.current_counts(1s).failures, 0u);
  EXPECT_EQ(b.state(1s), breaker_state::disabled);
  EXPECT_TRUE(b.retry_allowed(1s));
  EXPECT_EQ(b.open_remaining(1s), duration{0});
}

// CircuitBreakerStateMachineTest.shouldRecordMetricsInMetricsOnlyState: three failures of five
// calls (60 %) with a window of 5 and a threshold of 50 %: counted, never opened, no transition
// after the one into metrics-only.
TEST(BreakerManualStates, MetricsOnlyCountsButNeverOpens) {
  std::vector<breaker_transition> seen;
  circuit_breaker b{
      parse_breaker("breaker(kind=rate, threshold=50%, window=5calls, min_calls=5, open=5s)"),
      [&](const breaker_transition& t) { seen.push_back(t); }};
  b.metrics_only(0s);
  EXPECT_EQ(b.state(0s), breaker_state::metrics_only);
  const bool failures[] = {true, true, true, false, false};
  for (std::size_t i = 0; i < std::size(failures); ++i) {
    EXPECT_TRUE(manual_attempt(b, 1s, failures[i]));
    EXPECT_EQ(b.current_counts(1s).calls, i + 1);
  }
  EXPECT_EQ(b.current_counts(1s).failures, 3u);
  EXPECT_EQ(b.state(1s), breaker_state::metrics_only);
  EXPECT_TRUE(manual_attempt(b, 1s, true));
  EXPECT_EQ(b.state(1s), breaker_state::metrics_only);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(manual_is(seen[0], breaker_state::closed, breaker_state::metrics_only, 0s));
  // Back to closed, the same calls open it.
  b.reset(2s);
  for (const bool f : failures) manual_attempt(b, 2s, f);
  EXPECT_EQ(b.state(2s), breaker_state::open);
}

// CircuitBreakerStateMachineTest.shouldResetMetricsAfterMetricsOnlyStateTransition.
TEST(BreakerManualStates, EnteringMetricsOnlyStartsWithFreshCounts) {
  circuit_breaker b{parse_breaker("breaker(kind=rate, window=5calls, min_calls=5)")};
  manual_attempt(b, 0s, false);
  manual_attempt(b, 0s, false);
  b.metrics_only(0s);
  EXPECT_EQ(b.current_counts(0s).calls, 0u);
}

TEST(BreakerManualStates, MetricsOnlyConsecutiveCountsPastTheThreshold) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=2, open=1s, half_open=1)")};
  b.metrics_only(0s);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(manual_attempt(b, 0s, true));
  EXPECT_EQ(b.current_counts(0s).failures, 5u);
  EXPECT_EQ(b.state(0s), breaker_state::metrics_only);
}

TEST(BreakerManualStates, TheRetryKindsTakeManualStatesToo) {
  circuit_breaker run_ratio{parse_breaker("breaker(kind=run-ratio, threshold=10%)")};
  manual_attempt(run_ratio, 0s, false);
  EXPECT_TRUE(run_ratio.retry_allowed(0s));
  run_ratio.force_open(0s);
  EXPECT_EQ(run_ratio.state(0s), breaker_state::forced_open);
  EXPECT_FALSE(run_ratio.try_acquire(0s, true));
  EXPECT_FALSE(run_ratio.retry_allowed(0s));
  run_ratio.disable(0s);
  EXPECT_EQ(run_ratio.current_counts(0s).calls, 0u);
  manual_attempt(run_ratio, 0s, true);
  EXPECT_EQ(run_ratio.current_counts(0s).calls, 0u);  // disabled counts no first try
  EXPECT_EQ(run_ratio.current_counts(0s).failures, 0u);
  EXPECT_TRUE(run_ratio.retry_allowed(0s));
  run_ratio.metrics_only(0s);
  manual_attempt(run_ratio, 0s, true);
  manual_attempt(run_ratio, 0s, true, false);
  EXPECT_EQ(run_ratio.current_counts(0s).calls, 1u);
  EXPECT_EQ(run_ratio.current_counts(0s).failures, 2u);
  EXPECT_TRUE(run_ratio.retry_allowed(0s));  // 200 %, but metrics-only never refuses
  run_ratio.reset(0s);
  EXPECT_EQ(run_ratio.state(0s), breaker_state::closed);
  EXPECT_EQ(run_ratio.current_counts(0s).calls, 0u);
  EXPECT_FALSE(run_ratio.retry_allowed(0s));  // nothing counted: refuses, as before

  circuit_breaker retry_only{parse_breaker("breaker(kind=retry-only, threshold=50%)")};
  retry_only.disable(0s);
  manual_attempt(retry_only, 0s, false);
  EXPECT_EQ(retry_only.current_counts(0s).calls, 0u);
  retry_only.reset(0s);
  manual_attempt(retry_only, 0s, false);
  EXPECT_EQ(retry_only.current_counts(0s).calls, 1u);
}

TEST(BreakerManualStates, EveryManualTransitionReachesTheListenerAndTheMetrics) {
  backoff::retry_metrics metrics;
  std::vector<breaker_transition> seen;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)"),
                    [&](const breaker_transition& t) {
                      seen.push_back(t);
                      backoff::count_transitions (&metrics)(t);
                    }};
  b.disable(1s);
  b.metrics_only(2s);
  b.force_open(3s);
  b.disable(4s);
  b.reset(5s);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_TRUE(manual_is(seen[0], breaker_state::closed, breaker_state::disabled, 1s));
  EXPECT_TRUE(manual_is(seen[1], breaker_state::disabled, breaker_state::metrics_only, 2s));
  EXPECT_TRUE(manual_is(seen[2], breaker_state::metrics_only, breaker_state::forced_open, 3s));
  EXPECT_TRUE(manual_is(seen[3], breaker_state::forced_open, breaker_state::disabled, 4s));
  EXPECT_TRUE(manual_is(seen[4], breaker_state::disabled, breaker_state::closed, 5s));
  EXPECT_EQ(metrics.breaker_transitions[static_cast<std::size_t>(breaker_state::disabled)], 2u);
  EXPECT_EQ(to_string(breaker_state::forced_open), "forced_open");
  EXPECT_EQ(to_string(breaker_state::metrics_only), "metrics_only");
  EXPECT_NE(backoff::to_prometheus_text(metrics, "rpc")
                .find("rpc_breaker_transitions_total{to=\"disabled\"} 2\n"),
            std::string::npos);
}

// failsafe-go's openState.remainingDelay: the delay less the time elapsed, at least 0.
TEST(BreakerOpenRemaining, CountsDownTheOpenTimeForRetryAfter) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=5s, half_open=1)")};
  EXPECT_EQ(b.open_remaining(0s), duration{0});
  manual_attempt(b, 10s, true);
  EXPECT_EQ(b.open_remaining(10s), duration{5s});
  EXPECT_EQ(b.open_remaining(12s + 500ms), duration{2500ms});
  EXPECT_EQ(b.open_remaining(15s), duration{0});  // the next attempt half-opens it
  const auto trial = b.try_acquire(15s, true);
  EXPECT_EQ(b.open_remaining(15s), duration{0});  // half-open
  b.record(16s, trial, true);
  EXPECT_EQ(b.open_remaining(16s), duration{5s});
}

// The no-argument overloads read steady_clock, as the retry loops' default env does.
TEST(BreakerSteadyClock, StateWithoutNowAgreesWithTheLoopsDefaultClock) {
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1h, half_open=1)")};
  EXPECT_EQ(b.state(), breaker_state::closed);
  manual_attempt(b, backoff::detail::steady_now(), true);
  EXPECT_EQ(b.state(), breaker_state::open);
  EXPECT_EQ(b.state(), b.state(backoff::detail::steady_now()));
  const std::optional<duration> left = b.open_remaining();
  ASSERT_TRUE(left.has_value());
  EXPECT_GT(*left, duration{0});
  EXPECT_LE(*left, duration{1h});
  // retry_env's default `now` is that same clock: read between two readings of it.
  const duration before = backoff::detail::steady_now();
  const duration env_now = backoff::retry_env{}.now();
  const duration after = backoff::detail::steady_now();
  EXPECT_LE(before, env_now);
  EXPECT_LE(env_now, after);
}

// Threads race try_acquire and record against manual transitions between forced open and
// disabled: nothing is admitted while forced open, and nothing is ever counted.
TEST(BreakerManualThreads, ForcedOpenAdmitsNothingAndDisabledCountsNothing) {
  constexpr int workers = 3;
  constexpr int rounds = 5000;
  std::vector<breaker_state> state_of_generation{breaker_state::closed};  // under b's lock
  circuit_breaker b{
      parse_breaker("breaker(kind=rate, threshold=50%, window=100calls, min_calls=1, open=1s)"),
      [&](const breaker_transition& t) { state_of_generation.push_back(t.to); }};
  b.disable(0s);
  std::atomic<bool> done{false};
  std::vector<std::vector<std::uint64_t>> admitted(workers);
  std::vector<std::thread> pool;
  for (int t = 0; t < workers; ++t) {
    pool.emplace_back([&, t] {
      // Past `rounds` until admitted once: a worker that ran its rounds while the controller was
      // descheduled in a forced-open moment (a loaded machine) would check nothing.
      auto& mine = admitted[static_cast<std::size_t>(t)];
      for (int i = 0; i < rounds || (mine.empty() && i < 50'000'000); ++i) {
        const auto p = b.try_acquire(duration{i}, true);
        if (!p) continue;
        mine.push_back(p.generation);
        b.record(duration{i}, p, i % 2 == 0);
        EXPECT_EQ(b.current_counts(duration{i}).calls, 0u);
      }
    });
  }
  std::thread controller([&] {
    for (int i = 0; !done.load(); ++i) {
      if (i % 2 == 0) {
        b.force_open(duration{i});
      } else {
        b.disable(duration{i});
      }
    }
  });
  for (auto& th : pool) th.join();
  done = true;
  controller.join();
  EXPECT_EQ(b.current_counts(0s).calls, 0u);
  std::size_t total = 0;
  for (const auto& v : admitted) {
    for (const std::uint64_t g : v) {
      ASSERT_LT(g, state_of_generation.size());
      EXPECT_EQ(state_of_generation[g], breaker_state::disabled) << "generation " << g;
    }
    total += v.size();
  }
  EXPECT_GT(total, 0u);
}

// Threads race records against metrics-only and reset: counts never exceed the window, the
// breaker never opens by itself, and once the racing stops the counts are exact.
TEST(BreakerManualThreads, MetricsOnlyAndResetRacingRecordsKeepExactCounts) {
  constexpr int workers = 3;
  constexpr int rounds = 4000;
  std::atomic<int> opened{0};
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1000000, open=1s)"),
                    [&](const breaker_transition& t) {
                      if (t.to == breaker_state::open) opened.fetch_add(1);
                    }};
  std::atomic<bool> done{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < workers; ++t) {
    pool.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) EXPECT_TRUE(manual_attempt(b, duration{i}, true));
    });
  }
  std::thread controller([&] {
    for (int i = 0; !done.load(); ++i) {
      if (i % 2 == 0) {
        b.metrics_only(duration{i});
      } else {
        b.reset(duration{i});
      }
    }
  });
  for (auto& th : pool) th.join();
  done = true;
  controller.join();
  EXPECT_LE(b.current_counts(0s).failures, std::uint64_t{workers} * rounds);
  EXPECT_EQ(opened.load(), 0);
  b.metrics_only(0s);
  b.reset(0s);
  std::vector<std::thread> quiet;
  for (int t = 0; t < workers; ++t) {
    quiet.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) manual_attempt(b, duration{i}, true);
    });
  }
  for (auto& th : quiet) th.join();
  EXPECT_EQ(b.current_counts(0s).failures, std::uint64_t{workers} * rounds);
}

}  // namespace
