// SPDX-License-Identifier: Apache-2.0
// The retry loop: call an operation until it succeeds, fails permanently, runs out of attempts or
// time, or is cancelled; wait between attempts as a backoff policy says.
//
//   auto result = backoff::retry(
//       [&] { return http_get(url); },                            // the operation
//       backoff::retry_options{
//           .policy = {.backoff = backoff::parse_policy("grpc"), .max_attempts = 5,
//                      .max_elapsed = 30s},
//           .classify = [](const reply& r) {
//             return backoff::classify_http_status(r.status, r.retry_after);
//           }});
//   if (result) use(*result.last);                                 // succeeded
//   else log(backoff::to_string(result.why), result.attempts);
//
// retry_options (below) holds everything by name: the policy and its stop conditions, the
// classifier (classify.hpp: exceptions, expected-like results, error codes, HTTP statuses), the
// hooks (hooks.hpp: logs, metrics), the gates (budget, throttle, circuit breaker) and a
// per-attempt timeout.
// The positional form retry(op, policy, classify, env, on_retry, gates) is a thin wrapper.
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
//
// The server's word on the wait (verdict.hpp): a plain Retry-After is a minimum, the next wait
// is max(backoff, Retry-After) and the backoff goes on counting. A pushback (verdict.pushback:
// gRPC's grpc-retry-pushback-ms, AWS's x-amz-retry-after) is the wait itself: exactly it, no
// backoff drawn, and the backoff restarts from its first step after it (gRFC A6). Both obey the
// deadline rule above, and a pushback still asks the breaker and the budget.
//
// Idempotency (google-cloud-cpp's Idempotency): with retry_policy::idempotent = false, a
// retryable failure is retried only when its verdict says not_sent (the request provably never
// reached the server: connection refused, a 429 or 503 with Retry-After, a carrier-sense
// deferral); any other ends the loop with outcome::not_idempotent, once attempts and time would
// have allowed a retry (those reasons come first). An attempt cut at its timeout may have
// reached the server: it is not retried.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "backoff/circuit_breaker.hpp"
#include "backoff/classify.hpp"
#include "backoff/detail/gate_leases.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/hooks.hpp"
#include "backoff/limiter.hpp"
#include "backoff/outcome.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

// Immutable and shareable, like the backoff policy it holds.
struct retry_policy {
  backoff_policy backoff;
  std::uint32_t max_attempts = 0;  // 0: unlimited
  duration max_elapsed{0};         // 0: no deadline; measured from the first attempt's start
  // false (google-cloud-cpp's Idempotency::kNonIdempotent): a retryable failure is retried only
  // when its verdict says not_sent; any other that would be retried ends the loop
  // (outcome::not_idempotent), since the call may have had its effect.
  bool idempotent = true;
};

// Shared overload controls consulted by the controller; all optional and not owned. One budget,
// throttle or breaker usually serves every operation of a client (they are thread-safe).
struct retry_gates {
  retry_budget* budget = nullptr;         // may refuse a retry (outcome::budget_exhausted)
  backoff::throttle* throttle = nullptr;  // may refuse an attempt (outcome::throttled) or pace it
  // Consecutive and rate kinds may refuse any attempt, the first too; retry-only and run-ratio
  // kinds only a retry (both outcome::breaker_open). Every attempt sent is recorded in it.
  circuit_breaker* breaker = nullptr;
  // A bulkhead, an adaptive concurrency limit or a rate limiter, asked after the breaker and
  // before the throttle: it may refuse an attempt (outcome::limited), pace it (a rate
  // reservation) or make it wait in a bulkhead's line; each attempt's end is reported to it.
  backoff::limiter* limiter = nullptr;
};

