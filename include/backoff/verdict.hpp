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

  static constexpr verdict success() noexcept { return {verdict_kind::success, std::nullopt}; }
  static constexpr verdict retryable(std::optional<duration> after = std::nullopt) noexcept {
    return {verdict_kind::retryable, after};
  }
  static constexpr verdict permanent() noexcept { return {verdict_kind::permanent, std::nullopt}; }

  friend bool operator==(const verdict&, const verdict&) = default;
};

}  // namespace backoff
