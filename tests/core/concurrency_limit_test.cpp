// SPDX-License-Identifier: Apache-2.0
// The adaptive concurrency limit (concurrency_limit.hpp): Netflix/concurrency-limits' own cases
// replayed with their numbers (concurrency-limits-core/src/test/.../AIMDLimitTest.java,
// VegasLimitTest.java, ExpAvgMeasurementTest.java, SimpleLimiterTest.java; the repository has no
// Gradient2 test, so its arithmetic is checked on sequences worked by hand), the limiter's
// accounting with an injected clock, the spec grammar, and a stress test under contention.
#include "backoff/concurrency_limit.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/prometheus_text.hpp"
#include "backoff/spec_keys.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::concurrency_limiter;
using backoff::limit_algorithm;
using backoff::limit_config;
using backoff::limit_kind;
using backoff::limit_outcome;
using backoff::parse_limit;

std::string climit_error_of(std::string_view text) {
  try {
    parse_limit(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

// VegasLimitTest.create(): alpha 3, beta 6, smoothing 1, initial 10, maxConcurrency 20.
limit_algorithm climit_vegas_test_limit() {
  return limit_algorithm{parse_limit("limit(kind=vegas, alpha=3, beta=6, initial=10, max=20)")};
}

// ---------------------------------------------------------------------------------------------
// AIMD (AIMDLimitTest.java)

TEST(AimdLimit, StartsAtTheInitialLimit) {  // testDefault
  // Netflix builds initialLimit(10) under its default minLimit 20 with a warning; here initial
  // must lie in [min, max], so min comes down with it.
  const limit_algorithm limit{parse_limit("limit(kind=aimd, initial=10, min=1)")};
  EXPECT_EQ(limit.limit(), 10u);
}

TEST(AimdLimit, GrowsByOneWhenHalfTheLimitIsInFlight) {  // increaseOnSuccess
  limit_algorithm limit{parse_limit("limit(kind=aimd, initial=20)")};
  EXPECT_EQ(limit.on_sample(1ms, 10, false), 21u);
  EXPECT_EQ(limit.limit(), 21u);
}

TEST(AimdLimit, HoldsWhenLessThanHalfTheLimitIsInFlight) {  // the inflight * 2 >= limit rule
  limit_algorithm limit{parse_limit("limit(kind=aimd, initial=20)")};
  EXPECT_EQ(limit.on_sample(1ms, 9, false), 20u);
  EXPECT_EQ(limit.on_sample(1ms, 10, false), 21u);
  EXPECT_EQ(limit.on_sample(1ms, 10, false), 21u);  // 20 < 21
  EXPECT_EQ(limit.on_sample(1ms, 11, false), 22u);
}

TEST(AimdLimit, CutsByTheBackoffRatioOnADrop) {  // decreaseOnDrops
  limit_algorithm limit{parse_limit("limit(kind=aimd, initial=30)")};
  EXPECT_EQ(limit.on_sample(0ns, 0, true), 27u);
  EXPECT_EQ(limit.on_sample(0ns, 0, true), 24u);  // floor(27 * 0.9) = floor(24.3)
  limit_algorithm halving{parse_limit("limit(kind=aimd, initial=30, backoff_ratio=0.5)")};
  EXPECT_EQ(halving.on_sample(0ns, 0, true), 20u);  // 15, held at min 20
}

TEST(AimdLimit, StaysAtTheMaxOnSuccess) {  // successOverflow (Netflix's minLimit(0) is 1 here)
  limit_algorithm limit{parse_limit("limit(kind=aimd, initial=21, max=21, min=1)")};
  EXPECT_EQ(limit.on_sample(1ms, 10, false), 21u);
}

TEST(AimdLimit, NeverGoesBelowMin) {
  limit_algorithm limit{parse_limit("limit(kind=aimd, initial=2, min=1)")};
  EXPECT_EQ(limit.on_sample(1ms, 1, true), 1u);  // floor(1.8)
  EXPECT_EQ(limit.on_sample(1ms, 1, true), 1u);  // floor(0.9) = 0, held at 1
  EXPECT_EQ(limit.on_sample(1ms, 1, false), 2u);
}

TEST(AimdLimit, ACallSlowerThanTheTimeoutCountsAsADrop) {
  limit_algorithm limit{parse_limit("limit(kind=aimd, initial=20, min=1, timeout=1s)")};
  EXPECT_EQ(limit.on_sample(1s, 10, false), 21u);  // rtt > timeout, strictly
  EXPECT_EQ(limit.on_sample(1s + 1ns, 10, false), 18u);
}

// ---------------------------------------------------------------------------------------------
// Vegas (VegasLimitTest.java)

TEST(VegasLimit, GrowsByBetaWithoutAQueue) {  // increaseLimit
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);  // the first sample is the no-load RTT
  EXPECT_EQ(limit.baseline_rtt(), 10ms);
  EXPECT_EQ(limit.on_sample(10ms, 11, false), 16u);  // queue 0 <= log10(10): + beta 6
}

TEST(VegasLimit, ShrinksByLog10AboveBeta) {  // decreaseLimit
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);
  EXPECT_EQ(limit.on_sample(50ms, 11, false), 9u);  // queue ceil(10 * 0.8) = 8 > 6: - 1
}

TEST(VegasLimit, HoldsBetweenAlphaAndBeta) {  // noChangeIfWithinThresholds
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);
  EXPECT_EQ(limit.on_sample(14ms, 14, false), 10u);  // queue ceil(2.86) = 3: alpha <= 3 <= beta
}

