// SPDX-License-Identifier: Apache-2.0
// Hedging for Boost.Asio C++20 coroutines (hedge.hpp says what hedging is and what ends it): each
// copy of the call runs as its own coroutine with its own cancellation signal, so the losers are
// really cancelled when a copy wins, and async_hedge returns only once every copy has ended.
//
//   asio::awaitable<void> fetch(backoff::hedge_policy policy) {
//     auto options = backoff::hedge_options{
//         .policy = policy,                     // hedge(max_attempts=3, delay=50ms, ...)
//         .classify = [policy](const reply& r) {
//           return policy.classify_status(r.status, r.retry_after);
//         }};
//     auto result = co_await backoff::async_hedge(
//         [&]() -> asio::awaitable<reply> { co_return co_await http_get_async(url); },
//         std::move(options));
//     if (!result) log(backoff::to_string(result.why));
//   }
//
// The options are built in a statement of their own, not inside the co_await: GCC 11 and 12
// free a hedge_policy or a capture held by a braced temporary there twice (async_retry.hpp,
// "GCC before 13", which also states the rule this header's async_hedge follows).
//
// The operation is called as op(), op(attempt) or op(attempt_context) (attempt from 1; the
// context's timeout is the time left before max_elapsed, 0 without one) and returns
// asio::awaitable<R>. It must honour cancellation for a loser to end early (Asio's own operations
// do); one that ignores it delays async_hedge's return until it ends, since no copy may outlive
// the call that refers to `op`. A loser's result, and its exception, are dropped.
//
// Cancellation: the caller's cancellation slot (asio::bind_cancellation_slot on co_spawn, or an
// awaitable operator||) or the env's stop token cancels every copy and ends with
// outcome::cancelled. An exception from a copy goes to the classifier (retry_on<E...>: a
// non-fatal answer); any other cancels the remaining copies, waits for them, and propagates.
//
// The hedging delay is waited with env.sleep and time read with env.now (async_retry_env), so a
// test may run on a manual clock. The copies run on the caller's executor and share state
// without locks: on an io_context run by several threads, run the caller on a strand
// (co_spawn(asio::make_strand(io), ...)). No sync form: hedge.hpp says why.
#pragma once

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "backoff/async_retry.hpp"
#include "backoff/hedge.hpp"

namespace backoff {

// Everything async_hedge is told, by name (new members arrive with defaults).
template <class Classify = default_classifier>
struct hedge_options {
  hedge_policy policy;      // max_attempts, delay, non_fatal (the classifier applies non_fatal)
  Classify classify{};      // success, non-fatal (retryable) or fatal (permanent): classify.hpp
  retry_gates gates{};      // every copy after the first is charged as a retry: hedge.hpp
  duration max_elapsed{0};  // > 0: the whole call ends then, copies in flight or not
};

template <class R>
struct hedge_result {
  outcome why = outcome::succeeded;
  std::uint32_t attempts = 0;   // copies sent
  std::uint32_t answered = 0;   // copies whose answer counted (before the end)
  std::uint32_t cancelled = 0;  // copies in flight at the end, cancelled
  std::uint32_t winner = 0;     // the copy whose success or fatal answer ended it; 0: none
  hedge_stop stopped = hedge_stop::none;  // why no more copies were sent
  bool pushed_back = false;               // an answer carried retry_after
  std::optional<R> last;     // the answer that ended the call, else the last one counted;
                             // empty when that copy threw
  std::exception_ptr error;  // that copy's exception, when the classifier retries it

