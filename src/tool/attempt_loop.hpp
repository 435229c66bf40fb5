// SPDX-License-Identifier: Apache-2.0
// The retry loop of the retry tool: the library's retry_controller decides (attempts, backoff,
// deadline), this loop carries the decisions out with real processes and real sleeps. `backoff
// try` runs a command per attempt; a script's `try` block runs a whole group per attempt.
//
//   loop_options options;
//   options.policy = {backoff::parse_policy("ftsh"), /*max_attempts=*/5, /*max_elapsed=*/1h};
//   auto result = run_attempt_loop(options, scope, rng,
//       [&](const attempt_info& a) { return run_attempt(spec_for(a), limits_for(a), scope); },
//       classify_status(until, while_),
//       [&](const attempt_record& r) { log(r); });
//
// Deadline, done right (ftsh overshoots its `try for 1 hour` by up to a whole backoff): the
// library's rule (retry.hpp), carried out by the same retry_controller step. No attempt starts
// after the deadline; a running attempt is stopped at it (attempt_info.deadline is for the caller
// to enforce); a wait that would pass it is clamped to end at it and one last attempt is made
// there, which the deadline does not stop (it would get no time at all): only an enclosing
// deadline and the caller's per-attempt limit do. When the enclosing deadline is the binding one,
// no last attempt is made (the enclosing run stops everything at it): the loop ends at once.
// `every` replaces the policy's waits by ftsh's start-to-start period.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>

#include "backoff/random.hpp"
#include "backoff/retry.hpp"
#include "backoff/verdict.hpp"
#include "cancel_scope.hpp"
#include "process.hpp"
#include "status_list.hpp"

namespace backoff::tool {

struct loop_options {
  retry_policy policy;  // backoff, max_attempts (0: no limit), max_elapsed (0: no deadline)
  std::optional<duration> every;           // start-to-start period; the policy's delays unused
  std::optional<duration> outer_deadline;  // steady time: an enclosing deadline, the tighter wins
};

struct attempt_info {
  std::uint32_t number = 1;          // from 1
  std::optional<duration> deadline;  // steady time at which this attempt must be stopped, if any
};

// What the loop tells its observer after each attempt.
struct attempt_record {
  std::uint32_t number = 1;
  double start_unix_s = 0;  // wall-clock start, seconds since the epoch
  attempt_result result;
  std::optional<duration> delay;  // the wait before the next attempt; none when it was the last
  bool next_at_deadline = false;  // the wait was cut to end at the deadline: the next is the last
};

struct loop_result {
  outcome why = outcome::succeeded;
  std::uint32_t attempts = 0;
  attempt_result last;  // the last attempt's result (status 124 if the deadline left no attempt)
};

// Time as the loop sees it: the real steady clock and an interruptible sleep, or, in tests, a
// manual clock and a sleep that records (tests/tool/attempt_loop_test.cpp).
struct loop_env {
  std::function<duration()> now = steady_now;
  std::function<bool(duration, std::stop_token)> sleep = detail::interruptible_sleep;
};

using attempt_function = std::function<attempt_result(const attempt_info&)>;
using classify_function = std::function<verdict(const attempt_result&)>;
using observe_function = std::function<void(const attempt_record&)>;

loop_result run_attempt_loop(const loop_options& options, const cancel_scope& scope, random_ref rng,
                             const attempt_function& attempt, const classify_function& classify,
                             const observe_function& observe, const loop_env& env = {});

// The tool's classification: success on status 0 (or, with `until`, on a listed status); with
// `while_`, retry only listed statuses. Never retried: a command that could not be started, an
// attempt cancelled by a signal to the tool, and statuses 126 and 127 (a shell's "cannot run" and
// "not found"), unless `while_` lists them.
classify_function classify_status(const std::optional<status_list>& until,
                                  const std::optional<status_list>& while_);

}  // namespace backoff::tool
