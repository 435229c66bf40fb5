// SPDX-License-Identifier: Apache-2.0
// The retry loop for Boost.Asio C++20 coroutines: the same decisions as backoff::retry (both are
// driven by retry_controller), but the wait is an Asio timer, so a thread serves thousands of
// retrying operations at once.
//
//   asio::awaitable<void> fetch(backoff::retry_policy policy) {
//     auto result = co_await backoff::async_retry(
//         [&]() -> asio::awaitable<reply> { co_return co_await http_get_async(url); },
//         backoff::retry_options{
//             .policy = policy,
//             .classify = [](const reply& r) {
//               return backoff::classify_http_status(r.status, r.retry_after);
//             },
//             .attempt_timeout = 2s});  // each attempt cancelled after min(2 s, time left)
//     if (!result) log(backoff::to_string(result.why));
//   }
//
// Cancellation: the loop stops with outcome::cancelled when the coroutine's cancellation slot
// fires (asio::bind_cancellation_slot on co_spawn, or an awaitable operator||), or when the
// env's std::stop_token is triggered; either wakes a pending wait at once. An exception from the
// operation propagates, as in the sync loop. Deadlines and Retry-After behave as in retry.hpp.
//
// Link backoff::asio (it adds Boost.Asio's headers to backoff::backoff). The timer wait is
// compiled once in the library (async_sleep), so including this header stays cheap.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include "backoff/asio_export.hpp"
#include "backoff/retry.hpp"

// GCC warns, wrongly, that Asio's coroutine frames are freed by a mismatched operator delete
// once it inlines them into this loop (GCC bug 109224: coroutines with a class-specific
// operator new); the frames are Asio's own, allocated and freed by its recycling allocator.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace backoff {

// Waits d on the current coroutine's executor with a steady_timer. co_returns false when the wait
// was cut short by the coroutine's cancellation slot or by `stop`.
BACKOFF_ASIO_EXPORT boost::asio::awaitable<bool> async_sleep(duration d, std::stop_token stop);

// The world of the async loop; every member has a real-world default.
struct async_retry_env {
  std::function<duration()> now = detail::steady_now;
  // Waits d; false when cancelled. Tests replace it with one that records and returns at once.
  std::function<boost::asio::awaitable<bool>(duration, std::stop_token)> sleep = async_sleep;
  random_ref random = detail::per_thread_random;  // this thread's generator, at each draw
  std::stop_token stop;
  std::function<bool()> busy;  // carrier sense, as in retry_env
  // > 0: the first backoff grows from this delay (backoff_state::continue_from; only grow=previous
  // schedules use it). Seed 004's Go client does this with the think time it waited.
  duration continue_from{0};
};

namespace detail {

template <class A>
struct awaitable_value;
template <class T, class Executor>
struct awaitable_value<boost::asio::awaitable<T, Executor>> {
  using type = T;
};

inline boost::asio::awaitable<bool> coroutine_cancelled() {
  const auto state = co_await boost::asio::this_coro::cancellation_state;
  co_return state.cancelled() != boost::asio::cancellation_type::none;
}

template <class Op>
using async_result_t = stored_result_t<typename awaitable_value<op_return_t<Op>>::type>;

// The positional API's on_retry callable, owned (a coroutine outlives its caller's arguments).
template <class F>
struct owned_on_retry {
  mutable F f;
  template <class R>
  void on_retry(const retry_event<R>& e) const {
    f(e);
  }
};

}  // namespace detail

