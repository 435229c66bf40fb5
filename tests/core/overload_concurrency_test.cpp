// SPDX-License-Identifier: Apache-2.0
// The overload-control objects shared by threads (aimd_window, token_bucket_budget, ratio_budget,
// adaptive_throttle, cubic_rate_limiter): several threads hammer one object while the test
// checks what must hold whatever the interleaving: every request completes exactly once and
// is never in flight twice, tokens stay in [0, max] and no update is lost, a budget is never
// overdrawn, counts add up, rates stay within their bounds. Run under TSan as well
// (make test-tsan); nothing here sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "backoff/aimd_window.hpp"
#include "backoff/duration.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;

constexpr int thread_count = 4;

// Runs body(thread index) on `thread_count` threads that start together.
void run_threads(const std::function<void(int)>& body, int threads = thread_count) {
  std::latch start{threads};
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      start.arrive_and_wait();
      body(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

// Watches `check` on its own thread until stopped; counts its failures.
class observer {
 public:
  explicit observer(std::function<bool()> check)
      : thread_([this, check = std::move(check)] {
          while (!stop_.load()) {
            if (!check()) violations_.fetch_add(1);
          }
        }) {}
  int stop() {
    stop_.store(true);
    thread_.join();
    return violations_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> violations_{0};
  std::thread thread_;
};

TEST(OverloadConcurrency, WindowCompletesEveryRequestExactlyOnce) {
  constexpr std::uint64_t requests = 20'000;
  backoff::aimd_config config;
  config.initial = 8;
  config.ssthresh = 64;
  config.decrease = 0.5;
  config.variant = backoff::aimd_variant::reno;
  backoff::aimd_window window{config};
  window.enqueue(requests);

  auto in_flight = std::make_unique<std::atomic<bool>[]>(requests);
  auto successes = std::make_unique<std::atomic<int>[]>(requests);
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> sends{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<int> sent_twice{0};
  std::atomic<int> small_window{0};

  observer watch{[&] { return window.snapshot().cwnd >= 1.0; }};
  run_threads([&](int index) {
    backoff::random_generator rng{static_cast<std::uint64_t>(index) + 1};
    std::vector<backoff::send_ticket> held;  // up to 4 outstanding sends per thread
    while (done.load() < requests) {
      if (held.size() < 4) {
        if (const auto t = window.try_send()) {
          sends.fetch_add(1);
          if (in_flight[t->request()].exchange(true)) sent_twice.fetch_add(1);
          held.push_back(*t);
          continue;
        }
      }
      if (held.empty()) {
        std::this_thread::yield();
        continue;
      }
      const std::size_t i = static_cast<std::size_t>(rng() % held.size());
      const backoff::send_ticket t = held[i];
      held[i] = held.back();
      held.pop_back();
      in_flight[t.request()].store(false);
      if (backoff::uniform01(rng) < 0.2) {
        errors.fetch_add(1);
        window.on_error(t);
      } else {
        successes[t.request()].fetch_add(1);
        done.fetch_add(1);
        window.on_success(t);
      }
      if (window.cwnd() < 1.0) small_window.fetch_add(1);
    }
  });
  EXPECT_EQ(watch.stop(), 0) << "cwnd fell below 1";

  EXPECT_EQ(sent_twice.load(), 0);
  EXPECT_EQ(small_window.load(), 0);
  for (std::uint64_t id = 0; id < requests; ++id) {
    ASSERT_EQ(successes[id].load(), 1) << "request " << id;
  }
  EXPECT_EQ(sends.load(), requests + errors.load()) << "every failed send was sent again";
  const auto s = window.snapshot();
  EXPECT_EQ(s.flying, 0U);
  EXPECT_EQ(s.pending, 0U);
  EXPECT_EQ(s.cuts + s.ignored, errors.load()) << "every error was either a cut or ignored";
  EXPECT_GT(s.cuts, 0U);
}

TEST(OverloadConcurrency, TokenBucketLosesNoUpdate) {
  // Each thread fails then succeeds with ratio 1: the bucket never touches its ceiling (a
  // success follows its own failure) nor its floor, so it must end exactly full.
  backoff::token_bucket_config config;
  config.max_tokens = 1000;
  config.token_ratio = 1.0;
  backoff::token_bucket_budget bucket{config};
  observer watch{[&] {
    const auto m = bucket.milli_tokens();
    return m >= 0 && m <= 1'000'000;
  }};
  run_threads([&](int) {
    for (int i = 0; i < 20'000; ++i) {
      bucket.on_failure();
      bucket.on_success();
    }
  });
  EXPECT_EQ(watch.stop(), 0);
  EXPECT_EQ(bucket.milli_tokens(), 1'000'000);
}

TEST(OverloadConcurrency, TokenBucketAnswersEachFailureExactly) {
  // 800 failures from 1000 tokens: the values 999 .. 200 are each produced once, so exactly
  // the 499 failures that leave 999 .. 501 tokens may retry.
  backoff::token_bucket_config config;
  config.max_tokens = 1000;
  config.token_ratio = 1.0;
  backoff::token_bucket_budget bucket{config};
  std::atomic<int> allowed{0};
  run_threads([&](int) {
    for (int i = 0; i < 200; ++i) allowed.fetch_add(bucket.on_failure() ? 1 : 0);
  });
  EXPECT_EQ(bucket.milli_tokens(), 200'000);
  EXPECT_EQ(allowed.load(), 499);
}

TEST(OverloadConcurrency, TokenBucketStaysWithinBounds) {
  backoff::token_bucket_budget bucket{};  // 10 tokens, ratio 0.1
  observer watch{[&] {
    const auto m = bucket.milli_tokens();
    return m >= 0 && m <= 10'000;
  }};
  run_threads([&](int index) {
    backoff::random_generator rng{static_cast<std::uint64_t>(index) + 11};
    for (int i = 0; i < 50'000; ++i) {
      if (rng() % 3 == 0) {
        bucket.on_failure();
      } else {
        bucket.on_success();
      }
    }
  });
  EXPECT_EQ(watch.stop(), 0);
}

TEST(OverloadConcurrency, RatioBudgetIsNeverOverdrawn) {
  // All in one slice: 4 x 5000 requests at 20 % plus a floor of 1 per second over 10 s allow
  // exactly 4000 + 10 retries, however the threads interleave.
  backoff::ratio_budget_config config;
  config.percent = 20;
  config.min_per_s = 1;
  config.window = 10s;
  backoff::ratio_budget budget{config};
  const duration now = 3s;
  budget.on_request(now);  // the window is placed before the threads start
  std::atomic<int> granted{0};
  observer watch{[&] {
    const auto c = budget.window_counts(now);
    return c.retries * 100'000 <= c.requests * 20'000 + 1'000'000;
  }};
  run_threads([&](int) {
    for (int i = 0; i < 5000; ++i) {
      budget.on_request(now);
      granted.fetch_add(budget.try_retry(now) ? 1 : 0);
      granted.fetch_add(budget.try_retry(now) ? 1 : 0);
    }
  });
  EXPECT_EQ(watch.stop(), 0);
  run_threads([&](int) {  // spend what is left
    while (budget.try_retry(now)) granted.fetch_add(1);
  });
  const auto c = budget.window_counts(now);
  EXPECT_EQ(c.requests, 4U * 5000U + 1U);
  EXPECT_EQ(c.retries, static_cast<std::uint64_t>(granted.load()));
  EXPECT_EQ(granted.load(), (4 * 5000 + 1) / 5 + 10);
}

TEST(OverloadConcurrency, RatioBudgetHoldsWhileTheWindowMoves) {
  // Each call moves a shared clock 1 ms forward (so the threads' readings also arrive out of
  // order), 100 s in all, while every thread makes requests and asks for a retry after each.
  // Nothing is counted that was not done, and the budget still binds: retries granted within
  // any 9 s span (the shortest the window covers) are at most 20 % of the requests of the
  // 10 s before plus the floor of 100, so over the run at most 2 * 20 % of all requests plus
  // 100 per 9 s span; without the budget it would be 100 %.
  backoff::ratio_budget budget{};  // 20 %, 10 per second, 10 s
  std::atomic<std::int64_t> clock_ns{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> granted{0};
  constexpr int calls_per_thread = 100'000 / thread_count;
  const std::int64_t step = std::chrono::nanoseconds{1ms}.count();
  run_threads([&](int) {
    for (int i = 0; i < calls_per_thread; ++i) {
      const duration now{clock_ns.fetch_add(step)};
      budget.on_request(now);
      requests.fetch_add(1);
      if (budget.try_retry(now)) granted.fetch_add(1);
    }
  });
  const duration end{clock_ns.load()};
  const auto c = budget.window_counts(end);
  EXPECT_LE(c.requests, requests.load());
  EXPECT_LE(c.retries, granted.load());
  EXPECT_GT(c.requests, 0U);
  const double spans = backoff::to_seconds(end) / 9.0 + 2.0;
  EXPECT_LE(static_cast<double>(granted.load()),
            0.4 * static_cast<double>(requests.load()) + 100.0 * spans + thread_count);
  EXPECT_GE(static_cast<double>(granted.load()), 0.2 * static_cast<double>(requests.load()))
      << "the budget should allow its 20 % at least";
}

TEST(OverloadConcurrency, AdaptiveThrottleCountsEveryRecord) {
  backoff::adaptive_throttle throttle;
  const duration now = 30s;
  throttle.record(now, true);
  observer watch{[&] {
    const auto c = throttle.window_counts(now);
    const double p = throttle.reject_probability(now);
    return c.accepts <= c.requests && p >= 0.0 && p < 1.0;
  }};
  run_threads([&](int index) {
    backoff::random_generator rng{static_cast<std::uint64_t>(index) + 21};
    for (int i = 0; i < 30'000; ++i) {
      throttle.record(now, i % 3 == 0);
      static_cast<void>(throttle.should_reject(now, rng));
    }
  });
  EXPECT_EQ(watch.stop(), 0);
  const auto c = throttle.window_counts(now);
  EXPECT_EQ(c.requests, 4U * 30'000U + 1U);
  EXPECT_EQ(c.accepts, 4U * 10'000U + 1U);
}

TEST(OverloadConcurrency, CubicRateStaysWithinItsBounds) {
  backoff::cubic_rate_limiter rate;
  std::atomic<std::int64_t> clock_ns{0};
  std::atomic<int> violations{0};
  const auto sane = [&] {
    const auto s = rate.snapshot();
    const bool untouched = s.fill_rate == 0.0 && s.max_capacity == 0.0;  // before any response
    return std::isfinite(s.fill_rate) && std::isfinite(s.capacity) &&
           (untouched || (s.fill_rate >= 0.5 && s.max_capacity >= 1.0)) &&
           s.capacity <= s.max_capacity && s.measured_rate >= 0.0;
  };
  observer watch{sane};
  run_threads([&](int index) {
    for (int i = 0; i < 20'000; ++i) {
      const duration now{clock_ns.fetch_add(std::chrono::nanoseconds{1ms}.count())};
      if (rate.acquire(now) < duration{0}) violations.fetch_add(1);
      rate.on_response(now, (i + index) % 50 == 0);
    }
  });
  EXPECT_EQ(watch.stop(), 0);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_TRUE(sane());
  EXPECT_TRUE(rate.snapshot().enabled);
}

}  // namespace
