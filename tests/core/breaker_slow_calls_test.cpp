// SPDX-License-Identifier: Apache-2.0
// Slow calls in the rate breaker (resilience4j's slowCallDurationThreshold and
// slowCallRateThreshold): what counts as slow, the two rates that open it, slow half-open
// trials, windows of time and of calls, and the spec keys. The resilience4j cases replay
// resilience4j-circuitbreaker/src/test/java/io/github/resilience4j/circuitbreaker/internal/
// CircuitBreakerStateMachineTest.java (its numbers, on manual time values).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/circuit_breaker.hpp"
#include "backoff/error.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::breaker_state;
using backoff::circuit_breaker;
using backoff::duration;
using backoff::parse_breaker;

// resilience4j's CircuitBreakerStateMachineTest setUp: failureRateThreshold 50,
// permittedNumberOfCallsInHalfOpenState 4, slowCallDurationThreshold 4 s, slowCallRateThreshold
// 50, a TIME_BASED window of 20 s with minimumNumberOfCalls 5, waitDurationInOpenState 5 s.
constexpr std::string_view slow_r4j_setup =
    "breaker(kind=rate, threshold=50%, window=20s, min_calls=5, open=5s, half_open=4, slow=4s, "
    "slow_threshold=50%)";

// A call that starts at `start` and ends `length` later with `failure`; whether it was admitted.
bool slow_call(circuit_breaker& b, duration start, duration length, bool failure) {
  const auto p = b.try_acquire(start, true);
  if (p) b.record(start + length, p, failure);
  return static_cast<bool>(p);
}

