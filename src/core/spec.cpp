// SPDX-License-Identifier: Apache-2.0
// Policy specs: the call tokenizer shared by every spec kind, and the policy reader/writer.
#include "backoff/spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/presets.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string quoted(std::string_view s) {
  return quote_for_message(s);
}

[[noreturn]] void fail(std::string_view what, std::string_view spec, const std::string& why) {
  throw parse_error("bad " + std::string(what) + " " + quoted(spec) + ": " + why);
}

std::string format_number(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

namespace {

// Reads one "name(key=value, ...)" left to right; every error quotes the whole text and, where
// it helps, the column at which reading stopped.
class spec_call_reader {
 public:
  spec_call_reader(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  spec_call read() {
    spec_call call;
    skip_blanks();
    call.name = std::string(read_name());
    if (call.name.empty()) {
      if (at_end()) reject("empty; expected a name such as exponential(...)");
      reject("expected a name" + found_here());
    }
    skip_blanks();
    if (at_end()) return call;
    if (peek() != '(') {
      reject(unexpected_here() + " after " + quoted(call.name) + " (parameters go in parentheses)");
    }
    ++pos_;
    skip_blanks();
    if (!at_end() && peek() == ')') {
      ++pos_;
    } else {
      read_arguments(call);
    }
    skip_blanks();
    if (!at_end()) {
      reject("unexpected text " + quoted(text_.substr(pos_)) + column(pos_) + " after ')'");
    }
    return call;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_blanks() {
    while (!at_end() && is_blank(peek())) ++pos_;
  }
  std::string_view read_name() {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  // A plain value or a list item ends at a separator or at a bracket, which it may not contain.
  void skip_value_text() {
    while (!at_end() && std::string_view(",)([]").find(peek()) == std::string_view::npos) ++pos_;
  }
  std::string_view trimmed(std::size_t start, std::size_t end) const {
    while (end > start && is_blank(text_[end - 1])) --end;
    return text_.substr(start, end - start);
  }

  static std::string column(std::size_t pos) { return " at column " + std::to_string(pos + 1); }
  std::string found_here() const {
    return column(pos_) + ", found " + quoted(text_.substr(pos_, 1));
  }
  std::string unexpected_here() const {
    return "unexpected " + quoted(text_.substr(pos_, 1)) + column(pos_);
  }
  [[noreturn]] void reject(const std::string& why) const { fail(what_, text_, why); }

  void read_arguments(spec_call& call) {
    std::set<std::string, std::less<>> seen;
    for (;;) {
      spec_argument argument = read_argument();
      if (!seen.insert(argument.key).second) {
        reject("parameter " + quoted(argument.key) + " given twice");
      }
      call.arguments.push_back(std::move(argument));
      if (at_end()) reject("missing ')'");
      if (text_[pos_++] == ')') return;  // otherwise a ','
    }
  }

  spec_argument read_argument() {
    skip_blanks();
    spec_argument argument;
    argument.column = pos_ + 1;
    argument.key = std::string(read_name());
    const std::string& key = argument.key;
    if (key.empty()) {
      if (at_end()) reject("missing ')'");
      reject("expected a parameter name" + found_here());
    }
    skip_blanks();
    if (at_end() || peek() != '=') {
      reject("parameter " + quoted(key) + column(argument.column - 1) +
             " needs a value (key=value)");
    }
    ++pos_;
    skip_blanks();
    const std::size_t value_start = pos_;
    if (!at_end() && peek() == '[') {
      argument.is_list = true;
      argument.items = read_list(key);
    } else {
      skip_value_text();
    }
    argument.value = std::string(trimmed(value_start, pos_));
    if (argument.value.empty()) reject("parameter " + quoted(key) + " has an empty value");
    if (!at_end() && (peek() == '(' || peek() == '[' || peek() == ']')) {
      reject(unexpected_here() + " in the value of " + quoted(key));
    }
    return argument;
  }

  // "[a, b]": items separated by commas, no nesting; "[]" is an empty list.
  std::vector<std::string> read_list(const std::string& key) {
    std::vector<std::string> items;
    ++pos_;  // '['
    for (;;) {
      skip_blanks();
      const std::size_t item_start = pos_;
      skip_value_text();
      const std::string_view item = trimmed(item_start, pos_);
      if (at_end()) reject("missing ']' in the value of " + quoted(key));
      if (peek() != ',' && peek() != ']') {
        reject(unexpected_here() + " in the list of " + quoted(key));
      }
      const bool empty_list = peek() == ']' && items.empty() && item.empty();
      if (!empty_list) {
        if (item.empty()) reject("an empty item" + column(pos_) + " in the list of " + quoted(key));
        items.emplace_back(item);
      }
      if (text_[pos_++] == ']') break;
    }
    skip_blanks();
    if (!at_end() && peek() != ',' && peek() != ')') {
      reject(unexpected_here() + " after the list of " + quoted(key));
    }
    return items;
  }

  std::string_view text_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

}  // namespace

spec_call parse_spec_call(std::string_view text, std::string_view what) {
  return spec_call_reader(text, what).read();
}

double spec_number(std::string_view spec, const spec_argument& arg, std::string_view what) {
  double v = 0;
  const char* first = arg.value.data();
  const char* last = first + arg.value.size();
  const auto [end, ec] = std::from_chars(first, last, v);
  const std::string written = arg.key + "=" + escape_controls(arg.value);
  if (ec == std::errc::result_out_of_range && end == last) {
    // from_chars does not say which way: strtod does (HUGE_VAL on overflow, 0 on underflow).
    const bool large = std::fabs(std::strtod(std::string(arg.value).c_str(), nullptr)) >= 1.0;
    fail(what, spec, written + " is too " + (large ? "large" : "small") + " for a number");
  }
  if (ec != std::errc{} || end != last || std::isnan(v))
    fail(what, spec, written + " is not a number");
  if (!std::isfinite(v)) fail(what, spec, written + " is not a finite number");
  return v;
}

duration spec_duration(std::string_view spec, const spec_argument& arg, std::string_view what) {
  try {
    return parse_duration(arg.value);
  } catch (const parse_error& e) {
    fail(what, spec, arg.key + ": " + e.what());
  }
}

double spec_fraction(std::string_view spec, const spec_argument& arg, std::string_view what) {
  const std::string written = arg.key + "=" + escape_controls(arg.value);
  if (arg.is_list) fail(what, spec, written + " is a list; expected a percentage such as 10%");
  double v = 0;
  if (!arg.value.empty() && arg.value.back() == '%') {
    spec_argument number = arg;
    number.value.pop_back();
    while (!number.value.empty() && is_blank(number.value.back())) number.value.pop_back();
    v = spec_number(spec, number, what) / 100.0;
    if (v < 0 || v > 1) fail(what, spec, written + " must be between 0% and 100%");
    return v;
  }
  v = spec_number(spec, arg, what);
  if (v < 0 || v > 1) {
    fail(what, spec, written + " must be a percentage (0% to 100%) or a fraction between 0 and 1");
  }
  return v;
}

std::string format_fraction(double fraction) {
  return format_number(fraction * 100.0) + "%";
}

std::vector<std::string> spec_list(std::string_view spec, const spec_argument& arg,
                                   std::string_view what) {
  (void)spec;
  (void)what;
  if (arg.is_list) return arg.items;
  return {arg.value};
}

std::optional<std::uint64_t> spec_calls(std::string_view spec, const spec_argument& arg,
                                        std::string_view what) {
  constexpr std::string_view suffix = "calls";
  const std::string_view v = arg.value;
  if (arg.is_list || v.size() <= suffix.size() || !v.ends_with(suffix)) return std::nullopt;
  std::string_view digits = v.substr(0, v.size() - suffix.size());
  while (!digits.empty() && is_blank(digits.back())) digits.remove_suffix(1);
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  const std::string written = arg.key + "=" + escape_controls(arg.value);
  if (ec == std::errc::result_out_of_range) fail(what, spec, written + " is too many calls");
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty()) {
    fail(what, spec, written + " is not a whole number of calls (write 100calls)");
  }
  return n;
}

bool spec_bool(std::string_view spec, const spec_argument& arg, std::string_view what) {
  if (arg.value == "true") return true;
  if (arg.value == "false") return false;
  fail(what, spec, arg.key + "=" + escape_controls(arg.value) + " must be true or false");
}

std::string_view to_string(schedule_kind kind) noexcept {
  switch (kind) {
    case schedule_kind::constant:
      return "constant";
    case schedule_kind::linear:
      return "linear";
    case schedule_kind::exponential:
      return "exponential";
    case schedule_kind::fibonacci:
      return "fibonacci";
  }
  return "?";
}

std::string_view to_string(jitter_kind kind) noexcept {
  switch (kind) {
    case jitter_kind::none:
      return "none";
    case jitter_kind::full:
      return "full";
    case jitter_kind::equal:
      return "equal";
    case jitter_kind::decorrelated:
      return "decorrelated";
    case jitter_kind::additive:
      return "additive";
    case jitter_kind::multiplicative:
      return "multiplicative";
    case jitter_kind::proportional:
      return "proportional";
    case jitter_kind::gaussian:
      return "gaussian";
    case jitter_kind::decorrelated_v2:
      return "decorrelated-v2";
  }
  return "?";
}

std::string_view to_string(cap_mode mode) noexcept {
  return mode == cap_mode::before ? "before" : "after";
}

std::string_view to_string(growth g) noexcept {
  return g == growth::base ? "base" : "previous";
}

namespace {

constexpr schedule_kind all_schedules[] = {schedule_kind::constant, schedule_kind::linear,
                                           schedule_kind::exponential, schedule_kind::fibonacci};
// In the enum's order: jitter_bit() counts on it. decorrelated-v2 came last, so the lists in the
// messages and docs that name every jitter only gained a name at their end.
constexpr jitter_kind all_jitters[] = {
    jitter_kind::none,         jitter_kind::full,     jitter_kind::equal,
    jitter_kind::decorrelated, jitter_kind::additive, jitter_kind::multiplicative,
    jitter_kind::proportional, jitter_kind::gaussian, jitter_kind::decorrelated_v2};

// The defaults of each schedule written without a preset. `constant` and `exponential` equal
// the seed 001 presets of the same names, so the bare name means the same either way.
backoff_policy schedule_defaults(schedule_kind kind) {
  using namespace std::chrono_literals;
  switch (kind) {
    case schedule_kind::constant:
      return backoff_policy::constant(5s);
    case schedule_kind::linear:
      return backoff_policy::linear(1s, 1s);
    case schedule_kind::exponential:
      return backoff_policy{};
    case schedule_kind::fibonacci:
      return backoff_policy::fibonacci(1s, 60s);
  }
  return backoff_policy{};
}

std::string known_names() {
  std::vector<std::string_view> names;
  for (schedule_kind kind : all_schedules) names.push_back(to_string(kind));
  for (const preset& p : presets()) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  return join_names(names);
}

std::vector<std::string_view> policy_names() {
  std::vector<std::string_view> names;
  for (schedule_kind kind : all_schedules) names.push_back(to_string(kind));
  for (const preset& p : presets()) names.push_back(p.name);
  return names;
}

// Puts every parameter that the schedule and jitter do not use back to its default, so that
// equal behaviour means equal values (and to_string round-trips).
backoff_policy normalized(backoff_policy p) {
  const backoff_policy d;
  if (p.schedule != schedule_kind::exponential) {
    p.factor = d.factor;
    p.grow = d.grow;
  }
  if (p.schedule != schedule_kind::linear) p.step = d.step;
  if (p.jitter != jitter_kind::additive) p.jitter_max = d.jitter_max;
  if (p.jitter != jitter_kind::multiplicative) {
    p.lo = d.lo;
    p.hi = d.hi;
  }
  if (p.jitter != jitter_kind::proportional) p.r = d.r;
  if (p.jitter != jitter_kind::gaussian) {
    p.sigma = d.sigma;
    p.sd = d.sd;
  } else if (p.sd.count() > 0) {
    p.sigma = d.sigma;
  }
  return p;
}

// The `what` of parse_policy's errors: "bad policy '...': ...".
constexpr std::string_view policy_what = "policy";

// The policy that the spec's name stands for, before its parameters.
backoff_policy starting_policy(std::string_view text, const spec_call& call) {
  backoff_policy p;
  bool found = false;
  for (schedule_kind kind : all_schedules) {
    if (call.name == to_string(kind)) {
      p = schedule_defaults(kind);
      found = true;
    }
  }
  if (!found) {
    const preset* pr = find_preset(call.name);
    if (pr == nullptr) {
      fail(policy_what, text,
           "unknown policy " + quoted(call.name) + " (known: " + known_names() + ")" +
               name_hint(call.name, policy_names()));
    }
    p = pr->policy;
  }
  return p;
}

jitter_kind jitter_named(std::string_view text, const spec_argument& arg) {
  std::vector<std::string_view> names;
  for (jitter_kind j : all_jitters) {
    if (arg.value == to_string(j)) return j;
    names.push_back(to_string(j));
  }
  fail(policy_what, text,
       "unknown jitter " + quoted(arg.value) + " (known: " + join_names(names) + ")" +
           name_hint(arg.value, names));
}

cap_mode cap_named(std::string_view text, const spec_argument& arg) {
  if (arg.value == "before") return cap_mode::before;
  if (arg.value == "after") return cap_mode::after;
  fail(policy_what, text, "cap=" + escape_controls(arg.value) + " must be before or after");
}

growth growth_named(std::string_view text, const spec_argument& arg) {
  if (arg.value == "base") return growth::base;
  if (arg.value == "previous") return growth::previous;
  fail(policy_what, text, "grow=" + escape_controls(arg.value) + " must be base or previous");
}

// The variants of a policy: bits 0-3 its schedule, bits 4-12 its jitter.
constexpr variant_set schedule_bit(schedule_kind kind) noexcept {
  return variant_bit(kind);
}
constexpr variant_set jitter_bit(jitter_kind kind) noexcept {
  return variant_bit(static_cast<unsigned>(kind) + std::size(all_schedules));
}
constexpr variant_set every_schedule = variant_bit(std::size(all_schedules)) - 1;
constexpr variant_set every_jitter =
    (variant_bit(std::size(all_schedules) + std::size(all_jitters)) - 1) & ~every_schedule;
constexpr variant_set policy_groups[] = {every_schedule, every_jitter};
// A key for one schedule, whatever the jitter, and the other way round.
constexpr variant_set only(schedule_kind kind) noexcept {
  return schedule_bit(kind) | every_jitter;
}
constexpr variant_set only(jitter_kind kind) noexcept {
  return every_schedule | jitter_bit(kind);
}

variant_set in_effect(const backoff_policy& p) noexcept {
  return schedule_bit(p.schedule) | jitter_bit(p.jitter);
}

std::optional<std::string> duration_text(duration d) {
  return format_duration(d);
}
std::optional<std::string> number_text(double v) {
  return format_number(v);
}

constexpr spec_key<backoff_policy> policy_keys[] = {
    {"initial", all_variants, "a duration", "the schedule's (above)", "the first base delay",
     [](backoff_policy& p, const spec_value& v) { p.initial = v.time(); },
     [](const backoff_policy& p) { return duration_text(p.initial); }},
    {"factor", only(schedule_kind::exponential), "a number >= 1", "2",
     "the base grows by this factor each retry",
     [](backoff_policy& p, const spec_value& v) { p.factor = v.number(); },
     [](const backoff_policy& p) { return number_text(p.factor); }},
    {"step", only(schedule_kind::linear), "a duration", "1s",
     "the base grows by this much each retry",
     [](backoff_policy& p, const spec_value& v) { p.step = v.time(); },
     [](const backoff_policy& p) { return duration_text(p.step); }},
    {"max", all_variants, "a duration >= `initial`, or `none`", "the schedule's (above)",
     "the cap (before or after the jitter, see `cap`)",
     [](backoff_policy& p, const spec_value& v) {
       p.max = v.text() == "none" ? duration::max() : v.time();
     },
     [](const backoff_policy& p) -> std::optional<std::string> {
       return p.max == duration::max() ? std::string("none") : format_duration(p.max);
     }},
    {"jitter", all_variants, "a jitter of the table above", "`none`", "how the delay is randomized",
     [](backoff_policy& p, const spec_value& v) { p.jitter = jitter_named(v.spec, v.arg); },
     [](const backoff_policy& p) -> std::optional<std::string> {
       return std::string(to_string(p.jitter));
     }},
    {"jitter_max", only(jitter_kind::additive), "a duration", "1s", "the largest random time added",
     [](backoff_policy& p, const spec_value& v) { p.jitter_max = v.time(); },
     [](const backoff_policy& p) { return duration_text(p.jitter_max); }},
    {"lo", only(jitter_kind::multiplicative), "a number <= `hi`", "1", "the lowest multiplier",
     [](backoff_policy& p, const spec_value& v) { p.lo = v.number(); },
     [](const backoff_policy& p) { return number_text(p.lo); }},
    {"hi", only(jitter_kind::multiplicative), "a number >= `lo`", "2", "the highest multiplier",
     [](backoff_policy& p, const spec_value& v) { p.hi = v.number(); },
     [](const backoff_policy& p) { return number_text(p.hi); }},
    {"r", only(jitter_kind::proportional), "a number in [0, 1]", "0.2",
     "the delay is the base times U(1 - r, 1 + r)",
     [](backoff_policy& p, const spec_value& v) { p.r = v.number(); },
     [](const backoff_policy& p) { return number_text(p.r); }},
    {"sigma", only(jitter_kind::gaussian), "a number", "0.1",
     "the standard deviation relative to the base; not with `sd`",
     [](backoff_policy& p, const spec_value& v) { p.sigma = v.number(); },
     [](const backoff_policy& p) -> std::optional<std::string> {
       if (p.sd.count() > 0) return std::nullopt;
       return format_number(p.sigma);
     }},
    {"sd", only(jitter_kind::gaussian), "a duration", "none",
     "the standard deviation as a time; not with `sigma`",
     [](backoff_policy& p, const spec_value& v) { p.sd = v.time(); },
     [](const backoff_policy& p) -> std::optional<std::string> {
       if (p.sd.count() <= 0) return std::nullopt;
       return format_duration(p.sd);
     }},
    {"cap", all_variants, "`before` or `after`", "`before`",
     "whether `max` bounds the base or the jittered delay",
     [](backoff_policy& p, const spec_value& v) { p.cap = cap_named(v.spec, v.arg); },
     [](const backoff_policy& p) -> std::optional<std::string> {
       if (p.cap != cap_mode::after) return std::nullopt;
       return "after";
     }},
    {"grow", only(schedule_kind::exponential), "`base` or `previous`", "`base`",
     "grow from the previous base, or from the previous actual delay",
     [](backoff_policy& p, const spec_value& v) { p.grow = growth_named(v.spec, v.arg); },
     [](const backoff_policy& p) -> std::optional<std::string> {
       if (p.grow != growth::previous) return std::nullopt;
       return "previous";
     }},
    {"jitter_first", all_variants, "`true` or `false`", "`true`",
     "`false`: the first delay is the bare base",
     [](backoff_policy& p, const spec_value& v) { p.jitter_first = v.boolean(); },
     [](const backoff_policy& p) -> std::optional<std::string> {
       if (p.jitter_first) return std::nullopt;
       return "false";
     }},
};

// What a key is restricted to, in the words of its error: "the exponential schedule" or
// "jitter=gaussian".
std::string restriction(variant_set applies_to) {
  std::vector<std::string_view> names;
  if ((applies_to & every_schedule) != every_schedule) {
    for (schedule_kind kind : all_schedules) {
      if (applies_to & schedule_bit(kind)) names.push_back(to_string(kind));
    }
    return "the " + join_names(names) + " schedule";
  }
  for (jitter_kind kind : all_jitters) {
    if (applies_to & jitter_bit(kind)) names.push_back(to_string(kind));
  }
  return "jitter=" + join_names(names);
}

}  // namespace

backoff_policy parse_policy(std::string_view text) {
  const spec_call call = parse_spec_call(text, policy_what);
  backoff_policy p = starting_policy(text, call);
  for (const spec_argument& arg : call.arguments) {
    const spec_key<backoff_policy>* key = find_spec_key(policy_keys, arg.key);
    if (key == nullptr) {
      fail(policy_what, text,
           "unknown parameter " + quoted(arg.key) + " (known: " + spec_key_list(policy_keys) + ")" +
               spec_key_hint(arg.key, policy_keys));
    }
    key->read(p, spec_value{text, policy_what, arg});
  }
  // Only now are the schedule and the jitter known: a key either would ignore is a mistake.
  bool sigma = false, sd = false;
  for (const spec_argument& arg : call.arguments) {
    const spec_key<backoff_policy>& key = *find_spec_key(policy_keys, arg.key);
    if (!key_applies(key, in_effect(p))) {
      fail(policy_what, text,
           "parameter " + quoted(arg.key) + " applies only to " + restriction(key.applies_to));
    }
    sigma = sigma || arg.key == "sigma";
    sd = sd || arg.key == "sd";
  }
  if (sigma && sd) fail(policy_what, text, "give sigma (relative) or sd (absolute), not both");
  if (sigma) p.sd = duration{0};

  p = normalized(p);
  try {
    p.validate();
  } catch (const parse_error& e) {
    fail(policy_what, text, e.what());
  }
  return p;
}

std::string backoff_policy::to_string() const {
  const backoff_policy p = normalized(*this);
  return write_spec(backoff::to_string(p.schedule), policy_keys, p, in_effect(p));
}

std::string detail::policy_keys_markdown() {
  // The variants as the docs name them: the schedules, then jitter=NAME.
  std::vector<std::string> storage;
  for (schedule_kind kind : all_schedules) storage.emplace_back(to_string(kind));
  for (jitter_kind kind : all_jitters) storage.push_back("jitter=" + std::string(to_string(kind)));
  const std::vector<std::string_view> names(storage.begin(), storage.end());
  return key_table_markdown(policy_keys, spec_variants{names, policy_groups});
}

}  // namespace backoff
