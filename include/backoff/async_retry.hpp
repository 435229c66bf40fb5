// SPDX-License-Identifier: Apache-2.0
// The retry loop for Boost.Asio C++20 coroutines: the same decisions as backoff::retry (both are
// driven by retry_controller), but the wait is an Asio timer, so a thread serves thousands of
// retrying operations at once.
//
//   asio::awaitable<void> fetch(backoff::retry_policy policy) {
//     auto options = backoff::retry_options{
//         .policy = policy,
//         .classify = [](const reply& r) {
//           return backoff::classify_http_status(r.status, r.retry_after);
//         },
//         .attempt_timeout = 2s};  // each attempt cancelled after min(2 s, time left)
//     auto result = co_await backoff::async_retry(
//         [&]() -> asio::awaitable<reply> { co_return co_await http_get_async(url); },
//         std::move(options));
//     if (!result) log(backoff::to_string(result.why));
//   }
//
// Cancellation: the loop stops with outcome::cancelled when the coroutine's cancellation slot
// fires (asio::bind_cancellation_slot on co_spawn, or an awaitable operator||), or when the
// env's std::stop_token is triggered; either wakes a pending wait at once. An exception from the
// operation propagates, as in the sync loop. Deadlines, Retry-After, pushback, idempotency and
// budgets behave as in retry.hpp: the same retry_controller decides. An attempt this loop cuts
// at its attempt_timeout is a retryable failure with verdict.timeout set (a retry quota charges
// its timeout cost) and without not_sent (it may have reached the server, so a call that is not
// idempotent is not retried: outcome::not_idempotent).
//
// Link backoff::asio (it adds Boost.Asio's headers to backoff::backoff). The timer wait is
// compiled once in the library (async_sleep), so including this header stays cheap.
//
// ---- GCC before 13 and the temporaries of a co_await ------------------------------------------
// This is the one place async_hedge.hpp, async_window.hpp and src/asio/ point to.
//
// What the compiler does. GCC 11 and 12 (checked with Debian 12's 12.2, at -O0 and -O2; GCC
// bugs 100611 and 99576, reported fixed in GCC 13) mis-compile a temporary built by aggregate
// initialisation inside a co_await expression when one of its members has a destructor: a
// braced `retry_options{...}` or `hedge_options{...}` holding a classifier, hooks, a
// std::function or a hedge_policy (its non_fatal vector), and any lambda that captures such a
// thing by value (a std::string, a std::vector...). The member is built in a slot of the
// calling coroutine's frame and copied bit for bit into the aggregate, and both are destroyed:
// what it owns is freed twice ("free(): double free", or a use after free). A default argument
// of such a type is one of those temporaries too. All of this happens in the caller's own
// coroutine, before any function of this library runs, so no signature here can prevent it
// (tests/asio/async_temporaries_test.cpp says what was tried). With those compilers, build the
// options, and any lambda that captures by value, in a statement of their own, and move them
// into the call, as the example above does; a temporary returned by a function call (a factory
// that returns the options) is safe, and so is a call made outside the co_await:
//
//   auto call = backoff::async_retry(op, backoff::retry_options{...});  // no co_await here
//   auto result = co_await std::move(call);
//
// The rule every async API of this library follows (those added later too), so that the library
// itself never builds such a temporary in a caller's co_await, nor in its own coroutines:
//   1. Every async API is a plain function that takes its arguments by value and moves them into
//      a coroutine, which takes them by value too (detail::async_retry_loop here): the coroutine
//      frame owns moved copies, never references to a caller's temporaries.
//   2. No default argument of a type with a destructor (async_retry_env, a hook, a
//      hedge_policy): an overload without that argument builds the default inside the plain
//      function, which is no coroutine. The one default left, retry_gates, is trivially
//      destructible (checked below).
//   3. Inside the library's own coroutines, an aggregate or a lambda that owns anything is named
//      in a statement of its own before it is passed to a co_awaited call, never built inside
//      the co_await expression (async_window.hpp's windowed async_retry did, and freed a hook
//      twice).
// tests/asio/async_temporaries_test.cpp calls every async API with heap-owning operations,
// classifiers, hooks and environments and checks, under ASan and with a ledger of object
// lifetimes, that nothing is destroyed twice or never built; a new async API gets a case there.
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
#include "backoff/async_bulkhead.hpp"
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
  // schedules use it). smira's Go client (2016) does this with the think time it waited.
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

