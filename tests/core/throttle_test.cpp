// SPDX-License-Identifier: Apache-2.0
// Client-side throttles (throttle.hpp): the SRE rejection probability exactly on scripted counts
// and statistically with a fixed seed, its sliding window; the CUBIC send-rate limiter's
// arithmetic step by step on a manual time line (measured rate, multiplicative decrease, cubic
// regrowth, pacing), the common `throttle` interface, and the spec reader.
#include "backoff/throttle.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <variant>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/random.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::adaptive_throttle;
using backoff::adaptive_throttle_config;
using backoff::cubic_rate_config;
using backoff::cubic_rate_limiter;
using backoff::duration;
using backoff::parse_throttle;
using backoff::random_generator;
using backoff::throttle;
using backoff::throttle_config;

adaptive_throttle_config sre(double k, duration window) {
  adaptive_throttle_config c;
  c.k = k;
  c.window = window;
  return c;
}

void record(adaptive_throttle& t, duration now, int requests, int accepts) {
  for (int i = 0; i < requests; ++i) t.record(now, i < accepts);
}

// ---------------------------------------------------------------------------------------------
// Adaptive throttling (SRE).

TEST(AdaptiveThrottle, NeverRejectsAHealthyBackend) {
  adaptive_throttle t;
  EXPECT_EQ(t.reject_probability(0s), 0.0);
  record(t, 1s, 100, 100);
  EXPECT_EQ(t.reject_probability(1s), 0.0);
  record(t, 1s, 100, 50);  // 200 requests, 150 accepts: 200 - 300 < 0
  EXPECT_EQ(t.reject_probability(1s), 0.0);
}

TEST(AdaptiveThrottle, ProbabilityIsTheBooksFormula) {
  adaptive_throttle t;  // k = 2
  record(t, 1s, 10, 0);
  EXPECT_DOUBLE_EQ(t.reject_probability(1s), 10.0 / 11.0);
  record(t, 1s, 10, 3);  // 20 requests, 3 accepts
  EXPECT_DOUBLE_EQ(t.reject_probability(1s), (20.0 - 6.0) / 21.0);
  adaptive_throttle aggressive{sre(1.1, 2min)};
  record(aggressive, 1s, 20, 10);
  EXPECT_DOUBLE_EQ(aggressive.reject_probability(1s), (20.0 - 11.0) / 21.0);
  const auto c = aggressive.window_counts(1s);
  EXPECT_EQ(c.requests, 20U);
  EXPECT_EQ(c.accepts, 10U);
}

TEST(AdaptiveThrottle, CountsOverTheLastTwoMinutes) {
  adaptive_throttle t;  // 2 min in ten slices of 12 s
  record(t, 0s, 10, 0);
  EXPECT_DOUBLE_EQ(t.reject_probability(119s), 10.0 / 11.0);
  EXPECT_EQ(t.reject_probability(120s), 0.0) << "the first slice left the window";
  record(t, 60s, 4, 4);
  record(t, 130s, 4, 0);
  EXPECT_DOUBLE_EQ(t.reject_probability(130s), (8.0 - 8.0) / 9.0);
  EXPECT_DOUBLE_EQ(t.reject_probability(180s), 4.0 / 5.0) << "the accepts at 60 s are gone";
}

TEST(AdaptiveThrottle, RejectsWithThatProbability) {
  // Fixed seeds: the counts are the same on every run and platform; the bounds are 5 sigma.
  struct script {
    int requests;
    int accepts;
  };
  for (const script s : {script{9, 2}, script{10, 0}, script{100, 30}}) {
    adaptive_throttle t;
    record(t, 1s, s.requests, s.accepts);
    const double p = t.reject_probability(1s);
    random_generator rng{7};
    constexpr int draws = 100'000;
    int rejected = 0;
    for (int i = 0; i < draws; ++i) rejected += t.should_reject(1s, rng) ? 1 : 0;
    const double sigma = std::sqrt(draws * p * (1 - p));
    EXPECT_NEAR(rejected, draws * p, 5 * sigma) << "p = " << p;
  }
}

