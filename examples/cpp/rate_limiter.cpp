// SPDX-License-Identifier: Apache-2.0
// A token-bucket rate limiter: a burst, then one token per interval, or a reservation to wait for.
#include <backoff/rate_limiter.hpp>
#include <chrono>
#include <cstdio>

int main() {
  using namespace std::chrono_literals;
  backoff::rate_limiter limiter{backoff::parse_rate_limiter("rate(per_s=1, burst=3, wait=1s)")};
  const backoff::duration t0 = 0s;
  for (int i = 0; i < 3; ++i) std::printf("%d ", limiter.try_acquire(t0));  // 1 1 1
  std::printf("%d\n", limiter.try_acquire(t0));                             // 0: empty
  if (auto wait = limiter.reserve(t0)) {                                    // the 4th token...
    std::printf("wait %lld ms\n", static_cast<long long>(*wait / 1ms));     // ...in 1000 ms
  }
  std::printf("%d\n", limiter.reserve(t0).has_value());  // 0: it would wait 2 s, above wait=1s
  std::printf("%d\n", limiter.try_acquire(t0 + 10s));    // 1: refilled, at most 3 tokens
}
