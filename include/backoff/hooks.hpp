// SPDX-License-Identifier: Apache-2.0
// Hooks: what a retry loop tells the outside world as it runs, for logs, metrics and traces.
// A hooks type has any of these members; the loop calls those it has and compiles the others
// away, so a loop without hooks (no_hooks) costs nothing for them.
//
//   struct log_hooks {
//     void on_attempt(const backoff::attempt_event& e) const;            // before each attempt
//     template <class R>
//     void on_retry(const backoff::retry_event<R>& e) const;             // before each wait
//     void on_success(const backoff::success_event& e) const;            // the loop succeeded
//     void on_give_up(const backoff::give_up_event& e) const;            // it ended otherwise
//   };
//
// Call sequence of one loop: for each attempt, on_attempt, then (when it will be retried)
// on_retry; at the end exactly one of on_success or on_give_up. An attempt that carrier sense
// deferred gets on_retry with reason `deferred` and no on_attempt. Hooks are called on the
// thread running the loop, through a const reference: keep counters behind a pointer (as
// metrics_hooks does); a member that is not const is a compile error rather than a hook that is
// silently never called. A hook that throws ends the loop with that exception.
//
// metrics_hooks counts into a retry_metrics (atomic, shared by any number of loops and
// threads), which to_prometheus_text() renders in Prometheus' text format; counter_hooks does
// the same into counters of a metrics library (prometheus-cpp's Counter, or anything with
// Increment() or ++); hook_list{a, b} calls several. A circuit breaker's transitions reach the
// same retry_metrics through its listener: circuit_breaker b{config, count_transitions(&m)}.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "backoff/circuit_breaker.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/outcome.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

// Why an attempt is followed by a retry.
enum class retry_reason : std::uint8_t {
  failed,       // the classifier said retryable
  retry_after,  // ... and the server gave a Retry-After, which the wait honours
  deferred,     // carrier sense said busy: nothing was sent
  timed_out,    // the attempt ran out of its per-attempt time and was cancelled
  exception,    // the attempt threw an exception the classifier retries (error holds it)
};

BACKOFF_EXPORT std::string_view to_string(retry_reason r) noexcept;

struct attempt_event {
  std::uint32_t attempt;  // from 1
  duration timeout;       // the attempt's time: min(per-attempt timeout, time left); 0: none
};

template <class R>
struct retry_event {
  std::uint32_t attempt;  // the attempt that just failed, from 1
  duration delay;         // the wait before the next one
  verdict why;            // its classification
  const R* result;        // its result; nullptr when it has none (deferred, timed out, threw)
  retry_reason reason = retry_reason::failed;
  std::exception_ptr error{};  // the exception, when reason is `exception`
};

struct success_event {
  std::uint32_t attempts;  // attempts started, the successful one included
  duration slept;          // time spent waiting between them
};

struct give_up_event {
  outcome why;
  std::uint32_t attempts;
  duration slept;
  std::exception_ptr error{};  // the last attempt's exception, when it threw one
};

struct no_hooks {};

// Counters for any number of loops; every member is atomic (relaxed: these are statistics).
struct retry_metrics {
  std::atomic<std::uint64_t> attempts{0};         // attempts started (deferred ones too)
  std::atomic<std::uint64_t> retries{0};          // waits before another attempt
  std::atomic<std::uint64_t> timeouts{0};         // attempts cancelled at their timeout
  std::atomic<std::uint64_t> exceptions{0};       // attempts that threw a retried exception
  std::atomic<std::int64_t> wait_nanoseconds{0};  // the waits' total
  std::array<std::atomic<std::uint64_t>, outcome_count> loops{};  // ended loops, by outcome
  // Circuit breaker transitions, by the state entered (count_transitions).
  std::array<std::atomic<std::uint64_t>, breaker_state_count> breaker_transitions{};
};

// A circuit breaker listener that counts its transitions into `m` (which must outlive the
// breaker): circuit_breaker breaker{config, count_transitions(&metrics)}.
inline breaker_listener count_transitions(retry_metrics* m) {
  return [m](const breaker_transition& t) noexcept {
    m->breaker_transitions[static_cast<std::size_t>(t.to)].fetch_add(1, std::memory_order_relaxed);
  };
}

// The counters in Prometheus' text exposition format (version 0.0.4): `<prefix>_attempts_total`,
// `_retries_total`, `_attempt_timeouts_total`, `_attempt_exceptions_total`,
// `_retry_wait_seconds_total`, `_loops_total{outcome="..."}` and
// `_breaker_transitions_total{to="closed|open|half_open|forced_open|disabled|metrics_only"}`,
// each with HELP and TYPE. Throws std::invalid_argument when `prefix` is not a Prometheus
// metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
BACKOFF_EXPORT std::string to_prometheus_text(const retry_metrics& m,
                                              std::string_view prefix = "backoff");

