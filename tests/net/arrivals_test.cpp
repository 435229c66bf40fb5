// SPDX-License-Identifier: Apache-2.0
// The open-loop generator's intended send times (net/client/arrivals.hpp): evenly spaced or
// Poisson at a fixed or ramping rate, checked against the integral of the rate; and the flags'
// grammar, whose mistakes are named.
#include "net/client/arrivals.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backoff/error.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::net::arrival_kind;
using backoff::net::arrival_schedule;
using backoff::net::parse_ramp;
using backoff::net::parse_rate;

TEST(Arrivals, RatesAcceptAUnitOrNone) {
  EXPECT_DOUBLE_EQ(parse_rate("--rate", "500", false), 500);
  EXPECT_DOUBLE_EQ(parse_rate("--rate", "500/s", false), 500);
  EXPECT_DOUBLE_EQ(parse_rate("--rate", "2/ms", false), 2000);
  EXPECT_DOUBLE_EQ(parse_rate("--rate", "120/m", false), 2);
  EXPECT_DOUBLE_EQ(parse_rate("--rate", "1.5e3/s", false), 1500);
  const auto message = [](const char* text, bool zero) -> std::string {
    try {
      (void)parse_rate("--rate", text, zero);
    } catch (const backoff::parse_error& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message("0", true), "accepted");
  EXPECT_EQ(message("0", false), "--rate: a rate must be more than 0, got \"0\"");
  EXPECT_EQ(message("5/x", false),
            "--rate: expected a rate per s, ms, m or h (as 500/s), got \"5/x\"");
  EXPECT_EQ(message("-3", false),
            "--rate: expected a rate such as 500/s or 500 (per second), got \"-3\"");
  EXPECT_EQ(message("2e7", false), "--rate: a rate is at most 1e7/s, got \"2e7\"");
  EXPECT_EQ(message("nan", false),
            "--rate: expected a rate such as 500/s or 500 (per second), got \"nan\"");
}

TEST(Arrivals, RampMistakesNameThePoint) {
  const auto message = [](const char* text) -> std::string {
    try {
      (void)parse_ramp(text);
    } catch (const backoff::parse_error& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message("0s:100/s, 60s:2000/s"), "accepted");
  EXPECT_EQ(message("5s:100/s"),
            "--ramp point 1: the first point is at 0s (where the run starts), got \"5s\"");
  EXPECT_EQ(message("0s:1/s,10s:2/s,10s:3/s"),
            "--ramp point 3: times must increase, got \"10s\" after 10s");
  EXPECT_EQ(message("0s:1/s,10s"),
            "--ramp point 2: expected TIME:RATE (as 60s:2000/s), got \"10s\"");
  EXPECT_NE(message("0s:1/s,ten:2/s").find("--ramp point 2: "), std::string::npos);
  EXPECT_NE(message("0s:1/s,10s:fast").find("--ramp point 2: expected a rate"), std::string::npos);
  EXPECT_THROW((void)backoff::net::parse_arrival("uniform"), backoff::parse_error);
}

TEST(Arrivals, ConstantSendsAreEvenlySpacedFromTimeZero) {
  arrival_schedule s(arrival_kind::constant, {{0s, 400}}, 1);
  for (int n = 0; n < 1000; ++n) {
    const auto at = s.next();
    ASSERT_TRUE(at);
    EXPECT_EQ(at->count(), n * 2'500'000LL) << n;
  }
}

// On a ramp, the n-th constant send is where the integral of the rate reaches n, exactly (no
// drift after many sends), and the rate's zero stretches are skipped.
TEST(Arrivals, ConstantSendsFollowTheIntegralOfARamp) {
  const auto points = parse_ramp("0s:100/s,10s:2000/s,20s:2000/s,30s:0/s");
  arrival_schedule s(arrival_kind::constant, points, 1);
  EXPECT_DOUBLE_EQ(s.expected_sends(duration(10s)), 10'500);
  EXPECT_DOUBLE_EQ(s.expected_sends(duration(30s)), 10'500 + 20'000 + 10'000);
  std::uint64_t n = 0;
  duration last{-1};
  while (const auto at = s.next()) {
    ASSERT_GT(*at, last);
    ASSERT_NEAR(s.expected_sends(*at), static_cast<double>(n), 1e-6 * static_cast<double>(n + 1))
        << n;
    last = *at;
    ++n;
  }
  EXPECT_EQ(n, 40'501u);  // sends 0 .. 40500: the rate is 0 after 30 s
  EXPECT_LE(last, duration(30s));

  // Nothing while the rate is zero: the first send where it starts to rise, the second where the
  // integral reaches 1 (rate 10 t over t in [0, 1]: 5 t² = 1).
  arrival_schedule gap(arrival_kind::constant, parse_ramp("0s:0/s,5s:0/s,6s:10/s"), 1);
  EXPECT_EQ(gap.next(), duration(5s));
  EXPECT_NEAR(std::chrono::duration<double>(*gap.next()).count(), 5 + std::sqrt(0.2), 1e-9);
}

// Poisson sends: counts per window are Poisson with the window's expected count (fixed seed;
// bounds at about 5 standard deviations), and gaps at a fixed rate are exponential.
TEST(Arrivals, PoissonSendsHaveTheRampsExpectedCounts) {
  const auto points = parse_ramp("0s:0/s,100s:1000/s");
  arrival_schedule s(arrival_kind::poisson, points, 42);
  std::vector<std::uint64_t> per_10s(10, 0);
  while (const auto at = s.next()) {
    if (*at >= duration(100s)) break;
    ++per_10s[static_cast<std::size_t>(*at / duration(10s))];
  }
  for (std::size_t w = 0; w < per_10s.size(); ++w) {
    const double expected =
        s.expected_sends(duration(10s) * (w + 1)) - s.expected_sends(duration(10s) * w);
    EXPECT_NEAR(static_cast<double>(per_10s[w]), expected, 5 * std::sqrt(expected) + 1) << w;
  }

  arrival_schedule fixed(arrival_kind::poisson, {{0s, 100}}, 7);
  double sum = 0, sum_sq = 0, previous = 0;
  const int n = 20'000;
  for (int i = 0; i < n; ++i) {
    const double t = std::chrono::duration<double>(*fixed.next()).count();
    const double gap = t - previous;
    previous = t;
    sum += gap;
    sum_sq += gap * gap;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.01, 5 * 0.01 / std::sqrt(n));
  // An exponential's standard deviation equals its mean.
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 0.01, 0.0005);
}

TEST(Arrivals, TheSameSeedGivesTheSameTimes) {
  arrival_schedule a(arrival_kind::poisson, {{0s, 50}}, 3), b(arrival_kind::poisson, {{0s, 50}}, 3);
  arrival_schedule c(arrival_kind::poisson, {{0s, 50}}, 4);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next();
    EXPECT_EQ(x, b.next());
    differs = differs || x != c.next();
  }
  EXPECT_TRUE(differs);
}

}  // namespace
