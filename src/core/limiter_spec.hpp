// SPDX-License-Identifier: Apache-2.0
// Internal to the bulkhead and rate limiter spec readers (bulkhead.cpp, rate_limiter.cpp): their
// key tables for the docs (spec_keys_markdown registers them as "bulkhead" and "rate"), and what
// both readers share: a spec of one name read through its key table, and a whole-number key.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff::detail {

std::string bulkhead_keys_markdown();
std::string rate_keys_markdown();

// The key's value as a whole number in lo..hi, or a one-line error naming the key.
inline std::uint32_t limiter_whole_number(const spec_value& v, std::uint32_t lo, std::uint32_t hi) {
  const double x = v.number();
  if (!(x >= lo && x <= hi && x == std::floor(x))) {
    spec_fail(v.what, v.spec,
              v.arg.key + "=" + v.text() + " must be a whole number in " + std::to_string(lo) +
                  ".." + std::to_string(hi));
  }
  return static_cast<std::uint32_t>(x);
}

// Reads `text`, a call of `names[0]` (`noun` in the message for another name), with `keys`, and
// checks the result with its validate().
template <class Config, std::size_t N>
Config read_limiter_spec(std::string_view what, std::string_view noun, std::string_view text,
                         std::span<const std::string_view> names,
                         const spec_key<Config> (&keys)[N]) {
  const spec_call call = parse_spec_call(text, what);
  if (call.name != names[0]) unknown_name(what, text, noun, call.name, names);
  Config c;
  read_spec_keys(what, text, call, keys, c);
  validate_spec(what, text, c);
  return c;
}

}  // namespace backoff::detail
