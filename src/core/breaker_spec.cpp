// SPDX-License-Identifier: Apache-2.0
// Circuit breakers' configuration: its checks, its canonical text, the spec reader and the
// presets, from one key table (spec_keys.hpp). The breaker itself is in circuit_breaker.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "backoff/circuit_breaker.hpp"
#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view breaker_what = "breaker";
constexpr std::uint32_t max_count = 1'000'000;  // failures, calls, min_calls, max_keys
constexpr std::uint32_t max_half_open = 1000;
constexpr double max_open_growth = 100;

// Bit i: breaker_kind i.
constexpr std::string_view kind_names[] = {"consecutive", "rate", "retry-only", "run-ratio"};
// The spec names: the general one, then the presets.
constexpr std::string_view breaker_names[] = {"breaker", "retry-only-10pct", "run-ratio-10pct"};

// The threshold counts in millionths, so that the comparisons are exact in integers and the
// canonical text ("12.5%") reads back as the same double.
std::int64_t millionths(double fraction) {
  return std::llround(fraction * 1e6);
}
bool whole_millionths(double fraction) {
  return std::isfinite(fraction) && fraction == static_cast<double>(millionths(fraction)) / 1e6;
}
std::string percent_text(double fraction) {
  const std::int64_t ppm = millionths(fraction);
  std::string out = std::to_string(ppm / 10'000);
  std::int64_t rest = ppm % 10'000;
  if (rest != 0) {
    std::string digits = std::to_string(rest);
    digits.insert(0, 4 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out + "%";
}

std::string threshold_text(double fraction) {
  return std::isfinite(fraction) && fraction >= 0.0 && fraction <= 1.0 && whole_millionths(fraction)
             ? percent_text(fraction)
             : detail::spec_number_text(fraction);
}

std::string window_text(const breaker_config& c) {
  return c.window_calls > 0 ? std::to_string(c.window_calls) + "calls" : format_duration(c.window);
}

[[noreturn]] void invalid(const std::string& why) {
  throw parse_error(why);
}

bool parse_kind(std::string_view name, breaker_kind& kind) {
  for (std::size_t i = 0; i < std::size(kind_names); ++i) {
    if (name == kind_names[i]) {
      kind = static_cast<breaker_kind>(i);
      return true;
    }
  }
  return false;
}

constexpr variant_set consecutive = variant_bit(breaker_kind::consecutive);
constexpr variant_set rate = variant_bit(breaker_kind::rate);
constexpr variant_set retry_only = variant_bit(breaker_kind::retry_only);
constexpr variant_set run_ratio = variant_bit(breaker_kind::run_ratio);

// A ratio key's value in millionths (threshold, slow_threshold).
double read_ratio(const spec_value& v) {
  const double f = v.fraction();
  const double scaled = f * 1e6;
  if (std::abs(scaled - std::round(scaled)) > 1e-6 * std::max(1.0, scaled)) {
    detail::spec_fail(
        v.what, v.spec,
        v.arg.key + "=" + v.text() + " is finer than a millionth (4 decimals of a percent)");
  }
  return static_cast<double>(millionths(f)) / 1e6;
}

constexpr spec_key<breaker_config> breaker_keys[] = {
    // Read before the others (it decides which apply), so its reader has nothing left to do.
    {"kind", all_variants, "`consecutive`, `rate`, `retry-only` or `run-ratio`", "`consecutive`",
     "the rule that opens the breaker (the table above); not with a preset",
     [](breaker_config&, const spec_value&) {},
     [](const breaker_config& c) -> std::optional<std::string> {
       return std::string(to_string(c.kind));
     }},
    detail::whole_number_key<&breaker_config::failures, 1, max_count>(
        "failures", consecutive, "a whole number in 1..1000000", "5",
        "failures in a row that open it"),
    {"threshold", rate | retry_only | run_ratio,
     "a percentage (`10%`) or a fraction (`0.1`) in (0%, 100%], in millionths",
     "50%; 10% for retry-only and run-ratio", "the failure ratio that opens it",
     [](breaker_config& c, const spec_value& v) { c.threshold = read_ratio(v); },
     [](const breaker_config& c) -> std::optional<std::string> {
       return percent_text(c.threshold);
     }},
    {"window", rate | retry_only, "a duration in (0, 1d], or calls: `100calls` (1..1000000)",
     "10s; 200ms for retry-only", "the sliding window whose failure ratio counts",
     [](breaker_config& c, const spec_value& v) {
       if (const std::optional<std::uint64_t> n = spec_calls(v.spec, v.arg, v.what)) {
         if (*n == 0 || *n > max_count) {
           detail::spec_fail(v.what, v.spec,
                             "window=" + v.text() + " must be 1calls..1000000calls");
         }
         c.window_calls = static_cast<std::uint32_t>(*n);
         c.window = duration{0};
       } else {
         c.window = v.time();
         c.window_calls = 0;
       }
     },
     [](const breaker_config& c) -> std::optional<std::string> { return window_text(c); }},
    detail::whole_number_key<&breaker_config::min_calls, 1, max_count>(
        "min_calls", rate, "a whole number in 1..1000000", "20",
        "calls in the window before it may open"),
    {"open", consecutive | rate, "a duration in (0, 1d]", "5s",
     "how long it stays open (the first break after a close)",
     [](breaker_config& c, const spec_value& v) { c.open = v.time(); },
     [](const breaker_config& c) -> std::optional<std::string> { return format_duration(c.open); }},
    {"open_growth", consecutive | rate, "a number in 1..100", "1",
     "each reopening before a close multiplies the break by it",
     [](breaker_config& c, const spec_value& v) { c.open_growth = v.number(); },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (c.open_growth == 1.0) return std::nullopt;
       return detail::spec_number_text(c.open_growth);
     }},
    {"open_max", consecutive | rate, "a duration in [open, 1d]; only with `open_growth` above 1",
     "1d", "the longest break the growth reaches",
     [](breaker_config& c, const spec_value& v) { c.open_max = v.time(); },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (c.open_max == duration{0}) return std::nullopt;
       return format_duration(c.open_max);
     }},
    detail::whole_number_key<&breaker_config::half_open, 1, max_half_open>(
        "half_open", consecutive | rate, "a whole number in 1..1000", "1; 3 for rate",
        "trial calls admitted when half-open"),
    {"trials", rate, "`all` or `ratio`", "`all`",
     "how the trials decide: the first failure reopens it, or their failure ratio",
     [](breaker_config& c, const spec_value& v) {
       if (v.text() == "all") {
         c.trials = half_open_rule::all;
       } else if (v.text() == "ratio") {
         c.trials = half_open_rule::ratio;
       } else {
         detail::spec_fail(v.what, v.spec,
                           "trials=" + v.text() + " is not a half-open rule (known: all, ratio)");
       }
     },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (c.trials != half_open_rule::ratio) return std::nullopt;  // `all` is implied
       return "ratio";
     }},
    {"slow", rate, "a duration in (0, 1d]", "none",
     "a call longer than this, from try_acquire to record, is slow",
     [](breaker_config& c, const spec_value& v) {
       c.slow = v.time();
       if (c.slow <= duration{0}) {
         detail::spec_fail(v.what, v.spec, "slow=" + v.text() + " must be in (0, 1d]");
       }
     },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (c.slow == duration{0}) return std::nullopt;
       return format_duration(c.slow);
     }},
    {"slow_threshold", rate,
     "a percentage or a fraction in (0%, 100%], in millionths; only with `slow`", "100%",
     "the slow-call ratio that opens it",
     [](breaker_config& c, const spec_value& v) { c.slow_threshold = read_ratio(v); },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (c.slow == duration{0}) return std::nullopt;
       return percent_text(c.slow_threshold);
     }},
    {"keyed", all_variants, "`true` or `false`", "`false`",
     "one breaker per key (host, shard, user)",
     [](breaker_config& c, const spec_value& v) { c.keyed = v.boolean(); },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (!c.keyed) return std::nullopt;
       return "true";
     }},
    {"max_keys", all_variants, "a whole number in 1..1000000; only with `keyed=true`", "1000",
     "breakers kept at most, the least recently used evicted",
     [](breaker_config& c, const spec_value& v) {
       c.max_keys = detail::spec_whole_number(v, 1, max_count);
     },
     [](const breaker_config& c) -> std::optional<std::string> {
       if (!c.keyed) return std::nullopt;
       return std::to_string(c.max_keys);
     }},
};

