// SPDX-License-Identifier: Apache-2.0
// backoff_policy / backoff_state (policy.hpp) and the random transforms (random.hpp): exact base
// sequences, the cap, saturation, growth from the previous delay, each jitter's bounds and
// distribution (fixed seeds, so every run draws the same numbers), and determinism.
#include "backoff/policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/presets.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "statistics.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::cap_mode;
using backoff::duration;
using backoff::jitter_kind;
using backoff::random_generator;
using backoff::schedule_kind;
using backoff::test::sqrt12;

using delays = std::vector<duration>;

// The first n delays of one operation under `p`, drawn from a generator seeded with `seed`.
delays draw(const backoff_policy& p, std::size_t n, std::uint64_t seed = 1) {
  random_generator g{seed};
  auto state = p.start();
  delays out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(state.next_delay(g));
  return out;
}

double ns(duration d) {
  return static_cast<double>(d.count());
}

struct sample_stats {
  double mean;
  double sd;
  double min;
  double max;
};

sample_stats stats_of(const delays& ds) {
  double sum = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (duration d : ds) {
    sum += ns(d);
    lo = std::min(lo, ns(d));
    hi = std::max(hi, ns(d));
  }
  const double mean = sum / static_cast<double>(ds.size());
  double sq = 0;
  for (duration d : ds) sq += (ns(d) - mean) * (ns(d) - mean);
  return {mean, std::sqrt(sq / static_cast<double>(ds.size() - 1)), lo, hi};
}

// One jittered delay per retry of a constant base b, over many retries: the samples are
// independent draws of the jitter distribution around b.
delays jittered_constant(backoff_policy p, duration b, std::size_t n, std::uint64_t seed) {
  p.schedule = schedule_kind::constant;
  p.initial = b;
  p.max = duration::max();
  return draw(p, n, seed);
}

// A generator that returns a given sequence of 64-bit words.
struct scripted_generator {
  using result_type = std::uint64_t;
  std::vector<std::uint64_t> words;
  std::size_t next = 0;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return words.at(next++); }
};
static_assert(backoff::bit_generator64<scripted_generator>);
static_assert(backoff::bit_generator64<backoff::random_ref>);

constexpr std::size_t big_n = 100'000;
constexpr double big_nd = 100'000.0;
const double sqrt_n = std::sqrt(big_nd);

// The standard error of the sample standard deviation of n draws of U(0, width): for a uniform
// distribution mu4 = width^4 / 80 and sigma^4 = width^4 / 144, so Var(s^2) = width^4 / (180 n)
// and SE(s) = SE(s^2) / (2 sigma).
double uniform_sd_se(double width) {
  return width * sqrt12 / (2 * std::sqrt(180.0)) / sqrt_n;
}

// ---------------------------------------------------------------------------------------------
// Schedules, jitter none: the exact base sequences.

TEST(Schedule, ConstantRepeatsTheSameDelay) {
  EXPECT_EQ(draw(backoff_policy::constant(3s), 5), (delays{3s, 3s, 3s, 3s, 3s}));
}

TEST(Schedule, LinearAddsTheStepEachRetry) {
  EXPECT_EQ(draw(backoff_policy::linear(1s, 500ms), 5), (delays{1s, 1500ms, 2s, 2500ms, 3s}));
}

TEST(Schedule, LinearStopsGrowingAtMax) {
  EXPECT_EQ(draw(backoff_policy::linear(1s, 500ms, 2s), 5), (delays{1s, 1500ms, 2s, 2s, 2s}));
}

TEST(Schedule, ExponentialMultipliesByTheFactorUpToMax) {
  EXPECT_EQ(draw(backoff_policy::exponential(100ms, 2.0, 1s), 7),
            (delays{100ms, 200ms, 400ms, 800ms, 1s, 1s, 1s}));
}

TEST(Schedule, ExponentialWithAFractionalFactorIsExactToTheNanosecond) {
  EXPECT_EQ(draw(backoff_policy::exponential(100ms, 1.5, 1h), 4),
            (delays{100ms, 150ms, 225ms, 337500us}));
}

TEST(Schedule, ExponentialWithFactorOneIsConstant) {
  EXPECT_EQ(draw(backoff_policy::exponential(7ms, 1.0, 1s), 4), (delays{7ms, 7ms, 7ms, 7ms}));
}

TEST(Schedule, FibonacciFollowsOneOneTwoThreeFiveUpToMax) {
  EXPECT_EQ(draw(backoff_policy::fibonacci(100ms, 1s), 9),
            (delays{100ms, 100ms, 200ms, 300ms, 500ms, 800ms, 1s, 1s, 1s}));
}

