// SPDX-License-Identifier: Apache-2.0
// A program outside the backoff tree that retries in an Asio coroutine through backoff::asio.
#include <backoff/async_retry.hpp>
#include <backoff/spec.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>

int main() {
  namespace asio = boost::asio;
  asio::io_context io;
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=1ms)"), 5, {}};
  int calls = 0;
  bool ok = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto r = co_await backoff::async_retry(
            [&]() -> asio::awaitable<bool> { co_return ++calls == 2; }, policy);
        ok = static_cast<bool>(r) && r.attempts == 2;
      },
      asio::detached);
  io.run();
  std::puts(ok ? "asio consumer ok" : "asio consumer FAILED");
  return ok ? 0 : 1;
}
