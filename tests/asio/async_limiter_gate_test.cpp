// SPDX-License-Identifier: Apache-2.0
// The coroutine loop with a strategy's limiter in its gates, as the sync loop (limiter_gate_test):
// a rate reservation is waited through the env's sleep, a full bulkhead ends the loop as
// limited, a bulkhead's line is waited in on an Asio timer and gets the slot a leave() hands
// over, and each attempt reaches an adaptive limit. The operation, classifier and hooks own heap
// memory and are moved into the call (the rule heading async_retry.hpp), for ASan in CI.
#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/limiter.hpp"
#include "backoff/spec.hpp"
#include "recording_async_env.hpp"
#include "run_coroutine.hpp"

// As in async_retry.hpp: GCC warns, wrongly, of a mismatched operator delete once it inlines
// Asio's coroutine frames into these coroutines (GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {

using namespace std::chrono_literals;
using backoff::testing::run_coroutine;

backoff::retry_policy async_gate_policy(std::uint32_t attempts) {
  return {backoff::parse_policy("constant(initial=1s)"), attempts, backoff::duration{0}};
}

// An operation that owns heap memory and fails `failures` times.
auto owning_op(std::shared_ptr<int> calls, int failures) {
  return [calls, tag = std::string(64, 'x'), failures]() -> boost::asio::awaitable<bool> {
    co_return ++*calls > failures&& tag.size() == 64;
  };
}

TEST(AsyncLimiterGate, ARateReservationIsWaitedThroughTheEnvsSleep) {
  backoff::testing::recording_async_env rec;
  backoff::limiter gate{backoff::parse_limiter("rate(per_s=0.5, burst=1, wait=5s)")};
  auto calls = std::make_shared<int>(0);
  auto options = backoff::retry_options{.policy = async_gate_policy(2),
                                        .classify =
                                            [owned = std::vector<int>(8, 1)](bool ok) {
                                              return ok && owned.size() == 8
                                                         ? backoff::verdict::success()
                                                         : backoff::verdict::retryable();
                                            },
                                        .gates = {.limiter = &gate}};
  const auto r =
      run_coroutine(backoff::async_retry(owning_op(calls, 5), std::move(options), rec.env()));
  EXPECT_EQ(r.why, backoff::outcome::attempts_exhausted);
  EXPECT_EQ(*calls, 2);
  // The second token is due 2 s after the first: 1 s of backoff, then 1 s of pacing.
  EXPECT_EQ(rec.sleeps, (std::vector<backoff::duration>{1s, 1s}));
}

TEST(AsyncLimiterGate, AFullBulkheadEndsTheLoopAsLimited) {
  backoff::testing::recording_async_env rec;
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=1)")};
  const auto held = gate.acquire(0s);
  auto calls = std::make_shared<int>(0);
  auto options =
      backoff::retry_options{.policy = async_gate_policy(3), .gates = {.limiter = &gate}};
  const auto r =
      run_coroutine(backoff::async_retry(owning_op(calls, 0), std::move(options), rec.env()));
  EXPECT_EQ(r.why, backoff::outcome::limited);
  EXPECT_EQ(*calls, 0);
  gate.release(held, 0s, backoff::limit_outcome::success);
  EXPECT_EQ(gate.as_bulkhead()->in_use(), 0U);
}

TEST(AsyncLimiterGate, AWaitInTheBulkheadsLineGetsTheSlotALeaveHandsOver) {
  backoff::testing::recording_async_env rec;
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=1, queue=1, wait=10s)")};
  const auto held = gate.acquire(0s);
  auto calls = std::make_shared<int>(0);
  std::optional<backoff::retry_result<bool>> result;
  boost::asio::io_context io;
  auto options =
      backoff::retry_options{.policy = async_gate_policy(1), .gates = {.limiter = &gate}};
  boost::asio::co_spawn(io,
                        backoff::async_retry(owning_op(calls, 0), std::move(options), rec.env()),
                        [&](std::exception_ptr e, backoff::retry_result<bool> r) {
                          if (e) std::rethrow_exception(e);
                          result = std::move(r);
                        });
  // Another call leaves once the loop is waiting in line.
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        boost::asio::steady_timer tick(io, 1ms);
        while (gate.as_bulkhead()->waiting() == 0) {
          tick.expires_after(1ms);
          co_await tick.async_wait(boost::asio::use_awaitable);
        }
        gate.release(held, 0s, backoff::limit_outcome::success);
      },
      boost::asio::detached);
  io.run();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->why, backoff::outcome::succeeded);
  EXPECT_EQ(*calls, 1);
  EXPECT_EQ(gate.as_bulkhead()->in_use(), 0U);  // the loop left the slot it was handed
}

TEST(AsyncLimiterGate, EachAttemptIsASampleForTheAdaptiveLimit) {
  backoff::testing::recording_async_env rec;
  backoff::limiter gate{backoff::parse_limiter("limit(kind=aimd, initial=10, min=1, max=20)")};
  auto calls = std::make_shared<int>(0);
  auto options =
      backoff::retry_options{.policy = async_gate_policy(3), .gates = {.limiter = &gate}};
  const auto r =
      run_coroutine(backoff::async_retry(owning_op(calls, 2), std::move(options), rec.env()));
  ASSERT_TRUE(r);
  const backoff::limiter_stats stats = gate.as_limit()->stats();
  EXPECT_EQ(stats.dropped, 2U);
  EXPECT_EQ(stats.succeeded, 1U);
  EXPECT_EQ(gate.as_limit()->inflight(), 0U);
  EXPECT_EQ(gate.as_limit()->limit(), 8U);
}

}  // namespace

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
