// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by the library's spec readers (aimd_window.cpp, retry_budget.cpp,
// throttle.cpp, breaker_spec.cpp, hedge.cpp, deadline.cpp, spec.cpp, bulkhead.cpp,
// rate_limiter.cpp, concurrency_limit.cpp): the one-line error format, number formatting for
// canonical text, reading a call's arguments through a key table (spec_keys.hpp), a whole-number
// key, a spec of one name read through its table, and a check that runs a config's validate()
// under the spec's name.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
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
std::string bulkhead_keys_markdown();
std::string rate_keys_markdown();
std::string fallback_keys_markdown();

// Runs config.validate() and rethrows its message as an error about `spec`.
template <class Config>
void validate_spec(std::string_view what, std::string_view spec, const Config& config) {
  try {
    config.validate();
  } catch (const parse_error& e) {
    spec_fail(what, spec, e.what());
  }
}

// The key's value as a whole number in lo..hi, or "<key>=<value> must be a whole number in
// lo..hi". Each config's validate() still checks its own ranges (a config built in code).
inline std::uint32_t spec_whole_number(const spec_value& v, std::uint32_t lo, std::uint32_t hi) {
  const double x = v.number();
  if (!(x >= lo && x <= hi && x == std::floor(x))) {
    spec_fail(v.what, v.spec,
              v.arg.key + "=" + v.text() + " must be a whole number in " + std::to_string(lo) +
                  ".." + std::to_string(hi));
  }
  return static_cast<std::uint32_t>(x);
}

// The class a pointer to member belongs to, so that whole_number_key names only the member.
template <class Member>
struct member_class;
template <class Config, class Value>
struct member_class<Value Config::*> {
  using type = Config;
};

// The reader and writer of whole_number_key.
template <auto member, std::uint32_t lo, std::uint32_t hi, class Config>
void read_whole_number(Config& c, const spec_value& v) {
  c.*member = spec_whole_number(v, lo, hi);
}
template <auto member, class Config>
std::optional<std::string> write_whole_number(const Config& c) {
  return std::to_string(c.*member);
}

// The key of a std::uint32_t member holding a whole number in lo..hi, written as that number.
template <auto member, std::uint32_t lo, std::uint32_t hi,
          class Config = typename member_class<decltype(member)>::type>
constexpr spec_key<Config> whole_number_key(std::string_view name, variant_set applies_to,
                                            std::string_view values, std::string_view fallback,
                                            std::string_view meaning) {
  constexpr auto read = &read_whole_number<member, lo, hi, Config>;
  constexpr auto write = &write_whole_number<member, Config>;
  return {name, applies_to, values, fallback, meaning, read, write};
}

// Reads `text`, a call of `names[0]`, with `keys`, and checks the result with its validate().
// Another name is "unknown <noun> "x"", followed by the known names and a did-you-mean, or by
// "(<usage>)" where a usage is given.
template <class Config, std::size_t N>
Config read_named_spec(std::string_view what, std::string_view noun, std::string_view text,
                       std::span<const std::string_view> names, const spec_key<Config> (&keys)[N],
                       std::string_view usage = {}) {
  const spec_call call = parse_spec_call(text, what);
  if (call.name != names[0]) {
    if (usage.empty()) unknown_name(what, text, noun, call.name, names);
    spec_fail(
        what, text,
        "unknown " + std::string(noun) + " " + quoted(call.name) + " (" + std::string(usage) + ")");
  }
  Config c;
  read_spec_keys(what, text, call, keys, c);
  validate_spec(what, text, c);
  return c;
}

}  // namespace backoff::detail