// `op` is callable as op(), op(attempt) or op(attempt_context) and returns asio::awaitable<R>
// (R may be void). Arguments are taken by value: a coroutine must not hold references to its
// caller's temporaries. The gates' budget, throttle and breaker, when given, must outlive the
// call.
//
// With options.attempt_timeout, each attempt runs against a timer of min(attempt_timeout, time
// left before the deadline of policy.max_elapsed): when the timer wins, the attempt is cancelled
// through its cancellation slot (Asio operations inside it end with operation_aborted), counted
// in result.timed_out and retried. The operation must honour cancellation for this to end it
// early; Asio's own operations do.
template <class Op, class Classify, class Hooks>
auto async_retry(Op op, retry_options<Classify, Hooks> options, async_retry_env env = {})
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  using R = detail::async_result_t<Op>;
  // Cancellation is an outcome here, not an exception: without this, a cancellation that arrives
  // during an attempt would make the loop's next co_await throw.
  co_await boost::asio::this_coro::throw_if_cancelled(false);
  retry_result<R> result;
  detail::loop_record<R, Classify, Hooks> record(result, options.classify, options.hooks);
  random_ref rng = env.random;
  const auto now = [&] { return env.now(); };
  retry_controller control(options.policy,
                           retry_controller::start_time(options.policy, options.gates, now),
                           options.gates);
  if (env.continue_from.count() > 0) control.continue_from(env.continue_from);
  const auto done = [&](outcome why) {
    record.finish(why, control.attempts());
    return std::move(result);
  };
  for (;;) {
    if (env.stop.stop_requested() || co_await detail::coroutine_cancelled())
      co_return done(outcome::cancelled);
    if (detail::too_little_time(control, options.min_attempt_time, now))
      co_return done(outcome::deadline_exceeded);
    const auto s = control.begin_attempt(env.busy && env.busy(), now, rng);
    if (s.what == retry_controller::attempt_start::stop) co_return done(s.stop);
    verdict v;
    if (s.what == retry_controller::attempt_start::defer) {
      v = record.deferred();
    } else {
      if (s.wait.count() > 0) {
        if (!co_await env.sleep(s.wait, env.stop)) co_return done(outcome::cancelled);
        result.slept += s.wait;
      }
      const attempt_context context{control.attempts(),
                                    detail::attempt_time(control, options.attempt_timeout, now)};
      record.attempt_started(context);
      bool cut_short = false;  // the timer's wait ended early: stop or cancellation
      const auto attempt = [&]() -> boost::asio::awaitable<verdict> {
        if (context.timeout.count() <= 0) {
          if constexpr (std::is_void_v<
                            typename detail::awaitable_value<detail::op_return_t<Op>>::type>) {
            co_await detail::invoke_attempt(op, context);
            co_return record.returned(std::monostate{});
          } else {
            co_return record.returned(co_await detail::invoke_attempt(op, context));
          }
        }
        using namespace boost::asio::experimental::awaitable_operators;
        auto raced =
            co_await (detail::invoke_attempt(op, context) || env.sleep(context.timeout, env.stop));
        if (raced.index() == 0) co_return record.returned(std::move(std::get<0>(raced)));
        if (std::get<1>(raced)) co_return record.timed_out();
        cut_short = true;
        co_return verdict::retryable();
      };
      if constexpr (exception_aware<Classify>) {
        try {
          v = co_await attempt();
        } catch (...) {
          v = record.threw();  // rethrows what the classifier does not retry
        }
      } else {
        v = co_await attempt();
      }
      if (cut_short) co_return done(outcome::cancelled);
    }
    const auto d = control.end_attempt(s, v, now, rng);
    if (!d.retry) co_return done(d.stop);
    if (detail::too_little_time(control, options.min_attempt_time, now, d.delay))
      co_return done(outcome::deadline_exceeded);
    record.retrying(control.attempts(), d.delay, v);
    if (!co_await env.sleep(d.delay, env.stop)) co_return done(outcome::cancelled);
    result.slept += d.delay;
  }
}

// The positional form (kept for existing callers): retry_options says the same by name.
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto async_retry(Op op, retry_policy policy, Classify classify = {}, async_retry_env env = {},
                 OnRetry on_retry = {}, retry_gates gates = {}) {
  if constexpr (detail::ignored_hook<OnRetry>) {
    return async_retry(std::move(op),
                       retry_options<Classify, no_hooks>{policy, std::move(classify), {}, gates},
                       std::move(env));
  } else {
    using H = detail::owned_on_retry<OnRetry>;
    return async_retry(
        std::move(op),
        retry_options<Classify, H>{policy, std::move(classify), H{std::move(on_retry)}, gates},
        std::move(env));
  }
}

}  // namespace backoff

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