namespace detail {

// Tells the budget and the throttle how an attempt went, as every driver must: a success or a
// retryable failure counts for both; a permanent failure only tells the throttle that the server
// took the request (not an overload). The breaker is told with its attempt's permit instead.
// `retry`: the attempt was not the operation's first (some token buckets earn on first ones).
// `taken`: what a retry quota took from the operation for its last retry (refunded on success).
inline void report_answer(const retry_gates& gates, const verdict& v, duration now, bool retry,
                          std::uint32_t taken = 0) noexcept {
  if (v.kind != verdict_kind::permanent) {
    const bool ok = v.kind == verdict_kind::success;
    if (gates.budget != nullptr) gates.budget->on_outcome(now, ok, retry, taken);
    if (gates.throttle != nullptr) gates.throttle->on_response(now, !ok);
  } else if (gates.throttle != nullptr) {
    gates.throttle->on_response(now, false);
  }
}

}  // namespace detail

// The decisions of one retried operation: the one retry step that the sync loop, the coroutine
// loop, the retry tool and the simulator carry out. Call sequence:
//
//   retry_controller c{policy, now(), gates};
//   for (;;) {
//     auto s = c.begin_attempt(busy(), now, rng); // counts the attempt; carrier sense; gates
//     if (s.what == attempt_start::stop) return s.stop;      // refused locally, or too late
//     wait(s.wait);                                          // pacing (adaptive rate); usually 0
//     verdict v = s.what == attempt_start::send ? classify(attempt()) : verdict::retryable();
//     auto d = c.end_attempt(s, v, now, rng);     // reports to budget, throttle and breaker
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
//
// A retry quota (retry_budget.hpp) refunds exactly what this operation took: the controller
// keeps the cost of its last retry and hands it back on success. A retry after a verdict with
// `timeout` pays the quota's timeout cost.
//
// With a breaker in the gates, the permit taken before an attempt is kept until its result is
// reported (an attempt begun and never ended releases it when the controller is destroyed).
// Consecutive and rate breakers are asked before every attempt; retry-only and run-ratio
// breakers when a failure would be retried, before the budget (whose ratio kind spends a retry
// when asked).
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
    bool queue = false;                 // when send: first wait up to `wait` in the bulkhead's
                                        // line, then call entered_queue
  };
  enum class attempt_start : std::uint8_t {
    send,   // make the attempt (after `wait`)
    defer,  // carrier sense said busy: counted as a retryable failure, nothing sent
    stop,   // make no attempt: `stop` says why
    queue,  // wait up to `wait` in the limiter's bulkhead line, then call entered_queue
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
  bool has_gates() const noexcept {
    return gates_.budget != nullptr || gates_.throttle != nullptr || gates_.breaker != nullptr ||
           gates_.limiter != nullptr;
  }
  bool needs_clock() const noexcept { return has_deadline() || has_gates(); }
  // The start to give the constructor: the time when it matters, 0 otherwise (no clock read).
  template <class Now>
  static duration start_time(const retry_policy& policy, retry_gates gates, Now&& now) {
    // The breaker is not here: it takes the time of each attempt, never the start.
    const bool timed = policy.max_elapsed.count() > 0 || gates.budget || gates.throttle;
    return timed ? now() : duration{0};
  }
  // Saturates: a max_elapsed of centuries means "no practical deadline", not an overflow.
  duration deadline() const noexcept { return saturating_add(start_, policy_->max_elapsed); }
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
    if (p.queue) return {attempt_start::queue, p.wait, outcome::succeeded};
    return {attempt_start::send, p.wait, outcome::succeeded};
  }

  // After attempt_start::queue: whether the wait in the bulkhead's line got a slot. The plan
  // is then as begin_attempt's: send (after the throttle's pacing) or stop.
  template <class Now, bit_generator64 G>
  attempt_plan entered_queue(bool entered, Now&& now, G& g) {
    if (!entered) {
      lease_.drop();  // nothing was sent
      return {attempt_start::stop, duration{0}, outcome::limited};
    }
    limit_.entered_from_queue();
    const gate p = throttle_gate(gates_.throttle != nullptr ? now() : duration{0}, g, duration{0});
    if (!p.send) return {attempt_start::stop, duration{0}, p.stop};
    return {attempt_start::send, p.wait, outcome::succeeded};
  }

  // The step after an attempt: what to do next. `planned` replaces the backoff's delay when set
  // (the retry tool's start-to-start `every`); the deadline and Retry-After rules still apply.
  template <class Now, bit_generator64 G>
  decision end_attempt(const attempt_plan& s, const verdict& v, Now&& now, G& g,
                       std::optional<duration> planned = std::nullopt) {
    if (s.what == attempt_start::defer) return decide(nothing_sent(), clock(now), g, planned);
    // The common case: a success with nothing to report reads no clock.
    if (v.kind == verdict_kind::success && !has_gates())
      return {false, duration{0}, outcome::succeeded};
    return after(v, clock(now), g, planned);
  }

  template <bit_generator64 G>
  gate before_attempt(duration now, G& g) {
    if (attempts_ != UINT32_MAX) ++attempts_;
    if (attempts_ == 1 && gates_.budget != nullptr) gates_.budget->on_request(now);
    if (gates_.breaker != nullptr) {
      // Asked first: a refusal here costs nothing, where the throttle may already have taken a
      // send token.
      if (!lease_.acquire(*gates_.breaker, now, !tried_)) {
        return {false, duration{0}, outcome::breaker_open};
      }
      tried_ = true;
    }
    duration paced{0};
    if (gates_.limiter != nullptr) {
      const limiter_ticket& t = limit_.acquire(*gates_.limiter, now);
      switch (t.what) {
        case limiter_answer::refused:
          lease_.drop();  // nothing was sent
          return {false, duration{0}, outcome::limited};
        case limiter_answer::queue:
          return {true, t.wait, outcome::succeeded, true};
        case limiter_answer::wait:
          paced = t.wait;
          break;
        case limiter_answer::admitted:
          break;
      }
    }
    return throttle_gate(now, g, paced);
  }

  // An attempt that carrier sense skipped: counted, but nothing was sent.
  void attempt_deferred() noexcept {
    if (attempts_ != UINT32_MAX) ++attempts_;
  }

  template <bit_generator64 G>
  decision after(const verdict& v, duration now, G& g,
                 std::optional<duration> planned = std::nullopt) noexcept {
    detail::report_answer(gates_, v, now, attempts_ > 1, quota_taken_);
    // Only a retryable verdict is a breaker failure. A permanent one means the server answered
    // (a 404, a validation error): the dependency is up, and a breaker that opened on it would
    // refuse the calls that work. For a half-open trial it counts as a success.
    if (gates_.breaker != nullptr) lease_.record(now, v.kind == verdict_kind::retryable);
    // A retryable failure is a drop for an adaptive limit (overload: it backs off); a success
    // or a permanent answer is a latency sample.
    if (gates_.limiter != nullptr) {
      limit_.record(
          now, v.kind == verdict_kind::retryable ? limit_outcome::dropped : limit_outcome::success);
    }
    return decide(v, now, g, planned);
  }

  // after() for an attempt that was never sent (carrier sense): no one to report to.
  template <bit_generator64 G>
  decision after_deferred(duration now, G& g) noexcept {
    return decide(nothing_sent(), now, g, std::nullopt);
  }

 private:
  // The throttle's part of the gate, after the limiter's: a refusal gives back what the breaker
  // and the limiter admitted; the wait is the longer of the two pacings.
  template <bit_generator64 G>
  gate throttle_gate(duration now, G& g, duration paced) {
    if (gates_.throttle == nullptr) return {true, paced, outcome::succeeded};
    const auto d = gates_.throttle->before_send(now, g);
    if (d.reject) {
      lease_.drop();  // nothing was sent
      limit_.drop();
      return {false, duration{0}, outcome::throttled};
    }
    return {true, std::max(d.wait, paced), outcome::succeeded};
  }

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
    if (!policy_->idempotent && !v.not_sent) return {false, duration{0}, outcome::not_idempotent};
    // A pushback is the wait itself (gRFC A6), not a minimum: no backoff is drawn for it.
    const bool pushback = v.pushback && v.retry_after;
    duration delay = pushback  ? std::max(*v.retry_after, duration{0})
                     : planned ? *planned
                               : backoff_.next_delay(g);
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
    if (gates_.breaker != nullptr && !breaker_allows_retry(now, delay)) {
      return {false, duration{0}, outcome::breaker_open};
    }
    if (gates_.budget != nullptr && !gates_.budget->try_retry(now, v.timeout, quota_taken_)) {
      return {false, duration{0}, outcome::budget_exhausted};
    }
    if (pushback) backoff_ = policy_->backoff.start();  // the next backoff is the first step again
    return {true, delay, outcome::succeeded};
  }

  // What carrier sense's deferral is: a retryable failure that sent nothing.
  static constexpr verdict nothing_sent() noexcept {
    verdict v = verdict::retryable();
    v.not_sent = true;
    return v;
  }

  // The retry-only and run-ratio kinds decide when a failure arrives, as a budget does. The
  // consecutive and rate kinds gate the next attempt itself (before_attempt); but when they will
  // still be open once the wait is over, that attempt would be refused, so the loop ends now
  // rather than sleep for nothing.
  bool breaker_allows_retry(duration now, duration delay) const noexcept {
    const breaker_kind k = gates_.breaker->config().kind;
    if (k != breaker_kind::retry_only && k != breaker_kind::run_ratio) {
      const duration then = saturating_add(now, delay);
      return gates_.breaker->retry_allowed(then);  // false while open, or forced open
    }
    return gates_.breaker->retry_allowed(now);
  }

  const retry_policy* policy_;
  backoff_state backoff_;
  duration start_;
  retry_gates gates_;
  detail::breaker_lease lease_;
  detail::limiter_lease limit_;
  std::uint32_t attempts_ = 0;
  bool at_deadline_ = false;
  bool tried_ = false;  // an attempt passed the gates: later ones are retries for the breaker
  std::uint32_t quota_taken_ = 0;  // what a retry quota took for this operation's last retry
};

