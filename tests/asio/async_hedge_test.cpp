// SPDX-License-Identifier: Apache-2.0
// async_hedge (async_hedge.hpp) on an io_context: the first success wins and the losers observe
// their cancellation, a fatal answer ends everything, a non-fatal one sends the next copy at once,
// pushback, the budget, the deadline, the caller's cancellation and stop token, exceptions, and
// that no copy outlives the call. Time is virtual: every wait (the hedging delay and the copies'
// own latencies) is a sleep that the test's loop wakes in time order, moving a manual clock,
// whenever the io_context has nothing else to do; nothing sleeps for real, except one test that
// runs real timers of a millisecond on two threads (for TSan).
#include "backoff/async_hedge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "backoff/clock.hpp"
#include "backoff/retry_budget.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::duration;
using backoff::hedge_policy;
using backoff::outcome;

constexpr duration never = 1h;  // a copy that does not answer by itself

// A manual clock that moves only when the io_context has nothing ready: then the earliest pending
// sleep (ties in the order they began) is woken and the clock set to its time.
class virtual_time {
 public:
  duration now() const { return clock_.now().time_since_epoch(); }

  // true when the time passed, false when the sleep was cancelled.
  asio::awaitable<bool> sleep(duration d) {
    auto entry = std::make_shared<sleeper>();
    entry->at = now() + std::max(d, duration{0});
    entry->sequence = next_sequence_++;
    asio::steady_timer timer(co_await asio::this_coro::executor,
                             asio::steady_timer::time_point::max());
    entry->timer = &timer;
    pending_.push_back(entry);
    (void)co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    std::erase(pending_, entry);
    co_return entry->fired;
  }

  void run(asio::io_context& io) {
    for (;;) {
      io.restart();
      io.poll();
      if (pending_.empty()) return;
      const auto first =
          std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
            return a->at != b->at ? a->at < b->at : a->sequence < b->sequence;
          });
      const std::shared_ptr<sleeper> entry = *first;
      pending_.erase(first);
      if (entry->at > now()) clock_.set(backoff::manual_clock::time_point{entry->at});
      entry->fired = true;
      entry->timer->cancel();
    }
  }

 private:
  struct sleeper {
    duration at{0};
    std::uint64_t sequence = 0;
    asio::steady_timer* timer = nullptr;
    bool fired = false;
  };
  backoff::manual_clock clock_;
  std::vector<std::shared_ptr<sleeper>> pending_;
  std::uint64_t next_sequence_ = 0;
};

struct reply {
  int status = 0;
  std::optional<duration> retry_after;
};

// What copy n does: answer `status` after `latency`, or throw.
struct script_line {
  duration latency = never;
  int status = 200;
  std::optional<duration> retry_after = std::nullopt;
  enum { answer, runtime_error, logic_error } ends = answer;
};

struct world {
  asio::io_context io;
  virtual_time time;
  std::map<std::uint32_t, script_line> script;
  std::map<std::uint32_t, duration> started;  // copy -> when op was called
  std::map<std::uint32_t, duration> told;     // copy -> the context's timeout
  std::vector<std::uint32_t> saw_cancellation;
  int alive = 0;             // copies whose coroutine has not ended
  int alive_at_return = -1;  // `alive` when async_hedge returned (or threw)
  bool returned = false;

  struct alive_guard {
    int* n;
    explicit alive_guard(int* count) : n(count) { ++*n; }
    ~alive_guard() { --*n; }
    alive_guard(const alive_guard&) = delete;
    alive_guard& operator=(const alive_guard&) = delete;
  };

  asio::awaitable<reply> attempt(backoff::attempt_context c) {
    const alive_guard guard(&alive);
    started[c.attempt] = time.now();
    told[c.attempt] = c.timeout;
    const auto found = script.find(c.attempt);
    const script_line line = found == script.end() ? script_line{} : found->second;
    if (!co_await time.sleep(line.latency)) {
      saw_cancellation.push_back(c.attempt);
      co_return reply{-1, std::nullopt};
    }
    if (line.ends == script_line::runtime_error) throw std::runtime_error("copy failed");
    if (line.ends == script_line::logic_error) throw std::logic_error("bug in copy");
    co_return reply{line.status, line.retry_after};
  }

  auto op() {
    return [this](backoff::attempt_context c) { return attempt(c); };
  }

