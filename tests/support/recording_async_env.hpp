// SPDX-License-Identifier: Apache-2.0
// An async_retry_env for tests, the coroutine twin of recording_env.hpp: time is a manual_clock,
// a sleep records its delay, moves the clock and completes at once, and randomness comes from a
// generator with a fixed seed.
//
//   backoff::testing::recording_async_env rec{7};
//   auto r = run_coroutine(backoff::async_retry(op, policy, classify, rec.env()));
//   EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 2s}));
//
// env() refers to the members, so the helper must outlive the loops given its env.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <stop_token>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/clock.hpp"
#include "backoff/duration.hpp"
#include "backoff/random.hpp"

namespace backoff::testing {

struct recording_async_env {
  explicit recording_async_env(std::uint64_t seed = 7) : rng(seed) {}

  backoff::manual_clock clock;
  std::vector<duration> sleeps;
  backoff::random_generator rng;

  backoff::async_retry_env env() {
    backoff::async_retry_env e;
    e.now = [this] { return clock.now().time_since_epoch(); };
    e.sleep = [this](duration d, std::stop_token) -> boost::asio::awaitable<bool> {
      sleeps.push_back(d);
      clock.advance(d);
      co_return true;
    };
    e.random = rng;
    return e;
  }
};

}  // namespace backoff::testing
