// SPDX-License-Identifier: Apache-2.0
// Policy specs: the call tokenizer shared by every spec kind, and the policy reader/writer.
#include "backoff/spec.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/presets.hpp"

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

spec_call parse_spec_call(std::string_view text, std::string_view what) {
  spec_call call;
  std::size_t i = 0;
  const auto skip_blanks = [&] {
    while (i < text.size() && is_blank(text[i])) ++i;
  };
  const auto at = [&](std::size_t pos) { return " at column " + std::to_string(pos + 1); };

  skip_blanks();
  const std::size_t name_start = i;
  while (i < text.size() && is_name_char(text[i])) ++i;
  call.name = std::string(text.substr(name_start, i - name_start));
  if (call.name.empty()) {
    if (i >= text.size()) fail(what, text, "empty; expected a name such as exponential(...)");
    fail(what, text, "expected a name" + at(i) + ", found " + quoted(text.substr(i, 1)));
  }
  skip_blanks();
  if (i == text.size()) return call;
  if (text[i] != '(') {
    fail(what, text,
         "unexpected " + quoted(text.substr(i, 1)) + at(i) + " after " + quoted(call.name) +
             " (parameters go in parentheses)");
  }
  ++i;
  std::set<std::string, std::less<>> seen;
  skip_blanks();
  if (i < text.size() && text[i] == ')') {
    ++i;
  } else {
    for (;;) {
      skip_blanks();
      const std::size_t key_start = i;
      while (i < text.size() && is_name_char(text[i])) ++i;
      std::string key(text.substr(key_start, i - key_start));
      if (key.empty()) {
        if (i >= text.size()) fail(what, text, "missing ')'");
        fail(what, text,
             "expected a parameter name" + at(i) + ", found " + quoted(text.substr(i, 1)));
      }
      skip_blanks();
      if (i >= text.size() || text[i] != '=') {
        fail(what, text, "parameter " + quoted(key) + at(key_start) + " needs a value (key=value)");
      }
      ++i;
      skip_blanks();
      const std::size_t value_start = i;
      std::vector<std::string> items;
      bool is_list = false;
      if (i < text.size() && text[i] == '[') {
        // A list: "[a, b]", items separated by commas, no nesting; "[]" is an empty list.
        is_list = true;
        ++i;
        for (;;) {
          skip_blanks();
          const std::size_t item_start = i;
          while (i < text.size() && text[i] != ',' && text[i] != ']' && text[i] != '[' &&
                 text[i] != '(' && text[i] != ')')
            ++i;
          std::size_t item_end = i;
          while (item_end > item_start && is_blank(text[item_end - 1])) --item_end;
          if (i >= text.size()) fail(what, text, "missing ']' in the value of " + quoted(key));
          if (text[i] != ',' && text[i] != ']') {
            fail(what, text,
                 "unexpected " + quoted(text.substr(i, 1)) + at(i) + " in the list of " +
                     quoted(key));
          }
          const bool empty_list = text[i] == ']' && items.empty() && item_end == item_start;
          if (!empty_list) {
            if (item_end == item_start) {
              fail(what, text, "an empty item" + at(i) + " in the list of " + quoted(key));
            }
            items.emplace_back(text.substr(item_start, item_end - item_start));
          }
          if (text[i++] == ']') break;
        }
        skip_blanks();
        if (i < text.size() && text[i] != ',' && text[i] != ')') {
          fail(what, text,
               "unexpected " + quoted(text.substr(i, 1)) + at(i) + " after the list of " +
                   quoted(key));
        }
      } else {
        while (i < text.size() && text[i] != ',' && text[i] != ')' && text[i] != '(' &&
               text[i] != '[' && text[i] != ']')
          ++i;
      }
      std::size_t value_end = i;
      while (value_end > value_start && is_blank(text[value_end - 1])) --value_end;
      std::string value(text.substr(value_start, value_end - value_start));
      if (value.empty()) fail(what, text, "parameter " + quoted(key) + " has an empty value");
      if (i < text.size() && (text[i] == '(' || text[i] == '[' || text[i] == ']')) {
        fail(what, text,
             "unexpected " + quoted(text.substr(i, 1)) + at(i) + " in the value of " + quoted(key));
      }
      if (!seen.insert(key).second) {
        fail(what, text, "parameter " + quoted(key) + " given twice");
      }
      call.arguments.push_back(
          {std::move(key), std::move(value), key_start + 1, is_list, std::move(items)});
      if (i >= text.size()) fail(what, text, "missing ')'");
      if (text[i] == ')') {
        ++i;
        break;
      }
      ++i;  // ','
    }
  }
  skip_blanks();
  if (i != text.size()) {
    fail(what, text, "unexpected text " + quoted(text.substr(i)) + at(i) + " after ')'");
  }
  return call;
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
constexpr jitter_kind all_jitters[] = {jitter_kind::none,         jitter_kind::full,
                                       jitter_kind::equal,        jitter_kind::decorrelated,
                                       jitter_kind::additive,     jitter_kind::multiplicative,
                                       jitter_kind::proportional, jitter_kind::gaussian};

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
  std::string out = "constant, linear, exponential, fibonacci";
  for (const preset& p : presets()) {
    if (p.name != "constant" && p.name != "exponential") out += ", " + std::string(p.name);
  }
  return out;
}

