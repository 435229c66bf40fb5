// SPDX-License-Identifier: Apache-2.0
// The adaptive concurrency limit: its configuration, canonical text and spec reader, the three
// algorithms of Netflix/concurrency-limits (each rule cites the Java method it follows), and the
// limiter's update on release.
#include "backoff/concurrency_limit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/prometheus_text.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view limit_what = "limit";
constexpr std::string_view limit_names[] = {"limit"};
// Bit i: limit_kind i.
constexpr std::string_view limit_kind_names[] = {"aimd", "vegas", "gradient2"};
// Index i: limit_outcome i.
constexpr std::string_view limit_outcome_names[] = {"success", "dropped", "ignored"};
constexpr std::uint32_t limit_max_count = 1'000'000;

constexpr variant_set aimd_only = variant_bit(limit_kind::aimd);
constexpr variant_set vegas_only = variant_bit(limit_kind::vegas);
constexpr variant_set gradient2_only = variant_bit(limit_kind::gradient2);

std::optional<limit_kind> limit_kind_named(std::string_view name) {
  const auto* found = std::find(std::begin(limit_kind_names), std::end(limit_kind_names), name);
  if (found == std::end(limit_kind_names)) return std::nullopt;
  return static_cast<limit_kind>(found - std::begin(limit_kind_names));
}

// A count key reads a whole number in 0..1000000; validate() narrows each key's range.
template <std::uint32_t limit_config::*member>
constexpr spec_key<limit_config> limit_count_key(std::string_view name, variant_set applies_to,
                                                 std::string_view values, std::string_view fallback,
                                                 std::string_view meaning) {
  return detail::whole_number_key<member, 0, limit_max_count>(name, applies_to, values, fallback,
                                                              meaning);
}

template <double limit_config::*member>
constexpr spec_key<limit_config> limit_number_key(std::string_view name, variant_set applies_to,
                                                  std::string_view values,
                                                  std::string_view fallback,
                                                  std::string_view meaning) {
  return {name,
          applies_to,
          values,
          fallback,
          meaning,
          [](limit_config& c, const spec_value& v) { c.*member = v.number(); },
          [](const limit_config& c) -> std::optional<std::string> {
            return detail::spec_number_text(c.*member);
          }};
}

// Vegas' fixed thresholds (VegasLimit.Builder.alpha(int), beta(int)); left out of the canonical
// text while the log10 rule is in effect.
template <std::optional<std::uint32_t> limit_config::*member>
constexpr spec_key<limit_config> limit_threshold_key(std::string_view name,
                                                     std::string_view fallback,
                                                     std::string_view meaning) {
  return {name,
          vegas_only,
          "a whole number in 0..1000000",
          fallback,
          meaning,
          [](limit_config& c, const spec_value& v) {
            c.*member = detail::spec_whole_number(v, 0, limit_max_count);
          },
          [](const limit_config& c) -> std::optional<std::string> {
            if (!(c.*member)) return std::nullopt;
            return std::to_string(*(c.*member));
          }};
}

constexpr spec_key<limit_config> limit_keys[] = {
    // Read before the others (it decides their defaults and which apply).
    {"kind", all_variants, "`aimd`, `vegas` or `gradient2`", "`vegas`",
     "the algorithm (Netflix's AIMDLimit, VegasLimit, Gradient2Limit)",
     [](limit_config&, const spec_value&) {},
     [](const limit_config& c) -> std::optional<std::string> {
       return std::string(to_string(c.kind));
     }},
    limit_count_key<&limit_config::initial>("initial", all_variants, "a whole number in min..max",
                                            "20", "the limit before the first sample"),
    limit_count_key<&limit_config::min>("min", all_variants, "a whole number in 1..1000000",
                                        "1 (vegas); 20 (aimd, gradient2)",
                                        "the limit never goes below it"),
    limit_count_key<&limit_config::max>("max", all_variants, "a whole number in min..1000000",
                                        "1000 (vegas); 200 (aimd, gradient2)",
                                        "the limit never goes above it"),
    limit_number_key<&limit_config::backoff_ratio>(
        "backoff_ratio", aimd_only, "a number in [0.5, 1)", "0.9",
        "on a drop or a timeout, limit = floor(limit * backoff_ratio)"),
    {"timeout", aimd_only, "a duration > 0", "5s", "a call slower than this counts as a drop",
     [](limit_config& c, const spec_value& v) { c.timeout = v.time(); },
     [](const limit_config& c) -> std::optional<std::string> {
       return format_duration(c.timeout);
     }},
    limit_number_key<&limit_config::smoothing>(
        "smoothing", vegas_only | gradient2_only, "a number in (0, 1]",
        "1 (vegas); 0.2 (gradient2)", "limit = limit * (1 - smoothing) + new estimate * smoothing"),
    limit_threshold_key<&limit_config::alpha>("alpha", "3 * log10(limit)",
                                              "a queue below it grows the limit by log10(limit)"),
    limit_threshold_key<&limit_config::beta>(
        "beta", "6 * log10(limit)",
        "a queue above it shrinks the limit by log10(limit); no queue grows it by beta"),
    limit_count_key<&limit_config::probe_multiplier>(
        "probe_multiplier", vegas_only, "a whole number in 1..1000000", "30",
        "re-measure the no-load RTT every U[0.5, 1) * probe_multiplier * limit samples"),
    limit_count_key<&limit_config::queue_size>(
        "queue_size", gradient2_only, "a whole number in 0..1000000", "4",
        "limit = limit * gradient + queue_size: the growth while the RTT holds"),
    limit_count_key<&limit_config::long_window>(
        "long_window", gradient2_only, "a whole number in 1..1000000", "600",
        "samples in the long RTT average (exponential, after a mean of the first 10)"),
    limit_number_key<&limit_config::rtt_tolerance>(
        "rtt_tolerance", gradient2_only, "a number >= 1", "1.5",
        "gradient = clamp(rtt_tolerance * long RTT / RTT, 0.5, 1)"),
};