TEST(Schedule, StateCountsRetriesAndRemembersThePreviousDelay) {
  const auto p = backoff_policy::exponential(1s, 2.0, 30s);
  random_generator g{1};
  auto s = p.start();
  EXPECT_EQ(s.retries(), 0u);
  EXPECT_EQ(s.previous(), 0ns);
  (void)s.next_delay(g);
  (void)s.next_delay(g);
  EXPECT_EQ(s.retries(), 2u);
  EXPECT_EQ(s.previous(), 2s);
  EXPECT_EQ(&s.policy(), &p);
}

// ---------------------------------------------------------------------------------------------
// The cap: before the jitter (randomness survives at the cap) or after (every delay <= max).

TEST(Cap, BeforeJitterLetsAMultiplicativeDelayExceedMax) {
  auto p = backoff_policy::exponential(1s, 2.0, 10s).with_jitter(jitter_kind::multiplicative);
  p.cap = cap_mode::before;
  const delays ds = draw(p, 200, 3);
  // From retry 4 on the base is capped at 10 s and R in [1, 2) multiplies it.
  bool above_max = false;
  for (std::size_t i = 4; i < ds.size(); ++i) {
    EXPECT_GE(ds[i], 10s);
    EXPECT_LE(ds[i], 20s);
    above_max = above_max || ds[i] > 10s;
  }
  EXPECT_TRUE(above_max);
}

TEST(Cap, AfterJitterClampsEveryDelayToMax) {
  auto p = backoff_policy::exponential(1s, 2.0, 10s).with_jitter(jitter_kind::multiplicative);
  p.cap = cap_mode::after;
  const delays ds = draw(p, 200, 3);
  for (std::size_t i = 0; i < ds.size(); ++i) EXPECT_LE(ds[i], 10s) << i;
  // Base 16 s and more times R >= 1 is above the cap: exactly max.
  for (std::size_t i = 4; i < ds.size(); ++i) EXPECT_EQ(ds[i], 10s) << i;
}

TEST(Cap, AfterJitterStillJittersBelowTheCap) {
  auto p = backoff_policy::exponential(1s, 2.0, 10s).with_jitter(jitter_kind::multiplicative);
  p.cap = cap_mode::after;
  const delays ds = draw(p, 3, 3);
  EXPECT_GE(ds[0], 1s);
  EXPECT_LT(ds[0], 2s);
  EXPECT_NE(ds[0], 1s);
}

TEST(Cap, BeforeJitterBoundsFullJitterByTheCappedBase) {
  auto p = backoff_policy::exponential(1s, 2.0, 10s).with_jitter(jitter_kind::full);
  const delays ds = draw(p, 1000, 9);
  for (duration d : ds) EXPECT_LE(d, 10s);
  EXPECT_GT(*std::max_element(ds.begin(), ds.end()), 9s);  // the cap is reached, not undershot
}

// ---------------------------------------------------------------------------------------------
// Saturation: no schedule overflows or turns negative, whatever the number of retries.