  explicit operator bool() const noexcept { return why == outcome::succeeded; }
};

namespace detail {

template <class R>
struct hedge_copy {
  boost::asio::cancellation_signal cancel;
  std::optional<R> value;
  std::exception_ptr error;
  bool running = false;
  bool cancelled = false;
};

// The copies of one hedged call: launched as coroutines of their own, collected in the order they
// end, cancelled and awaited together. Lives in async_hedge's frame, which outlives every copy.
template <class Op, class R>
class hedge_flight {
 public:
  hedge_flight(Op& op, const async_retry_env& env, boost::asio::any_io_executor executor)
      : op_(op),
        env_(env),
        executor_(std::move(executor)),
        wake_(std::make_shared<boost::asio::steady_timer>(
            executor_, boost::asio::steady_timer::time_point::max())) {
    // A stop request may come from any thread, and after the call: the wake-up is posted and
    // finds the timer gone then.
    if (env_.stop.stop_possible()) {
      on_stop_.emplace(env_.stop,
                       std::function<void()>([weak = std::weak_ptr(wake_), ex = executor_] {
                         boost::asio::post(ex, [weak] {
                           if (auto t = weak.lock()) t->cancel();
                         });
                       }));
    }
  }
  hedge_flight(const hedge_flight&) = delete;
  hedge_flight& operator=(const hedge_flight&) = delete;

  void launch(const attempt_context& c, duration pace) {
    hedge_copy<R>& copy = copies_[c.attempt - 1];
    copy.running = true;
    ++running_;
    boost::asio::co_spawn(executor_, run_copy(this, c, pace),
                          boost::asio::bind_cancellation_slot(
                              copy.cancel.slot(), [this, n = c.attempt](std::exception_ptr e) {
                                finished(n, std::move(e));
                              }));
  }

  // The next copy that ended and was not collected yet.
  std::optional<std::uint32_t> next_ended() noexcept {
    if (collected_ == ended_count_) return std::nullopt;
    return ended_[collected_++];
  }

  hedge_copy<R>& copy(std::uint32_t attempt) noexcept { return copies_[attempt - 1]; }

  // Until a copy ends, or `d` passes (duration::max(): no time limit), or the caller cancels.
  boost::asio::awaitable<void> wait(duration d) {
    using namespace boost::asio::experimental::awaitable_operators;
    if (d == duration::max()) {
      co_await wait_for_copy(*wake_);
    } else {
      (void)co_await (wait_for_copy(*wake_) || env_.sleep(d, env_.stop));
    }
  }

  void cancel_all() {
    for (hedge_copy<R>& copy : copies_) {
      if (copy.running && !copy.cancelled) {
        copy.cancelled = true;
        copy.cancel.emit(boost::asio::cancellation_type::all);
      }
    }
  }

  // Until every copy has ended, deaf to the caller's cancellation: this is what keeps a copy
  // from outliving the call.
  boost::asio::awaitable<void> drain() {
    while (running_ > 0) {
      (void)co_await wake_->async_wait(boost::asio::bind_cancellation_slot(
          boost::asio::cancellation_slot(), boost::asio::as_tuple(boost::asio::use_awaitable)));
    }
  }

 private:
  static boost::asio::awaitable<void> wait_for_copy(boost::asio::steady_timer& wake) {
    (void)co_await wake.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }

  // A named coroutine holding its state by pointer (GCC 12: no capturing lambda beside co_await).
  static boost::asio::awaitable<void> run_copy(hedge_flight* self, attempt_context c,
                                               duration pace) {
    // Cut short by the stop token: nothing sent, no value and no error.
    if (pace.count() > 0 && !co_await self->env_.sleep(pace, self->env_.stop)) co_return;
    hedge_copy<R>& copy = self->copies_[c.attempt - 1];
    if constexpr (std::is_void_v<typename awaitable_value<op_return_t<Op>>::type>) {
      co_await invoke_attempt(self->op_, c);
      copy.value.emplace();
    } else {
      copy.value.emplace(co_await invoke_attempt(self->op_, c));
    }
  }

  void finished(std::uint32_t attempt, std::exception_ptr e) {
    hedge_copy<R>& copy = copies_[attempt - 1];
    copy.error = std::move(e);
    copy.running = false;
    --running_;
    ended_[ended_count_++] = attempt;
    wake_->cancel();
  }

