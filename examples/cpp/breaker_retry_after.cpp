// SPDX-License-Identifier: Apache-2.0
// A server that answers a call its breaker refuses with 503 and the time left open as Retry-After.
#include <backoff/circuit_breaker.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>

// A refused call's answer: 503 with Retry-After in whole seconds, rounded up; no header when
// the breaker is forced open (no end is known).
std::string refusal(const backoff::circuit_breaker& breaker, backoff::duration now) {
  const std::optional<backoff::duration> left = breaker.open_remaining(now);
  if (!left) return "503";
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(*left).count();
  return "503, Retry-After: " + std::to_string(seconds);
}

int main() {
  using namespace std::chrono_literals;
  backoff::circuit_breaker breaker{
      backoff::parse_breaker("breaker(kind=consecutive, failures=1, open=5s)")};
  const auto p = breaker.try_acquire(10s, true);
  breaker.record(10s, p, /*failure=*/true);
  if (!breaker.try_acquire(12s + 300ms, true)) std::cout << refusal(breaker, 12s + 300ms) << "\n";
  breaker.force_open(13s);
  if (!breaker.try_acquire(13s, true)) std::cout << refusal(breaker, 13s) << "\n";
}
