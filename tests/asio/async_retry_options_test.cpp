// SPDX-License-Identifier: Apache-2.0
// async_retry's options API: per-attempt timeouts that cancel the attempt through its
// cancellation slot, min(timeout, time left) under a deadline, exceptions, void operations and
// Boost.System error codes. Time is a manual clock; an attempt that "hangs" waits on a timer
// that never expires, so nothing here sleeps.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <optional>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/clock.hpp"
#include "backoff/policy.hpp"
#include "run_coroutine.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;

using backoff::testing::run_coroutine;

// A world where attempts listed in `hang` never answer by themselves. The loop's sleeps are
// told apart by the hooks: a sleep asked for during an attempt is its timeout timer, which
// "fires" (the clock moves on by its length) for a hanging attempt and otherwise waits until
// the parallel group cancels it; a sleep between attempts is a backoff wait, recorded and
// passed at once.
struct hanging_world {
  backoff::manual_clock clock;
  std::set<std::uint32_t> hang;
  std::set<std::uint32_t> stop_during;  // attempts during which the stop source is triggered
  std::stop_source stop;
  backoff::random_generator rng{11};
  std::uint32_t current = 0;  // the attempt in progress, 0 between attempts
  std::vector<duration> timeouts_asked;
  std::vector<duration> waits;
  std::vector<duration> op_told;
  std::vector<std::uint32_t> aborted;  // attempts whose wait ended with operation_aborted
  std::vector<backoff::retry_reason> reasons;

  backoff::async_retry_env env() {
    backoff::async_retry_env e;
    e.now = [this] { return clock.now().time_since_epoch(); };
    e.sleep = [this](duration d, std::stop_token) -> asio::awaitable<bool> {
      if (current == 0) {
        waits.push_back(d);
        clock.advance(d);
        co_return true;
      }
      timeouts_asked.push_back(d);
      if (stop_during.contains(current)) {
        stop.request_stop();
        co_return false;  // a stop wakes the timer early
      }
      if (hang.contains(current)) {
        clock.advance(d);
        co_return true;
      }
      asio::steady_timer forever(co_await asio::this_coro::executor,
                                 asio::steady_timer::time_point::max());
      const auto [ec] = co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
      co_return !ec;
    };
    e.random = rng;
    e.stop = stop.get_token();
    return e;
  }

  // The operation: answers true at once, unless its attempt hangs.
  auto op() {
    return [this](backoff::attempt_context c) -> asio::awaitable<bool> {
      op_told.push_back(c.timeout);
      if (!hang.contains(c.attempt) && !stop_during.contains(c.attempt)) co_return true;
      asio::steady_timer forever(co_await asio::this_coro::executor,
                                 asio::steady_timer::time_point::max());
      const auto [ec] = co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted) aborted.push_back(c.attempt);
      co_return false;
    };
  }
};

struct tracking_hooks {
  hanging_world* world;
  void on_attempt(const backoff::attempt_event& e) const { world->current = e.attempt; }
  template <class R>
  void on_retry(const backoff::retry_event<R>& e) const {
    world->current = 0;
    world->reasons.push_back(e.reason);
  }
  void on_success(const backoff::success_event&) const { world->current = 0; }
  void on_give_up(const backoff::give_up_event&) const { world->current = 0; }
};

backoff::retry_policy one_second_apart(std::uint32_t max_attempts, duration max_elapsed = 0s) {
  return {backoff::backoff_policy::constant(1s), max_attempts, max_elapsed};
}

