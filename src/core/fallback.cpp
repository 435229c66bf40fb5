// SPDX-License-Identifier: Apache-2.0
// The fallback as strategy text: `fallback()` answers for every failure but a cancellation,
// `fallback(on=[breaker_open, limited])` for exactly those outcomes.
#include "backoff/fallback.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

constexpr std::string_view fallback_what = "fallback";
constexpr std::string_view fallback_names[] = {"fallback"};

// The outcomes a fallback may answer for, in the enumeration's order: every one but `succeeded`.
constexpr std::array<outcome, outcome_count - 1> answerable = {
    outcome::attempts_exhausted, outcome::deadline_exceeded, outcome::permanent,
    outcome::cancelled,          outcome::budget_exhausted,  outcome::throttled,
    outcome::breaker_open,       outcome::not_idempotent,    outcome::limited};

const std::vector<std::string_view>& answerable_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const outcome o : answerable) out.push_back(to_string(o));
    return out;
  }();
  return names;
}

outcome outcome_named(const spec_value& v, const std::string& name) {
  for (const outcome o : answerable) {
    if (to_string(o) == name) return o;
  }
  const std::vector<std::string_view>& known = answerable_names();
  detail::spec_fail(v.what, v.spec,
                    "on: unknown outcome " + detail::quoted(name) +
                        " (known: " + join_names(known) + ")" + name_hint(name, known));
}

void read_outcomes(fallback_config& c, const spec_value& v) {
  c.on = fallback_outcomes::none();
  if (!v.arg.is_list) {
    c.on.add(outcome_named(v, v.text()));
    return;
  }
  for (const std::string& item : v.arg.items) c.on.add(outcome_named(v, item));
}

std::optional<std::string> write_outcomes(const fallback_config& c) {
  if (c.on == fallback_outcomes{}) return std::nullopt;
  std::string out = "[";
  for (const outcome o : answerable) {
    if (!c.on.contains(o)) continue;
    if (out.size() > 1) out += ", ";
    out += to_string(o);
  }
  return out + "]";
}

constexpr spec_key<fallback_config> fallback_keys[] = {
    {"on", all_variants, "an outcome or a list of them: `[breaker_open, limited]`",
     "every failure but `cancelled`", "the outcomes it answers for", read_outcomes, write_outcomes},
};

}  // namespace

std::string fallback_config::to_string() const {
  return write_spec(fallback_names[0], fallback_keys, *this);
}

void fallback_config::validate() const {
  if (on.contains(outcome::succeeded))
    throw parse_error("on: a fallback never answers for succeeded");
  if (on.empty()) throw parse_error("on=[] answers for nothing: leave the fallback out");
}

fallback_config parse_fallback(std::string_view text) {
  return detail::read_named_spec(fallback_what, "fallback", text, fallback_names, fallback_keys);
}

std::string detail::fallback_keys_markdown() {
  return key_table_markdown(fallback_keys, spec_variants{fallback_names, {}});
}

}  // namespace backoff
