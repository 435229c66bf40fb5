// SPDX-License-Identifier: Apache-2.0
// Circuit breakers: configuration checks, canonical text, the spec reader and presets, the
// transitions (everything off the closed path), and the keyed breakers.
#include "backoff/circuit_breaker.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <string>
#include <unordered_map>

#include "backoff/error.hpp"
#include "backoff/keyed_breakers.hpp"
#include "backoff/spec.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view breaker_what = "breaker";
constexpr std::uint32_t max_count = 1'000'000;  // failures, calls, min_calls, max_keys
constexpr std::uint32_t max_half_open = 1000;

// Which keys each kind takes (besides kind, keyed and max_keys, which every kind takes).
struct kind_keys {
  bool failures, threshold, window, min_calls, open, half_open, trials;
};
constexpr kind_keys keys_of(breaker_kind kind) noexcept {
  switch (kind) {
    case breaker_kind::consecutive:
      return {true, false, false, false, true, true, false};
    case breaker_kind::rate:
      return {false, true, true, true, true, true, true};
    case breaker_kind::retry_only:
      return {false, true, true, false, false, false, false};
    case breaker_kind::run_ratio:
      return {false, true, false, false, false, false, false};
  }
  return {};
}
std::string_view key_list(breaker_kind kind) noexcept {
  switch (kind) {
    case breaker_kind::consecutive:
      return "failures, open, half_open";
    case breaker_kind::rate:
      return "threshold, window, min_calls, open, half_open, trials";
    case breaker_kind::retry_only:
      return "threshold, window";
    case breaker_kind::run_ratio:
      return "threshold";
  }
  return "";
}

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
  for (const breaker_kind k : {breaker_kind::consecutive, breaker_kind::rate,
                               breaker_kind::retry_only, breaker_kind::run_ratio}) {
    if (name == to_string(k)) {
      kind = k;
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

}  // namespace

std::string_view to_string(breaker_kind kind) noexcept {
  switch (kind) {
    case breaker_kind::consecutive:
      return "consecutive";
    case breaker_kind::rate:
      return "rate";
    case breaker_kind::retry_only:
      return "retry-only";
    case breaker_kind::run_ratio:
      return "run-ratio";
  }
  return "?";
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
  const kind_keys k = keys_of(kind);
  const breaker_config base;
  const std::string on_kind = " does not apply to kind=" + std::string(backoff::to_string(kind));
  if (k.failures) {
    if (failures == 0 || failures > max_count) {
      invalid("failures=" + std::to_string(failures) + " must be in 1..1000000");
    }
  } else if (failures != base.failures) {
    invalid("failures=" + std::to_string(failures) + on_kind);
  }
  if (k.threshold) {
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
  if (k.window) {
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
  if (k.min_calls) {
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
  if (k.open) {
    if (open <= duration{0} || open > duration{24h}) {
      invalid("open=" + format_duration(open) + " must be in (0, 1d]");
    }
  } else if (open != base.open) {
    invalid("open=" + format_duration(open) + on_kind);
  }
  if (k.half_open) {
    if (half_open == 0 || half_open > max_half_open) {
      invalid("half_open=" + std::to_string(half_open) + " must be in 1..1000");
    }
  } else if (half_open != base.half_open) {
    invalid("half_open=" + std::to_string(half_open) + on_kind);
  }
  if (!k.trials && trials != base.trials) invalid("trials=ratio" + on_kind);
  if (keyed) {
    if (max_keys == 0 || max_keys > max_count) {
      invalid("max_keys=" + std::to_string(max_keys) + " must be in 1..1000000");
    }
  } else if (max_keys != base.max_keys) {
    invalid("max_keys=" + std::to_string(max_keys) + " applies only with keyed=true");
  }
}

std::string breaker_config::to_string() const {
  const kind_keys k = keys_of(kind);
  std::string out = "breaker(kind=" + std::string(backoff::to_string(kind));
  if (k.failures) out += ", failures=" + std::to_string(failures);
  if (k.threshold) out += ", threshold=" + percent_text(threshold);
  if (k.window) out += ", window=" + window_text(*this);
  if (k.min_calls) out += ", min_calls=" + std::to_string(min_calls);
  if (k.open) out += ", open=" + format_duration(open);
  if (k.half_open) out += ", half_open=" + std::to_string(half_open);
  if (k.trials && trials == half_open_rule::ratio) out += ", trials=ratio";  // `all` is implied
  if (keyed) out += ", keyed=true, max_keys=" + std::to_string(max_keys);
  return out + ")";
}

breaker_config parse_breaker(std::string_view text) {
  const spec_call call = parse_spec_call(text, breaker_what);
  breaker_config c;
  bool preset = false;
  if (call.name == "breaker") {
    breaker_kind kind = breaker_kind::consecutive;
    for (const spec_argument& arg : call.arguments) {
      if (arg.key == "kind" && !parse_kind(arg.value, kind)) {
        detail::spec_fail(breaker_what, text,
                          "kind=" + arg.value +
                              " is not a breaker kind (known: consecutive, rate, retry-only, "
                              "run-ratio)");
      }
    }
    c = breaker_config::defaults(kind);
  } else if (call.name == "retry-only-10pct") {
    c = breaker_config::defaults(breaker_kind::retry_only);
    preset = true;
  } else if (call.name == "run-ratio-10pct") {
    c = breaker_config::defaults(breaker_kind::run_ratio);
    preset = true;
  } else {
    detail::spec_fail(breaker_what, text,
                      "unknown breaker " + detail::quoted(call.name) +
                          " (known: breaker, retry-only-10pct, run-ratio-10pct)");
  }
  const kind_keys k = keys_of(c.kind);
  bool max_keys_given = false;
  for (const spec_argument& arg : call.arguments) {
    const std::string& key = arg.key;
    bool applies = true;
    if (key == "kind") {
      if (preset) {
        detail::spec_fail(breaker_what, text,
                          "parameter \"kind\" is fixed by the preset " + call.name +
                              " (it is kind=" + std::string(to_string(c.kind)) + ")");
      }
      continue;
    } else if (key == "failures") {
      applies = k.failures;
    } else if (key == "threshold") {
      applies = k.threshold;
    } else if (key == "window") {
      applies = k.window;
    } else if (key == "min_calls") {
      applies = k.min_calls;
    } else if (key == "open") {
      applies = k.open;
    } else if (key == "half_open") {
      applies = k.half_open;
    } else if (key == "trials") {
      applies = k.trials;
    } else if (key != "keyed" && key != "max_keys") {
      detail::unknown_parameter(
          breaker_what, text, arg,
          "kind, failures, threshold, window, min_calls, open, half_open, trials, keyed, "
          "max_keys");
    }
    if (!applies) {
      detail::spec_fail(breaker_what, text,
                        "parameter " + detail::quoted(key) +
                            " does not apply to kind=" + std::string(to_string(c.kind)) +
                            " (it takes " + std::string(key_list(c.kind)) + ", keyed, max_keys)");
    }
    if (key == "failures") {
      c.failures = whole_number(text, arg, 1, max_count);
    } else if (key == "threshold") {
      const double v = spec_fraction(text, arg, breaker_what);
      const double scaled = v * 1e6;
      if (std::abs(scaled - std::round(scaled)) > 1e-6 * std::max(1.0, scaled)) {
        detail::spec_fail(
            breaker_what, text,
            "threshold=" + arg.value + " is finer than a millionth (4 decimals of a percent)");
      }
      c.threshold = static_cast<double>(millionths(v)) / 1e6;
    } else if (key == "window") {
      if (const std::optional<std::uint64_t> n = spec_calls(text, arg, breaker_what)) {
        if (*n == 0 || *n > max_count) {
          detail::spec_fail(breaker_what, text,
                            "window=" + arg.value + " must be 1calls..1000000calls");
        }
        c.window_calls = static_cast<std::uint32_t>(*n);
        c.window = duration{0};
      } else {
        c.window = spec_duration(text, arg, breaker_what);
        c.window_calls = 0;
      }
    } else if (key == "min_calls") {
      c.min_calls = whole_number(text, arg, 1, max_count);
    } else if (key == "open") {
      c.open = spec_duration(text, arg, breaker_what);
    } else if (key == "half_open") {
      c.half_open = whole_number(text, arg, 1, max_half_open);
    } else if (key == "trials") {
      if (arg.value == "all") {
        c.trials = half_open_rule::all;
      } else if (arg.value == "ratio") {
        c.trials = half_open_rule::ratio;
      } else {
        detail::spec_fail(breaker_what, text,
                          "trials=" + arg.value + " is not a half-open rule (known: all, ratio)");
      }
    } else if (key == "keyed") {
      c.keyed = spec_bool(text, arg, breaker_what);
    } else if (key == "max_keys") {
      c.max_keys = whole_number(text, arg, 1, max_count);
      max_keys_given = true;
    }
  }
  if (max_keys_given && !c.keyed) {
    detail::spec_fail(breaker_what, text, "parameter \"max_keys\" applies only with keyed=true");
  }
  detail::validate_spec(breaker_what, text, c);
  return c;
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
