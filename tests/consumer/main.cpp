// SPDX-License-Identifier: Apache-2.0
// A program outside the backoff tree that uses the installed package, as a user would.
#include <algorithm>
#include <backoff/backoff.hpp>
#include <backoff/testing.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

namespace {

// backoff/testing.hpp as a user's own test of their retry code uses it: the loop runs at once, its
// waits are recorded and asserted exactly, a fixed seed repeats jittered waits. Returns what went
// wrong, or nullptr.
const char* testing_header_failure() {
  using namespace std::chrono_literals;
  using delays = std::vector<backoff::duration>;
  const backoff::retry_policy doubling{
      backoff::parse_policy("exponential(initial=100ms, max=1s, jitter=none)"), 3};

  backoff::testing::recording_env rec{42, 5s};  // the clock starts at 5 s
  backoff::testing::fails_then_succeeds flaky{2};
  const auto result = backoff::retry(flaky, doubling, {}, rec.env);
  if (!result || result.attempts != 3 || flaky.calls() != 3) return "flaky call did not succeed";
  if (rec.sleeps != delays{100ms, 200ms} || result.slept != 300ms) return "waits not 100, 200 ms";
  if (rec.clock.now().time_since_epoch() != 5300ms) return "clock not moved on by the waits";

  backoff::testing::recording_env exhausted_rec;
  backoff::testing::fails_then_succeeds broken{10};
  const auto exhausted = backoff::retry(broken, doubling, {}, exhausted_rec.env);
  if (backoff::to_string(exhausted.why) != "attempts_exhausted" || broken.calls() != 3 ||
      exhausted_rec.sleeps != delays{100ms, 200ms}) {
    return "three failing attempts did not exhaust the loop after two waits";
  }

  // Full jitter: each wait in [0, 100 ms * 2^i capped at 1 s], the same for the same seed.
  const backoff::retry_policy jittered{
      backoff::parse_policy("exponential(initial=100ms, max=1s, jitter=full)"), 6};
  const auto jittered_sleeps = [&](std::uint64_t seed) {
    backoff::testing::recording_env seeded{seed};
    backoff::testing::fails_then_succeeds never{100};
    static_cast<void>(backoff::retry(never, jittered, {}, seeded.env));
    return seeded.sleeps;
  };
  const delays first = jittered_sleeps(7);
  if (first.size() != 5 || jittered_sleeps(7) != first) return "seed 7 did not repeat its waits";
  backoff::duration bound = 100ms;
  for (const backoff::duration d : first) {
    if (d < 0s || d > bound) return "a jittered wait outside [0, its exponential bound]";
    bound = std::min<backoff::duration>(bound * 2, 1s);
  }
  return nullptr;
}

}  // namespace

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
  if (const char* failure = testing_header_failure()) {
    std::printf("backoff/testing.hpp: %s\n", failure);
    return 1;
  }
  std::puts("consumer ok");
  return 0;
}