bool limit_takes(limit_kind kind, std::string_view key) {
  const spec_key<limit_config>* k = find_spec_key(limit_keys, key);
  return k != nullptr && key_applies(*k, variant_bit(kind));
}

[[noreturn]] void limit_invalid(const std::string& why) {
  throw parse_error(why);
}

void limit_check_count(std::string_view key, std::uint32_t value, std::uint32_t lo,
                       std::uint32_t hi, std::string_view range) {
  if (value < lo || value > hi) {
    limit_invalid(std::string(key) + "=" + std::to_string(value) + " must be in " +
                  std::string(range));
  }
}

// The kind-specific keys: in range when the kind takes them, else at the kind's default.
void limit_validate_kind_keys(const limit_config& c) {
  const limit_config base = limit_config::defaults(c.kind);
  const std::string on_kind = " does not apply to kind=" + std::string(to_string(c.kind));
  const auto number = [](double v) { return detail::spec_number_text(v); };
  if (limit_takes(c.kind, "backoff_ratio")) {
    if (!(c.backoff_ratio >= 0.5 && c.backoff_ratio < 1.0)) {
      limit_invalid("backoff_ratio=" + number(c.backoff_ratio) + " must be in [0.5, 1)");
    }
    if (c.timeout <= duration{0}) {
      limit_invalid("timeout=" + format_duration(c.timeout) + " must be more than 0");
    }
  } else if (c.backoff_ratio != base.backoff_ratio) {
    limit_invalid("backoff_ratio=" + number(c.backoff_ratio) + on_kind);
  } else if (c.timeout != base.timeout) {
    limit_invalid("timeout=" + format_duration(c.timeout) + on_kind);
  }
  if (limit_takes(c.kind, "smoothing")) {
    if (!(c.smoothing > 0.0 && c.smoothing <= 1.0)) {
      limit_invalid("smoothing=" + number(c.smoothing) + " must be in (0, 1]");
    }
  } else if (c.smoothing != base.smoothing) {
    limit_invalid("smoothing=" + number(c.smoothing) + on_kind);
  }
  if (limit_takes(c.kind, "probe_multiplier")) {
    limit_check_count("probe_multiplier", c.probe_multiplier, 1, limit_max_count, "1..1000000");
    if (c.alpha && c.beta && *c.alpha > *c.beta) {
      limit_invalid("alpha=" + std::to_string(*c.alpha) +
                    " is more than beta=" + std::to_string(*c.beta));
    }
    if (c.alpha) limit_check_count("alpha", *c.alpha, 0, limit_max_count, "0..1000000");
    if (c.beta) limit_check_count("beta", *c.beta, 0, limit_max_count, "0..1000000");
  } else if (c.alpha || c.beta || c.probe_multiplier != base.probe_multiplier) {
    limit_invalid(std::string(c.alpha ? "alpha" : c.beta ? "beta" : "probe_multiplier") + on_kind);
  }
  if (limit_takes(c.kind, "rtt_tolerance")) {
    limit_check_count("queue_size", c.queue_size, 0, limit_max_count, "0..1000000");
    limit_check_count("long_window", c.long_window, 1, limit_max_count, "1..1000000");
    if (!(std::isfinite(c.rtt_tolerance) && c.rtt_tolerance >= 1.0)) {
      limit_invalid("rtt_tolerance=" + number(c.rtt_tolerance) + " must be a number >= 1");
    }
  } else if (c.queue_size != base.queue_size || c.long_window != base.long_window ||
             c.rtt_tolerance != base.rtt_tolerance) {
    limit_invalid(std::string(c.queue_size != base.queue_size     ? "queue_size"
                              : c.long_window != base.long_window ? "long_window"
                                                                  : "rtt_tolerance") +
                  on_kind);
  }
}

