// SPDX-License-Identifier: Apache-2.0
// Rate limiters (rate_limiter.hpp): exact token counts and waits on an injected time line,
// replaying the peers' own cases (Polly's TokenBucketRateLimiterTestsBase.cs, failsafe-go
// ratelimiter_test.go and ratelimiterstats_test.go, with the differences that are on purpose),
// reservations below zero up to the max wait, saturation at the ends of the clock, the spec
// reader, and a stress test for TSan (never more than burst + per_s * elapsed).
#include "backoff/rate_limiter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backoff/clock.hpp"
#include "backoff/duration.hpp"
#include "backoff/error.hpp"

namespace rate_limiter_test {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::parse_rate_limiter;
using backoff::rate_limiter;
using backoff::rate_limiter_config;

rate_limiter_config rate_with(double per_s, std::uint32_t burst, duration wait = {}) {
  rate_limiter_config c;
  c.per_s = per_s;
  c.burst = burst;
  c.wait = wait;
  return c;
}

// A limiter granting one token every `every`.
rate_limiter one_per(duration every, std::uint32_t burst, duration wait = {}) {
  return rate_limiter{rate_with(1e9 / static_cast<double>(every.count()), burst, wait)};
}

int take_all(rate_limiter& r, duration now) {
  int n = 0;
  while (r.try_acquire(now)) {
    if (++n > 10'000'000) break;  // a limiter that never says no is a failure, not a hang
  }
  return n;
}

constexpr duration rate_tick = 100ns;  // .NET's TimeSpan tick, the step of Polly's tests

// ---------------------------------------------------------------------------------------------
// The bucket.

// burst 3 at 1/s: three at once, the fourth reserved for exactly 1 s later, the fifth refused
// with a max wait of 1 s (it would wait 2 s), and the count below zero meanwhile.
TEST(RateLimiter, BurstThenReservedWait) {
  rate_limiter r{rate_with(1, 3, 1s)};
  EXPECT_EQ(r.interval(), 1s);
  EXPECT_DOUBLE_EQ(r.available(0s), 3.0) << "starts full";
  EXPECT_TRUE(r.try_acquire(0s));
  EXPECT_TRUE(r.try_acquire(0s));
  EXPECT_TRUE(r.try_acquire(0s));
  EXPECT_FALSE(r.try_acquire(0s));
  EXPECT_EQ(r.retry_after(0s), 1s);
  EXPECT_EQ(r.reserve(0s), std::optional<duration>{1s});
  EXPECT_DOUBLE_EQ(r.available(0s), -1.0);
  EXPECT_EQ(r.reserve(0s), std::nullopt) << "would wait 2 s, above wait=1s";
  EXPECT_EQ(r.reserve(0s, 2s), std::optional<duration>{2s});
  EXPECT_DOUBLE_EQ(r.available(0s), -2.0);
  EXPECT_FALSE(r.try_acquire(2s)) << "both reserved tokens are spoken for until 3 s";
  EXPECT_TRUE(r.try_acquire(3s));
}

// After an idle spell the bucket holds `burst` tokens, not more.
TEST(RateLimiter, RefillAfterIdleCappedAtBurst) {
  rate_limiter r{rate_with(10, 5)};
  EXPECT_EQ(take_all(r, 0s), 5);
  EXPECT_DOUBLE_EQ(r.available(300ms), 3.0);
  EXPECT_EQ(take_all(r, 300ms), 3);
  EXPECT_EQ(take_all(r, 1h), 5);
  EXPECT_EQ(r.retry_after(1h), 100ms);
}

// Continuous refill in integer nanoseconds: 3 per second is one token every 333333333 ns (1e9/3
// rounded), and 1000 grants take exactly 1000 intervals, with no drift.
TEST(RateLimiter, IntervalRoundedToTheNanosecond) {
  rate_limiter r{rate_with(3, 1)};
  EXPECT_EQ(r.interval(), 333'333'333ns);
  ASSERT_TRUE(r.try_acquire(0s));
  duration t{0};
  for (int i = 0; i < 1000; ++i) {
    t += r.interval();
    EXPECT_FALSE(r.try_acquire(t - 1ns));
    ASSERT_TRUE(r.try_acquire(t)) << i;
  }
  EXPECT_EQ(t, 1000 * 333'333'333ns);
}

TEST(RateLimiter, SeveralTokensAtOnce) {
  rate_limiter r{rate_with(1, 5)};
  EXPECT_FALSE(r.try_acquire(0s, 6)) << "more than the bucket holds";
  EXPECT_TRUE(r.try_acquire(0s, 4));
  EXPECT_FALSE(r.try_acquire(0s, 2));
  EXPECT_EQ(r.retry_after(0s, 2), 1s);
  EXPECT_EQ(r.reserve(0s, 10s, 6), std::optional<duration>{5s});
  EXPECT_EQ(r.reserve(0s, 10s, std::numeric_limits<std::uint32_t>::max()), std::nullopt);
}

TEST(RateLimiter, SaturatesAtTheEndsOfTheClock) {
  constexpr duration latest{std::numeric_limits<std::int64_t>::max()};
  constexpr duration earliest{std::numeric_limits<std::int64_t>::min()};
  rate_limiter r{rate_with(1, 2, 1s)};
  EXPECT_TRUE(r.try_acquire(earliest));
  EXPECT_TRUE(r.try_acquire(earliest));
  EXPECT_FALSE(r.try_acquire(earliest));
  EXPECT_EQ(r.reserve(earliest), std::optional<duration>{1s});
  rate_limiter late{rate_with(1, 2, 1s)};
  EXPECT_TRUE(late.try_acquire(latest - 10s));
  EXPECT_TRUE(late.try_acquire(latest - 10s));
  EXPECT_FALSE(late.try_acquire(latest - 10s));
  EXPECT_EQ(late.reserve(latest - 10s), std::optional<duration>{1s});
  EXPECT_EQ(late.retry_after(latest - 10s), 2s);
  // No time can be counted past the clock's last nanosecond: there, every call is granted
  // (without overflow) rather than refused for ever.
  EXPECT_TRUE(late.try_acquire(latest));
}

TEST(RateLimiter, CopyIsASnapshot) {
  rate_limiter r{rate_with(1, 2)};
  ASSERT_TRUE(r.try_acquire(0s));
  rate_limiter copy = r;
  EXPECT_TRUE(copy.try_acquire(0s));
  EXPECT_FALSE(copy.try_acquire(0s));
  EXPECT_TRUE(r.try_acquire(0s)) << "the original keeps its own token";
}

// ---------------------------------------------------------------------------------------------
// Polly test/Polly.Specs/RateLimit/TokenBucketRateLimiterTestsBase.cs, with time fixed and
// advanced by hand as there.

// Given_bucket_capacity_one_and_time_not_advanced_ratelimiter_specifies_correct_wait_until_next_
// execution, onePerSeconds 1, 2, 5.
TEST(RateLimiterPolly, CapacityOneTellsTheWait) {
  for (const duration every : {duration{1s}, duration{2s}, duration{5s}}) {
    rate_limiter r = one_per(every, 1);
    EXPECT_TRUE(r.try_acquire(0s));
    EXPECT_FALSE(r.try_acquire(0s));
    EXPECT_EQ(r.retry_after(0s), every);
  }
}

// Given_bucket_capacity_N_and_time_not_advanced_ratelimiter_permits_executions_up_to_bucket_
// capacity, bucketCapacity 1, 2, 50.
TEST(RateLimiterPolly, PermitsUpToCapacity) {
  for (const std::uint32_t capacity : {1u, 2u, 50u}) {
    rate_limiter r = one_per(1s, capacity);
    EXPECT_EQ(take_all(r, 0s), static_cast<int>(capacity));
    EXPECT_EQ(r.retry_after(0s), 1s);
  }
}

// Given_any_bucket_capacity_ratelimiter_permits_another_execution_per_interval: (onePer,
// capacity) in (1,1) (2,1) (5,1) (1,10) (2,10) (5,10); capacity * 3 rounds of "one tick short of
// the interval: refused, retry after one tick; at the interval: one, and no more".
TEST(RateLimiterPolly, AnotherExecutionPerInterval) {
  for (const int seconds : {1, 2, 5}) {
    for (const std::uint32_t capacity : {1u, 10u}) {
      const duration every = std::chrono::seconds{seconds};
      rate_limiter r = one_per(every, capacity);
      duration now{0};
      ASSERT_EQ(take_all(r, now), static_cast<int>(capacity));
      for (std::uint32_t i = 0; i < capacity * 3; ++i) {
        now += every - rate_tick;
        EXPECT_FALSE(r.try_acquire(now));
        EXPECT_EQ(r.retry_after(now), rate_tick);
        now += rate_tick;
        EXPECT_TRUE(r.try_acquire(now)) << seconds << "s, capacity " << capacity << ", " << i;
        EXPECT_FALSE(r.try_acquire(now));
      }
    }
  }
}

// Given_any_bucket_capacity_rate_limiter_permits_full_bucket_burst_after_exact_elapsed_time (10,
// 100), ..._half_full_bucket_burst_after_half_required_refill_time_elapsed (10, 100), and
// ..._only_full_bucket_burst_even_if_multiple_required_refill_time_elapsed ((100, 2), (100, 5)).
TEST(RateLimiterPolly, BurstAfterRefillTime) {
  for (const std::uint32_t capacity : {10u, 100u}) {
    rate_limiter full = one_per(1s, capacity);
    ASSERT_EQ(take_all(full, 0s), static_cast<int>(capacity));
    EXPECT_EQ(take_all(full, capacity * 1s), static_cast<int>(capacity));

    rate_limiter half = one_per(1s, capacity);
    ASSERT_EQ(take_all(half, 0s), static_cast<int>(capacity));
    EXPECT_EQ(take_all(half, capacity / 2 * 1s), static_cast<int>(capacity / 2));
  }
  for (const int multiple : {2, 5}) {
    rate_limiter r = one_per(1s, 100);
    ASSERT_EQ(take_all(r, 0s), 100);
    EXPECT_EQ(take_all(r, 100 * multiple * 1s), 100);
  }
}

// Given_immediate_parallel_contention_ratelimiter_still_only_permits_one, 2, 5 and 100 threads.
TEST(RateLimiterPolly, ParallelContentionPermitsOne) {
  for (const int contention : {2, 5, 100}) {
    rate_limiter r = one_per(1s, 1);
    std::atomic<bool> go{false};
    std::atomic<int> permitted{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < contention; ++i) {
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        if (r.try_acquire(0s)) permitted.fetch_add(1);
      });
    }
    go.store(true);
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(permitted.load(), 1) << contention;
  }
}

