// SPDX-License-Identifier: Apache-2.0
// Circuit breakers: configuration checks, canonical text, the spec reader and presets, the
// transitions (everything off the closed path), and the keyed breakers.
#include "backoff/circuit_breaker.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "backoff/error.hpp"
#include "backoff/keyed_breakers.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view breaker_what = "breaker";
constexpr std::uint32_t max_count = 1'000'000;  // failures, calls, min_calls, max_keys
constexpr std::uint32_t max_half_open = 1000;

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

std::uint32_t whole_number(std::string_view spec, const spec_argument& arg, double lo, double hi) {
  const double v = spec_number(spec, arg, breaker_what);
  if (!(v >= lo && v <= hi && v == std::floor(v))) {
    detail::spec_fail(breaker_what, spec,
                      arg.key + "=" + arg.value + " must be a whole number in " +
                          detail::spec_number_text(lo) + ".." + detail::spec_number_text(hi));
  }
  return static_cast<std::uint32_t>(v);
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

std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return a + b;
}

constexpr variant_set consecutive = variant_bit(breaker_kind::consecutive);
constexpr variant_set rate = variant_bit(breaker_kind::rate);
constexpr variant_set retry_only = variant_bit(breaker_kind::retry_only);
constexpr variant_set run_ratio = variant_bit(breaker_kind::run_ratio);

// A key that holds a whole number in lo..hi.
template <std::uint32_t breaker_config::*member, std::uint32_t lo, std::uint32_t hi>
constexpr spec_key<breaker_config> whole_key(std::string_view name, variant_set applies_to,
                                             std::string_view values, std::string_view fallback,
                                             std::string_view meaning) {
  return {name,
          applies_to,
          values,
          fallback,
          meaning,
          [](breaker_config& c, const spec_value& v) {
            c.*member = whole_number(v.spec, v.arg, lo, hi);
          },
          [](const breaker_config& c) -> std::optional<std::string> {
            return std::to_string(c.*member);
          }};
}

constexpr spec_key<breaker_config> breaker_keys[] = {
    // Read before the others (it decides which apply), so its reader has nothing left to do.
    {"kind", all_variants, "`consecutive`, `rate`, `retry-only` or `run-ratio`", "`consecutive`",
     "the rule that opens the breaker (the table above); not with a preset",
     [](breaker_config&, const spec_value&) {},
     [](const breaker_config& c) -> std::optional<std::string> {
       return std::string(to_string(c.kind));
     }},
    whole_key<&breaker_config::failures, 1, max_count>("failures", consecutive,
                                                       "a whole number in 1..1000000", "5",
                                                       "failures in a row that open it"),
    {"threshold", rate | retry_only | run_ratio,
     "a percentage (`10%`) or a fraction (`0.1`) in (0%, 100%], in millionths",
     "50%; 10% for retry-only and run-ratio", "the failure ratio that opens it",
     [](breaker_config& c, const spec_value& v) {
       const double f = v.fraction();
       const double scaled = f * 1e6;
       if (std::abs(scaled - std::round(scaled)) > 1e-6 * std::max(1.0, scaled)) {
         detail::spec_fail(
             v.what, v.spec,
             "threshold=" + v.text() + " is finer than a millionth (4 decimals of a percent)");
       }
       c.threshold = static_cast<double>(millionths(f)) / 1e6;
     },
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
    whole_key<&breaker_config::min_calls, 1, max_count>("min_calls", rate,
                                                        "a whole number in 1..1000000", "20",
                                                        "calls in the window before it may open"),
    {"open", consecutive | rate, "a duration in (0, 1d]", "5s", "how long it stays open",
     [](breaker_config& c, const spec_value& v) { c.open = v.time(); },
     [](const breaker_config& c) -> std::optional<std::string> { return format_duration(c.open); }},
    whole_key<&breaker_config::half_open, 1, max_half_open>(
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
       c.max_keys = whole_number(v.spec, v.arg, 1, max_count);
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

}  // namespace

std::string_view to_string(breaker_kind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kind_names) ? kind_names[i] : "?";
}

std::string_view to_string(breaker_state state) noexcept {
  switch (state) {
    case breaker_state::closed:
      return "closed";
    case breaker_state::open:
      return "open";
    case breaker_state::half_open:
      return "half_open";
  }
  return "?";
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
    if (!(std::isfinite(threshold) && threshold > 0.0 && threshold <= 1.0)) {
      invalid("threshold=" + threshold_text(threshold) + " must be in (0%, 100%]");
    }
    if (!whole_millionths(threshold)) {
      invalid("threshold=" + detail::spec_number_text(threshold) +
              " is finer than a millionth (4 decimals of a percent)");
    }
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
  }
  if (max_keys_given && !c.keyed) {
    detail::spec_fail(breaker_what, text, "parameter \"max_keys\" applies only with keyed=true");
  }
  detail::validate_spec(breaker_what, text, c);
  return c;
}

