// SPDX-License-Identifier: Apache-2.0
// The retry loop: call an operation until it succeeds, fails permanently, runs out of attempts or
// time, or is cancelled; wait between attempts as a backoff policy says.
//
//   backoff::retry_policy policy{backoff::parse_policy("grpc"), /*max_attempts=*/5,
//                                /*max_elapsed=*/30s};
//   auto result = backoff::retry(
//       [&] { return http_get(url); },                           // the operation
//       policy,
//       [](const reply& r) { return backoff::classify_http_status(r.status, r.retry_after); });
//   if (result) use(*result.last);                                // succeeded
//   else log(backoff::to_string(result.why), result.attempts);
//
// Three questions, three pieces: whether to go on (max_attempts, max_elapsed), how long to wait
// (the backoff_policy), whether it is worth it (the classifier's verdict). retry_controller makes
// every decision, given the time; the sync loop here, the Asio coroutine loop and the simulator
// only carry them out, so all three behave alike by construction.
//
// Time, sleeping and randomness come from a retry_env. The default one is the real world
// (steady_clock, an interruptible sleep, a per-thread generator seeded from random_device);
// tests pass one whose clock is manual and whose sleep records the delays.
//
// Deadline semantics: no attempt starts after start + max_elapsed. When the next delay would
// pass the deadline, the sleep is clamped to end at the deadline and one last attempt is made
// there, unless the server's Retry-After asks for more than the time left: then the loop stops
// at once (deadline_exceeded) rather than call the server before it asked.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>

#include "backoff/duration.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

// Why a retry loop ended.
enum class outcome : std::uint8_t {
  succeeded,
  attempts_exhausted,  // max_attempts reached
  deadline_exceeded,   // max_elapsed reached
  permanent,           // the classifier said the failure is not retryable
  cancelled,           // the stop token was triggered
  budget_exhausted,    // the retry budget refused the retry
  throttled,           // the throttle refused the attempt locally
};

std::string_view to_string(outcome o) noexcept;

constexpr bool is_exhausted(outcome o) noexcept {
  return o == outcome::attempts_exhausted || o == outcome::deadline_exceeded;
}

// Immutable and shareable, like the backoff policy it holds.
struct retry_policy {
  backoff_policy backoff;
  std::uint32_t max_attempts = 0;  // 0: unlimited
  duration max_elapsed{0};         // 0: no deadline; measured from the first attempt's start
};

// Shared overload controls consulted by the controller; both optional and not owned. One budget
// or throttle usually serves every operation of a client (they are thread-safe).
struct retry_gates {
  retry_budget* budget = nullptr;         // may refuse a retry (outcome::budget_exhausted)
  backoff::throttle* throttle = nullptr;  // may refuse an attempt (outcome::throttled) or pace it
};

// The decisions of one retried operation: the one retry step that the sync loop, the coroutine
// loop, the retry tool and the simulator carry out. Call sequence:
//
//   retry_controller c{policy, now(), gates};
//   for (;;) {
//     auto s = c.begin_attempt(busy(), now, rng); // counts the attempt; carrier sense; gates
//     if (s.what == attempt_start::stop) return s.stop;      // refused locally, or too late
//     wait(s.wait);                                          // pacing (adaptive rate); usually 0
//     verdict v = s.what == attempt_start::send ? classify(attempt()) : verdict::retryable();
//     auto d = c.end_attempt(s, v, now, rng);     // reports to budget and throttle
//     if (!d.retry) return d.stop;                // succeeded, permanent, exhausted, budget
//     wait(d.delay);                              // sleep, timer, or virtual-time event
//   }
//
// `now` is a callable returning any monotonic time as a duration since that clock's epoch; only
// differences matter. The controller reads it only when something needs the time (a deadline or
// a gate), so a loop without either never reads a clock. The lower-level before_attempt()/after()
// take the time as a value, for drivers that always know it (the simulator's virtual time).
//
// The deadline rule (retry.hpp's header): no attempt starts after the deadline; a wait that would
// pass it is clamped to end at it and one last attempt is made there (at_deadline() says so), even
// if the wait overran it a little; a wait that was not clamped and overran it (a suspended
// machine, a late wake-up) starts no further attempt.
class retry_controller {
 public:
  struct decision {
    bool retry = false;
    duration delay{0};                  // when retry: how long to wait
    outcome stop = outcome::succeeded;  // when not retry: why it ends
  };
  struct gate {
    bool send = true;
    duration wait{0};                   // when send: wait this long first
    outcome stop = outcome::succeeded;  // when not send: why it ends
  };
  enum class attempt_start : std::uint8_t {
    send,   // make the attempt (after `wait`)
    defer,  // carrier sense said busy: counted as a retryable failure, nothing sent
    stop,   // make no attempt: `stop` says why
  };
  struct attempt_plan {
    attempt_start what = attempt_start::send;
    duration wait{0};                   // when send: pacing before the attempt
    outcome stop = outcome::succeeded;  // when stop: why the loop ends
  };

