// SPDX-License-Identifier: Apache-2.0
// Waiting for a bulkhead's slot (bulkhead.hpp) in a Boost.Asio C++20 coroutine: the waiter sleeps
// on a steady_timer instead of a thread, so one thread serves any number of waiting callers.
//
//   backoff::bulkhead pool{backoff::parse_bulkhead("bulkhead(max=10, queue=20, wait=1s)")};
//   // in a coroutine:
//   if (co_await backoff::async_enter(pool)) {   // a slot now, or in line for up to 1 s
//     co_await call();
//     pool.leave();
//   }
//
// async_enter(bulkhead, wait[, stop]) co_returns true when the caller holds a slot, which it must
// leave(); false when the bulkhead is full, the wait ran out, `stop` was requested, or the
// coroutine's cancellation slot fired (a slot handed over meanwhile is given back). Without a
// wait, the bulkhead's own `wait` applies; wait <= 0 only tries for a slot now.
//
// Call sequence inside: try_enter; if that fails, enqueue a waiter whose wake function posts, to
// the waiting coroutine's executor, the cancel of the timer it waits on (leave() may run on any
// thread); when the timer's wait ends, however it ends, bulkhead::cancel tells whether a slot was
// handed over. A coroutine destroyed while it waits (its io_context destroyed, or an awaitable
// operator|| that dropped it) ends its wait in the frame's destructor the same way, and gives
// back a slot handed to it, so no slot is ever lost.
//
// Threads: the bulkhead may be shared by coroutines on any executors and threads; each waiting
// coroutine's own timer is touched only on its executor (use a strand for a multi-threaded
// io_context, as for any Asio object). The bulkhead must outlive every async_enter waiting on it.
//
// GCC 11 and 12: async_enter follows the rule in async_retry.hpp ("GCC before 13"): a plain
// function that moves its by-value arguments into a coroutine, with overloads instead of default
// arguments; it is inline here, as it needs nothing compiled in backoff::asio.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <stop_token>
#include <utility>

#include "backoff/bulkhead.hpp"
#include "backoff/duration.hpp"

// As in async_retry.hpp: GCC warns, wrongly, of a mismatched operator delete once it inlines
// Asio's coroutine frames (GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace backoff {
namespace detail {

// Cancels a waiting coroutine's timer on that coroutine's executor, from any thread; a timer
// already gone (its coroutine ended) is left alone.
struct bulkhead_timer_cancel {
  boost::asio::any_io_executor executor;
  std::weak_ptr<boost::asio::steady_timer> timer;

  void operator()() const noexcept {
    try {
      boost::asio::post(executor, [weak = timer] {
        if (const auto t = weak.lock()) t->cancel();
      });
    } catch (...) {
      // Out of memory: the wait then ends at its timeout, where bulkhead::cancel still finds
      // the slot handed over.
    }
  }
};

struct bulkhead_timer_waiter : bulkhead_waiter {
  explicit bulkhead_timer_waiter(bulkhead_timer_cancel c) noexcept
      : bulkhead_waiter(&wake), cancel_timer(std::move(c)) {}
  static void wake(bulkhead_waiter& self) noexcept {
    static_cast<bulkhead_timer_waiter&>(self).cancel_timer();
  }
  bulkhead_timer_cancel cancel_timer;
};

// Ends the wait when the frame goes while the waiter is still queued or handed a slot.
struct bulkhead_wait_guard {
  bulkhead_wait_guard(bulkhead& p, bulkhead_waiter& w) noexcept : pool(p), waiter(w) {}
  bulkhead_wait_guard(const bulkhead_wait_guard&) = delete;
  bulkhead_wait_guard& operator=(const bulkhead_wait_guard&) = delete;
  ~bulkhead_wait_guard() {
    if (!ended && pool.cancel(waiter)) pool.leave();
  }
  // Whether the waiter holds a slot, as bulkhead::cancel says.
  bool end() noexcept {
    ended = true;
    return pool.cancel(waiter);
  }

  bulkhead& pool;
  bulkhead_waiter& waiter;
  bool ended = false;
};

inline boost::asio::awaitable<bool> async_enter_bulkhead(bulkhead* pool, duration wait,
                                                         std::stop_token stop) {
  if (stop.stop_requested()) co_return false;
  if (pool->try_enter()) co_return true;
  if (wait <= duration{0}) co_return false;
  // Statements of their own (async_window.cpp: GCC 12 miscompiles a co_await of this_coro
  // inside a larger expression).
  const boost::asio::any_io_executor executor = co_await boost::asio::this_coro::executor;
  const boost::asio::cancellation_state cancellation =
      co_await boost::asio::this_coro::cancellation_state;
  // Shared, so that a wake or stop posted from another thread finds it gone, not dangling,
  // after this frame ends.
  const auto timer = std::make_shared<boost::asio::steady_timer>(executor, wait);
  bulkhead_timer_waiter waiter{bulkhead_timer_cancel{executor, timer}};
  switch (pool->enqueue(waiter)) {
    case bulkhead_entry::admitted:
      co_return true;
    case bulkhead_entry::full:
      co_return false;
    case bulkhead_entry::queued:
      break;
  }
  bulkhead_wait_guard guard(*pool, waiter);
  std::optional<std::stop_callback<bulkhead_timer_cancel>> on_stop;
  if (stop.stop_possible()) on_stop.emplace(stop, waiter.cancel_timer);
  [[maybe_unused]] const auto [ec] =
      co_await timer->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  on_stop.reset();
  const bool holds_slot = guard.end();
  if (holds_slot &&
      (stop.stop_requested() || cancellation.cancelled() != boost::asio::cancellation_type::none)) {
    pool->leave();
    co_return false;
  }
  co_return holds_slot;
}

}  // namespace detail

// Waits up to `wait` for a slot of `pool`, queued behind earlier waiters; true: the caller holds
// a slot and must leave() it. `pool` must outlive the wait.
inline boost::asio::awaitable<bool> async_enter(bulkhead& pool, duration wait,
                                                std::stop_token stop) {
  return detail::async_enter_bulkhead(&pool, wait, std::move(stop));
}
inline boost::asio::awaitable<bool> async_enter(bulkhead& pool, duration wait) {
  return detail::async_enter_bulkhead(&pool, wait, std::stop_token{});
}
// With the bulkhead's own `wait`.
inline boost::asio::awaitable<bool> async_enter(bulkhead& pool) {
  return detail::async_enter_bulkhead(&pool, pool.config().wait, std::stop_token{});
}

}  // namespace backoff

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
