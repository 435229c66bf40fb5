#include "attempt_loop.hpp"

#include <algorithm>
#include <chrono>

namespace backoff::tool {

loop_result run_attempt_loop(const loop_options& options, const cancel_scope& scope, random_ref rng,
                             const attempt_function& attempt, const classify_function& classify,
                             const observe_function& observe, const loop_env& env) {
  const duration start = env.now();
  std::optional<duration> deadline = options.outer_deadline;
  if (options.policy.max_elapsed.count() > 0) {
    const duration own = saturating_add(start, options.policy.max_elapsed);
    deadline = deadline ? std::min(*deadline, own) : own;
  }
  loop_result result;
  if (deadline && *deadline <= start) {
    result.why = outcome::deadline_exceeded;
    result.last.ended = attempt_end::timed_out;
    result.last.status = status_timed_out;
    return result;
  }
  // The controller sees the combined deadline, so its clamping and ours agree.
  retry_policy policy = options.policy;
  policy.max_elapsed = deadline ? *deadline - start : duration{0};
  retry_controller control(policy, start);

  for (;;) {
    if (scope.cancelled()) {
      result.why = outcome::cancelled;
      break;
    }
    // A wait can overrun (the machine was suspended, the tool was stopped): check again, so
    // that no attempt starts at or after the deadline.
    if (result.attempts > 0 && deadline && env.now() >= *deadline) {
      result.why = outcome::deadline_exceeded;
      break;
    }
    control.before_attempt(duration{0}, rng);  // no gates: only counts the attempt
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
    const duration now = env.now();
    const auto decision = control.after(classify(record.result), now, rng);
    if (!decision.retry) {
      result.why = decision.stop;
      observe(record);
      break;
    }
    duration delay = decision.delay;
    if (options.every) delay = std::max(duration{0}, *options.every - (now - attempt_start));
    if (deadline && delay >= *deadline - now) {
      result.why = outcome::deadline_exceeded;  // the next attempt could not start in time
      observe(record);
      break;
    }
    record.delay = delay;
    observe(record);
    if (!env.sleep(delay, scope.token())) {
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