// ---------------------------------------------------------------------------------------------
// failsafe-go ratelimiter/ratelimiter_test.go and ratelimiterstats_test.go (smooth limiters,
// which hold one permit: burst 1).

// TestAcquirePermitWithMaxWaitTime (one per 100 ms): waits 0, waits 100 ms, refused (200 ms).
TEST(RateLimiterFailsafe, AcquirePermitWithMaxWaitTime) {
  rate_limiter r = one_per(100ms, 1);
  EXPECT_EQ(r.reserve(0s, 100ms), std::optional<duration>{0s});
  EXPECT_EQ(r.reserve(0s, 1000ms), std::optional<duration>{100ms});
  EXPECT_EQ(r.reserve(0s, 100ms), std::nullopt);
}

// TestTryReservePermit (one per 100 ms): 0; -1 with 10 ms; 100 ms; 200 ms; -1 with 100 ms.
TEST(RateLimiterFailsafe, TryReservePermit) {
  rate_limiter r = one_per(100ms, 1);
  EXPECT_EQ(r.reserve(0s, 1ms), std::optional<duration>{0s});
  EXPECT_EQ(r.reserve(0s, 10ms), std::nullopt);
  EXPECT_EQ(r.reserve(0s, 100ms), std::optional<duration>{100ms});
  EXPECT_EQ(r.reserve(0s, 200ms), std::optional<duration>{200ms});
  EXPECT_EQ(r.reserve(0s, 100ms), std::nullopt);
}

