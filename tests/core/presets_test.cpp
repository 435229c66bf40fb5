// SPDX-License-Identifier: Apache-2.0
// The presets of SPEC 1.3 (presets.hpp), each checked against the formula its source gives (as
// cited in src/core/presets.cpp): exact values where the formula is deterministic, bounds per
// retry over many runs where it is random, and means where the bounds alone would not tell two
// readings apart. Seeds are fixed, so every run draws the same numbers.
#include "backoff/presets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "statistics.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::random_generator;
using backoff::test::sqrt12;

const backoff::backoff_policy& preset(std::string_view name) {
  const backoff::preset* p = backoff::find_preset(name);
  if (p == nullptr) throw std::runtime_error("no preset " + std::string(name));
  return p->policy;
}

// runs[r][n]: the delay before retry n of run r; each run is a fresh operation, all runs draw
// from one generator.
std::vector<std::vector<duration>> runs(const backoff::backoff_policy& p, std::size_t count,
                                        std::size_t retries, std::uint64_t seed) {
  random_generator g{seed};
  std::vector<std::vector<duration>> out(count);
  for (auto& run : out) {
    auto state = p.start();
    for (std::size_t n = 0; n < retries; ++n) run.push_back(state.next_delay(g));
  }
  return out;
}

// The delays before retry n across all runs.
std::vector<duration> column(const std::vector<std::vector<duration>>& rs, std::size_t n) {
  std::vector<duration> out;
  out.reserve(rs.size());
  for (const auto& run : rs) out.push_back(run.at(n));
  return out;
}

double seconds(duration d) {
  return backoff::to_seconds(d);
}

double mean_s(const std::vector<duration>& ds) {
  double sum = 0;
  for (duration d : ds) sum += seconds(d);
  return sum / static_cast<double>(ds.size());
}

double sd_s(const std::vector<duration>& ds) {
  const double m = mean_s(ds);
  double sq = 0;
  for (duration d : ds) sq += (seconds(d) - m) * (seconds(d) - m);
  return std::sqrt(sq / static_cast<double>(ds.size() - 1));
}

duration min_of(const std::vector<duration>& ds) {
  return *std::min_element(ds.begin(), ds.end());
}
duration max_of(const std::vector<duration>& ds) {
  return *std::max_element(ds.begin(), ds.end());
}

duration secs(double s) {
  return std::chrono::duration_cast<duration>(std::chrono::duration<double>(s));
}

