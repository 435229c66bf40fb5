// SPDX-License-Identifier: Apache-2.0
// Hedged call overhead (issue 21, docs/PERFORMANCE.md): async_hedge around an operation that
// answers at once, beside async_retry around the same operation on the same io_context, and
// hedge_controller's decisions alone (what the simulator and the load generator pay per call).
//   build/bin/backoff_bench --benchmark_filter='Hedge|AsyncRetryFirst'
#include <benchmark/benchmark.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <stop_token>

#include "alloc_counter.hpp"
#include "backoff/async_hedge.hpp"
#include "backoff/async_retry.hpp"
#include "backoff/hedge.hpp"
#include "backoff/retry_budget.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::bench::report_allocations;

// The bench links the core library only: its own timer wait stands in for backoff::async_sleep
// (the same steady_timer wait, without the stop token's callback).
asio::awaitable<bool> bench_sleep(backoff::duration d, std::stop_token) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  const auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec;
}

backoff::async_retry_env bench_env() {
  return backoff::async_retry_env{.sleep = bench_sleep, .stop = {}, .busy = {}};
}

asio::awaitable<bool> answers_at_once() {
  co_return true;
}

backoff::hedge_policy hedge_of(std::uint32_t max_attempts, backoff::duration delay) {
  backoff::hedge_policy p;
  p.max_attempts = max_attempts;
  p.delay = delay;
  return p;
}

// Every iteration is one whole call, made from one coroutine that runs the benchmark loop.
asio::awaitable<void> hedge_calls(benchmark::State& state, backoff::hedge_policy policy) {
  const backoff::async_retry_env env = bench_env();
  const backoff::hedge_options<> options{.policy = policy};
  for (auto _ : state) {
    auto r = co_await backoff::async_hedge([] { return answers_at_once(); }, options, env);
    benchmark::DoNotOptimize(r);
  }
}

asio::awaitable<void> retry_calls(benchmark::State& state) {
  const backoff::async_retry_env env = bench_env();
  const backoff::retry_options<> options{
      .policy = {backoff::backoff_policy::constant(50ms), 3, backoff::duration{0}}};
  for (auto _ : state) {
    auto r = co_await backoff::async_retry([] { return answers_at_once(); }, options, env);
    benchmark::DoNotOptimize(r);
  }
}

template <class Loop>
void run_on_io_context(benchmark::State& state, Loop loop) {
  asio::io_context io{1};
  const std::size_t before = backoff::bench::allocations();
  asio::co_spawn(io, loop(state), asio::detached);
  io.run();
  report_allocations(state, before);
}

// The baseline: the retry loop, whose first attempt succeeds.
void AsyncRetryFirstCallSucceeds(benchmark::State& state) {
  run_on_io_context(state, [](benchmark::State& s) { return retry_calls(s); });
}
BENCHMARK(AsyncRetryFirstCallSucceeds);

// A hedge whose first copy answers before the delay: one copy spawned, the hedging timer armed
// and cancelled. max_attempts=1 arms no timer: the cost of the copy's own coroutine alone.
void AsyncHedgeFirstCopyAnswers(benchmark::State& state, std::uint32_t max_attempts) {
  run_on_io_context(state, [max_attempts](benchmark::State& s) {
    return hedge_calls(s, hedge_of(max_attempts, 50ms));
  });
}
BENCHMARK_CAPTURE(AsyncHedgeFirstCopyAnswers, max_attempts_3_delay_50ms, 3U);
BENCHMARK_CAPTURE(AsyncHedgeFirstCopyAnswers, max_attempts_1, 1U);

// delay=0: three copies at once, the first answer wins and the other two are cancelled.
void AsyncHedgeThreeCopiesAtOnce(benchmark::State& state) {
  run_on_io_context(state, [](benchmark::State& s) { return hedge_calls(s, hedge_of(3, 0s)); });
}
BENCHMARK(AsyncHedgeThreeCopiesAtOnce);

// The controller alone. A call whose first copy wins: start and one answer.
void HedgeControllerFirstCopyWins(benchmark::State& state) {
  const backoff::hedge_policy policy = hedge_of(3, 1s);
  backoff::random_generator rng{42};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    backoff::hedge_controller c{policy};
    benchmark::DoNotOptimize(c.start(0s, rng));
    benchmark::DoNotOptimize(c.on_answer(1, backoff::verdict::success(), 10ms, rng));
  }
  report_allocations(state, before);
}
BENCHMARK(HedgeControllerFirstCopyWins);

// Three copies on their timers, a non-fatal answer, then a success; with and without a budget.
void HedgeControllerThreeCopies(benchmark::State& state, bool with_budget) {
  const backoff::hedge_policy policy = hedge_of(3, 1s);
  // A ratio of 1: each success pays back the failure, so every call takes the same path.
  backoff::retry_budget budget{backoff::token_bucket_config{10, 1.0}};
  backoff::random_generator rng{42};
  const std::size_t before = backoff::bench::allocations();
  for (auto _ : state) {
    backoff::hedge_controller c{policy, {.budget = with_budget ? &budget : nullptr}};
    benchmark::DoNotOptimize(c.start(0s, rng));
    benchmark::DoNotOptimize(c.on_timer(1s, rng));
    benchmark::DoNotOptimize(c.on_answer(1, backoff::verdict::retryable(), 1500ms, rng));
    benchmark::DoNotOptimize(c.on_answer(3, backoff::verdict::success(), 1600ms, rng));
  }
  report_allocations(state, before);
}
BENCHMARK_CAPTURE(HedgeControllerThreeCopies, no_gates, false);
BENCHMARK_CAPTURE(HedgeControllerThreeCopies, token_bucket, true);

}  // namespace
