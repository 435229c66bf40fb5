// SPDX-License-Identifier: Apache-2.0
// limiter.hpp: the strategy's one limiter gate over a bulkhead, a concurrency limit and a rate
// limiter: the spec under one name, and each kind's answers and releases, step by step.
#include "backoff/limiter.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "backoff/error.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::limit_outcome;
using backoff::limiter_answer;

std::string limiter_error_of(std::string_view text) {
  try {
    static_cast<void>(backoff::parse_limiter(text));
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LimiterSpec, EachKindReadsBackEqual) {
  for (const std::string_view text :
       {"bulkhead(max=10, queue=20, wait=1s)", "limit(kind=aimd)", "limit(kind=vegas, max=50)",
        "rate(per_s=100, burst=20)", "rate(per_s=5, burst=1, wait=2s)"}) {
    const backoff::limiter_config c = backoff::parse_limiter(text);
    EXPECT_EQ(backoff::parse_limiter(backoff::to_string(c)), c) << text;
  }
  EXPECT_EQ(backoff::limiter_name(backoff::parse_limiter("bulkhead(max=2)")), "bulkhead");
  EXPECT_EQ(backoff::limiter_name(backoff::parse_limiter("limit(kind=gradient2)")), "limit");
  EXPECT_EQ(backoff::limiter_name(backoff::parse_limiter("rate(per_s=1)")), "rate");
  EXPECT_TRUE(backoff::may_queue(backoff::parse_limiter("bulkhead(max=2, queue=1, wait=1s)")));
  EXPECT_FALSE(backoff::may_queue(backoff::parse_limiter("bulkhead(max=2)")));
  EXPECT_FALSE(backoff::may_queue(backoff::parse_limiter("rate(per_s=1, wait=1s)")));
}

TEST(LimiterSpec, AnUnknownNameIsOneLineWithTheClosest) {
  EXPECT_EQ(limiter_error_of("bulkhed(max=2)"),
            "bad limiter \"bulkhed(max=2)\": unknown limiter \"bulkhed\" (known: bulkhead, "
            "limit, rate); did you mean 'bulkhead'?");
  // The kind's own reader words errors in its keys.
  EXPECT_NE(limiter_error_of("rate(per_s=0)").find("per_s"), std::string::npos);
}

TEST(Limiter, BulkheadAdmitsMaxThenRefusesAndLeavesOnRelease) {
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=2)")};
  const auto a = gate.acquire(0s);
  const auto b = gate.acquire(0s);
  const auto c = gate.acquire(0s);
  EXPECT_EQ(a.what, limiter_answer::admitted);
  EXPECT_EQ(b.what, limiter_answer::admitted);
  EXPECT_EQ(c.what, limiter_answer::refused);
  EXPECT_EQ(gate.as_bulkhead()->in_use(), 2U);
  gate.release(c, 1s, limit_outcome::success);  // refused: nothing held
  EXPECT_EQ(gate.as_bulkhead()->in_use(), 2U);
  gate.release(a, 1s, limit_outcome::dropped);
  EXPECT_EQ(gate.as_bulkhead()->in_use(), 1U);
  EXPECT_EQ(gate.acquire(1s).what, limiter_answer::admitted);
}

TEST(Limiter, BulkheadWithAQueueAsksToWaitInLineForItsWait) {
  backoff::limiter gate{backoff::parse_limiter("bulkhead(max=1, queue=3, wait=250ms)")};
  const auto first = gate.acquire(0s);
  auto second = gate.acquire(0s);
  ASSERT_EQ(second.what, limiter_answer::queue);
  EXPECT_EQ(second.wait, 250ms);
  EXPECT_FALSE(second.holds);
  // The line is the bulkhead's: a slot handed over on leave() goes to the waiter.
  backoff::bulkhead& pool = *gate.as_bulkhead();
  bool woken = false;
  const auto never_sleeps = [&](backoff::duration, std::stop_token token) {
    woken = token.stop_requested();
    return !woken;
  };
  gate.release(first, 1s, limit_outcome::success);
  ASSERT_TRUE(backoff::enter(pool, second.wait, never_sleeps));
  backoff::limiter::queued_entry(second);
  EXPECT_TRUE(second.holds);
  EXPECT_EQ(pool.in_use(), 1U);
  gate.release(second, 2s, limit_outcome::success);
  EXPECT_EQ(pool.in_use(), 0U);
}

TEST(Limiter, ConcurrencyLimitSamplesTheAttemptsLatencyOnRelease) {
  backoff::limiter gate{backoff::parse_limiter("limit(kind=aimd, initial=2, min=1, max=10)")};
  backoff::concurrency_limiter& limit = *gate.as_limit();
  const auto a = gate.acquire(0ms);
  const auto b = gate.acquire(0ms);
  EXPECT_EQ(gate.acquire(0ms).what, limiter_answer::refused);
  EXPECT_EQ(limit.inflight(), 2U);
  // AIMD: a drop cuts the limit to floor(2 * 0.9) = 1; a success at inflight*2 >= limit adds 1.
  gate.release(a, 10ms, limit_outcome::dropped);
  EXPECT_EQ(limit.limit(), 1U);
  gate.release(b, 10ms, limit_outcome::success);
  EXPECT_EQ(limit.limit(), 2U);
  EXPECT_EQ(limit.inflight(), 0U);
  const auto stats = limit.stats();
  EXPECT_EQ(stats.rejected, 1U);
  EXPECT_EQ(stats.dropped, 1U);
  EXPECT_EQ(stats.succeeded, 1U);
}

TEST(Limiter, RateGivesTheBurstThenAReservationToWaitFor) {
  backoff::limiter gate{backoff::parse_limiter("rate(per_s=10, burst=2, wait=150ms)")};
  EXPECT_EQ(gate.acquire(0ms).what, limiter_answer::admitted);
  EXPECT_EQ(gate.acquire(0ms).what, limiter_answer::admitted);
  const auto third = gate.acquire(0ms);
  EXPECT_EQ(third.what, limiter_answer::wait);
  EXPECT_EQ(third.wait, 100ms);  // one token every 100 ms
  const auto fourth = gate.acquire(0ms);
  EXPECT_EQ(fourth.what, limiter_answer::refused);  // 200 ms is past the 150 ms it waits
  gate.release(third, 1s, limit_outcome::success);  // nothing to give back
  EXPECT_EQ(gate.acquire(300ms).what, limiter_answer::admitted);
}

}  // namespace
