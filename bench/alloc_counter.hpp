// SPDX-License-Identifier: Apache-2.0
// Counts heap allocations made by the benchmark process, so that "zero allocations" is measured
// rather than claimed: each benchmark reports allocations per iteration as a counter.
//
//   const std::size_t before = backoff::bench::allocations();
//   for (auto _ : state) { ... }
//   backoff::bench::report_allocations(state, before);   // counter "allocs_per_iter"
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>

namespace backoff::bench {

std::size_t allocations() noexcept;

// Sets the counter allocs_per_iter of the run. With ->Threads(n) only thread 0 reports, since the
// count is process-wide.
inline void report_allocations(benchmark::State& state, std::size_t before) {
  if (state.thread_index() != 0) return;
  state.counters["allocs_per_iter"] = benchmark::Counter(
      static_cast<double>(allocations() - before) / static_cast<double>(state.iterations()));
}

}  // namespace backoff::bench