TEST(VegasLimit, GrowsByLog10BelowAlpha) {
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);
  // queue ceil(10 * (1 - 10/12)) = 2: above the threshold 1, below alpha 3: + log10(10)
  EXPECT_EQ(limit.on_sample(12ms, 10, false), 11u);
}

TEST(VegasLimit, ScalesAlphaAndBetaWithLog10OfTheLimit) {  // largeLimitIncrease
  limit_algorithm limit{parse_limit("limit(kind=vegas, initial=10000, max=20000)")};
  EXPECT_EQ(limit.on_sample(10s, 5000, false), 10000u);
  EXPECT_EQ(limit.on_sample(10s, 6000, false), 10024u);  // beta = 6 * log10(10000)
}

TEST(VegasLimit, SmoothsADecrease) {
  // decreaseSmoothing's samples (smoothing 0.5, initial 100, max 200) with the default decrease
  // function, limit - log10(limit); Netflix's test passes limit / 2 instead (75, then 56).
  limit_algorithm limit{parse_limit("limit(kind=vegas, smoothing=0.5, initial=100, max=200)")};
  EXPECT_EQ(limit.on_sample(10ms, 100, false), 100u);
  EXPECT_EQ(limit.on_sample(20ms, 100, false), 99u);  // queue 50 > 12: 98, smoothed 99
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 99.0);
  EXPECT_EQ(limit.on_sample(20ms, 100, false), 98u);  // log10(99) is 1: 98, smoothed 98.5
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 98.5);
}

TEST(VegasLimit, DecreasesWithoutSmoothing) {  // decreaseWithoutSmoothing, default decrease
  limit_algorithm limit{parse_limit("limit(kind=vegas, initial=100, max=200)")};
  EXPECT_EQ(limit.on_sample(10ms, 100, false), 100u);
  EXPECT_EQ(limit.on_sample(20ms, 100, false), 98u);
  EXPECT_EQ(limit.on_sample(20ms, 100, false), 97u);
}

TEST(VegasLimit, ShrinksByLog10OnADrop) {
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);
  EXPECT_EQ(limit.on_sample(10ms, 1, true), 9u);  // a drop shrinks even with little in flight
}

TEST(VegasLimit, AFasterSampleOnlyLowersTheNoLoadRtt) {
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);
  EXPECT_EQ(limit.on_sample(5ms, 10, true), 10u);  // even a drop: VegasLimit._update returns
  EXPECT_EQ(limit.baseline_rtt(), 5ms);
}

TEST(VegasLimit, HoldsWhenLessThanHalfTheLimitIsInFlight) {
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(10ms, 10, false), 10u);
  EXPECT_EQ(limit.on_sample(50ms, 4, false), 10u);  // queue 8 > beta, but 4 * 2 < 10
  EXPECT_EQ(limit.on_sample(50ms, 5, false), 9u);
}

TEST(VegasLimit, SkipsASampleWithoutAnRtt) {  // Netflix throws on rtt <= 0
  limit_algorithm limit = climit_vegas_test_limit();
  EXPECT_EQ(limit.on_sample(0ns, 10, true), 10u);
  EXPECT_EQ(limit.baseline_rtt(), 0ns);
}