  // The controller refers to `policy`, which must outlive it: a temporary does not compile.
  retry_controller(const retry_policy& policy, duration start, retry_gates gates = {}) noexcept
      : policy_(&policy), backoff_(policy.backoff.start()), start_(start), gates_(gates) {}
  retry_controller(retry_policy&&, duration, retry_gates = {}) = delete;

  std::uint32_t attempts() const noexcept { return attempts_; }
  bool has_deadline() const noexcept { return policy_->max_elapsed.count() > 0; }
  bool has_gates() const noexcept { return gates_.budget != nullptr || gates_.throttle != nullptr; }
  bool needs_clock() const noexcept { return has_deadline() || has_gates(); }
  // The start to give the constructor: the time when it matters, 0 otherwise (no clock read).
  template <class Now>
  static duration start_time(const retry_policy& policy, retry_gates gates, Now&& now) {
    const bool timed = policy.max_elapsed.count() > 0 || gates.budget || gates.throttle;
    return timed ? now() : duration{0};
  }
  // Saturates: a max_elapsed of centuries means "no practical deadline", not an overflow.
  duration deadline() const noexcept {
    return policy_->max_elapsed > duration::max() - start_ ? duration::max()
                                                           : start_ + policy_->max_elapsed;
  }
  const backoff_state& backoff() const noexcept { return backoff_; }
  // See backoff_state::continue_from: the next backoff grows from `previous`.
  void continue_from(duration previous) noexcept { backoff_.continue_from(previous); }
  // The last decision clamped its wait to end at the deadline: the next attempt is the last.
  bool at_deadline() const noexcept { return at_deadline_; }

  // The step before an attempt. `busy` is the carrier-sense answer (false without one).
  template <class Now, bit_generator64 G>
  attempt_plan begin_attempt(bool busy, Now&& now, G& g) {
    const bool check_deadline = has_deadline() && attempts_ > 0 && !at_deadline_;
    const bool gated = has_gates() && !busy;
    const duration t = check_deadline || gated ? now() : duration{0};  // else no clock read
    if (check_deadline && t > deadline()) {
      return {attempt_start::stop, duration{0}, outcome::deadline_exceeded};
    }
    if (busy) {
      attempt_deferred();
      return {attempt_start::defer, duration{0}, outcome::succeeded};
    }
    const gate p = before_attempt(t, g);  // without gates it only counts the attempt
    if (!p.send) return {attempt_start::stop, duration{0}, p.stop};
    return {attempt_start::send, p.wait, outcome::succeeded};
  }

  // The step after an attempt: what to do next. `planned` replaces the backoff's delay when set
  // (the retry tool's start-to-start `every`); the deadline and Retry-After rules still apply.
  template <class Now, bit_generator64 G>
  decision end_attempt(const attempt_plan& s, const verdict& v, Now&& now, G& g,
                       std::optional<duration> planned = std::nullopt) {
    if (s.what == attempt_start::defer) return decide(verdict::retryable(), clock(now), g, planned);
    // The common case: a success with nothing to report reads no clock.
    if (v.kind == verdict_kind::success && !has_gates())
      return {false, duration{0}, outcome::succeeded};
    return after(v, clock(now), g, planned);
  }

