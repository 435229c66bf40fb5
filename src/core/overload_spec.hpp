// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by the window, budget and throttle spec readers (aimd_window.cpp,
// retry_budget.cpp, throttle.cpp): the one-line error format of spec.cpp, number formatting for
// canonical text, and a check that runs a config's validate() under the spec's name.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"

namespace backoff::detail {

// "bad <what> "<spec>": <why>", the format of every spec error (spec.cpp). Control characters in
// the spec and in `why` (which may repeat a value) are escaped, so the message stays on one line.
[[noreturn]] inline void spec_fail(std::string_view what, std::string_view spec,
                                   const std::string& why) {
  throw parse_error("bad " + std::string(what) + " " + quote_for_message(spec) + ": " +
                    escape_controls(why));
}

// The shortest text that reads back as the same double, in plain decimals where that stays
// short ("0.1", "20", "0.0005"), in scientific notation otherwise ("1e-09", "1e+20").
inline std::string spec_number_text(double v) {
  char buf[128];
  const double magnitude = v < 0 ? -v : v;
  const auto format = (magnitude == 0.0 || (magnitude >= 1e-6 && magnitude < 1e15))
                          ? std::chars_format::fixed
                          : std::chars_format::general;
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, format);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

inline std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

[[noreturn]] inline void unknown_parameter(std::string_view what, std::string_view spec,
                                           const spec_argument& arg, std::string_view known) {
  spec_fail(what, spec,
            "unknown parameter " + quoted(arg.key) + " (known: " + std::string(known) + ")");
}

// Runs config.validate() and rethrows its message as an error about `spec`.
template <class Config>
void validate_spec(std::string_view what, std::string_view spec, const Config& config) {
  try {
    config.validate();
  } catch (const parse_error& e) {
    spec_fail(what, spec, e.what());
  }
}

}  // namespace backoff::detail