// The index of the sample that re-measures the no-load RTT (shouldProbe: jitter *
// probe_multiplier * limit <= count, jitter uniform in [0.5, 1)), by feeding 20 ms samples
// with little in flight after a first sample of 10 ms.
int climit_probe_index(std::uint64_t seed) {
  limit_algorithm limit{
      parse_limit("limit(kind=vegas, initial=10, max=20, probe_multiplier=1, alpha=3, beta=6)"),
      seed};
  limit.on_sample(10ms, 0, false);
  for (int i = 2; i <= 40; ++i) {
    limit.on_sample(20ms, 0, false);
    if (limit.baseline_rtt() == 20ms) return i;
  }
  return -1;
}

TEST(VegasLimit, ReprobesTheNoLoadRttAfterAJitteredNumberOfSamples) {
  // With probe_multiplier 1 and limit 10 the probe comes at count ceil(jitter * 10): 6..10
  // (5 only for a jitter of exactly 0.5).
  int lowest = 100;
  int highest = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const int index = climit_probe_index(seed);
    ASSERT_GE(index, 5) << "seed " << seed;
    ASSERT_LE(index, 10) << "seed " << seed;
    lowest = std::min(lowest, index);
    highest = std::max(highest, index);
  }
  EXPECT_EQ(lowest, 6);
  EXPECT_EQ(highest, 10);
  EXPECT_EQ(climit_probe_index(7), climit_probe_index(7));  // a seed gives one sequence
}

// ---------------------------------------------------------------------------------------------
// Gradient2 (no test in Netflix's repository: sequences worked by hand from _update)

TEST(Gradient2Limit, GrowsBySmoothingTimesQueueSizeWhileTheRttHolds) {
  limit_algorithm limit{parse_limit("limit(kind=gradient2)")};
  EXPECT_EQ(limit.on_sample(10ms, 20, false), 20u);  // 20 * 0.8 + (20 * 1 + 4) * 0.2
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 20.8);
  EXPECT_EQ(limit.on_sample(10ms, 20, false), 21u);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 21.6);
}

TEST(Gradient2Limit, ShrinksByTheGradientOfTheLongRttOverTheRtt) {
  limit_algorithm limit{parse_limit("limit(kind=gradient2, initial=100, min=1)")};
  EXPECT_EQ(limit.on_sample(10ms, 100, false), 100u);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 100.8);
  // long 25 ms (the mean while warming up), gradient 1.5 * 25 / 40 = 0.9375:
  // 100.8 * 0.8 + (100.8 * 0.9375 + 4) * 0.2
  EXPECT_EQ(limit.on_sample(40ms, 100, false), 100u);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 100.34);
  EXPECT_EQ(limit.baseline_rtt(), 25ms);
  // long 50 ms, gradient 0.75
  EXPECT_EQ(limit.on_sample(100ms, 100, false), 96u);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 96.123);
  // long 287.5 ms, 1.5 * 0.2875 = 0.43 is held at 0.5
  EXPECT_EQ(limit.on_sample(1s, 100, false), 87u);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 87.3107);
}

TEST(Gradient2Limit, HoldsWhenLessThanHalfTheLimitIsInFlightAndIgnoresDrops) {
  limit_algorithm limit{parse_limit("limit(kind=gradient2, initial=100, min=1)")};
  EXPECT_EQ(limit.on_sample(10ms, 49, false), 100u);  // 49 < 100 / 2: "app limited"
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 100.0);
  EXPECT_EQ(limit.baseline_rtt(), 10ms);             // the long RTT still learns
  EXPECT_EQ(limit.on_sample(10ms, 50, true), 100u);  // a drop is a sample like any other
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 100.8);
}

TEST(Gradient2Limit, KeepsTheLimitWithinMinAndMax) {
  limit_algorithm ceiling{parse_limit("limit(kind=gradient2, initial=200, smoothing=1)")};
  EXPECT_EQ(ceiling.on_sample(10ms, 200, false), 200u);  // 204, held at max 200
  limit_algorithm floor{parse_limit("limit(kind=gradient2, initial=20, smoothing=1)")};
  for (int i = 0; i < 10; ++i) floor.on_sample(10ms, 0, false);  // a long RTT of 10 ms
  // the long RTT moves to 43.2 ms, 1.5 * 43.2 ms / 10 s is held at 0.5: 20 * 0.5 + 4 = 14
  EXPECT_EQ(floor.on_sample(10s, 20, false), 20u);
  EXPECT_DOUBLE_EQ(floor.estimated_limit(), 20.0);
}