// TestSmoothAcquireInitialStats (one per 100 ns), first part: waits 0, 100; at 100 ns: 100, 200.
TEST(RateLimiterFailsafe, SmoothInitialWaits) {
  rate_limiter r = one_per(100ns, 1, 1s);
  EXPECT_EQ(r.reserve(0ns), std::optional<duration>{0ns});
  EXPECT_EQ(r.reserve(0ns), std::optional<duration>{100ns});
  EXPECT_EQ(r.reserve(100ns), std::optional<duration>{100ns});
  EXPECT_EQ(r.reserve(100ns), std::optional<duration>{200ns});
}

// TestTryAcquirePermit (one per 100 ns): yes, no; at 150 ns yes, no; at 210 ns failsafe-go says
// yes, because its smooth limiter aligns grants to a grid of 100 ns from its creation (the grant
// at 150 ns made the 200 ns slot the next). Here a token comes back one interval after the
// grant that took it: at 250 ns. The same in TestSmoothAcquireInitialStats' second part: 2
// permits at 250 ns after one at 150 ns wait 100 ns here, 50 ns there.
TEST(RateLimiterFailsafe, TryAcquirePermitWithoutTheGrid) {
  rate_limiter r = one_per(100ns, 1, 1s);
  EXPECT_TRUE(r.try_acquire(0ns));
  EXPECT_FALSE(r.try_acquire(0ns));
  EXPECT_TRUE(r.try_acquire(150ns));
  EXPECT_FALSE(r.try_acquire(150ns));
  EXPECT_FALSE(r.try_acquire(210ns));
  EXPECT_EQ(r.retry_after(210ns), 40ns);
  EXPECT_EQ(r.reserve(250ns, 1s, 2), std::optional<duration>{100ns});
}

