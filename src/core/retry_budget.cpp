// SPDX-License-Identifier: Apache-2.0
// Retry budgets (token bucket, ratio, quota): configuration checks, canonical text and the
// spec reader.
#include "backoff/retry_budget.hpp"

#include <algorithm>
#include <cmath>
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

// Whether v is a whole number of thousandths, as gRPC's tokenRatio must be (C-core keeps
// three decimal digits; we refuse more rather than drop them silently).
bool has_at_most_3_decimals(double v) {
  const double milli = v * 1000.0;
  return std::abs(milli - std::round(milli)) <= 1e-6 * std::max(1.0, std::abs(milli));
}

constexpr std::string_view budget_what = "budget";
// Bit 0: token-bucket, bit 1: ratio, bit 2: quota, the variants of budget_config in order.
constexpr std::string_view budget_names[] = {"token-bucket", "ratio", "quota"};
constexpr variant_set bucket_only = variant_bit(0);
constexpr variant_set ratio_only = variant_bit(1);
constexpr variant_set quota_only = variant_bit(2);
constexpr std::uint32_t max_quota_capacity = 1'000'000;

token_bucket_config& bucket_of(budget_config& c) {
  return std::get<token_bucket_config>(c);
}
const token_bucket_config& bucket_of(const budget_config& c) {
  return std::get<token_bucket_config>(c);
}
ratio_budget_config& ratio_of(budget_config& c) {
  return std::get<ratio_budget_config>(c);
}
const ratio_budget_config& ratio_of(const budget_config& c) {
  return std::get<ratio_budget_config>(c);
}
retry_quota_config& quota_of(budget_config& c) {
  return std::get<retry_quota_config>(c);
}
const retry_quota_config& quota_of(const budget_config& c) {
  return std::get<retry_quota_config>(c);
}

// A quota's amounts are whole tokens; their ranges against capacity are validate()'s.
std::uint32_t quota_tokens(const spec_value& v) {
  const double n = v.number();
  if (!(n >= 0.0 && n <= static_cast<double>(max_quota_capacity) && n == std::floor(n))) {
    detail::spec_fail(
        v.what, v.spec,
        v.arg.key + "=" + v.text() + " must be a whole number of tokens, at most 1000000");
  }
  return static_cast<std::uint32_t>(n);
}

// One quota key's reader and canonical text, for the member it names.
template <std::uint32_t retry_quota_config::*Member>
void read_quota_key(budget_config& c, const spec_value& v) {
  quota_of(c).*Member = quota_tokens(v);
}
template <std::uint32_t retry_quota_config::*Member>
std::optional<std::string> write_quota_key(const budget_config& c) {
  return std::to_string(quota_of(c).*Member);
}

// "retry_cost=600 must be in 1..capacity (capacity=500)"; `least` is 0 or 1.
void check_quota_amount(std::string_view key, std::uint32_t value, std::uint32_t least,
                        std::uint32_t capacity) {
  if (value >= least && value <= capacity) return;
  throw parse_error(std::string(key) + "=" + std::to_string(value) + " must be in " +
                    std::to_string(least) + "..capacity (capacity=" + std::to_string(capacity) +
                    ")");
}

void read_threshold(budget_config& config, const spec_value& v, bool inclusive) {
  token_bucket_config& c = bucket_of(config);
  if (c.threshold) detail::spec_fail(v.what, v.spec, "give one of above= and at_least=, not both");
  c.threshold = v.number();
  c.inclusive = inclusive;
}

std::optional<std::string> threshold_text(const budget_config& config, bool inclusive) {
  const token_bucket_config& c = bucket_of(config);
  if (!c.threshold || c.inclusive != inclusive) return std::nullopt;
  return spec_number_text(*c.threshold);
}

