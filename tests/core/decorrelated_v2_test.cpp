// SPDX-License-Identifier: Apache-2.0
// jitter=decorrelated-v2 (policy.hpp): Polly v8's DecorrelatedJitterBackoffV2. The delays are
// Polly.Contrib's loop for the same uniform draws, the cap never reaches the formula's state, and
// the bounds and medians that Polly's own tests publish hold over many fixed-seed runs:
//   Polly.Contrib.WaitAndRetry src/Polly.Contrib.WaitAndRetry.Specs/
//     DecorrelatedJitterBackoffV2Specs.cs (Backoff_ResultIsInRange,
//     Backoff_should_not_overflow_to_give_negative_timespan, Backoff_WithFastFirstEqualToTrue_...)
//   App-vNext/Polly test/Polly.Core.Tests/Retry/RetryHelperTests.cs (MaxDelay_Ok,
//     GetRetryDelay_Exponential_Does_Not_Exceed_MaxDelay, ..._Is_Positive_When_No_Maximum_Delay,
//     DecorrelatedJitterBackoffV2_Meets_Specification).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "statistics.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::duration;
using backoff::jitter_kind;

backoff_policy v2_policy(duration median_first, duration max) {
  return backoff_policy::exponential(median_first, 2.0, max)
      .with_jitter(jitter_kind::decorrelated_v2);
}

// Polly.Contrib's g(t) = 2^t tanh(sqrt(pFactor t)), written as Polly writes it (Math.Pow).
double dv2_polly_g(double t) {
  return std::pow(2.0, t) * std::tanh(std::sqrt(4.0 * t));
}

// Polly.Contrib's Enumerate loop, in ns instead of ticks, fed the uniforms `g` gives.
std::vector<double> dv2_contrib_delays_ns(double median_ns, int count,
                                          backoff::random_generator g) {
  std::vector<double> out;
  double prev = 0.0;
  for (int i = 0; i < count; ++i) {
    const double next = dv2_polly_g(i + backoff::uniform01(g));
    out.push_back((next - prev) * (1 / 1.4) * median_ns);
    prev = next;
  }
  return out;
}

// A generator whose every draw is the same word: uniform01 gives word / 2^64 exactly.
struct dv2_fixed_generator {
  using result_type = std::uint64_t;
  std::uint64_t word;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return word; }
};
constexpr std::uint64_t dv2_half = std::uint64_t{1} << 63;  // uniform01 = 0.5

// Counts the words drawn through it.
struct dv2_counting_generator {
  using result_type = std::uint64_t;
  backoff::random_generator inner{5};
  int draws = 0;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() {
    ++draws;
    return inner();
  }
};

std::vector<duration> dv2_run(const backoff_policy& policy, std::uint64_t seed, int count) {
  std::vector<duration> drawn;
  backoff::for_each_delay(policy, seed, static_cast<std::uint64_t>(count),
                          [&](duration d) { drawn.push_back(d); });
  return drawn;
}

double dv2_ns(duration d) {
  return static_cast<double>(d.count());
}

TEST(DecorrelatedV2, DelaysArePollyContribsLoopForTheSameUniforms) {
  for (const std::uint64_t seed : {1u, 2u, 3u, 99u}) {
    const auto expected = dv2_contrib_delays_ns(3e9, 12, backoff::random_generator{seed});
    const auto drawn = dv2_run(v2_policy(3s, duration::max()), seed, 12);
    for (std::size_t n = 0; n < drawn.size(); ++n) {
      EXPECT_NEAR(dv2_ns(drawn[n]), expected[n], 1.0) << "seed " << seed << ", retry " << n;
    }
  }
}

TEST(DecorrelatedV2, AtUniformOneHalfTheDelaysAreTheFormulasExactly) {
  dv2_fixed_generator half{dv2_half};
  const backoff_policy policy = v2_policy(1s, duration::max());
  auto state = policy.start();
  // g(0.5) / 1.4 s = 0.897 s, then (g(1.5) - g(0.5)) / 1.4 s, ...
  double prev = 0.0;
  for (int n = 0; n < 6; ++n) {
    const double next = dv2_polly_g(n + 0.5);
    EXPECT_NEAR(dv2_ns(state.next_delay(half)), (next - prev) / 1.4 * 1e9, 1.0) << n;
    prev = next;
  }
}

// The state is g(t), Polly's `prev`, not the capped delay: capping changes each delay and
// nothing after it.
TEST(DecorrelatedV2, TheCapBoundsEachDelayAndNeverTheState) {
  const auto uncapped = dv2_run(v2_policy(1s, duration::max()), 11, 15);
  const auto capped = dv2_run(v2_policy(1s, 5s), 11, 15);
  int at_cap = 0;
  for (std::size_t n = 0; n < uncapped.size(); ++n) {
    EXPECT_EQ(capped[n], std::min(uncapped[n], duration{5s})) << n;
    at_cap += capped[n] == 5s ? 1 : 0;
  }
  EXPECT_GE(at_cap, 9);           // the test reaches the cap...
  EXPECT_LT(capped.front(), 5s);  // ...and starts below it
}

