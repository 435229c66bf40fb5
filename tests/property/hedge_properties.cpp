// SPDX-License-Identifier: Apache-2.0
// Properties of hedge_controller (hedge.hpp) over random policies, answer times, answer kinds and
// gates (rapidcheck): copies sent and in flight never exceed max_attempts, nothing is sent after
// the end, there is exactly one terminal decision and nothing is left in flight after it, copies
// go out only when the rules allow (the start, the delay after the last copy, or a non-fatal
// answer), and a driver that calls it in any order cannot break those bounds.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/hedge.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::hedge_controller;
using backoff::hedge_policy;
using backoff::verdict;
using action = hedge_controller::action;

duration any_millis(int lo, int hi) {
  return std::chrono::milliseconds{*rc::gen::inRange(lo, hi + 1)};
}

hedge_policy any_hedge_policy() {
  hedge_policy p;
  p.max_attempts = *rc::gen::inRange<std::uint32_t>(1, hedge_policy::max_attempts_limit + 1);
  p.delay = *rc::gen::weightedElement<int>({{1, 0}, {4, 1}}) == 0 ? 0s : any_millis(1, 3000);
  return p;
}

verdict any_answer() {
  switch (*rc::gen::weightedElement<int>({{3, 0}, {4, 1}, {1, 2}, {1, 3}})) {
    case 0:
      return verdict::success();
    case 1:
      return verdict::retryable();
    case 2:
      return verdict::retryable(any_millis(0, 5000));  // pushback
    default:
      return verdict::permanent();
  }
}

// The documented driver on a virtual time line: answers come back after each copy's latency, the
// timer fires at wake_at(); every rule of hedge.hpp is checked at every step.
RC_GTEST_PROP(HedgeProperties, HedgesInFlightNeverExceedMaxAttempts, ()) {
  const hedge_policy p = any_hedge_policy();
  const duration max_elapsed = *rc::gen::arbitrary<bool>() ? any_millis(1, 8000) : 0s;
  std::optional<backoff::retry_budget> budget;
  if (*rc::gen::arbitrary<bool>()) {
    // A floor of k retries over the window, nothing from the requests: k hedges at most.
    const int k = *rc::gen::inRange(0, 5);
    budget.emplace(backoff::ratio_budget_config{0.0, k / 100.0, 100s});
  }
  hedge_controller c{p, {.budget = budget ? &*budget : nullptr}, max_elapsed};
  backoff::random_generator rng{*rc::gen::arbitrary<std::uint64_t>()};

  std::vector<duration> latency(p.max_attempts + 1);
  std::vector<verdict> answer(p.max_attempts + 1);
  for (std::uint32_t n = 1; n <= p.max_attempts; ++n) {
    latency[n] = any_millis(0, 5000);
    answer[n] = any_answer();
  }

  duration now = 0s;
  std::multimap<duration, std::uint32_t> pending;  // answer time -> copy
  std::optional<duration> last_send;
  int terminal = 0;
  bool after_non_fatal = false;  // the step being acted on came from a non-fatal answer
  bool from_timer = false;
  hedge_controller::step s = c.start(now, rng);
  for (int steps = 0; steps < 1000; ++steps) {
    RC_ASSERT(c.sent() <= p.max_attempts);
    RC_ASSERT(c.in_flight() <= p.max_attempts);
    RC_ASSERT(c.answered() <= c.sent());
    if (s.what == action::send) {
      RC_ASSERT(terminal == 0);
      RC_ASSERT(s.attempt == c.sent());
      // Only at the start, `delay` after the last copy, or at once after a non-fatal answer.
      if (last_send) RC_ASSERT(after_non_fatal || (from_timer && now >= *last_send + p.delay));
      last_send = now;
      pending.emplace(now + s.wait + latency[s.attempt], s.attempt);
    } else if (s.what == action::done) {
      ++terminal;
      RC_ASSERT(c.done());
      RC_ASSERT(c.in_flight() == 0u);
      RC_ASSERT(c.answered() + c.cancelled() == c.sent());
      if (max_elapsed > 0s) RC_ASSERT(now <= max_elapsed);
      break;
    }
    after_non_fatal = false;
    from_timer = false;
    if (c.timer_due(now)) {
      from_timer = true;
      s = c.on_timer(now, rng);
      continue;
    }
    const duration wake = c.wake_at();
    if (pending.empty() || wake < pending.begin()->first) {
      RC_ASSERT(wake != duration::max());  // else the call could never end
      now = std::max(now, wake);
      from_timer = true;
      s = c.on_timer(now, rng);
      continue;
    }
    const auto [when, n] = *pending.begin();
    pending.erase(pending.begin());
    now = when;
    const verdict v = answer[n];
    after_non_fatal = v.kind == backoff::verdict_kind::retryable;
    s = c.on_answer(n, v, now, rng);
  }
  RC_ASSERT(terminal == 1);
  // Nothing after the end: no copy, no second decision.
  RC_ASSERT(c.on_timer(now + 1h, rng).what == action::none);
  for (std::uint32_t n = 1; n <= p.max_attempts; ++n) {
    RC_ASSERT(c.on_answer(n, verdict::retryable(), now + 1h, rng).what == action::none);
  }
  RC_ASSERT(c.cancel().what == action::none);
  if (budget) {
    const auto counts = std::get<backoff::ratio_budget>(budget->get()).window_counts(now);
    RC_ASSERT(counts.requests == 1u);
    RC_ASSERT(counts.retries == c.sent() - 1);  // every copy after the first, charged once
  }
}

// A driver that calls in any order (answers for copies never sent, repeats, timers early or late,
// cancellation) cannot make the controller exceed its bounds or decide twice.
RC_GTEST_PROP(HedgeProperties, AnyCallOrderKeepsTheBounds, ()) {
  const hedge_policy p = any_hedge_policy();
  hedge_controller c{p};
  backoff::random_generator rng{1};
  duration now = 0s;
  int terminal = 0;
  std::uint32_t sends = 0;
  const auto count = [&](const hedge_controller::step& s) {
    if (s.what == action::done) ++terminal;
    if (s.what == action::send) {
      RC_ASSERT(terminal == 0);
      ++sends;
    }
  };
  count(c.start(now, rng));
  const int calls = *rc::gen::inRange(0, 60);
  for (int i = 0; i < calls; ++i) {
    now += any_millis(0, 1500);
    switch (*rc::gen::weightedElement<int>({{5, 0}, {6, 1}, {1, 2}, {1, 3}})) {
      case 0:
        count(c.on_timer(now, rng));
        break;
      case 1:
        count(c.on_answer(*rc::gen::inRange<std::uint32_t>(0, 7), any_answer(), now, rng));
        break;
      case 2:
        count(c.cancel());
        break;
      default:
        count(c.start(now, rng));
        break;
    }
    RC_ASSERT(c.sent() <= p.max_attempts);
    RC_ASSERT(c.in_flight() <= p.max_attempts);
    RC_ASSERT(c.answered() <= c.sent());
    RC_ASSERT(sends == c.sent());
    RC_ASSERT(terminal <= 1);
    RC_ASSERT(c.done() == (terminal == 1));
  }
}

}  // namespace
