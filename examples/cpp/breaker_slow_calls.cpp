// SPDX-License-Identifier: Apache-2.0
// A rate breaker that opens on slow calls: calls slower than slow= count toward slow_threshold.
#include <backoff/circuit_breaker.hpp>
#include <chrono>
#include <iostream>

int main() {
  using namespace std::chrono_literals;
  backoff::circuit_breaker breaker{backoff::parse_breaker(
      "breaker(kind=rate, threshold=50%, window=20s, min_calls=5, open=5s, slow=4s, "
      "slow_threshold=50%)")};
  // Five calls that all succeed, three of them longer than 4 s.
  backoff::duration now = 0s;
  for (const backoff::duration length : {5s, 5s, 1s, 1s, 5s}) {
    const auto permit = breaker.try_acquire(now, /*first_try=*/true);
    now += length;
    breaker.record(now, permit, /*failure=*/false);
  }
  const auto counts = breaker.current_counts(now);
  std::cout << counts.slow << " slow of " << counts.calls << ": "
            << backoff::to_string(breaker.state(now)) << "\n";  // 3 slow of 5: open
}
