// SPDX-License-Identifier: Apache-2.0
// Delay computation per jitter kind (target: at most 5 ns and zero allocations per delay), and
// the retry loop's overhead when the first call succeeds (target: at most 20 ns).
//   make bench            or   build/bin/backoff_bench --benchmark_filter=NextDelay
#include <benchmark/benchmark.h>

#include <chrono>

#include "alloc_counter.hpp"
#include "backoff/backoff.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::bench::report_allocations;

// One next_delay() per iteration. The state is restarted every 64 draws so that the schedule
// keeps exercising its growing part, not only the cap.
void NextDelay(benchmark::State& state, backoff::backoff_policy policy) {
  backoff::random_generator rng{42};
  auto s = policy.start();
  int n = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.next_delay(rng));
    if (++n == 64) {
      n = 0;
      s = policy.start();
    }
  }
  report_allocations(state, before);
}

backoff::backoff_policy with(backoff::jitter_kind kind) {
  return backoff::backoff_policy::exponential(50ms, 2.0, 30s).with_jitter(kind);
}

BENCHMARK_CAPTURE(NextDelay, none, with(backoff::jitter_kind::none));
BENCHMARK_CAPTURE(NextDelay, full, with(backoff::jitter_kind::full));
BENCHMARK_CAPTURE(NextDelay, equal, with(backoff::jitter_kind::equal));
BENCHMARK_CAPTURE(NextDelay, decorrelated, with(backoff::jitter_kind::decorrelated));
BENCHMARK_CAPTURE(NextDelay, additive, with(backoff::jitter_kind::additive));
BENCHMARK_CAPTURE(NextDelay, multiplicative, with(backoff::jitter_kind::multiplicative));
BENCHMARK_CAPTURE(NextDelay, proportional, with(backoff::jitter_kind::proportional));
BENCHMARK_CAPTURE(NextDelay, gaussian, with(backoff::jitter_kind::gaussian));
BENCHMARK_CAPTURE(NextDelay, preset_smira_go, backoff::find_preset("smira-go")->policy);
BENCHMARK_CAPTURE(NextDelay, preset_gcp_iot, backoff::find_preset("gcp-iot")->policy);

// The baseline: calling the operation directly.
void DirectCall(benchmark::State& state) {
  int calls = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(calls);
    bool ok = (++calls, true);
    benchmark::DoNotOptimize(ok);
  }
}
BENCHMARK(DirectCall);

// The whole sync loop around an operation that succeeds at once, with the real-world env. With
// a deadline, the loop reads the clock once per call.
void RetryFirstCallSucceeds(benchmark::State& state, backoff::duration max_elapsed) {
  const backoff::retry_policy policy{backoff::parse_policy("grpc"), 5, max_elapsed};
  const backoff::retry_env& env = backoff::system_env();
  int calls = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(calls);
    auto r =
        backoff::retry([&] { return (++calls, true); }, policy, backoff::default_classifier{}, env);
    benchmark::DoNotOptimize(r);
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(RetryFirstCallSucceeds, no_deadline, backoff::duration{0});
BENCHMARK_CAPTURE(RetryFirstCallSucceeds, with_deadline, backoff::duration{30s});

}  // namespace
