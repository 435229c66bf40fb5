// SPDX-License-Identifier: Apache-2.0
// The adaptive concurrency limit: try_acquire then release of a success, uncontended, with an
// injected clock, per kind (target: about 50 ns, no allocation); and a refusal alone.
//   build/bin/backoff_bench --benchmark_filter=ConcurrencyLimit
#include <benchmark/benchmark.h>

#include <cstdint>

#include "alloc_counter.hpp"
#include "backoff/concurrency_limit.hpp"

namespace {

using backoff::bench::report_allocations;

// One call admitted at t and released 1 us later as a success: the whole per-call cost of a
// gate on a healthy dependency (aimd: a compare-and-swap on the limit, or none at the max;
// vegas and gradient2: their update under the spin lock).
void ConcurrencyLimitAcquireRelease(benchmark::State& state, const char* spec) {
  backoff::concurrency_limiter limiter{backoff::parse_limit(spec)};
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    t += 1000;
    const auto permit = limiter.try_acquire(backoff::duration{t});
    limiter.release(permit, backoff::duration{t + 1000}, backoff::limit_outcome::success);
    benchmark::DoNotOptimize(permit);
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(ConcurrencyLimitAcquireRelease, aimd, "limit(kind=aimd)");
BENCHMARK_CAPTURE(ConcurrencyLimitAcquireRelease, aimd_at_max,
                  "limit(kind=aimd, initial=1, min=1, max=1)");
BENCHMARK_CAPTURE(ConcurrencyLimitAcquireRelease, vegas, "limit(kind=vegas)");
BENCHMARK_CAPTURE(ConcurrencyLimitAcquireRelease, gradient2, "limit(kind=gradient2)");

// A refusal: the limit is full (one call held for the whole run).
void ConcurrencyLimitRefuse(benchmark::State& state) {
  backoff::concurrency_limiter limiter{
      backoff::parse_limit("limit(kind=aimd, initial=1, min=1, max=1)")};
  const auto held = limiter.try_acquire(backoff::duration{0});
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter.try_acquire(backoff::duration{++t}));
  }
  report_allocations(state, before);
  limiter.release(held, backoff::duration{t}, backoff::limit_outcome::ignored);
}
BENCHMARK(ConcurrencyLimitRefuse);

}  // namespace