// TestShouldAcquirePermitsEqually (smooth, one per 500 s): 7 permits at once wait as long as 7
// single ones, and 5 more at 2700 ns the same again. TestShouldHaveZeroWaitTime: a new limiter
// grants at once.
TEST(RateLimiterFailsafe, PermitsAtOnceOrOneByOneWaitTheSame) {
  rate_limiter together = one_per(500s, 1, 24h);
  rate_limiter singly = one_per(500s, 1, 24h);
  EXPECT_EQ(together.reserve(0ns, 1), std::optional<duration>{0s});
  EXPECT_EQ(singly.reserve(0ns), std::optional<duration>{0s});
  const auto seven = together.reserve(0ns, 7);
  std::optional<duration> last;
  for (int i = 0; i < 7; ++i) last = singly.reserve(0ns);
  EXPECT_EQ(seven, last);
  const auto five = together.reserve(2700ns, 5);
  for (int i = 0; i < 5; ++i) last = singly.reserve(2700ns);
  EXPECT_EQ(five, last);
}

// ---------------------------------------------------------------------------------------------
// The spec.

TEST(RateLimiterSpec, RoundTrip) {
  const rate_limiter_config c = parse_rate_limiter("rate(per_s=100, burst=20)");
  EXPECT_EQ(c, rate_with(100, 20));
  EXPECT_EQ(c.to_string(), "rate(per_s=100, burst=20, wait=0s)");
  EXPECT_EQ(parse_rate_limiter(c.to_string()), c);
  const rate_limiter_config slow = parse_rate_limiter("rate(per_s=0.5, wait=1500ms)");
  EXPECT_EQ(slow, rate_with(0.5, 1, 1500ms));
  EXPECT_EQ(parse_rate_limiter(slow.to_string()), slow);
  EXPECT_EQ(parse_rate_limiter("rate"), rate_limiter_config{});
}

std::string rate_error(std::string_view spec) {
  try {
    parse_rate_limiter(spec);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RateLimiterSpec, OneLineErrors) {
  EXPECT_EQ(rate_error("rate(per_sec=5)"),
            "bad rate limiter \"rate(per_sec=5)\": unknown parameter \"per_sec\" (known: per_s, "
            "burst, wait); did you mean 'per_s'?");
  EXPECT_EQ(rate_error("rat(per_s=5)"),
            "bad rate limiter \"rat(per_s=5)\": unknown rate limiter \"rat\" (known: rate); did "
            "you mean 'rate'?");
  EXPECT_EQ(rate_error("rate(per_s=0)"),
            "bad rate limiter \"rate(per_s=0)\": per_s=0 must be in [0.001, 1000000000]");
  EXPECT_EQ(rate_error("rate(burst=0)"),
            "bad rate limiter \"rate(burst=0)\": burst=0 must be a whole number in 1..1000000");
  EXPECT_EQ(rate_error("rate(wait=2d)"),
            "bad rate limiter \"rate(wait=2d)\": wait=2d must be in [0, 1d]");
}

// ---------------------------------------------------------------------------------------------
// Stress, for TSan: threads share the limiter and a manual clock that each moves forward by less
// than one interval before each try. The bucket is drained at the start, so that it never fills
// (refills are never capped); every token that comes back is then taken, and the total is exact:
// burst + elapsed / interval. Along the way the grants never exceed burst + now / interval.
TEST(RateLimiterStress, NeverMoreThanBurstPlusRate) {
  constexpr std::uint32_t burst = 100;
  constexpr int threads = 4;
  constexpr int iterations = 5000;
  rate_limiter r{rate_with(1000, burst)};  // one token per millisecond
  backoff::manual_clock clock;
  ASSERT_EQ(take_all(r, 0s), static_cast<int>(burst));
  std::atomic<std::int64_t> granted{burst};
  std::atomic<int> over_the_bound{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < iterations; ++i) {
        clock.advance(300us);
        if (!r.try_acquire(clock.now().time_since_epoch())) continue;
        const std::int64_t so_far = granted.fetch_add(1) + 1;
        const std::int64_t bound = burst + clock.now().time_since_epoch() / r.interval();
        if (so_far > bound) over_the_bound.fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const duration end = clock.now().time_since_epoch();
  granted += take_all(r, end);
  EXPECT_EQ(over_the_bound.load(), 0);
  EXPECT_EQ(end, threads * iterations * 300us);
  EXPECT_EQ(granted.load(), burst + end / r.interval());
}

}  // namespace rate_limiter_test