namespace detail {
BACKOFF_EXPORT duration steady_now();
BACKOFF_EXPORT bool interruptible_sleep(duration d, std::stop_token stop);
BACKOFF_EXPORT random_generator& thread_generator();

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
  // Carrier sense (the Ethernet approach, Thain 2009): when set and it answers true ("busy"), the
  // attempt is not made and counts as a retryable failure, without touching the resource.
  std::function<bool()> busy;
};

template <class R>
struct retry_result {
  outcome why = outcome::succeeded;
  std::uint32_t attempts = 0;   // attempts started, deferred ones included
  std::uint32_t deferred = 0;   // attempts that carrier sense skipped
  std::uint32_t timed_out = 0;  // attempts cancelled at their timeout (coroutine loop)
  duration slept{0};            // total time spent waiting
  std::optional<R> last;        // the last attempt's result; empty when it had none (it threw,
                                // timed out or was deferred)
  std::exception_ptr error;     // the last attempt's exception, when it threw one the loop retries

  explicit operator bool() const noexcept { return why == outcome::succeeded; }
};

// What an operation may take instead of nothing or its attempt number.
struct attempt_context {
  std::uint32_t attempt;  // from 1
  duration timeout;       // min(per-attempt timeout, time left before the deadline); 0: none
};

// The positional API's "no on_retry callable".
struct no_retry_hook {
  template <class Event>
  constexpr void operator()(const Event&) const noexcept {}
};