TEST(Gradient2Limit, AveragesTheLongRttAsExpAvgMeasurement) {
  // ExpAvgMeasurementTest.testWarmup: window 100, warm-up 10; samples 10..19 average to 10,
  // 10.5, ... 14.5, then 100 moves the average to about 16.2.
  limit_algorithm limit{parse_limit("limit(kind=gradient2, long_window=100)")};
  for (int i = 0; i < 10; ++i) {
    limit.on_sample(std::chrono::milliseconds{10 + i}, 0, false);
    EXPECT_EQ(limit.baseline_rtt(), 10ms + i * 500us);
  }
  limit.on_sample(100ms, 0, false);
  // 14.5 ms * (1 - 2/101) + 100 ms * 2/101
  EXPECT_EQ(limit.baseline_rtt(), 16193069ns);
}

TEST(Gradient2Limit, DecaysALongRttThatIsMoreThanTwiceTheRtt) {
  limit_algorithm limit{parse_limit("limit(kind=gradient2, initial=100, min=1)")};
  for (int i = 0; i < 10; ++i) limit.on_sample(100ms, 0, false);
  EXPECT_EQ(limit.baseline_rtt(), 100ms);
  // 100 ms * (1 - 2/601) + 10 ms * 2/601 = 99.7005 ms, more than 2 * 10 ms: * 0.95
  EXPECT_EQ(limit.on_sample(10ms, 100, false), 100u);
  EXPECT_EQ(limit.baseline_rtt(), 94715474ns);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 100.8);  // gradient 1: no queue
}

TEST(Gradient2Limit, SkipsASampleWithoutAnRtt) {
  limit_algorithm limit{parse_limit("limit(kind=gradient2)")};
  EXPECT_EQ(limit.on_sample(0ns, 20, false), 20u);
  EXPECT_DOUBLE_EQ(limit.estimated_limit(), 20.0);
  EXPECT_EQ(limit.baseline_rtt(), 0ns);
}

// ---------------------------------------------------------------------------------------------
// The limiter (SimpleLimiterTest.java, FixedLimit.of(10) as an aimd limit held at 10)

constexpr std::string_view climit_fixed_10 = "limit(kind=aimd, initial=10, min=10, max=10)";

TEST(ConcurrencyLimiter, AdmitsUpToTheLimit) {  // useLimiterCapacityUntilTotalLimit
  concurrency_limiter limiter{parse_limit(climit_fixed_10)};
  for (std::uint32_t i = 1; i <= 10; ++i) {
    const auto permit = limiter.try_acquire(0ns);
    ASSERT_TRUE(permit);
    EXPECT_EQ(permit.inflight(), i);
    EXPECT_EQ(permit.limit(), 10u);
  }
  EXPECT_FALSE(limiter.try_acquire(0ns));
  EXPECT_EQ(limiter.inflight(), 10u);
  EXPECT_EQ(limiter.stats().rejected, 1u);
}

TEST(ConcurrencyLimiter, AReleaseMakesRoom) {  // testReleaseLimit
  concurrency_limiter limiter{parse_limit(climit_fixed_10)};
  const auto first = limiter.try_acquire(0ns);
  for (int i = 1; i < 10; ++i) ASSERT_TRUE(limiter.try_acquire(0ns));
  EXPECT_EQ(limiter.inflight(), 10u);
  EXPECT_FALSE(limiter.try_acquire(0ns));
  limiter.release(first, 1ms, limit_outcome::success);
  EXPECT_EQ(limiter.inflight(), 9u);
  EXPECT_TRUE(limiter.try_acquire(1ms));
  EXPECT_EQ(limiter.inflight(), 10u);
}

TEST(ConcurrencyLimiter, ABypassIsAdmittedWhenTheLimitIsFull) {  // testSimpleBypassLimiter
  concurrency_limiter limiter{parse_limit(climit_fixed_10)};
  for (std::uint32_t i = 1; i <= 10; ++i) {
    ASSERT_TRUE(limiter.try_acquire(0ns));
    EXPECT_EQ(limiter.inflight(), i);
  }
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(limiter.try_acquire(0ns));
    const auto bypass = limiter.bypass();
    EXPECT_TRUE(bypass);
    EXPECT_TRUE(bypass.bypassed());
    limiter.release(bypass, 1ms, limit_outcome::dropped);  // no sample, no count
  }
  EXPECT_EQ(limiter.inflight(), 10u);
  EXPECT_EQ(limiter.limit(), 10u);
  const auto s = limiter.stats();
  EXPECT_EQ(s.bypassed, 10u);
  EXPECT_EQ(s.rejected, 10u);
  EXPECT_EQ(s.dropped, 0u);
}

