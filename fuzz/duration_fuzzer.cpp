// SPDX-License-Identifier: Apache-2.0
// Fuzzes duration text: parse_duration and format_duration (src/core/duration.cpp), and the
// Retry-After reader parse_retry_after / parse_http_date (src/core/http.cpp).
// Asserts: parse_duration returns a duration >= 0 or throws parse_error (nothing else) with one
// line starting "bad duration "; format_duration of what it returned parses back to exactly the
// same duration and is stable; the input's leading and trailing blanks do not matter.
// parse_retry_after never throws and gives nullopt or a delay >= 0; an HTTP-date's seconds are
// whole.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/http.hpp"
#include "fuzz_check.hpp"

using backoff::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const backoff::duration d = backoff::parse_duration(text);
    check(d.count() >= 0, "a negative duration");
    const std::string formatted = backoff::format_duration(d);
    try {
      check(backoff::parse_duration(formatted) == d, "format/parse changes the value", formatted);
    } catch (const backoff::parse_error& e) {
      backoff::fuzz::fail("format_duration's text does not parse", formatted + " -> " + e.what());
    }
    check(backoff::format_duration(backoff::parse_duration(formatted)) == formatted,
          "format_duration is not stable", formatted);
    check(backoff::parse_duration(" " + std::string(text) + "\t") == d, "blanks change the value");
  } catch (const backoff::parse_error& e) {
    backoff::fuzz::check_message(e.what(), "bad duration \"");
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception other than parse_error", e.what());
  }

  // Any int64 count formats and (when >= 0) parses back: the first 8 bytes as a count.
  if (size >= 8) {
    std::uint64_t bits = 0;
    for (int k = 0; k < 8; ++k) bits = (bits << 8) | data[k];
    const auto count = static_cast<std::int64_t>(bits);
    const backoff::duration d{count};
    const std::string formatted = backoff::format_duration(d);
    if (count >= 0) {
      try {
        check(backoff::parse_duration(formatted) == d, "format/parse changes a count", formatted);
      } catch (const backoff::parse_error& e) {
        backoff::fuzz::fail("format_duration's text does not parse", formatted + " -> " + e.what());
      }
    } else {
      check(formatted.starts_with("-"), "a negative duration formats without '-'", formatted);
    }
  }

  try {
    const auto now = std::chrono::system_clock::time_point{std::chrono::seconds{1'700'000'000}};
    if (const auto after = backoff::parse_retry_after(text, now)) {
      check(after->count() >= 0, "a negative Retry-After");
    }
    if (const auto date = backoff::parse_http_date(text)) {
      (void)date->time_since_epoch().count();
    }
  } catch (const std::exception& e) {
    backoff::fuzz::fail("parse_retry_after threw", e.what());
  }
  return 0;
}