// RetryHelperTests.MaxDelay_Ok: attempt 2, delay 10 s, MaxDelay 1 s, randomizer 0.5 -> 1 s.
TEST(DecorrelatedV2, PollyMaxDelayOk) {
  double prev = 0.0;
  EXPECT_EQ(backoff::detail::polly_decorrelated_v2(2, 0.5, prev, 10e9, 1e9), 1e9);
  EXPECT_EQ(prev, dv2_polly_g(2.5));  // the state moved on as if uncapped
}

// RetryHelperTests: GetRetryDelay_Exponential_Does_Not_Exceed_MaxDelay and
// _Is_Positive_When_No_Maximum_Delay, at their attempts, delay 2 s, MaxDelay 30 s or none;
// 1024 and 1025 are where 2^t overflows (Polly#2163 gave NaN there).
TEST(DecorrelatedV2, PollysAttemptsStayPositiveAndWithinMax) {
  backoff::random_generator g{0};
  for (const std::uint32_t attempt : {1u, 2u, 3u, 4u, 10u, 100u, 1000u, 1024u, 1025u}) {
    for (const double cap : {30e9, backoff::detail::base_ceiling_ns}) {
      double prev = 0.0;
      const double d =
          backoff::detail::polly_decorrelated_v2(attempt, backoff::uniform01(g), prev, 2e9, cap);
      EXPECT_GT(d, 0.0) << attempt;
      EXPECT_LE(d, cap) << attempt;
      if (attempt >= 1024) {
        EXPECT_EQ(d, cap) << attempt;
      }
    }
  }
}

// RetryHelperTests.DecorrelatedJitterBackoffV2_Meets_Specification: for a median in
// [1 ms, 60 min] and an attempt in [1, 2048], with no previous state, 0 <= delay <=
// median * 2^attempt * 4 less one .NET tick (100 ns), at most the longest delay.
TEST(DecorrelatedV2, PollysSpecificationBoundsHold) {
  backoff::random_generator g{2024};
  for (int i = 0; i < 10000; ++i) {
    const double median = 1e6 + backoff::uniform01(g) * (3600e9 - 1e6);
    const auto attempt = static_cast<std::uint32_t>(1 + backoff::uniform01(g) * 2048);
    const double ceiling = backoff::detail::base_ceiling_ns;
    const double bound = std::min(std::max(median * std::exp2(attempt) * 4, median) - 100, ceiling);
    double prev = 0.0;
    const double d = backoff::detail::polly_decorrelated_v2(attempt, backoff::uniform01(g), prev,
                                                            median, ceiling);
    ASSERT_GE(d, 0.0) << attempt;
    ASSERT_LE(d, bound) << "median " << median << " ns, attempt " << attempt;
  }
}

// DecorrelatedJitterBackoffV2Specs.Backoff_ResultIsInRange: seeds 0..999, median 3 s, 6 retries;
// try t (from 1) waits between 0 and median * (t < 2 ? 2^(t+1) : 2^(t+1) - 2^(t-1)).
TEST(DecorrelatedV2, PollyContribResultIsInRange) {
  const backoff_policy policy = v2_policy(3s, duration::max());
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const auto drawn = dv2_run(policy, seed, 6);
    for (int t = 1; t <= 6; ++t) {
      const double factor = t < 2 ? std::exp2(t + 1) : std::exp2(t + 1) - std::exp2(t - 1);
      const duration d = drawn[static_cast<std::size_t>(t - 1)];
      ASSERT_GE(d, 0s) << "seed " << seed << ", try " << t;
      ASSERT_LE(dv2_ns(d), 3e9 * factor) << "seed " << seed << ", try " << t;
    }
  }
}

// Backoff_should_not_overflow_to_give_negative_timespan (100 retries), and on past where 2^t
// overflows: never negative, at most max, and max once g overflows.
TEST(DecorrelatedV2, NeverNegativeNeverAboveMaxHoweverManyRetries) {
  for (const duration max : {duration{30s}, duration::max()}) {
    const auto drawn = dv2_run(v2_policy(1s, max), 1, 1100);
    const duration longest =
        max == duration::max() ? duration{static_cast<std::int64_t>(0x1.0p62)} : max;
    for (std::size_t n = 0; n < drawn.size(); ++n) {
      ASSERT_GE(drawn[n], 0s) << n;
      ASSERT_LE(drawn[n], longest) << n;
    }
    EXPECT_EQ(drawn.back(), longest);
    EXPECT_EQ(drawn[1030], longest);
  }
}

