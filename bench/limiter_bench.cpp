// SPDX-License-Identifier: Apache-2.0
// Bulkhead and rate limiter success paths (target: at most about 50 ns each, no allocation): an
// uncontended bulkhead try_enter + leave, and a rate limiter's try_acquire with an injected clock
// that moves one interval per call (so every call is granted), plus the refused path.
//   build/bin/backoff_bench --benchmark_filter='Bulkhead|RateLimiter'
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "alloc_counter.hpp"
#include "backoff/bulkhead.hpp"
#include "backoff/rate_limiter.hpp"

namespace {

using backoff::bench::report_allocations;

void BulkheadEnterLeave(benchmark::State& state) {
  backoff::bulkhead pool{backoff::parse_bulkhead("bulkhead(max=10)")};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    const bool in = pool.try_enter();
    benchmark::DoNotOptimize(in);
    if (in) pool.leave();
  }
  report_allocations(state, before);
}
BENCHMARK(BulkheadEnterLeave);

// A token granted at each call: the clock advances one interval (10 ms at per_s=100) each time.
void RateLimiterTryAcquire(benchmark::State& state) {
  backoff::rate_limiter limiter{backoff::parse_rate_limiter("rate(per_s=100, burst=20)")};
  const std::int64_t step = limiter.interval().count();
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    t += step;
    benchmark::DoNotOptimize(limiter.try_acquire(backoff::duration{t}));
  }
  report_allocations(state, before);
}
BENCHMARK(RateLimiterTryAcquire);

// Refused: the clock stands still once the burst is spent (one load, no store).
void RateLimiterRefused(benchmark::State& state) {
  backoff::rate_limiter limiter{backoff::parse_rate_limiter("rate(per_s=100, burst=20)")};
  const backoff::duration now{0};
  while (limiter.try_acquire(now)) {
  }
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter.try_acquire(now));
  }
  report_allocations(state, before);
}
BENCHMARK(RateLimiterRefused);

}  // namespace