// Whether the key applies to the kind, by the table.
bool takes(breaker_kind kind, std::string_view key) {
  const spec_key<breaker_config>* k = find_spec_key(breaker_keys, key);
  return k != nullptr && key_applies(*k, variant_bit(kind));
}

void check_ratio(std::string_view key, double ratio) {
  if (!(std::isfinite(ratio) && ratio > 0.0 && ratio <= 1.0)) {
    invalid(std::string(key) + "=" + threshold_text(ratio) + " must be in (0%, 100%]");
  }
  if (!whole_millionths(ratio)) {
    invalid(std::string(key) + "=" + detail::spec_number_text(ratio) +
            " is finer than a millionth (4 decimals of a percent)");
  }
}

void validate_slow_calls(const breaker_config& c, const std::string& on_kind) {
  const breaker_config base;
  if (!takes(c.kind, "slow")) {
    if (c.slow != base.slow) invalid("slow=" + format_duration(c.slow) + on_kind);
    if (c.slow_threshold != base.slow_threshold) {
      invalid("slow_threshold=" + threshold_text(c.slow_threshold) + on_kind);
    }
    return;
  }
  if (c.slow < duration{0} || c.slow > duration{24h}) {
    invalid("slow=" + format_duration(c.slow) + " must be in (0, 1d]");
  }
  if (c.slow == duration{0} && c.slow_threshold != base.slow_threshold) {
    invalid("slow_threshold=" + threshold_text(c.slow_threshold) +
            " applies only with slow= (the call length that counts as slow)");
  }
  check_ratio("slow_threshold", c.slow_threshold);
}