std::string slow_parse_error(std::string_view text) {
  try {
    (void)parse_breaker(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

// CircuitBreakerStateMachineTest.shouldOpenAfterSlowCallRateThresholdExceeded: two of five calls
// fail (40 %, under 50 %) but three of five are slow (60 %): it opens on the fifth.
TEST(BreakerSlowCalls, OpensOnTheSlowCallRateBelowTheFailureRate) {
  std::vector<backoff::breaker_transition> seen;
  circuit_breaker b{parse_breaker(slow_r4j_setup),
                    [&](const backoff::breaker_transition& t) { seen.push_back(t); }};
  EXPECT_TRUE(slow_call(b, 0s, 5s, true));         // 1: slow failure
  EXPECT_TRUE(slow_call(b, 5s, 5s, false));        // 2: slow success
  EXPECT_TRUE(slow_call(b, 10s, 100ms, true));     // 3: fast failure
  EXPECT_TRUE(slow_call(b, 11s, 100ms, false));    // 4: fast success
  EXPECT_EQ(b.state(12s), breaker_state::closed);  // 4 calls, fewer than min_calls
  const auto c4 = b.current_counts(12s);
  EXPECT_EQ(c4.calls, 4u);
  EXPECT_EQ(c4.failures, 2u);
  EXPECT_EQ(c4.slow, 2u);
  EXPECT_TRUE(slow_call(b, 12s, 5s, false));  // 5: slow success, 3 of 5 slow
  EXPECT_EQ(b.state(17s), breaker_state::open);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].to, breaker_state::open);
  EXPECT_EQ(seen[0].at, 17s);
}

// CircuitBreakerStateMachineTest.shouldOpenAfterSlowCallRateThresholdExceededUsingMockClock: all
// succeed; 5 s, 5 s, 1 s, 1 s, 5 s calls back to back, with the slow count after each.
TEST(BreakerSlowCalls, CountsSlowSuccessesBackToBackAsTheMockClockCase) {
  circuit_breaker b{parse_breaker(slow_r4j_setup)};
  const duration lengths[] = {5s, 5s, 1s, 1s, 5s};
  const std::uint64_t slow_after[] = {1, 2, 2, 2, 3};
  duration now = 0s;
  for (std::size_t i = 0; i < std::size(lengths); ++i) {
    EXPECT_TRUE(slow_call(b, now, lengths[i], false));
    now += lengths[i];
    EXPECT_EQ(b.current_counts(now).calls, i + 1) << i;
    EXPECT_EQ(b.current_counts(now).slow, slow_after[i]) << i;
    EXPECT_EQ(b.state(now), i < 4 ? breaker_state::closed : breaker_state::open) << i;
  }
}

// resilience4j's CircuitBreakerMetrics.onSuccess/onError: `duration > threshold` is slow, so a
// call of exactly `slow` is not.
TEST(BreakerSlowCalls, ACallOfExactlySlowIsNotSlow) {
  circuit_breaker b{
      parse_breaker("breaker(kind=rate, threshold=100%, window=10calls, min_calls=2, slow=2s, "
                    "slow_threshold=50%)")};
  EXPECT_TRUE(slow_call(b, 0s, 2s, false));
  EXPECT_TRUE(slow_call(b, 2s, 2s, false));
  EXPECT_EQ(b.current_counts(4s).slow, 0u);
  EXPECT_EQ(b.state(4s), breaker_state::closed);
  EXPECT_TRUE(slow_call(b, 4s, 2s + 1ns, false));
  EXPECT_EQ(b.current_counts(6s).slow, 1u);
  EXPECT_EQ(b.state(6s), breaker_state::closed);  // 1 of 3 slow: 33 %
  EXPECT_TRUE(slow_call(b, 7s, 3s, false));       // 2 of 4: at the threshold opens
  EXPECT_EQ(b.state(10s), breaker_state::open);
}

// CircuitBreakerStateMachineTest.shouldTransitionBackToOpenStateWhenSlowCallRateIsAboveThreshold:
// four half-open trials all succeed, three slow (75 %): it reopens.
TEST(BreakerSlowCalls, SlowTrialsReopenAHalfOpenBreakerOnceAllAnswered) {
  circuit_breaker b{parse_breaker(slow_r4j_setup)};
  for (int i = 0; i < 5; ++i) slow_call(b, 0s, 0s, true);  // 5 of 5 failed
  ASSERT_EQ(b.state(0s), breaker_state::open);
  std::vector<circuit_breaker::permit> trials;
  for (int i = 0; i < 4; ++i) trials.push_back(b.try_acquire(5s, true));
  for (const auto& p : trials) ASSERT_TRUE(p.trial);
  EXPECT_FALSE(b.try_acquire(5s, true));  // the fifth is refused
  b.record(10s, trials[0], false);
  b.record(10s, trials[1], false);
  b.record(10s, trials[2], false);
  EXPECT_EQ(b.state(10s), breaker_state::half_open);  // not all answered yet
  b.record(6s, trials[3], false);                     // 1 s: fast
  EXPECT_EQ(b.state(6s), breaker_state::open);
  EXPECT_EQ(b.open_remaining(6s), duration{5s});
}

TEST(BreakerSlowCalls, FewSlowTrialsBelowTheSlowThresholdClose) {
  circuit_breaker b{parse_breaker(slow_r4j_setup)};
  for (int i = 0; i < 5; ++i) slow_call(b, 0s, 0s, true);
  std::vector<circuit_breaker::permit> trials;
  for (int i = 0; i < 4; ++i) trials.push_back(b.try_acquire(5s, true));
  b.record(10s, trials[0], false);  // one slow of four: 25 %
  for (int i = 1; i < 4; ++i) b.record(6s, trials[static_cast<std::size_t>(i)], false);
  EXPECT_EQ(b.state(10s), breaker_state::closed);
  EXPECT_EQ(b.current_counts(10s).slow, 0u);  // closing cleared the window
}

// trials=ratio: both rates over all the trials, as resilience4j's HalfOpenState does.
TEST(BreakerSlowCalls, TrialsRatioJudgesBothRatesOverAllTrials) {
  const std::string spec =
      "breaker(kind=rate, threshold=50%, window=10calls, min_calls=2, open=1s, half_open=4, "
      "trials=ratio, slow=1s, slow_threshold=75%)";
  circuit_breaker slow_heavy{parse_breaker(spec)};
  circuit_breaker slow_light{parse_breaker(spec)};
  for (circuit_breaker* b : {&slow_heavy, &slow_light}) {
    slow_call(*b, 0s, 0s, true);
    slow_call(*b, 0s, 0s, true);
    ASSERT_EQ(b->state(0s), breaker_state::open);
  }
  // One failure (25 %) in each; three slow trials (75 %) in one, two (50 %) in the other.
  const auto run_trials = [](circuit_breaker& b, int slow_trials) {
    std::vector<circuit_breaker::permit> trials;
    for (int i = 0; i < 4; ++i) trials.push_back(b.try_acquire(1s, true));
    for (int i = 0; i < 4; ++i) {
      b.record(i < slow_trials ? 3s : 1s, trials[static_cast<std::size_t>(i)], i == 3);
    }
  };
  run_trials(slow_heavy, 3);
  run_trials(slow_light, 2);
  // The last trial answered at 1 s; the breaker is open for 1 s from then.
  EXPECT_EQ(slow_heavy.state(1s), breaker_state::open);
  EXPECT_EQ(slow_light.state(1s), breaker_state::closed);
}

// With trials=all a failed trial reopens at once, slow or not.
TEST(BreakerSlowCalls, TrialsAllStillReopensAtTheFirstFailure) {
  circuit_breaker b{parse_breaker(slow_r4j_setup)};
  for (int i = 0; i < 5; ++i) slow_call(b, 0s, 0s, true);
  const auto first = b.try_acquire(5s, true);
  const auto second = b.try_acquire(5s, true);
  b.record(5s, first, true);
  EXPECT_EQ(b.state(5s), breaker_state::open);
  b.record(5s, second, false);  // of the finished episode: ignored
  EXPECT_EQ(b.state(5s), breaker_state::open);
}

TEST(BreakerSlowCalls, AWindowOfCallsForgetsSlowCallsItPushesOut) {
  circuit_breaker b{
      parse_breaker("breaker(kind=rate, threshold=100%, window=4calls, min_calls=4, slow=1s, "
                    "slow_threshold=75%)")};
  slow_call(b, 0s, 2s, false);  // slow
  slow_call(b, 2s, 2s, false);  // slow
  slow_call(b, 4s, 0s, false);
  slow_call(b, 4s, 0s, false);  // 2 of 4 slow
  EXPECT_EQ(b.current_counts(4s).slow, 2u);
  slow_call(b, 4s, 0s, false);  // pushes out the first slow one
  EXPECT_EQ(b.current_counts(4s).slow, 1u);
  EXPECT_EQ(b.current_counts(4s).calls, 4u);
  slow_call(b, 4s, 2s, true);   // slow, over the second slow one: still 1
  slow_call(b, 6s, 2s, false);  // slow, over a fast one: 2 of 4
  EXPECT_EQ(b.current_counts(8s).slow, 2u);
  EXPECT_EQ(b.state(8s), breaker_state::closed);
  slow_call(b, 8s, 2s, false);  // 3 of 4: 75 %
  EXPECT_EQ(b.current_counts(10s).slow, 3u);
  EXPECT_EQ(b.current_counts(10s).failures, 1u);
  EXPECT_EQ(b.state(10s), breaker_state::open);
}

TEST(BreakerSlowCalls, AWindowOfTimeForgetsOldSlowCalls) {
  circuit_breaker b{
      parse_breaker("breaker(kind=rate, threshold=100%, window=10s, min_calls=3, slow=1s, "
                    "slow_threshold=50%)")};
  slow_call(b, 0s, 2s, false);  // slow, at 2 s
  EXPECT_EQ(b.current_counts(2s).slow, 1u);
  EXPECT_EQ(b.current_counts(13s).slow, 0u);  // a window later
  slow_call(b, 20s, 0s, false);
  slow_call(b, 20s, 0s, false);
  slow_call(b, 20s, 2s, false);  // 1 of 3 slow
  EXPECT_EQ(b.state(22s), breaker_state::closed);
}

TEST(BreakerSlowCalls, WithoutSlowNoCallIsSlow) {
  circuit_breaker b{parse_breaker("breaker(kind=rate, window=10calls, min_calls=2)")};
  slow_call(b, 0s, 1h, false);
  slow_call(b, 1h, 1h, false);
  EXPECT_EQ(b.current_counts(2h).slow, 0u);
  EXPECT_EQ(b.state(2h), breaker_state::closed);
}

TEST(BreakerSlowCallsSpec, ReadsWritesAndReadsBackTheKeys) {
  const auto c = parse_breaker("breaker(kind=rate, slow=2s, slow_threshold=50%)");
  EXPECT_EQ(c.slow, duration{2s});
  EXPECT_DOUBLE_EQ(c.slow_threshold, 0.5);
  EXPECT_EQ(c.to_string(),
            "breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s, half_open=3, "
            "slow=2s, slow_threshold=50%)");
  EXPECT_EQ(parse_breaker(c.to_string()), c);
  // resilience4j's default slow-call rate threshold, 100 %, written out once slow= is given.
  const auto d = parse_breaker("breaker(kind=rate, slow=1500ms)");
  EXPECT_DOUBLE_EQ(d.slow_threshold, 1.0);
  EXPECT_NE(d.to_string().find("slow=1.5s, slow_threshold=100%"), std::string::npos)
      << d.to_string();
  EXPECT_EQ(parse_breaker(d.to_string()), d);
}

TEST(BreakerSlowCallsSpec, ErrorsNameTheKey) {
  EXPECT_EQ(slow_parse_error("breaker(kind=consecutive, slow=2s)"),
            "bad breaker \"breaker(kind=consecutive, slow=2s)\": parameter \"slow\" does not "
            "apply to kind=consecutive (it takes failures, open, open_growth, open_max, "
            "half_open, keyed, max_keys)");
  EXPECT_EQ(slow_parse_error("breaker(kind=rate, slow_threshold=50%)"),
            "bad breaker \"breaker(kind=rate, slow_threshold=50%)\": parameter "
            "\"slow_threshold\" applies only with slow= (the call length that counts as slow)");
  EXPECT_EQ(slow_parse_error("breaker(kind=rate, slow=0s)"),
            "bad breaker \"breaker(kind=rate, slow=0s)\": slow=0s must be in (0, 1d]");
  EXPECT_EQ(slow_parse_error("breaker(kind=rate, slow=2s, slow_threshold=150%)"),
            "bad breaker \"breaker(kind=rate, slow=2s, slow_threshold=150%)\": "
            "slow_threshold=150% must be between 0% and 100%");
  const std::string typo = slow_parse_error("breaker(kind=rate, slow=2s, slow_treshold=50%)");
  EXPECT_EQ(typo.rfind("bad breaker \"breaker(kind=rate, slow=2s, slow_treshold=50%)\": "
                       "unknown parameter \"slow_treshold\"",
                       0),
            0u)
      << typo;
  EXPECT_NE(typo.find("did you mean 'slow_threshold'?"), std::string::npos) << typo;
}

TEST(BreakerSlowCallsSpec, ConfigsBuiltInCodeAreCheckedToo) {
  backoff::breaker_config c = backoff::breaker_config::defaults(backoff::breaker_kind::rate);
  c.slow_threshold = 0.5;  // without slow
  EXPECT_THROW(circuit_breaker{c}, backoff::parse_error);
  backoff::breaker_config consecutive;
  consecutive.slow = 2s;
  try {
    consecutive.validate();
    ADD_FAILURE() << "slow= on the consecutive kind validated";
  } catch (const backoff::parse_error& e) {
    EXPECT_STREQ(e.what(), "slow=2s does not apply to kind=consecutive");
  }
}

}  // namespace
