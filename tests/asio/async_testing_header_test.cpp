// SPDX-License-Identifier: Apache-2.0
// backoff/async_testing.hpp as a user's test uses it: a coroutine retry loop over
// recording_async_env sleeps exactly the policy's delays, never waits on a timer, and its clock
// shows the time the loop "took".
#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/async_testing.hpp"
#include "backoff/policy.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::duration;
using backoff::retry_policy;
using backoff::testing::recording_async_env;

// Fails its first `failures` calls; the count is shared, as async_retry copies its operation.
struct ath_flaky {
  int failures;
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  boost::asio::awaitable<bool> operator()() { co_return ++*calls > failures; }
};

// What a user's test writes: one io_context, run to completion on the test's thread.
template <class T>
T ath_run(boost::asio::awaitable<T> work) {
  boost::asio::io_context io;
  std::optional<T> out;
  boost::asio::co_spawn(io, std::move(work), [&](std::exception_ptr e, T value) {
    if (e) std::rethrow_exception(e);
    out = std::move(value);
  });
  io.run();
  return std::move(*out);
}

TEST(AsyncTestingHeader, ACoroutineLoopSleepsExactlyThePolicysDelays) {
  recording_async_env rec;
  ath_flaky op{3};
  const retry_policy policy{backoff_policy::exponential(100ms, 2.0, 1s), 10};
  const auto result =
      ath_run(backoff::async_retry(op, policy, backoff::default_classifier{}, rec.env()));
  EXPECT_TRUE(result);
  EXPECT_EQ(result.attempts, 4u);
  EXPECT_EQ(*op.calls, 4);
  EXPECT_EQ(rec.sleeps, (std::vector<duration>{100ms, 200ms, 400ms}));
  EXPECT_EQ(rec.total_slept(), 700ms);
  EXPECT_EQ(rec.clock.now().time_since_epoch(), 700ms);
}

TEST(AsyncTestingHeader, TheSeedMakesJitteredWaitsRepeat) {
  const retry_policy policy{
      backoff_policy::exponential(1s, 2.0, 60s).with_jitter(backoff::jitter_kind::decorrelated_v2),
      6};
  const auto sleeps_for = [&](std::uint64_t seed) {
    recording_async_env rec{seed};
    const auto result = ath_run(
        backoff::async_retry(ath_flaky{100}, policy, backoff::default_classifier{}, rec.env()));
    EXPECT_EQ(result.why, backoff::outcome::attempts_exhausted);
    return rec.sleeps;
  };
  const std::vector<duration> first = sleeps_for(9);
  EXPECT_EQ(first.size(), 5u);
  EXPECT_EQ(sleeps_for(9), first);
  EXPECT_NE(sleeps_for(10), first);
}

}  // namespace