std::string detail::breaker_keys_markdown() {
  return key_table_markdown(breaker_keys, spec_variants{kind_names, {}});
}

// ---------------------------------------------------------------------------------------------
// The window of the last N calls (resilience4j's COUNT_BASED window), lock-free: a ring of N
// one-byte slots (0 empty, 1 success, 2 failure) and a running count of failure slots. A call
// takes the next sequence number and exchanges its outcome into that slot; the count moves by
// the difference between what it wrote and what it replaced, so it always equals the failure
// slots, whatever order concurrent calls land in. A clear() racing a call may leave the count
// off by that one call until the slot is overwritten; sum() clamps it to [0, calls].

class circuit_breaker::call_window {
 public:
  explicit call_window(std::uint32_t size)
      : size_(size), slots_(new std::atomic<std::uint8_t>[size]()) {}

  void add(bool failure) noexcept {
    const std::uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    const std::uint8_t value = failure ? 2 : 1;
    const std::uint8_t old = slots_[i % size_].exchange(value, std::memory_order_relaxed);
    const int delta = (failure ? 1 : 0) - (old == 2 ? 1 : 0);
    if (delta != 0) failures_.fetch_add(delta, std::memory_order_relaxed);
  }

  counts sum() const noexcept {
    const std::uint64_t calls =
        std::min<std::uint64_t>(next_.load(std::memory_order_relaxed), size_);
    const std::int64_t f = failures_.load(std::memory_order_relaxed);
    return {calls, std::min<std::uint64_t>(f < 0 ? 0 : static_cast<std::uint64_t>(f), calls)};
  }