// Everything a retry loop is told, by name. New features arrive as new members with defaults,
// so a call written today keeps compiling:
//
//   backoff::retry_options options{
//       .policy = {.backoff = backoff::parse_policy("grpc"), .max_attempts = 5},
//       .classify = backoff::retry_on<std::system_error>{},
//       .hooks = backoff::metrics_hooks{&metrics},
//       .attempt_timeout = 2s};
//   auto result = backoff::retry(op, options);
//
// (Class template argument deduction from designated initializers needs GCC 11 or Clang 17;
// with an older Clang, name the types: retry_options<backoff::retry_on<E>, my_hooks>{...}.)
template <class Classify = default_classifier, class Hooks = no_hooks>
struct retry_options {
  retry_policy policy;  // how long to wait, and when to stop (max_attempts, max_elapsed)
  Classify classify{};  // what a result (or an exception) means: classify.hpp
  Hooks hooks{};        // what the loop tells the world: hooks.hpp
  retry_gates gates{};  // shared retry budget, throttle and circuit breaker
  // > 0: each attempt gets min(attempt_timeout, time left before the deadline); the last one,
  // made at the deadline (the rule in this header), gets attempt_timeout. The coroutine loop
  // cancels an attempt at its time; the sync loop cannot cancel a call, so it tells an operation
  // that takes an attempt_context (give it to your client's own timeout).
  duration attempt_timeout{0};
  // > 0, with a deadline: no attempt starts with less than this left before it, and a failed
  // attempt whose next wait would leave less ends the loop at once (deadline_exceeded) instead
  // of waiting for an attempt that could not be useful.
  duration min_attempt_time{0};
};