TEST(ConcurrencyLimiter, SamplesTheInFlightCountAtAdmission) {  // AbstractLimiter.createListener
  concurrency_limiter limiter{parse_limit("limit(kind=aimd, initial=20, min=1)")};
  std::vector<backoff::limit_permit> permits;
  for (int i = 0; i < 10; ++i) permits.push_back(limiter.try_acquire(0ns));
  limiter.release(permits[0], 1ms, limit_outcome::success);  // admitted as 1 of 1: 2 < 20
  EXPECT_EQ(limiter.limit(), 20u);
  limiter.release(permits[9], 1ms, limit_outcome::success);  // admitted as 10: 20 >= 20
  EXPECT_EQ(limiter.limit(), 21u);
}

TEST(ConcurrencyLimiter, MeasuresTheRttFromAcquireToRelease) {
  concurrency_limiter limiter{parse_limit("limit(kind=aimd, initial=20, min=1, timeout=1s)")};
  std::vector<backoff::limit_permit> permits;
  for (int i = 0; i < 10; ++i) permits.push_back(limiter.try_acquire(5s));
  limiter.release(permits[9], 6s, limit_outcome::success);  // 1 s: not a timeout
  EXPECT_EQ(limiter.limit(), 21u);
  limiter.release(permits[8], 6s + 1ns, limit_outcome::success);  // over 1 s: a drop
  EXPECT_EQ(limiter.limit(), 18u);                                // floor(21 * 0.9)
  EXPECT_EQ(limiter.stats().succeeded, 2u);                       // counted as the caller said
}

TEST(ConcurrencyLimiter, BacksOffOnADropAndNotOnAnIgnoredCall) {
  concurrency_limiter limiter{parse_limit("limit(kind=aimd, initial=20, min=1)")};
  const auto a = limiter.try_acquire(0ns);
  const auto b = limiter.try_acquire(0ns);
  limiter.release(a, 1ms, limit_outcome::ignored);
  EXPECT_EQ(limiter.limit(), 20u);
  limiter.release(b, 1ms, limit_outcome::dropped);
  EXPECT_EQ(limiter.limit(), 18u);
  const auto s = limiter.stats();
  EXPECT_EQ(s.ignored, 1u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.inflight, 0u);
}

TEST(ConcurrencyLimiter, RefusesWhileTheLimitIsBelowTheInFlightCount) {
  concurrency_limiter limiter{parse_limit("limit(kind=aimd, initial=20, min=1)")};
  std::vector<backoff::limit_permit> permits;
  for (int i = 0; i < 20; ++i) permits.push_back(limiter.try_acquire(0ns));
  limiter.release(permits[19], 1ms, limit_outcome::dropped);  // limit 18, 19 in flight
  EXPECT_EQ(limiter.limit(), 18u);
  EXPECT_FALSE(limiter.try_acquire(1ms));
  limiter.release(permits[18], 1ms, limit_outcome::ignored);  // 18 in flight
  EXPECT_FALSE(limiter.try_acquire(1ms));
  limiter.release(permits[17], 1ms, limit_outcome::ignored);  // 17
  const auto next = limiter.try_acquire(1ms);
  EXPECT_TRUE(next);
  EXPECT_EQ(next.inflight(), 18u);
  EXPECT_EQ(next.limit(), 18u);
}

TEST(ConcurrencyLimiter, IgnoresTheReleaseOfARefusedPermit) {
  concurrency_limiter limiter{parse_limit("limit(kind=aimd, initial=1, min=1, max=1)")};
  const auto held = limiter.try_acquire(0ns);
  const auto refused = limiter.try_acquire(0ns);
  EXPECT_FALSE(refused);
  limiter.release(refused, 1ms, limit_outcome::success);
  EXPECT_EQ(limiter.inflight(), 1u);
  limiter.release(held, 1ms, limit_outcome::success);
  EXPECT_EQ(limiter.inflight(), 0u);
  EXPECT_EQ(limiter.stats().succeeded, 1u);
}