  void clear() noexcept {
    for (std::uint32_t i = 0; i < size_; ++i) slots_[i].store(0, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    failures_.store(0, std::memory_order_relaxed);
  }

 private:
  std::uint32_t size_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> slots_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<std::int64_t> failures_{0};
};

// ---------------------------------------------------------------------------------------------
// The breaker.

circuit_breaker::circuit_breaker(const breaker_config& config, breaker_listener listener)
    : config_((config.validate(), config)),
      listener_(std::move(listener)),
      gates_(config.kind == breaker_kind::consecutive || config.kind == breaker_kind::rate),
      threshold_ppm_(static_cast<std::uint64_t>(millionths(config.threshold))),
      open_ns_(config.open.count()),
      time_window_(config.window_calls > 0 ? duration{1} : config.window),
      calls_(config.window_calls > 0 ? std::make_unique<call_window>(config.window_calls)
                                     : nullptr) {}

circuit_breaker::~circuit_breaker() = default;

circuit_breaker::permit circuit_breaker::acquire_slow(duration now, bool first_try,
                                                      std::uint64_t seen) noexcept {
  // An open breaker refuses without the lock until its time is over.
  if (state_of(seen) == breaker_state::open &&
      now.count() < open_until_ns_.load(std::memory_order_relaxed)) {
    return {false, false, first_try, seen >> 2};
  }
  std::lock_guard lock(mutex_);
  std::uint64_t w = word_.load(std::memory_order_relaxed);
  switch (state_of(w)) {
    case breaker_state::closed:
      return {true, false, first_try, w >> 2};
    case breaker_state::open:
      if (now.count() < open_until_ns_.load(std::memory_order_relaxed)) {
        return {false, false, first_try, w >> 2};
      }
      // The first attempt after the open time half-opens the breaker (resilience4j's default,
      // automaticTransitionFromOpenToHalfOpen off) and is its first trial.
      move_locked(breaker_state::half_open, now);
      w = word_.load(std::memory_order_relaxed);
      break;
    case breaker_state::half_open:
      break;
  }
  if (trials_admitted_ >= config_.half_open) return {false, false, first_try, w >> 2};
  ++trials_admitted_;
  return {true, true, first_try, w >> 2};
}

void circuit_breaker::record_trial(duration now, const permit& p, bool failure) noexcept {
  std::lock_guard lock(mutex_);
  const std::uint64_t w = word_.load(std::memory_order_relaxed);
  if (w != ((p.generation << 2) | static_cast<std::uint64_t>(breaker_state::half_open))) {
    return;  // that half-open episode is over
  }
  if (config_.trials == half_open_rule::ratio) {
    // jirfag/simulations CircuitBreaker.is_request_allowed: the failure ratio of the half-open
    // calls, once enough of them have answered, against the threshold that opens it.
    ++(failure ? trial_failures_ : trial_successes_);
    const std::uint64_t answered = std::uint64_t{trial_failures_} + trial_successes_;
    if (answered >= config_.half_open) {
      move_locked(at_or_above_threshold({answered, trial_failures_}) ? breaker_state::open
                                                                     : breaker_state::closed,
                  now);
    }
    return;
  }
  if (failure) {
    move_locked(breaker_state::open, now);
  } else if (++trial_successes_ >= config_.half_open) {
    move_locked(breaker_state::closed, now);
  }
}

void circuit_breaker::record_counts(duration now, const permit& p, bool failure) noexcept {
  switch (config_.kind) {
    case breaker_kind::run_ratio:
      // Brooker's should_retry counts every failed attempt, the last one of an operation too.
      if (failure) failed_attempts_.fetch_add(1, std::memory_order_relaxed);
      return;
    case breaker_kind::retry_only:
      // jirfag/simulations counts every attempt, first tries and retries alike.
      if (calls_) {
        calls_->add(failure);
      } else {
        time_window_.add(now, 1, failure ? 1U : 0U);
      }
      return;
    case breaker_kind::rate: {
      const std::uint64_t w = word_.load(std::memory_order_acquire);
      if (w != closed_word(p.generation)) return;  // admitted by an earlier state
      if (calls_) {
        calls_->add(failure);
      } else {
        time_window_.add(now, 1, failure ? 1U : 0U);
      }
      const counts c = window_counts(now);
      if (c.calls >= config_.min_calls && at_or_above_threshold(c)) trip(now, w);
      return;
    }
    case breaker_kind::consecutive:
      return;  // inline in record()
  }
}

void circuit_breaker::trip(duration now, std::uint64_t seen) noexcept {
  std::lock_guard lock(mutex_);
  if (word_.load(std::memory_order_relaxed) != seen) return;  // another thread moved it
  move_locked(breaker_state::open, now);
}

void circuit_breaker::move_locked(breaker_state to, duration now) noexcept {
  const std::uint64_t w = word_.load(std::memory_order_relaxed);
  const breaker_state from = state_of(w);
  switch (to) {
    case breaker_state::open:
      open_until_ns_.store(saturating_add(now.count(), open_ns_), std::memory_order_relaxed);
      break;
    case breaker_state::half_open:
      trials_admitted_ = 0;
      trial_successes_ = 0;
      trial_failures_ = 0;
      break;
    case breaker_state::closed:
      // A fresh start, as resilience4j resets its metrics on closing: the failures that opened
      // the breaker must not open it again.
      consecutive_.store(0, std::memory_order_relaxed);
      if (calls_) {
        calls_->clear();
      } else {
        time_window_.reset();
      }
      break;
  }
  // Release: a thread that sees the new word sees open_until and the cleared counts.
  word_.store((((w >> 2) + 1) << 2) | static_cast<std::uint64_t>(to), std::memory_order_release);
  if (listener_) listener_(breaker_transition{from, to, now});
}

void circuit_breaker::release(const permit& p) noexcept {
  if (!p.allowed || !p.trial) return;
  std::lock_guard lock(mutex_);
  const std::uint64_t w = word_.load(std::memory_order_relaxed);
  if (w == ((p.generation << 2) | static_cast<std::uint64_t>(breaker_state::half_open)) &&
      trials_admitted_ > 0) {
    --trials_admitted_;
  }
}

circuit_breaker::counts circuit_breaker::window_counts(duration now) const noexcept {
  if (calls_) return calls_->sum();
  const auto t = time_window_.sum(now);
  return {t.first, t.second};
}

bool circuit_breaker::retry_allowed(duration now) const noexcept {
  switch (config_.kind) {
    case breaker_kind::retry_only: {
      const counts c = window_counts(now);
      return c.calls > 0 && !at_or_above_threshold(c);
    }
    case breaker_kind::run_ratio: {
      const std::uint64_t first = first_tries_.load(std::memory_order_relaxed);
      const std::uint64_t failed = failed_attempts_.load(std::memory_order_relaxed);
      // retry_sim: no retry when failures / calls > max_rate.
      return first > 0 && failed * 1'000'000 <= threshold_ppm_ * first;
    }
    case breaker_kind::consecutive:
    case breaker_kind::rate:
      break;
  }
  return state(now) != breaker_state::open;
}

breaker_state circuit_breaker::state(duration now) const noexcept {
  if (!gates_) return breaker_state::closed;
  const std::uint64_t w = word_.load(std::memory_order_acquire);
  const breaker_state s = state_of(w);
  if (s == breaker_state::open && now.count() >= open_until_ns_.load(std::memory_order_relaxed)) {
    return breaker_state::half_open;
  }
  return s;
}

circuit_breaker::counts circuit_breaker::current_counts(duration now) const noexcept {
  switch (config_.kind) {
    case breaker_kind::consecutive: {
      const std::uint64_t n = consecutive_.load(std::memory_order_relaxed);
      return {n, n};
    }
    case breaker_kind::run_ratio:
      return {first_tries_.load(std::memory_order_relaxed),
              failed_attempts_.load(std::memory_order_relaxed)};
    case breaker_kind::rate:
    case breaker_kind::retry_only:
      break;
  }
  return window_counts(now);
}

// ---------------------------------------------------------------------------------------------
// Keyed breakers: per shard, a list in order of use (front: the most recent) and an index into
// it by key. The index's keys view the strings in the list's nodes, which never move.

struct keyed_breakers::shard {
  struct entry {
    std::string key;
    std::shared_ptr<circuit_breaker> breaker;
  };
  mutable std::mutex mutex;
  std::list<entry> by_use;
  std::unordered_map<std::string_view, std::list<entry>::iterator> index;
};

keyed_breakers::keyed_breakers(const breaker_config& config, keyed_breaker_listener listener)
    : config_((config.validate(), config)),
      listener_(listener ? std::make_shared<const keyed_breaker_listener>(std::move(listener))
                         : nullptr),
      shard_count_(config.max_keys >= 256 ? 16 : 1),
      shards_(std::make_unique<shard[]>(shard_count_)) {}

keyed_breakers::~keyed_breakers() = default;

keyed_breakers::shard& keyed_breakers::shard_of(std::string_view key) const noexcept {
  if (shard_count_ == 1) return shards_[0];
  // The high bits: the map inside the shard buckets by the low ones.
  const std::size_t h = std::hash<std::string_view>{}(key);
  return shards_[(h >> 48) % shard_count_];
}

bool keyed_breakers::reserve() noexcept {
  std::size_t n = kept_.load(std::memory_order_relaxed);
  while (n < config_.max_keys) {
    if (kept_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

std::shared_ptr<circuit_breaker> keyed_breakers::get(std::string_view key) {
  shard& s = shard_of(key);
  for (;;) {
    {
      std::lock_guard lock(s.mutex);
      if (const auto found = s.index.find(key); found != s.index.end()) {
        s.by_use.splice(s.by_use.begin(), s.by_use, found->second);
        return found->second->breaker;
      }
      if (reserve()) return insert(s, key);
      if (!s.by_use.empty()) {
        evict_idlest(s);  // one out, one in: the count stays at the bound
        return insert(s, key);
      }
    }
    // At the bound, and this key's shard is empty: make room in another shard (one lock at a
    // time, so two threads doing this cannot deadlock), then try again.
    for (std::size_t i = 0; i < shard_count_; ++i) {
      std::lock_guard lock(shards_[i].mutex);
      if (!shards_[i].by_use.empty()) {
        evict_idlest(shards_[i]);
        kept_.fetch_sub(1, std::memory_order_relaxed);
        break;
      }
    }
  }
}

void keyed_breakers::evict_idlest(shard& s) noexcept {
  s.index.erase(s.by_use.back().key);
  s.by_use.pop_back();
}

std::shared_ptr<circuit_breaker> keyed_breakers::insert(shard& s, std::string_view key) {
  breaker_listener on_transition;
  if (listener_) {
    // The breaker may outlive this object (get() hands out shared_ptrs): it keeps the listener.
    on_transition = [listener = listener_, name = std::string(key)](const breaker_transition& t) {
      (*listener)(name, t);
    };
  }
  s.by_use.push_front(
      {std::string(key), std::make_shared<circuit_breaker>(config_, std::move(on_transition))});
  s.index.emplace(s.by_use.front().key, s.by_use.begin());
  return s.by_use.front().breaker;
}

std::shared_ptr<circuit_breaker> keyed_breakers::find(std::string_view key) const {
  shard& s = shard_of(key);
  std::lock_guard lock(s.mutex);
  const auto found = s.index.find(key);
  return found == s.index.end() ? nullptr : found->second->breaker;
}

std::size_t keyed_breakers::size() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    n += shards_[i].by_use.size();
  }
  return n;
}

}  // namespace backoff
