// SPDX-License-Identifier: Apache-2.0
// Bounds on the shape of a TOML input file (a scenario, a fault schedule), checked before toml++
// sees the text: toml++ recurses once per part of a dotted key or table header and per level of
// nested arrays and inline tables, and a few tens of thousands of them overflow the stack. A real
// file uses 4 or so. Header-only, for every part that reads TOML (the simulator's scenarios, the
// network harness's fault schedules).
//
//   if (auto problem = backoff::config::toml_shape_problem(text, where)) throw my_error(*problem);
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace backoff::config {

inline constexpr int max_toml_key_parts = 64;
inline constexpr int max_toml_nesting = 64;

// The first dotted key with more than max_toml_key_parts parts, or the first value nested deeper
// than max_toml_nesting, as a message that starts with where(line, column); nullopt when there is
// none.
template <class Where>
std::optional<std::string> toml_shape_problem(std::string_view text, const Where& where) {
  enum class in { code, comment, basic, literal, multi_basic, multi_literal };
  in state = in::code;
  int dots = 0, depth = 0, line = 1, column = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    }
    const auto opens = [&](std::string_view quote) { return text.substr(i, 3) == quote; };
    switch (state) {
      case in::comment:
        if (c == '\n') state = in::code;
        break;
      case in::basic:
        if (c == '\\') {
          ++i;  // an escaped character, possibly a quote
          ++column;
        } else if (c == '"' || c == '\n') {
          state = in::code;
        }
        break;
      case in::literal:
        if (c == '\'' || c == '\n') state = in::code;
        break;
      case in::multi_basic:
        if (c == '\\') {
          ++i;  // an escaped character, or a line-ending backslash
          ++column;
          if (i < text.size() && text[i] == '\n') {
            ++line;
            column = 0;
          }
        } else if (opens("\"\"\"")) {
          state = in::code;
          i += 2;
          column += 2;
        }
        break;
      case in::multi_literal:
        if (opens("'''")) {
          state = in::code;
          i += 2;
          column += 2;
        }
        break;
      case in::code:
        switch (c) {
          case '#':
            state = in::comment;
            break;
          case '"':
          case '\'': {
            const bool multi = opens(c == '"' ? "\"\"\"" : "'''");
            state = c == '"' ? (multi ? in::multi_basic : in::basic)
                             : (multi ? in::multi_literal : in::literal);
            if (multi) {
              i += 2;
              column += 2;
            }
            break;
          }
          case '.':
            if (++dots >= max_toml_key_parts) {
              return where(line, column) + ": a key of more than " +
                     std::to_string(max_toml_key_parts) + " parts";
            }
            break;
          case '[':
          case '{':
            dots = 0;
            if (++depth > max_toml_nesting) {
              return where(line, column) + ": tables or values nested more than " +
                     std::to_string(max_toml_nesting) + " deep";
            }
            break;
          case ']':
          case '}':
            dots = 0;
            if (depth > 0) --depth;
            break;
          case '=':
          case ',':
          case '\n':
            dots = 0;
            break;
          default:
            break;
        }
        break;
    }
  }
  return std::nullopt;
}

}  // namespace backoff::config
