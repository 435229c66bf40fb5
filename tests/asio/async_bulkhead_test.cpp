// SPDX-License-Identifier: Apache-2.0
// async_enter (async_bulkhead.hpp): a slot at once or refused at once, waiters woken in order by
// leave(), the wait's end by timeout, stop token and cancellation slot, cancellation racing a
// hand-over, coroutines destroyed while queued or just after a hand-over (no slot lost), wakes
// from another thread (for TSan), and heap-owning arguments and captures around the co_await
// (for ASan; async_retry.hpp, "GCC before 13").
#include "backoff/async_bulkhead.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backoff/bulkhead.hpp"
#include "backoff/duration.hpp"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace async_bulkhead_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::bulkhead;
using backoff::bulkhead_config;
using backoff::duration;

bulkhead_config pool_of(std::uint32_t max, std::uint32_t queue = 0, duration wait = {}) {
  bulkhead_config c;
  c.max = max;
  c.queue = queue;
  c.wait = wait;
  return c;
}

// Runs what is ready now, without waiting for timers.
void run_ready(asio::io_context& io) {
  io.restart();
  io.poll();
}

// One async_enter spawned on its own, with a cancellation signal of its own.
struct pending_enter {
  asio::cancellation_signal signal;
  std::optional<bool> result;
};

std::shared_ptr<pending_enter> spawn_enter(asio::io_context& io, bulkhead& pool, duration wait,
                                           std::stop_token stop = {}) {
  auto p = std::make_shared<pending_enter>();
  asio::co_spawn(io, backoff::async_enter(pool, wait, std::move(stop)),
                 asio::bind_cancellation_slot(p->signal.slot(), [p](std::exception_ptr e, bool r) {
                   if (e) std::rethrow_exception(e);
                   p->result = r;
                 }));
  return p;
}

TEST(AsyncBulkhead, FreeSlotAtOnceAndFullRefusedAtOnce) {
  asio::io_context io;
  bulkhead pool{pool_of(1)};
  const auto first = spawn_enter(io, pool, 1s);
  const auto second = spawn_enter(io, pool, 1s);
  run_ready(io);
  EXPECT_EQ(first->result, std::optional<bool>{true});
  EXPECT_EQ(second->result, std::optional<bool>{false}) << "queue=0: refused without waiting";
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.waiting(), 0u);
}

TEST(AsyncBulkhead, LeaveWakesTheOldestWaiter) {
  asio::io_context io;
  bulkhead pool{pool_of(1, 2, 24h)};
  ASSERT_TRUE(pool.try_enter());
  const auto a = spawn_enter(io, pool, 24h);
  const auto b = spawn_enter(io, pool, 24h);
  run_ready(io);
  EXPECT_EQ(pool.waiting(), 2u);
  EXPECT_FALSE(a->result.has_value());
  pool.leave();
  run_ready(io);
  EXPECT_EQ(a->result, std::optional<bool>{true});
  EXPECT_FALSE(b->result.has_value()) << "b is behind a";
  pool.leave();  // a is done
  run_ready(io);
  EXPECT_EQ(b->result, std::optional<bool>{true});
  EXPECT_EQ(pool.in_use(), 1u);
  pool.leave();
  EXPECT_EQ(pool.in_use(), 0u);
}

// The timer runs out (after a nanosecond): refused, and the queue shrinks.
TEST(AsyncBulkhead, TimeoutRefusesAndLeavesTheQueue) {
  asio::io_context io;
  bulkhead pool{pool_of(1, 1, 1ns)};
  ASSERT_TRUE(pool.try_enter());
  const auto a = spawn_enter(io, pool, 1ns);
  io.run();
  EXPECT_EQ(a->result, std::optional<bool>{false});
  EXPECT_EQ(pool.waiting(), 0u);
  EXPECT_EQ(pool.in_use(), 1u);
}

TEST(AsyncBulkhead, StopTokenEndsTheWait) {
  asio::io_context io;
  bulkhead pool{pool_of(1, 1, 24h)};
  std::stop_source stop;
  ASSERT_TRUE(pool.try_enter());
  const auto a = spawn_enter(io, pool, 24h, stop.get_token());
  run_ready(io);
  ASSERT_EQ(pool.waiting(), 1u);
  stop.request_stop();
  run_ready(io);
  EXPECT_EQ(a->result, std::optional<bool>{false});
  EXPECT_EQ(pool.waiting(), 0u);
  EXPECT_EQ(pool.in_use(), 1u);
}

TEST(AsyncBulkhead, CancellationSlotEndsTheWait) {
  asio::io_context io;
  bulkhead pool{pool_of(1, 1, 24h)};
  ASSERT_TRUE(pool.try_enter());
  const auto a = spawn_enter(io, pool, 24h);
  run_ready(io);
  a->signal.emit(asio::cancellation_type::terminal);
  run_ready(io);
  EXPECT_EQ(a->result, std::optional<bool>{false});
  EXPECT_EQ(pool.waiting(), 0u);
  pool.leave();
  EXPECT_EQ(pool.in_use(), 0u) << "the slot is free, not handed to the cancelled waiter";
}

