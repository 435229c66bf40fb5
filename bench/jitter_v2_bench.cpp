// SPDX-License-Identifier: Apache-2.0
// next_delay() with jitter=decorrelated-v2 (Polly's DecorrelatedJitterBackoffV2): one uniform,
// exp2, sqrt and tanh per delay; target tens of ns at most and zero allocations. Beside it the
// AWS decorrelated jitter it is an alternative to, for scale.
//   build/bin/backoff_bench --benchmark_filter=JitterV2
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "alloc_counter.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"

namespace {

using namespace std::chrono_literals;

// One next_delay() per iteration; the state restarts every `run` draws, as a fresh operation
// would, so that the formula keeps working on small attempts and not only at the cap.
void JitterV2NextDelay(benchmark::State& state, backoff::jitter_kind kind) {
  const auto policy = backoff::backoff_policy::exponential(50ms, 2.0, 30s).with_jitter(kind);
  const auto run = static_cast<int>(state.range(0));
  backoff::random_generator rng{42};
  auto s = policy.start();
  int n = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.next_delay(rng));
    if (++n == run) {
      n = 0;
      s = policy.start();
    }
  }
  backoff::bench::report_allocations(state, before);
}

BENCHMARK_CAPTURE(JitterV2NextDelay, decorrelated_v2, backoff::jitter_kind::decorrelated_v2)
    ->Arg(8)
    ->Arg(64);
BENCHMARK_CAPTURE(JitterV2NextDelay, aws_decorrelated, backoff::jitter_kind::decorrelated)->Arg(8);

}  // namespace
