// SPDX-License-Identifier: Apache-2.0
// The AIMD window (aimd_window.hpp, after AEONCASE 2019) for Asio coroutines: many concurrent
// operations of one client take turns through one window, so that together they find and stay just
// below the rate a server sustains, where per-operation exponential backoff would let them swamp
// it. Each operation joins once and gets a lane; each attempt waits for its lane's turn, runs, and
// reports. A request that fails goes back to the front of the queue, ahead of requests never sent.
//
//   backoff::async_window window{io.get_executor(), backoff::parse_window("aimd(decrease=0.9)")};
//   // in each of many coroutines on io:
//   auto lane = window.join();                   // one request, at the back of the queue
//   for (;;) {
//     const bool turn = co_await lane.acquire(); // this request's turn; false: cancelled
//     if (!turn) break;
//     const reply r = co_await send(job);
//     if (r.ok) { lane.success(); break; }
//     lane.failure();                            // back to the front of the queue
//   }                                            // ~lane: lane.give_up() if still queued
//
// With async_retry, the overload below does all of it (the policy still decides whether and when
// to go on; the window decides when the attempt may start):
//
//   put_chunk op{c};  // named: not a braced temporary inside the co_await (GCC 12, below)
//   auto result = co_await backoff::async_retry(window, std::move(op), policy, classify);
//
// or, to keep async_retry's own signature, `backoff::async_retry(backoff::windowed(window, op,
// classify), policy, backoff::windowed_classifier{})`, whose result holds windowed_reply<R>.
// The window does the pacing, so the policy's delay is best small (constant(initial=0) is
// fine): a resend's turn often comes at once, and it stays unused while the operation sleeps.
//
// Threads: an async_window and its lanes are not thread-safe. Use them from one thread or one
// strand, the window's executor, on which acquire's timers run. Everything the window does
// happens inside join, acquire and the reports; it runs no handler of its own.
//
// Turns. After every join and report the window hands out turns (aimd_window::try_send) while it
// has room, in its queue order, and wakes their lanes. A turn handed to a lane that is not yet
// waiting (typically: a failed request, put at the front, whose coroutine is still classifying
// or sleeping) is kept for it, and its next acquire returns at once. The window's room is
// checked when a turn is handed out: a turn already handed out stays valid if a cut shrinks the
// window before its coroutine runs, as a request already in flight does.
//
// Cancellation: acquire follows its coroutine's cancellation slot (terminal cancellation, the
// default filter). A cancelled acquire returns false; the lane stays where it was in the queue
// (a turn that arrives, or had arrived, stays kept for it), so it may acquire again later or
// leave. Asio's awaitables throw operation_aborted at the next co_await of a cancelled coroutine
// (this_coro::throw_if_cancelled), so windowed() answers a cancelled acquire with a permanent
// verdict and the async_retry overload reports outcome::cancelled: the loop stops at once.
//
// Leaving. give_up(), or destroying a lane that has not reported success, removes its request:
//   - sent and not answered (acquire returned true): aimd_window::on_error(requeue::no). Its
//     outcome is unknown; like TCP's timeout, it counts as an error (a cut, unless ignored).
//   - queued, never sent: its id stays in the window's queue, unowned; the next join takes it
//     over instead of enqueuing a new one (aimd_window has no removal, and never-sent ids are
//     interchangeable).
//   - queued for a resend, or holding a turn it has not used: nothing was sent, so the turn is
//     given back without changing cwnd or ssthresh when the article's rules allow it: if an error
//     of it would be ignored now (the usual case, no cut since it failed), by on_error
//     (requeue::no), which then only counts one more ignored error; otherwise the turn is worth
//     exactly a fresh send, and the next lane in line that can use it as such takes it over
//     (that lane's own queued id is left unowned, as above), or, if none waits, it is returned
//     by on_success, which grows cwnd only if at most one more request would have fit, and by
//     one step at most.
// success() or failure() without a send in flight throws std::logic_error; acquire on a lane
// that has left returns false, as does an acquire waiting when its lane leaves.
//
// Lifetimes: lanes and waiting acquires keep the window's state alive, so the async_window
// object may go first; finish the coroutines (or destroy their lanes) before the io_context.
//
// GCC 11 and 12: every async function here (lane::acquire, windowed_op's call, the async_retry
// overloads) follows the rule in async_retry.hpp ("GCC before 13"): a plain function that takes
// its arguments by value and moves them into a coroutine. What that rule cannot do is on the
// caller's side, as said there: an operation, classifier or hook that owns memory is built in a
// statement of its own, not as a braced temporary or capturing lambda inside the co_await.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "backoff/aimd_window.hpp"
#include "backoff/asio_export.hpp"
#include "backoff/async_retry.hpp"
#include "backoff/retry.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

namespace detail {
struct window_core;
struct lane_state;
}  // namespace detail

class BACKOFF_ASIO_EXPORT async_window {
 public:
  using executor_type = boost::asio::any_io_executor;

