// SPDX-License-Identifier: Apache-2.0
// The keys of a spec kind as one table, so that its reader, its canonical text, the key lists
// and did-you-mean of its error messages, and its table in the docs all come from the same rows
// and cannot disagree. A kind's variants (schedules, jitters, breaker kinds...) are bits; each
// key names the variants it applies to.
//
//   struct pause_config { backoff::duration length{}; bool loud = false; };
//   constexpr backoff::spec_key<pause_config> pause_keys[] = {
//       {"length", backoff::all_variants, "duration", "0s", "how long",
//        [](pause_config& c, const backoff::spec_value& v) { c.length = v.time(); },
//        [](const pause_config& c) -> std::optional<std::string> {
//          return backoff::format_duration(c.length);
//        }},
//       {"loud", backoff::all_variants, "`true` or `false`", "`false`", "whether it beeps",
//        [](pause_config& c, const backoff::spec_value& v) { c.loud = v.boolean(); },
//        [](const pause_config& c) -> std::optional<std::string> {
//          if (!c.loud) return std::nullopt;  // left out of the canonical text
//          return "true";
//        }},
//   };
//   // backoff::find_spec_key(pause_keys, "lenght") == nullptr;
//   // backoff::spec_key_hint("lenght", pause_keys) == "; did you mean 'length'?"
//   // backoff::write_spec("pause", pause_keys, pause_config{}) == "pause(length=0s)"
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/spec.hpp"
#include "backoff/spelling.hpp"

namespace backoff {

// A set of a kind's variants, bit i for variant i. The variants in effect for a config are a set
// too; a key applies when every variant in effect is one of its own, so a key that does not care
// about one dimension (the jitter, say) lists all of that dimension's variants.
using variant_set = std::uint32_t;
inline constexpr variant_set all_variants = ~variant_set{0};
// Before the variant is known every key applies: the set in effect is then empty.
inline constexpr variant_set no_variant = 0;

template <class Index>
constexpr variant_set variant_bit(Index index) noexcept {
  return variant_set{1} << static_cast<unsigned>(index);
}

// One argument as a key's reader sees it, with the spec it came from for error messages.
struct spec_value {
  std::string_view spec;
  std::string_view what;  // "policy", "window", ...: the kind in "bad <what> ..."
  const spec_argument& arg;

