// SPDX-License-Identifier: Apache-2.0
// The deadline and attempt headers (deadline_headers.hpp): grpc-timeout's grammar from gRPC's
// PROTOCOL-HTTP2.md, Envoy's x-envoy-* headers.
#include "backoff/deadline_headers.hpp"

#include <array>
#include <limits>

namespace backoff {

namespace {

struct timeout_unit {
  char letter;
  std::int64_t nanoseconds;
};

// Finest first: format picks the first unit whose value fits in 8 digits.
constexpr std::array<timeout_unit, 6> grpc_units{{{'n', 1},
                                                  {'u', 1'000},
                                                  {'m', 1'000'000},
                                                  {'S', 1'000'000'000},
                                                  {'M', 60'000'000'000},
                                                  {'H', 3'600'000'000'000}}};
constexpr std::int64_t grpc_max_value = 99'999'999;  // 8 digits

// Decimal digits only (no sign, no spaces, no "0x"), at most `max_digits` of them.
std::optional<std::uint64_t> parse_digits(std::string_view text, std::size_t max_digits) noexcept {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

duration saturating_product(std::uint64_t value, std::int64_t unit) noexcept {
  const auto limit = static_cast<std::uint64_t>(std::numeric_limits<duration::rep>::max());
  if (value > limit / static_cast<std::uint64_t>(unit)) return duration::max();
  return duration{static_cast<duration::rep>(value * static_cast<std::uint64_t>(unit))};
}

// ceil(a / b) for a >= 0, b > 0.
std::int64_t divide_up(std::int64_t a, std::int64_t b) noexcept {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace

std::string format_grpc_timeout(duration left) {
  const std::int64_t ns = left.count() < 0 ? 0 : left.count();
  for (const timeout_unit& u : grpc_units) {
    const std::int64_t value = divide_up(ns, u.nanoseconds);
    if (value <= grpc_max_value) return std::to_string(value) + u.letter;
  }
  return std::to_string(grpc_max_value) + 'H';  // about 11,400 years: beyond any duration
}

std::optional<duration> parse_grpc_timeout(std::string_view value) noexcept {
  if (value.size() < 2) return std::nullopt;
  const char letter = value.back();
  for (const timeout_unit& u : grpc_units) {
    if (u.letter != letter) continue;
    const auto n = parse_digits(value.substr(0, value.size() - 1), 8);
    if (!n) return std::nullopt;
    return saturating_product(*n, u.nanoseconds);
  }
  return std::nullopt;
}

std::string format_timeout_ms(duration left) {
  const std::int64_t ns = left.count() < 0 ? 0 : left.count();
  return std::to_string(divide_up(ns, 1'000'000));
}

std::optional<duration> parse_timeout_ms(std::string_view value) noexcept {
  // Up to 19 digits: every value of a signed 64-bit count, as Envoy writes it.
  const auto n = parse_digits(value, 19);
  if (!n) return std::nullopt;
  return saturating_product(*n, 1'000'000);
}

std::optional<std::uint32_t> parse_attempt_count(std::string_view value) noexcept {
  const auto n = parse_digits(value, 10);
  if (!n || *n == 0 || *n > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(*n);
}

std::optional<std::uint32_t> parse_previous_attempts(std::string_view value) noexcept {
  const auto n = parse_digits(value, 10);
  if (!n || *n > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(*n);
}

}  // namespace backoff
