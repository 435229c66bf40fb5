// SPDX-License-Identifier: Apache-2.0
// Durations as the library, the CLI and scenario files write them: "250ms", "1h30m", "1.5s".
// All time in backoff is std::chrono::nanoseconds; these functions convert to and from text.
//
//   backoff::duration d = backoff::parse_duration("1h30m");   // 5400 s
//   std::string s = backoff::format_duration(d);              // "1h30m"
#pragma once

#include <chrono>
#include <limits>
#include <ratio>
#include <string>
#include <string_view>

#include "backoff/export.hpp"

namespace backoff {

using duration = std::chrono::nanoseconds;

// Parses one or more <number><unit> groups, units ns, us (or µs), ms, s, m, h, d; a number may
// have a fraction ("1.5s"). "0" alone needs no unit. Throws parse_error naming the bad part for
// anything else: negative values, a missing or unknown unit, a value beyond about 292 years, a
// fraction finer than a nanosecond ("0.5ns").
BACKOFF_EXPORT duration parse_duration(std::string_view text);

// The shortest exact form: "0s", "750ns", "12.5us", "250ms", "1.5s", "1h30m", "2d3h",
// "1.000000001s". It never rounds, so parse_duration(format_duration(d)) == d for every d >= 0.
BACKOFF_EXPORT std::string format_duration(duration d);

// `t + d`, or the clock's last (first) time point when the sum would pass it: a timeout near
// duration::max() waits for ever instead of wrapping into the past and firing at once. Every
// deadline `now + timeout` in backoff is computed with this (docs/RELIABILITY.md, "Durations at
// the top of the range").
template <class Clock, class Rep, class Period>
constexpr std::chrono::time_point<Clock, std::chrono::duration<Rep, Period>> saturating_add(
    std::chrono::time_point<Clock, std::chrono::duration<Rep, Period>> t, duration d) noexcept {
  using point = std::chrono::time_point<Clock, std::chrono::duration<Rep, Period>>;
  using step = std::chrono::duration<Rep, Period>;
  static_assert(std::ratio_greater_equal_v<Period, std::nano>,
                "saturating_add: a clock finer than a nanosecond");
  // Rounded toward zero into the clock's unit: never past what was asked.
  const Rep add = std::chrono::duration_cast<step>(d).count();
  const Rep base = t.time_since_epoch().count();
  if (add > 0 && base > std::numeric_limits<Rep>::max() - add) return point::max();
  if (add < 0 && base < std::numeric_limits<Rep>::min() - add) return point::min();
  return point{step{base + add}};
}

// `a + b` for durations, clamped to duration::max() (min()) instead of wrapping.
constexpr duration saturating_add(duration a, duration b) noexcept {
  const auto x = a.count(), y = b.count();
  if (y > 0 && x > std::numeric_limits<duration::rep>::max() - y) return duration::max();
  if (y < 0 && x < std::numeric_limits<duration::rep>::min() - y) return duration::min();
  return duration{x + y};
}

// Seconds as a double, the unit of every `_s` field in outputs.
constexpr double to_seconds(duration d) noexcept {
  return std::chrono::duration<double>(d).count();
}

}  // namespace backoff
