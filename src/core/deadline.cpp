// SPDX-License-Identifier: Apache-2.0
// The deadline spec: reader, checks and canonical text (deadline.hpp).
#include "backoff/deadline.hpp"

#include <optional>
#include <string>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
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

namespace {

constexpr std::string_view deadline_what = "deadline";
constexpr std::string_view deadline_names[] = {"deadline"};

// A duration key, written only when set (0 is "none").
template <duration deadline_config::*member>
constexpr spec_key<deadline_config> deadline_duration(std::string_view name,
                                                      std::string_view meaning) {
  return {name,
          all_variants,
          "a duration",
          "none",
          meaning,
          [](deadline_config& c, const spec_value& v) { c.*member = v.time(); },
          [](const deadline_config& c) -> std::optional<std::string> {
            if ((c.*member).count() <= 0) return std::nullopt;
            return format_duration(c.*member);
          }};
}

constexpr spec_key<deadline_config> deadline_keys[] = {
    deadline_duration<&deadline_config::total>(
        "total", "no attempt starts after it (the loop's `max_elapsed`)"),
    deadline_duration<&deadline_config::per_attempt>(
        "per_attempt", "each attempt gets min(per_attempt, time left)"),
    deadline_duration<&deadline_config::min_useful>(
        "min_useful", "no attempt starts, and no failed one waits, with less than this left"),
    {"propagate", all_variants, "`true` or `false`", "`false`",
     "the time left and the attempt number travel as headers",
     [](deadline_config& c, const spec_value& v) { c.propagate = v.boolean(); },
     [](const deadline_config& c) -> std::optional<std::string> {
       if (!c.propagate) return std::nullopt;
       return "true";
     }},
};

}  // namespace

std::string deadline_config::to_string() const {
  return write_spec(deadline_names[0], deadline_keys, *this);
}

deadline_config parse_deadline(std::string_view text) {
  return detail::read_named_spec(deadline_what, "deadline", text, deadline_names, deadline_keys,
                                 "write deadline(per_attempt=1s, ...)");
}

std::string detail::deadline_keys_markdown() {
  return key_table_markdown(deadline_keys, spec_variants{deadline_names, {}});
}

}  // namespace backoff
