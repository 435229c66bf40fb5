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
// The deadline is a hard cap, as GNU timeout's and ftsh's `try for` are: the tighter of the run's
// own (max_elapsed) and an enclosing one (outer_deadline). The retry_controller decides as the
// library does (retry.hpp); the tool adds what a run of real processes needs on top of its
// "one last attempt at the deadline" rule, which would start a command with no time left:
// - every attempt is given the deadline (attempt_info.deadline, for the caller to enforce: the
//   running attempt is stopped there, and nested runs see it);
// - a retry starts only if at least `minimum_left` (100 ms) is left before the deadline when it
//   would start: a wait that would reach the deadline, or end too close to it, ends the run at
//   once instead (outcome deadline_exceeded, the last attempt's status, loop_result.no_time_left);
// - a wait that overran the deadline (a suspended machine) starts nothing.
// So a run ends within its deadline plus the time its last attempt takes to stop (the grace).
// `every` replaces the policy's waits by ftsh's start-to-start period.
#pragma once

#include <chrono>
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

// The least time before the deadline that a retry must have to be started.
inline constexpr duration minimum_attempt_time = std::chrono::milliseconds(100);

struct loop_options {
  retry_policy policy;  // backoff, max_attempts (0: no limit), max_elapsed (0: no deadline)
  std::optional<duration> every;           // start-to-start period; the policy's delays unused
  std::optional<duration> outer_deadline;  // steady time: an enclosing deadline, the tighter wins
  duration minimum_left = minimum_attempt_time;  // a retry starts only with this much time left
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
};

struct loop_result {
  outcome why = outcome::succeeded;
  std::uint32_t attempts = 0;
  attempt_result last;  // the last attempt's result (status 124 if the deadline left no attempt)
  // Ended before the deadline because a retry would have started with less than minimum_left
  // left (deadline_exceeded): the wait it would have had, and the time left when it ended.
  bool no_time_left = false;
  duration refused_delay{0};
  duration left{0};
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