constexpr std::string_view policy_keys =
    "initial, factor, step, max, jitter, jitter_max, lo, hi, r, sigma, sd, cap, grow, jitter_first";

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
           "unknown policy " + quoted(call.name) + " (known: " + known_names() + ")");
    }
    p = pr->policy;
  }
  return p;
}

jitter_kind jitter_named(std::string_view text, const spec_argument& arg) {
  for (jitter_kind j : all_jitters) {
    if (arg.value == to_string(j)) return j;
  }
  fail(policy_what, text,
       "unknown jitter " + quoted(arg.value) +
           " (known: none, full, equal, decorrelated, additive, multiplicative, "
           "proportional, gaussian)");
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

void set_parameter(backoff_policy& p, std::string_view text, const spec_argument& arg) {
  const std::string& k = arg.key;
  if (k == "initial") {
    p.initial = spec_duration(text, arg, policy_what);
  } else if (k == "factor") {
    p.factor = spec_number(text, arg, policy_what);
  } else if (k == "step") {
    p.step = spec_duration(text, arg, policy_what);
  } else if (k == "max") {
    p.max = (arg.value == "none") ? duration::max() : spec_duration(text, arg, policy_what);
  } else if (k == "jitter") {
    p.jitter = jitter_named(text, arg);
  } else if (k == "jitter_max") {
    p.jitter_max = spec_duration(text, arg, policy_what);
  } else if (k == "lo") {
    p.lo = spec_number(text, arg, policy_what);
  } else if (k == "hi") {
    p.hi = spec_number(text, arg, policy_what);
  } else if (k == "r") {
    p.r = spec_number(text, arg, policy_what);
  } else if (k == "sigma") {
    p.sigma = spec_number(text, arg, policy_what);
  } else if (k == "sd") {
    p.sd = spec_duration(text, arg, policy_what);
  } else if (k == "cap") {
    p.cap = cap_named(text, arg);
  } else if (k == "grow") {
    p.grow = growth_named(text, arg);
  } else if (k == "jitter_first") {
    p.jitter_first = spec_bool(text, arg, policy_what);
  } else {
    fail(policy_what, text,
         "unknown parameter " + quoted(k) + " (known: " + std::string(policy_keys) + ")");
  }
}

// A key that the chosen schedule or jitter would ignore is a mistake worth reporting.
void reject_inapplicable_keys(const backoff_policy& p, std::string_view text,
                              const std::set<std::string, std::less<>>& given) {
  const auto requires_key = [&](std::string_view key, bool applies, std::string_view needs) {
    if (given.contains(key) && !applies) {
      fail(policy_what, text,
           "parameter " + quoted(key) + " applies only to " + std::string(needs));
    }
  };
  requires_key("factor", p.schedule == schedule_kind::exponential, "the exponential schedule");
  requires_key("grow", p.schedule == schedule_kind::exponential, "the exponential schedule");
  requires_key("step", p.schedule == schedule_kind::linear, "the linear schedule");
  requires_key("jitter_max", p.jitter == jitter_kind::additive, "jitter=additive");
  requires_key("lo", p.jitter == jitter_kind::multiplicative, "jitter=multiplicative");
  requires_key("hi", p.jitter == jitter_kind::multiplicative, "jitter=multiplicative");
  requires_key("r", p.jitter == jitter_kind::proportional, "jitter=proportional");
  requires_key("sigma", p.jitter == jitter_kind::gaussian, "jitter=gaussian");
  requires_key("sd", p.jitter == jitter_kind::gaussian, "jitter=gaussian");
  if (given.contains("sigma") && given.contains("sd")) {
    fail(policy_what, text, "give sigma (relative) or sd (absolute), not both");
  }
}

}  // namespace

backoff_policy parse_policy(std::string_view text) {
  const spec_call call = parse_spec_call(text, policy_what);
  backoff_policy p = starting_policy(text, call);
  std::set<std::string, std::less<>> given;
  for (const spec_argument& arg : call.arguments) {
    given.insert(arg.key);
    set_parameter(p, text, arg);
  }
  reject_inapplicable_keys(p, text, given);
  if (given.contains("sigma")) p.sd = duration{0};

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
  std::string out(backoff::to_string(p.schedule));
  out += "(initial=" + format_duration(p.initial);
  if (p.schedule == schedule_kind::exponential) out += ", factor=" + format_number(p.factor);
  if (p.schedule == schedule_kind::linear) out += ", step=" + format_duration(p.step);
  out += ", max=" + (p.max == duration::max() ? std::string("none") : format_duration(p.max));
  out += ", jitter=" + std::string(backoff::to_string(p.jitter));
  switch (p.jitter) {
    case jitter_kind::additive:
      out += ", jitter_max=" + format_duration(p.jitter_max);
      break;
    case jitter_kind::multiplicative:
      out += ", lo=" + format_number(p.lo) + ", hi=" + format_number(p.hi);
      break;
    case jitter_kind::proportional:
      out += ", r=" + format_number(p.r);
      break;
    case jitter_kind::gaussian:
      out +=
          p.sd.count() > 0 ? ", sd=" + format_duration(p.sd) : ", sigma=" + format_number(p.sigma);
      break;
    default:
      break;
  }
  if (p.cap == cap_mode::after) out += ", cap=after";
  if (p.grow == growth::previous) out += ", grow=previous";
  if (!p.jitter_first) out += ", jitter_first=false";
  out += ")";
  return out;
}

}  // namespace backoff
