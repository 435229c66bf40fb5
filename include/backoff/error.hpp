// SPDX-License-Identifier: Apache-2.0
// The one exception type of the library: bad text (a duration, a policy spec, a Retry-After
// header) or a policy whose parameters contradict each other. Its message is one line that names
// the bad part, ready to print as is:
//
//   try { auto p = backoff::parse_policy(argv[1]); }
//   catch (const backoff::parse_error& e) { std::cerr << e.what() << '\n'; return 2; }
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backoff/export.hpp"

namespace backoff {

class BACKOFF_EXPORT parse_error : public std::invalid_argument {
 public:
  explicit parse_error(const std::string& message) : std::invalid_argument(message) {}
};

// `text` with control characters escaped (\n, \t, \xHH), so that a message that repeats user input
// stays on one line.
inline std::string escape_controls(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(u));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// escape_controls(text) in double quotes.
inline std::string quote_for_message(std::string_view text) {
  return "\"" + escape_controls(text) + "\"";
}

}  // namespace backoff
