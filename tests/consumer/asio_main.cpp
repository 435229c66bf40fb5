// SPDX-License-Identifier: Apache-2.0
// A program outside the backoff tree that retries in an Asio coroutine through backoff::asio.
#include <backoff/async_retry.hpp>
#include <backoff/async_testing.hpp>
#include <backoff/spec.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

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
  // backoff/async_testing.hpp: a loop that never succeeds runs without a timer, its waits
  // recorded exactly. The env is built in a statement of its own (GCC 12, async_retry.hpp).
  using namespace std::chrono_literals;
  backoff::testing::recording_async_env rec;
  const backoff::retry_policy doubling{
      backoff::parse_policy("exponential(initial=1s, max=30s, jitter=none)"), 3, {}};
  bool recorded_ok = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const backoff::async_retry_env env = rec.env();
        auto r = co_await backoff::async_retry([]() -> asio::awaitable<bool> { co_return false; },
                                               doubling, backoff::default_classifier{}, env);
        recorded_ok = r.why == backoff::outcome::attempts_exhausted && r.attempts == 3 &&
                      rec.sleeps == std::vector<backoff::duration>{1s, 2s} &&
                      rec.clock.now().time_since_epoch() == 3s;
      },
      asio::detached);
  io.run();
  ok = ok && recorded_ok;
  std::puts(ok ? "asio consumer ok" : "asio consumer FAILED");
  return ok ? 0 : 1;
}
