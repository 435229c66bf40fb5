// SPDX-License-Identifier: Apache-2.0
// The CUBIC send-rate limiter (after aws-sdk-cpp's RetryTokenBucket), the throttle
// configurations and the spec reader.
#include "backoff/throttle.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;
using detail::spec_number_text;

double seconds_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) * 1e-9;
}

// floor(n / d) for d > 0, also for negative n.
std::int64_t floor_div(std::int64_t n, std::int64_t d) {
  std::int64_t q = n / d;
  if (n % d < 0) --q;
  return q;
}

constexpr std::string_view throttle_what = "throttle";
// Bit 0: sre, bit 1: cubic, the variants of throttle_config in order.
constexpr std::string_view throttle_names[] = {"sre", "cubic"};
constexpr variant_set sre_only = variant_bit(0);
constexpr variant_set cubic_only = variant_bit(1);

adaptive_throttle_config& sre_of(throttle_config& c) {
  return std::get<adaptive_throttle_config>(c);
}
const adaptive_throttle_config& sre_of(const throttle_config& c) {
  return std::get<adaptive_throttle_config>(c);
}
cubic_rate_config& cubic_of(throttle_config& c) {
  return std::get<cubic_rate_config>(c);
}
const cubic_rate_config& cubic_of(const throttle_config& c) {
  return std::get<cubic_rate_config>(c);
}

// A cubic key that holds a plain number.
template <double cubic_rate_config::*member>
constexpr spec_key<throttle_config> cubic_number(std::string_view name, std::string_view values,
                                                 std::string_view fallback,
                                                 std::string_view meaning) {
  return {name,
          cubic_only,
          values,
          fallback,
          meaning,
          [](throttle_config& c, const spec_value& v) { cubic_of(c).*member = v.number(); },
          [](const throttle_config& c) -> std::optional<std::string> {
            return spec_number_text(cubic_of(c).*member);
          }};
}