  double number() const { return spec_number(spec, arg, what); }
  duration time() const { return spec_duration(spec, arg, what); }
  bool boolean() const { return spec_bool(spec, arg, what); }
  double fraction() const { return spec_fraction(spec, arg, what); }
  const std::string& text() const noexcept { return arg.value; }
};

template <class Config>
struct spec_key {
  std::string_view name;
  variant_set applies_to;
  std::string_view values;         // what it accepts, as the docs say it
  std::string_view default_value;  // as the docs say it
  std::string_view meaning;        // one line for the docs
  void (*read)(Config&, const spec_value&);
  // The value in the canonical text, or nullopt to leave the key out (a default it implies);
  // nullptr for a kind without canonical text.
  std::optional<std::string> (*write)(const Config&);
};

template <class Config>
bool key_applies(const spec_key<Config>& key, variant_set in_effect) noexcept {
  return (in_effect & ~key.applies_to) == 0;
}

template <class Config>
const spec_key<Config>* find_spec_key(std::span<const spec_key<Config>> keys,
                                      std::string_view name) noexcept {
  for (const spec_key<Config>& k : keys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}
template <class Config, std::size_t N>
const spec_key<Config>* find_spec_key(const spec_key<Config> (&keys)[N],
                                      std::string_view name) noexcept {
  return find_spec_key(std::span<const spec_key<Config>>(keys), name);
}

// The names of the keys that apply, in table order.
template <class Config>
std::vector<std::string_view> spec_key_names(std::span<const spec_key<Config>> keys,
                                             variant_set in_effect = no_variant) {
  std::vector<std::string_view> names;
  for (const spec_key<Config>& k : keys) {
    if (key_applies(k, in_effect)) names.push_back(k.name);
  }
  return names;
}

// "a, b, c": the names, as error messages list them.
BACKOFF_EXPORT std::string join_names(std::span<const std::string_view> names);

// The known-keys part of an error message: "initial, factor, step, ...".
template <class Config>
std::string spec_key_list(std::span<const spec_key<Config>> keys,
                          variant_set in_effect = no_variant) {
  return join_names(spec_key_names(keys, in_effect));
}
template <class Config, std::size_t N>
std::string spec_key_list(const spec_key<Config> (&keys)[N], variant_set in_effect = no_variant) {
  return spec_key_list(std::span<const spec_key<Config>>(keys), in_effect);
}

// "; did you mean 'NAME'?" for the closest of `names`, or "" when none is close; it ends an error
// message, after its list of what is known.
BACKOFF_EXPORT std::string name_hint(std::string_view word,
                                     std::span<const std::string_view> names);

template <class Config>
std::string spec_key_hint(std::string_view word, std::span<const spec_key<Config>> keys,
                          variant_set in_effect = no_variant) {
  const std::vector<std::string_view> names = spec_key_names(keys, in_effect);
  return name_hint(word, names);
}
template <class Config, std::size_t N>
std::string spec_key_hint(std::string_view word, const spec_key<Config> (&keys)[N],
                          variant_set in_effect = no_variant) {
  return spec_key_hint(word, std::span<const spec_key<Config>>(keys), in_effect);
}

// The canonical text: "name(key=value, ...)" with, in table order, every key that applies and
// that writes a value.
template <class Config>
std::string write_spec(std::string_view name, std::span<const spec_key<Config>> keys,
                       const Config& config, variant_set in_effect = no_variant) {
  std::string out = std::string(name) + "(";
  bool first = true;
  for (const spec_key<Config>& k : keys) {
    if (!key_applies(k, in_effect) || k.write == nullptr) continue;
    const std::optional<std::string> value = k.write(config);
    if (!value) continue;
    if (!first) out += ", ";
    first = false;
    out += std::string(k.name) + "=" + *value;
  }
  return out + ")";
}
template <class Config, std::size_t N>
std::string write_spec(std::string_view name, const spec_key<Config> (&keys)[N],
                       const Config& config, variant_set in_effect = no_variant) {
  return write_spec(name, std::span<const spec_key<Config>>(keys), config, in_effect);
}

// How a kind names its variants in the docs. `groups` splits the bits into dimensions (a
// policy's schedules and jitters); a key restricted in no dimension applies to "all".
struct spec_variants {
  std::span<const std::string_view> names;  // bit i: names[i]
  std::span<const variant_set> groups;      // empty: one dimension, all the names
};

// "exponential", "rate, retry-only", "latency with distribution=fixed", or "all".
BACKOFF_EXPORT std::string applies_to_text(variant_set applies_to, const spec_variants& variants);

// One row of a key table, without the Config type, for rendering.
struct spec_key_row {
  std::string_view name;
  variant_set applies_to;
  std::string_view values;
  std::string_view default_value;
  std::string_view meaning;
};

// The markdown table of a kind's keys, as the docs carry it: key, applies to, values, default,
// meaning.
BACKOFF_EXPORT std::string key_table_markdown(std::span<const spec_key_row> rows,
                                              const spec_variants& variants);
template <class Config>
std::string key_table_markdown(std::span<const spec_key<Config>> keys,
                               const spec_variants& variants) {
  std::vector<spec_key_row> rows;
  for (const spec_key<Config>& k : keys) {
    rows.push_back({k.name, k.applies_to, k.values, k.default_value, k.meaning});
  }
  return key_table_markdown(std::span<const spec_key_row>(rows), variants);
}
template <class Config, std::size_t N>
std::string key_table_markdown(const spec_key<Config> (&keys)[N], const spec_variants& variants) {
  return key_table_markdown(std::span<const spec_key<Config>>(keys), variants);
}

// The key table of one of the library's spec kinds ("policy", "window", "budget", "throttle",
// "breaker", "hedge", "deadline"), as docs/POLICIES.md carries it; "" for another name.
BACKOFF_EXPORT std::string spec_keys_markdown(std::string_view kind);

}  // namespace backoff
