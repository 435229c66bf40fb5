// SPDX-License-Identifier: Apache-2.0
// An HTTP GET with Boost.Beast, retried by the library: 429 and 5xx are retried, the server's
// Retry-After sets the wait (http_status_classifier reads it from the response), a refused or
// reset connection is retried, and each attempt's time (attempt_context::timeout) goes to
// Beast's own timeout, since a sync loop cannot cancel a call.
//   build/bin/example_http_retry_after HOST PORT TARGET
//   build/bin/example_http_retry_after      (starts a local server that answers 503 with
//                                            Retry-After: 1 once, then 200)
#include <backoff/backoff.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

struct http_reply {
  beast::error_code error;  // a transport error, or none
  http::response<http::string_body> response;
};

// One GET, run to completion on its own io_context, within `timeout` (0: none).
http_reply get(const std::string& host, const std::string& port, const std::string& target,
               backoff::duration timeout) {
  asio::io_context io;
  http_reply out;
  constexpr auto no_throw = asio::as_tuple(asio::use_awaitable);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        tcp::resolver resolver(io);
        auto [resolve_error, endpoints] = co_await resolver.async_resolve(host, port, no_throw);
        if ((out.error = resolve_error)) co_return;
        beast::tcp_stream stream(io);
        if (timeout.count() > 0) stream.expires_after(timeout);
        auto [connect_error, endpoint] = co_await stream.async_connect(endpoints, no_throw);
        if ((out.error = connect_error)) co_return;
        http::request<http::string_body> request{http::verb::get, target, 11};
        request.set(http::field::host, host);
        auto [write_error, written] = co_await http::async_write(stream, request, no_throw);
        if ((out.error = write_error)) co_return;
        beast::flat_buffer buffer;
        // A 1xx (100 Continue, 103 Early Hints) is an interim answer, not the answer: read on.
        do {
          out.response = {};
          auto [read_error, read] =
              co_await http::async_read(stream, buffer, out.response, no_throw);
          if ((out.error = read_error)) co_return;
        } while (out.response.result_int() < 200 &&
                 out.response.result() != http::status::switching_protocols);
      },
      asio::detached);
  io.run();
  return out;
}

// The local server: 503 with Retry-After: 1, then 200.
asio::awaitable<void> serve_twice(tcp::acceptor& acceptor) {
  constexpr auto no_throw = asio::as_tuple(asio::use_awaitable);
  for (int i = 0; i < 2; ++i) {
    auto [accept_error, socket] = co_await acceptor.async_accept(no_throw);
    if (accept_error) co_return;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    auto [read_error, read] = co_await http::async_read(socket, buffer, request, no_throw);
    if (read_error) co_return;
    http::response<http::string_body> response{
        i == 0 ? http::status::service_unavailable : http::status::ok, 11};
    if (i == 0) response.set(http::field::retry_after, "1");
    response.body() = i == 0 ? "busy\n" : "hello\n";
    response.prepare_payload();
    co_await http::async_write(socket, response, no_throw);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 4) {
    std::cerr << "usage: example_http_retry_after [HOST PORT TARGET]\n";
    return 2;
  }
  asio::io_context server_io;
  tcp::acceptor acceptor(server_io, {asio::ip::make_address("127.0.0.1"), 0});
  std::thread server;
  std::string host = "127.0.0.1";
  std::string port = std::to_string(acceptor.local_endpoint().port());
  std::string target = "/";
  if (argc == 4) {
    host = argv[1];
    port = argv[2];
    target = argv[3];
    acceptor.close();
  } else {
    asio::co_spawn(server_io, serve_twice(acceptor), asio::detached);
    server = std::thread([&] { server_io.run(); });
  }

  const auto started = std::chrono::steady_clock::now();
  const auto result = backoff::retry(
      [&](const backoff::attempt_context& c) {
        http_reply r = get(host, port, target, c.timeout);
        std::cout << "attempt " << c.attempt << ": "
                  << (r.error ? r.error.message() : std::to_string(r.response.result_int()))
                  << (r.response.count(http::field::retry_after) > 0
                          ? " (Retry-After: " + std::string(r.response[http::field::retry_after]) +
                                ")"
                          : "")
                  << std::endl;
        return r;
      },
      backoff::retry_options{
          .policy = {.backoff = backoff::parse_policy("exponential(initial=100ms, max=5s)"),
                     .max_attempts = 4,
                     .max_elapsed = 20s},
          .classify =
              [](const http_reply& r) {
                return r.error ? backoff::default_classifier{}(r.error)
                               : backoff::http_status_classifier{}(r.response);
              },
          .attempt_timeout = 5s});
  server_io.stop();  // whatever the outcome, the local server is done
  if (server.joinable()) server.join();
  const auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  std::cout << "outcome: " << backoff::to_string(result.why) << " after " << result.attempts
            << " attempts in " << took.count() << " s";
  if (result) std::cout << ": " << result.last->response.body();
  std::cout << std::endl;
  return result ? 0 : 1;
}