  backoff::async_retry_env env() {
    backoff::async_retry_env e;
    e.now = [this] { return time.now(); };
    e.sleep = [this](duration d, std::stop_token) { return time.sleep(d); };
    return e;
  }

  // Runs `work` to its end on virtual time; rethrows what it throws.
  template <class T>
  T run(asio::awaitable<T> work, asio::cancellation_slot slot = {}) {
    std::optional<T> out;
    std::exception_ptr error;
    asio::co_spawn(io, std::move(work),
                   asio::bind_cancellation_slot(slot, [&](std::exception_ptr e, T value) {
                     alive_at_return = alive;
                     returned = true;
                     error = e;
                     if (!e) out.emplace(std::move(value));
                   }));
    time.run(io);
    if (error) std::rethrow_exception(error);
    EXPECT_TRUE(out.has_value()) << "the call never ended";
    return std::move(*out);
  }

  // At virtual time t, unless the call has returned: `f()`.
  template <class F>
  void at(duration t, F f) {
    asio::co_spawn(io, at_coroutine(t, std::move(f)), asio::detached);
  }
  template <class F>
  asio::awaitable<void> at_coroutine(duration t, F f) {
    co_await time.sleep(t - time.now());
    if (!returned) f();
  }
};

hedge_policy policy(std::uint32_t max_attempts, duration delay,
                    std::vector<int> non_fatal = {503}) {
  hedge_policy p;
  p.max_attempts = max_attempts;
  p.delay = delay;
  p.non_fatal = std::move(non_fatal);
  return p;
}

struct by_policy {
  hedge_policy p;
  backoff::verdict operator()(const reply& r) const {
    return p.classify_status(r.status, r.retry_after);
  }
};

backoff::hedge_options<by_policy> options(const hedge_policy& p) {
  return {.policy = p, .classify = by_policy{p}};
}

std::vector<std::uint32_t> sorted(std::vector<std::uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(AsyncHedge, TheFirstSuccessWinsAndTheLosersObserveCancellation) {
  world w;
  w.script[1] = {.latency = 5s};
  w.script[2] = {.latency = 1500ms, .status = 204};
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.winner, 2u);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.cancelled, 2u);
  ASSERT_TRUE(r.last);
  EXPECT_EQ(r.last->status, 204);
  EXPECT_EQ(w.started, (std::map<std::uint32_t, duration>{{1, 0s}, {2, 1s}, {3, 2s}}));
  EXPECT_EQ(sorted(w.saw_cancellation), (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(w.time.now(), 2500ms) << "it returned when copy 2 answered";
  EXPECT_EQ(w.alive_at_return, 0) << "no copy outlives the call";
}

TEST(AsyncHedge, AFastFirstAnswerSendsNoCopy) {
  world w;
  w.script[1] = {.latency = 300ms};
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(r.cancelled, 0u);
  EXPECT_EQ(w.started.size(), 1u);
  EXPECT_EQ(w.time.now(), 300ms) << "the hedging timer was cancelled, not waited for";
}

TEST(AsyncHedge, AFatalAnswerEndsEverything) {
  world w;
  w.script[1] = {.latency = 1200ms, .status = 500};
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.why, outcome::permanent);
  EXPECT_EQ(r.winner, 1u);
  ASSERT_TRUE(r.last);
  EXPECT_EQ(r.last->status, 500);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(w.saw_cancellation, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(w.alive_at_return, 0);
}

TEST(AsyncHedge, ANonFatalAnswerSendsTheNextCopyAtOnce) {
  world w;
  w.script[1] = {.latency = 300ms, .status = 503};
  w.script[2] = {.latency = 200ms};
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.winner, 2u);
  EXPECT_EQ(w.started, (std::map<std::uint32_t, duration>{{1, 0s}, {2, 300ms}}));
  EXPECT_EQ(r.answered, 2u);
}

TEST(AsyncHedge, EveryCopyNonFatalExhaustsTheAttempts) {
  world w;
  w.script[1] = {.latency = 2500ms, .status = 503};
  w.script[2] = {.latency = 100ms, .status = 503};  // at 1.1 s: copy 3 goes at once
  w.script[3] = {.latency = 2s, .status = 503};     // at 3.1 s: the last answer
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  EXPECT_EQ(r.stopped, backoff::hedge_stop::max_attempts);
  EXPECT_EQ(r.answered, 3u);
  EXPECT_EQ(r.cancelled, 0u);
  EXPECT_EQ(w.started.at(3), 1100ms);
  EXPECT_EQ(w.time.now(), 3100ms);
  ASSERT_TRUE(r.last);
  EXPECT_EQ(r.last->status, 503);
}

