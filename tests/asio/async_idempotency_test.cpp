// SPDX-License-Identifier: Apache-2.0
// The coroutine loop and what the caller and the server say of a call (async_retry.hpp, through
// retry_controller): an attempt the loop cuts at its attempt_timeout is a timeout (a retry quota
// charges its timeout cost) that may have reached the server (not retried when the call is not
// idempotent); a not_sent failure is retried; a pushback is waited exactly and restarts the
// backoff. Time is a manual clock; an attempt that "hangs" waits on a timer that never expires,
// so nothing here sleeps. The last test runs these paths with heap-owning operation, classifier
// and hooks, moved into the call as the rule heading async_retry.hpp says, under ASan in CI.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <stop_token>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backoff/async_retry.hpp"
#include "backoff/clock.hpp"
#include "backoff/policy.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/verdict.hpp"
#include "recording_async_env.hpp"
#include "run_coroutine.hpp"

// As in async_retry.hpp: GCC warns, wrongly, of a mismatched operator delete once it inlines
// Asio's coroutine frames into these coroutines (GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace async_idempotency_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::verdict;
using backoff::testing::run_coroutine;

// Waits on a timer that never expires, until the parallel group cancels it.
asio::awaitable<bool> wait_forever() {
  asio::steady_timer forever(co_await asio::this_coro::executor,
                             asio::steady_timer::time_point::max());
  const auto [ec] = co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec;
}

// Attempts listed in `hang` never answer; the others answer script[attempt - 1]. A sleep asked
// for during an attempt is its timeout timer: it fires (the clock moves on) for a hanging
// attempt and otherwise waits until cancelled; a sleep between attempts is a backoff wait,
// recorded and passed at once.
struct hanging_calls {
  backoff::manual_clock clock;
  std::set<std::uint32_t> hang;
  std::vector<verdict> script;
  backoff::random_generator rng{5};
  std::uint32_t current = 0;  // the attempt in progress, 0 between attempts
  std::vector<duration> waits;
  std::function<void()> on_attempt_start;  // called as each attempt starts

  backoff::async_retry_env env() {
    backoff::async_retry_env e;
    e.now = [this] { return clock.now().time_since_epoch(); };
    e.sleep = [this](duration d, std::stop_token) -> asio::awaitable<bool> {
      if (current == 0) {
        waits.push_back(d);
        clock.advance(d);
        co_return true;
      }
      if (hang.contains(current)) {
        clock.advance(d);
        co_return true;
      }
      co_return co_await wait_forever();
    };
    e.random = rng;
    return e;
  }

  auto op() {
    return [this](backoff::attempt_context c) -> asio::awaitable<verdict> {
      if (on_attempt_start) on_attempt_start();
      if (hang.contains(c.attempt)) {
        co_await wait_forever();
        co_return verdict::permanent();  // never used: the timeout won
      }
      co_return script.at(c.attempt - 1);
    };
  }
};

backoff::retry_policy async_doubling(bool idempotent = true) {
  backoff::retry_policy p{backoff::backoff_policy::exponential(1s, 2.0, 30s), 0, 0s};
  p.idempotent = idempotent;
  return p;
}

verdict async_not_sent() {
  verdict v = verdict::retryable();
  v.not_sent = true;
  return v;
}

verdict async_pushback(duration d) {
  verdict v = verdict::retryable(d);
  v.pushback = true;
  return v;
}

// The hooks that tell hanging_calls which attempt is in progress, so that it knows a timeout
// timer from a backoff wait whichever branch of the race starts first.
struct between_attempts {
  hanging_calls* calls;
  void on_attempt(const backoff::attempt_event& e) const { calls->current = e.attempt; }
  template <class R>
  void on_retry(const backoff::retry_event<R>&) const {
    calls->current = 0;
  }
  void on_success(const backoff::success_event&) const { calls->current = 0; }
  void on_give_up(const backoff::give_up_event&) const { calls->current = 0; }
};

