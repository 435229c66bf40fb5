// SPDX-License-Identifier: Apache-2.0
// Reads a Fault Tolerant Shell script (the language ast.hpp describes) into its syntax tree, so the
// interpreter never sees text: quoting is resolved, try limits are durations and counts, and any
// mistake stops the parse with one line naming the file and line, before a command has run.
//
//   const script s = parse(read_file(path), path);   // throws backoff::parse_error
//   for (const statement& st : s.body) run(st);
#pragma once

#include <optional>
#include <string_view>

#include "ast.hpp"
#include "backoff/duration.hpp"

namespace backoff::tool::script {

// Parses a whole script. Throws backoff::parse_error with one line "FILE:LINE: message" on the
// first error; LINE is the line of the offending text (for an unterminated quote or an unclosed
// block, the line where it opened).
script parse(std::string_view text, std::string_view file);

// The duration of a try limit written as two words, "1.5 hours": `number` is digits with an
// optional fraction, `unit` one of second(s), minute(s), hour(s), day(s). nullopt when either is
// not of that form; throws backoff::parse_error (without a file or line) for a value beyond about
// 292 years or finer than a nanosecond.
std::optional<duration> unit_duration(std::string_view number, std::string_view unit);

// True for a shell variable name: [A-Za-z_][A-Za-z0-9_]*.
bool is_variable_name(std::string_view text);

}  // namespace backoff::tool::script
