// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by the library's spec readers (aimd_window.cpp, retry_budget.cpp,
// throttle.cpp, circuit_breaker.cpp, hedge.cpp, deadline.cpp, spec.cpp): the one-line error
// format, number formatting for canonical text, reading a call's arguments through a key table
// (spec_keys.hpp), and a check that runs a config's validate() under the spec's name.
#pragma once

#include <charconv>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"

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

// "unknown parameter "x" (known: <the keys that apply>)", with a did-you-mean when one is close.
template <class Config, std::size_t N>
[[noreturn]] void unknown_parameter(std::string_view what, std::string_view spec,
                                    const spec_argument& arg, const spec_key<Config> (&keys)[N],
                                    variant_set in_effect = no_variant) {
  spec_fail(what, spec,
            "unknown parameter " + quoted(arg.key) + " (known: " + spec_key_list(keys, in_effect) +
                ")" + spec_key_hint(arg.key, keys, in_effect));
}

// "unknown <noun> "x" (known: a, b)", with a did-you-mean when one is close: a spec's name.
[[noreturn]] inline void unknown_name(std::string_view what, std::string_view spec,
                                      std::string_view noun, std::string_view name,
                                      std::span<const std::string_view> known) {
  spec_fail(what, spec,
            "unknown " + std::string(noun) + " " + quoted(name) + " (known: " + join_names(known) +
                ")" + name_hint(name, known));
}

// Reads each argument with its key's reader. A key that is not in the table, or that does not
// apply to the variants in effect, is an unknown parameter.
template <class Config, std::size_t N>
void read_spec_keys(std::string_view what, std::string_view spec, const spec_call& call,
                    const spec_key<Config> (&keys)[N], Config& config,
                    variant_set in_effect = no_variant) {
  for (const spec_argument& arg : call.arguments) {
    const spec_key<Config>* key = find_spec_key(keys, arg.key);
    if (key == nullptr || !key_applies(*key, in_effect)) {
      unknown_parameter(what, spec, arg, keys, in_effect);
    }
    key->read(config, spec_value{spec, what, arg});
  }
}

// The key tables of the docs, one per kind (spec_keys_markdown).
std::string policy_keys_markdown();
std::string window_keys_markdown();
std::string budget_keys_markdown();
std::string throttle_keys_markdown();
std::string breaker_keys_markdown();
std::string hedge_keys_markdown();
std::string deadline_keys_markdown();

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
