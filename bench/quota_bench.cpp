// SPDX-License-Identifier: Apache-2.0
// The AWS-style retry quota (retry_budget.hpp): a healthy client's success on a full quota (one
// load, no write), a retry that takes and a success that refunds (two compare-and-swaps), the
// same contended by four threads, and the sync loop's first-call success with no gates (target:
// at most 10 ns, zero allocations: the controller's idempotency, pushback and quota account add
// nothing to that path), with a quota, and with idempotent = false.
//   build/bin/backoff_bench --benchmark_filter=Quota
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "alloc_counter.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"

namespace quota_bench {

using namespace std::chrono_literals;
using backoff::bench::report_allocations;

// A first-try success on a full quota: release(refund) reads the count and writes nothing.
void QuotaSuccessOnAFullQuota(benchmark::State& state) {
  backoff::retry_budget budget{backoff::retry_quota_config{}};
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    budget.on_outcome(backoff::duration{++t}, true, false, 0);
    benchmark::DoNotOptimize(budget);
  }
  report_allocations(state, before);
}
BENCHMARK(QuotaSuccessOnAFullQuota);

// A retry that takes the retry cost, then the success that gives it back.
void QuotaRetryThenRefund(benchmark::State& state) {
  static backoff::retry_budget budget{backoff::retry_quota_config{}};
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    const backoff::duration now{++t};
    std::uint32_t taken = 0;
    const bool allowed = budget.try_retry(now, false, taken);
    budget.on_outcome(now, true, true, taken);
    benchmark::DoNotOptimize(allowed);
  }
  report_allocations(state, before);
}
BENCHMARK(QuotaRetryThenRefund);
BENCHMARK(QuotaRetryThenRefund)->Threads(4);

// The sync loop around an operation that succeeds at once: no gates, a quota, not idempotent.
void QuotaRetryFirstCallSucceeds(benchmark::State& state, int variant) {
  backoff::retry_policy policy{backoff::parse_policy("grpc"), 3, {}};
  policy.idempotent = variant != 2;
  backoff::retry_budget budget{backoff::retry_quota_config{}};
  const backoff::retry_gates gates{.budget = variant == 1 ? &budget : nullptr};
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
BENCHMARK_CAPTURE(QuotaRetryFirstCallSucceeds, no_gates, 0);
BENCHMARK_CAPTURE(QuotaRetryFirstCallSucceeds, with_quota, 1);
BENCHMARK_CAPTURE(QuotaRetryFirstCallSucceeds, not_idempotent, 2);

}  // namespace quota_bench