// Log10RootIntFunction.applyAsInt: max(1, (int) log10(t)), 1 for t < 1, in integers.
std::uint32_t limit_log10_root(std::uint32_t t) noexcept {
  std::uint32_t digits_after_first = 0;
  for (std::uint32_t v = t; v >= 10; v /= 10) ++digits_after_first;
  return std::max<std::uint32_t>(1, digits_after_first);
}

// Java's (int) cast of a limit that the clamps keep in [1, 1000000].
std::uint32_t limit_int(double limit) noexcept {
  return static_cast<std::uint32_t>(limit);
}

}  // namespace

std::string_view to_string(limit_kind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(limit_kind_names) ? limit_kind_names[i] : "?";
}

std::string_view to_string(limit_outcome o) noexcept {
  const auto i = static_cast<std::size_t>(o);
  return i < std::size(limit_outcome_names) ? limit_outcome_names[i] : "?";
}

// ---------------------------------------------------------------------------------------------
// Configuration.

limit_config limit_config::defaults(limit_kind kind) noexcept {
  limit_config c;
  c.kind = kind;
  switch (kind) {
    case limit_kind::aimd:  // AIMDLimit.Builder: minLimit 20, maxLimit 200
      c.min = 20;
      c.max = 200;
      break;
    case limit_kind::vegas:  // VegasLimit.Builder: maxConcurrency 1000, smoothing 1.0
      break;
    case limit_kind::gradient2:  // Gradient2Limit.Builder: minLimit 20, maxConcurrency 200
      c.min = 20;
      c.max = 200;
      c.smoothing = 0.2;
      break;
  }
  return c;
}

void limit_config::validate() const {
  if (static_cast<std::size_t>(kind) >= std::size(limit_kind_names))
    limit_invalid("kind is not a limit kind");
  limit_check_count("min", min, 1, limit_max_count, "1..1000000");
  if (max < min || max > limit_max_count) {
    limit_invalid("max=" + std::to_string(max) +
                  " must be in min..1000000 (min=" + std::to_string(min) + ")");
  }
  if (initial < min || initial > max) {
    limit_invalid("initial=" + std::to_string(initial) + " must be in min..max (" +
                  std::to_string(min) + ".." + std::to_string(max) + ")");
  }
  limit_validate_kind_keys(*this);
}

std::string limit_config::to_string() const {
  return write_spec(limit_names[0], limit_keys, *this, variant_bit(kind));
}

limit_config parse_limit(std::string_view text) {
  const spec_call call = parse_spec_call(text, limit_what);
  if (call.name != limit_names[0]) {
    detail::unknown_name(limit_what, text, "limit", call.name, limit_names);
  }
  limit_kind kind = limit_kind::vegas;
  for (const spec_argument& arg : call.arguments) {
    if (arg.key != "kind") continue;
    const std::optional<limit_kind> named = limit_kind_named(arg.value);
    if (!named) {
      detail::spec_fail(limit_what, text,
                        "kind=" + arg.value +
                            " is not a limit kind (known: " + join_names(limit_kind_names) + ")" +
                            name_hint(arg.value, limit_kind_names));
    }
    kind = *named;
  }
  const variant_set in_effect = variant_bit(kind);
  for (const spec_argument& arg : call.arguments) {
    const spec_key<limit_config>* key = find_spec_key(limit_keys, arg.key);
    if (key != nullptr && !key_applies(*key, in_effect)) {
      // The keys it takes, but kind: that one is given.
      const std::span<const spec_key<limit_config>> after_kind =
          std::span<const spec_key<limit_config>>(limit_keys).subspan(1);
      detail::spec_fail(limit_what, text,
                        "parameter " + detail::quoted(arg.key) +
                            " does not apply to kind=" + std::string(to_string(kind)) +
                            " (it takes " + spec_key_list(after_kind, in_effect) + ")");
    }
  }
  limit_config c = limit_config::defaults(kind);
  detail::read_spec_keys(limit_what, text, call, limit_keys, c, in_effect);
  detail::validate_spec(limit_what, text, c);
  return c;
}