// 2^n seconds.
duration pow2_s(std::size_t n) {
  return duration{1'000'000'000LL << n};
}

constexpr std::size_t many = 20'000;
const double sqrt_many = std::sqrt(static_cast<double>(many));

// ---------------------------------------------------------------------------------------------

TEST(Presets, AllFourteenOfSpec13ExistInItsOrder) {
  const std::vector<std::string_view> expected = {"none",
                                                  "constant",
                                                  "uniform",
                                                  "exponential",
                                                  "exponential-random",
                                                  "gcp-iot",
                                                  "ethernet",
                                                  "ftsh",
                                                  "smira",
                                                  "smira-go",
                                                  "aws-full",
                                                  "aws-equal",
                                                  "aws-decorrelated",
                                                  "grpc"};
  std::vector<std::string_view> names;
  for (const auto& p : backoff::presets()) names.push_back(p.name);
  EXPECT_EQ(names, expected);
}

TEST(Presets, EachHasAFormulaASourceAndValidParameters) {
  for (const auto& p : backoff::presets()) {
    EXPECT_FALSE(p.formula.empty()) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
    EXPECT_NO_THROW(p.policy.validate()) << p.name;
    const backoff::preset* found = backoff::find_preset(p.name);
    ASSERT_NE(found, nullptr) << p.name;
    EXPECT_EQ(found->policy, p.policy) << p.name;
  }
}

TEST(Presets, FindPresetReturnsNullForAnUnknownName) {
  EXPECT_EQ(backoff::find_preset("nope"), nullptr);
  EXPECT_EQ(backoff::find_preset(""), nullptr);
  EXPECT_EQ(backoff::find_preset("GRPC"), nullptr);    // names are case-sensitive
  EXPECT_EQ(backoff::find_preset("linear"), nullptr);  // a schedule, not a preset
}

// ---------------------------------------------------------------------------------------------
// Seed 001's five tick-model strategies (one unit = 1 s).

TEST(Presets, NoneRetriesAtOnce) {
  for (const auto& run : runs(preset("none"), 10, 50, 1)) {
    for (duration d : run) ASSERT_EQ(d, 0ns);
  }
}

TEST(Presets, ConstantWaitsExactlyFiveUnits) {
  for (const auto& run : runs(preset("constant"), 10, 50, 1)) {
    for (duration d : run) ASSERT_EQ(d, 5s);
  }
}

TEST(Presets, UniformDrawsBetweenZeroAndFiveUnitsWithMeanTwoAndAHalf) {
  const auto rs = runs(preset("uniform"), many, 5, 2);
  for (std::size_t n = 0; n < 5; ++n) {
    const auto col = column(rs, n);
    EXPECT_GE(min_of(col), 0ns);
    EXPECT_LE(max_of(col), 5s);
    EXPECT_NEAR(mean_s(col), 2.5, 4 * 5 / sqrt12 / sqrt_many) << "retry " << n;
  }
}

TEST(Presets, ExponentialIsTwoToTheAttemptsCappedAtThirtyUnits) {
  // min(2^attempts, 30) with attempts = n + 1.
  const auto rs = runs(preset("exponential"), 3, 10, 3);
  const std::vector<duration> expected = {2s, 4s, 8s, 16s, 30s, 30s, 30s, 30s, 30s, 30s};
  for (const auto& run : rs) EXPECT_EQ(run, expected);
}

TEST(Presets, ExponentialRandomIsUniformBelowTheExponentialValue) {
  const auto rs = runs(preset("exponential-random"), many, 8, 4);
  for (std::size_t n = 0; n < 8; ++n) {
    const double v = std::min(std::pow(2.0, static_cast<double>(n + 1)), 30.0);
    const auto col = column(rs, n);
    EXPECT_GE(min_of(col), 0ns);
    EXPECT_LE(max_of(col), secs(v)) << "retry " << n;
    EXPECT_GT(max_of(col), secs(0.99 * v)) << "retry " << n;
    EXPECT_NEAR(mean_s(col), v / 2, 4 * v / sqrt12 / sqrt_many) << "retry " << n;
  }
}

// ---------------------------------------------------------------------------------------------
// Seed 002 (Cloud IoT Core): min(2^n s + U(0, 1000 ms), 64 s).

TEST(Presets, GcpIotAddsUpToOneSecondThenCapsAt64s) {
  const auto rs = runs(preset("gcp-iot"), many, 10, 5);
  for (std::size_t n = 0; n < 6; ++n) {  // 1 s .. 32 s: 2^n s plus up to one second
    const auto col = column(rs, n);
    EXPECT_GE(min_of(col), pow2_s(n)) << "retry " << n;
    EXPECT_LE(max_of(col), pow2_s(n) + 1s) << "retry " << n;
    EXPECT_NEAR(mean_s(col), seconds(pow2_s(n)) + 0.5, 4 / sqrt12 / sqrt_many) << "retry " << n;
  }
  for (std::size_t n = 6; n < 10; ++n) {  // 64 s + U(0, 1 s), capped after the jitter: 64 s
    for (duration d : column(rs, n)) ASSERT_EQ(d, 64s) << "retry " << n;
  }
}

TEST(Presets, GcpIotWithMax32sCapsTheRandomPartToo) {
  auto p = preset("gcp-iot");
  p.max = 32s;
  const auto rs = runs(p, 1000, 8, 6);
  const auto at16 = column(rs, 4);
  EXPECT_GE(min_of(at16), 16s);
  EXPECT_LE(max_of(at16), 17s);
  for (std::size_t n = 5; n < 8; ++n) {
    for (duration d : column(rs, n)) ASSERT_EQ(d, 32s) << "retry " << n;
  }
}

// ---------------------------------------------------------------------------------------------
// Seed 000 (Thain): min(R * T * 2^N, M), R ~ U(1, 2), T = 1 s, M = 60 s.

TEST(Presets, EthernetMultipliesTwoToTheNSecondsByOneToTwoThenCapsAt60s) {
  const auto rs = runs(preset("ethernet"), many, 9, 7);
  for (std::size_t n = 0; n < 5; ++n) {  // 1 s .. 16 s base: [2^n, 2^(n+1)] s
    const auto col = column(rs, n);
    EXPECT_GE(min_of(col), pow2_s(n)) << "retry " << n;
    EXPECT_LE(max_of(col), pow2_s(n + 1)) << "retry " << n;
    const double b = seconds(pow2_s(n));
    EXPECT_NEAR(mean_s(col), 1.5 * b, 4 * b / sqrt12 / sqrt_many) << "retry " << n;
  }
  // Base 32 s: R * 32 s in [32, 64] s, capped after: [32, 60] s, with some exactly 60 s.
  const auto at32 = column(rs, 5);
  EXPECT_GE(min_of(at32), 32s);
  EXPECT_EQ(max_of(at32), 60s);
  EXPECT_GT(std::count(at32.begin(), at32.end(), 60s), static_cast<std::ptrdiff_t>(many / 10));
  for (std::size_t n = 6; n < 9; ++n) {  // base 64 s and more, R >= 1: always the cap
    for (duration d : column(rs, n)) ASSERT_EQ(d, 60s) << "retry " << n;
  }
}

// ---------------------------------------------------------------------------------------------
// The Fault Tolerant Shell: min(2^n s, 3600 s) * U(1, 2).

TEST(Presets, FtshDoublesFromOneSecondTimesOneToTwoWithTheBaseCappedAtOneHour) {
  const auto rs = runs(preset("ftsh"), 2000, 16, 8);
  for (std::size_t n = 0; n < 16; ++n) {
    const duration base = std::min<duration>(pow2_s(n), 3600s);
    const auto col = column(rs, n);
    EXPECT_GE(min_of(col), base) << "retry " << n;
    EXPECT_LE(max_of(col), 2 * base) << "retry " << n;
  }
  // From 2^12 s on the base is the hour: the wait is between one and two hours, not the hour.
  const auto late = column(rs, 15);
  EXPECT_GT(max_of(late), 7000s);
  EXPECT_LT(min_of(late), 3700s);
  EXPECT_NEAR(mean_s(late), 5400, 4 * 3600 / sqrt12 / std::sqrt(2000.0));
}

// ---------------------------------------------------------------------------------------------
// Seed 004 (Smira).

TEST(Presets, SmiraFirstWaitIsExactly100msThenGrowsByTwoPointSevenFromTheActualDelay) {
  const auto rs = runs(preset("smira"), many, 3, 9);
  for (duration d : column(rs, 0)) ASSERT_EQ(d, 100ms);
  // delay = min(100 ms * 2.7, 10 min) = 270 ms; delay += N(0, 0.1 * 270 ms).
  const auto second = column(rs, 1);
  EXPECT_NEAR(mean_s(second), 0.270, 4 * 0.027 / sqrt_many);
  EXPECT_NEAR(sd_s(second), 0.027, 4 * 0.027 / std::sqrt(2.0 * many));
  // The third grows from the second's actual (jittered) value: 2.7 * d1 * (1 + N(0, 0.1)),
  // so its mean is 2.7 * 270 ms and it correlates with the second.
  const auto third = column(rs, 2);
  EXPECT_NEAR(mean_s(third), 0.729, 4 * 0.729 * std::sqrt(0.02) / sqrt_many);
  double cov = 0;
  const double m2 = mean_s(second);
  const double m3 = mean_s(third);
  for (std::size_t r = 0; r < many; ++r) {
    cov += (seconds(second[r]) - m2) * (seconds(third[r]) - m3);
  }
  const double correlation = cov / static_cast<double>(many - 1) / sd_s(second) / sd_s(third);
  EXPECT_NEAR(correlation, 1 / std::sqrt(2.0), 0.05);  // a shared factor of equal variance
}

TEST(Presets, SmiraCapsTheBaseAtTenMinutesAndJittersAroundIt) {
  const auto rs = runs(preset("smira"), 5000, 20, 10);
  const auto late = column(rs, 19);
  // base min(d * 2.7, 10 min) = 10 min (any d above 222 s), then + N(0, 60 s): the cap comes
  // before the jitter, so some waits exceed 10 min.
  EXPECT_NEAR(mean_s(late), 600, 4 * 60 / std::sqrt(5000.0));
  EXPECT_NEAR(sd_s(late), 60, 4 * 60 / std::sqrt(2.0 * 5000));
  EXPECT_GT(max_of(late), 10min);
}

TEST(Presets, SmiraGoFirstWaitAverages271msWithSd100ms) {
  // min(100 ms * 2.71828, 5 min) + N(0, 0.1 s); the clamp at 0 moves the mean by ~0.1 ms.
  const std::size_t n = 100'000;
  const auto first = column(runs(preset("smira-go"), n, 1, 11), 0);
  const double se = 0.1 / std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(mean_s(first), 0.271828, 4 * se + 0.0001);
  EXPECT_NEAR(sd_s(first), 0.1, 4 * 0.1 / std::sqrt(2.0 * static_cast<double>(n)));
  EXPECT_GE(min_of(first), 0ns);
  EXPECT_EQ(min_of(first), 0ns);  // about 0.3 % fall below zero and are clamped
}

TEST(Presets, SmiraGoCapsAtFiveMinutesThenAddsAbsoluteNoise) {
  const auto rs = runs(preset("smira-go"), 5000, 20, 12);
  // Growth is from the previous actual delay, so a run whose early draws fell near zero (the
  // noise is absolute) climbs later; count only the runs that reached the cap at retry 18.
  std::vector<duration> late;
  for (const auto& run : rs) {
    if (run[18] >= 299s) late.push_back(run[19]);
  }
  ASSERT_GT(late.size(), 4500u);
  // min(d * 2.71828, 5 min) = 5 min, plus N(0, 0.1 s): the noise is not relative to 5 min.
  const double n = static_cast<double>(late.size());
  EXPECT_NEAR(mean_s(late), 300, 4 * 0.1 / std::sqrt(n));
  EXPECT_NEAR(sd_s(late), 0.1, 4 * 0.1 / std::sqrt(2.0 * n));
  EXPECT_GT(min_of(late), 299s);
  EXPECT_LT(max_of(late), 301s);
  EXPECT_GT(max_of(late), 5min);  // the noise comes after the cap
}

// ---------------------------------------------------------------------------------------------
// The AWS Architecture Blog: base 5 ms, cap 2 s, v = min(2 s, 5 ms * 2^(n+1)).

duration aws_v(std::size_t n) {
  return std::min<duration>(2s, 5ms * (1LL << (n + 1)));
}

TEST(Presets, AwsFullDrawsUniformlyBelowMinOf2sAnd5msTimesTwoToTheNPlusOne) {
  const auto rs = runs(preset("aws-full"), many, 12, 13);
  for (std::size_t n = 0; n < 12; ++n) {
    const auto col = column(rs, n);
    const double v = seconds(aws_v(n));
    EXPECT_GE(min_of(col), 0ns) << "retry " << n;
    EXPECT_LE(max_of(col), aws_v(n)) << "retry " << n;
    EXPECT_NEAR(mean_s(col), v / 2, 4 * v / sqrt12 / sqrt_many) << "retry " << n;
  }
  EXPECT_LE(max_of(column(rs, 0)), 10ms);
  EXPECT_GT(max_of(column(rs, 11)), 1990ms);
}

TEST(Presets, AwsEqualKeepsHalfAndDrawsTheOtherHalf) {
  const auto rs = runs(preset("aws-equal"), many, 12, 14);
  for (std::size_t n = 0; n < 12; ++n) {
    const auto col = column(rs, n);
    const double v = seconds(aws_v(n));
    EXPECT_GE(min_of(col), aws_v(n) / 2) << "retry " << n;
    EXPECT_LE(max_of(col), aws_v(n)) << "retry " << n;
    EXPECT_NEAR(mean_s(col), 0.75 * v, 4 * v / 2 / sqrt12 / sqrt_many) << "retry " << n;
  }
}

TEST(Presets, AwsDecorrelatedDrawsFrom5msToThreeTimesTheLastSleepCappedAt2s) {
  const auto rs = runs(preset("aws-decorrelated"), 2000, 30, 15);
  for (const auto& run : rs) {
    duration sleep = 5ms;  // sleep = base
    for (duration d : run) {
      ASSERT_GE(d, 5ms);
      ASSERT_LE(d, std::min<duration>(2s, 3 * sleep));
      sleep = d;
    }
  }
  // The first draw is U(5 ms, 15 ms): mean 10 ms.
  const auto first = column(rs, 0);
  EXPECT_NEAR(mean_s(first), 0.010, 4 * 0.010 / sqrt12 / std::sqrt(2000.0));
  EXPECT_EQ(max_of(column(rs, 29)), 2s);
}

// ---------------------------------------------------------------------------------------------
// gRPC connection backoff: min(1 s * 1.6^n, 120 s) * U(0.8, 1.2).

TEST(Presets, GrpcIsWithinTwentyPercentOfOnePointSixToTheNCappedAt120s) {
  const auto rs = runs(preset("grpc"), many, 14, 16);
  double base_ns = 1e9;
  for (std::size_t n = 0; n < 14; ++n) {
    const double capped = std::min(base_ns, 120e9);
    const auto col = column(rs, n);
    EXPECT_GE(min_of(col), duration{static_cast<std::int64_t>(0.8 * capped) - 1}) << n;
    EXPECT_LE(max_of(col), duration{static_cast<std::int64_t>(1.2 * capped) + 1}) << n;
    EXPECT_NEAR(mean_s(col), capped / 1e9, 4 * 0.4 * capped / 1e9 / sqrt12 / sqrt_many) << n;
    base_ns *= 1.6;
  }
  // The first delay is jittered too, and at the cap a delay can reach 144 s.
  EXPECT_NE(min_of(column(rs, 0)), max_of(column(rs, 0)));
  EXPECT_GT(max_of(column(rs, 13)), 140s);
}

}  // namespace
