// SPDX-License-Identifier: Apache-2.0
// Classifiers on the per-attempt path: an HTTP reply with and without pushback headers, an
// error code, and retry_on's verdict on a value it has no rule for (target: tens of
// nanoseconds, no allocation).
//   build/bin/backoff_bench --benchmark_filter=Classify
#include <benchmark/benchmark.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

#include "alloc_counter.hpp"
#include "backoff/classify.hpp"
#include "backoff/http.hpp"

namespace {

using backoff::bench::report_allocations;

void ClassifyHttpReply(benchmark::State& state, int status, backoff::retry_headers headers) {
  const std::chrono::system_clock::time_point now{};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(backoff::classify_http_reply(status, headers, now));
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(ClassifyHttpReply, ok, 200, backoff::retry_headers{});
BENCHMARK_CAPTURE(ClassifyHttpReply, grpc_pushback, 503,
                  backoff::retry_headers{.grpc_retry_pushback_ms = "250"});
BENCHMARK_CAPTURE(ClassifyHttpReply, retry_after_and_amz, 503,
                  backoff::retry_headers{.retry_after = "5", .amz_retry_after = "1500"});

void ClassifyErrorCode(benchmark::State& state) {
  const std::error_code refused = make_error_code(std::errc::connection_refused);
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(backoff::classify_error_code(refused));
  }
  report_allocations(state, before);
}
BENCHMARK(ClassifyErrorCode);

// A returned value retry_on has no rule for: a compile-time answer.
void ClassifyRetryOnString(benchmark::State& state) {
  const backoff::retry_on<std::runtime_error> classify;
  const std::string body = "a body longer than the small-string buffer of any library";
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(classify(body));
  }
  report_allocations(state, before);
}
BENCHMARK(ClassifyRetryOnString);

}  // namespace