TEST(ConcurrencyLimiter, RunsVegasOnReleasedSamples) {
  concurrency_limiter limiter{
      parse_limit("limit(kind=vegas, alpha=3, beta=6, initial=10, max=20)")};
  std::vector<backoff::limit_permit> permits;
  for (int i = 0; i < 10; ++i) permits.push_back(limiter.try_acquire(0ns));
  limiter.release(permits[9], 10ms, limit_outcome::success);  // the no-load RTT
  EXPECT_EQ(limiter.limit(), 10u);
  limiter.release(permits[8], 10ms, limit_outcome::success);  // admitted as 9: 18 >= 10
  EXPECT_EQ(limiter.limit(), 16u);
  limiter.release(permits[7], 50ms, limit_outcome::success);  // queue ceil(16 * 0.8) > 6
  EXPECT_EQ(limiter.limit(), 15u);
}

TEST(ConcurrencyLimiter, RunsGradient2OnReleasedSamples) {
  concurrency_limiter limiter{parse_limit("limit(kind=gradient2, initial=20)")};
  std::vector<backoff::limit_permit> permits;
  for (int i = 0; i < 20; ++i) permits.push_back(limiter.try_acquire(1s));
  limiter.release(permits[19], 1s + 10ms, limit_outcome::success);
  limiter.release(permits[18], 1s + 10ms, limit_outcome::success);
  EXPECT_EQ(limiter.limit(), 21u);  // 20.8, then 21.6 (as in the algorithm's own test)
  for (std::uint32_t in_flight = 19; in_flight <= 21; ++in_flight) {
    EXPECT_EQ(limiter.try_acquire(2s).inflight(), in_flight);
  }
  EXPECT_FALSE(limiter.try_acquire(2s));
}

TEST(ConcurrencyLimiter, WritesItsMetrics) {
  concurrency_limiter limiter{parse_limit(climit_fixed_10)};
  const auto a = limiter.try_acquire(0ns);
  limiter.try_acquire(0ns);
  limiter.release(a, 1ms, limit_outcome::success);
  limiter.bypass();
  backoff::prometheus_writer out;
  backoff::write_limiter_metrics(out, limiter.stats(), "api");
  EXPECT_EQ(out.text(),
            "# HELP api_limit The adaptive concurrency limit.\n"
            "# TYPE api_limit gauge\n"
            "api_limit 10\n"
            "# HELP api_inflight Calls admitted and not yet released.\n"
            "# TYPE api_inflight gauge\n"
            "api_inflight 1\n"
            "# HELP api_calls_total Calls, by how they ended or were refused.\n"
            "# TYPE api_calls_total counter\n"
            "api_calls_total{status=\"success\"} 1\n"
            "api_calls_total{status=\"dropped\"} 0\n"
            "api_calls_total{status=\"ignored\"} 0\n"
            "api_calls_total{status=\"rejected\"} 0\n"
            "api_calls_total{status=\"bypassed\"} 1\n");
}

// ---------------------------------------------------------------------------------------------
// Under contention (SimpleLimiterTest.testConcurrentSimple, without its sleeps)

struct climit_stress_counts {
  std::uint64_t admitted = 0;
  std::uint64_t refused = 0;
  std::uint32_t most_in_flight = 0;
};

