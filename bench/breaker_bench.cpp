// SPDX-License-Identifier: Apache-2.0
// Circuit breakers: the uncontended closed-path check (target: at most 10 ns, no allocation),
// a keyed lookup that hits among 1000 keys, and a retry() call with a breaker in its gates
// against one without.
//   build/bin/backoff_bench --benchmark_filter=Breaker
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "alloc_counter.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/keyed_breakers.hpp"
#include "backoff/retry.hpp"
#include "backoff/spec.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::bench::report_allocations;

// try_acquire alone: one atomic load on the closed path.
void BreakerTryAcquire(benchmark::State& state, const char* spec) {
  backoff::circuit_breaker b{backoff::parse_breaker(spec)};
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(b.try_acquire(backoff::duration{++t}, true));
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(BreakerTryAcquire, consecutive, "breaker(kind=consecutive)");
BENCHMARK_CAPTURE(BreakerTryAcquire, rate_time, "breaker(kind=rate)");

// try_acquire then record of a success: the whole per-attempt cost on a healthy dependency.
void BreakerAcquireAndRecord(benchmark::State& state, const char* spec) {
  backoff::circuit_breaker b{backoff::parse_breaker(spec)};
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    const backoff::duration now{++t};
    const auto p = b.try_acquire(now, true);
    b.record(now, p, false);
    benchmark::DoNotOptimize(p);
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, consecutive, "breaker(kind=consecutive)");
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, rate_time, "breaker(kind=rate, window=10s)");
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, rate_calls,
                  "breaker(kind=rate, window=100calls, min_calls=20)");
// With slow= the success path also compares the call's length (a fast call writes nothing
// more); target: within ~50 ns, no allocation.
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, rate_time_slow,
                  "breaker(kind=rate, window=10s, slow=2s, slow_threshold=50%)");
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, rate_calls_slow,
                  "breaker(kind=rate, window=100calls, min_calls=20, slow=2s)");
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, retry_only, "retry-only-10pct");
BENCHMARK_CAPTURE(BreakerAcquireAndRecord, run_ratio, "run-ratio-10pct");

// A lookup that finds its key among 1000 (the key strings are made before timing).
void KeyedBreakerLookupHit(benchmark::State& state) {
  backoff::keyed_breakers breakers{backoff::parse_breaker("breaker(keyed=true, max_keys=1000)")};
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("host-" + std::to_string(i) + ".example.com");
  for (const auto& k : keys) breakers.get(k);
  std::size_t i = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(breakers.get(keys[i]));
    i = i + 1 == keys.size() ? 0 : i + 1;
  }
  report_allocations(state, before);
}
BENCHMARK(KeyedBreakerLookupHit);

// The sync loop around an operation that succeeds at once, without and with a breaker. With
// one, the loop reads the clock (the breaker is given the time).
void RetryWithBreaker(benchmark::State& state, bool with_breaker) {
  const backoff::retry_policy policy{backoff::parse_policy("grpc"), 5, {}};
  backoff::circuit_breaker b{backoff::parse_breaker("breaker(kind=consecutive)")};
  const backoff::retry_gates gates{.breaker = with_breaker ? &b : nullptr};
  const backoff::retry_env& env = backoff::system_env();
  int calls = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(calls);
    auto r = backoff::retry([&] { return (++calls, true); }, policy, backoff::default_classifier{},
                            env, backoff::no_retry_hook{}, gates);
    benchmark::DoNotOptimize(r);
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(RetryWithBreaker, without, false);
BENCHMARK_CAPTURE(RetryWithBreaker, with_consecutive, true);

}  // namespace