TEST(AsyncHedge, ZeroDelaySendsEveryCopyAtOnce) {
  world w;
  w.script[3] = {.latency = 10ms};
  const hedge_policy p = policy(3, 0s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.winner, 3u);
  EXPECT_EQ(w.started, (std::map<std::uint32_t, duration>{{1, 0s}, {2, 0s}, {3, 0s}}));
  EXPECT_EQ(sorted(w.saw_cancellation), (std::vector<std::uint32_t>{1, 2}));
}

TEST(AsyncHedge, PushbackStopsFurtherCopies) {
  world w;
  w.script[1] = {.latency = 1500ms, .status = 503, .retry_after = 5s};
  w.script[2] = {.latency = 4s};
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_TRUE(r.pushed_back);
  EXPECT_EQ(r.stopped, backoff::hedge_stop::pushback);
  EXPECT_EQ(r.attempts, 2u) << "no copy 3 at 1.5 s nor at 2.5 s";
  EXPECT_EQ(w.time.now(), 5s);
}

TEST(AsyncHedge, TheBudgetIsChargedForEachCopyAndCanStopThem) {
  world w;
  w.script[1] = {.latency = 5s, .status = 503};
  w.script[2] = {.latency = 5s, .status = 503};
  backoff::retry_budget budget{backoff::ratio_budget_config{0.0, 0.1, 10s}};  // one retry
  const hedge_policy p = policy(4, 1s);
  auto o = options(p);
  o.gates.budget = &budget;
  const auto r = w.run(backoff::async_hedge(w.op(), o, w.env()));
  EXPECT_EQ(r.why, outcome::budget_exhausted);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(std::get<backoff::ratio_budget>(budget.get()).window_counts(w.time.now()).retries, 1u);
}

TEST(AsyncHedge, TheDeadlineCancelsEveryCopy) {
  world w;
  const hedge_policy p = policy(3, 1s);
  auto o = options(p);
  o.max_elapsed = 2500ms;
  const auto r = w.run(backoff::async_hedge(w.op(), o, w.env()));
  EXPECT_EQ(r.why, outcome::deadline_exceeded);
  EXPECT_EQ(r.cancelled, 3u);
  EXPECT_EQ(w.time.now(), 2500ms);
  EXPECT_EQ(w.told, (std::map<std::uint32_t, duration>{{1, 2500ms}, {2, 1500ms}, {3, 500ms}}))
      << "each copy is told the time left";
  EXPECT_EQ(w.alive_at_return, 0);
}

TEST(AsyncHedge, TheCallersCancellationCancelsEveryCopy) {
  world w;
  asio::cancellation_signal cancel;
  w.at(1500ms, [&] { cancel.emit(asio::cancellation_type::terminal); });
  const hedge_policy p = policy(3, 1s);
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), w.env()), cancel.slot());
  EXPECT_EQ(r.why, outcome::cancelled);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(r.cancelled, 2u);
  EXPECT_EQ(sorted(w.saw_cancellation), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(w.time.now(), 1500ms);
  EXPECT_EQ(w.alive_at_return, 0);
}

