// SPDX-License-Identifier: Apache-2.0
// A program outside the backoff tree that uses the installed package, as a user would.
#include <backoff/backoff.hpp>
#include <chrono>
#include <cstdio>
int main() {
  const auto policy =
      backoff::parse_policy("exponential(initial=100ms, factor=2, max=1s, jitter=full)");
  backoff::random_generator rng{42};
  auto state = policy.start();
  for (int i = 0; i < 5; ++i) {
    const auto d = state.next_delay(rng);
    if (d < std::chrono::nanoseconds{0} || d > std::chrono::seconds{1}) {
      std::puts("delay out of bounds");
      return 1;
    }
  }
  std::puts("consumer ok");
  return 0;
}
