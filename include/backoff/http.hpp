// SPDX-License-Identifier: Apache-2.0
// HTTP conventions for retries: which statuses to retry, and the Retry-After header.
//
//   auto after = backoff::parse_retry_after(response["Retry-After"],
//                                           std::chrono::system_clock::now());
//   backoff::verdict v = backoff::classify_http_status(response.status, after);
//
// Default classification (SPEC 1.4): 1xx-3xx succeed; 429 and every 5xx may be retried; every
// other 4xx is permanent. A status outside 100-599 is treated as permanent: it is not HTTP.
#pragma once

#include <chrono>
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

// An HTTP-date (the three forms above), or nullopt. Seconds, so that any four-digit year fits.
BACKOFF_EXPORT std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text);

// The IMF-fixdate form of an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 section
// 5.6.7): the form a sender must use in Date and Retry-After. Its year has four digits, so a
// time before year 1 or after 9999 is clamped to the first or last second of that range.
// parse_http_date(format_http_date(t)) == t for every t in it.
BACKOFF_EXPORT std::string format_http_date(std::chrono::sys_seconds t);

}  // namespace backoff