  Op& op_;
  const async_retry_env& env_;
  boost::asio::any_io_executor executor_;
  std::shared_ptr<boost::asio::steady_timer> wake_;  // cancelled to wake the call's loop
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  std::array<hedge_copy<R>, hedge_policy::max_attempts_limit> copies_;
  std::array<std::uint32_t, hedge_policy::max_attempts_limit> ended_{};
  std::uint32_t ended_count_ = 0;
  std::uint32_t collected_ = 0;
  std::uint32_t running_ = 0;
};

// The hedged call itself, behind both async_hedge forms (async_retry.hpp's rule: it owns its
// arguments, moved into its frame by the plain functions below).
template <class Op, class Classify>
auto async_hedge_loop(Op op, hedge_options<Classify> options, async_retry_env env)
    -> boost::asio::awaitable<hedge_result<async_result_t<Op>>> {
  using R = async_result_t<Op>;
  using action = hedge_controller::action;
  // Cancellation is an outcome here, not an exception (as in async_retry).
  co_await boost::asio::this_coro::throw_if_cancelled(false);
  hedge_result<R> result;
  hedge_controller control(options.policy, options.gates, options.max_elapsed);
  // A statement of its own, not a co_await among the constructor's arguments (async_window.cpp
  // tells of GCC 12.2 mis-compiling a co_await written as a function's argument).
  boost::asio::any_io_executor executor = co_await boost::asio::this_coro::executor;
  hedge_flight<Op, R> flight(op, env, std::move(executor));
  std::exception_ptr escaped;  // from a copy (not retried) or from the loop itself
  try {
    random_ref rng = env.random;
    hedge_controller::step s = control.start(env.now(), rng);
    for (;;) {
      if (s.what == action::send) {
        duration left{0};
        if (control.deadline() != duration::max())
          left = std::max(control.deadline() - env.now(), duration{1});
        flight.launch(attempt_context{s.attempt, left}, s.wait);
      } else if (s.what == action::done) {
        break;
      }
      const auto state = co_await boost::asio::this_coro::cancellation_state;
      if (env.stop.stop_requested() || state.cancelled() != boost::asio::cancellation_type::none) {
        s = control.cancel();
        continue;
      }
      if (const std::optional<std::uint32_t> n = flight.next_ended()) {
        hedge_copy<R>& copy = flight.copy(*n);
        verdict v;
        if (copy.value) {
          result.last = std::move(copy.value);
          result.error = nullptr;
          v = options.classify(*result.last);
        } else if (copy.error) {
          std::optional<verdict> retried;
          if constexpr (exception_aware<Classify>)
            retried = options.classify.on_exception(copy.error);
          if (!retried) std::rethrow_exception(copy.error);
          result.last.reset();
          result.error = copy.error;
          v = *retried;
        } else {
          s = control.cancel();  // its pacing wait was cut short: the stop token
          continue;
        }
        s = control.on_answer(*n, v, env.now(), rng);
        continue;
      }
      const duration now = env.now();
      if (control.timer_due(now)) {
        s = control.on_timer(now, rng);
        continue;
      }
      const duration wake = control.wake_at();
      co_await flight.wait(wake == duration::max() ? wake : wake - now);
      s = {};
    }
  } catch (...) {
    escaped = std::current_exception();
    control.cancel();
  }
  flight.cancel_all();
  co_await flight.drain();
  if (escaped) std::rethrow_exception(escaped);
  result.why = control.result();
  result.attempts = control.sent();
  result.answered = control.answered();
  result.cancelled = control.cancelled();
  result.winner = control.winner();
  result.stopped = control.stopped();
  result.pushed_back = control.pushed_back();
  co_return result;
}

}  // namespace detail

// Runs copies of `op` as `options` say, hedge_controller deciding (hedge.hpp). Arguments are taken
// by value: the coroutine must not refer to its caller's temporaries. The gates' budget and
// throttle, when given, must outlive the call.
template <class Op, class Classify = default_classifier>
auto async_hedge(Op op, hedge_options<Classify> options, async_retry_env env)
    -> boost::asio::awaitable<hedge_result<detail::async_result_t<Op>>> {
  return detail::async_hedge_loop(std::move(op), std::move(options), std::move(env));
}

// The same in the real world (async_retry_env's defaults: steady clock, async_sleep).
template <class Op, class Classify = default_classifier>
auto async_hedge(Op op, hedge_options<Classify> options)
    -> boost::asio::awaitable<hedge_result<detail::async_result_t<Op>>> {
  return detail::async_hedge_loop(std::move(op), std::move(options), async_retry_env{});
}

}  // namespace backoff
