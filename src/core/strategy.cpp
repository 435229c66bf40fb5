// SPDX-License-Identifier: Apache-2.0
#include "backoff/strategy.hpp"

#include <charconv>
#include <limits>
#include <utility>
#include <variant>
#include <vector>

#include "backoff/presets.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "backoff/spelling.hpp"

namespace backoff {
namespace {

template <class T>
std::optional<std::string> written(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return value->to_string();
}

std::uint32_t attempt_count(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
      value > std::numeric_limits<std::uint32_t>::max()) {
    throw parse_error("max_attempts=" + escape_controls(text) +
                      " must be a whole number in 0..4294967295 (0: no limit)");
  }
  return static_cast<std::uint32_t>(value);
}

// The strategy's keys, in the library's one key-table form (spec_keys.hpp): keys(), the
// unknown-key message and to_string's order come from these rows. A value is a whole spec of
// its own kind, so each reader hands the text to that kind's parser.
constexpr spec_key<strategy> strategy_keys[] = {
    {"policy", all_variants, "a policy or preset", "`none`", "the wait before a retry",
     [](strategy& s, const spec_value& v) { s.policy = parse_policy(v.text()); },
     [](const strategy& s) -> std::optional<std::string> {
       return s.retries_at_once() ? std::string("none") : s.policy.to_string();
     }},
    {"max_attempts", all_variants, "a whole number", "0 (no limit)", "attempts per operation",
     [](strategy& s, const spec_value& v) { s.max_attempts = attempt_count(v.text()); },
     [](const strategy& s) -> std::optional<std::string> {
       if (s.max_attempts == 0) return std::nullopt;
       return std::to_string(s.max_attempts);
     }},
    {"idempotent", all_variants, "`true` or `false`", "`true`",
     "false: retry only a failure that proves the request was not sent",
     [](strategy& s, const spec_value& v) { s.idempotent = v.boolean(); },
     [](const strategy& s) -> std::optional<std::string> {
       if (s.idempotent) return std::nullopt;
       return "false";
     }},
    {"window", all_variants, "a window", "none", "paces sends through an AIMD window",
     [](strategy& s, const spec_value& v) { s.window = parse_window(v.text()); },
     [](const strategy& s) { return written(s.window); }},
    {"budget", all_variants, "a budget", "none", "may refuse a retry",
     [](strategy& s, const spec_value& v) { s.budget = parse_budget(v.text()); },
     [](const strategy& s) -> std::optional<std::string> {
       if (!s.budget) return std::nullopt;
       return backoff::to_string(*s.budget);
     }},
    {"throttle", all_variants, "a throttle", "none", "may refuse or pace an attempt",
     [](strategy& s, const spec_value& v) { s.throttle = parse_throttle(v.text()); },
     [](const strategy& s) -> std::optional<std::string> {
       if (!s.throttle) return std::nullopt;
       return backoff::to_string(*s.throttle);
     }},
    {"breaker", all_variants, "a breaker", "none", "may refuse an attempt while open",
     [](strategy& s, const spec_value& v) { s.breaker = parse_breaker(v.text()); },
     [](const strategy& s) { return written(s.breaker); }},
    {"limiter", all_variants, "a bulkhead, limit or rate", "none",
     "may refuse, pace or queue an attempt (asked after the breaker)",
     [](strategy& s, const spec_value& v) { s.limiter = parse_limiter(v.text()); },
     [](const strategy& s) -> std::optional<std::string> {
       if (!s.limiter) return std::nullopt;
       return backoff::to_string(*s.limiter);
     }},
    {"hedge", all_variants, "a hedge", "none", "copies of an operation instead of retries",
     [](strategy& s, const spec_value& v) { s.hedge = parse_hedge(v.text()); },
     [](const strategy& s) { return written(s.hedge); }},
    {"deadline", all_variants, "a deadline", "none", "the operation's time, and each attempt's",
     [](strategy& s, const spec_value& v) { s.deadline = parse_deadline(v.text()); },
     [](const strategy& s) { return written(s.deadline); }},
    {"fallback", all_variants, "a fallback", "none",
     "the outcomes a fallback answers for (the value is the caller's)",
     [](strategy& s, const spec_value& v) { s.fallback = parse_fallback(v.text()); },
     [](const strategy& s) { return written(s.fallback); }},
};

const std::vector<std::string_view>& key_names() {
  static const std::vector<std::string_view> names =
      spec_key_names(std::span<const spec_key<strategy>>(strategy_keys));
  return names;
}

const spec_key<strategy>& find_key(std::string_view key) {
  if (const spec_key<strategy>* k = find_spec_key(strategy_keys, key)) return *k;
  throw parse_error("unknown strategy key " + quote_for_message(key) +
                    did_you_mean(key, key_names()) + " (known: " + join_names(key_names()) + ")");
}

bool always_zero(const backoff_policy& b) noexcept {
  const duration zero{0};
  if (b.max == zero && b.cap == cap_mode::after) return true;
  if (b.jitter == jitter_kind::decorrelated || b.jitter == jitter_kind::decorrelated_v2)
    return b.initial == zero || b.max == zero;
  const bool base_zero =
      (b.initial == zero && (b.schedule != schedule_kind::linear || b.step == zero)) ||
      (b.max == zero && b.cap == cap_mode::before);
  switch (b.jitter) {
    case jitter_kind::additive:
      return base_zero && b.jitter_max == zero;
    case jitter_kind::gaussian:
      return base_zero && b.sd == zero;
    default:
      return base_zero;  // none, full, equal, multiplicative, proportional scale the base
  }
}

std::string_view trimmed(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

const backoff_policy& no_wait_policy() noexcept {
  static const backoff_policy none = find_preset("none")->policy;
  return none;
}

strategy_error::strategy_error(std::vector<std::string_view> keys, std::string rule,
                               std::string remedy)
    : parse_error(compose(std::vector<std::string>(keys.begin(), keys.end()), rule, remedy)),
      keys_(std::move(keys)),
      rule_(std::move(rule)),
      remedy_(std::move(remedy)) {}

std::string strategy_error::compose(const std::vector<std::string>& names, const std::string& rule,
                                    const std::string& remedy) {
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " or " : ", ";
    list += names[i];
  }
  return rule + ": " + remedy + " " + list;
}

std::span<const std::string_view> strategy::keys() {
  return key_names();
}

void strategy::set(std::string_view key, std::string_view text) {
  const spec_key<strategy>& k = find_key(key);
  const spec_argument argument{std::string(key), std::string(text), 1, false, {}};
  k.read(*this, spec_value{text, "strategy", argument});
}

bool strategy::has(std::string_view key) const {
  if (key == "policy") return !retries_at_once();
  return find_key(key).write(*this).has_value();
}

void strategy::validate() const {
  if (!hedge) return;
  if (!idempotent) {
    throw strategy_error({"hedge", "idempotent"},
                         "a call that is not idempotent is not hedged (every copy may reach the "
                         "server)",
                         "give it no");
  }
  if (limiter) {
    throw strategy_error({"hedge", "limiter"}, "a hedge's copies do not pass through a limiter",
                         "give it no");
  }
  if (budget && std::holds_alternative<retry_quota_config>(*budget)) {
    throw parse_error(
        "with hedge, a budget is a token-bucket or a ratio: a quota refunds what an operation's "
        "retries took, and hedge copies are not retries");
  }
  // gRPC A6: a method has a retry policy or a hedging policy, never both.
  std::vector<std::string_view> retrying;
  for (const std::string_view key : {"policy", "max_attempts", "window"}) {
    if (has(key)) retrying.push_back(key);
  }
  if (!retrying.empty()) {
    throw strategy_error(std::move(retrying), "hedge replaces retrying (gRPC A6)", "give it no");
  }
  if (deadline && (deadline->per_attempt.count() > 0 || deadline->min_useful.count() > 0)) {
    throw parse_error(
        "with hedge, a deadline takes total (and propagate) only: copies have no per-attempt "
        "timeout of their own");
  }
}

std::string strategy::to_string() const {
  std::string out;
  for (const spec_key<strategy>& k : strategy_keys) {
    const std::optional<std::string> value = k.write(*this);
    if (!value) continue;
    if (!out.empty()) out += ", ";
    out.append(k.name).append("=").append(*value);
  }
  return out;
}

std::optional<guard_refusal> strategy::refusal(const guard_support& can) const {
  if (breaker && !can.breaker) return guard_refusal{"breaker", std::string(can.breaker_why_not)};
  if (breaker && breaker->keyed && !can.keys) {
    return guard_refusal{"breaker", "keyed=true needs keys (hosts, shards or users), and " +
                                        std::string(can.keys_why_not)};
  }
  if (limiter && !can.breaker) {
    return guard_refusal{"limiter", std::string(can.breaker_why_not)};
  }
  if (limiter && may_queue(*limiter) && !can.queue) {
    return guard_refusal{"limiter",
                         "a bulkhead with a queue makes an attempt wait for a slot, and it "
                         "cannot park one: give it queue=0"};
  }
  if (hedge && !can.hedge) {
    return guard_refusal{"hedge", "it has no way to put two attempts of one operation in flight"};
  }
  if (deadline && !can.deadline) {
    return guard_refusal{"deadline", "it has no per-attempt timeouts"};
  }
  return std::nullopt;
}

retry_policy strategy::retry() const {
  return {policy, max_attempts, deadline ? deadline->total : duration{0}, idempotent};
}

bool strategy::retries_at_once() const noexcept {
  return policy == no_wait_policy();
}

bool strategy::retries_forever_at_zero_delay() const noexcept {
  return max_attempts == 0 && !budget && always_zero(policy);
}

strategy::live strategy::instantiate() const {
  live l;
  if (window) l.window.emplace(*window);
  if (budget) l.budget.emplace(*budget);
  if (throttle) l.throttle.emplace(*throttle);
  if (breaker) l.breaker = std::make_unique<circuit_breaker>(*breaker);
  if (limiter) l.limiter = std::make_unique<backoff::limiter>(*limiter);
  return l;
}

strategy parse_strategy(std::string_view text) {
  strategy s;
  const auto fail = [&](const std::string& why) {
    throw parse_error("strategy " + quote_for_message(text) + ": " + why);
  };
  std::vector<std::string_view> seen;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && --depth < 0) fail("unbalanced '" + std::string(1, c) + "'");
    if (c != ',' || depth > 0) continue;
    const std::string_view item = trimmed(text.substr(start, i - start));
    start = i + 1;
    if (item.empty()) {
      if (i == text.size() && seen.empty()) break;  // "" is the default strategy
      fail("an empty item at column " + std::to_string(i + 1));
    }
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("expected KEY=VALUE, got " + quote_for_message(item));
    const std::string_view key = trimmed(item.substr(0, eq));
    for (const std::string_view before : seen) {
      if (before == key) fail("key " + quote_for_message(key) + " given twice");
    }
    try {
      s.set(key, trimmed(item.substr(eq + 1)));
    } catch (const parse_error& e) {
      fail(e.what());
    }
    seen.push_back(find_key(key).name);
  }
  if (depth > 0) fail("unbalanced '(' or '['");
  try {
    s.validate();
  } catch (const parse_error& e) {
    fail(e.what());
  }
  return s;
}

}  // namespace backoff