std::string detail::limit_keys_markdown() {
  return key_table_markdown(limit_keys, spec_variants{limit_kind_names, {}});
}

// ---------------------------------------------------------------------------------------------
// The algorithms.

limit_algorithm::limit_algorithm(const limit_config& config, std::uint64_t seed)
    : config_(config), limit_(config.initial), estimated_(config.initial), rng_(seed) {
  reset_probe_jitter();  // VegasLimit's constructor draws the first jitter
}

duration limit_algorithm::baseline_rtt() const noexcept {
  switch (config_.kind) {
    case limit_kind::vegas:
      return duration{rtt_noload_};
    case limit_kind::gradient2:
      return duration{static_cast<duration::rep>(long_rtt_)};
    case limit_kind::aimd:
      break;
  }
  return duration{0};
}

std::uint32_t limit_algorithm::on_sample(duration rtt, std::uint32_t inflight,
                                         bool dropped) noexcept {
  switch (config_.kind) {
    case limit_kind::aimd:
      limit_ = aimd_next(config_, limit_, rtt, inflight, dropped);
      estimated_ = limit_;
      break;
    case limit_kind::vegas:
      limit_ = vegas_sample(rtt, inflight, dropped);
      break;
    case limit_kind::gradient2:
      limit_ = gradient2_sample(rtt, inflight);  // Gradient2Limit._update ignores didDrop
      break;
  }
  return limit_;
}

// AIMDLimit._update: a drop or rtt > timeout cuts by backoffRatio (truncated as Java's (int));
// otherwise +1 only while inflight * 2 >= limit; then Math.min(max, Math.max(min, limit)).
std::uint32_t limit_algorithm::aimd_next(const limit_config& config, std::uint32_t limit,
                                         duration rtt, std::uint32_t inflight,
                                         bool dropped) noexcept {
  std::uint64_t next = limit;
  if (dropped || rtt > config.timeout) {
    next = static_cast<std::uint64_t>(static_cast<double>(limit) * config.backoff_ratio);
  } else if (std::uint64_t{inflight} * 2 >= limit) {
    next = std::uint64_t{limit} + 1;
  }
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(config.max, std::max<std::uint64_t>(config.min, next)));
}

// VegasLimit.resetProbeJitter: ThreadLocalRandom.nextDouble(0.5, 1), here from the seeded
// generator.
void limit_algorithm::reset_probe_jitter() noexcept {
  probe_jitter_ = uniform(rng_, 0.5, 1.0);
}

double limit_algorithm::clamp_limit(double limit) const noexcept {
  return std::max<double>(config_.min, std::min<double>(config_.max, limit));
}

// VegasLimit._update: every sample counts towards the next probe; a probe (shouldProbe:
// jitter * probeMultiplier * limit <= count) takes this RTT as the new no-load RTT whatever it
// is, and a lower RTT than the no-load one replaces it; neither changes the limit, even on a
// drop.
std::uint32_t limit_algorithm::vegas_sample(duration rtt, std::uint32_t inflight,
                                            bool dropped) noexcept {
  const std::int64_t rtt_ns = rtt.count();
  if (rtt_ns <= 0) return limit_;  // Netflix throws IllegalArgumentException
  ++probe_count_;
  if (probe_jitter_ * config_.probe_multiplier * estimated_ <= static_cast<double>(probe_count_)) {
    reset_probe_jitter();
    probe_count_ = 0;
    rtt_noload_ = rtt_ns;
    return limit_int(estimated_);
  }
  if (rtt_noload_ == 0 || rtt_ns < rtt_noload_) {
    rtt_noload_ = rtt_ns;
    return limit_int(estimated_);
  }
  return vegas_estimate(rtt_ns, rtt_noload_, inflight, dropped);
}

// VegasLimit.updateEstimatedLimit, with the builder's default functions: alpha 3 L, beta 6 L,
// threshold L, increase limit + L, decrease limit - L, L = Log10RootIntFunction((int) limit).
std::uint32_t limit_algorithm::vegas_estimate(std::int64_t rtt, std::int64_t noload,
                                              std::uint32_t inflight, bool dropped) noexcept {
  const double estimated = estimated_;
  const double queue =
      std::ceil(estimated * (1.0 - static_cast<double>(noload) / static_cast<double>(rtt)));
  const std::uint32_t log_step = limit_log10_root(limit_int(estimated));
  double next = estimated;
  if (dropped) {
    next = estimated - log_step;
  } else if (static_cast<double>(std::uint64_t{inflight} * 2) < estimated) {
    return limit_int(estimated);  // "prevent upward drift if not close to the limit"
  } else {
    const double alpha = config_.alpha ? *config_.alpha : 3.0 * log_step;
    const double beta = config_.beta ? *config_.beta : 6.0 * log_step;
    if (queue <= log_step) {
      next = estimated + beta;
    } else if (queue < alpha) {
      next = estimated + log_step;
    } else if (queue > beta) {
      next = estimated - log_step;
    } else {
      return limit_int(estimated);
    }
  }
  next = clamp_limit(next);
  next = (1.0 - config_.smoothing) * estimated + config_.smoothing * next;
  estimated_ = next;
  return limit_int(next);
}