void validate_growth(const breaker_config& c, const std::string& on_kind) {
  const breaker_config base;
  if (!takes(c.kind, "open_growth")) {
    if (c.open_growth != base.open_growth) {
      invalid("open_growth=" + detail::spec_number_text(c.open_growth) + on_kind);
    }
    if (c.open_max != base.open_max) invalid("open_max=" + format_duration(c.open_max) + on_kind);
    return;
  }
  if (!(c.open_growth >= 1.0 && c.open_growth <= max_open_growth)) {
    invalid("open_growth=" + detail::spec_number_text(c.open_growth) + " must be in 1..100");
  }
  if (c.open_max == duration{0}) return;
  if (c.open_growth == 1.0) {
    invalid("open_max=" + format_duration(c.open_max) +
            " applies only with open_growth above 1 (the break never grows)");
  }
  if (c.open_max < c.open || c.open_max > duration{24h}) {
    invalid("open_max=" + format_duration(c.open_max) +
            " must be in [open, 1d], open=" + format_duration(c.open));
  }
}

}  // namespace

std::string_view to_string(breaker_kind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kind_names) ? kind_names[i] : "?";
}

std::string_view to_string(breaker_state state) noexcept {
  constexpr std::string_view names[] = {"closed",      "open",     "half_open",
                                        "forced_open", "disabled", "metrics_only"};
  static_assert(std::size(names) == breaker_state_count);
  const auto i = static_cast<std::size_t>(state);
  return i < std::size(names) ? names[i] : "?";
}

// ---------------------------------------------------------------------------------------------
// Configuration.

breaker_config breaker_config::defaults(breaker_kind kind) noexcept {
  breaker_config c;
  c.kind = kind;
  switch (kind) {
    case breaker_kind::consecutive:
      break;
    case breaker_kind::rate:
      c.half_open = 3;  // the grammar's row; resilience4j's default is 10 trials
      break;
    case breaker_kind::retry_only:
      c.threshold = 0.1;  // jirfag/simulations' retry-only breaker at 10 %
      c.window = 200ms;   // its window (sized for a simulation of a few seconds)
      break;
    case breaker_kind::run_ratio:
      c.threshold = 0.1;  // Brooker's retry_sim: max_rate 0.1
      break;
  }
  return c;
}

void breaker_config::validate() const {
  const breaker_config base;
  const std::string on_kind = " does not apply to kind=" + std::string(backoff::to_string(kind));
  if (takes(kind, "failures")) {
    if (failures == 0 || failures > max_count) {
      invalid("failures=" + std::to_string(failures) + " must be in 1..1000000");
    }
  } else if (failures != base.failures) {
    invalid("failures=" + std::to_string(failures) + on_kind);
  }
  if (takes(kind, "threshold")) {
    check_ratio("threshold", threshold);
  } else if (threshold != base.threshold) {
    invalid("threshold=" + threshold_text(threshold) + on_kind);
  }
  if (takes(kind, "window")) {
    if (window_calls > 0) {
      if (window != duration{0}) {
        invalid("window=" + format_duration(window) + " and window=" +
                std::to_string(window_calls) + "calls: give a window of time or of calls");
      }
      if (window_calls > max_count) {
        invalid("window=" + window_text(*this) + " must be 1calls..1000000calls");
      }
    } else if (window <= duration{0} || window > duration{24h}) {
      invalid("window=" + format_duration(window) + " must be in (0, 1d]");
    }
  } else if (window != base.window || window_calls != base.window_calls) {
    invalid("window=" + window_text(*this) + on_kind);
  }
  if (takes(kind, "min_calls")) {
    if (min_calls == 0 || min_calls > max_count) {
      invalid("min_calls=" + std::to_string(min_calls) + " must be in 1..1000000");
    }
    if (window_calls > 0 && min_calls > window_calls) {
      invalid("min_calls=" + std::to_string(min_calls) +
              " is more than window=" + window_text(*this) + ": the breaker could never open");
    }
  } else if (min_calls != base.min_calls) {
    invalid("min_calls=" + std::to_string(min_calls) + on_kind);
  }
  if (takes(kind, "open")) {
    if (open <= duration{0} || open > duration{24h}) {
      invalid("open=" + format_duration(open) + " must be in (0, 1d]");
    }
  } else if (open != base.open) {
    invalid("open=" + format_duration(open) + on_kind);
  }
  if (takes(kind, "half_open")) {
    if (half_open == 0 || half_open > max_half_open) {
      invalid("half_open=" + std::to_string(half_open) + " must be in 1..1000");
    }
  } else if (half_open != base.half_open) {
    invalid("half_open=" + std::to_string(half_open) + on_kind);
  }
  if (!takes(kind, "trials") && trials != base.trials) invalid("trials=ratio" + on_kind);
  validate_slow_calls(*this, on_kind);
  validate_growth(*this, on_kind);
  if (keyed) {
    if (max_keys == 0 || max_keys > max_count) {
      invalid("max_keys=" + std::to_string(max_keys) + " must be in 1..1000000");
    }
  } else if (max_keys != base.max_keys) {
    invalid("max_keys=" + std::to_string(max_keys) + " applies only with keyed=true");
  }
}

