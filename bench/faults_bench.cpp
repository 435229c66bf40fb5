// SPDX-License-Identifier: Apache-2.0
// The fault injector's decision per request (src/faults), the CPU a faulted server or proxy
// adds to each request before any injected wait: one errors fault; a mix of five (errors,
// latency, a partial outage by header, an outage window that is off, a slow body); and Envoy's
// headers read from a request that carries them. The whole-request figure, with wrk against
// serve, is in docs/PERFORMANCE.md.
//   build/bin/backoff_bench --benchmark_filter=Fault
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <string>

#include "alloc_counter.hpp"
#include "faults/faults.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::bench::report_allocations;

void FaultDecide(benchmark::State& state, std::initializer_list<const char*> specs, bool envoy) {
  backoff::faults::fault_plan plan;
  for (const char* spec : specs) plan.faults.push_back({{}, backoff::faults::parse_fault(spec)});
  if (envoy) plan.envoy_headers = true;
  // The last fault of the mix is an outage that is off (its window is later).
  if (specs.size() > 1) plan.faults.back().when.start = std::chrono::hours(1);
  const std::map<std::string, std::string, std::less<>> headers = {
      {"host", "127.0.0.1"},
      {"x-shard", "4"},
      {"x-envoy-fault-delay-request", "0"},
      {"x-envoy-fault-delay-request-percentage", "1"}};
  const backoff::faults::request_view view{
      "/api", [&](std::string_view name) {
        const auto it = headers.find(name);
        return it == headers.end() ? std::string_view{} : std::string_view(it->second);
      }};
  backoff::random_generator rng{1};
  std::int64_t t = 0;
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        backoff::faults::decide(plan, backoff::duration{t += 1000}, view, rng));
  }
  report_allocations(state, before);
}

BENCHMARK_CAPTURE(FaultDecide, errors_1pct, {"errors(rate=1%, status=503)"}, false);
BENCHMARK_CAPTURE(FaultDecide, mix_of_five,
                  {"errors(rate=1%, status=503)",
                   "latency(distribution=exponential, mean=1ms, rate=10%)",
                   "partial(header=x-shard, value=[3, 7])",
                   "slow_body(size=1KiB, speed=1MiB/s, rate=1%)", "outage(status=503)"},
                  false);
BENCHMARK_CAPTURE(FaultDecide, envoy_headers, {}, true);

}  // namespace
