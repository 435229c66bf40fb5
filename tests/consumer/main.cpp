// SPDX-License-Identifier: Apache-2.0
// A program outside the backoff tree that uses the installed package, as a user would.
#include <backoff/backoff.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
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
  // The library's exception, thrown inside it and caught here (across the boundary of a shared
  // library, whose typeinfo for it is exported: BACKOFF_EXPORT).
  try {
    static_cast<void>(backoff::parse_policy("no-such-policy"));
    std::puts("no parse_error for a bad policy");
    return 1;
  } catch (const backoff::parse_error&) {
  }
  // The retry loop with its options, a classifier and hooks: every function it calls out of the
  // library (the real-world env, error-code classification, the metrics' text) must be exported.
  backoff::retry_metrics metrics;
  int calls = 0;
  const auto result = backoff::retry(
      [&]() -> std::error_code {
        return ++calls < 2 ? make_error_code(std::errc::connection_refused) : std::error_code{};
      },
      backoff::retry_options{
          .policy = {.backoff = backoff::parse_policy("constant(initial=1ms)"), .max_attempts = 3},
          .hooks = backoff::metrics_hooks{&metrics}});
  const std::string text = backoff::to_prometheus_text(metrics, "consumer");
  if (!result || result.attempts != 2 ||
      text.find("consumer_loops_total{outcome=\"succeeded\"} 1") == std::string::npos) {
    std::puts("the retry loop did not run as expected");
    return 1;
  }
  std::puts("consumer ok");
  return 0;
}
