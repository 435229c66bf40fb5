// SPDX-License-Identifier: Apache-2.0
// A break that grows: each reopening before a close doubles the open time, up to open_max.
#include <backoff/circuit_breaker.hpp>
#include <chrono>
#include <iostream>

int main() {
  using namespace std::chrono_literals;
  backoff::circuit_breaker breaker{backoff::parse_breaker(
      "breaker(kind=consecutive, failures=1, open=5s, open_growth=2, open_max=5m, half_open=1)")};
  backoff::duration now = 0s;
  for (int i = 0; i < 8; ++i) {
    const auto p = breaker.try_acquire(now, true);  // a half-open trial after the first
    breaker.record(now, p, /*failure=*/true);
    const backoff::duration left = *breaker.open_remaining(now);
    std::cout << std::chrono::duration_cast<std::chrono::seconds>(left).count() << "s ";
    now += left;
  }
  std::cout << "\n";  // 5s 10s 20s 40s 80s 160s 300s 300s
}