struct metrics_hooks {
  retry_metrics* metrics;

  void on_attempt(const attempt_event&) const noexcept {
    metrics->attempts.fetch_add(1, std::memory_order_relaxed);
  }
  template <class R>
  void on_retry(const retry_event<R>& e) const noexcept {
    // A deferred attempt was counted without an on_attempt: count it here.
    if (e.reason == retry_reason::deferred) {
      metrics->attempts.fetch_add(1, std::memory_order_relaxed);
    } else if (e.reason == retry_reason::timed_out) {
      metrics->timeouts.fetch_add(1, std::memory_order_relaxed);
    } else if (e.reason == retry_reason::exception) {
      metrics->exceptions.fetch_add(1, std::memory_order_relaxed);
    }
    metrics->retries.fetch_add(1, std::memory_order_relaxed);
    metrics->wait_nanoseconds.fetch_add(e.delay.count(), std::memory_order_relaxed);
  }
  void on_success(const success_event&) const noexcept { count(outcome::succeeded); }
  void on_give_up(const give_up_event& e) const noexcept { count(e.why); }

 private:
  void count(outcome o) const noexcept {
    metrics->loops[static_cast<std::size_t>(o)].fetch_add(1, std::memory_order_relaxed);
  }
};

namespace detail {
template <class Counter>
void increment(Counter* c) {
  if (c == nullptr) return;
  if constexpr (requires { c->Increment(); }) {
    c->Increment();
  } else {
    ++*c;
  }
}
}  // namespace detail

// Counts into a metrics library's counters; a null pointer is not counted. With prometheus-cpp:
//   auto& family = prometheus::BuildCounter().Name("rpc_retry_loops_total").Register(registry);
//   backoff::counter_hooks<prometheus::Counter> hooks{.attempts = &attempts_counter, ...};
//   hooks.loops[static_cast<size_t>(backoff::outcome::succeeded)] =
//       &family.Add({{"outcome", "succeeded"}});
template <class Counter>
struct counter_hooks {
  Counter* attempts = nullptr;
  Counter* retries = nullptr;
  std::array<Counter*, outcome_count> loops{};  // by outcome

  void on_attempt(const attempt_event&) const { detail::increment(attempts); }
  template <class R>
  void on_retry(const retry_event<R>& e) const {
    if (e.reason == retry_reason::deferred) detail::increment(attempts);
    detail::increment(retries);
  }
  void on_success(const success_event&) const {
    detail::increment(loops[static_cast<std::size_t>(outcome::succeeded)]);
  }
  void on_give_up(const give_up_event& e) const {
    detail::increment(loops[static_cast<std::size_t>(e.why)]);
  }
};

// Several hooks, called in the order given.
template <class... Hooks>
struct hook_list {
  std::tuple<Hooks...> hooks;

  explicit hook_list(Hooks... h) : hooks(std::move(h)...) {}

  void on_attempt(const attempt_event& e) const {
    std::apply([&](const auto&... h) { (call_attempt(h, e), ...); }, hooks);
  }
  template <class R>
  void on_retry(const retry_event<R>& e) const {
    std::apply([&](const auto&... h) { (call_retry(h, e), ...); }, hooks);
  }
  void on_success(const success_event& e) const {
    std::apply([&](const auto&... h) { (call_success(h, e), ...); }, hooks);
  }
  void on_give_up(const give_up_event& e) const {
    std::apply([&](const auto&... h) { (call_give_up(h, e), ...); }, hooks);
  }

 private:
  template <class H>
  static void call_attempt(const H& h, const attempt_event& e) {
    if constexpr (requires { h.on_attempt(e); }) h.on_attempt(e);
  }
  template <class H, class R>
  static void call_retry(const H& h, const retry_event<R>& e) {
    if constexpr (requires { h.on_retry(e); }) h.on_retry(e);
  }
  template <class H>
  static void call_success(const H& h, const success_event& e) {
    if constexpr (requires { h.on_success(e); }) h.on_success(e);
  }
  template <class H>
  static void call_give_up(const H& h, const give_up_event& e) {
    if constexpr (requires { h.on_give_up(e); }) h.on_give_up(e);
  }
};

template <class... Hooks>
hook_list(Hooks...) -> hook_list<Hooks...>;

}  // namespace backoff