// The loop itself: the coroutine behind every async_retry form (the rule above: it owns its
// arguments, moved into its frame by the plain functions below).
template <class Op, class Classify, class Hooks>
auto async_retry_loop(Op op, retry_options<Classify, Hooks> options, async_retry_env env)
    -> boost::asio::awaitable<retry_result<async_result_t<Op>>> {
  using R = async_result_t<Op>;
  // Cancellation is an outcome here, not an exception: without this, a cancellation that arrives
  // during an attempt would make the loop's next co_await throw.
  co_await boost::asio::this_coro::throw_if_cancelled(false);
  retry_result<R> result;
  loop_record<R, Classify, Hooks> record(result, options.classify, options.hooks);
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
    if (env.stop.stop_requested() || co_await coroutine_cancelled())
      co_return done(outcome::cancelled);
    if (too_little_time(control, options.min_attempt_time, now))
      co_return done(outcome::deadline_exceeded);
    auto s = control.begin_attempt(env.busy && env.busy(), now, rng);
    if (s.what == retry_controller::attempt_start::queue) {
      // A named call, awaited in a statement of its own (the rule above).
      auto in_line = async_enter(*options.gates.limiter->as_bulkhead(), s.wait, env.stop);
      const bool entered = co_await std::move(in_line);
      s = control.entered_queue(entered, now, rng);  // the controller now holds the slot
      if (env.stop.stop_requested() || co_await coroutine_cancelled())
        co_return done(outcome::cancelled);
    }
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
                                    attempt_time(control, options.attempt_timeout, now)};
      record.attempt_started(context);
      bool cut_short = false;  // the timer's wait ended early: stop or cancellation
      const auto attempt = [&]() -> boost::asio::awaitable<verdict> {
        if (context.timeout.count() <= 0) {
          if constexpr (std::is_void_v<typename awaitable_value<op_return_t<Op>>::type>) {
            co_await invoke_attempt(op, context);
            co_return record.returned(std::monostate{});
          } else {
            co_return record.returned(co_await invoke_attempt(op, context));
          }
        }
        using namespace boost::asio::experimental::awaitable_operators;
        auto raced = co_await (invoke_attempt(op, context) || env.sleep(context.timeout, env.stop));
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
    if (too_little_time(control, options.min_attempt_time, now, d.delay))
      co_return done(outcome::deadline_exceeded);
    record.retrying(control.attempts(), d.delay, v);
    if (!co_await env.sleep(d.delay, env.stop)) co_return done(outcome::cancelled);
    result.slept += d.delay;
  }
}

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
auto async_retry(Op op, retry_options<Classify, Hooks> options, async_retry_env env)
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  return detail::async_retry_loop(std::move(op), std::move(options), std::move(env));
}

// The same in the real world (async_retry_env's defaults: steady clock, async_sleep).
template <class Op, class Classify, class Hooks>
auto async_retry(Op op, retry_options<Classify, Hooks> options)
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  return detail::async_retry_loop(std::move(op), std::move(options), async_retry_env{});
}

// The positional form (kept for existing callers): retry_options says the same by name. The
// shorter overloads stand for what were default arguments (rule 2 above).
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto async_retry(Op op, retry_policy policy, Classify classify, async_retry_env env,
                 OnRetry on_retry, retry_gates gates = {})
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  if constexpr (detail::ignored_hook<OnRetry>) {
    return detail::async_retry_loop(
        std::move(op), retry_options<Classify, no_hooks>{policy, std::move(classify), {}, gates},
        std::move(env));
  } else {
    using H = detail::owned_on_retry<OnRetry>;
    return detail::async_retry_loop(
        std::move(op),
        retry_options<Classify, H>{policy, std::move(classify), H{std::move(on_retry)}, gates},
        std::move(env));
  }
}

template <class Op, class Classify = default_classifier>
auto async_retry(Op op, retry_policy policy, Classify classify, async_retry_env env)
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  return async_retry(std::move(op), policy, std::move(classify), std::move(env), no_retry_hook{});
}

template <class Op, class Classify = default_classifier>
auto async_retry(Op op, retry_policy policy, Classify classify)
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  return async_retry(std::move(op), policy, std::move(classify), async_retry_env{},
                     no_retry_hook{});
}

template <class Op>
auto async_retry(Op op, retry_policy policy)
    -> boost::asio::awaitable<retry_result<detail::async_result_t<Op>>> {
  return async_retry(std::move(op), policy, default_classifier{}, async_retry_env{},
                     no_retry_hook{});
}

// Rule 2: the one default argument left (here and in async_window.hpp) is of a type whose
// copies, made bit for bit and destroyed twice, free nothing twice.
static_assert(std::is_trivially_destructible_v<retry_gates>);

}  // namespace backoff

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
