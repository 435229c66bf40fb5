// SPDX-License-Identifier: Apache-2.0
// Retry budgets: configuration checks, canonical text and the spec reader.
#include "backoff/retry_budget.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
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
  std::string out =
      "token-bucket(max=" + std::to_string(max_tokens) + ", ratio=" + spec_number_text(token_ratio);
  if (earn == token_earn::request) out += ", earn=request";
  if (earn == token_earn::first_success) out += ", earn=first-success";
  if (spend == token_spend::retry) out += ", spend=retry";
  if (threshold) out += (inclusive ? ", at_least=" : ", above=") + spec_number_text(*threshold);
  return out + ")";
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
  return "ratio(percent=" + spec_number_text(percent) +
         ", min_per_s=" + spec_number_text(min_per_s) + ", window=" + format_duration(window) + ")";
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
  constexpr std::string_view what = "budget";
  const spec_call call = parse_spec_call(text, what);
  if (call.name == "token-bucket") {
    token_bucket_config c;
    for (const spec_argument& arg : call.arguments) {
      if (arg.key == "max") {
        const double v = spec_number(text, arg, what);
        if (!(v >= 1.0 && v <= 1000.0 && v == std::floor(v))) {
          detail::spec_fail(what, text,
                            "max=" + arg.value + " must be a whole number of tokens in 1..1000");
        }
        c.max_tokens = static_cast<std::uint32_t>(v);
      } else if (arg.key == "ratio") {
        c.token_ratio = spec_number(text, arg, what);
      } else if (arg.key == "earn") {
        if (arg.value == "success") {
          c.earn = token_earn::success;
        } else if (arg.value == "request") {
          c.earn = token_earn::request;
        } else if (arg.value == "first-success") {
          c.earn = token_earn::first_success;
        } else {
          detail::spec_fail(what, text,
                            "earn=" + arg.value + " is not one of success, request, first-success");
        }
      } else if (arg.key == "spend") {
        if (arg.value == "failure") {
          c.spend = token_spend::failure;
        } else if (arg.value == "retry") {
          c.spend = token_spend::retry;
        } else {
          detail::spec_fail(what, text, "spend=" + arg.value + " is not one of failure, retry");
        }
      } else if (arg.key == "above" || arg.key == "at_least") {
        if (c.threshold) {
          detail::spec_fail(what, text, "give one of above= and at_least=, not both");
        }
        c.threshold = spec_number(text, arg, what);
        c.inclusive = arg.key == "at_least";
      } else {
        detail::unknown_parameter(what, text, arg, "max, ratio, earn, spend, above, at_least");
      }
    }
    detail::validate_spec(what, text, c);
    return c;
  }
  if (call.name == "ratio") {
    ratio_budget_config c;
    for (const spec_argument& arg : call.arguments) {
      if (arg.key == "percent") {
        c.percent = spec_number(text, arg, what);
      } else if (arg.key == "min_per_s") {
        c.min_per_s = spec_number(text, arg, what);
      } else if (arg.key == "window") {
        c.window = spec_duration(text, arg, what);
      } else {
        detail::unknown_parameter(what, text, arg, "percent, min_per_s, window");
      }
    }
    detail::validate_spec(what, text, c);
    return c;
  }
  detail::spec_fail(
      what, text, "unknown budget " + detail::quoted(call.name) + " (known: token-bucket, ratio)");
}

std::string to_string(const budget_config& config) {
  return std::visit([](const auto& c) { return c.to_string(); }, config);
}

retry_budget::retry_budget(const budget_config& config)
    : budget_(std::visit(
          [](const auto& c) -> std::variant<token_bucket_budget, ratio_budget> {
            using config_type = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<config_type, token_bucket_config>) {
              return token_bucket_budget{c};
            } else {
              return ratio_budget{c};
            }
          },
          config)) {}

}  // namespace backoff
