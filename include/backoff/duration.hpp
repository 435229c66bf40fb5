// SPDX-License-Identifier: Apache-2.0
// Durations as the library, the CLI and scenario files write them: "250ms", "1h30m", "1.5s".
// All time in backoff is std::chrono::nanoseconds; these functions convert to and from text.
//
//   backoff::duration d = backoff::parse_duration("1h30m");   // 5400 s
//   std::string s = backoff::format_duration(d);              // "1h30m"
#pragma once

#include <chrono>
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

// Seconds as a double, the unit of every `_s` field in outputs.
constexpr double to_seconds(duration d) noexcept {
  return std::chrono::duration<double>(d).count();
}

}  // namespace backoff
