// SPDX-License-Identifier: Apache-2.0
// Why a retry loop ended: the one answer every loop (sync, coroutine, the retry tool, the
// simulator) gives, and the label its metrics are counted under.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backoff/export.hpp"

namespace backoff {

enum class outcome : std::uint8_t {
  succeeded,
  attempts_exhausted,  // max_attempts reached
  deadline_exceeded,   // max_elapsed reached
  permanent,           // the classifier said the failure is not retryable
  cancelled,           // the stop token was triggered
  budget_exhausted,    // the retry budget refused the retry
  throttled,           // the throttle refused the attempt locally
  breaker_open,        // the circuit breaker refused the attempt or the retry
  not_idempotent,      // the call is not idempotent and its failure may have reached the server
  limited,             // a limiter refused the attempt: a full bulkhead, or its wait in line ran
                       // out; an adaptive concurrency limit; a rate limiter's wait too long
};

inline constexpr std::size_t outcome_count = 10;

// "succeeded", "attempts_exhausted", ...: the enumerator's name.
BACKOFF_EXPORT std::string_view to_string(outcome o) noexcept;

constexpr bool is_exhausted(outcome o) noexcept {
  return o == outcome::attempts_exhausted || o == outcome::deadline_exceeded;
}

}  // namespace backoff
