// SPDX-License-Identifier: Apache-2.0
// A deadline as one spec: how long an operation may take in all, how long each attempt may take,
// the least time worth starting an attempt with, and whether the time left travels with each
// request (deadline_headers.hpp) so that the server can drop work its caller gave up on.
//
//   auto d = backoff::parse_deadline("deadline(total=10s, per_attempt=1s, min_useful=10ms)");
//   backoff::retry_options options{.policy = {.backoff = backoff::parse_policy("grpc")}};
//   d.apply(options);   // max_elapsed 10 s, attempt_timeout 1 s, min_attempt_time 10 ms
//
// Grammar (docs/POLICIES.md): deadline(total=D, per_attempt=D, min_useful=D, propagate=true|false),
// every key optional; a zero duration (or an absent key) means "none". Each attempt gets
// min(per_attempt, time left before total), and no attempt starts with less than min_useful left.
#pragma once

#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/retry.hpp"

namespace backoff {

struct deadline_config {
  duration total{0};        // the whole operation, from its first attempt; 0: no deadline
  duration per_attempt{0};  // each attempt; 0: no per-attempt timeout
  duration min_useful{0};   // no attempt starts with less than this left before the deadline
                            // (total, or the policy's max_elapsed when total is 0)
  bool propagate = false;   // send the time left and the attempt number as headers

  // Throws parse_error: a negative duration, or min_useful above total.
  BACKOFF_EXPORT void validate() const;
  // "deadline(total=10s, per_attempt=1s, min_useful=10ms, propagate=true)", keys at their
  // default left out; parse_deadline(c.to_string()) == c.
  BACKOFF_EXPORT std::string to_string() const;
  friend bool operator==(const deadline_config&, const deadline_config&) = default;

  // Sets the options' max_elapsed (when total is set; else the policy's stays), attempt_timeout
  // and min_attempt_time.
  template <class Options>
  void apply(Options& options) const {
    if (total.count() > 0) options.policy.max_elapsed = total;
    options.attempt_timeout = per_attempt;
    options.min_attempt_time = min_useful;
  }
};

// Reads the spec above; throws parse_error with one line naming the bad part.
BACKOFF_EXPORT deadline_config parse_deadline(std::string_view text);

}  // namespace backoff
