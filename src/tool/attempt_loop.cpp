// SPDX-License-Identifier: Apache-2.0
#include "attempt_loop.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

namespace backoff::tool {

namespace {

std::optional<duration> tighter(std::optional<duration> a, std::optional<duration> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

loop_result run_attempt_loop(const loop_options& options, const cancel_scope& scope, random_ref rng,
                             const attempt_function& attempt, const classify_function& classify,
                             const observe_function& observe, const loop_env& env) {
  const duration start = env.now();
  const std::optional<duration> own =
      options.policy.max_elapsed.count() > 0
          ? std::optional<duration>(saturating_add(start, options.policy.max_elapsed))
          : std::nullopt;
  const std::optional<duration> deadline = tighter(own, options.outer_deadline);
  loop_result result;
  if (deadline && *deadline <= start) {
    result.why = outcome::deadline_exceeded;
    result.last.ended = attempt_end::timed_out;
    return result;
  }
  // The controller sees the combined deadline and applies the library's rule to it; the loop
  // refuses the retries that rule would start with too little time (the header).
  retry_policy policy = options.policy;
  policy.max_elapsed = deadline ? *deadline - start : duration{0};
  retry_controller control(policy, start);
  const auto now = [&] { return env.now(); };

  for (;;) {
    if (scope.cancelled()) {
      result.why = outcome::cancelled;
      break;
    }
    // After a wait: one that overran the deadline (woken late, or the machine was suspended)
    // starts nothing.
    if (result.attempts > 0 && deadline && env.now() >= *deadline) {
      result.why = outcome::deadline_exceeded;
      break;
    }
    const auto step = control.begin_attempt(false, now, rng);
    if (step.what == retry_controller::attempt_start::stop) {
      result.why = step.stop;
      break;
    }
    attempt_record record;
    record.number = control.attempts();
    record.start_unix_s = unix_now_s();
    const duration attempt_start = env.now();
    attempt_info info;
    info.number = record.number;
    info.deadline = deadline;
    record.result = attempt(info);
    result.last = record.result;
    result.attempts = record.number;
    if (record.result.ended == attempt_end::cancelled || scope.cancelled()) {
      result.why = outcome::cancelled;
      observe(record);
      break;
    }
    const duration ended = env.now();
    std::optional<duration> planned;
    if (options.every) planned = std::max(duration{0}, *options.every - (ended - attempt_start));
    const auto decision = control.end_attempt(
        step, classify(record.result), [&] { return ended; }, rng, planned);
    if (!decision.retry) {
      result.why = decision.stop;
      observe(record);
      break;
    }
    if (deadline) {
      const duration left = *deadline - ended;
      const duration left_then = left - decision.delay;
      if (left_then <= duration{0} || left_then < options.minimum_left) {
        result.why = outcome::deadline_exceeded;
        result.no_time_left = true;
        result.refused_delay = decision.delay;
        result.left = left;
        observe(record);
        break;
      }
    }
    record.delay = decision.delay;
    observe(record);
    if (!env.sleep(decision.delay, scope.token())) {
      result.why = outcome::cancelled;
      break;
    }
  }
  return result;
}

classify_function classify_status(const std::optional<status_list>& until,
                                  const std::optional<status_list>& while_) {
  return [until, while_](const attempt_result& r) {
    if (r.ended == attempt_end::not_found || r.ended == attempt_end::not_executable ||
        r.ended == attempt_end::cancelled) {
      return verdict::permanent();
    }
    // A shell reports a missing or unusable program as 127 or 126: retrying will not find it.
    const bool cannot_run = r.status() == status_not_found || r.status() == status_not_executable;
    if (until) {
      if (until->matches(r.status())) return verdict::success();
      return cannot_run ? verdict::permanent() : verdict::retryable();
    }
    if (r.status() == 0) return verdict::success();
    if (while_) return while_->matches(r.status()) ? verdict::retryable() : verdict::permanent();
    return cannot_run ? verdict::permanent() : verdict::retryable();
  };
}

}  // namespace backoff::tool
