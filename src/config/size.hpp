// SPDX-License-Identifier: Apache-2.0
// Sizes as users write them ("512MiB", "4GiB", "1.5G", "100000", "none"), read by one parser for
// every part that takes one: the simulator's --memory-limit, the retry tool's
// --replay-stdin-limit, and the CLI's typed options. Header-only, in src/config, because the
// simulator and the retry tool may not reach each other (tests/layering/check_layers.cmake) and
// both must accept exactly the same text.
//
//   std::string why;
//   if (auto bytes = backoff::config::parse_size("512MiB", why)) use(*bytes);  // 536870912
//   else report(why);  // "unknown unit 'x'; use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB"
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace backoff::config {

struct size_syntax {
  // "none" and "0" read as 0, which a limit takes as "no limit". A size that is not a limit
  // turns this off, so that "none" is refused rather than read as zero bytes.
  bool none = true;
};

// K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB powers of 1000, no unit or B
// bytes; a space may stand between the number and its unit; a fraction is rounded to whole bytes.
// nullopt, with `error` set (without the text itself: callers quote it with their flag), when the
// text is not a size or is 2^63 bytes or more.
inline std::optional<std::uint64_t> parse_size(std::string_view text, std::string& error,
                                               size_syntax syntax = {}) {
  if (syntax.none && (text == "none" || text == "0")) return 0;
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string_view digits = text.substr(0, i);
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) {
    error = syntax.none ? "expected a size such as 512MiB, 4GiB or none"
                        : "expected a size such as 512MiB or 4GiB";
    return std::nullopt;
  }
  struct suffix {
    std::string_view name;
    double factor;
  };
  static constexpr suffix units[] = {
      {"", 1},       {"B", 1},        {"K", 0x1p10},   {"KiB", 0x1p10}, {"KB", 1e3},
      {"M", 0x1p20}, {"MiB", 0x1p20}, {"MB", 1e6},     {"G", 0x1p30},   {"GiB", 0x1p30},
      {"GB", 1e9},   {"T", 0x1p40},   {"TiB", 0x1p40}, {"TB", 1e12},
  };
  for (const suffix& u : units) {
    if (unit != u.name) continue;
    const double bytes = std::round(value * u.factor);
    if (!(bytes < 0x1p63)) {
      error = "too large";
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(bytes);
  }
  error = "unknown unit '" + std::string(unit) + "'; use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB";
  return std::nullopt;
}

}  // namespace backoff::config
