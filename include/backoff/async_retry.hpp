// SPDX-License-Identifier: Apache-2.0
// The retry loop for Boost.Asio C++20 coroutines: the same decisions as backoff::retry (both are
// driven by retry_controller), but the wait is an Asio timer, so a thread serves thousands of
// retrying operations at once.
//
//   asio::awaitable<void> fetch(backoff::retry_policy policy) {
//     auto result = co_await backoff::async_retry(
//         [&]() -> asio::awaitable<reply> { co_return co_await http_get_async(url); },
//         policy,
//         [](const reply& r) { return backoff::classify_http_status(r.status, r.retry_after); });
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
#include <boost/asio/this_coro.hpp>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "backoff/retry.hpp"

namespace backoff {

// Waits d on the current coroutine's executor with a steady_timer. co_returns false when the wait
// was cut short by the coroutine's cancellation slot or by `stop`.
boost::asio::awaitable<bool> async_sleep(duration d, std::stop_token stop);

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

template <class Op>
constexpr bool takes_attempt_v = std::is_invocable_v<Op&, std::uint32_t>;

template <class Op>
using async_op_awaitable_t =
    typename std::conditional_t<takes_attempt_v<Op>, std::invoke_result<Op&, std::uint32_t>,
                                std::invoke_result<Op&>>::type;

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

}  // namespace detail

// `op` is callable as op() or op(attempt) and returns asio::awaitable<R>. Arguments are taken by
// value: a coroutine must not hold references to its caller's temporaries. The gates' budget and
// throttle, when given, must outlive the call.
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto async_retry(Op op, retry_policy policy, Classify classify = {}, async_retry_env env = {},
                 OnRetry on_retry = {}, retry_gates gates = {})
    -> boost::asio::awaitable<retry_result<
        std::decay_t<typename detail::awaitable_value<detail::async_op_awaitable_t<Op>>::type>>> {
  using R = std::decay_t<typename detail::awaitable_value<detail::async_op_awaitable_t<Op>>::type>;
  // Cancellation is an outcome here, not an exception: without this, a cancellation that arrives
  // during an attempt would make the loop's next co_await throw.
  co_await boost::asio::this_coro::throw_if_cancelled(false);
  retry_result<R> result;
  random_ref rng = env.random;
  const auto now = [&] { return env.now(); };
  retry_controller control(policy, retry_controller::start_time(policy, gates, now), gates);
  if (env.continue_from.count() > 0) control.continue_from(env.continue_from);
  for (;;) {
    if (env.stop.stop_requested() || co_await detail::coroutine_cancelled()) {
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
      if (s.wait.count() > 0) {
        if (!co_await env.sleep(s.wait, env.stop)) {
          result.why = outcome::cancelled;
          break;
        }
        result.slept += s.wait;
      }
      if constexpr (detail::takes_attempt_v<Op>) {
        result.last.emplace(co_await op(control.attempts()));
      } else {
        result.last.emplace(co_await op());
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
    if (!co_await env.sleep(d.delay, env.stop)) {
      result.why = outcome::cancelled;
      break;
    }
    result.slept += d.delay;
  }
  result.attempts = control.attempts();
  co_return result;
}

}  // namespace backoff
