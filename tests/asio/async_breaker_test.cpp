// SPDX-License-Identifier: Apache-2.0
// async_retry with a circuit breaker in its gates: the coroutine loop gets the breaker from the
// shared retry_controller, so it refuses and records exactly as the sync loop does. Time is a
// manual clock; nothing sleeps.
#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/clock.hpp"
#include "backoff/spec.hpp"
#include "recording_async_env.hpp"
#include "run_coroutine.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::breaker_state;
using backoff::circuit_breaker;
using backoff::duration;
using backoff::outcome;
using backoff::parse_breaker;
using backoff::verdict;
using backoff::testing::run_coroutine;

// Seed 5: the generator these tests were written with.
struct breaker_world : backoff::testing::recording_async_env {
  breaker_world() : recording_async_env(5) {}
};

struct always {
  verdict answer;
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  asio::awaitable<verdict> operator()() {
    ++*calls;
    co_return answer;
  }
};

const backoff::retry_policy one_second_policy{backoff::parse_policy("constant(initial=1s)"), 10,
                                              0s};

// The positional form, as async_retry_test.cpp passes its gates.
template <class Op>
auto retried(Op op, circuit_breaker& b, breaker_world& w) {
  return run_coroutine(backoff::async_retry(op, one_second_policy, backoff::default_classifier{},
                                            w.env(), backoff::no_retry_hook{}, {.breaker = &b}));
}

TEST(AsyncBreaker, FailuresOpenTheBreakerAndTheNextAttemptIsRefused) {
  breaker_world w;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=2, open=1m, half_open=1)")};
  always op{verdict::retryable()};
  const auto r = retried(op, b, w);
  EXPECT_EQ(r.why, outcome::breaker_open);
  EXPECT_EQ(*op.calls, 2);
  EXPECT_EQ(r.attempts, 2u);  // open for a minute: no wait for an attempt it would refuse
  EXPECT_EQ(w.sleeps, (std::vector<duration>{1s}));
  EXPECT_EQ(b.state(w.clock.now().time_since_epoch()), breaker_state::open);
  // Another operation is refused at once, without calling the server.
  always next{verdict::success()};
  const auto refused = retried(next, b, w);
  EXPECT_EQ(refused.why, outcome::breaker_open);
  EXPECT_EQ(*next.calls, 0);
}

TEST(AsyncBreaker, RetryOnlyRefusesTheRetryButNotTheFirstTry) {
  breaker_world w;
  circuit_breaker b{parse_breaker("retry-only-10pct")};
  always op{verdict::retryable()};
  const auto r = retried(op, b, w);
  EXPECT_EQ(r.why, outcome::breaker_open);
  EXPECT_EQ(*op.calls, 1);
  EXPECT_TRUE(w.sleeps.empty());
}

TEST(AsyncBreaker, AHalfOpenTrialThatSucceedsClosesTheBreaker) {
  breaker_world w;
  circuit_breaker b{parse_breaker("breaker(kind=consecutive, failures=1, open=1s, half_open=1)")};
  const auto p = b.try_acquire(0s, true);
  b.record(0s, p, true);
  w.clock.advance(1s);
  always op{verdict::success()};
  const auto r = retried(op, b, w);
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(b.state(w.clock.now().time_since_epoch()), breaker_state::closed);
}

}  // namespace