TEST(AsyncIdempotency, AnAttemptCutAtItsTimeoutIsNotRetriedWhenNotIdempotent) {
  hanging_calls w;
  w.hang = {1};
  w.script = {verdict::success(), verdict::success()};
  auto options = backoff::retry_options{
      .policy = async_doubling(false), .hooks = between_attempts{&w}, .attempt_timeout = 3s};
  const auto r = run_coroutine(backoff::async_retry(w.op(), std::move(options), w.env()));
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(r.timed_out, 1u);
  EXPECT_TRUE(w.waits.empty());
  EXPECT_EQ(w.clock.now().time_since_epoch(), 3s);
}

TEST(AsyncIdempotency, TheSameTimeoutIsRetriedWhenIdempotent) {
  hanging_calls w;
  w.hang = {1};
  w.script = {verdict::success(), verdict::success()};
  auto options = backoff::retry_options{
      .policy = async_doubling(), .hooks = between_attempts{&w}, .attempt_timeout = 3s};
  const auto r = run_coroutine(backoff::async_retry(w.op(), std::move(options), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(w.waits, (std::vector<duration>{1s}));
}

TEST(AsyncIdempotency, ANotSentFailureIsRetriedAndAMaybeSentOneIsNot) {
  hanging_calls w;
  w.script = {async_not_sent(), async_not_sent(), verdict::retryable(), verdict::success()};
  auto options = backoff::retry_options{.policy = async_doubling(false)};
  const auto r = run_coroutine(backoff::async_retry(w.op(), std::move(options), w.env()));
  EXPECT_EQ(r.why, outcome::not_idempotent);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(w.waits, (std::vector<duration>{1s, 2s}));
}

TEST(AsyncQuota, ATimeoutCutByTheLoopCostsTheTimeoutCost) {
  hanging_calls w;
  w.hang = {1, 2};
  w.script = {verdict::success(), verdict::success(), verdict::success()};
  backoff::retry_budget budget{backoff::retry_quota_config{}};
  std::vector<std::uint32_t> available;
  w.on_attempt_start = [&] {
    available.push_back(std::get<backoff::retry_quota>(budget.get()).available());
  };
  auto options = backoff::retry_options{.policy = async_doubling(),
                                        .hooks = between_attempts{&w},
                                        .gates = {.budget = &budget},
                                        .attempt_timeout = 3s};
  const auto r = run_coroutine(backoff::async_retry(w.op(), std::move(options), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.timed_out, 2u);
  // 500, then 10 for each timed-out attempt; the success refunds the last 10.
  EXPECT_EQ(available, (std::vector<std::uint32_t>{500, 490, 480}));
  EXPECT_EQ(std::get<backoff::retry_quota>(budget.get()).available(), 490u);
}

TEST(AsyncPushback, WaitsExactlyAndRestartsTheBackoffAsTheSyncLoopDoes) {
  hanging_calls w;
  w.script = {verdict::retryable(), verdict::retryable(), async_pushback(300ms),
              verdict::retryable(), verdict::success()};
  auto options = backoff::retry_options{.policy = async_doubling()};
  const auto r = run_coroutine(backoff::async_retry(w.op(), std::move(options), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(w.waits, (std::vector<duration>{1s, 2s, 300ms, 1s}));
}

// ---- Heap-owning arguments (ASan) -------------------------------------------------------------

// Every `held_text` signs in when built and out when destroyed; signing out without having
// signed in is a copy made bit for bit and destroyed twice (async_temporaries_test.cpp).
struct held_ledger {
  std::set<const void*> alive;
  int never_built = 0;
  static held_ledger& get() {
    static held_ledger instance;
    return instance;
  }
};

struct held_text {
  std::string text;
  explicit held_text(std::string t) : text(std::move(t)) { held_ledger::get().alive.insert(this); }
  held_text(const held_text& o) : text(o.text) { held_ledger::get().alive.insert(this); }
  held_text(held_text&& o) noexcept : text(std::move(o.text)) {
    held_ledger::get().alive.insert(this);
  }
  held_text& operator=(const held_text&) = default;
  held_text& operator=(held_text&&) noexcept = default;
  ~held_text() {
    if (held_ledger::get().alive.erase(this) == 0) ++held_ledger::get().never_built;
  }
};

const std::string held_op_text = "the operation's capture, longer than a small-string buffer";
const std::string held_classify_text = "the classifier's capture, longer than any SSO buffer";
const std::string held_hooks_text = "the hooks' capture, longer than a small-string buffer";

struct held_seen {
  std::vector<std::string> texts;
  std::vector<duration> delays;
};

struct held_hooks {
  held_text tag{held_hooks_text};
  std::function<void(duration)> on_wait;
  template <class R>
  void on_retry(const backoff::retry_event<R>& e) const {
    on_wait(e.delay);
  }
};

// Statuses: 503 is a pushback that sent nothing, 500 a plain failure, 200 a success.
auto held_classifier(held_seen* seen) {
  return [tag = held_text{held_classify_text}, seen](int status) {
    seen->texts.push_back(tag.text);
    if (status == 200) return verdict::success();
    verdict v = status == 503 ? async_pushback(300ms) : verdict::retryable();
    v.not_sent = status == 503;
    return v;
  };
}

auto held_operation(held_seen* seen, std::vector<int> statuses) {
  return [tag = held_text{held_op_text}, seen,
          statuses = std::move(statuses)](std::uint32_t attempt) -> asio::awaitable<int> {
    seen->texts.push_back(tag.text);
    co_return statuses.at(attempt - 1);
  };
}

// The caller's coroutine: the options and the operation, which own memory, are built in
// statements of their own and moved into the call (the rule heading async_retry.hpp).
asio::awaitable<backoff::retry_result<int>> held_caller(held_seen* seen,
                                                        backoff::retry_budget* budget,
                                                        backoff::async_retry_env env) {
  auto options =
      backoff::retry_options{.policy = async_doubling(false),
                             .classify = held_classifier(seen),
                             .hooks = held_hooks{held_text{held_hooks_text},
                                                 [seen](duration d) { seen->delays.push_back(d); }},
                             .gates = {.budget = budget}};
  auto op = held_operation(seen, {503, 503, 500, 200});
  co_return co_await backoff::async_retry(std::move(op), std::move(options), std::move(env));
}

TEST(AsyncIdempotency, HeapOwningArgumentsLiveThroughPushbackQuotaAndIdempotency) {
  held_ledger::get() = {};
  {
    held_seen seen;
    backoff::testing::recording_async_env rec{3};
    backoff::retry_budget budget{backoff::retry_quota_config{}};
    const auto r = run_coroutine(held_caller(&seen, &budget, rec.env()));
    // Two pushbacks that sent nothing are retried after exactly 300 ms; the plain 500 may have
    // reached the server and ends the call.
    EXPECT_EQ(r.why, outcome::not_idempotent);
    EXPECT_EQ(r.attempts, 3u);
    EXPECT_EQ(rec.sleeps, (std::vector<duration>{300ms, 300ms}));
    EXPECT_EQ(seen.delays, rec.sleeps);
    EXPECT_EQ(std::get<backoff::retry_quota>(budget.get()).available(), 490u);
    ASSERT_EQ(seen.texts.size(), 6u);
    for (std::size_t i = 0; i < seen.texts.size(); i += 2) {
      EXPECT_EQ(seen.texts[i], held_op_text);
      EXPECT_EQ(seen.texts[i + 1], held_classify_text);
    }
  }
  EXPECT_EQ(held_ledger::get().never_built, 0) << "an object destroyed that was never built";
  EXPECT_TRUE(held_ledger::get().alive.empty()) << "an object built and never destroyed";
}

}  // namespace async_idempotency_test

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
