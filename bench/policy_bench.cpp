// SPDX-License-Identifier: Apache-2.0
// Delay computation per jitter kind (target: at most 5 ns and zero allocations per delay), and
// the retry loop's overhead when the first call succeeds (target: at most 20 ns), and the cost
// of hooks (none when unused).
//   make bench            or   build/bin/backoff_bench --benchmark_filter=NextDelay
#include <benchmark/benchmark.h>

#include <chrono>
#include <stop_token>

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

// Hooks when unused cost nothing: the loop compiles away the calls a hooks type lacks. Three
// loops that fail twice and then succeed (a zero-wait env, so the loop's own work is measured):
// without hooks, with a hooks type whose members do nothing, and counting into retry_metrics.
struct empty_hooks {
  void on_attempt(const backoff::attempt_event&) const noexcept {}
  template <class R>
  void on_retry(const backoff::retry_event<R>&) const noexcept {}
  void on_success(const backoff::success_event&) const noexcept {}
  void on_give_up(const backoff::give_up_event&) const noexcept {}
};

const backoff::retry_env& zero_wait_env() {
  static const backoff::retry_env env = [] {
    backoff::retry_env e;
    e.sleep = [](backoff::duration, std::stop_token) { return true; };
    return e;
  }();
  return env;
}

template <class Hooks>
void RetryTwoFailuresWithHooks(benchmark::State& state, Hooks hooks) {
  const backoff::retry_options<backoff::default_classifier, Hooks> options{
      .policy = {backoff::parse_policy("exponential(initial=1ms, max=10ms)"), 5, {}},
      .hooks = hooks};
  const backoff::retry_env& env = zero_wait_env();
  int calls = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(calls);
    auto r = backoff::retry([&] { return ++calls % 3 == 0; }, options, env);
    benchmark::DoNotOptimize(r);
  }
}
backoff::retry_metrics bench_metrics;
BENCHMARK_CAPTURE(RetryTwoFailuresWithHooks, no_hooks, backoff::no_hooks{});
BENCHMARK_CAPTURE(RetryTwoFailuresWithHooks, empty_hooks, empty_hooks{});
BENCHMARK_CAPTURE(RetryTwoFailuresWithHooks, metrics_hooks, backoff::metrics_hooks{&bench_metrics});

}  // namespace
