// SPDX-License-Identifier: Apache-2.0
// Overload control on the hot path (target: at most 10 ns and zero allocations per iteration
// uncontended), and the same objects shared by two threads (->Threads(2)):
//   - the AIMD window: try_send + on_success of one request;
//   - the token bucket: retry_allowed + on_success (a healthy server: the bucket stays full), and
//     on_failure + on_success (every call a compare-and-swap);
//   - the ratio budget: on_request + try_retry, with time moving 1 us per iteration so that the
//     window slides through its slices;
//   - the SRE throttle (record + should_reject) and the CUBIC rate (acquire + on_response).
//   build/bin/backoff_bench --benchmark_filter=Overload --benchmark_min_time=0.3
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "alloc_counter.hpp"
#include "backoff/aimd_window.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::duration;
using backoff::bench::report_allocations;

// Objects shared by the threads of one benchmark run. Google Benchmark starts every thread of
// a run together and each run with Threads(n) re-enters; function statics give one object per
// benchmark, reused across runs, which is what contention should measure.
backoff::aimd_window& shared_window() {
  static backoff::aimd_window window = [] {
    backoff::aimd_window w;
    w.enqueue(std::numeric_limits<std::uint64_t>::max() / 2);  // never runs dry
    return w;
  }();
  return window;
}

void OverloadWindowAdmitRelease(benchmark::State& state) {
  backoff::aimd_window& window = shared_window();
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    auto ticket = window.try_send();
    benchmark::DoNotOptimize(ticket);
    window.on_success(*ticket);
  }
  report_allocations(state, before);
}
BENCHMARK(OverloadWindowAdmitRelease);
BENCHMARK(OverloadWindowAdmitRelease)->Threads(2);

void OverloadTokenBucketAllowRecord(benchmark::State& state) {
  static backoff::token_bucket_budget bucket{};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(bucket.retry_allowed());
    bucket.on_success();
  }
  report_allocations(state, before);
}
BENCHMARK(OverloadTokenBucketAllowRecord);
BENCHMARK(OverloadTokenBucketAllowRecord)->Threads(2);

void OverloadTokenBucketFailSucceed(benchmark::State& state) {
  static backoff::token_bucket_budget bucket{backoff::token_bucket_config{10, 1.0}};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(bucket.on_failure());
    bucket.on_success();
  }
  report_allocations(state, before);
}
BENCHMARK(OverloadTokenBucketFailSucceed);
BENCHMARK(OverloadTokenBucketFailSucceed)->Threads(2);

void OverloadRatioBudgetRequestRetry(benchmark::State& state) {
  static backoff::ratio_budget budget{};  // 20 %, 10 per second, 10 s in 1 s slices
  static std::atomic<std::int64_t> clock_ns{0};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    const duration now{clock_ns.load(std::memory_order_relaxed)};
    budget.on_request(now);
    benchmark::DoNotOptimize(budget.try_retry(now));
    if (state.thread_index() == 0) clock_ns.store(now.count() + 1000, std::memory_order_relaxed);
  }
  report_allocations(state, before);
}
BENCHMARK(OverloadRatioBudgetRequestRetry);
BENCHMARK(OverloadRatioBudgetRequestRetry)->Threads(2);

void OverloadSreRecordReject(benchmark::State& state) {
  static backoff::adaptive_throttle throttle{};
  static std::atomic<std::int64_t> clock_ns{0};
  backoff::random_generator rng{static_cast<std::uint64_t>(state.thread_index()) + 1};
  std::uint64_t i = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    const duration now{clock_ns.load(std::memory_order_relaxed)};
    throttle.record(now, (++i & 3) == 0);  // 1 in 4 accepted: p about 1/2, so it draws
    benchmark::DoNotOptimize(throttle.should_reject(now, rng));
    if (state.thread_index() == 0) clock_ns.store(now.count() + 1000, std::memory_order_relaxed);
  }
  report_allocations(state, before);
}
BENCHMARK(OverloadSreRecordReject);
BENCHMARK(OverloadSreRecordReject)->Threads(2);

void OverloadCubicAcquireRespond(benchmark::State& state) {
  static backoff::cubic_rate_limiter rate{};
  static std::atomic<std::int64_t> clock_ns{0};
  std::uint64_t i = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    const duration now{clock_ns.fetch_add(1000, std::memory_order_relaxed)};
    benchmark::DoNotOptimize(rate.acquire(now));
    rate.on_response(now, (++i & 1023) == 0);
  }
  report_allocations(state, before);
}
BENCHMARK(OverloadCubicAcquireRespond);
BENCHMARK(OverloadCubicAcquireRespond)->Threads(2);

}  // namespace
