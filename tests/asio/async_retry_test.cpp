// SPDX-License-Identifier: Apache-2.0
// async_retry on an io_context: the same decisions as the sync loop, real (short) timers,
// cancellation by stop token and by cancellation slot, deadlines on a manual clock.
#include "backoff/async_retry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "backoff/clock.hpp"
#include "backoff/http.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "recording_async_env.hpp"
#include "run_coroutine.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::duration;
using backoff::verdict;

using backoff::testing::run_coroutine;

// An env whose clock is manual and whose sleep records the delay and advances the clock.
using recorded = backoff::testing::recording_async_env;

// An operation that plays back a script of verdicts, one per attempt.
struct scripted {
  std::vector<verdict> script;
  std::shared_ptr<std::size_t> calls = std::make_shared<std::size_t>(0);
  asio::awaitable<verdict> operator()() {
    const std::size_t i = (*calls)++;
    co_return i < script.size() ? script[i] : script.back();
  }
};

TEST(AsyncRetry, WaitsExactlyAsThePolicySaysAndStopsOnSuccess) {
  recorded world;
  const backoff::retry_policy policy{backoff::parse_policy("exponential(initial=1s, max=5s)"), 0,
                                     0s};
  scripted op{{verdict::retryable(), verdict::retryable(), verdict::retryable(),
               verdict::retryable(), verdict::success()}};
  const auto r =
      run_coroutine(backoff::async_retry(op, policy, backoff::default_classifier{}, world.env()));
  EXPECT_EQ(r.why, backoff::outcome::succeeded);
  EXPECT_EQ(r.attempts, 5u);
  EXPECT_EQ(world.sleeps, (std::vector<duration>{1s, 2s, 4s, 5s}));
  EXPECT_EQ(r.slept, 12s);
}

TEST(AsyncRetry, MakesTheSameDecisionsAsTheSyncLoop) {
  const backoff::retry_policy policy{
      backoff::parse_policy("exponential(initial=100ms, max=3s, jitter=full)"), 6, 4s};
  const std::vector<verdict> script{verdict::retryable(), verdict::retryable(1500ms),
                                    verdict::retryable(), verdict::retryable(),
                                    verdict::retryable(), verdict::retryable()};

  recorded async_world;
  const auto a = run_coroutine(backoff::async_retry(
      scripted{script}, policy, backoff::default_classifier{}, async_world.env()));

  backoff::manual_clock clock;
  std::vector<duration> sync_sleeps;
  backoff::random_generator rng{7};
  backoff::retry_env env;
  env.now = [&] { return clock.now().time_since_epoch(); };
  env.sleep = [&](duration d, std::stop_token) {
    sync_sleeps.push_back(d);
    clock.advance(d);
    return true;
  };
  env.random = rng;
  std::size_t calls = 0;
  const auto s = backoff::retry([&] { return script[std::min(calls++, script.size() - 1)]; },
                                policy, backoff::default_classifier{}, env);

  EXPECT_EQ(a.why, s.why);
  EXPECT_EQ(a.attempts, s.attempts);
  EXPECT_EQ(async_world.sleeps, sync_sleeps);
  ASSERT_GE(sync_sleeps.size(), 2u);
  EXPECT_GE(sync_sleeps[1], 1500ms);  // the Retry-After raised the second wait
}

TEST(AsyncRetry, ClampsTheLastWaitToTheDeadline) {
  recorded world;
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=3s)"), 0, 7s};
  const auto r = run_coroutine(backoff::async_retry(scripted{{verdict::retryable()}}, policy,
                                                    backoff::default_classifier{}, world.env()));
  EXPECT_EQ(r.why, backoff::outcome::deadline_exceeded);
  EXPECT_EQ(world.sleeps, (std::vector<duration>{3s, 3s, 1s}));
  EXPECT_EQ(r.attempts, 4u);  // at 0, 3, 6 and 7 s: none after the deadline
}

TEST(AsyncRetry, PassesTheAttemptNumberAndReportsEachRetry) {
  recorded world;
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=10ms)"), 3, 0s};
  std::vector<std::uint32_t> seen;
  std::vector<std::uint32_t> hooked;
  const auto r = run_coroutine(backoff::async_retry(
      [&](std::uint32_t attempt) -> asio::awaitable<int> {
        seen.push_back(attempt);
        co_return 503;
      },
      policy, [](int status) { return backoff::classify_http_status(status); }, world.env(),
      [&](const backoff::retry_event<int>& e) {
        ASSERT_NE(e.result, nullptr);
        EXPECT_EQ(*e.result, 503);
        EXPECT_EQ(e.delay, 10ms);
        hooked.push_back(e.attempt);
      }));
  EXPECT_EQ(r.why, backoff::outcome::attempts_exhausted);
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(hooked, (std::vector<std::uint32_t>{1, 2}));
  ASSERT_TRUE(r.last.has_value());
  EXPECT_EQ(*r.last, 503);
}

TEST(AsyncRetry, RetriesOnRealTimers) {
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=1ms)"), 10, 0s};
  int calls = 0;
  const auto r = run_coroutine(
      backoff::async_retry([&]() -> asio::awaitable<bool> { co_return ++calls == 3; }, policy));
  EXPECT_EQ(r.why, backoff::outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(calls, 3);
}