constexpr spec_key<budget_config> budget_keys[] = {
    {"max", bucket_only, "a whole number in 1..1000", "10",
     "tokens in a full bucket (gRPC's maxTokens); it starts full",
     [](budget_config& c, const spec_value& v) {
       const double n = v.number();
       if (!(n >= 1.0 && n <= 1000.0 && n == std::floor(n))) {
         detail::spec_fail(v.what, v.spec,
                           "max=" + v.text() + " must be a whole number of tokens in 1..1000");
       }
       bucket_of(c).max_tokens = static_cast<std::uint32_t>(n);
     },
     [](const budget_config& c) -> std::optional<std::string> {
       return std::to_string(bucket_of(c).max_tokens);
     }},
    {"ratio", bucket_only, "a number in (0, 1000], at most 3 decimals", "0.1",
     "tokens each earning event adds (gRPC's tokenRatio)",
     [](budget_config& c, const spec_value& v) { bucket_of(c).token_ratio = v.number(); },
     [](const budget_config& c) -> std::optional<std::string> {
       return spec_number_text(bucket_of(c).token_ratio);
     }},
    {"earn", bucket_only, "`success`, `request` or `first-success`", "`success`",
     "what adds `ratio`: a successful attempt, a first attempt sent, a successful first attempt",
     [](budget_config& c, const spec_value& v) {
       token_bucket_config& b = bucket_of(c);
       if (v.text() == "success") {
         b.earn = token_earn::success;
       } else if (v.text() == "request") {
         b.earn = token_earn::request;
       } else if (v.text() == "first-success") {
         b.earn = token_earn::first_success;
       } else {
         detail::spec_fail(v.what, v.spec,
                           "earn=" + v.text() + " is not one of success, request, first-success");
       }
     },
     [](const budget_config& c) -> std::optional<std::string> {
       switch (bucket_of(c).earn) {
         case token_earn::request:
           return "request";
         case token_earn::first_success:
           return "first-success";
         case token_earn::success:
           break;
       }
       return std::nullopt;
     }},
    {"spend", bucket_only, "`failure` or `retry`", "`failure`",
     "what takes a token: a failed attempt, or a retry the bucket allows",
     [](budget_config& c, const spec_value& v) {
       if (v.text() == "failure") {
         bucket_of(c).spend = token_spend::failure;
       } else if (v.text() == "retry") {
         bucket_of(c).spend = token_spend::retry;
       } else {
         detail::spec_fail(v.what, v.spec, "spend=" + v.text() + " is not one of failure, retry");
       }
     },
     [](const budget_config& c) -> std::optional<std::string> {
       if (bucket_of(c).spend != token_spend::retry) return std::nullopt;
       return "retry";
     }},
    {"above", bucket_only, "a number in [0, max], at most 3 decimals", "`max`/2",
     "a retry is allowed while tokens > above",
     [](budget_config& c, const spec_value& v) { read_threshold(c, v, false); },
     [](const budget_config& c) { return threshold_text(c, false); }},
    {"at_least", bucket_only, "a number in [0, max], at most 3 decimals", "none",
     "a retry is allowed while tokens >= at_least (instead of `above`)",
     [](budget_config& c, const spec_value& v) { read_threshold(c, v, true); },
     [](const budget_config& c) { return threshold_text(c, true); }},
    {"percent", ratio_only, "a number in [0, 1000], at most 3 decimals", "20",
     "retries allowed per 100 requests in the window",
     [](budget_config& c, const spec_value& v) { ratio_of(c).percent = v.number(); },
     [](const budget_config& c) -> std::optional<std::string> {
       return spec_number_text(ratio_of(c).percent);
     }},
    {"min_per_s", ratio_only, "a number in [0, 1000000]", "10",
     "retries allowed per second on top, however few the requests",
     [](budget_config& c, const spec_value& v) { ratio_of(c).min_per_s = v.number(); },
     [](const budget_config& c) -> std::optional<std::string> {
       return spec_number_text(ratio_of(c).min_per_s);
     }},
    {"window", ratio_only, "a duration in (0, 1d]", "10s", "the sliding window that is counted",
     [](budget_config& c, const spec_value& v) { ratio_of(c).window = v.time(); },
     [](const budget_config& c) -> std::optional<std::string> {
       return format_duration(ratio_of(c).window);
     }},
    {"capacity", quota_only, "a whole number in 1..1000000", "500",
     "tokens in a full quota (the AWS SDKs' 500); it starts full",
     read_quota_key<&retry_quota_config::capacity>, write_quota_key<&retry_quota_config::capacity>},
    {"retry_cost", quota_only, "a whole number in 1..`capacity`", "5",
     "tokens a retry takes (newer AWS SDKs: 14)", read_quota_key<&retry_quota_config::retry_cost>,
     write_quota_key<&retry_quota_config::retry_cost>},
    {"timeout_cost", quota_only, "a whole number in 1..`capacity`", "10",
     "tokens a retry takes after an attempt that timed out",
     read_quota_key<&retry_quota_config::timeout_cost>,
     write_quota_key<&retry_quota_config::timeout_cost>},
    {"refund", quota_only, "a whole number in 0..`capacity`", "1",
     "tokens a success gives back when its operation made no retry (after retries: what the "
     "last one took)",
     read_quota_key<&retry_quota_config::refund>, write_quota_key<&retry_quota_config::refund>},
};

}  // namespace