BACKOFF_EXPORT const retry_env& system_env();

namespace detail {

template <class T>
using stored_result_t = std::conditional_t<std::is_void_v<T>, std::monostate, std::decay_t<T>>;

// How an operation is called: op(attempt_context), op(attempt) or op().
enum class op_arity : std::uint8_t { context, number, none };
template <class Op>
constexpr op_arity arity_of() {
  if constexpr (std::is_invocable_v<Op&, std::uint32_t>) {
    return op_arity::number;
  } else if constexpr (std::is_invocable_v<Op&, const attempt_context&>) {
    return op_arity::context;
  } else {
    static_assert(std::is_invocable_v<Op&>,
                  "the operation must be callable as op(), op(attempt) or op(attempt_context)");
    return op_arity::none;
  }
}

template <class Op>
decltype(auto) invoke_attempt(Op& op, const attempt_context& c) {
  constexpr op_arity how = arity_of<Op>();
  if constexpr (how == op_arity::number) {
    return op(c.attempt);
  } else if constexpr (how == op_arity::context) {
    return op(c);
  } else {
    return op();
  }
}

template <class Op>
using op_return_t = decltype(invoke_attempt(std::declval<Op&>(), std::declval<attempt_context>()));

// The time an attempt may take: min(per-attempt timeout, time left before the deadline); 0 when
// there is no per-attempt timeout (the deadline alone bounds when attempts start, not how long
// they run: retry.hpp's header). The last attempt, made at the deadline by that rule, would get
// no time at all: it gets the per-attempt timeout, as the retry tool's last attempt does. Reads
// the clock only with both a timeout and a deadline.
template <class Now>
duration attempt_time(const retry_controller& control, duration per_attempt, Now&& now) {
  if (per_attempt.count() <= 0) return duration{0};
  if (!control.has_deadline() || control.at_deadline() || control.deadline() == duration::max())
    return per_attempt;
  // At least a nanosecond: a pacing wait may have taken the rest (0 would mean "none").
  return std::clamp(control.deadline() - now(), duration{1}, per_attempt);
}

// With a minimum useful time: whether now, or after `wait`, less than it is left before the
// deadline (then the loop ends instead of making, or waiting for, an attempt). Reads the clock
// only when set.
template <class Now>
bool too_little_time(const retry_controller& control, duration min_time, Now&& now,
                     duration wait = duration{0}) {
  if (min_time.count() <= 0 || !control.has_deadline() || control.deadline() == duration::max())
    return false;
  const duration left = control.deadline() - now();
  return left < min_time || left - min_time < wait;
}

// The bookkeeping both loops share: the result, the classifier's verdicts, the hooks.
template <class R, class Classify, class Hooks>
class loop_record {
 public:
  // Classify may be const (the options API) or not (the positional one). Hooks are called
  // through a const reference: a member that is not const would silently never be called.
  static_assert(
      !requires(std::remove_const_t<Hooks> & h) { h.on_attempt(attempt_event{}); } ||
          requires(const Hooks& h) { h.on_attempt(attempt_event{}); },
      "hooks: on_attempt must be a const member function");
  static_assert(
      !requires(std::remove_const_t<Hooks> & h) {
        h.on_retry(std::declval<const retry_event<R>&>());
      } || requires(const Hooks& h) { h.on_retry(std::declval<const retry_event<R>&>()); },
      "hooks: on_retry must be a const member function");
  static_assert(
      !requires(std::remove_const_t<Hooks> & h) { h.on_success(success_event{}); } ||
          requires(const Hooks& h) { h.on_success(success_event{}); },
      "hooks: on_success must be a const member function");
  static_assert(
      !requires(std::remove_const_t<Hooks> & h) { h.on_give_up(give_up_event{}); } ||
          requires(const Hooks& h) { h.on_give_up(give_up_event{}); },
      "hooks: on_give_up must be a const member function");