TEST(AsyncHedge, TheStopTokenCancelsEveryCopy) {
  world w;
  std::stop_source stop;
  w.at(2500ms, [&] { stop.request_stop(); });
  const hedge_policy p = policy(3, 1s);
  auto env = w.env();
  env.stop = stop.get_token();
  const auto r = w.run(backoff::async_hedge(w.op(), options(p), env));
  EXPECT_EQ(r.why, outcome::cancelled);
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(sorted(w.saw_cancellation), (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(w.time.now(), 2500ms) << "woken at once, while only answers could wake it";
  EXPECT_EQ(w.alive_at_return, 0);
}

TEST(AsyncHedge, ARetriedExceptionIsANonFatalAnswer) {
  world w;
  w.script[1] = {.latency = 200ms, .ends = script_line::runtime_error};
  w.script[2] = {.latency = 100ms};
  const hedge_policy p = policy(3, 1s);
  const auto classify = backoff::retry_on<std::runtime_error>::with(by_policy{p});
  const auto r = w.run(backoff::async_hedge(
      w.op(), backoff::hedge_options{.policy = p, .classify = classify}, w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.winner, 2u);
  EXPECT_EQ(w.started.at(2), 200ms);
  EXPECT_FALSE(r.error) << "the winner's answer replaced it";
}

TEST(AsyncHedge, TheLastRetriedExceptionIsKeptWhenEveryCopyFails) {
  world w;
  w.script[1] = {.latency = 200ms, .ends = script_line::runtime_error};
  const hedge_policy p = policy(1, 1s);
  const auto classify = backoff::retry_on<std::runtime_error>::with(by_policy{p});
  const auto r = w.run(backoff::async_hedge(
      w.op(), backoff::hedge_options{.policy = p, .classify = classify}, w.env()));
  EXPECT_EQ(r.why, outcome::attempts_exhausted);
  EXPECT_FALSE(r.last);
  ASSERT_TRUE(r.error);
  EXPECT_THROW(std::rethrow_exception(r.error), std::runtime_error);
}

TEST(AsyncHedge, AnotherExceptionPropagatesAfterTheOtherCopiesEnd) {
  world w;
  w.script[1] = {.latency = 1500ms, .ends = script_line::logic_error};
  const hedge_policy p = policy(3, 1s);
  const auto classify = backoff::retry_on<std::runtime_error>::with(by_policy{p});
  EXPECT_THROW((void)w.run(backoff::async_hedge(
                   w.op(), backoff::hedge_options{.policy = p, .classify = classify}, w.env())),
               std::logic_error);
  EXPECT_EQ(w.saw_cancellation, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(w.alive_at_return, 0) << "copy 2 ended before the exception left the call";
  EXPECT_EQ(w.time.now(), 1500ms);
}

TEST(AsyncHedge, WithoutAnExceptionClassifierAnExceptionPropagates) {
  world w;
  w.script[1] = {.latency = 100ms, .ends = script_line::runtime_error};
  const hedge_policy p = policy(2, 0s);
  EXPECT_THROW((void)w.run(backoff::async_hedge(w.op(), options(p), w.env())), std::runtime_error);
  EXPECT_EQ(w.saw_cancellation, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(w.alive_at_return, 0);
}

asio::awaitable<void> quick_void(virtual_time* time, int* calls) {
  ++*calls;
  co_await time->sleep(10ms);
}

TEST(AsyncHedge, AVoidOperationSucceedsWhenItReturns) {
  world w;
  int calls = 0;
  const hedge_policy p = policy(2, 1s);
  const auto r = w.run(
      backoff::async_hedge([&] { return quick_void(&w.time, &calls); }, {.policy = p}, w.env()));
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.last.has_value());
}

// Real timers and two threads: the caller runs on a strand, as the header asks. Copy 1 waits
// until it is cancelled; copy 2, sent after a millisecond, answers at once.
asio::awaitable<int> real_copy(std::uint32_t attempt, std::atomic<int>* cancelled,
                               std::atomic<int>* alive) {
  alive->fetch_add(1);
  struct leave {
    std::atomic<int>* n;
    ~leave() { n->fetch_sub(1); }
  } const guard{alive};
  if (attempt != 1) co_return 200;
  asio::steady_timer forever(co_await asio::this_coro::executor,
                             asio::steady_timer::time_point::max());
  const auto [ec] = co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
  if (ec == asio::error::operation_aborted) cancelled->fetch_add(1);
  co_return -1;
}

backoff::verdict http_200(int status) {
  return status == 200 ? backoff::verdict::success() : backoff::verdict::retryable();
}

TEST(AsyncHedge, RunsOnAStrandOfAMultiThreadedContext) {
  asio::io_context io{2};
  std::atomic<int> cancelled{0};
  std::atomic<int> alive{0};
  std::atomic<int> alive_at_return{-1};
  std::optional<backoff::hedge_result<int>> result;
  const hedge_policy p = policy(3, 1ms, {});
  asio::co_spawn(asio::make_strand(io),
                 backoff::async_hedge(
                     [&](std::uint32_t attempt) { return real_copy(attempt, &cancelled, &alive); },
                     backoff::hedge_options{.policy = p, .classify = http_200}),
                 [&](std::exception_ptr e, backoff::hedge_result<int> r) {
                   alive_at_return = alive.load();
                   if (!e) result = std::move(r);
                 });
  std::thread other([&] { io.run(); });
  io.run();
  other.join();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->why, outcome::succeeded);
  EXPECT_EQ(result->winner, 2u);
  EXPECT_EQ(cancelled.load(), 1);
  EXPECT_EQ(alive_at_return.load(), 0);
}

}  // namespace
