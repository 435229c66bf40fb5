// SPDX-License-Identifier: Apache-2.0
// Copies of the locked overload controls: a copy and an assignment both take the whole state, and
// two objects assigned to each other from two threads at once never deadlock.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "backoff/aimd_window.hpp"
#include "backoff/throttle.hpp"

namespace {

using namespace std::chrono_literals;

backoff::cubic_rate_limiter throttled_limiter() {
  backoff::cubic_rate_limiter limiter{backoff::cubic_rate_config{.beta = 0.5}};
  for (int i = 0; i < 20; ++i) {
    (void)limiter.acquire(std::chrono::milliseconds{100 * i});
    limiter.on_response(std::chrono::milliseconds{100 * i}, i % 5 == 4);
  }
  return limiter;
}

void expect_same_limiter(const backoff::cubic_rate_limiter& a,
                         const backoff::cubic_rate_limiter& b) {
  EXPECT_EQ(a.config(), b.config());
  const auto x = a.snapshot();
  const auto y = b.snapshot();
  EXPECT_EQ(x.enabled, y.enabled);
  EXPECT_EQ(x.fill_rate, y.fill_rate);
  EXPECT_EQ(x.max_capacity, y.max_capacity);
  EXPECT_EQ(x.capacity, y.capacity);
  EXPECT_EQ(x.measured_rate, y.measured_rate);
  EXPECT_EQ(x.last_max_rate, y.last_max_rate);
  // The hidden clocks too: the same next step gives the same wait.
  backoff::cubic_rate_limiter a2{a};
  backoff::cubic_rate_limiter b2{b};
  EXPECT_EQ(a2.acquire(3s), b2.acquire(3s));
}

TEST(CopyUnderLock, CubicRateLimiterCopiesAndAssignsItsWholeState) {
  const backoff::cubic_rate_limiter original = throttled_limiter();
  ASSERT_TRUE(original.snapshot().enabled);
  const backoff::cubic_rate_limiter copy{original};
  expect_same_limiter(copy, original);
  backoff::cubic_rate_limiter assigned;
  assigned = original;
  expect_same_limiter(assigned, original);
  const backoff::cubic_rate_limiter& same = assigned;
  assigned = same;  // self-assignment keeps it
  expect_same_limiter(assigned, original);
}

TEST(CopyUnderLock, AimdWindowAssignmentTakesTheState) {
  backoff::aimd_window w{backoff::aimd_config{.initial = 4.0}};
  w.enqueue(10);
  std::vector<backoff::send_ticket> sent;
  while (auto t = w.try_send()) sent.push_back(*t);
  w.on_error(sent[0]);
  backoff::aimd_window assigned{backoff::aimd_config{.initial = 50.0}};
  assigned = w;
  EXPECT_EQ(assigned.config(), w.config());
  EXPECT_EQ(assigned.snapshot().cuts, 1U);
  EXPECT_EQ(assigned.flying(), w.flying());
  EXPECT_EQ(assigned.pending(), w.pending());
  EXPECT_EQ(assigned.try_send()->request(), 0U);  // the failed request is resent first
  EXPECT_EQ(w.pending(), 7U) << "the original is untouched";
}

TEST(CopyUnderLock, CrossedAssignmentsDoNotDeadlock) {
  backoff::aimd_window a{backoff::aimd_config{.initial = 4.0}};
  backoff::aimd_window b{backoff::aimd_config{.initial = 8.0}};
  backoff::cubic_rate_limiter c;
  backoff::cubic_rate_limiter d = throttled_limiter();
  std::thread forth([&] {
    for (int i = 0; i < 20000; ++i) {
      a = b;
      c = d;
    }
  });
  for (int i = 0; i < 20000; ++i) {
    b = a;
    d = c;
  }
  forth.join();
  EXPECT_EQ(a.config(), b.config());
}

}  // namespace