TEST(Saturation, HugeFactorStaysExactlyAtMax) {
  const auto p = backoff_policy::exponential(1ns, 1e300, 30s);
  const delays ds = draw(p, 10'000);
  EXPECT_EQ(ds[0], 1ns);
  for (std::size_t i = 1; i < ds.size(); ++i) ASSERT_EQ(ds[i], 30s) << "retry " << i;
}

TEST(Saturation, TenThousandDoublingsStayExactlyAtMax) {
  for (cap_mode cap : {cap_mode::before, cap_mode::after}) {
    const auto p = backoff_policy::exponential(1s, 2.0, 30s).with_cap(cap);
    const delays ds = draw(p, 10'000);
    for (std::size_t i = 5; i < ds.size(); ++i) ASSERT_EQ(ds[i], 30s) << "retry " << i;
  }
}

TEST(Saturation, UncappedExponentialSaturatesFarAboveACenturyAndNeverTurnsNegative) {
  const auto p = backoff_policy::exponential(1s, 2.0, duration::max());
  const delays ds = draw(p, 10'000);
  for (std::size_t i = 1; i < ds.size(); ++i) {
    ASSERT_GT(ds[i], 0ns) << i;
    ASSERT_GE(ds[i], ds[i - 1]) << i;
  }
  EXPECT_GT(ds.back(), 100 * 24h * 365);
  EXPECT_EQ(ds.back(), ds[ds.size() - 2]);  // saturated, not wrapping
}

TEST(Saturation, UncappedHugeFactorWithFullJitterNeverNegative) {
  const auto p =
      backoff_policy::exponential(1ms, 1e300, duration::max()).with_jitter(jitter_kind::full);
  for (duration d : draw(p, 10'000)) ASSERT_GE(d, 0ns);
}

TEST(Saturation, LinearAndFibonacciSaturateWithoutWrapping) {
  const auto lin =
      backoff_policy::linear(1s, duration{std::numeric_limits<std::int64_t>::max() / 4});
  const auto fib = backoff_policy::fibonacci(1h, duration::max());
  for (const auto& p : {lin, fib}) {
    const delays ds = draw(p, 10'000);
    for (std::size_t i = 1; i < ds.size(); ++i) {
      ASSERT_GE(ds[i], ds[i - 1]) << backoff::to_string(p.schedule) << " retry " << i;
    }
    EXPECT_GT(ds.back(), 100 * 24h * 365);
  }
}

TEST(Saturation, GrowthFromPreviousWithHugeFactorStaysAtMax) {
  auto p = backoff_policy::exponential(1ms, 1e300, 30s);
  p.grow = backoff::growth::previous;
  const delays ds = draw(p, 1000);
  EXPECT_EQ(ds[0], 1ms);
  for (std::size_t i = 1; i < ds.size(); ++i) ASSERT_EQ(ds[i], 30s) << i;
}

TEST(Saturation, GaussianNoiseLargerThanTheBaseClampsAtZero) {
  auto p = backoff_policy::constant(1ms).with_jitter(jitter_kind::gaussian);
  p.sd = 1s;
  const delays ds = draw(p, 1000);
  for (duration d : ds) ASSERT_GE(d, 0ns);
  EXPECT_GT(std::count(ds.begin(), ds.end(), 0ns), 100);  // about half are clamped
}

// ---------------------------------------------------------------------------------------------
// Precision: delays are computed in double nanoseconds, which are exact integers only up to
// 2^53 (about 104 days). The result must still be the exact delay, and never above max.

TEST(Precision, AnOddDelayAbove2To52NanosecondsIsNotRoundedUp) {
  // 2^52 + 1 ns (about 52 days) is exactly representable as a double.
  const duration d{(std::int64_t{1} << 52) + 1};
  EXPECT_EQ(draw(backoff_policy::constant(d), 3), (delays{d, d, d}));
}

TEST(Precision, TheCapHoldsToTheNanosecondAbove2To53Nanoseconds) {
  // max = 2^54 - 1 ns (about 208 days) is not a double; the delay at the cap must not be
  // rounded up past it.
  const duration max{(std::int64_t{1} << 54) - 1};
  for (cap_mode cap : {cap_mode::before, cap_mode::after}) {
    const auto p = backoff_policy::exponential(1s, 2.0, max).with_cap(cap);
    const delays ds = draw(p, 40);
    for (duration d : ds) ASSERT_LE(d, max) << backoff::to_string(cap);
    EXPECT_EQ(ds.back(), max) << backoff::to_string(cap);
  }
}

// ---------------------------------------------------------------------------------------------
// growth::previous and jitter_first.

TEST(Growth, PreviousMultipliesTheLastActualDelay) {
  // lo = hi = 1.5 makes the multiplicative jitter deterministic: every delay is 1.5 x base.
  auto p = backoff_policy::exponential(100ms, 2.0, 1h).with_jitter(jitter_kind::multiplicative);
  p.lo = 1.5;
  p.hi = 1.5;
  EXPECT_EQ(draw(p, 3), (delays{150ms, 300ms, 600ms}));  // growth::base: 1.5 * 100 ms * 2^n
  p.grow = backoff::growth::previous;
  EXPECT_EQ(draw(p, 3), (delays{150ms, 450ms, 1350ms}));  // 1.5 * 2 * previous
}

TEST(Growth, ContinueFromGrowsTheFirstRetryFromTheGivenDelay) {
  // Seed 004's Go client: the first backoff is the think time just waited times the factor.
  auto p = backoff_policy::exponential(100ms, 2.0, 1h);
  p.grow = backoff::growth::previous;
  random_generator g{1};
  auto s = p.start();
  s.continue_from(7s);
  EXPECT_EQ(s.next_delay(g), 14s);
  EXPECT_EQ(s.next_delay(g), 28s);
  EXPECT_EQ(s.retries(), 2U);
  auto capped = p.start();
  capped.continue_from(40min);
  EXPECT_EQ(capped.next_delay(g), 1h);
  auto negative = p.start();
  negative.continue_from(-5s);  // treated as 0: the growth restarts from nothing
  EXPECT_EQ(negative.next_delay(g), 0s);
}

TEST(Growth, ContinueFromLeavesBaseGrowthAlone) {
  const auto p = backoff_policy::exponential(100ms, 2.0, 1h);
  random_generator g{1};
  auto s = p.start();
  s.continue_from(7s);
  EXPECT_EQ(s.next_delay(g), 100ms);
  EXPECT_EQ(s.next_delay(g), 200ms);
}

TEST(Growth, ContinueFromWidensTheFirstDecorrelatedDraw) {
  const auto p = backoff_policy::exponential(10ms, 2.0, 1h).with_jitter(jitter_kind::decorrelated);
  random_generator g{3};
  bool above_plain_range = false;
  for (int i = 0; i < 200; ++i) {
    auto s = p.start();
    s.continue_from(1s);
    const duration d = s.next_delay(g);
    ASSERT_GE(d, 10ms);
    ASSERT_LE(d, 3s);
    above_plain_range = above_plain_range || d > 30ms;  // 3 x initial without continue_from
  }
  EXPECT_TRUE(above_plain_range);
}

TEST(Growth, PreviousIsCappedBeforeTheJitter) {
  auto p = backoff_policy::exponential(1s, 10.0, 5s).with_jitter(jitter_kind::multiplicative);
  p.lo = 1.5;
  p.hi = 1.5;
  p.grow = backoff::growth::previous;
  // 1 s * 1.5; then min(1.5 s * 10, 5 s) * 1.5; then min(7.5 s * 10, 5 s) * 1.5, and so on.
  EXPECT_EQ(draw(p, 4), (delays{1500ms, 7500ms, 7500ms, 7500ms}));
}

TEST(JitterFirst, FalseMakesTheFirstDelayTheBareBase) {
  auto p = backoff_policy::exponential(100ms, 2.0, 10s).with_jitter(jitter_kind::full);
  p.jitter_first = false;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const delays ds = draw(p, 2, seed);
    ASSERT_EQ(ds[0], 100ms) << "seed " << seed;
    ASSERT_LE(ds[1], 200ms);
  }
  // ...while the later delays are still jittered.
  EXPECT_NE(draw(p, 2, 1)[1], draw(p, 2, 2)[1]);
}

TEST(JitterFirst, SmiraPresetFirstDelayIsExactly100ms) {
  const backoff::preset* smira = backoff::find_preset("smira");
  ASSERT_NE(smira, nullptr);
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    ASSERT_EQ(draw(smira->policy, 1, seed)[0], 100ms) << "seed " << seed;
  }
}

// ---------------------------------------------------------------------------------------------
// Each jitter's bounds, around a constant base of 1 s, over many draws of a fixed seed.

constexpr duration bound_base = 1s;
constexpr std::size_t bound_draws = 20'000;

TEST(JitterBounds, NoneIsTheBase) {
  for (duration d : jittered_constant(backoff_policy{}, bound_base, 100, 5))
    ASSERT_EQ(d, bound_base);
}

TEST(JitterBounds, FullIsBetweenZeroAndTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::full;
  const auto s = stats_of(jittered_constant(p, bound_base, bound_draws, 5));
  EXPECT_GE(s.min, 0.0);
  EXPECT_LE(s.max, ns(bound_base));
  EXPECT_LT(s.min, 0.01 * ns(bound_base));  // it does spread over the whole range
  EXPECT_GT(s.max, 0.99 * ns(bound_base));
}

TEST(JitterBounds, EqualIsBetweenHalfTheBaseAndTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::equal;
  const auto s = stats_of(jittered_constant(p, bound_base, bound_draws, 5));
  EXPECT_GE(s.min, 0.5 * ns(bound_base));
  EXPECT_LE(s.max, ns(bound_base));
  EXPECT_LT(s.min, 0.51 * ns(bound_base));
  EXPECT_GT(s.max, 0.99 * ns(bound_base));
}

TEST(JitterBounds, AdditiveIsBetweenTheBaseAndBasePlusJitterMax) {
  backoff_policy p;
  p.jitter = jitter_kind::additive;
  p.jitter_max = 250ms;
  const auto s = stats_of(jittered_constant(p, bound_base, bound_draws, 5));
  EXPECT_GE(s.min, ns(bound_base));
  EXPECT_LE(s.max, ns(bound_base + 250ms));
  EXPECT_LT(s.min, ns(bound_base + 3ms));
  EXPECT_GT(s.max, ns(bound_base + 247ms));
}

TEST(JitterBounds, MultiplicativeIsBetweenLoAndHiTimesTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::multiplicative;
  p.lo = 0.5;
  p.hi = 3.0;
  const auto s = stats_of(jittered_constant(p, bound_base, bound_draws, 5));
  EXPECT_GE(s.min, 0.5 * ns(bound_base));
  EXPECT_LE(s.max, 3.0 * ns(bound_base));
  EXPECT_LT(s.min, 0.52 * ns(bound_base));
  EXPECT_GT(s.max, 2.98 * ns(bound_base));
}

TEST(JitterBounds, ProportionalIsWithinRTimesTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::proportional;
  p.r = 0.3;
  const auto s = stats_of(jittered_constant(p, bound_base, bound_draws, 5));
  EXPECT_GE(s.min, 0.7 * ns(bound_base));
  EXPECT_LE(s.max, 1.3 * ns(bound_base));
  EXPECT_LT(s.min, 0.71 * ns(bound_base));
  EXPECT_GT(s.max, 1.29 * ns(bound_base));
}

TEST(JitterBounds, GaussianStaysWithinSevenSigmaForThisSeed) {
  backoff_policy p;
  p.jitter = jitter_kind::gaussian;
  p.sigma = 0.1;
  const auto s = stats_of(jittered_constant(p, bound_base, bound_draws, 5));
  EXPECT_GE(s.min, 0.3 * ns(bound_base));
  EXPECT_LE(s.max, 1.7 * ns(bound_base));
  EXPECT_LT(s.min, 0.8 * ns(bound_base));  // it does spread: 20000 draws reach beyond 2 sigma
  EXPECT_GT(s.max, 1.2 * ns(bound_base));
}

TEST(JitterBounds, DecorrelatedDrawsBetweenInitialAndThreeTimesThePreviousDelay) {
  const auto p =
      backoff_policy::exponential(100ms, 2.0, 10s).with_jitter(jitter_kind::decorrelated);
  const delays ds = draw(p, bound_draws, 5);
  duration previous = 100ms;  // p0 = initial
  bool reached_max = false;
  for (duration d : ds) {
    ASSERT_GE(d, 100ms);
    ASSERT_LE(d, std::min<duration>(10s, 3 * previous));
    reached_max = reached_max || d == 10s;
    previous = d;
  }
  EXPECT_TRUE(reached_max);
}

TEST(JitterBounds, DecorrelatedStaysWithinInitialAndMaxWithEitherCapMode) {
  for (cap_mode cap : {cap_mode::before, cap_mode::after}) {
    const auto p = backoff_policy::exponential(5ms, 2.0, 2s)
                       .with_jitter(jitter_kind::decorrelated)
                       .with_cap(cap);
    const auto s = stats_of(draw(p, big_n, 11));
    EXPECT_GE(s.min, ns(5ms));
    EXPECT_LE(s.max, ns(2s));
    EXPECT_EQ(s.max, ns(2s));
  }
}

// ---------------------------------------------------------------------------------------------
// Distributions over 10^5 draws with a fixed seed; each bound is 4 standard errors of the mean
// (or of the standard deviation), computed from the distribution's own variance.

TEST(JitterDistribution, FullHasMeanHalfTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::full;
  const auto s = stats_of(jittered_constant(p, bound_base, big_n, 101));
  const double se =
      ns(bound_base) / sqrt12 / sqrt_n;  // U(0, bound_base): sd = bound_base / sqrt(12)
  EXPECT_NEAR(s.mean, 0.5 * ns(bound_base), 4 * se);
  EXPECT_NEAR(s.sd, ns(bound_base) / sqrt12, 4 * uniform_sd_se(ns(bound_base)));
}

TEST(JitterDistribution, EqualHasMeanThreeQuartersOfTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::equal;
  const auto s = stats_of(jittered_constant(p, bound_base, big_n, 102));
  const double se = 0.5 * ns(bound_base) / sqrt12 / sqrt_n;  // U(0, bound_base/2)
  EXPECT_NEAR(s.mean, 0.75 * ns(bound_base), 4 * se);
}

TEST(JitterDistribution, MultiplicativeOneToTwoHasMeanOneAndAHalfBases) {
  backoff_policy p;
  p.jitter = jitter_kind::multiplicative;
  p.lo = 1.0;
  p.hi = 2.0;
  const auto s = stats_of(jittered_constant(p, bound_base, big_n, 103));
  const double se =
      ns(bound_base) / sqrt12 / sqrt_n;  // bound_base * U(1, 2): sd = bound_base / sqrt(12)
  EXPECT_NEAR(s.mean, 1.5 * ns(bound_base), 4 * se);
}

TEST(JitterDistribution, ProportionalHasMeanTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::proportional;
  p.r = 0.2;
  const auto s = stats_of(jittered_constant(p, bound_base, big_n, 104));
  const double sd = 2 * 0.2 * ns(bound_base) / sqrt12;  // bound_base * U(0.8, 1.2)
  EXPECT_NEAR(s.mean, ns(bound_base), 4 * sd / sqrt_n);
  EXPECT_NEAR(s.sd, sd, 4 * uniform_sd_se(2 * 0.2 * ns(bound_base)));
}

TEST(JitterDistribution, GaussianHasMeanTheBaseAndSdSigmaTimesTheBase) {
  backoff_policy p;
  p.jitter = jitter_kind::gaussian;
  p.sigma = 0.1;
  const auto s = stats_of(jittered_constant(p, bound_base, big_n, 105));
  const double sd = 0.1 * ns(bound_base);
  EXPECT_NEAR(s.mean, ns(bound_base), 4 * sd / sqrt_n);
  EXPECT_NEAR(s.sd, sd, 4 * sd / std::sqrt(2.0 * big_nd));  // SE of a normal sample's sd
}

TEST(JitterDistribution, GaussianWithAbsoluteSdIgnoresTheBaseSize) {
  backoff_policy p;
  p.jitter = jitter_kind::gaussian;
  p.sd = 50ms;
  const auto s = stats_of(jittered_constant(p, 10s, big_n, 106));
  EXPECT_NEAR(s.mean, ns(10s), 4 * ns(50ms) / sqrt_n);
  EXPECT_NEAR(s.sd, ns(50ms), 4 * ns(50ms) / std::sqrt(2.0 * big_nd));
}

TEST(JitterDistribution, AdditiveHasMeanBasePlusHalfTheJitterMax) {
  backoff_policy p;
  p.jitter = jitter_kind::additive;
  p.jitter_max = 1s;
  const auto s = stats_of(jittered_constant(p, 2s, big_n, 107));
  const double se = ns(1s) / sqrt12 / sqrt_n;
  EXPECT_NEAR(s.mean, ns(2s) + 0.5 * ns(1s), 4 * se);
}

// ---------------------------------------------------------------------------------------------
// Determinism.

TEST(Determinism, SameSeedGivesTheSameDelaysForEveryJitter) {
  for (jitter_kind j :
       {jitter_kind::none, jitter_kind::full, jitter_kind::equal, jitter_kind::decorrelated,
        jitter_kind::additive, jitter_kind::multiplicative, jitter_kind::proportional,
        jitter_kind::gaussian}) {
    const auto p = backoff_policy::exponential(10ms, 2.0, 5s).with_jitter(j);
    EXPECT_EQ(draw(p, 500, 77), draw(p, 500, 77)) << backoff::to_string(j);
    if (j != jitter_kind::none) {
      EXPECT_NE(draw(p, 500, 77), draw(p, 500, 78)) << backoff::to_string(j);
    }
  }
}

TEST(Determinism, ACopiedStateContinuesIdentically) {
  const auto p = backoff_policy::exponential(10ms, 1.7, 5s).with_jitter(jitter_kind::decorrelated);
  random_generator g{9};
  auto s = p.start();
  for (int i = 0; i < 7; ++i) (void)s.next_delay(g);
  auto copy = s;
  random_generator g2 = g;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s.next_delay(g), copy.next_delay(g2)) << i;
  EXPECT_EQ(s.retries(), copy.retries());
}

TEST(Determinism, OnePolicyServesIndependentStates) {
  const auto p = backoff_policy::exponential(1s, 2.0, 30s);
  random_generator g{1};
  auto a = p.start();
  (void)a.next_delay(g);
  (void)a.next_delay(g);
  auto fresh = p.start();
  EXPECT_EQ(fresh.next_delay(g), 1s);
  EXPECT_EQ(a.next_delay(g), 4s);
}

// A delay is an exact function of the generator's bits (the transforms are ours, not the
// standard library's), shown here with scripted words: top bit only is u = 0.5, all ones is the
// largest u below 1.
TEST(Determinism, DelaysAreExactFunctionsOfTheDrawnBits) {
  const auto p = backoff_policy::exponential(1s, 2.0, 30s).with_jitter(jitter_kind::full);
  scripted_generator g{{1ULL << 63, 0, ~0ULL, 1ULL << 62}};
  auto s = p.start();
  EXPECT_EQ(s.next_delay(g), 500ms);  // 1 s * 0.5
  EXPECT_EQ(s.next_delay(g), 0ns);    // 2 s * 0
  EXPECT_EQ(s.next_delay(g), 4s);     // 4 s * (1 - 2^-53), rounded to the nanosecond
  EXPECT_EQ(s.next_delay(g), 2s);     // 8 s * 0.25
}

TEST(Determinism, WorksThroughATypeErasedRandomRef) {
  const auto p = backoff_policy::exponential(1s, 2.0, 30s).with_jitter(jitter_kind::equal);
  random_generator g1{3};
  random_generator g2{3};
  backoff::random_ref ref = g2;
  auto s1 = p.start();
  auto s2 = p.start();
  for (int i = 0; i < 50; ++i) ASSERT_EQ(s1.next_delay(g1), s2.next_delay(ref));
}

// ---------------------------------------------------------------------------------------------
// validate(): contradictions are reported on one line.

TEST(Validate, AcceptsTheDefaultsAndEveryPreset) {
  EXPECT_NO_THROW(backoff_policy{}.validate());
  for (const auto& pr : backoff::presets()) EXPECT_NO_THROW(pr.policy.validate()) << pr.name;
}

TEST(Validate, RejectsContradictions) {
  const auto expect_error = [](const backoff_policy& p, const std::string& fragment) {
    try {
      p.validate();
      ADD_FAILURE() << "no error for " << p.to_string();
    } catch (const backoff::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(backoff_policy::exponential(1s, 0.5, 30s), "factor");
  expect_error(backoff_policy::exponential(1s, std::nan(""), 30s), "factor");
  expect_error(backoff_policy::exponential(10s, 2.0, 1s), "smaller than initial");
  expect_error(backoff_policy::constant(-1s), "initial");
  expect_error(backoff_policy::linear(1s, -1s), "step");
  auto m = backoff_policy{}.with_jitter(jitter_kind::multiplicative);
  m.lo = 2;
  m.hi = 1;
  expect_error(m, "lo <= hi");
  auto r = backoff_policy{}.with_jitter(jitter_kind::proportional);
  r.r = 1.5;
  expect_error(r, "r=1.5");
  auto g = backoff_policy{}.with_jitter(jitter_kind::gaussian);
  g.sigma = -0.1;
  expect_error(g, "sigma");
  auto gp = backoff_policy::linear(1s, 1s);
  gp.grow = backoff::growth::previous;
  expect_error(gp, "grow=previous");
}

// ---------------------------------------------------------------------------------------------
// The random transforms.

TEST(Random, Uniform01UsesTheTop53Bits) {
  scripted_generator g{{0, ~0ULL, 1ULL << 11, (1ULL << 11) - 1, 1ULL << 63}};
  EXPECT_EQ(backoff::uniform01(g), 0.0);
  EXPECT_EQ(backoff::uniform01(g), 1.0 - 0x1.0p-53);  // the largest value, below 1
  EXPECT_EQ(backoff::uniform01(g), 0x1.0p-53);
  EXPECT_EQ(backoff::uniform01(g), 0.0);  // the low 11 bits are dropped
  EXPECT_EQ(backoff::uniform01(g), 0.5);
}

TEST(Random, Uniform01IsInTheHalfOpenUnitIntervalWithMeanOneHalf) {
  random_generator g{1234};
  double sum = 0;
  for (std::size_t i = 0; i < big_n; ++i) {
    const double u = backoff::uniform01(g);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / big_nd, 0.5, 4 / sqrt12 / sqrt_n);
}

TEST(Random, UniformMapsOntoTheGivenRange) {
  random_generator g{5};
  double lo = 1e9;
  double hi = -1e9;
  for (int i = 0; i < 10'000; ++i) {
    const double x = backoff::uniform(g, -3.0, 5.0);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GE(lo, -3.0);
  EXPECT_LT(hi, 5.0);
  EXPECT_LT(lo, -2.99);
  EXPECT_GT(hi, 4.99);
}

TEST(Random, StandardNormalHasMeanZeroAndVarianceOne) {
  random_generator g{4321};
  double sum = 0;
  double sq = 0;
  for (std::size_t i = 0; i < big_n; ++i) {
    const double z = backoff::standard_normal(g);
    sum += z;
    sq += z * z;
  }
  const double mean = sum / big_nd;
  const double variance = sq / big_nd - mean * mean;
  EXPECT_NEAR(mean, 0.0, 4 / sqrt_n);
  EXPECT_NEAR(variance, 1.0, 4 * std::sqrt(2.0) / sqrt_n);  // Var(z^2) = 2
}

TEST(Random, StandardNormalDependsOnlyOnTheGeneratorState) {
  // The polar method's second variate is dropped: the same state gives the same value.
  random_generator g1{77};
  random_generator g2{77};
  (void)backoff::standard_normal(g1);
  (void)backoff::standard_normal(g2);
  EXPECT_EQ(backoff::standard_normal(g1), backoff::standard_normal(g2));
}

TEST(Random, ExponentialVariateHasTheGivenMeanAndIsNeverNegative) {
  random_generator g{99};
  double sum = 0;
  for (std::size_t i = 0; i < big_n; ++i) {
    const double x = backoff::exponential_variate(g, 2.5);
    ASSERT_GE(x, 0.0);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
  }
  EXPECT_NEAR(sum / big_nd, 2.5, 4 * 2.5 / sqrt_n);  // sd of Exp equals its mean
}

TEST(Random, ExponentialVariateIsFiniteForTheExtremeDraws) {
  scripted_generator g{{0, ~0ULL}};
  EXPECT_EQ(backoff::exponential_variate(g, 1.0), 0.0);
  const double largest = backoff::exponential_variate(g, 1.0);
  EXPECT_TRUE(std::isfinite(largest));
  EXPECT_NEAR(largest, 53 * std::log(2.0), 1e-9);
}

// xoshiro256** 1.0 as published (https://prng.di.unimi.it/xoshiro256starstar.c), its state
// filled by the SplitMix64 generator (https://prng.di.unimi.it/splitmix64.c) from the seed.
struct reference_xoshiro256ss {
  std::uint64_t s[4];
  explicit reference_xoshiro256ss(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (std::uint64_t& word : s) {
      std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

TEST(Random, GeneratorIsXoshiro256StarStarSeededBySplitMix64) {
  for (std::uint64_t seed : {0ULL, 1ULL, 42ULL, 0xdeadbeefULL, ~0ULL}) {
    random_generator g{seed};
    reference_xoshiro256ss ref{seed};
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(g(), ref.next()) << "seed " << seed << " draw " << i;
  }
}

TEST(Random, SplitMix64MatchesTheReferenceOutput) {
  // The first output of the reference SplitMix64 seeded with 0.
  EXPECT_EQ(backoff::splitmix64(0), 0xe220a8397b1dcdafULL);
}

TEST(Random, DeriveSeedGivesDistinctReproducibleStreams) {
  static_assert(backoff::derive_seed(42, 7) == backoff::derive_seed(42, 7));
  EXPECT_NE(backoff::derive_seed(42, 0), backoff::derive_seed(42, 1));
  EXPECT_NE(backoff::derive_seed(42, 1), backoff::derive_seed(43, 1));
  EXPECT_NE(backoff::derive_seed(1, 2), backoff::derive_seed(2, 1));
  EXPECT_NE(backoff::derive_seed(42, 0), 42u);
  // 1000 streams of one run: all seeds distinct, all first draws distinct.
  std::vector<std::uint64_t> seeds;
  std::vector<std::uint64_t> firsts;
  for (std::uint64_t stream = 0; stream < 1000; ++stream) {
    seeds.push_back(backoff::derive_seed(42, stream));
    random_generator g{seeds.back()};
    firsts.push_back(g());
  }
  std::sort(seeds.begin(), seeds.end());
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(std::adjacent_find(seeds.begin(), seeds.end()), seeds.end());
  EXPECT_EQ(std::adjacent_find(firsts.begin(), firsts.end()), firsts.end());
}

TEST(Random, DerivedStreamsAreUncorrelated) {
  random_generator a{backoff::derive_seed(42, 0)};
  random_generator c{backoff::derive_seed(42, 1)};
  double sab = 0;
  for (std::size_t i = 0; i < big_n; ++i) {
    sab += (backoff::uniform01(a) - 0.5) * (backoff::uniform01(c) - 0.5);
  }
  // Cov of independent U(0,1): 0, with sd 1/12 per product.
  EXPECT_NEAR(sab / big_nd, 0.0, 4.0 / 12.0 / sqrt_n);
}

}  // namespace
