// SPDX-License-Identifier: Apache-2.0
// Bulkheads (bulkhead.hpp): slots taken and given back in exact sequences, replaying the peers'
// own cases (failsafe-go bulkhead_test.go, resilience4j SemaphoreBulkheadTest.java, Polly's
// BulkheadScenarios.cs), the queue's order and hand-over, cancellation racing a hand-over, the
// blocking helper through a recording sleep (no real time), the spec reader, and a stress test
// for TSan (never more than max inside, no slot lost).
#include "backoff/bulkhead.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"

namespace bulkhead_test {

using namespace std::chrono_literals;
using backoff::bulkhead;
using backoff::bulkhead_config;
using backoff::bulkhead_entry;
using backoff::bulkhead_waiter;
using backoff::duration;
using backoff::parse_bulkhead;

bulkhead_config bulkhead_with(std::uint32_t max, std::uint32_t queue = 0, duration wait = {}) {
  bulkhead_config c;
  c.max = max;
  c.queue = queue;
  c.wait = wait;
  return c;
}

// A waiter that counts its wakes and remembers the order in which waiters were woken.
struct counting_waiter : bulkhead_waiter {
  explicit counting_waiter(int id_, std::vector<int>* order_ = nullptr) noexcept
      : bulkhead_waiter(&wake), id(id_), order(order_) {}
  static void wake(bulkhead_waiter& self) noexcept {
    auto& w = static_cast<counting_waiter&>(self);
    ++w.wakes;
    if (w.order != nullptr) w.order->push_back(w.id);
  }
  int id;
  std::vector<int>* order;
  int wakes = 0;
};

// A sleep that records what it was asked, and lets the test act while "asleep".
struct recording_sleep {
  std::vector<duration> asked;
  std::function<void()> while_asleep;
  bool woken = false;  // its stop token was requested when it returned