void token_bucket_config::validate() const {
  if (max_tokens == 0 || max_tokens > 1000) {
    throw parse_error("max=" + std::to_string(max_tokens) +
                      " must be a whole number of tokens in 1..1000");
  }
  if (!(std::isfinite(token_ratio) && token_ratio > 0.0 && token_ratio <= 1000.0)) {
    throw parse_error("ratio=" + spec_number_text(token_ratio) + " must be in (0, 1000]");
  }
  if (!has_at_most_3_decimals(token_ratio) || std::llround(token_ratio * 1000.0) == 0) {
    throw parse_error("ratio=" + spec_number_text(token_ratio) +
                      " has more than 3 decimals (tokens are counted in thousandths)");
  }
  if (threshold) {
    const std::string key = inclusive ? "at_least=" : "above=";
    const double t = *threshold;
    if (!(std::isfinite(t) && t >= 0.0 && t <= static_cast<double>(max_tokens))) {
      throw parse_error(key + spec_number_text(t) +
                        " must be in [0, max] (max=" + std::to_string(max_tokens) + ")");
    }
    if (!has_at_most_3_decimals(t)) {
      throw parse_error(key + spec_number_text(t) +
                        " has more than 3 decimals (tokens are counted in thousandths)");
    }
  }
}

std::string token_bucket_config::to_string() const {
  return write_spec(budget_names[0], budget_keys, budget_config{*this}, variant_bit(0));
}

void ratio_budget_config::validate() const {
  if (!(std::isfinite(percent) && percent >= 0.0 && percent <= 1000.0)) {
    throw parse_error("percent=" + spec_number_text(percent) + " must be in [0, 1000]");
  }
  if (!has_at_most_3_decimals(percent)) {
    throw parse_error("percent=" + spec_number_text(percent) + " has more than 3 decimals");
  }
  if (!(std::isfinite(min_per_s) && min_per_s >= 0.0 && min_per_s <= 1e6)) {
    throw parse_error("min_per_s=" + spec_number_text(min_per_s) + " must be in [0, 1000000]");
  }
  if (window <= duration{0} || window > duration{24h}) {
    throw parse_error("window=" + format_duration(window) + " must be in (0, 1d]");
  }
}

std::string ratio_budget_config::to_string() const {
  return write_spec(budget_names[1], budget_keys, budget_config{*this}, variant_bit(1));
}

void retry_quota_config::validate() const {
  if (capacity == 0 || capacity > max_quota_capacity) {
    throw parse_error("capacity=" + std::to_string(capacity) +
                      " must be a whole number of tokens in 1..1000000");
  }
  check_quota_amount("retry_cost", retry_cost, 1, capacity);
  check_quota_amount("timeout_cost", timeout_cost, 1, capacity);
  check_quota_amount("refund", refund, 0, capacity);
}

std::string retry_quota_config::to_string() const {
  return write_spec(budget_names[2], budget_keys, budget_config{*this}, variant_bit(2));
}

ratio_budget::ratio_budget(const ratio_budget_config& config) noexcept
    : config_(config),
      request_credit_(static_cast<std::uint64_t>(std::llround(config.percent * 1000.0))),
      reserve_(static_cast<std::uint64_t>(
          std::llround(config.min_per_s * to_seconds(config.window) * retry_cost))),
      counts_(config.window) {}

double ratio_budget::available(duration now) const noexcept {
  const counts c = window_counts(now);
  const double credit = static_cast<double>(c.requests * request_credit_ + reserve_) /
                        static_cast<double>(retry_cost);
  return std::max(0.0, credit - static_cast<double>(c.retries));
}

budget_config parse_budget(std::string_view text) {
  const spec_call call = parse_spec_call(text, budget_what);
  budget_config c;
  std::size_t variant = 0;
  if (call.name == budget_names[0]) {
    c = token_bucket_config{};
  } else if (call.name == budget_names[1]) {
    c = ratio_budget_config{};
    variant = 1;
  } else if (call.name == budget_names[2]) {
    c = retry_quota_config{};
    variant = 2;
  } else {
    detail::unknown_name(budget_what, text, "budget", call.name, budget_names);
  }
  detail::read_spec_keys(budget_what, text, call, budget_keys, c, variant_bit(variant));
  std::visit([&](const auto& config) { detail::validate_spec(budget_what, text, config); }, c);
  return c;
}

std::string detail::budget_keys_markdown() {
  return key_table_markdown(budget_keys, spec_variants{budget_names, {}});
}

std::string to_string(const budget_config& config) {
  return std::visit([](const auto& c) { return c.to_string(); }, config);
}

retry_budget::retry_budget(const budget_config& config)
    : budget_(std::visit(
          [](const auto& c) -> std::variant<token_bucket_budget, ratio_budget, retry_quota> {
            using config_type = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<config_type, token_bucket_config>) {
              return token_bucket_budget{c};
            } else if constexpr (std::is_same_v<config_type, ratio_budget_config>) {
              return ratio_budget{c};
            } else {
              return retry_quota{c};
            }
          },
          config)) {}

}  // namespace backoff
