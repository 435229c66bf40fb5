// SPDX-License-Identifier: Apache-2.0
// test_my_retry.cpp: c++ -std=c++20 test_my_retry.cpp $(pkg-config --cflags --libs backoff)
#include <backoff/backoff.hpp>
#include <backoff/testing.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace std::chrono_literals;

int main() {
  // 1. No jitter: the waits are exactly 100 ms, 200 ms, 400 ms.
  backoff::testing::recording_env rec;
  backoff::testing::fails_then_succeeds flaky{3};
  const backoff::retry_policy policy{backoff::parse_policy("exponential(initial=100ms, max=1s)"),
                                     10};
  const auto result = backoff::retry(flaky, policy, {}, rec.env);
  if (!result || flaky.calls() != 4) return 1;
  if (rec.sleeps != std::vector<backoff::duration>{100ms, 200ms, 400ms}) return 1;
  if (rec.clock.now().time_since_epoch() != 700ms) return 1;  // took 0.7 s, instantly

  // 2. Jitter: a fixed seed repeats; assert bounds, not values you copied from a run.
  const backoff::retry_policy jittered{
      backoff::parse_policy("exponential(initial=1s, max=30s, jitter=decorrelated-v2)"), 6};
  backoff::testing::recording_env a{7}, b{7};
  backoff::testing::fails_then_succeeds never_a{100}, never_b{100};
  (void)backoff::retry(never_a, jittered, {}, a.env);
  (void)backoff::retry(never_b, jittered, {}, b.env);
  if (a.sleeps.size() != 5 || a.sleeps != b.sleeps) return 1;
  for (const backoff::duration d : a.sleeps) {
    if (d < 0s || d > 30s) return 1;
  }

  // 3. Shutdown: a stop request ends the loop before its next sleep.
  backoff::testing::recording_env c;
  int calls = 0;
  const auto stopped = backoff::retry(
      [&] {
        if (++calls == 2) c.stop.request_stop();
        return false;
      },
      backoff::retry_policy{backoff::parse_policy("constant(initial=1s)"), 10}, {}, c.env);
  if (stopped.why != backoff::outcome::cancelled || c.sleeps.size() != 1) return 1;

  std::puts("ok");
  return 0;
}
