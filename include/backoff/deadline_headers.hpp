// SPDX-License-Identifier: Apache-2.0
// Deadlines that cross the wire: the time left and the attempt number, written into a request's
// headers by a client and read back by the server, so that a server can drop work whose caller
// has already given up, and see a retry for what it is.
//
//   request.set("grpc-timeout", backoff::format_grpc_timeout(attempt.timeout));   // "250000u"
//   request.set("x-envoy-attempt-count", std::to_string(attempt.attempt));
//   // on the server:
//   const auto left = backoff::parse_grpc_timeout(request["grpc-timeout"]);       // 250 ms
//
// The headers:
//   grpc-timeout                   gRPC over HTTP/2 (PROTOCOL-HTTP2.md): 1 to 8 ASCII digits and
//                                  a unit, H (hours), M (minutes), S, m (milliseconds),
//                                  u (microseconds), n (nanoseconds); "100m" is 100 ms.
//   x-envoy-expected-rq-timeout-ms Envoy's router: the time the downstream may take, in whole
//                                  milliseconds.
//   x-envoy-attempt-count          Envoy: the attempt this request is, 1 for the first.
//   grpc-previous-rpc-attempts     gRPC retries and hedging (A6): how many attempts preceded
//                                  this one, absent (0) on the first.
//
// Formatting rounds a time up to the unit it is written in: a server told slightly more than
// the caller's time may finish a moment after the caller gave up, while one told less would drop
// work the caller still waited for (gRPC's C core rounds up as well). Parsing accepts exactly
// the grammar (no sign, no spaces, no more than 8 digits) and returns nullopt otherwise, so a
// malformed header is ignored rather than taken for a deadline; values too large for a duration
// saturate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"

namespace backoff {

// The most precise grpc-timeout for `left` that is not less than it: the finest unit whose
// value fits in 8 digits (250 ms is "250000u"). A negative time is "0n" (already expired).
BACKOFF_EXPORT std::string format_grpc_timeout(duration left);
BACKOFF_EXPORT std::optional<duration> parse_grpc_timeout(std::string_view value) noexcept;

// x-envoy-expected-rq-timeout-ms: whole milliseconds, rounded up; a negative time is "0".
BACKOFF_EXPORT std::string format_timeout_ms(duration left);
BACKOFF_EXPORT std::optional<duration> parse_timeout_ms(std::string_view value) noexcept;

// x-envoy-attempt-count (>= 1) and grpc-previous-rpc-attempts (>= 0), decimal, below 2^32.
BACKOFF_EXPORT std::optional<std::uint32_t> parse_attempt_count(std::string_view value) noexcept;
BACKOFF_EXPORT std::optional<std::uint32_t> parse_previous_attempts(
    std::string_view value) noexcept;

// What a server learns from a request's headers: the tighter of the two timeouts, and the
// attempt number (x-envoy-attempt-count, else grpc-previous-rpc-attempts + 1). A header that is
// absent or malformed contributes nothing.
struct propagated_deadline {
  std::optional<duration> timeout;
  std::optional<std::uint32_t> attempt;
};

// `field(name)` returns the value of header `name`, empty when absent (Beast's
// request[name] does).
template <class Field>
propagated_deadline read_deadline_headers(Field&& field) {
  propagated_deadline out;
  const std::optional<duration> grpc = parse_grpc_timeout(field("grpc-timeout"));
  const std::optional<duration> envoy = parse_timeout_ms(field("x-envoy-expected-rq-timeout-ms"));
  if (grpc && envoy) {
    out.timeout = *grpc < *envoy ? *grpc : *envoy;
  } else {
    out.timeout = grpc ? grpc : envoy;
  }
  if (const auto n = parse_attempt_count(field("x-envoy-attempt-count"))) {
    out.attempt = n;
  } else if (const auto previous = parse_previous_attempts(field("grpc-previous-rpc-attempts"))) {
    if (*previous < UINT32_MAX) out.attempt = *previous + 1;
  }
  return out;
}

}  // namespace backoff