// Polly returns 0 for a zero delay (RetryHelperTests.Exponential_Ok with TimeSpan.Zero).
TEST(DecorrelatedV2, AZeroMedianWaitsNothingEvenPastTheOverflow) {
  for (const duration d : dv2_run(v2_policy(0s, 30s), 4, 1100)) ASSERT_EQ(d, 0s);
}

// Backoff_WithFastFirstEqualToTrue_ResultIsZero: with fastFirst, retry 2 is the formula's try 1
// with no previous state. jitter_first=false gives the bare base first (ours: initial, not 0),
// then the same.
TEST(DecorrelatedV2, JitterFirstFalseStartsTheFormulaAtTryOne) {
  backoff_policy policy = v2_policy(2s, duration::max());
  policy.jitter_first = false;
  dv2_fixed_generator half{dv2_half};
  auto state = policy.start();
  EXPECT_EQ(state.next_delay(half), 2s);
  EXPECT_NEAR(dv2_ns(state.next_delay(half)), dv2_polly_g(1.5) / 1.4 * 2e9, 1.0);
}

TEST(DecorrelatedV2, DrawsOneWordPerDelayAndIgnoresContinueFrom) {
  const backoff_policy policy = v2_policy(1s, 60s);
  dv2_counting_generator counted;
  auto state = policy.start();
  auto continued = policy.start();
  continued.continue_from(40s);
  dv2_counting_generator twin;
  for (int n = 0; n < 20; ++n) {
    EXPECT_EQ(state.next_delay(counted), continued.next_delay(twin)) << n;
    EXPECT_EQ(counted.draws, n + 1);
  }
}

// Polly's doc comment: the median first delay approximates medianFirstRetryDelay and each later
// median about doubles. g is increasing, so the first delay's median is exactly g(0.5) / 1.4 *
// median (0.897 of it): half the draws must fall below it, within 4 standard errors.
TEST(DecorrelatedV2, MediansSitNearTheMedianFirstDelayAndDouble) {
  constexpr int runs = 20001;
  constexpr int retries = 9;
  const backoff_policy policy = v2_policy(1s, duration::max());
  std::vector<std::vector<double>> by_retry(retries);
  for (int r = 0; r < runs; ++r) {
    const auto drawn =
        dv2_run(policy, backoff::derive_seed(17, static_cast<std::uint64_t>(r)), retries);
    for (int n = 0; n < retries; ++n) by_retry[n].push_back(dv2_ns(drawn[n]) / 1e9);
  }
  const double first_median = dv2_polly_g(0.5) / 1.4;
  const auto below = std::count_if(by_retry[0].begin(), by_retry[0].end(),
                                   [&](double d) { return d < first_median; });
  EXPECT_NEAR(static_cast<double>(below) / runs, 0.5, 4 * 0.5 / std::sqrt(runs));
  std::vector<double> medians;
  for (auto& drawn : by_retry) {
    std::nth_element(drawn.begin(), drawn.begin() + runs / 2, drawn.end());
    medians.push_back(drawn[runs / 2]);
  }
  EXPECT_NEAR(medians[0], 0.897, 0.02);
  EXPECT_NEAR(medians[1], 1.14, 0.05);
  for (int n = 2; n < retries; ++n) {
    EXPECT_GT(medians[n], medians[n - 1]) << n;
    EXPECT_NEAR(medians[n] / std::exp2(n - 1), 1.0, 0.05) << "retry " << n;
  }
}

TEST(DecorrelatedV2, SpecTextRoundTripsAndNamesTheJitter) {
  const backoff_policy p =
      backoff::parse_policy("exponential(initial=250ms,max=20s,jitter=decorrelated-v2)");
  EXPECT_EQ(p.jitter, jitter_kind::decorrelated_v2);
  EXPECT_EQ(p.initial, 250ms);
  EXPECT_EQ(p.max, 20s);
  // factor is written though unused, as for `decorrelated`: the canonical text of a schedule.
  EXPECT_EQ(p.to_string(), "exponential(initial=250ms, factor=2, max=20s, jitter=decorrelated-v2)");
  EXPECT_EQ(backoff::parse_policy(p.to_string()), p);
  backoff_policy capped_after = p.with_cap(backoff::cap_mode::after);
  capped_after.jitter_first = false;
  EXPECT_EQ(backoff::parse_policy(capped_after.to_string()), capped_after);
}

TEST(DecorrelatedV2, AMisspelledNameSuggestsIt) {
  try {
    (void)backoff::parse_policy("exponential(jitter=decorrelated_v2)");
    FAIL() << "decorrelated_v2 parsed";
  } catch (const backoff::parse_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("decorrelated-v2"), std::string::npos) << what;
    EXPECT_NE(what.find("exponential(jitter=decorrelated_v2)"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
