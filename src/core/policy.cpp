// SPDX-License-Identifier: Apache-2.0
// backoff_policy's named constructors and its validation.
#include "backoff/policy.hpp"

#include <cmath>
#include <string>

#include "backoff/error.hpp"

namespace backoff {

namespace {

// What every named constructor sets: the schedule, its first delay and its cap.
backoff_policy scheduled_policy(schedule_kind schedule, duration initial, duration max) {
  backoff_policy p;
  p.schedule = schedule;
  p.initial = initial;
  p.max = max;
  return p;
}

}  // namespace

backoff_policy backoff_policy::constant(duration delay) {
  return scheduled_policy(schedule_kind::constant, delay, duration::max());
}

backoff_policy backoff_policy::linear(duration initial, duration step, duration max) {
  backoff_policy p = scheduled_policy(schedule_kind::linear, initial, max);
  p.step = step;
  return p;
}

backoff_policy backoff_policy::exponential(duration initial, double factor, duration max) {
  backoff_policy p = scheduled_policy(schedule_kind::exponential, initial, max);
  p.factor = factor;
  return p;
}

backoff_policy backoff_policy::fibonacci(duration initial, duration max) {
  return scheduled_policy(schedule_kind::fibonacci, initial, max);
}

void backoff_policy::validate() const {
  const auto fail = [](const std::string& why) { throw parse_error(why); };
  const auto text = [](double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  if (initial.count() < 0) fail("initial must not be negative");
  if (max.count() < 0) fail("max must not be negative");
  if (schedule == schedule_kind::exponential && !(std::isfinite(factor) && factor >= 1.0)) {
    fail("factor=" + text(factor) + " must be a finite number >= 1");
  }
  if (schedule == schedule_kind::linear && step.count() < 0) fail("step must not be negative");
  if (schedule != schedule_kind::constant && max < initial) {
    fail("max (" + format_duration(max) + ") is smaller than initial (" + format_duration(initial) +
         ")");
  }
  if (grow == growth::previous && schedule != schedule_kind::exponential) {
    fail("grow=previous applies only to the exponential schedule");
  }
  switch (jitter) {
    case jitter_kind::additive:
      if (jitter_max.count() < 0) fail("jitter_max must not be negative");
      break;
    case jitter_kind::multiplicative:
      if (!(std::isfinite(lo) && std::isfinite(hi) && lo >= 0.0 && lo <= hi)) {
        fail("multiplicative jitter needs 0 <= lo <= hi (lo=" + text(lo) + ", hi=" + text(hi) +
             ")");
      }
      break;
    case jitter_kind::proportional:
      if (!(r >= 0.0 && r <= 1.0)) fail("r=" + text(r) + " must be between 0 and 1");
      break;
    case jitter_kind::gaussian:
      if (!(std::isfinite(sigma) && sigma >= 0.0)) {
        fail("sigma=" + text(sigma) + " must be a finite number >= 0");
      }
      if (sd.count() < 0) fail("sd must not be negative");
      break;
    default:
      break;
  }
}

}  // namespace backoff