TEST(AsyncRetryOptions, AnAttemptPastItsTimeoutIsCancelledAndRetried) {
  hanging_world w;
  w.hang = {1};
  const auto r = run_coroutine(backoff::async_retry(
      w.op(),
      backoff::retry_options{
          .policy = one_second_apart(5), .hooks = tracking_hooks{&w}, .attempt_timeout = 3s},
      w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(r.timed_out, 1u);
  EXPECT_EQ(w.aborted, (std::vector<std::uint32_t>{1})) << "cancelled through its slot";
  EXPECT_EQ(w.reasons, (std::vector<backoff::retry_reason>{backoff::retry_reason::timed_out}));
  EXPECT_EQ(w.op_told, (std::vector<duration>{3s, 3s}));
  EXPECT_EQ(w.waits, (std::vector<duration>{1s}));
  EXPECT_EQ(w.clock.now().time_since_epoch(), 4s);
}

TEST(AsyncRetryOptions, UnderADeadlineAnAttemptGetsOnlyTheTimeLeft) {
  hanging_world w;
  w.hang = {1, 2, 3};
  const auto r = run_coroutine(backoff::async_retry(
      w.op(),
      backoff::retry_options{
          .policy = one_second_apart(0, 6s), .hooks = tracking_hooks{&w}, .attempt_timeout = 4s},
      w.env()));
  // Attempt 1 at 0 s gets 4 s; the wait takes the clock to 5 s; attempt 2 gets the 1 s left.
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(r.timed_out, 2u);
  EXPECT_EQ(w.timeouts_asked, (std::vector<duration>{4s, 1s}));
  EXPECT_EQ(w.clock.now().time_since_epoch(), 6s);
  EXPECT_FALSE(r.last) << "the last attempt gave no result";
}

TEST(AsyncRetryOptions, TheLastAttemptAtTheDeadlineGetsItsWholeTimeout) {
  hanging_world w;
  w.hang = {1, 2, 3};
  const auto r = run_coroutine(backoff::async_retry(
      w.op(),
      backoff::retry_options{
          .policy = one_second_apart(0, 5s), .hooks = tracking_hooks{&w}, .attempt_timeout = 4s},
      w.env()));
  // Attempt 1 times out at 4 s; the 1 s wait reaches the deadline, where the rule makes one last
  // attempt: with 0 s left it would be cancelled at once, so it gets its 4 s.
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(w.timeouts_asked, (std::vector<duration>{4s, 4s}));
  EXPECT_EQ(w.clock.now().time_since_epoch(), 9s);
}

TEST(AsyncRetryOptions, AMinimumUsefulTimeSkipsTheAttemptAtTheDeadline) {
  hanging_world w;
  w.hang = {1, 2, 3};
  const auto r =
      run_coroutine(backoff::async_retry(w.op(),
                                         backoff::retry_options{.policy = one_second_apart(0, 5s),
                                                                .hooks = tracking_hooks{&w},
                                                                .attempt_timeout = 4s,
                                                                .min_attempt_time = 500ms},
                                         w.env()));
  // Attempt 1 times out at 4 s; the wait to the deadline would leave nothing: no second attempt.
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_TRUE(w.waits.empty());
  EXPECT_EQ(w.clock.now().time_since_epoch(), 4s);
}

TEST(AsyncRetryOptions, AStopDuringAnAttemptCancelsItAndEndsTheLoop) {
  hanging_world w;
  w.stop_during = {2};
  w.hang = {1};
  const auto r = run_coroutine(backoff::async_retry(
      w.op(),
      backoff::retry_options{
          .policy = one_second_apart(5), .hooks = tracking_hooks{&w}, .attempt_timeout = 3s},
      w.env()));
  EXPECT_EQ(r.why, outcome::cancelled);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(w.aborted, (std::vector<std::uint32_t>{1, 2}));
}

TEST(AsyncRetryOptions, WithoutATimeoutTheAttemptRunsUnraced) {
  hanging_world w;
  const auto r = run_coroutine(backoff::async_retry(
      w.op(), backoff::retry_options{.policy = one_second_apart(5), .hooks = tracking_hooks{&w}},
      w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_TRUE(w.timeouts_asked.empty());
  EXPECT_EQ(w.op_told, (std::vector<duration>{0s}));
}

struct flaky_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST(AsyncRetryOptions, VoidOperationsAndRetriedExceptions) {
  hanging_world w;
  int calls = 0;
  const auto r = run_coroutine(backoff::async_retry(
      [&]() -> asio::awaitable<void> {
        if (++calls < 3) throw flaky_error("not yet");
        co_return;
      },
      backoff::retry_options{.policy = one_second_apart(5),
                             .classify = backoff::retry_on<flaky_error>{}},
      w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_FALSE(r.error);
  EXPECT_EQ(w.waits, (std::vector<duration>{1s, 1s}));
}

TEST(AsyncRetryOptions, AnExceptionNotListedPropagates) {
  hanging_world w;
  EXPECT_THROW(run_coroutine(backoff::async_retry(
                   []() -> asio::awaitable<bool> {
                     throw std::logic_error("bug");
                     co_return true;
                   },
                   backoff::retry_options{.policy = one_second_apart(5),
                                          .classify = backoff::retry_on<flaky_error>{}},
                   w.env())),
               std::logic_error);
}

TEST(AsyncRetryOptions, GivingUpKeepsTheLastException) {
  hanging_world w;
  const auto r = run_coroutine(backoff::async_retry(
      []() -> asio::awaitable<int> {
        throw flaky_error("always");
        co_return 1;
      },
      backoff::retry_options{
          .policy = one_second_apart(2),
          .classify = backoff::retry_on<flaky_error>::with([](int) { return backoff::verdict{}; })},
      w.env()));
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  EXPECT_TRUE(r.error);
}

TEST(BoostErrorCodes, AreClassifiedByTheDefaultClassifier) {
  const backoff::default_classifier c;
  using boost::system::error_code;
  EXPECT_EQ(c(error_code{}).kind, backoff::verdict_kind::success);
  EXPECT_EQ(c(error_code(asio::error::connection_refused)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(error_code(asio::error::connection_reset)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(error_code(asio::error::timed_out)).kind, backoff::verdict_kind::retryable);
  EXPECT_EQ(c(error_code(asio::error::operation_aborted)).kind, backoff::verdict_kind::permanent);
  EXPECT_EQ(c(error_code(asio::error::eof)).kind, backoff::verdict_kind::permanent);
  EXPECT_EQ(c(error_code(asio::error::access_denied)).kind, backoff::verdict_kind::permanent);
}

TEST(BoostErrorCodes, DriveTheCoroutineLoop) {
  hanging_world w;
  int calls = 0;
  const auto r = run_coroutine(backoff::async_retry(
      [&]() -> asio::awaitable<boost::system::error_code> {
        co_return ++calls < 3 ? boost::system::error_code(asio::error::connection_refused)
                              : boost::system::error_code{};
      },
      backoff::retry_options{.policy = one_second_apart(5)}, w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3u);
}

}  // namespace