std::string breaker_config::to_string() const {
  return write_spec(breaker_names[0], breaker_keys, *this, variant_bit(kind));
}

breaker_config parse_breaker(std::string_view text) {
  const spec_call call = parse_spec_call(text, breaker_what);
  breaker_config c;
  bool preset = false;
  if (call.name == breaker_names[0]) {
    breaker_kind kind = breaker_kind::consecutive;
    for (const spec_argument& arg : call.arguments) {
      if (arg.key == "kind" && !parse_kind(arg.value, kind)) {
        detail::spec_fail(breaker_what, text,
                          "kind=" + arg.value + " is not a breaker kind (known: " +
                              join_names(kind_names) + ")" + name_hint(arg.value, kind_names));
      }
    }
    c = breaker_config::defaults(kind);
  } else if (call.name == breaker_names[1]) {
    c = breaker_config::defaults(breaker_kind::retry_only);
    preset = true;
  } else if (call.name == breaker_names[2]) {
    c = breaker_config::defaults(breaker_kind::run_ratio);
    preset = true;
  } else {
    detail::unknown_name(breaker_what, text, "breaker", call.name, breaker_names);
  }
  const variant_set in_effect = variant_bit(c.kind);
  bool max_keys_given = false;
  bool slow_threshold_given = false;
  bool open_max_given = false;
  for (const spec_argument& arg : call.arguments) {
    const spec_key<breaker_config>* key = find_spec_key(breaker_keys, arg.key);
    if (key == nullptr) detail::unknown_parameter(breaker_what, text, arg, breaker_keys);
    if (key == &breaker_keys[0]) {  // kind, read above
      if (preset) {
        detail::spec_fail(breaker_what, text,
                          "parameter \"kind\" is fixed by the preset " + call.name +
                              " (it is kind=" + std::string(to_string(c.kind)) + ")");
      }
      continue;
    }
    if (!key_applies(*key, in_effect)) {
      // The keys it takes, but kind: that one is already given.
      std::vector<std::string_view> takes =
          spec_key_names(std::span<const spec_key<breaker_config>>(breaker_keys), in_effect);
      takes.erase(takes.begin());
      detail::spec_fail(breaker_what, text,
                        "parameter " + detail::quoted(arg.key) +
                            " does not apply to kind=" + std::string(to_string(c.kind)) +
                            " (it takes " + join_names(takes) + ")");
    }
    key->read(c, spec_value{text, breaker_what, arg});
    if (arg.key == "max_keys") max_keys_given = true;
    if (arg.key == "slow_threshold") slow_threshold_given = true;
    if (arg.key == "open_max") open_max_given = true;
  }
  // Keys that mean nothing without another, which the canonical text would drop.
  if (max_keys_given && !c.keyed) {
    detail::spec_fail(breaker_what, text, "parameter \"max_keys\" applies only with keyed=true");
  }
  if (slow_threshold_given && c.slow == duration{0}) {
    detail::spec_fail(breaker_what, text,
                      "parameter \"slow_threshold\" applies only with slow= (the call length "
                      "that counts as slow)");
  }
  if (open_max_given && c.open_growth == 1.0) {
    detail::spec_fail(breaker_what, text,
                      "parameter \"open_max\" applies only with open_growth above 1 (the break "
                      "never grows)");
  }
  detail::validate_spec(breaker_what, text, c);
  return c;
}

std::string detail::breaker_keys_markdown() {
  return key_table_markdown(breaker_keys, spec_variants{kind_names, {}});
}

}  // namespace backoff
