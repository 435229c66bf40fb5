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
  // When the enclosing run's deadline is the binding one, nothing can run at it: that run stops
  // everything there.
  const bool outer_binds = deadline && deadline == options.outer_deadline;
  loop_result result;
  if (deadline && *deadline <= start) {
    result.why = outcome::deadline_exceeded;
    result.last.ended = attempt_end::timed_out;
    result.last.status = status_timed_out;
    return result;
  }
  // The controller sees the combined deadline and applies the library's rule to it.
  retry_policy policy = options.policy;
  policy.max_elapsed = deadline ? *deadline - start : duration{0};
  retry_controller control(policy, start);
  const auto now = [&] { return env.now(); };

  for (;;) {
    if (scope.cancelled()) {
      result.why = outcome::cancelled;
      break;
    }
    const auto step = control.begin_attempt(false, now, rng);
    if (step.what == retry_controller::attempt_start::stop) {
      result.why = step.stop;  // a wait overran the deadline
      break;
    }
    attempt_record record;
    record.number = control.attempts();
    record.start_unix_s = unix_now_s();
    const duration attempt_start = env.now();
    attempt_info info;
    info.number = record.number;
    // The last attempt, made at the deadline, is not stopped there (it would get no time at
    // all): only by an enclosing deadline and the caller's own per-attempt limit.
    info.deadline = control.at_deadline() ? options.outer_deadline : deadline;
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
    if (!decision.retry || (control.at_deadline() && outer_binds)) {
      result.why = decision.retry ? outcome::deadline_exceeded : decision.stop;
      observe(record);
      break;
    }
    record.delay = decision.delay;
    record.next_at_deadline = control.at_deadline();
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
    const bool cannot_run = r.status == status_not_found || r.status == status_not_executable;
    if (until) {
      if (until->matches(r.status)) return verdict::success();
      return cannot_run ? verdict::permanent() : verdict::retryable();
    }
    if (r.status == 0) return verdict::success();
    if (while_) return while_->matches(r.status) ? verdict::retryable() : verdict::permanent();
    return cannot_run ? verdict::permanent() : verdict::retryable();
  };
}

}  // namespace backoff::tool
