// SPDX-License-Identifier: Apache-2.0
// HTTP conventions for retries: which statuses to retry, the Retry-After header, and the server
// pushback headers of gRPC (gRFC A6, grpc/proposal A6-client-retries.md, 2017) and of the AWS
// SDKs (botocore/retries/standard.py, ExponentialBackoff, 2026).
//
//   auto after = backoff::parse_retry_after(response["Retry-After"],
//                                           std::chrono::system_clock::now());
//   backoff::verdict v = backoff::classify_http_status(response.status, after);
//
//   // With the pushback headers: each is the field's value, or nullopt when it is absent.
//   const backoff::retry_headers headers = backoff::retry_headers::from(
//       [&](const char* name) { return response.find(name); });
//   backoff::verdict w = backoff::classify_http_reply(response.status, headers,
//                                                     std::chrono::system_clock::now());
//
// Default classification: 1xx-3xx succeed; 429 and every 5xx may be retried; every
// other 4xx is permanent. A status outside 100-599 is treated as permanent: it is not HTTP.
//
// classify_http_reply reads the status first, the headers only on a 429 or a 5xx (a success is a
// success, a 404 is permanent, whatever they say). Then the most specific header the reply
// carries decides the wait:
// - first grpc-retry-pushback-ms: wait exactly that many milliseconds, then restart the backoff
//   from its first step (verdict.pushback). A negative or malformed value means "do not
//   retry": the verdict is permanent.
// - then x-amz-retry-after: wait at least that many milliseconds, and never more than 5 s for
//   its sake (the AWS SDKs cap it at the computed backoff + 5 s). Malformed: ignored.
// - then Retry-After (seconds or an HTTP-date): wait at least that long. Malformed: ignored.
// A header that is ignored lets the next one apply. Values are decimal digits; the spaces and
// tabs around a field value are not part of it (RFC 9110 section 5.5).
// verdict.not_sent says the server refused the request without processing it, so that even a
// call that is not idempotent may be retried: on a 429 (a rate limiter turned it away, RFC 6585
// section 4) and on a 503 with a valid Retry-After (the server says it cannot handle the
// request now, RFC 9110 section 15.6.4). A 503 without it may come from a gateway that did
// forward the request.
// Call from any thread: every function here is pure; the views must outlive the call.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

BACKOFF_EXPORT verdict classify_http_status(int status,
                                            std::optional<duration> retry_after = std::nullopt);

// Retry-After (RFC 9110 section 10.2.3): either delay-seconds (digits only) or an HTTP-date in
// any of its three forms (IMF-fixdate, RFC 850, asctime). A date in the past gives 0. Returns
// nullopt for a value that is neither, as the RFC asks recipients to ignore invalid values.
// Delays beyond about 292 years saturate.
BACKOFF_EXPORT std::optional<duration> parse_retry_after(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

// The reply headers that say when, or whether, to retry: each the field's value, or nullopt when
// the reply does not carry that field. An empty value is present and malformed.
struct retry_headers {
  std::optional<std::string_view> retry_after{};             // Retry-After
  std::optional<std::string_view> grpc_retry_pushback_ms{};  // grpc-retry-pushback-ms
  std::optional<std::string_view> amz_retry_after{};         // x-amz-retry-after

  // From a lookup `find(name)` returning the field's value or nullopt (anything convertible to
  // std::optional<std::string_view>); it is given each name as a NUL-terminated string.
  template <class Find>
  static retry_headers from(Find&& find) {
    return {find("Retry-After"), find("grpc-retry-pushback-ms"), find("x-amz-retry-after")};
  }

  friend bool operator==(const retry_headers&, const retry_headers&) = default;
};

// The most x-amz-retry-after may add to a wait (the AWS SDKs: computed backoff + 5 s; here the
// hint is capped at 5 s and the loop waits the larger of it and the computed backoff).
inline constexpr duration amz_retry_after_cap = std::chrono::seconds{5};

// The largest pushback read, in milliseconds: gRFC A6 sends a signed 32-bit integer (about 24.8
// days). Longer values saturate to it.
inline constexpr std::int64_t max_pushback_ms = 2'147'483'647;

// A reply's verdict from its status and its retry headers (the header comment: precedence,
// not_sent). `now` reads an HTTP-date in Retry-After.
BACKOFF_EXPORT verdict classify_http_reply(int status, const retry_headers& headers,
                                           std::chrono::system_clock::time_point now);

// grpc-retry-pushback-ms: the wait, or nullopt when the value asks not to retry (gRFC A6: a
// negative or unparsable value). Digits only, saturating at max_pushback_ms.
BACKOFF_EXPORT std::optional<duration> parse_grpc_retry_pushback(std::string_view value);

// x-amz-retry-after: the wait the server suggests, not capped yet, or nullopt for a value to
// ignore (negative or not a number, as botocore ignores it). Digits only, saturating at
// max_pushback_ms.
BACKOFF_EXPORT std::optional<duration> parse_amz_retry_after(std::string_view value);

// An HTTP-date (the three forms above), or nullopt. Seconds, so that any four-digit year fits.
BACKOFF_EXPORT std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text);

// The IMF-fixdate form of an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 section
// 5.6.7): the form a sender must use in Date and Retry-After. Its year has four digits, so a
// time before year 1 or after 9999 is clamped to the first or last second of that range.
// parse_http_date(format_http_date(t)) == t for every t in it.
BACKOFF_EXPORT std::string format_http_date(std::chrono::sys_seconds t);

}  // namespace backoff