climit_stress_counts climit_hammer(concurrency_limiter& limiter, int threads, int iterations) {
  std::atomic<std::int64_t> clock{0};
  std::atomic<std::uint32_t> in_flight{0};
  std::atomic<std::uint32_t> most{0};
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<bool> over_limit{false};
  std::latch start{threads};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < iterations; ++i) {
        const auto permit = limiter.try_acquire(backoff::duration{clock.fetch_add(1)});
        if (!permit) {
          refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        admitted.fetch_add(1, std::memory_order_relaxed);
        if (permit.inflight() > permit.limit()) over_limit.store(true);
        const std::uint32_t now_in = in_flight.fetch_add(1) + 1;
        std::uint32_t seen = most.load();
        while (now_in > seen && !most.compare_exchange_weak(seen, now_in)) {
        }
        in_flight.fetch_sub(1);
        const int pick = (i + t) % 13;
        const limit_outcome outcome = pick == 0   ? limit_outcome::dropped
                                      : pick == 1 ? limit_outcome::ignored
                                                  : limit_outcome::success;
        limiter.release(permit, backoff::duration{clock.fetch_add(1) + pick * 1000}, outcome);
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_FALSE(over_limit.load()) << "a permit was admitted above its limit";
  return {admitted.load(), refused.load(), most.load()};
}

TEST(ConcurrencyLimiterStress, NeverAdmitsMoreThanAFixedLimit) {
  concurrency_limiter limiter{parse_limit("limit(kind=aimd, initial=3, min=3, max=3)")};
  const int threads = 6;
  const int iterations = 3000;
  const climit_stress_counts c = climit_hammer(limiter, threads, iterations);
  EXPECT_LE(c.most_in_flight, 3u);
  EXPECT_EQ(c.admitted + c.refused, std::uint64_t{threads} * iterations);
  const auto s = limiter.stats();
  EXPECT_EQ(s.inflight, 0u);
  EXPECT_EQ(s.rejected, c.refused);
  EXPECT_EQ(s.succeeded + s.dropped + s.ignored, c.admitted);
}

TEST(ConcurrencyLimiterStress, KeepsItsCountsExactWhileEveryKindAdapts) {
  for (const char* spec : {"limit(kind=aimd, initial=4, min=1, max=8)",
                           "limit(kind=vegas, initial=4, max=8, probe_multiplier=1)",
                           "limit(kind=gradient2, initial=4, min=1, max=8)"}) {
    SCOPED_TRACE(spec);
    concurrency_limiter limiter{parse_limit(spec)};
    const int threads = 4;
    const int iterations = 2500;
    const climit_stress_counts c = climit_hammer(limiter, threads, iterations);
    EXPECT_LE(c.most_in_flight, 8u);  // the max, whatever the limit did meanwhile
    EXPECT_EQ(c.admitted + c.refused, std::uint64_t{threads} * iterations);
    const auto s = limiter.stats();
    EXPECT_EQ(s.inflight, 0u);
    EXPECT_EQ(s.rejected, c.refused);
    EXPECT_EQ(s.succeeded + s.dropped + s.ignored, c.admitted);
    EXPECT_GE(s.limit, limiter.config().min);
    EXPECT_LE(s.limit, 8u);
  }
}

// ---------------------------------------------------------------------------------------------
// The spec

TEST(LimitSpec, DefaultsAreNetflixsBuilderDefaults) {
  EXPECT_EQ(parse_limit("limit"), limit_config::defaults(limit_kind::vegas));
  EXPECT_EQ(parse_limit("limit()").to_string(),
            "limit(kind=vegas, initial=20, min=1, max=1000, smoothing=1, probe_multiplier=30)");
  EXPECT_EQ(parse_limit("limit(kind=aimd)").to_string(),
            "limit(kind=aimd, initial=20, min=20, max=200, backoff_ratio=0.9, timeout=5s)");
  EXPECT_EQ(parse_limit("limit(kind=gradient2)").to_string(),
            "limit(kind=gradient2, initial=20, min=20, max=200, smoothing=0.2, queue_size=4, "
            "long_window=600, rtt_tolerance=1.5)");
}

TEST(LimitSpec, ReadsBackItsCanonicalText) {
  for (const char* spec : {
           "limit(kind=aimd, initial=10, min=1, max=50, backoff_ratio=0.5, timeout=250ms)",
           "limit(kind=vegas, initial=100, max=20000, smoothing=0.5, alpha=2, beta=4)",
           "limit(kind=vegas, beta=9, probe_multiplier=1)",
           "limit(kind=gradient2, min=1, queue_size=0, long_window=1, rtt_tolerance=2.25)",
           "limit(max=20, initial=5, kind=gradient2, min=5)",
       }) {
    SCOPED_TRACE(spec);
    const limit_config c = parse_limit(spec);
    EXPECT_EQ(parse_limit(c.to_string()), c);
  }
  const limit_config fixed = parse_limit("limit(kind=vegas, alpha=3, beta=6)");
  EXPECT_EQ(fixed.alpha, 3u);
  EXPECT_EQ(fixed.beta, 6u);
  EXPECT_EQ(fixed.to_string(),
            "limit(kind=vegas, initial=20, min=1, max=1000, smoothing=1, alpha=3, beta=6, "
            "probe_multiplier=30)");
}

TEST(LimitSpec, ErrorsAreOneLineNamingTheBadPart) {
  EXPECT_EQ(climit_error_of("limit(kind=vegs)"),
            "bad limit \"limit(kind=vegs)\": kind=vegs is not a limit kind (known: aimd, vegas, "
            "gradient2); did you mean 'vegas'?");
  EXPECT_EQ(climit_error_of("limit(kind=aimd, backof_ratio=0.5)"),
            "bad limit \"limit(kind=aimd, backof_ratio=0.5)\": unknown parameter "
            "\"backof_ratio\" (known: kind, initial, min, max, backoff_ratio, timeout); did you "
            "mean 'backoff_ratio'?");
  EXPECT_EQ(climit_error_of("limit(kind=aimd, smoothing=0.5)"),
            "bad limit \"limit(kind=aimd, smoothing=0.5)\": parameter \"smoothing\" does not "
            "apply to kind=aimd (it takes initial, min, max, backoff_ratio, timeout)");
  EXPECT_EQ(climit_error_of("limit(kind=aimd, backoff_ratio=1)"),
            "bad limit \"limit(kind=aimd, backoff_ratio=1)\": backoff_ratio=1 must be in "
            "[0.5, 1)");
  EXPECT_EQ(climit_error_of("limit(kind=aimd, initial=5)"),
            "bad limit \"limit(kind=aimd, initial=5)\": initial=5 must be in min..max (20..200)");
  EXPECT_EQ(climit_error_of("limit(kind=gradient2, max=10)"),
            "bad limit \"limit(kind=gradient2, max=10)\": max=10 must be in min..1000000 "
            "(min=20)");
  EXPECT_EQ(climit_error_of("limit(min=0)"),
            "bad limit \"limit(min=0)\": min=0 must be in 1..1000000");
  EXPECT_EQ(climit_error_of("limit(initial=2.5)"),
            "bad limit \"limit(initial=2.5)\": initial=2.5 must be a whole number in "
            "0..1000000");
  EXPECT_EQ(climit_error_of("limit(alpha=7, beta=6)"),
            "bad limit \"limit(alpha=7, beta=6)\": alpha=7 is more than beta=6");
  EXPECT_EQ(climit_error_of("limit(smoothing=0)"),
            "bad limit \"limit(smoothing=0)\": smoothing=0 must be in (0, 1]");
  EXPECT_EQ(climit_error_of("limit(probe_multiplier=0)"),
            "bad limit \"limit(probe_multiplier=0)\": probe_multiplier=0 must be in 1..1000000");
  EXPECT_EQ(climit_error_of("limit(kind=gradient2, rtt_tolerance=0.9)"),
            "bad limit \"limit(kind=gradient2, rtt_tolerance=0.9)\": rtt_tolerance=0.9 must be "
            "a number >= 1");
  EXPECT_EQ(climit_error_of("limit(kind=gradient2, long_window=0)"),
            "bad limit \"limit(kind=gradient2, long_window=0)\": long_window=0 must be in "
            "1..1000000");
  EXPECT_EQ(climit_error_of("limit(kind=aimd, timeout=0s)"),
            "bad limit \"limit(kind=aimd, timeout=0s)\": timeout=0s must be more than 0");
  EXPECT_EQ(climit_error_of("limits(kind=aimd)"),
            "bad limit \"limits(kind=aimd)\": unknown limit \"limits\" (known: limit); did you "
            "mean 'limit'?");
}

TEST(LimitSpec, ValidateRefusesAKeyOfAnotherKind) {
  limit_config c = limit_config::defaults(limit_kind::aimd);
  c.queue_size = 8;
  EXPECT_THROW(c.validate(), backoff::parse_error);
  c = limit_config::defaults(limit_kind::gradient2);
  c.alpha = 3;
  try {
    c.validate();
    ADD_FAILURE() << "no error";
  } catch (const backoff::parse_error& e) {
    EXPECT_STREQ(e.what(), "alpha does not apply to kind=gradient2");
  }
}

TEST(LimitSpec, DocumentsItsKeysInOneTable) {
  const std::string table = backoff::detail::limit_keys_markdown();
  EXPECT_EQ(table.find("| key | applies to | values | default | meaning |\n|---|---|---|---|---|\n"
                       "| `kind` | all | `aimd`, `vegas` or `gradient2` | `vegas` |"),
            0u);
  EXPECT_NE(table.find("| `initial` | all | a whole number in min..max | 20 |"), std::string::npos);
  EXPECT_NE(table.find("| `backoff_ratio` | aimd | a number in [0.5, 1) | 0.9 |"),
            std::string::npos);
  EXPECT_NE(table.find("| `smoothing` | vegas, gradient2 |"), std::string::npos);
  EXPECT_NE(table.find("| `rtt_tolerance` | gradient2 | a number >= 1 | 1.5 |"), std::string::npos);
}

}  // namespace