  template <bit_generator64 G>
  gate before_attempt(duration now, G& g) {
    if (attempts_ != UINT32_MAX) ++attempts_;
    if (attempts_ == 1 && gates_.budget != nullptr) gates_.budget->on_request(now);
    if (gates_.throttle == nullptr) return {};
    const auto d = gates_.throttle->before_send(now, g);
    if (d.reject) return {false, duration{0}, outcome::throttled};
    return {true, d.wait, outcome::succeeded};
  }

  // An attempt that carrier sense skipped: counted, but nothing was sent.
  void attempt_deferred() noexcept {
    if (attempts_ != UINT32_MAX) ++attempts_;
  }

  template <bit_generator64 G>
  decision after(const verdict& v, duration now, G& g,
                 std::optional<duration> planned = std::nullopt) noexcept {
    if (v.kind != verdict_kind::permanent) {
      const bool ok = v.kind == verdict_kind::success;
      if (gates_.budget != nullptr) gates_.budget->on_outcome(now, ok);
      if (gates_.throttle != nullptr) gates_.throttle->on_response(now, !ok);
    } else if (gates_.throttle != nullptr) {
      gates_.throttle->on_response(now, false);  // the server took it: not an overload
    }
    return decide(v, now, g, planned);
  }

  // after() for an attempt that was never sent (carrier sense): no one to report to.
  template <bit_generator64 G>
  decision after_deferred(duration now, G& g) noexcept {
    return decide(verdict::retryable(), now, g, std::nullopt);
  }

 private:
  template <class Now>
  duration clock(Now& now) const {
    return needs_clock() ? now() : duration{0};
  }

  template <bit_generator64 G>
  decision decide(const verdict& v, duration now, G& g, std::optional<duration> planned) noexcept {
    at_deadline_ = false;
    switch (v.kind) {
      case verdict_kind::success:
        return {false, duration{0}, outcome::succeeded};
      case verdict_kind::permanent:
        return {false, duration{0}, outcome::permanent};
      case verdict_kind::retryable:
        break;
    }
    if (policy_->max_attempts != 0 && attempts_ >= policy_->max_attempts) {
      return {false, duration{0}, outcome::attempts_exhausted};
    }
    if (has_deadline() && now >= deadline())
      return {false, duration{0}, outcome::deadline_exceeded};
    duration delay = planned ? *planned : backoff_.next_delay(g);
    if (v.retry_after && *v.retry_after > delay) delay = *v.retry_after;
    if (has_deadline()) {
      const duration left = deadline() - now;
      if (delay >= left) {
        if (v.retry_after && *v.retry_after > left) {
          return {false, duration{0}, outcome::deadline_exceeded};
        }
        delay = left;
        at_deadline_ = true;
      }
    }
    if (gates_.budget != nullptr && !gates_.budget->try_retry(now)) {
      return {false, duration{0}, outcome::budget_exhausted};
    }
    return {true, delay, outcome::succeeded};
  }

  const retry_policy* policy_;
  backoff_state backoff_;
  duration start_;
  retry_gates gates_;
  std::uint32_t attempts_ = 0;
  bool at_deadline_ = false;
};

namespace detail {
duration steady_now();
bool interruptible_sleep(duration d, std::stop_token stop);
random_generator& thread_generator();

// Draws from the generator of whichever thread draws, looked up at each draw: an env holding it
// can be built on one thread and shared with others (the natural way to share a stop token).
struct per_thread_generator {
  using result_type = std::uint64_t;
  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }
  result_type operator()() const { return thread_generator()(); }
};
inline per_thread_generator per_thread_random;
}  // namespace detail