  std::function<bool(duration, std::stop_token)> fn() {
    return [this](duration d, std::stop_token stop) {
      asked.push_back(d);
      if (while_asleep) while_asleep();
      woken = stop.stop_requested();
      return !woken;
    };
  }
};

// ---------------------------------------------------------------------------------------------
// Slots without waiting.

// failsafe-go bulkhead/bulkhead_test.go, TestTryAcquirePermitAndReleasePermit (maxConcurrency 2).
TEST(Bulkhead, FailsafeTryAcquireAndRelease) {
  bulkhead b{bulkhead_with(2)};
  EXPECT_TRUE(b.try_enter());
  EXPECT_TRUE(b.try_enter());
  EXPECT_FALSE(b.try_enter());
  b.leave();
  EXPECT_TRUE(b.try_enter());
  EXPECT_FALSE(b.try_enter());
  b.leave();
  b.leave();
  EXPECT_TRUE(b.try_enter());
  EXPECT_TRUE(b.try_enter());
  EXPECT_FALSE(b.try_enter());
  EXPECT_EQ(b.in_use(), 2u);
}

// resilience4j SemaphoreBulkheadTest.shouldHandleBasicBulkheadOperationsInBothThreadModes
// (maxConcurrentCalls 2, maxWaitDuration 0): permitted, permitted, rejected, finished twice,
// permitted; the available count 0, 1, 2 along the way.
TEST(Bulkhead, Resilience4jBasicOperations) {
  bulkhead b{bulkhead_with(2)};
  EXPECT_TRUE(b.try_enter());
  EXPECT_TRUE(b.try_enter());
  EXPECT_EQ(b.config().max - b.in_use(), 0u);
  EXPECT_FALSE(b.try_enter());
  b.leave();
  EXPECT_EQ(b.config().max - b.in_use(), 1u);
  b.leave();
  EXPECT_EQ(b.config().max - b.in_use(), 2u);
  EXPECT_TRUE(b.try_enter());
}

// max=2, queue=0: the third enqueue is refused at once and nothing waits.
TEST(Bulkhead, ThirdRefusedWithoutQueue) {
  bulkhead b{bulkhead_with(2)};
  counting_waiter w1{1}, w2{2}, w3{3};
  EXPECT_EQ(b.enqueue(w1), bulkhead_entry::admitted);
  EXPECT_EQ(b.enqueue(w2), bulkhead_entry::admitted);
  EXPECT_EQ(b.enqueue(w3), bulkhead_entry::full);
  EXPECT_EQ(b.waiting(), 0u);
  EXPECT_FALSE(b.cancel(w3)) << "never queued: nothing to cancel, no slot";
}

// ---------------------------------------------------------------------------------------------
// The queue.

TEST(Bulkhead, QueuedCallersAdmittedInOrder) {
  bulkhead b{bulkhead_with(1, 3, 1s)};
  std::vector<int> order;
  counting_waiter w1{1, &order}, w2{2, &order}, w3{3, &order}, w4{4, &order};
  ASSERT_TRUE(b.try_enter());
  EXPECT_EQ(b.enqueue(w1), bulkhead_entry::queued);
  EXPECT_EQ(b.enqueue(w2), bulkhead_entry::queued);
  EXPECT_EQ(b.enqueue(w3), bulkhead_entry::queued);
  EXPECT_EQ(b.enqueue(w4), bulkhead_entry::full) << "queue=3 is full";
  EXPECT_EQ(b.waiting(), 3u);

  b.leave();  // straight to w1: the slot count stays at 1
  EXPECT_EQ(order, std::vector<int>{1});
  EXPECT_EQ(b.in_use(), 1u);
  EXPECT_EQ(b.waiting(), 2u);
  EXPECT_FALSE(b.try_enter()) << "no barging past the queue";
  EXPECT_TRUE(b.cancel(w1)) << "w1 was handed the slot";

  b.leave();
  b.leave();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(b.cancel(w2));
  EXPECT_TRUE(b.cancel(w3));
  EXPECT_EQ(w1.wakes + w2.wakes + w3.wakes, 3);
  EXPECT_EQ(b.in_use(), 1u);
  EXPECT_EQ(b.waiting(), 0u);
  b.leave();
  EXPECT_EQ(b.in_use(), 0u);
}

// A wait that times out leaves the queue without a slot, and the queue shrinks: the next leave
// frees the slot rather than handing it to nobody.
TEST(Bulkhead, TimedOutWaiterLeavesTheQueue) {
  bulkhead b{bulkhead_with(1, 2, 1s)};
  counting_waiter w1{1}, w2{2};
  ASSERT_TRUE(b.try_enter());
  ASSERT_EQ(b.enqueue(w1), bulkhead_entry::queued);
  ASSERT_EQ(b.enqueue(w2), bulkhead_entry::queued);
  EXPECT_FALSE(b.cancel(w1));  // w1's timer fired first
  EXPECT_EQ(b.waiting(), 1u);
  b.leave();
  EXPECT_EQ(w1.wakes, 0);
  EXPECT_EQ(w2.wakes, 1) << "the slot skips the cancelled waiter";
  EXPECT_TRUE(b.cancel(w2));
  b.leave();
  EXPECT_EQ(b.in_use(), 0u);
  EXPECT_TRUE(b.try_enter());
}

// The waiter's timeout and a hand-over race; cancel says the slot arrived, so the caller holds it
// and must give it back: the slot is neither lost nor doubled.
TEST(Bulkhead, CancelAfterHandOverHoldsTheSlot) {
  bulkhead b{bulkhead_with(1, 1, 1s)};
  counting_waiter w{1};
  ASSERT_TRUE(b.try_enter());
  ASSERT_EQ(b.enqueue(w), bulkhead_entry::queued);
  b.leave();  // handed over while the waiter's timer fires
  EXPECT_TRUE(b.cancel(w));
  EXPECT_FALSE(b.cancel(w)) << "a second cancel finds an idle waiter";
  EXPECT_EQ(b.in_use(), 1u);
  b.leave();
  EXPECT_EQ(b.in_use(), 0u);
  // The waiter can wait again.
  ASSERT_TRUE(b.try_enter());
  EXPECT_EQ(b.enqueue(w), bulkhead_entry::queued);
  EXPECT_FALSE(b.cancel(w));
}

// The wake function runs outside the bulkhead's lock: it may call back into the bulkhead for
// another waiter (with the lock held, this would deadlock).
struct reentrant_waiter : bulkhead_waiter {
  reentrant_waiter(bulkhead& b, bulkhead_waiter& other) noexcept
      : bulkhead_waiter(&wake), pool(b), next(other) {}
  static void wake(bulkhead_waiter& self) noexcept {
    auto& w = static_cast<reentrant_waiter&>(self);
    w.entry = w.pool.enqueue(w.next);
  }
  bulkhead& pool;
  bulkhead_waiter& next;
  bulkhead_entry entry = bulkhead_entry::full;
};

TEST(Bulkhead, WakeRunsOutsideTheLock) {
  bulkhead b{bulkhead_with(1, 2, 1s)};
  counting_waiter second{2};
  reentrant_waiter first{b, second};
  ASSERT_TRUE(b.try_enter());
  ASSERT_EQ(b.enqueue(first), bulkhead_entry::queued);
  b.leave();
  EXPECT_EQ(first.entry, bulkhead_entry::queued);
  EXPECT_TRUE(b.cancel(first));
  EXPECT_FALSE(b.cancel(second));
  b.leave();
  EXPECT_EQ(b.in_use(), 0u);
}

// Polly test/Polly.Specs/Bulkhead/BulkheadScenarios.cs and BulkheadSpecsBase.cs,
// Should_control_executions_per_specification: right after all actions are queued, executing =
// min(total, max), queuing = min(queue, max(0, total - max)), rejects = max(0, total - max -
// queue); with cancelQueuing one queued action is cancelled; then every executing action
// completes in turn, each freeing a slot for the next queued one, until all are done.
struct polly_scenario {
  std::uint32_t max, queue, total;
  bool cancel_queuing;
  std::uint32_t executing, queuing, rejects;
};

class BulkheadPollyScenarios : public ::testing::TestWithParam<polly_scenario> {};

TEST_P(BulkheadPollyScenarios, ExactCounts) {
  const polly_scenario s = GetParam();
  bulkhead b{bulkhead_with(s.max, s.queue, s.queue > 0 ? duration{1s} : duration{0})};
  std::vector<int> order;
  std::vector<std::unique_ptr<counting_waiter>> waiters;
  std::uint32_t executing = 0, rejects = 0;
  std::vector<counting_waiter*> queued;
  for (std::uint32_t i = 0; i < s.total; ++i) {
    waiters.push_back(std::make_unique<counting_waiter>(static_cast<int>(i), &order));
    switch (b.enqueue(*waiters.back())) {
      case bulkhead_entry::admitted:
        ++executing;
        break;
      case bulkhead_entry::queued:
        queued.push_back(waiters.back().get());
        break;
      case bulkhead_entry::full:
        ++rejects;
        break;
    }
  }
  EXPECT_EQ(executing, s.executing);
  EXPECT_EQ(queued.size(), s.queuing);
  EXPECT_EQ(rejects, s.rejects);
  EXPECT_EQ(b.in_use(), s.executing);
  EXPECT_EQ(s.max - b.in_use(), s.max - s.executing) << "BulkheadAvailableCount";
  EXPECT_EQ(s.queue - b.waiting(), s.queue - s.queuing) << "QueueAvailableCount";

  std::uint32_t cancelled = 0;
  if (s.cancel_queuing && !queued.empty()) {
    EXPECT_FALSE(b.cancel(*queued.front()));
    queued.erase(queued.begin());
    ++cancelled;
  }
  std::uint32_t completed = 0;
  std::size_t woken = 0;
  while (b.in_use() > 0) {
    b.leave();  // an executing action completes; the oldest queued one, if any, starts
    ++completed;
    if (order.size() > woken) {
      EXPECT_TRUE(b.cancel(*waiters[static_cast<std::size_t>(order[woken])]));
      ++woken;
    }
  }
  EXPECT_EQ(completed, s.total - s.rejects - cancelled);
  EXPECT_EQ(b.waiting(), 0u);
  std::vector<int> expected_order;
  for (const counting_waiter* w : queued) expected_order.push_back(w->id);
  EXPECT_EQ(order, expected_order) << "queued actions run oldest first";
}

INSTANTIATE_TEST_SUITE_P(
    Polly, BulkheadPollyScenarios,
    ::testing::Values(
        // max, queue, total, cancel queuing; executing, queuing, rejects
        polly_scenario{5, 0, 3, false, 3, 0, 0},   // no queue, not even oversubscribed
        polly_scenario{20, 0, 3, false, 3, 0, 0},  // high capacity, no queue
        polly_scenario{3, 0, 4, false, 3, 0, 1},   // no queue, oversubscribed
        polly_scenario{3, 1, 5, false, 3, 1, 1},   // not enough queue to avoid rejections
        polly_scenario{6, 3, 9, true, 6, 3, 0},    // enough queue; cancel some queuing
        polly_scenario{5, 3, 8, false, 5, 3, 0},   // enough queue to avoid rejections
        polly_scenario{1, 6, 5, true, 1, 4, 0}));  // very tight capacity, huge queue

// ---------------------------------------------------------------------------------------------
// The blocking helper, through a recording sleep.

// failsafe-go TestAcquirePermitWithMaxWaitTime (maxConcurrency 1, 100 ms): the first enters
// without waiting, the second waits its 100 ms and is refused (ErrFull); the queue is empty after.
// resilience4j SemaphoreBulkheadTest.testEntryTimeout is the same with 10 ms.
TEST(BulkheadEnter, FailsafeMaxWaitTimeRefuses) {
  bulkhead b{bulkhead_with(1, 1, 100ms)};
  recording_sleep sleep;
  EXPECT_TRUE(backoff::enter(b, 100ms, sleep.fn()));
  EXPECT_TRUE(sleep.asked.empty());
  EXPECT_FALSE(backoff::enter(b, 100ms, sleep.fn()));
  EXPECT_EQ(sleep.asked, std::vector<duration>{100ms});
  EXPECT_FALSE(sleep.woken);
  EXPECT_EQ(b.waiting(), 0u);
  EXPECT_EQ(b.in_use(), 1u);
}

// failsafe-go TestAcquirePermit (maxConcurrency 2): the third waits until a holder releases, then
// enters. Here the release happens while the third sleeps, and wakes that sleep through its token.
TEST(BulkheadEnter, HandOverWakesTheSleep) {
  bulkhead b{bulkhead_with(2, 1, 1s)};
  recording_sleep sleep;
  ASSERT_TRUE(backoff::enter(b, 1s, sleep.fn()));
  ASSERT_TRUE(backoff::enter(b, 1s, sleep.fn()));
  sleep.while_asleep = [&b] {
    EXPECT_EQ(b.waiting(), 1u);
    b.leave();  // another holder finishes
  };
  EXPECT_TRUE(backoff::enter(b, 1s, sleep.fn()));
  EXPECT_EQ(sleep.asked, std::vector<duration>{1s});
  EXPECT_TRUE(sleep.woken) << "the hand-over requested stop on the sleep's token";
  EXPECT_EQ(b.in_use(), 2u);
  EXPECT_EQ(b.waiting(), 0u);
}

TEST(BulkheadEnter, FullQueueRefusesWithoutSleeping) {
  bulkhead b{bulkhead_with(1, 1, 1s)};
  recording_sleep outer;
  recording_sleep inner;
  ASSERT_TRUE(b.try_enter());
  outer.while_asleep = [&] { EXPECT_FALSE(backoff::enter(b, 1s, inner.fn())); };
  EXPECT_FALSE(backoff::enter(b, 1s, outer.fn()));
  EXPECT_TRUE(inner.asked.empty()) << "queue=1 held by the outer waiter: refused at once";
  EXPECT_EQ(b.waiting(), 0u);
}

TEST(BulkheadEnter, ZeroWaitOnlyTries) {
  bulkhead b{bulkhead_with(1, 1, 1s)};
  recording_sleep sleep;
  EXPECT_TRUE(backoff::enter(b, 0s, sleep.fn()));
  EXPECT_FALSE(backoff::enter(b, 0s, sleep.fn()));
  EXPECT_TRUE(sleep.asked.empty());
  EXPECT_EQ(b.waiting(), 0u);
}

// resilience4j SemaphoreBulkheadTest.testTryEnterWithInterruptDuringTimeout: a waiter interrupted
// while it waits gets no permit. Here the caller's cancel token wakes the sleep.
TEST(BulkheadEnter, CancelWhileWaitingRefuses) {
  bulkhead b{bulkhead_with(1, 1, 2s)};
  recording_sleep sleep;
  std::stop_source cancel;
  ASSERT_TRUE(b.try_enter());
  sleep.while_asleep = [&cancel] { cancel.request_stop(); };
  EXPECT_FALSE(backoff::enter(b, 2s, sleep.fn(), cancel.get_token()));
  EXPECT_TRUE(sleep.woken);
  EXPECT_EQ(b.waiting(), 0u);
  EXPECT_EQ(b.in_use(), 1u);
}

// Cancelled after a slot was handed over: the slot goes back (to the next waiter, or free).
TEST(BulkheadEnter, CancelAfterHandOverGivesTheSlotBack) {
  bulkhead b{bulkhead_with(1, 1, 2s)};
  recording_sleep sleep;
  std::stop_source cancel;
  ASSERT_TRUE(b.try_enter());
  sleep.while_asleep = [&] {
    b.leave();
    cancel.request_stop();
  };
  EXPECT_FALSE(backoff::enter(b, 2s, sleep.fn(), cancel.get_token()));
  EXPECT_EQ(b.in_use(), 0u);
  EXPECT_FALSE(backoff::enter(b, 2s, sleep.fn(), cancel.get_token())) << "already cancelled";
}

// The overload with the bulkhead's own wait: without a queue it never sleeps.
TEST(BulkheadEnter, ConfigWaitWithoutQueue) {
  bulkhead b{bulkhead_with(1)};
  EXPECT_TRUE(backoff::enter(b));
  EXPECT_FALSE(backoff::enter(b));
  b.leave();
  EXPECT_EQ(b.in_use(), 0u);
}

// A sleep that throws: the waiter leaves the queue and the exception goes on.
TEST(BulkheadEnter, ThrowingSleepLeavesTheQueue) {
  bulkhead b{bulkhead_with(1, 1, 1s)};
  ASSERT_TRUE(b.try_enter());
  const auto throwing = [](duration, std::stop_token) -> bool { throw std::runtime_error("boom"); };
  EXPECT_THROW(backoff::enter(b, 1s, throwing), std::runtime_error);
  EXPECT_EQ(b.waiting(), 0u);
  EXPECT_EQ(b.in_use(), 1u);
}

// ---------------------------------------------------------------------------------------------
// The spec.

TEST(BulkheadSpec, RoundTrip) {
  const bulkhead_config c = parse_bulkhead("bulkhead(max=10, queue=20, wait=1s)");
  EXPECT_EQ(c, bulkhead_with(10, 20, 1s));
  EXPECT_EQ(c.to_string(), "bulkhead(max=10, queue=20, wait=1s)");
  EXPECT_EQ(parse_bulkhead(c.to_string()), c);
  EXPECT_EQ(parse_bulkhead("bulkhead"), bulkhead_config{});
  EXPECT_EQ(bulkhead_config{}.to_string(), "bulkhead(max=25, queue=0, wait=0s)");
  EXPECT_EQ(parse_bulkhead(" bulkhead ( max = 3 ) ").max, 3u);
}

std::string bulkhead_error(std::string_view spec) {
  try {
    parse_bulkhead(spec);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BulkheadSpec, OneLineErrors) {
  EXPECT_EQ(bulkhead_error("bulkhead(mxa=3)"),
            "bad bulkhead \"bulkhead(mxa=3)\": unknown parameter \"mxa\" (known: max, queue, "
            "wait); did you mean 'max'?");
  EXPECT_EQ(bulkhead_error("bulkhed(max=3)"),
            "bad bulkhead \"bulkhed(max=3)\": unknown bulkhead \"bulkhed\" (known: bulkhead); did "
            "you mean 'bulkhead'?");
  EXPECT_EQ(bulkhead_error("bulkhead(max=0)"),
            "bad bulkhead \"bulkhead(max=0)\": max=0 must be a whole number in 1..1000000");
  EXPECT_EQ(bulkhead_error("bulkhead(max=2.5)"),
            "bad bulkhead \"bulkhead(max=2.5)\": max=2.5 must be a whole number in 1..1000000");
  EXPECT_EQ(bulkhead_error("bulkhead(queue=5)"),
            "bad bulkhead \"bulkhead(queue=5)\": queue=5 with wait=0s: a queued caller would give "
            "up at once (give wait > 0)");
  EXPECT_EQ(bulkhead_error("bulkhead(wait=1s)"),
            "bad bulkhead \"bulkhead(wait=1s)\": wait=1s with queue=0: no caller may wait (give "
            "queue > 0)");
  EXPECT_EQ(bulkhead_error("bulkhead(queue=1, wait=2d)"),
            "bad bulkhead \"bulkhead(queue=1, wait=2d)\": wait=2d must be in [0, 1d]");
}

// ---------------------------------------------------------------------------------------------
// Stress, for TSan: threads enter (some waiting, with timeouts that are a few yields) and leave.

// A sleep that ends when woken or after a few yields, as a short timeout would.
bool bulkhead_yielding_sleep(duration, std::stop_token stop) {
  for (int i = 0; i < 20 && !stop.stop_requested(); ++i) std::this_thread::yield();
  return !stop.stop_requested();
}

TEST(BulkheadStress, NeverMoreThanMaxAndNoSlotLost) {
  constexpr std::uint32_t max = 3;
  constexpr int threads = 4;
  constexpr int iterations = 2000;
  bulkhead b{bulkhead_with(max, 4, 1s)};
  std::atomic<std::uint32_t> inside{0};
  std::atomic<std::uint32_t> most_inside{0};
  std::atomic<int> entered{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < iterations; ++i) {
        const bool ok =
            (i + t) % 3 == 0 ? b.try_enter() : backoff::enter(b, 1s, bulkhead_yielding_sleep);
        if (!ok) {
          refused.fetch_add(1);
          continue;
        }
        entered.fetch_add(1);
        const std::uint32_t now_inside = inside.fetch_add(1) + 1;
        std::uint32_t seen = most_inside.load();
        while (now_inside > seen && !most_inside.compare_exchange_weak(seen, now_inside)) {
        }
        std::this_thread::yield();
        inside.fetch_sub(1);
        b.leave();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  EXPECT_LE(most_inside.load(), max);
  EXPECT_EQ(entered.load() + refused.load(), threads * iterations);
  EXPECT_GT(entered.load(), 0);
  EXPECT_EQ(b.in_use(), 0u);
  EXPECT_EQ(b.waiting(), 0u);
  for (std::uint32_t i = 0; i < max; ++i) EXPECT_TRUE(b.try_enter()) << "slot " << i << " lost";
  EXPECT_FALSE(b.try_enter());
}

}  // namespace bulkhead_test