// Gradient2Limit._update. The long RTT is ExpAvgMeasurement(longWindow, 10): the mean of the
// first 10 samples, then value * (1 - f) + rtt * f with f = 2 / (longWindow + 1). When it is
// more than twice this RTT (latency back to normal after a long overload) it decays by 0.95 at
// once; the gradient below still uses the value before that decay, as the Java code does.
std::uint32_t limit_algorithm::gradient2_sample(duration rtt, std::uint32_t inflight) noexcept {
  if (rtt.count() <= 0) return limit_;  // Netflix would divide by zero
  const double estimated = estimated_;
  const double short_rtt = static_cast<double>(rtt.count());
  constexpr std::uint32_t warmup = 10;
  if (long_rtt_count_ < warmup) {
    ++long_rtt_count_;
    long_rtt_sum_ += short_rtt;
    long_rtt_ = long_rtt_sum_ / long_rtt_count_;
  } else {
    const double factor = 2.0 / (config_.long_window + 1.0);
    long_rtt_ = long_rtt_ * (1.0 - factor) + short_rtt * factor;
  }
  const double long_rtt = long_rtt_;
  if (long_rtt / short_rtt > 2.0) long_rtt_ *= 0.95;
  if (inflight < estimated / 2.0) return limit_int(estimated);  // "app limited"
  const double gradient =
      std::max(0.5, std::min(1.0, config_.rtt_tolerance * long_rtt / short_rtt));
  double next = estimated * gradient + config_.queue_size;
  next = estimated * (1.0 - config_.smoothing) + next * config_.smoothing;
  next = clamp_limit(next);
  estimated_ = next;
  return limit_int(next);
}

// ---------------------------------------------------------------------------------------------
// The limiter.

concurrency_limiter::concurrency_limiter(const limit_config& config, std::uint64_t seed)
    : limit_(config.initial), algorithm_(config, seed) {}

void concurrency_limiter::sample(duration rtt, std::uint32_t inflight, bool dropped) noexcept {
  if (algorithm_.config().kind == limit_kind::aimd) {
    // AIMD's state is the limit alone: AbstractLimit.onSample's synchronized read-update-write
    // is one compare-and-swap. An update that changes nothing writes nothing.
    std::uint32_t current = limit_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t next =
          limit_algorithm::aimd_next(algorithm_.config(), current, rtt, inflight, dropped);
      if (next == current ||
          limit_.compare_exchange_weak(current, next, std::memory_order_relaxed)) {
        return;
      }
    }
  }
  std::lock_guard guard{update_lock_};
  limit_.store(algorithm_.on_sample(rtt, inflight, dropped), std::memory_order_relaxed);
}

limiter_stats concurrency_limiter::stats() const noexcept {
  limiter_stats s;
  s.limit = limit();
  s.inflight = inflight();
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.succeeded = succeeded_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.ignored = ignored_.load(std::memory_order_relaxed);
  s.bypassed = bypassed_.load(std::memory_order_relaxed);
  return s;
}

void write_limiter_metrics(prometheus_writer& out, const limiter_stats& stats,
                           std::string_view prefix) {
  const std::string name(prefix);
  out.gauge(name + "_limit", "The adaptive concurrency limit.", stats.limit);
  out.gauge(name + "_inflight", "Calls admitted and not yet released.", stats.inflight);
  const std::string calls = name + "_calls_total";
  out.family(calls, prometheus_type::counter, "Calls, by how they ended or were refused.");
  out.sample(calls, {{"status", "success"}}, stats.succeeded);
  out.sample(calls, {{"status", "dropped"}}, stats.dropped);
  out.sample(calls, {{"status", "ignored"}}, stats.ignored);
  out.sample(calls, {{"status", "rejected"}}, stats.rejected);
  out.sample(calls, {{"status", "bypassed"}}, stats.bypassed);
}

}  // namespace backoff