TEST(AdaptiveThrottle, DrawsNothingWhenItCannotReject) {
  adaptive_throttle t;
  record(t, 1s, 10, 10);
  random_generator rng{3};
  const random_generator before = rng;
  EXPECT_FALSE(t.should_reject(1s, rng));
  EXPECT_EQ(rng, before);
}

// ---------------------------------------------------------------------------------------------
// CUBIC send rate (AWS SDK adaptive mode).

TEST(CubicRateLimiter, IsOffUntilTheFirstThrottle) {
  cubic_rate_limiter r;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(r.acquire(1s), 0ns);
    r.on_response(1s, false);
  }
  EXPECT_FALSE(r.snapshot().enabled);
}

TEST(CubicRateLimiter, FollowsTheSdksArithmeticStepByStep) {
  cubic_rate_limiter r;  // beta 0.7, C 0.4, smooth 0.8, min rate 0.5, min capacity 1, 0.5 s
  constexpr double eps = 1e-12;

  r.on_response(0ms, false);  // first bucket; the SDK's first measurement is ~0
  auto s = r.snapshot();
  EXPECT_EQ(s.measured_rate, 0.0);
  EXPECT_EQ(s.fill_rate, 0.5);     // max(min(inf, 2 * 0), 0.5)
  EXPECT_EQ(s.max_capacity, 1.0);  // max(0, 1)
  EXPECT_EQ(s.capacity, 0.0);

  r.on_response(100ms, false);  // same bucket; refill 0.1 s * 0.5
  s = r.snapshot();
  EXPECT_NEAR(s.capacity, 0.05, eps);

  r.on_response(600ms, false);  // bucket 0.5 s: 2 responses / 0.5 s = 4; 0.8 * 4 = 3.2
  s = r.snapshot();
  EXPECT_NEAR(s.measured_rate, 3.2, eps);
  EXPECT_NEAR(s.fill_rate, 6.4, eps);  // min(inf, 2 * 3.2)
  EXPECT_NEAR(s.max_capacity, 6.4, eps);
  EXPECT_NEAR(s.capacity, 0.3, eps);  // 0.05 + 0.5 s * 0.5, filled at the old rate

  r.on_response(1000ms, true);  // bucket 1 s: 1 / 0.5 s = 2; 0.8 * 2 + 0.2 * 3.2 = 2.24
  s = r.snapshot();
  EXPECT_TRUE(s.enabled);
  EXPECT_NEAR(s.measured_rate, 2.24, eps);
  EXPECT_NEAR(s.last_max_rate, 2.24, eps);  // not enabled before: the measured rate
  EXPECT_NEAR(s.fill_rate, 2.24 * 0.7, eps);
  EXPECT_NEAR(s.max_capacity, 2.24 * 0.7, eps);
  EXPECT_NEAR(s.capacity, 2.24 * 0.7, eps);  // 0.3 + 0.4 * 6.4 = 2.86, capped

  EXPECT_EQ(r.acquire(1000ms), 0ns);        // 1.568 tokens
  const duration wait = r.acquire(1000ms);  // 0.568 - 1 = -0.432: wait 0.432 / 1.568 s
  EXPECT_EQ(wait.count(), static_cast<std::int64_t>(std::ceil((1.0 - 0.568) / 1.568 * 1e9)));

  r.on_response(2000ms, false);  // bucket 2 s: 1 / 1 s = 1; 0.8 + 0.2 * 2.24 = 1.248
  s = r.snapshot();
  const double k = std::cbrt(2.24 * (1 - 0.7) / 0.4);
  const double cubic = 0.4 * std::pow(1.0 - k, 3.0) + 2.24;
  EXPECT_NEAR(s.measured_rate, 1.248, eps);
  EXPECT_NEAR(s.fill_rate, cubic, eps);  // below 2 * 1.248
  EXPECT_NEAR(s.capacity, -0.432 + 1.0 * 1.568, eps);

  r.on_response(2000ms, true);  // enabled: min(measured 1.248, fill rate)
  s = r.snapshot();
  EXPECT_NEAR(s.last_max_rate, 1.248, eps);
  EXPECT_NEAR(s.fill_rate, 1.248 * 0.7, eps);
  EXPECT_EQ(s.max_capacity, 1.0) << "MIN_CAPACITY";
  EXPECT_EQ(s.capacity, 1.0);
}

