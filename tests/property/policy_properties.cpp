// SPDX-License-Identifier: Apache-2.0
// Properties of policies and durations over arbitrary valid inputs (rapidcheck, through its
// gtest integration): delays are never negative, the cap holds where it is documented to, the
// jitter-free base never decreases, a seed fixes the sequence, and the text forms round-trip.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/retry.hpp"
#include "backoff/spec.hpp"
#include "recording_env.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::cap_mode;
using backoff::duration;
using backoff::jitter_kind;
using backoff::schedule_kind;

constexpr std::int64_t second = 1'000'000'000;

duration any_duration(std::int64_t below) {
  return duration{*rc::gen::inRange<std::int64_t>(0, below)};
}

// Mostly everyday values, sometimes anything up to the int64 limit (about 292 years).
duration any_magnitude(std::int64_t usual) {
  const std::int64_t limit = *rc::gen::weightedElement<std::int64_t>(
      {{8, usual}, {1, std::numeric_limits<std::int64_t>::max()}});
  return any_duration(limit);
}

// A number in [lo, hi] with a step of 1e-5, so that shrinking finds simple values.
double any_number(double lo, double hi) {
  const int steps = static_cast<int>((hi - lo) * 100'000);
  return lo + static_cast<double>(*rc::gen::inRange(0, steps + 1)) / 100'000;
}

jitter_kind any_jitter() {
  return static_cast<jitter_kind>(*rc::gen::inRange(0, 8));
}

// An arbitrary valid policy, with every parameter that its schedule and jitter do not use at its
// default (the form parse_policy gives, so that equality is behaviour). `jitter` and `cap` pin
// those choices when given.
backoff_policy any_policy(std::optional<jitter_kind> jitter = std::nullopt,
                          std::optional<cap_mode> cap = std::nullopt) {
  backoff_policy p;
  p.schedule = *rc::gen::element(schedule_kind::constant, schedule_kind::linear,
                                 schedule_kind::exponential, schedule_kind::fibonacci);
  p.initial = any_magnitude(1000 * second);
  if (p.schedule == schedule_kind::exponential) {
    p.factor = any_number(1.0, 10.0);
    p.grow = *rc::gen::arbitrary<bool>() ? backoff::growth::previous : backoff::growth::base;
  }
  if (p.schedule == schedule_kind::linear) p.step = any_magnitude(100 * second);
  if (*rc::gen::inRange(0, 8) == 0) {
    p.max = duration::max();  // max=none
  } else if (p.schedule == schedule_kind::constant && *rc::gen::arbitrary<bool>()) {
    p.max = any_magnitude(10'000 * second);  // a constant delay may exceed its cap
  } else {
    p.max = p.initial + std::min(any_magnitude(10'000 * second), duration::max() - p.initial);
  }
  p.jitter = jitter ? *jitter : any_jitter();
  switch (p.jitter) {
    case jitter_kind::additive:
      p.jitter_max = any_magnitude(10 * second);
      break;
    case jitter_kind::multiplicative:
      p.lo = any_number(0.0, 3.0);
      p.hi = p.lo + any_number(0.0, 3.0);
      break;
    case jitter_kind::proportional:
      p.r = any_number(0.0, 1.0);
      break;
    case jitter_kind::gaussian:
      if (*rc::gen::arbitrary<bool>()) {
        p.sd = 1ns + any_magnitude(10 * second) / 2;
      } else {
        p.sigma = any_number(0.0, 1.0);
      }
      break;
    default:
      break;
  }
  p.cap = cap ? *cap : (*rc::gen::arbitrary<bool>() ? cap_mode::after : cap_mode::before);
  p.jitter_first = *rc::gen::arbitrary<bool>();
  p.validate();
  return p;
}

std::vector<duration> draw(const backoff_policy& p, std::size_t n, std::uint64_t seed) {
  backoff::random_generator g{seed};
  auto state = p.start();
  std::vector<duration> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(state.next_delay(g));
  return out;
}

std::size_t any_count() {
  return static_cast<std::size_t>(*rc::gen::inRange(1, 3001));
}
std::uint64_t any_seed() {
  return *rc::gen::arbitrary<std::uint64_t>();
}

// ---------------------------------------------------------------------------------------------

RC_GTEST_PROP(PolicyProperties, EveryDelayIsNonNegative, ()) {
  const backoff_policy p = any_policy();
  for (duration d : draw(p, any_count(), any_seed())) RC_ASSERT(d >= 0ns);
}

RC_GTEST_PROP(PolicyProperties, CapBeforeBoundsEveryDelayForJitterThatDoesNotAdd, ()) {
  const jitter_kind j = *rc::gen::element(jitter_kind::none, jitter_kind::full, jitter_kind::equal,
                                          jitter_kind::decorrelated);
  const backoff_policy p = any_policy(j, cap_mode::before);
  RC_TAG(backoff::to_string(j));
  for (duration d : draw(p, any_count(), any_seed())) RC_ASSERT(d <= p.max);
}

RC_GTEST_PROP(PolicyProperties, CapAfterBoundsEveryDelayForEveryJitter, ()) {
  const backoff_policy p = any_policy(std::nullopt, cap_mode::after);
  for (duration d : draw(p, any_count(), any_seed())) RC_ASSERT(d <= p.max);
}

RC_GTEST_PROP(PolicyProperties, WithoutJitterTheBaseNeverDecreases, ()) {
  const backoff_policy p = any_policy(jitter_kind::none);
  RC_TAG(backoff::to_string(p.schedule));
  const auto ds = draw(p, any_count(), any_seed());
  for (std::size_t i = 1; i < ds.size(); ++i) RC_ASSERT(ds[i - 1] <= ds[i]);
}

RC_GTEST_PROP(PolicyProperties, TheSameSeedGivesTheSameDelays, ()) {
  const backoff_policy p = any_policy();
  const std::size_t n = any_count();
  const std::uint64_t seed = any_seed();
  RC_ASSERT(draw(p, n, seed) == draw(p, n, seed));
}

RC_GTEST_PROP(PolicyProperties, ACopiedStateContinuesIdentically, ()) {
  const backoff_policy p = any_policy();
  backoff::random_generator g{any_seed()};
  auto state = p.start();
  const int before = *rc::gen::inRange(0, 100);
  for (int i = 0; i < before; ++i) (void)state.next_delay(g);
  auto copy = state;
  auto g2 = g;
  for (int i = 0; i < 100; ++i) RC_ASSERT(state.next_delay(g) == copy.next_delay(g2));
}

RC_GTEST_PROP(PolicyProperties, ToStringParsesBackToAnEqualPolicy, ()) {
  const backoff_policy p = any_policy();
  const std::string text = p.to_string();
  RC_LOG() << text << '\n';
  const backoff_policy q = backoff::parse_policy(text);
  RC_ASSERT(q == p);
  RC_ASSERT(q.to_string() == text);
}

// The delays of the retry loop are the policy's, clamped so that no attempt starts after the
// deadline, and `slept` is their sum.
RC_GTEST_PROP(RetryProperties, NoAttemptStartsAfterTheDeadline, ()) {
  // Attempts take at least 10 ms and the deadline is at most a minute away, so even a policy
  // of zero delays ends within 6000 attempts.
  const backoff::retry_policy policy{any_policy(), *rc::gen::inRange<std::uint32_t>(0, 50),
                                     duration{*rc::gen::inRange<std::int64_t>(1, 60 * second)}};
  const duration attempt_time = 10ms + any_duration(10 * second);
  backoff::testing::recording_env rec{any_seed()};
  std::vector<duration> starts;
  const auto result = backoff::retry(
      [&] {
        starts.push_back(rec.clock.now().time_since_epoch());
        rec.clock.advance(attempt_time);
        return false;
      },
      policy, {}, rec.env);
  for (duration s : starts) RC_ASSERT(s <= policy.max_elapsed);
  RC_ASSERT(result.slept == rec.total_slept());
  RC_ASSERT(result.attempts == starts.size());
  if (policy.max_attempts != 0) RC_ASSERT(result.attempts <= policy.max_attempts);
  RC_ASSERT(backoff::is_exhausted(result.why));
}

// ---------------------------------------------------------------------------------------------

RC_GTEST_PROP(DurationProperties, ParseOfFormatGivesBackAnyNonNegativeDuration, ()) {
  // Mix magnitudes: nanoseconds, seconds, days, and the whole int64 range.
  const std::int64_t limit = *rc::gen::element<std::int64_t>(
      1'000, 1'000'000, second, 86'400 * second, std::numeric_limits<std::int64_t>::max());
  const duration d{*rc::gen::inRange<std::int64_t>(0, limit)};
  const std::string text = backoff::format_duration(d);
  RC_LOG() << d.count() << "ns -> " << text << '\n';
  RC_ASSERT(backoff::parse_duration(text) == d);
}

RC_GTEST_PROP(DurationProperties, FormatIsCanonical, ()) {
  const duration d{*rc::gen::inRange<std::int64_t>(0, std::numeric_limits<std::int64_t>::max())};
  const std::string text = backoff::format_duration(d);
  RC_ASSERT(backoff::format_duration(backoff::parse_duration(text)) == text);
}

}  // namespace