constexpr spec_key<throttle_config> throttle_keys[] = {
    {"k", sre_only, "a number in (0, 1000]", "2",
     "accepts weigh k requests: fewer refusals as k grows",
     [](throttle_config& c, const spec_value& v) { sre_of(c).k = v.number(); },
     [](const throttle_config& c) -> std::optional<std::string> {
       return spec_number_text(sre_of(c).k);
     }},
    {"window", sre_only, "a duration in (0, 1d]", "2m", "the sliding window that is counted",
     [](throttle_config& c, const spec_value& v) { sre_of(c).window = v.time(); },
     [](const throttle_config& c) -> std::optional<std::string> {
       return format_duration(sre_of(c).window);
     }},
    cubic_number<&cubic_rate_config::beta>("beta", "a number in (0, 1)", "0.7",
                                           "the multiplicative decrease on a throttle"),
    cubic_number<&cubic_rate_config::scale>("scale", "a number > 0", "0.4",
                                            "CUBIC's C: how fast the rate grows back"),
    cubic_number<&cubic_rate_config::smooth>("smooth", "a number in [0, 1]", "0.8",
                                             "the weight of the newest rate measurement"),
    cubic_number<&cubic_rate_config::min_rate>("min_rate", "a number > 0", "0.5",
                                               "the lowest send rate, in tokens per second"),
    cubic_number<&cubic_rate_config::min_capacity>("min_capacity", "a number > 0", "1",
                                                   "the smallest bucket, in tokens"),
    {"bucket", cubic_only, "a duration > 0", "500ms", "the time bucket of the rate measurement",
     [](throttle_config& c, const spec_value& v) { cubic_of(c).bucket = v.time(); },
     [](const throttle_config& c) -> std::optional<std::string> {
       return format_duration(cubic_of(c).bucket);
     }},
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Configurations.

void adaptive_throttle_config::validate() const {
  if (!(std::isfinite(k) && k > 0.0 && k <= 1000.0)) {
    throw parse_error("k=" + spec_number_text(k) + " must be in (0, 1000]");
  }
  if (window <= duration{0} || window > duration{24h}) {
    throw parse_error("window=" + format_duration(window) + " must be in (0, 1d]");
  }
}

std::string adaptive_throttle_config::to_string() const {
  return write_spec(throttle_names[0], throttle_keys, throttle_config{*this}, variant_bit(0));
}

void cubic_rate_config::validate() const {
  if (!(beta > 0.0 && beta < 1.0)) {
    throw parse_error("beta=" + spec_number_text(beta) + " must be between 0 and 1");
  }
  if (!(std::isfinite(scale) && scale > 0.0)) {
    throw parse_error("scale=" + spec_number_text(scale) + " must be a number > 0");
  }
  if (!(smooth >= 0.0 && smooth <= 1.0)) {
    throw parse_error("smooth=" + spec_number_text(smooth) + " must be in [0, 1]");
  }
  if (!(std::isfinite(min_rate) && min_rate > 0.0)) {
    throw parse_error("min_rate=" + spec_number_text(min_rate) + " must be a number > 0");
  }
  if (!(std::isfinite(min_capacity) && min_capacity > 0.0)) {
    throw parse_error("min_capacity=" + spec_number_text(min_capacity) + " must be a number > 0");
  }
  if (bucket <= duration{0}) throw parse_error("bucket must be positive");
}

std::string cubic_rate_config::to_string() const {
  return write_spec(throttle_names[1], throttle_keys, throttle_config{*this}, variant_bit(1));
}

// ---------------------------------------------------------------------------------------------
// The CUBIC rate limiter. Member names follow RetryTokenBucket's (m_fillRate -> fill_rate_, ...).

cubic_rate_limiter::cubic_rate_limiter(const cubic_rate_limiter& other) noexcept {
  *this = other;
}

cubic_rate_limiter& cubic_rate_limiter::operator=(const cubic_rate_limiter& other) noexcept {
  if (this == &other) return *this;
  // std::lock's deadlock-free algorithm: two limiters assigned to each other at once never wait
  // on each other.
  std::scoped_lock guard{lock_, other.lock_};
  config_ = other.config_;
  enabled_ = other.enabled_;
  fill_rate_ = other.fill_rate_;
  max_capacity_ = other.max_capacity_;
  capacity_ = other.capacity_;
  refilled_ = other.refilled_;
  last_refill_ns_ = other.last_refill_ns_;
  measured_rate_ = other.measured_rate_;
  measured_ = other.measured_;
  last_bucket_ns_ = other.last_bucket_ns_;
  bucket_count_ = other.bucket_count_;
  throttled_ = other.throttled_;
  last_max_rate_ = other.last_max_rate_;
  last_throttle_ns_ = other.last_throttle_ns_;
  return *this;
}

// RetryTokenBucket::Refill: the first call only notes the time.
void cubic_rate_limiter::refill(std::int64_t now_ns) noexcept {
  if (!refilled_) {
    refilled_ = true;
    last_refill_ns_ = now_ns;
    return;
  }
  if (now_ns <= last_refill_ns_) return;  // an older reading (another thread's) adds nothing
  capacity_ =
      std::min(max_capacity_, capacity_ + seconds_between(last_refill_ns_, now_ns) * fill_rate_);
  last_refill_ns_ = now_ns;
}

// RetryTokenBucket::UpdateMeasuredRate, with buckets of config_.bucket instead of 0.5 s.
void cubic_rate_limiter::update_measured_rate(std::int64_t now_ns) noexcept {
  const std::int64_t width = config_.bucket.count();
  const std::int64_t bucket = floor_div(now_ns, width) * width;
  ++bucket_count_;
  if (!measured_) {
    // The SDK's first bucket follows one at the Unix epoch: count / 1.7e9 s, i.e. 0.
    measured_ = true;
    measured_rate_ = (1.0 - config_.smooth) * measured_rate_;
    bucket_count_ = 0;
    last_bucket_ns_ = bucket;
    return;
  }
  if (bucket > last_bucket_ns_) {
    const double current_rate =
        static_cast<double>(bucket_count_) / seconds_between(last_bucket_ns_, bucket);
    measured_rate_ = current_rate * config_.smooth + measured_rate_ * (1.0 - config_.smooth);
    bucket_count_ = 0;
    last_bucket_ns_ = bucket;
  }
}

duration cubic_rate_limiter::acquire(duration now) noexcept {
  std::lock_guard guard{lock_};
  if (!enabled_) return duration{0};
  refill(now.count());
  // The token is taken now; a negative balance is the senders already waiting for theirs.
  capacity_ -= 1.0;
  if (capacity_ >= 0.0) return duration{0};
  const double wait_ns = std::ceil(-capacity_ / fill_rate_ * 1e9);
  constexpr double longest = static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2);
  return duration{static_cast<std::int64_t>(std::min(wait_ns, longest))};
}

