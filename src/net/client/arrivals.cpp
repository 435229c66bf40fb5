// SPDX-License-Identifier: Apache-2.0
#include "arrivals.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "backoff/error.hpp"

namespace backoff::net {
namespace {

constexpr double max_rate_per_s = 1e7;

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

double parse_rate(std::string_view flag, std::string_view text, bool allow_zero) {
  const auto fail = [&](const std::string& why) -> double {
    throw parse_error(std::string(flag) + ": " + why + ", got " + quote_for_message(text));
  };
  const std::string_view t = trim(text);
  const std::size_t slash = t.find('/');
  const std::string_view number = t.substr(0, slash);
  double per_unit = 1.0;  // a bare number is per second
  if (slash != std::string_view::npos) {
    const std::string_view unit = t.substr(slash + 1);
    if (unit == "s") {
      per_unit = 1.0;
    } else if (unit == "ms") {
      per_unit = 1e3;
    } else if (unit == "m" || unit == "min") {
      per_unit = 1.0 / 60.0;
    } else if (unit == "h") {
      per_unit = 1.0 / 3600.0;
    } else {
      return fail("expected a rate per s, ms, m or h (as 500/s)");
    }
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc{} || end != number.data() + number.size() ||
      !std::isfinite(value) || value < 0) {
    return fail("expected a rate such as 500/s or 500 (per second)");
  }
  const double per_s = value * per_unit;
  if (per_s > max_rate_per_s) return fail("a rate is at most 1e7/s");
  if (per_s == 0 && !allow_zero) return fail("a rate must be more than 0");
  return per_s;
}

std::vector<rate_point> parse_ramp(std::string_view text) {
  std::vector<rate_point> points;
  std::size_t index = 0;
  for (std::string_view rest = text;; ++index) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const std::string where = "--ramp point " + std::to_string(index + 1);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw parse_error(where + ": expected TIME:RATE (as 60s:2000/s), got " +
                        quote_for_message(item));
    }
    rate_point p;
    try {
      p.at = parse_duration(trim(item.substr(0, colon)));
    } catch (const parse_error& e) {
      throw parse_error(where + ": " + e.what());
    }
    p.per_s = parse_rate(where, item.substr(colon + 1), true);
    if (points.empty() && p.at.count() != 0) {
      throw parse_error(where + ": the first point is at 0s (where the run starts), got " +
                        quote_for_message(item.substr(0, colon)));
    }
    if (!points.empty() && p.at <= points.back().at) {
      throw parse_error(where + ": times must increase, got " +
                        quote_for_message(item.substr(0, colon)) + " after " +
                        format_duration(points.back().at));
    }
    points.push_back(p);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return points;
}

arrival_kind parse_arrival(std::string_view text) {
  if (text == "poisson") return arrival_kind::poisson;
  if (text == "constant") return arrival_kind::constant;
  throw parse_error("--arrival: expected poisson or constant, got " + quote_for_message(text));
}

arrival_schedule::arrival_schedule(arrival_kind kind, std::vector<rate_point> points,
                                   std::uint64_t seed)
    : kind_(kind), points_(std::move(points)), rng_(seed) {
  if (points_.empty() || points_.front().at.count() != 0) {
    throw parse_error("an arrival schedule starts with a point at 0s");
  }
  cumulative_.push_back(0);
  for (std::size_t i = 1; i < points_.size(); ++i) {
    const double span_s = std::chrono::duration<double>(points_[i].at - points_[i - 1].at).count();
    cumulative_.push_back(cumulative_.back() +
                          span_s * (points_[i - 1].per_s + points_[i].per_s) / 2);
  }
  if (kind_ == arrival_kind::poisson) target_ = exponential_variate(rng_, 1.0);
}

double arrival_schedule::expected_sends(duration t) const {
  std::size_t i = 0;
  while (i + 1 < points_.size() && points_[i + 1].at <= t) ++i;
  const double x = std::chrono::duration<double>(t - points_[i].at).count();
  const double r0 = points_[i].per_s;
  if (i + 1 == points_.size()) return cumulative_[i] + r0 * x;
  const double span = std::chrono::duration<double>(points_[i + 1].at - points_[i].at).count();
  const double slope = (points_[i + 1].per_s - r0) / span;
  return cumulative_[i] + r0 * x + slope * x * x / 2;
}

std::optional<duration> arrival_schedule::time_of(double sends) const {
  // The segment where Λ reaches `sends`: from the last point at or below it, so that a stretch at
  // rate zero is skipped, not sent in.
  std::size_t i = 0;
  while (i + 1 < points_.size() && cumulative_[i + 1] <= sends) ++i;
  const double need = sends - cumulative_[i];
  const double r0 = points_[i].per_s;
  double x = 0;  // seconds after point i
  if (i + 1 == points_.size()) {
    if (need > 0 && r0 <= 0) return std::nullopt;  // the rate stays at zero
    x = need <= 0 ? 0 : need / r0;
  } else {
    const double span = std::chrono::duration<double>(points_[i + 1].at - points_[i].at).count();
    const double half_slope = (points_[i + 1].per_s - r0) / span / 2;
    // r0 x + half_slope x² = need, in the form without cancellation (r0 may be 0, never both 0
    // and half_slope <= 0 here, since Λ grows on this segment).
    const double root = std::sqrt(std::max(0.0, r0 * r0 + 4 * half_slope * need));
    x = need <= 0 ? 0 : 2 * need / (r0 + root);
    x = std::min(x, span);
  }
  const double ns = std::chrono::duration<double, std::nano>(points_[i].at).count() + x * 1e9;
  if (!(ns < 9.2e18)) return std::nullopt;
  return duration{static_cast<std::int64_t>(std::llround(ns))};
}

std::optional<duration> arrival_schedule::next() {
  const double sends = kind_ == arrival_kind::constant ? static_cast<double>(sent_) : target_;
  const std::optional<duration> at = time_of(sends);
  if (!at) return std::nullopt;
  ++sent_;
  if (kind_ == arrival_kind::poisson) target_ += exponential_variate(rng_, 1.0);
  return at;
}

}  // namespace backoff::net