TEST(CubicRateLimiter, NeverFillsSlowerThanTheMinimumRate) {
  cubic_rate_limiter r;
  r.on_response(0s, true);  // measured 0: the rate would be 0
  EXPECT_EQ(r.snapshot().fill_rate, 0.5);
  EXPECT_EQ(r.acquire(0s), 2s) << "an empty bucket at 0.5 tokens per second";
  EXPECT_EQ(r.acquire(0s), 4s) << "the next sender queues behind";
  EXPECT_EQ(r.acquire(4s), 2s) << "4 s refilled 2 tokens, 3 are taken: 1 short";
}

TEST(CubicRateLimiter, GrowsBackAlongTheCubicCurve) {
  cubic_rate_limiter r;
  duration t = 0s;
  const auto respond_until = [&](duration end, bool throttled_at_end) {
    for (; t < end; t += 10ms) r.on_response(t, false);  // 100 responses per second
    r.on_response(t, throttled_at_end);
    t += 10ms;
  };
  respond_until(5s, true);
  const double w_max = r.snapshot().last_max_rate;
  EXPECT_NEAR(w_max, 100.0, 1e-3) << "the measured rate of 100 per second";
  EXPECT_NEAR(r.snapshot().fill_rate, 0.7 * w_max, 1e-9);

  const double k_s = std::cbrt(w_max * (1 - 0.7) / 0.4);  // about 4.2 s to regain W_max
  const duration throttled_at = t - 10ms;
  double previous = 0.7 * w_max;
  for (int step = 1; step * 0.5 < k_s; ++step) {  // concave: rising toward W_max
    respond_until(throttled_at + step * 500ms, false);
    const double rate = r.snapshot().fill_rate;
    EXPECT_GT(rate, previous);
    EXPECT_LT(rate, w_max);
    previous = rate;
  }
  const duration at_k =
      throttled_at + std::chrono::duration_cast<duration>(std::chrono::duration<double>(k_s));
  for (; t < at_k; t += 10ms) r.on_response(t, false);
  r.on_response(at_k, false);
  EXPECT_NEAR(r.snapshot().fill_rate, w_max, 1e-6) << "the plateau at K";
  t = at_k + 10ms;
  respond_until(throttled_at + 8s, false);
  EXPECT_GT(r.snapshot().fill_rate, w_max) << "convex beyond K: probing";
}

// ---------------------------------------------------------------------------------------------
// The common interface.

TEST(Throttle, SreRejectsAndCountsTheRejection) {
  throttle t{sre(2, 2min)};
  random_generator rng{1};
  for (int i = 0; i < 50; ++i) t.on_response(1s, /*overloaded=*/true);
  int rejected = 0;
  for (int i = 0; i < 100; ++i) {
    const auto d = t.before_send(1s, rng);
    EXPECT_EQ(d.wait, 0ns);
    rejected += d.reject ? 1 : 0;
  }
  EXPECT_GT(rejected, 80);
  const auto& sre_throttle = std::get<adaptive_throttle>(t.get());
  EXPECT_EQ(sre_throttle.window_counts(1s).requests, 50U + static_cast<unsigned>(rejected));
  EXPECT_EQ(sre_throttle.window_counts(1s).accepts, 0U);
}

