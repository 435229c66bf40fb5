// SPDX-License-Identifier: Apache-2.0
// The deadline spec: reader, checks and canonical text (deadline.hpp).
#include "backoff/deadline.hpp"

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "overload_spec.hpp"

namespace backoff {

void deadline_config::validate() const {
  if (total.count() < 0 || per_attempt.count() < 0 || min_useful.count() < 0) {
    throw parse_error("durations must not be negative");
  }
  // Without a total, min_useful applies to whatever deadline the loop has (its policy's
  // max_elapsed), as SPEC 7.2's own example deadline(per_attempt=1s, min_useful=10ms) has it.
  if (total.count() > 0 && min_useful > total) {
    throw parse_error("min_useful=" + format_duration(min_useful) +
                      " is above total=" + format_duration(total) + ": no attempt could start");
  }
}

std::string deadline_config::to_string() const {
  std::string out = "deadline(";
  const auto add = [&](std::string_view key, const std::string& value) {
    if (out.back() != '(') out += ", ";
    out += std::string(key) + "=" + value;
  };
  if (total.count() > 0) add("total", format_duration(total));
  if (per_attempt.count() > 0) add("per_attempt", format_duration(per_attempt));
  if (min_useful.count() > 0) add("min_useful", format_duration(min_useful));
  if (propagate) add("propagate", "true");
  return out + ")";
}

deadline_config parse_deadline(std::string_view text) {
  constexpr std::string_view what = "deadline";
  const spec_call call = parse_spec_call(text, what);
  if (call.name != "deadline") {
    detail::spec_fail(
        what, text,
        "unknown deadline " + detail::quoted(call.name) + " (write deadline(per_attempt=1s, ...))");
  }
  deadline_config c;
  for (const spec_argument& arg : call.arguments) {
    if (arg.key == "total") {
      c.total = spec_duration(text, arg, what);
    } else if (arg.key == "per_attempt") {
      c.per_attempt = spec_duration(text, arg, what);
    } else if (arg.key == "min_useful") {
      c.min_useful = spec_duration(text, arg, what);
    } else if (arg.key == "propagate") {
      c.propagate = spec_bool(text, arg, what);
    } else {
      detail::unknown_parameter(what, text, arg, "total, per_attempt, min_useful, propagate");
    }
  }
  detail::validate_spec(what, text, c);
  return c;
}

}  // namespace backoff