// RetryTokenBucket::UpdateClientSendingRate.
void cubic_rate_limiter::on_response(duration now, bool throttled) noexcept {
  std::lock_guard guard{lock_};
  const std::int64_t now_ns = now.count();
  update_measured_rate(now_ns);

  double calculated_rate;
  if (throttled) {
    const double rate_to_use = enabled_ ? std::min(measured_rate_, fill_rate_) : measured_rate_;
    last_max_rate_ = rate_to_use;
    last_throttle_ns_ = now_ns;
    throttled_ = true;
    calculated_rate = rate_to_use * config_.beta;  // CUBICThrottle
    enabled_ = true;
  } else if (!throttled_) {
    // The SDK's last throttle time is then the Unix epoch: 0.4 * (1.7e9 s)^3 is +infinity here.
    calculated_rate = std::numeric_limits<double>::infinity();
  } else {
    // CalculateTimeWindow and CUBICSuccess.
    const double time_window = std::cbrt(last_max_rate_ * (1.0 - config_.beta) / config_.scale);
    const double dt = seconds_between(last_throttle_ns_, now_ns);
    calculated_rate = config_.scale * std::pow(dt - time_window, 3.0) + last_max_rate_;
  }

  // UpdateRate.
  const double new_rate = std::min(calculated_rate, 2.0 * measured_rate_);
  refill(now_ns);
  fill_rate_ = std::max(new_rate, config_.min_rate);
  max_capacity_ = std::max(new_rate, config_.min_capacity);
  capacity_ = std::min(capacity_, max_capacity_);
}

cubic_rate_limiter::state cubic_rate_limiter::snapshot() const noexcept {
  std::lock_guard guard{lock_};
  return {enabled_, fill_rate_, max_capacity_, capacity_, measured_rate_, last_max_rate_};
}

// ---------------------------------------------------------------------------------------------
// Specs.

throttle_config parse_throttle(std::string_view text) {
  const spec_call call = parse_spec_call(text, throttle_what);
  throttle_config c;
  std::size_t variant = 0;
  if (call.name == throttle_names[0]) {
    c = adaptive_throttle_config{};
  } else if (call.name == throttle_names[1]) {
    c = cubic_rate_config{};
    variant = 1;
  } else {
    detail::unknown_name(throttle_what, text, "throttle", call.name, throttle_names);
  }
  detail::read_spec_keys(throttle_what, text, call, throttle_keys, c, variant_bit(variant));
  std::visit([&](const auto& config) { detail::validate_spec(throttle_what, text, config); }, c);
  return c;
}

std::string detail::throttle_keys_markdown() {
  return key_table_markdown(throttle_keys, spec_variants{throttle_names, {}});
}

std::string to_string(const throttle_config& config) {
  return std::visit([](const auto& c) { return c.to_string(); }, config);
}

throttle::throttle(const throttle_config& config)
    : throttle_(std::visit(
          [](const auto& c) -> std::variant<adaptive_throttle, cubic_rate_limiter> {
            using config_type = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<config_type, adaptive_throttle_config>) {
              return adaptive_throttle{c};
            } else {
              return cubic_rate_limiter{c};
            }
          },
          config)) {}

}  // namespace backoff
