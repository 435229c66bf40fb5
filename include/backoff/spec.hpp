// SPDX-License-Identifier: Apache-2.0
// Policies written as text, for the command line and scenario files:
//
//   auto p = backoff::parse_policy("exponential(initial=50ms, factor=2, max=30s, jitter=full)");
//   auto q = backoff::parse_policy("gcp-iot(max=32s)");     // a preset with an override
//   std::string text = p.to_string();                        // canonical; parses back equal
//
// Grammar: NAME [ "(" [ KEY "=" VALUE { "," KEY "=" VALUE } ] ")" ], blanks allowed around
// tokens; a VALUE is a word ("2", "50ms", "10%", "100calls") or a list "[" [ITEM {"," ITEM}] "]".
// NAME is a schedule (constant, linear, exponential, fibonacci) or a preset (presets.hpp); the keys
// are shared across schedules and jitters (their table: spec_keys_markdown("policy") in
// spec_keys.hpp, or docs/POLICIES.md). `max=none` removes the cap. A key that does not apply to
// the chosen schedule or jitter is an error, not ignored. Errors throw parse_error with one line
// that quotes the spec and names the bad part, and a misspelt key or name gets a did-you-mean.
//
// The same call syntax serves the other specs of the toolkit (windows, budgets, throttles), so
// its tokenizer is public: parse_spec_call(); spec_keys.hpp describes a kind's keys as a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/export.hpp"
#include "backoff/policy.hpp"

namespace backoff {

struct spec_argument {
  std::string key;
  std::string value;               // as written (a list keeps its brackets: "[429, 503]")
  std::size_t column;              // 1-based position of the key in the spec text
  bool is_list = false;            // the value was written "[a, b, ...]"
  std::vector<std::string> items;  // a list's items, blanks trimmed; empty for "[]"
};

struct spec_call {
  std::string name;
  std::vector<spec_argument> arguments;
};

// Splits "name(key=value, ...)" into its parts; throws parse_error on malformed text or a
// repeated key. `what` names the kind of spec in error messages ("policy", "window", ...).
BACKOFF_EXPORT spec_call parse_spec_call(std::string_view text, std::string_view what);

// Helpers for spec readers, each throwing parse_error that quotes `spec` and names the key.
BACKOFF_EXPORT double spec_number(std::string_view spec, const spec_argument& arg,
                                  std::string_view what);
BACKOFF_EXPORT duration spec_duration(std::string_view spec, const spec_argument& arg,
                                      std::string_view what);
BACKOFF_EXPORT bool spec_bool(std::string_view spec, const spec_argument& arg,
                              std::string_view what);
// "10%" or a fraction "0.1", as a fraction in [0, 1].
BACKOFF_EXPORT double spec_fraction(std::string_view spec, const spec_argument& arg,
                                    std::string_view what);
// The canonical text of a fraction: "10%".
BACKOFF_EXPORT std::string format_fraction(double fraction);
// A list's items; a single value is a list of one ("non_fatal=503" is "[503]").
BACKOFF_EXPORT std::vector<std::string> spec_list(std::string_view spec, const spec_argument& arg,
                                                  std::string_view what);
// "100calls" as 100; nullopt when the value does not end in "calls" (it may be a duration).
BACKOFF_EXPORT std::optional<std::uint64_t> spec_calls(std::string_view spec,
                                                       const spec_argument& arg,
                                                       std::string_view what);

BACKOFF_EXPORT backoff_policy parse_policy(std::string_view text);

// Enum names as specs write them.
BACKOFF_EXPORT std::string_view to_string(schedule_kind kind) noexcept;
BACKOFF_EXPORT std::string_view to_string(jitter_kind kind) noexcept;
BACKOFF_EXPORT std::string_view to_string(cap_mode mode) noexcept;
BACKOFF_EXPORT std::string_view to_string(growth g) noexcept;

}  // namespace backoff