  // One turn handed to a lane, as the observer sees it.
  struct send_event {
    request_id request;         // the request the turn sends
    bool resend;                // it was sent before (it comes from the front of the queue)
    aimd_window::state window;  // just after it was handed out (`flying` counts it)
  };

  struct stats {
    std::size_t lanes;        // joined, not yet left
    std::size_t queued;       // lanes whose request waits in the queue for a turn
    std::size_t waiting;      // acquires suspended
    std::uint64_t sends;      // turns handed to lanes, resends included
    std::uint64_t resends;    // turns for requests sent before
    std::uint64_t released;   // turns given back to the window unused (lanes that left)
    std::uint64_t passed;     // turns and places in line passed on from lanes that left
    std::uint64_t abandoned;  // ids left in the window's queue by lanes that left
  };

  // One operation's place in the window. Move-only; destroying it gives up (see the header).
  class BACKOFF_ASIO_EXPORT lane {
   public:
    lane() = default;  // joined to nothing: acquire returns false
    lane(lane&& other) noexcept = default;
    lane& operator=(lane&& other) noexcept;
    lane(const lane&) = delete;
    lane& operator=(const lane&) = delete;
    ~lane();

    // Waits for this request's turn. true: send now, then report exactly once; false: the
    // coroutine was cancelled or the lane has left. Throws std::logic_error when the last turn
    // is not reported yet or another acquire of this lane is waiting.
    boost::asio::awaitable<bool> acquire();

    // The send was answered and is done: on_success, and the lane leaves. Also for a
    // permanent error (windowed() does so): the server answered, which is no sign of overload.
    void success();
    void failure();  // it failed, worth a retry: on_error(requeue::yes), back to the front
    void give_up();  // leave now, whatever the state (see the header); no-op when left

    bool joined() const noexcept;     // joined and not yet left
    bool in_flight() const noexcept;  // acquire returned true and no report since
    bool ready() const noexcept;      // a turn is kept for it: the next acquire returns at once
    // The request of the turn last handed to this lane; empty before the first.
    std::optional<request_id> request() const noexcept;

   private:
    friend class async_window;
    explicit lane(std::shared_ptr<detail::lane_state> state) noexcept : state_(std::move(state)) {}
    std::shared_ptr<detail::lane_state> state_;
  };

  explicit async_window(executor_type executor, const aimd_config& config = {});
  async_window(async_window&&) noexcept = default;
  async_window& operator=(async_window&&) noexcept = default;
  async_window(const async_window&) = delete;
  async_window& operator=(const async_window&) = delete;
  ~async_window();

  // Registers one operation: one request at the back of the queue. Hands out turns at once if
  // the window has room, so the lane's first acquire may not wait.
  lane join();

  executor_type get_executor() const noexcept;
  // The wrapped window, to read (cwnd(), snapshot(), ...). Reports go through lanes only.
  const aimd_window& window() const noexcept;
  stats statistics() const noexcept;
  // Called on each turn handed out, before its lane is woken; for metrics and tests. It must
  // not throw or call back into the window. An empty function removes it.
  void observe(std::function<void(const send_event&)> observer);

 private:
  std::shared_ptr<detail::window_core> core_;
};

// ---- async_retry through a window -------------------------------------------------------------

// What a windowed operation returns to async_retry for one attempt.
template <class R>
struct windowed_reply {
  std::optional<R> reply;              // empty: not sent (the wait for a turn was cancelled)
  verdict why = verdict::permanent();  // the classifier's verdict on reply
};

// async_retry's classifier for windowed operations: the verdict windowed() already reached.
struct windowed_classifier {
  template <class R>
  constexpr verdict operator()(const windowed_reply<R>& r) const noexcept {
    return r.why;
  }
};

namespace detail {
template <class Op>
using async_op_result_t = std::decay_t<typename awaitable_value<op_return_t<Op>>::type>;
}  // namespace detail

// An operation for async_retry that paces `op` (called as op() or op(attempt), returning
// awaitable<R>) by a lane of the window: acquire, run the attempt, classify, report. A success
// and a permanent error are reported by success() (the server answered; only retryable errors
// are overload signals, as retry_controller tells a throttle), a retryable error by failure().
// If async_retry then stops (attempts, deadline, budget), the lane leaves with its request
// queued for a resend, which leaves cwnd and ssthresh as they are (see the header). A cancelled
// acquire gives {nullopt, permanent}, so that async_retry stops without another co_await.
template <class Op, class Classify>
class windowed_op {
 public:
  using reply_type = detail::async_op_result_t<Op>;

  windowed_op(async_window::lane lane, Op op, Classify classify)
      : lane_(std::move(lane)), op_(std::move(op)), classify_(std::move(classify)) {}

  // A plain function that starts the attempt's coroutine (async_retry.hpp's rule); this object
  // must outlive it, as async_retry's frame, which owns it, does.
  boost::asio::awaitable<windowed_reply<reply_type>> operator()(attempt_context attempt) {
    return run_attempt(this, attempt);
  }

  const async_window::lane& lane() const noexcept { return lane_; }

