// SPDX-License-Identifier: Apache-2.0
// The classification of one attempt: did it succeed, may it be retried, or is it permanent? A
// retryable verdict may carry the server's Retry-After, which raises the next delay to at least
// that value. Classifiers turn a call's result into a verdict; http.hpp has the HTTP one.
//
//   backoff::verdict classify(const my_reply& r) {
//     if (r.ok) return backoff::verdict::success();
//     return r.transient ? backoff::verdict::retryable(r.retry_after)
//                        : backoff::verdict::permanent();
//   }
#pragma once

#include <cstdint>
#include <optional>

#include "backoff/duration.hpp"

namespace backoff {

enum class verdict_kind : std::uint8_t { success, retryable, permanent };

struct verdict {
  verdict_kind kind = verdict_kind::success;
  std::optional<duration> retry_after;  // the server's minimum wait, when it gave one
  // retry_after is a pushback (gRPC's grpc-retry-pushback-ms, AWS's x-amz-retry-after): the
  // next wait is exactly it, and the backoff then restarts from its first step (gRFC A6).
  bool pushback = false;
  // The attempt timed out: a retry quota charges a timeout more than another failure.
  bool timeout = false;
  // The request is known not to have reached the server, or not to have been processed by it
  // (connection refused, a 429 or 503 with Retry-After): safe to retry a non-idempotent call.
  bool not_sent = false;

  static constexpr verdict success() noexcept { return {verdict_kind::success, std::nullopt}; }
  static constexpr verdict retryable(std::optional<duration> after = std::nullopt) noexcept {
    return {verdict_kind::retryable, after};
  }
  static constexpr verdict permanent() noexcept { return {verdict_kind::permanent, std::nullopt}; }

  friend bool operator==(const verdict&, const verdict&) = default;
};

}  // namespace backoff
