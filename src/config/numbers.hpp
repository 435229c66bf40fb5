// SPDX-License-Identifier: Apache-2.0
// Whole numbers and bare seconds as users write them on a command line or in a scheduler's
// environment, read by one parser for every part that takes one (the CLI's typed options, the
// sweep's shard index). Header-only, beside size.hpp, for the same reason: the parts that read
// them may not reach one another.
//
//   std::string why;
//   if (auto n = backoff::config::parse_whole_number("42", 1, 100, why)) use(*n);
//   else report(why);  // "expected a whole number from 1 to 100"
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace backoff::config {

// Digits only, from `min` to `max`: a sign, a space or "0x" is a typo to refuse, not a number
// to guess at (CLI11's own conversion wraps "-1" around for an unsigned type, and reads "010" as
// octal). nullopt, with `why` set, otherwise.
inline std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t min,
                                                       std::uint64_t max, std::string& why) {
  std::uint64_t value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos ||
      ec != std::errc{} || end != last || value < min || value > max) {
    why = "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    return std::nullopt;
  }
  return value;
}

// Any number a double reads whole ("10", "1e1", "2.5") as seconds, as the seed's Go client took
// -lambda; nullopt when the text is not such a number (it may be a duration with a unit), and
// also, with `why` set, when it is one outside 0 to 10^9.
inline std::optional<double> parse_bare_seconds(std::string_view text, std::string& why) {
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (!(seconds >= 0) || seconds > 1e9) {
    why = "seconds must be from 0 to 1000000000";
    return std::nullopt;
  }
  return seconds;
}

}  // namespace backoff::config
