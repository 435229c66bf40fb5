// SPDX-License-Identifier: Apache-2.0
// Testing your own coroutine retry code without sleeping, the twin of testing.hpp for
// backoff::async_retry (needs Boost.Asio, as async_retry.hpp does): env() gives an
// async_retry_env whose clock is a manual_clock, whose sleep records the delay, moves that clock
// on and completes at once, and whose randomness is a generator with a fixed seed. The loop still
// runs on an io_context, but never waits on a timer, so a test asserts the exact waits.
//
// Call sequence: make a recording_async_env, pass rec.env() to backoff::async_retry, run the
// coroutine (co_spawn on an io_context, io.run()), then read rec.sleeps, rec.total_slept() and
// rec.clock. Not thread-safe: run the io_context on the test's thread.
//
//   backoff::testing::recording_async_env rec{7};  // seed 7, clock at 0
//   const backoff::retry_policy policy{backoff::backoff_policy::exponential(1s, 2.0, 30s), 3};
//   const auto result = co_await backoff::async_retry(always_failing, policy,
//                                                     backoff::default_classifier{}, rec.env());
//   // result.attempts == 3 and rec.sleeps == {1s, 2s}: the loop "took" 3 s, instantly.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <numeric>
#include <stop_token>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/clock.hpp"
#include "backoff/duration.hpp"
#include "backoff/random.hpp"

namespace backoff::testing {

// env().now reads `clock`; env().sleep appends the delay to `sleeps`, advances `clock` by it and
// returns true at once; env().random draws from `rng`. No stop token: cancel the coroutine
// through Asio's cancellation instead. env() refers to the members, so the helper must outlive
// the loops given its env.
struct recording_async_env {
  explicit recording_async_env(std::uint64_t seed = 7) : rng(seed) {}

  manual_clock clock;
  std::vector<duration> sleeps;
  random_generator rng;

  async_retry_env env() {
    async_retry_env e;
    e.now = [this] { return clock.now().time_since_epoch(); };
    e.sleep = [this](duration d, std::stop_token) -> boost::asio::awaitable<bool> {
      sleeps.push_back(d);
      clock.advance(d);
      co_return true;
    };
    e.random = rng;
    return e;
  }

  // The sum of the recorded sleeps.
  duration total_slept() const {
    return std::accumulate(sleeps.begin(), sleeps.end(), duration{0});
  }
};

}  // namespace backoff::testing
