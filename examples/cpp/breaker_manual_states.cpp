// SPDX-License-Identifier: Apache-2.0
// A breaker forced open, put in metrics-only and disabled by hand, then reset.
#include <backoff/circuit_breaker.hpp>
#include <chrono>
#include <iostream>

int main() {
  using namespace std::chrono_literals;
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=5, open=5s)"),
      [](const backoff::breaker_transition& t) {
        std::cout << backoff::to_string(t.from) << " -> " << backoff::to_string(t.to) << "\n";
      }};
  breaker.force_open(0s);                                    // closed -> forced_open
  std::cout << bool(breaker.try_acquire(1h, true)) << "\n";  // 0: refused, however long
  breaker.metrics_only(1h);                                  // forced_open -> metrics_only
  for (int i = 0; i < 10; ++i) {
    const auto p = breaker.try_acquire(1h, true);
    breaker.record(1h, p, /*failure=*/true);  // counted, never opens
  }
  std::cout << breaker.current_counts(1h).failures << " failures in a row\n";  // 10
  breaker.disable(1h);  // metrics_only -> disabled
  breaker.reset(1h);    // disabled -> closed, counts cleared
}
