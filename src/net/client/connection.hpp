// SPDX-License-Identifier: Apache-2.0
// A kept-alive connection of `backoff load`'s client, with the timeout of its attempt in flight
// on one timer of its own (the watchdog). Internal to the load client (src/net/client).
//
//   connection c(ex);
//   c.watch->arm(steady::now(), timeout);   // the attempt starts
//   ... co_await c.socket.async_...;        // cancelled when the time runs out
//   if (c.watch->fired) { /* timed out */ c.close(); }
//   c.watch->disarm();                      // the attempt ended in time
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "backoff/duration.hpp"

namespace backoff::net::load_detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
inline constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

using steady = std::chrono::steady_clock;
using executor_type = asio::io_context::executor_type;
using socket_type = asio::basic_stream_socket<tcp, executor_type>;
using timer_type = asio::basic_waitable_timer<steady, asio::wait_traits<steady>, executor_type>;

// The timeout of a connection's attempt in flight, on one timer of the connection's own that is
// re-armed lazily: an attempt only records its deadline, and the timer, when it fires at an older
// one, moves on to the current deadline. With a fixed timeout the deadlines only grow, so the
// timer wakes about once per timeout per connection instead of being set and cancelled for every
// request (what beast::basic_stream did, with a timer operation per read and write). When the
// deadline of the attempt in flight passes, its socket's operations are cancelled and `fired`
// tells the attempt it timed out. Shared with the timer's handler, which may run after the
// connection is gone (a handler already due when the connection ends still runs): `socket` is
// null then.
struct watchdog : std::enable_shared_from_this<watchdog> {
  explicit watchdog(const executor_type& ex) : timer(ex) {}
  timer_type timer;
  socket_type* socket = nullptr;
  steady::time_point deadline = steady::time_point::max();  // the attempt's; max: none in flight
  steady::time_point armed = steady::time_point::max();     // the wait pending; max: none
  std::uint64_t generation = 0;  // of the wait pending: a handler of an older one does nothing
  bool fired = false;            // the attempt in flight ran out of time

  void arm(steady::time_point now, duration time_allowed) {
    fired = false;
    deadline = saturating_add(now, time_allowed);  // a huge --timeout must not wrap round
    if (deadline < armed) wait_until(deadline);
  }
  void disarm() { deadline = steady::time_point::max(); }

  struct handler {
    std::shared_ptr<watchdog> w;
    std::uint64_t generation;
    void operator()(const boost::system::error_code& ec) const {
      if (!ec && generation == w->generation) w->expired();
    }
  };
  void wait_until(steady::time_point at) {
    armed = at;
    timer.expires_at(at);  // a wait pending for a later time is cancelled (its handler ignored)
    timer.async_wait(handler{shared_from_this(), ++generation});
  }
  void expired();
};

// A keep-alive connection of one virtual client; reopened after a timeout or an error (the Go
// client's transport drops a connection whose request timed out). Its socket, timer and the
// coroutines' operations are typed on the io_context's executor rather than any_io_executor:
// the type-erased one cost about 2 % of the open loop's time.
struct connection {
  explicit connection(executor_type ex)
      : executor(ex), socket(ex), watch(std::make_shared<watchdog>(ex)) {
    watch->socket = &socket;
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() {
    watch->socket = nullptr;
    watch->timer.cancel();
  }
  executor_type executor;
  socket_type socket;
  std::shared_ptr<watchdog> watch;
  boost::beast::flat_buffer buffer;
  std::string request;  // with propagate_deadline: this attempt's bytes
  void close();
};

}  // namespace backoff::net::load_detail
