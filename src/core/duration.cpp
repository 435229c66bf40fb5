// SPDX-License-Identifier: Apache-2.0
// Duration text: parsing with exact integer arithmetic (no floating point), so "1.1s" is
// exactly 1'100'000'000 ns, and formatting that never loses a nanosecond.
#include "backoff/duration.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "backoff/error.hpp"

namespace backoff {
namespace {

__extension__ typedef __int128 i128;  // __extension__: GCC and Clang accept it under -Wpedantic

struct unit {
  std::string_view name;
  std::int64_t ns;
};

// Longest names first so that "ms" is not read as "m" followed by "s".
constexpr unit units[] = {
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // µs
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
};

[[noreturn]] void fail(std::string_view text, const std::string& why) {
  throw parse_error("bad duration " + quote_for_message(text) + ": " + why);
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

duration parse_duration(std::string_view original) {
  const std::string_view text = trim(original);
  if (text.empty()) fail(original, "empty (write e.g. 250ms, 1.5s or 1h30m)");
  if (text.front() == '-') fail(original, "negative durations are not allowed");
  if (text == "0") return duration{0};

  constexpr i128 limit = std::numeric_limits<std::int64_t>::max();
  i128 total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    i128 whole = 0;
    while (i < text.size() && is_digit(text[i])) {
      whole = whole * 10 + (text[i] - '0');
      if (whole > limit) fail(original, "too large (the limit is about 292 years)");
      ++i;
    }
    i128 fraction = 0;
    i128 scale = 1;
    bool has_fraction = false;
    bool dropped_digit = false;  // a nonzero digit beyond 10^-18: finer than any unit's ns
    if (i < text.size() && text[i] == '.') {
      ++i;
      while (i < text.size() && is_digit(text[i])) {
        has_fraction = true;
        if (scale < i128{1'000'000'000'000'000'000}) {
          fraction = fraction * 10 + (text[i] - '0');
          scale *= 10;
        } else if (text[i] != '0') {
          dropped_digit = true;
        }
        ++i;
      }
      if (!has_fraction) fail(original, "a '.' must be followed by digits");
    }
    if (i == start) {
      fail(original, "expected a number at position " + std::to_string(start + 1) + ", found " +
                         quote_for_message(text.substr(start, 1)));
    }
    const std::size_t unit_start = i;
    while (i < text.size() && !is_digit(text[i]) && text[i] != '.') ++i;
    const std::string_view name = text.substr(unit_start, i - unit_start);
    if (name.empty()) {
      fail(original, "missing unit after " + quote_for_message(text.substr(start, i - start)) +
                         " (use ns, us, ms, s, m, h or d)");
    }
    const unit* found = nullptr;
    for (const unit& u : units) {
      if (u.name == name) found = &u;
    }
    if (found == nullptr) {
      fail(original, "unknown unit " + quote_for_message(name) + " at position " +
                         std::to_string(unit_start + 1) + " (use ns, us, ms, s, m, h or d)");
    }
    if (dropped_digit || fraction * found->ns % scale != 0) {
      fail(original,
           quote_for_message(text.substr(start, i - start)) + " is finer than a nanosecond");
    }
    total += whole * found->ns + fraction * found->ns / scale;
    if (total > limit) fail(original, "too large (the limit is about 292 years)");
  }
  return duration{static_cast<std::int64_t>(total)};
}

namespace {

// value / unit with up to `decimals` digits, trailing zeros trimmed; exact because `unit` is a
// power of ten times 10^-decimals of the value's resolution.
std::string decimal(std::int64_t value, std::int64_t unit_ns, int decimals) {
  std::string out = std::to_string(value / unit_ns);
  std::int64_t rest = value % unit_ns;
  if (rest == 0) return out;
  std::string digits;
  std::int64_t place = unit_ns;
  for (int k = 0; k < decimals && rest != 0; ++k) {
    place /= 10;
    digits += static_cast<char>('0' + rest / place);
    rest %= place;
  }
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return digits.empty() ? out : out + "." + digits;
}

}  // namespace

std::string format_duration(duration d) {
  std::int64_t v = d.count();
  if (v == 0) return "0s";
  std::string sign;
  if (v < 0) {
    if (v == std::numeric_limits<std::int64_t>::min()) ++v;  // -min overflows; 1 ns is invisible
    sign = "-";
    v = -v;
  }
  constexpr std::int64_t us = 1'000, ms = 1'000'000, s = 1'000'000'000;
  constexpr std::int64_t m = 60 * s, h = 60 * m, day = 24 * h;
  if (v < us) return sign + std::to_string(v) + "ns";
  if (v < ms) return sign + decimal(v, us, 3) + "us";
  if (v < s) return sign + decimal(v, ms, 6) + "ms";
  if (v < m) return sign + decimal(v, s, 9) + "s";
  std::string out = sign;
  if (v >= day) {
    out += std::to_string(v / day) + "d";
    v %= day;
  }
  if (v >= h) {
    out += std::to_string(v / h) + "h";
    v %= h;
  }
  if (v >= m) {
    out += std::to_string(v / m) + "m";
    v %= m;
  }
  if (v > 0) out += decimal(v, s, 9) + "s";
  return out;
}

}  // namespace backoff