 private:
  static boost::asio::awaitable<windowed_reply<reply_type>> run_attempt(windowed_op* self,
                                                                        attempt_context attempt) {
    windowed_reply<reply_type> out;
    const bool turn = co_await self->lane_.acquire();  // not inside the `if`: async_window.cpp
    if (!turn) co_return out;
    out.reply.emplace(co_await detail::invoke_attempt(self->op_, attempt));
    out.why = self->classify_(*out.reply);
    switch (out.why.kind) {
      case verdict_kind::success:
      case verdict_kind::permanent:
        self->lane_.success();
        break;
      case verdict_kind::retryable:
        self->lane_.failure();
        break;
    }
    co_return out;
  }

  async_window::lane lane_;
  Op op_;
  Classify classify_;
};

// Joins the window now (one lane for all the attempts of this operation) and wraps `op`.
template <class Op, class Classify = default_classifier>
windowed_op<Op, Classify> windowed(async_window& window, Op op, Classify classify = {}) {
  return windowed_op<Op, Classify>(window.join(), std::move(op), std::move(classify));
}

namespace detail {

// Hands the user's hook the reply itself rather than the windowed_reply.
template <class R, class OnRetry>
struct windowed_retry_hook {
  OnRetry inner;
  void operator()(const retry_event<windowed_reply<R>>& e) {
    const R* reply = e.result != nullptr && e.result->reply ? &*e.result->reply : nullptr;
    inner(retry_event<R>{e.attempt, e.delay, e.why, reply, e.reason, e.error});
  }
};

// The windowed async_retry itself (async_retry.hpp's rule: it owns its arguments, moved into its
// frame by the plain functions below). It joins when it starts, as windowed() is called here.
template <class Op, class Classify, class OnRetry>
auto async_retry_windowed(async_window* window, Op op, retry_policy policy, Classify classify,
                          async_retry_env env, OnRetry on_retry, retry_gates gates)
    -> boost::asio::awaitable<retry_result<async_op_result_t<Op>>> {
  using R = async_op_result_t<Op>;
  using hook = owned_on_retry<windowed_retry_hook<R, OnRetry>>;
  // Named, each in a statement of its own, and moved into the co_await (rule 3): as braced
  // temporaries of the co_await, GCC 12 destroyed a hook that owns memory twice.
  windowed_op<Op, Classify> paced = windowed(*window, std::move(op), std::move(classify));
  retry_options<windowed_classifier, hook> options{policy, windowed_classifier{},
                                                   hook{{std::move(on_retry)}}, gates};
  retry_result<windowed_reply<R>> inner =
      co_await async_retry_loop(std::move(paced), std::move(options), std::move(env));
  retry_result<R> out;
  out.why = inner.why;
  out.attempts = inner.attempts;
  out.deferred = inner.deferred;
  out.slept = inner.slept;
  if (inner.last) {
    if (inner.last->reply) {
      out.last = std::move(*inner.last->reply);
    } else {
      out.why = outcome::cancelled;
    }
  }
  co_return out;
}

}  // namespace detail

// async_retry with every attempt paced by `window`, which must outlive the call; joins when the
// returned awaitable starts. As async_retry, except that when the wait for a turn is cancelled
// the result is outcome::cancelled with `last` empty, and that wait counts as an attempt (a
// throttle in `gates` is told of it as of an attempt answered with a permanent error). The
// shorter overloads stand for what were default arguments (async_retry.hpp, rule 2).
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto async_retry(async_window& window, Op op, retry_policy policy, Classify classify,
                 async_retry_env env, OnRetry on_retry, retry_gates gates = {})
    -> boost::asio::awaitable<retry_result<detail::async_op_result_t<Op>>> {
  return detail::async_retry_windowed(&window, std::move(op), policy, std::move(classify),
                                      std::move(env), std::move(on_retry), gates);
}

template <class Op, class Classify = default_classifier>
auto async_retry(async_window& window, Op op, retry_policy policy, Classify classify,
                 async_retry_env env)
    -> boost::asio::awaitable<retry_result<detail::async_op_result_t<Op>>> {
  return detail::async_retry_windowed(&window, std::move(op), policy, std::move(classify),
                                      std::move(env), no_retry_hook{}, retry_gates{});
}

template <class Op, class Classify = default_classifier>
auto async_retry(async_window& window, Op op, retry_policy policy, Classify classify)
    -> boost::asio::awaitable<retry_result<detail::async_op_result_t<Op>>> {
  return detail::async_retry_windowed(&window, std::move(op), policy, std::move(classify),
                                      async_retry_env{}, no_retry_hook{}, retry_gates{});
}

template <class Op>
auto async_retry(async_window& window, Op op, retry_policy policy)
    -> boost::asio::awaitable<retry_result<detail::async_op_result_t<Op>>> {
  return detail::async_retry_windowed(&window, std::move(op), policy, default_classifier{},
                                      async_retry_env{}, no_retry_hook{}, retry_gates{});
}

}  // namespace backoff