// Cancelled after a slot was handed over but before the coroutine ran: it gives the slot back,
// and the next waiter gets it.
TEST(AsyncBulkhead, CancelledAfterHandOverPassesTheSlotOn) {
  asio::io_context io;
  bulkhead pool{pool_of(1, 2, 24h)};
  ASSERT_TRUE(pool.try_enter());
  const auto a = spawn_enter(io, pool, 24h);
  const auto b = spawn_enter(io, pool, 24h);
  run_ready(io);
  pool.leave();  // to a
  a->signal.emit(asio::cancellation_type::terminal);
  run_ready(io);
  EXPECT_EQ(a->result, std::optional<bool>{false});
  EXPECT_EQ(b->result, std::optional<bool>{true});
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.waiting(), 0u);
}

// The io_context goes with the coroutine still queued: the frame's destruction takes it out of
// the queue.
TEST(AsyncBulkhead, DestroyedWhileQueued) {
  bulkhead pool{pool_of(1, 1, 24h)};
  ASSERT_TRUE(pool.try_enter());
  {
    asio::io_context io;
    const auto a = spawn_enter(io, pool, 24h);
    run_ready(io);
    EXPECT_EQ(pool.waiting(), 1u);
  }
  EXPECT_EQ(pool.waiting(), 0u);
  EXPECT_EQ(pool.in_use(), 1u);
  pool.leave();
  EXPECT_EQ(pool.in_use(), 0u);
}

// Handed a slot, then destroyed before it ran: the frame gives the slot back.
TEST(AsyncBulkhead, DestroyedAfterHandOverGivesTheSlotBack) {
  bulkhead pool{pool_of(1, 1, 24h)};
  ASSERT_TRUE(pool.try_enter());
  {
    asio::io_context io;
    const auto a = spawn_enter(io, pool, 24h);
    run_ready(io);
    pool.leave();  // handed to a, whose wake is posted but never runs
    EXPECT_EQ(pool.in_use(), 1u);
  }
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_TRUE(pool.try_enter());
}

// Two threads, each with its own io_context, share one bulkhead: a leave() on one thread wakes
// waiters of the other. Never more than max inside; everyone gets in (the queue holds them all);
// no slot is lost.
asio::awaitable<void> async_bulkhead_worker(bulkhead* pool, std::atomic<int>* inside,
                                            std::atomic<int>* most, std::atomic<int>* entered) {
  const bool in = co_await backoff::async_enter(*pool, 24h);
  if (!in) co_return;
  entered->fetch_add(1);
  const int now_inside = inside->fetch_add(1) + 1;
  int seen = most->load();
  while (now_inside > seen && !most->compare_exchange_weak(seen, now_inside)) {
  }
  // A statement of its own: GCC 12 miscompiles a co_await of this_coro inside an expression.
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  co_await asio::post(executor, asio::use_awaitable);
  inside->fetch_sub(1);
  pool->leave();
}

TEST(AsyncBulkhead, WakesFromAnotherThread) {
  constexpr int per_thread = 200;
  bulkhead pool{pool_of(2, 2 * per_thread, 24h)};
  std::atomic<int> inside{0}, most{0}, entered{0};
  asio::io_context io1, io2;
  for (int i = 0; i < per_thread; ++i) {
    asio::co_spawn(io1, async_bulkhead_worker(&pool, &inside, &most, &entered), asio::detached);
    asio::co_spawn(io2, async_bulkhead_worker(&pool, &inside, &most, &entered), asio::detached);
  }
  std::thread t1([&] { io1.run(); });
  std::thread t2([&] { io2.run(); });
  t1.join();
  t2.join();
  EXPECT_LE(most.load(), 2);
  EXPECT_EQ(entered.load(), 2 * per_thread);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.waiting(), 0u);
}

// Heap-owning captures and arguments around the co_await (async_temporaries_test.cpp's rule): a
// coroutine lambda that owns a string and a vector, a stop token made inside the co_await
// expression, and a std::function called after the wait; under ASan nothing is freed twice.
TEST(AsyncBulkhead, HeapOwningCapturesSurviveTheWait) {
  asio::io_context io;
  bulkhead pool{pool_of(1, 1, 24h)};
  ASSERT_TRUE(pool.try_enter());
  std::stop_source stop;
  std::string seen;
  const std::string tag(64, 'x');  // longer than the small-string buffer
  const std::vector<int> numbers{1, 2, 3};
  std::function<void(const std::string&)> note =
      [&seen, suffix = std::string(40, 'y')](const std::string& s) { seen = s + suffix; };
  auto work = [tag, numbers, note, &pool, &stop]() -> asio::awaitable<void> {
    const bool in = co_await backoff::async_enter(pool, 24h, stop.get_token());
    note(tag + std::to_string(numbers.size()) + (in ? "in" : "out"));
    if (in) pool.leave();
  };
  asio::co_spawn(io, work(), asio::detached);
  run_ready(io);
  pool.leave();
  run_ready(io);
  EXPECT_EQ(seen, std::string(64, 'x') + "3in" + std::string(40, 'y'));
  EXPECT_EQ(pool.in_use(), 0u);
}

}  // namespace async_bulkhead_test

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