  loop_record(retry_result<R>& out, Classify& classify, const Hooks& hooks)
      : result(out), classify_(classify), hooks_(hooks) {}

  retry_result<R>& result;

  void attempt_started(const attempt_context& c) {
    if constexpr (requires { hooks_.on_attempt(attempt_event{}); })
      hooks_.on_attempt(attempt_event{c.attempt, c.timeout});
  }

  verdict returned(R&& value) {
    if constexpr (exception_aware<Classify>) result.error = nullptr;
    reason_ = retry_reason::failed;
    result.last.emplace(std::move(value));
    verdict v = classify_(*result.last);
    if (v.retry_after) reason_ = retry_reason::retry_after;
    return v;
  }

  // Inside a catch block: the verdict when the classifier retries the exception, else rethrows.
  verdict threw() {
    std::exception_ptr e = std::current_exception();
    if constexpr (exception_aware<Classify>) {
      if (const std::optional<verdict> v = classify_.on_exception(e)) {
        result.last.reset();
        result.error = std::move(e);
        reason_ = retry_reason::exception;
        return *v;
      }
    }
    std::rethrow_exception(e);
  }

  // Cut at its timeout: it may have reached the server (not not_sent), and a quota charges it
  // its timeout cost.
  verdict timed_out() {
    result.last.reset();
    result.error = nullptr;
    ++result.timed_out;
    reason_ = retry_reason::timed_out;
    verdict v = verdict::retryable();
    v.timeout = true;
    return v;
  }

  verdict deferred() {
    ++result.deferred;
    reason_ = retry_reason::deferred;
    return verdict::retryable();
  }

  void retrying(std::uint32_t attempt, duration delay, const verdict& v) {
    if constexpr (requires { hooks_.on_retry(std::declval<const retry_event<R>&>()); }) {
      const bool has_value =
          reason_ == retry_reason::failed || reason_ == retry_reason::retry_after;
      hooks_.on_retry(retry_event<R>{attempt, delay, v, has_value ? &*result.last : nullptr,
                                     reason_, result.error});
    }
  }

  void finish(outcome why, std::uint32_t attempts) {
    result.why = why;
    result.attempts = attempts;
    if (why == outcome::succeeded) {
      if constexpr (requires { hooks_.on_success(success_event{}); })
        hooks_.on_success(success_event{attempts, result.slept});
    } else {
      if constexpr (requires { hooks_.on_give_up(give_up_event{}); })
        hooks_.on_give_up(give_up_event{why, attempts, result.slept, result.error});
    }
  }