// A long real wait that a stop request, posted 5 ms in, cuts short.
TEST(AsyncRetry, StopTokenWakesAPendingWait) {
  asio::io_context io;
  std::stop_source stop;
  backoff::async_retry_env env;
  env.stop = stop.get_token();
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=1h)"), 0, 0s};
  std::optional<backoff::retry_result<bool>> result;
  asio::co_spawn(io,
                 backoff::async_retry([]() -> asio::awaitable<bool> { co_return false; }, policy,
                                      backoff::default_classifier{}, env),
                 [&](std::exception_ptr e, backoff::retry_result<bool> r) {
                   ASSERT_FALSE(e);
                   result = r;
                 });
  asio::steady_timer later(io, 5ms);
  later.async_wait([&](auto) { stop.request_stop(); });
  const auto start = std::chrono::steady_clock::now();
  io.run();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->why, backoff::outcome::cancelled);
  EXPECT_EQ(result->attempts, 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1min);  // not the hour
}

TEST(AsyncRetry, CancellationSlotWakesAPendingWait) {
  asio::io_context io;
  asio::cancellation_signal signal;
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=1h)"), 0, 0s};
  std::optional<backoff::outcome> why;
  bool threw = false;
  asio::co_spawn(io,
                 backoff::async_retry([]() -> asio::awaitable<bool> { co_return false; }, policy),
                 asio::bind_cancellation_slot(
                     signal.slot(), [&](std::exception_ptr e, backoff::retry_result<bool> r) {
                       threw = static_cast<bool>(e);
                       if (!e) why = r.why;
                     }));
  asio::steady_timer later(io, 5ms);
  later.async_wait([&](auto) { signal.emit(asio::cancellation_type::terminal); });
  io.run();
  EXPECT_FALSE(threw);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, backoff::outcome::cancelled);
}

TEST(AsyncRetry, ABudgetStopsItExactlyAsInTheSyncLoop) {
  recorded world;
  backoff::retry_budget budget{backoff::parse_budget("token-bucket(max=10, ratio=0.1)")};
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=100ms)"), 0, 0s};
  const auto r = run_coroutine(backoff::async_retry(scripted{{verdict::retryable()}}, policy,
                                                    backoff::default_classifier{}, world.env(),
                                                    backoff::no_retry_hook{}, {&budget, nullptr}));
  EXPECT_EQ(r.why, backoff::outcome::budget_exhausted);
  EXPECT_EQ(r.attempts, 5u);  // as RetryGates.TokenBucketStopsRetryingWhenHalfTheTokensAreGone
  EXPECT_EQ(world.sleeps.size(), 4u);
}

// The cancellation arrives while an attempt is running, not during a wait.
TEST(AsyncRetry, CancellationDuringAnAttemptIsAnOutcomeNotAnException) {
  asio::io_context io;
  asio::cancellation_signal signal;
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=1ms)"), 0, 0s};
  std::optional<backoff::outcome> why;
  bool threw = false;
  auto slow_attempt = []() -> asio::awaitable<bool> {
    asio::steady_timer t(co_await asio::this_coro::executor, 1h);
    auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return !ec;
  };
  asio::co_spawn(io, backoff::async_retry(slow_attempt, policy),
                 asio::bind_cancellation_slot(
                     signal.slot(), [&](std::exception_ptr e, backoff::retry_result<bool> r) {
                       threw = static_cast<bool>(e);
                       if (!e) why = r.why;
                     }));
  asio::steady_timer later(io, 5ms);
  later.async_wait([&](auto) { signal.emit(asio::cancellation_type::terminal); });
  io.run();
  EXPECT_FALSE(threw);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, backoff::outcome::cancelled);
}

TEST(AsyncRetry, StopBeforeStartMakesNoAttempt) {
  std::stop_source stop;
  stop.request_stop();
  backoff::async_retry_env env;
  env.stop = stop.get_token();
  int calls = 0;
  const auto r = run_coroutine(
      backoff::async_retry([&]() -> asio::awaitable<bool> { co_return (++calls, true); },
                           backoff::retry_policy{backoff::parse_policy("grpc"), 0, 0s},
                           backoff::default_classifier{}, env));
  EXPECT_EQ(r.why, backoff::outcome::cancelled);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.attempts, 0u);
}

// One env shared by coroutines on a multi-threaded io_context: each draws from the generator of
// the thread it runs on, not from the one of the thread that built the env.
TEST(AsyncRetry, OneEnvCanServeAMultiThreadedIoContext) {
  backoff::async_retry_env env;
  env.sleep = [](duration, std::stop_token) -> asio::awaitable<bool> { co_return true; };
  const backoff::retry_policy policy{
      backoff::parse_policy("exponential(initial=1ms, max=10ms, jitter=full)"), 20, 0s};
  const backoff::random_generator before = backoff::detail::thread_generator();
  asio::io_context io;
  std::atomic<std::uint32_t> attempts{0};
  for (int i = 0; i < 16; ++i) {
    asio::co_spawn(io,
                   backoff::async_retry(scripted{{verdict::retryable()}}, policy,
                                        backoff::default_classifier{}, env),
                   [&](std::exception_ptr e, const backoff::retry_result<verdict>& r) {
                     if (!e) attempts += r.attempts;
                   });
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { io.run(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(attempts.load(), 16u * 20u);
  backoff::random_generator expected = before;
  EXPECT_EQ(backoff::detail::thread_generator()(), expected())
      << "the io_context's threads drew from this thread's generator";
}

}  // namespace
