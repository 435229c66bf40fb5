// SPDX-License-Identifier: Apache-2.0
// The types of the network layer under `backoff serve` and `backoff proxy`: every socket, timer
// and coroutine of theirs runs on one thread's io_context, so they name that executor type rather
// than the type-erased any_io_executor (a few percent of the server's own CPU per request went to
// copying and destroying erased executors).
//
//   task<> session(socket_type& client) {
//     const auto [ec] = co_await client.async_wait(tcp::socket::wait_read, on_loop);
//     ...
//   }
//
// Expected network outcomes are values (on_loop completes with a tuple: error first), never
// exceptions (STYLE.md).
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

namespace backoff::net {

using loop_executor = boost::asio::io_context::executor_type;
template <typename T = void>
using task = boost::asio::awaitable<T, loop_executor>;
using socket_type = boost::asio::basic_stream_socket<boost::asio::ip::tcp, loop_executor>;
using acceptor_type = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, loop_executor>;
using timer_type = boost::asio::basic_waitable_timer<
    std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, loop_executor>;
// The completion token of every wait: `co_await x.async_...(on_loop)` gives (error, results...).
inline constexpr auto on_loop =
    boost::asio::as_tuple(boost::asio::use_awaitable_t<loop_executor>{});

// Waits until `until` on a timer of `executor`, in slices of at most 100 ms so that a stop
// (`stopping` turning true, read between slices) ends a long wait soon. False when it did.
inline task<bool> wait_until_or_stop(loop_executor executor,
                                     std::chrono::steady_clock::time_point until,
                                     const bool& stopping) {
  constexpr auto slice = std::chrono::milliseconds(100);
  timer_type timer(executor);
  for (;;) {
    if (stopping) co_return false;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) co_return true;
    timer.expires_at(until - now > slice ? now + slice : until);
    co_await timer.async_wait(on_loop);
  }
}

}  // namespace backoff::net
