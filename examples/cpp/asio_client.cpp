// SPDX-License-Identifier: Apache-2.0
// An Asio coroutine client for a service that comes up late. Its connects are refused until the
// service listens; async_retry waits between them (full jitter), gives each attempt at most 1 s
// (cancelled through its cancellation slot past that), and Ctrl-C or SIGTERM cancels the whole
// loop at once through the loop's own cancellation slot. Boost.System error codes are
// classified by the default classifier: a refused connection is retried, the rest is final.
//   build/bin/example_asio_client        (starts its own late service on 127.0.0.1)
#include <backoff/async_retry.hpp>
#include <backoff/backoff.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <csignal>
#include <exception>
#include <iostream>
#include <string>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto no_throw = asio::as_tuple(asio::use_awaitable);

// Bound at once, so connects are refused (not left hanging); listening only after `late`.
asio::awaitable<void> late_service(tcp::acceptor& acceptor, std::chrono::milliseconds late) {
  asio::steady_timer timer(co_await asio::this_coro::executor, late);
  co_await timer.async_wait(no_throw);
  acceptor.listen();
  auto [ec, peer] = co_await acceptor.async_accept(no_throw);
  if (ec) co_return;
  const std::string hello = "hello from the late service\n";
  co_await asio::async_write(peer, asio::buffer(hello), no_throw);
}

asio::awaitable<int> client(tcp::endpoint where) {
  auto result = co_await backoff::async_retry(
      [where](backoff::attempt_context c) -> asio::awaitable<boost::system::error_code> {
        tcp::socket socket(co_await asio::this_coro::executor);
        auto [ec] = co_await socket.async_connect(where, no_throw);
        std::cout << "attempt " << c.attempt << ": " << (ec ? ec.message() : "connected")
                  << std::endl;
        if (ec) co_return ec;
        std::string line;
        auto [read_error, n] =
            co_await asio::async_read_until(socket, asio::dynamic_buffer(line), '\n', no_throw);
        if (!read_error) std::cout << "read: " << line.substr(0, n);
        co_return read_error;
      },
      backoff::retry_options{.policy = {.backoff = backoff::parse_policy(
                                            "exponential(initial=50ms, max=400ms, jitter=full)"),
                                        .max_attempts = 20,
                                        .max_elapsed = 10s},
                             .attempt_timeout = 1s});
  std::cout << "outcome: " << backoff::to_string(result.why) << " after " << result.attempts
            << " attempts" << std::endl;
  co_return result ? 0 : 1;
}

}  // namespace

int main() {
  asio::io_context io;
  tcp::acceptor acceptor(io);
  acceptor.open(tcp::v4());
  acceptor.bind({asio::ip::make_address("127.0.0.1"), 0});
  asio::co_spawn(io, late_service(acceptor, 300ms), asio::detached);

  // Ctrl-C: cancel the retry loop (and its attempt in flight) through its cancellation slot.
  asio::cancellation_signal cancel;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) cancel.emit(asio::cancellation_type::terminal);
  });

  int status = 1;
  asio::co_spawn(io, client(acceptor.local_endpoint()),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, int s) {
                   if (e) std::rethrow_exception(e);
                   status = s;
                   signals.cancel();
                   acceptor.close();
                 }));
  io.run();
  return status;
}