 private:
  Classify& classify_;
  const Hooks& hooks_;
  retry_reason reason_ = retry_reason::failed;
};

// The positional API's on_retry callable, as a hook.
template <class F>
struct on_retry_callable {
  F* f;
  template <class R>
  void on_retry(const retry_event<R>& e) const {
    (*f)(e);
  }
};

template <class F>
concept ignored_hook = std::same_as<std::decay_t<F>, no_retry_hook>;

// The sync loop. Both public forms call it with references, so neither copies the policy.
template <class Op, class Classify, class Hooks>
auto retry_loop(Op& op, const retry_policy& policy, Classify& classify, Hooks& hooks,
                retry_gates gates, duration attempt_timeout, duration min_attempt_time,
                const retry_env& env) {
  using R = stored_result_t<op_return_t<Op>>;
  retry_result<R> result;
  loop_record<R, Classify, Hooks> record(result, classify, hooks);
  random_ref rng = env.random;
  const auto now = [&] { return env.now(); };
  retry_controller control(policy, retry_controller::start_time(policy, gates, now), gates);
  const auto wait = [&](duration d) {
    if (!env.sleep(d, env.stop)) return false;  // cancelled: the time was not all spent
    result.slept += d;
    return true;
  };
  const auto loop = [&]() -> outcome {
    for (;;) {
      if (env.stop.stop_requested()) return outcome::cancelled;
      if (too_little_time(control, min_attempt_time, now)) return outcome::deadline_exceeded;
      auto s = control.begin_attempt(env.busy && env.busy(), now, rng);
      if (s.what == retry_controller::attempt_start::queue) {
        const bool entered = enter(*gates.limiter->as_bulkhead(), s.wait, env.sleep, env.stop);
        s = control.entered_queue(entered, now, rng);  // the controller now holds the slot
        if (env.stop.stop_requested()) return outcome::cancelled;
      }
      if (s.what == retry_controller::attempt_start::stop) return s.stop;
      verdict v;
      if (s.what == retry_controller::attempt_start::defer) {
        v = record.deferred();
      } else {
        if (s.wait.count() > 0 && !wait(s.wait)) return outcome::cancelled;
        const attempt_context context{control.attempts(),
                                      attempt_time(control, attempt_timeout, now)};
        record.attempt_started(context);
        const auto attempt = [&] {
          if constexpr (std::is_void_v<op_return_t<Op>>) {
            invoke_attempt(op, context);
            return record.returned(std::monostate{});
          } else {
            return record.returned(invoke_attempt(op, context));
          }
        };
        if constexpr (exception_aware<Classify>) {
          try {
            v = attempt();
          } catch (...) {
            v = record.threw();
          }
        } else {
          v = attempt();
        }
      }
      const auto d = control.end_attempt(s, v, now, rng);
      if (!d.retry) return d.stop;
      if (too_little_time(control, min_attempt_time, now, d.delay))
        return outcome::deadline_exceeded;
      record.retrying(control.attempts(), d.delay, v);
      if (!wait(d.delay)) return outcome::cancelled;
    }
  };
  const outcome why = loop();  // before reading the attempts it made
  record.finish(why, control.attempts());
  return result;
}

}  // namespace detail

// Runs `op` until the controller stops, as `options` say. `op` is callable as op(), op(attempt)
// (from 1) or op(attempt_context), and may return void. An exception from `op` propagates at
// once, unless the classifier retries it (retry_on<E...>). The env is the world: clock, sleep,
// randomness, stop token, carrier sense.
template <class Op, class Classify, class Hooks>
auto retry(Op&& op, const retry_options<Classify, Hooks>& options,
           const retry_env& env = system_env()) {
  return detail::retry_loop(op, options.policy, options.classify, options.hooks, options.gates,
                            options.attempt_timeout, options.min_attempt_time, env);
}

// The same with the default classifier and no hooks: retry(op, {.policy = p}).
template <class Op>
auto retry(Op&& op, const retry_options<>& options, const retry_env& env = system_env()) {
  return retry<Op, default_classifier, no_hooks>(std::forward<Op>(op), options, env);
}

// The positional form (kept for existing callers): retry_options says the same by name.
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto retry(Op&& op, const retry_policy& policy, Classify&& classify = {},
           const retry_env& env = system_env(), OnRetry&& on_retry = {}, retry_gates gates = {}) {
  if constexpr (detail::ignored_hook<OnRetry>) {
    const no_hooks hooks;
    return detail::retry_loop(op, policy, classify, hooks, gates, duration{0}, duration{0}, env);
  } else {
    const detail::on_retry_callable<std::remove_reference_t<OnRetry>> hooks{&on_retry};
    return detail::retry_loop(op, policy, classify, hooks, gates, duration{0}, duration{0}, env);
  }
}

}  // namespace backoff