// The world a retry loop lives in. Every member has a real-world default. The default `random`
// draws from the generator of the thread that runs the loop, so one env may serve many threads;
// a generator given instead is the caller's to share or not.
struct retry_env {
  std::function<duration()> now = detail::steady_now;
  // Waits d; returns false when woken early because `stop` was requested.
  std::function<bool(duration, std::stop_token)> sleep = detail::interruptible_sleep;
  random_ref random = detail::per_thread_random;
  std::stop_token stop;
  // Carrier sense (seed 000's Ethernet approach): when set and it answers true ("busy"), the
  // attempt is not made and counts as a retryable failure, without touching the resource.
  std::function<bool()> busy;
};

// What the on-retry hook is told before each wait.
template <class R>
struct retry_event {
  std::uint32_t attempt;  // the attempt that just failed, from 1
  duration delay;         // the wait before the next one
  verdict why;            // its classification
  const R* result;        // its result; nullptr when carrier sense deferred it
};

template <class R>
struct retry_result {
  outcome why = outcome::succeeded;
  std::uint32_t attempts = 0;  // attempts started, deferred ones included
  std::uint32_t deferred = 0;  // attempts that carrier sense skipped
  duration slept{0};           // total time spent waiting
  std::optional<R> last;       // the last result the operation returned

  explicit operator bool() const noexcept { return why == outcome::succeeded; }
};

// Classifies a bool (true: success) or passes a verdict through.
struct default_classifier {
  constexpr verdict operator()(bool ok) const noexcept {
    return ok ? verdict::success() : verdict::retryable();
  }
  constexpr verdict operator()(const verdict& v) const noexcept { return v; }
};

struct no_retry_hook {
  template <class Event>
  constexpr void operator()(const Event&) const noexcept {}
};

const retry_env& system_env();

// Runs `op` (callable as op() or op(attempt), attempt from 1) until the controller stops.
// An exception from `op` or `classify` propagates at once: classify failures as values.
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto retry(Op&& op, const retry_policy& policy, Classify&& classify = {},
           const retry_env& env = system_env(), OnRetry&& on_retry = {}, retry_gates gates = {}) {
  constexpr bool takes_attempt = std::is_invocable_v<Op&, std::uint32_t>;
  using R = std::decay_t<typename std::conditional_t<
      takes_attempt, std::invoke_result<Op&, std::uint32_t>, std::invoke_result<Op&>>::type>;
  static_assert(!std::is_void_v<R>, "the operation must return something to classify");

  retry_result<R> result;
  random_ref rng = env.random;
  const auto now = [&] { return env.now(); };
  retry_controller control(policy, retry_controller::start_time(policy, gates, now), gates);
  const auto wait = [&](duration d) {
    if (!env.sleep(d, env.stop)) return false;  // cancelled: the time was not all spent
    result.slept += d;
    return true;
  };
  for (;;) {
    if (env.stop.stop_requested()) {
      result.why = outcome::cancelled;
      break;
    }
    const auto s = control.begin_attempt(env.busy && env.busy(), now, rng);
    if (s.what == retry_controller::attempt_start::stop) {
      result.why = s.stop;
      break;
    }
    verdict v = verdict::retryable();
    if (s.what == retry_controller::attempt_start::defer) {
      ++result.deferred;
    } else {
      if (s.wait.count() > 0 && !wait(s.wait)) {
        result.why = outcome::cancelled;
        break;
      }
      if constexpr (takes_attempt) {
        result.last.emplace(op(control.attempts()));
      } else {
        result.last.emplace(op());
      }
      v = classify(*result.last);
    }
    const auto d = control.end_attempt(s, v, now, rng);
    if (!d.retry) {
      result.why = d.stop;
      break;
    }
    const bool deferred = s.what == retry_controller::attempt_start::defer;
    on_retry(retry_event<R>{control.attempts(), d.delay, v, deferred ? nullptr : &*result.last});
    if (!wait(d.delay)) {
      result.why = outcome::cancelled;
      break;
    }
  }
  result.attempts = control.attempts();
  return result;
}

}  // namespace backoff