TEST(Throttle, CubicPacesAfterAThrottle) {
  throttle t{cubic_rate_config{}};
  random_generator rng{1};
  EXPECT_EQ(t.before_send(0s, rng).wait, 0ns);
  t.on_response(0s, true);
  const auto first = t.before_send(0s, rng);
  EXPECT_FALSE(first.reject);
  EXPECT_EQ(first.wait, 2s);
}

// ---------------------------------------------------------------------------------------------
// Specs.

void throttle_should_fail(std::string_view text, std::string_view fragment,
                          std::source_location where = std::source_location::current()) {
  const auto fail_at = [&](const std::string& why) {
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << why;
  };
  try {
    const throttle_config c = parse_throttle(text);
    fail_at("\"" + std::string(text) + "\" parsed as " + backoff::to_string(c));
  } catch (const backoff::parse_error& e) {
    const std::string message = e.what();
    if (message.find(fragment) == std::string::npos) {
      fail_at("message: " + message + "\nexpected to contain: " + std::string(fragment));
    }
    if (message.find('\n') != std::string::npos) fail_at("not one line: " + message);
    if (message.find(std::string(text)) == std::string::npos)
      fail_at("spec not quoted: " + message);
  }
}

TEST(ThrottleSpec, ReadsTheScenarioFileExamples) {
  EXPECT_EQ(parse_throttle("sre(k=2, window=2m)"), throttle_config{sre(2, 2min)});
  EXPECT_EQ(parse_throttle("sre"), throttle_config{adaptive_throttle_config{}});
  EXPECT_EQ(parse_throttle("cubic"), throttle_config{cubic_rate_config{}});
  cubic_rate_config c;
  c.beta = 0.5;
  c.scale = 0.2;
  c.smooth = 0.5;
  c.min_rate = 1;
  c.min_capacity = 2;
  c.bucket = 1s;
  EXPECT_EQ(parse_throttle("cubic(beta=0.5, scale=0.2, smooth=0.5, min_rate=1, min_capacity=2, "
                           "bucket=1s)"),
            throttle_config{c});
}

TEST(ThrottleSpec, CanonicalTextRoundTrips) {
  EXPECT_EQ(backoff::to_string(throttle_config{sre(2, 2min)}), "sre(k=2, window=2m)");
  EXPECT_EQ(backoff::to_string(throttle_config{cubic_rate_config{}}),
            "cubic(beta=0.7, scale=0.4, smooth=0.8, min_rate=0.5, min_capacity=1, bucket=500ms)");
  const throttle_config configs[] = {sre(1.1, 30s), cubic_rate_config{}};
  for (const throttle_config& c : configs) EXPECT_EQ(parse_throttle(backoff::to_string(c)), c);
}

TEST(ThrottleSpec, RejectsBadSpecsWithOneLine) {
  throttle_should_fail("bbr()", "unknown throttle \"bbr\" (known: sre, cubic)");
  throttle_should_fail("sre(K=2)", "unknown parameter \"K\" (known: k, window)");
  throttle_should_fail("sre(k=0)", "k=0 must be in (0, 1000]");
  throttle_should_fail("sre(window=0s)", "window=0s must be in (0, 1d]");
  throttle_should_fail("cubic(beta=1)", "beta=1 must be between 0 and 1");
  throttle_should_fail("cubic(scale=-1)", "scale=-1 must be a number > 0");
  throttle_should_fail("cubic(smooth=1.5)", "smooth=1.5 must be in [0, 1]");
  throttle_should_fail("cubic(min_rate=0)", "min_rate=0 must be a number > 0");
  throttle_should_fail("cubic(min_capacity=0)", "min_capacity=0 must be a number > 0");
  throttle_should_fail("cubic(bucket=0s)", "bucket must be positive");
  throttle_should_fail("cubic(rate=5)", "unknown parameter \"rate\"");
}

}  // namespace
