// SPDX-License-Identifier: Apache-2.0
// Issue 40: every async API, called from a coroutine with arguments that own memory (std::string
// and std::vector captures, std::function hooks capturing std::string, a hedge_policy's vector),
// runs through several attempts, its classifier and hooks see what they captured, and nothing is
// freed twice. Run under ASan (the asan preset) a double free aborts the test; in any build a
// ledger of lifetimes catches an object destroyed that was never built, which is what GCC 11 and
// 12 do with a copy they make bit for bit.
//
// What GCC 12.2 does (async_retry.hpp, "GCC before 13"): inside a co_await expression, a
// temporary built by aggregate initialisation (a braced retry_options{...}, hedge_options{...},
// hooks struct, or a lambda's captures) has each member that has a destructor built in a slot of
// the calling coroutine's frame and copied bit for bit into the aggregate; both are destroyed.
// The same goes for a default argument of such a type. What was tried, with a standalone
// program and with this library (g++ 12.2 -fsanitize=address, -O0 and -O2), for the call
// `co_await f(options{.classify = [tag](int s) {...}})`:
//   - f a coroutine taking the options by value (the old async_retry): double free;
//   - f a plain function taking them by value, by const& or by && and moving (or copying) them
//     into a coroutine that takes them by value: double free, the same one;
//   - the lambda alone as the argument, or an aggregate without a lambda whose member is a
//     std::string: double free.
// The extra destruction is in the caller's frame, before f runs, so no signature of f avoids
// it; clang 14 compiles such calls correctly (checked: a capturing lambda, and an aggregate
// holding a std::string, as the argument). What works with GCC 12: the options (and any
// lambda capturing by value) built in a statement of their own and moved into the call; a
// temporary returned by a function (a factory); the call made outside the co_await and its
// awaitable co_awaited next. These tests call every async API in those forms.
//
// What the library itself did wrong: the async_retry overload taking a window built its hook
// wrapper as a braced temporary inside its own co_await, so an on_retry that owns memory was
// freed twice (AsyncRetryThroughAWindowAtEveryArity aborted with a double free under ASan, and
// with glibc's "free(): double free" at -O2, before the fix); and its default arguments
// (async_retry_env env = {}) were temporaries of the caller's co_await, copied bit for bit and
// destroyed twice as well (harmless only because async_retry_env's defaults are function
// pointers). Every async API is now a plain function that moves its by-value arguments into a
// coroutine, with overloads instead of those defaults (the rule in async_retry.hpp). A new async
// API gets a case here.
#include <gtest/gtest.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backoff/async_bulkhead.hpp"
#include "backoff/async_hedge.hpp"
#include "backoff/async_retry.hpp"
#include "backoff/async_window.hpp"
#include "backoff/bulkhead.hpp"
#include "backoff/clock.hpp"
#include "backoff/http.hpp"
#include "backoff/random.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "run_coroutine.hpp"

// As in async_retry.hpp: GCC warns, wrongly, of a mismatched operator delete once it inlines
// Asio's coroutine frames into these coroutines (GCC bug 109224).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// A namespace of its own: the asan preset compiles the asio tests as one unity source.
namespace async_temporaries_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::duration;
using backoff::outcome;
using backoff::testing::run_coroutine;

// ---- A ledger of lifetimes ---------------------------------------------------------------------

// Every `owned` object signs in when built and out when destroyed; signing out without having
// signed in is a copy the compiler made bit for bit and destroyed (the tests run on one thread).
class ledger {
 public:
  static ledger& get() {
    static ledger instance;
    return instance;
  }
  void built(const void* p) { alive_.insert(p); }
  void destroyed(const void* p) {
    if (alive_.erase(p) == 0) ++never_built_;
  }
  std::size_t alive() const noexcept { return alive_.size(); }
  std::size_t never_built() const noexcept { return never_built_; }
  void reset() {
    alive_.clear();
    never_built_ = 0;
  }

 private:
  std::set<const void*> alive_;
  std::size_t never_built_ = 0;
};

// A value that owns heap memory (longer than any small-string buffer) and signs the ledger.
struct owned {
  std::string text;
  explicit owned(std::string t) : text(std::move(t)) { ledger::get().built(this); }
  owned(const owned& other) : text(other.text) { ledger::get().built(this); }
  owned(owned&& other) noexcept : text(std::move(other.text)) { ledger::get().built(this); }
  owned& operator=(const owned&) = default;
  owned& operator=(owned&&) noexcept = default;
  ~owned() { ledger::get().destroyed(this); }
};

const std::string op_text = "the operation's capture, longer than a small-string buffer";
const std::string classify_text = "the classifier's capture, longer than a small-string buffer";
const std::string hooks_text = "the hooks' capture, longer than a small-string buffer";
const std::string env_text = "the environment's capture, longer than a small-string buffer";

// What the callables saw of their own captures, one entry a call.
struct seen {
  std::vector<std::string> ops;
  std::vector<std::string> classified;
  std::vector<std::string> attempts;  // on_attempt
  std::vector<std::string> retries;   // on_retry
  std::vector<int> retried_results;   // on_retry's result
  std::vector<std::string> successes;
  std::vector<std::string> sleeps;  // the env's sleep
};

// ---- Factories: each returns a heap-owning object, a prvalue safe inside a co_await ------------

// Answers 503, 503, then 200 (attempts from 1).
auto make_op(seen* s) {
  return [s, name = owned(op_text), replies = std::vector<int>{503, 503, 200}](
             std::uint32_t attempt) -> asio::awaitable<int> {
    s->ops.push_back(name.text);
    co_return replies.at(attempt - 1);
  };
}

// The same answers as success flags, for the default classifier (false retries, true succeeds).
auto make_bool_op(seen* s) {
  return [s, name = owned(op_text), replies = std::vector<bool>{false, false, true}](
             std::uint32_t attempt) -> asio::awaitable<bool> {
    s->ops.push_back(name.text);
    co_return replies.at(attempt - 1);
  };
}

auto make_classify(seen* s) {
  return [s, name = owned(classify_text), retryable = std::vector<int>{503}](int status) {
    s->classified.push_back(name.text);
    for (const int r : retryable) {
      if (status == r) return backoff::verdict::retryable();
    }
    return backoff::classify_http_status(status);
  };
}

// Hooks whose members own memory: a string and std::functions holding string captures.
struct owning_hooks {
  owned name;
  std::function<void(const backoff::attempt_event&)> attempt;
  std::function<void(std::uint32_t, const int*)> retry;
  std::function<void(const backoff::success_event&)> success;

  void on_attempt(const backoff::attempt_event& e) const { attempt(e); }
  template <class R>
  void on_retry(const backoff::retry_event<R>& e) const {
    if constexpr (std::is_same_v<R, int>) {
      retry(e.attempt, e.result);
    } else {
      retry(e.attempt, nullptr);
    }
  }
  void on_success(const backoff::success_event& e) const { success(e); }
};

owning_hooks make_hooks(seen* s) {
  return owning_hooks{
      owned(hooks_text),
      [s, text = hooks_text](const backoff::attempt_event&) { s->attempts.push_back(text); },
      [s, name = owned(hooks_text)](std::uint32_t, const int* result) {
        s->retries.push_back(name.text);
        s->retried_results.push_back(result != nullptr ? *result : -1);
      },
      [s, text = hooks_text](const backoff::success_event&) { s->successes.push_back(text); }};
}

// The positional API's on_retry.
auto make_on_retry(seen* s) {
  return [s, name = owned(hooks_text)]<class R>(const backoff::retry_event<R>& e) {
    s->retries.push_back(name.text);
    if constexpr (std::is_same_v<R, int>) {
      s->retried_results.push_back(e.result != nullptr ? *e.result : -1);
    } else {
      s->retried_results.push_back(-1);
    }
  };
}

// A recording world whose clock and sleep own memory through their captures.
struct world {
  explicit world(seen* probe) : s(probe) {}

  backoff::manual_clock clock;
  backoff::random_generator rng{7};
  std::vector<duration> waits;
  seen* s;

  backoff::async_retry_env env() {
    backoff::async_retry_env e;
    e.now = [this, name = owned(env_text)] {
      EXPECT_EQ(name.text, env_text);
      return clock.now().time_since_epoch();
    };
    e.sleep = [this, name = owned(env_text)](duration d, std::stop_token) -> asio::awaitable<bool> {
      s->sleeps.push_back(name.text);
      waits.push_back(d);
      clock.advance(d);
      co_return true;
    };
    e.random = rng;
    return e;
  }
};

backoff::retry_policy three_attempts() {
  return {backoff::parse_policy("constant(initial=1ms)"), 5, 0s};
}

auto make_options(seen* s) {
  return backoff::retry_options{
      .policy = three_attempts(), .classify = make_classify(s), .hooks = make_hooks(s)};
}

std::vector<std::string> times(std::size_t n, const std::string& text) {
  return std::vector<std::string>(n, text);
}

// Three attempts (503, 503, 200), each seen by the operation and the classifier with their own
// captures intact.
void expect_three_attempts(const seen& s, std::uint32_t attempts, outcome why) {
  EXPECT_EQ(why, outcome::succeeded);
  EXPECT_EQ(attempts, 3U);
  EXPECT_EQ(s.ops, times(3, op_text));
  EXPECT_EQ(s.classified, times(3, classify_text));
}

void expect_hooks(const seen& s) {
  EXPECT_EQ(s.attempts, times(3, hooks_text));
  EXPECT_EQ(s.retries, times(2, hooks_text));
  EXPECT_EQ(s.retried_results, (std::vector<int>{503, 503}));
  EXPECT_EQ(s.successes, times(1, hooks_text));
}

// Runs `work` on `io` to the end; an exception it throws is rethrown.
void run_on(asio::io_context& io, asio::awaitable<void> work) {
  std::exception_ptr error;
  asio::co_spawn(io, std::move(work), [&](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
}

void run_void(asio::awaitable<void> work) {
  asio::io_context io;
  run_on(io, std::move(work));
}

class AsyncTemporaries : public ::testing::Test {
 protected:
  void SetUp() override { ledger::get().reset(); }
  void TearDown() override {
    EXPECT_EQ(ledger::get().never_built(), 0U)
        << "an object was destroyed that was never built: a copy made bit for bit and "
           "destroyed twice (GCC 11/12, issue 40)";
    EXPECT_EQ(ledger::get().alive(), 0U) << "objects built and never destroyed";
  }
};

// ---- async_retry(op, options[, env]) -----------------------------------------------------------

asio::awaitable<void> retry_options_named(seen* s, world* w) {
  // The documented shape: everything that owns memory built in statements of its own.
  auto op = make_op(s);
  const std::string tag = classify_text;
  auto options = backoff::retry_options{.policy = three_attempts(),
                                        .classify =
                                            [s, tag](int status) {
                                              s->classified.push_back(tag);
                                              return status == 200 ? backoff::verdict::success()
                                                                   : backoff::verdict::retryable();
                                            },
                                        .hooks = make_hooks(s)};
  auto env = w->env();
  const auto r = co_await backoff::async_retry(std::move(op), std::move(options), std::move(env));
  expect_three_attempts(*s, r.attempts, r.why);
  EXPECT_EQ(r.last, 200);
}

TEST_F(AsyncTemporaries, AsyncRetryWithOptionsNamedAndMoved) {
  seen s;
  world w{&s};
  run_void(retry_options_named(&s, &w));
  expect_hooks(s);
  EXPECT_EQ(s.sleeps, times(2, env_text));
  EXPECT_EQ(w.waits, (std::vector<duration>{1ms, 1ms}));
}

asio::awaitable<void> retry_options_from_factories(seen* s, world* w) {
  // Temporaries inside the co_await, each returned by a function.
  const auto r = co_await backoff::async_retry(make_op(s), make_options(s), w->env());
  expect_three_attempts(*s, r.attempts, r.why);
}

TEST_F(AsyncTemporaries, AsyncRetryWithOptionsFromFactoriesInsideTheCoAwait) {
  seen s;
  world w{&s};
  run_void(retry_options_from_factories(&s, &w));
  expect_hooks(s);
  EXPECT_EQ(s.sleeps, times(2, env_text));
}

asio::awaitable<void> retry_options_real_world(seen* s) {
  // No env: the overload builds the default world (steady clock, async_sleep of 1 ms).
  auto options = make_options(s);
  const auto r = co_await backoff::async_retry(make_op(s), std::move(options));
  expect_three_attempts(*s, r.attempts, r.why);
}

TEST_F(AsyncTemporaries, AsyncRetryWithoutEnv) {
  seen s;
  run_void(retry_options_real_world(&s));
  expect_hooks(s);
}

asio::awaitable<void> retry_call_outside_the_co_await(seen* s, world* w) {
  // The other safe shape: the call, with its braced options, outside any co_await.
  auto call = backoff::async_retry(
      make_op(s),
      backoff::retry_options{
          .policy = three_attempts(), .classify = make_classify(s), .hooks = make_hooks(s)},
      w->env());
  const auto r = co_await std::move(call);
  expect_three_attempts(*s, r.attempts, r.why);
}

TEST_F(AsyncTemporaries, AsyncRetryCalledOutsideTheCoAwait) {
  seen s;
  world w{&s};
  run_void(retry_call_outside_the_co_await(&s, &w));
  expect_hooks(s);
}

// ---- The positional async_retry, every arity ---------------------------------------------------

asio::awaitable<void> positional_all(seen* s, world* w, backoff::retry_budget* budget) {
  {
    const auto r =
        co_await backoff::async_retry(make_op(s), three_attempts(), make_classify(s), w->env(),
                                      make_on_retry(s), backoff::retry_gates{.budget = budget});
    expect_three_attempts(*s, r.attempts, r.why);
    EXPECT_EQ(s->retries, times(2, hooks_text));
    EXPECT_EQ(s->retried_results, (std::vector<int>{503, 503}));
  }
  *s = {};
  {
    const auto r = co_await backoff::async_retry(make_op(s), three_attempts(), make_classify(s),
                                                 w->env(), make_on_retry(s));
    expect_three_attempts(*s, r.attempts, r.why);
    EXPECT_EQ(s->retries, times(2, hooks_text));
  }
  *s = {};
  {
    const auto r =
        co_await backoff::async_retry(make_op(s), three_attempts(), make_classify(s), w->env());
    expect_three_attempts(*s, r.attempts, r.why);
  }
  *s = {};
  {
    auto classify = make_classify(s);
    const auto r = co_await backoff::async_retry(make_op(s), three_attempts(), std::move(classify));
    expect_three_attempts(*s, r.attempts, r.why);
  }
  *s = {};
  {
    // The default classifier: false retries, true succeeds.
    const auto r = co_await backoff::async_retry(make_bool_op(s), three_attempts());
    EXPECT_EQ(r.why, outcome::succeeded);
    EXPECT_EQ(r.attempts, 3U);
    EXPECT_EQ(s->ops, times(3, op_text));
  }
}

TEST_F(AsyncTemporaries, PositionalAsyncRetryAtEveryArity) {
  seen s;
  world w{&s};
  backoff::retry_budget budget{backoff::ratio_budget_config{0.0, 10.0, 10s}};
  run_void(positional_all(&s, &w, &budget));
}

// ---- async_hedge -------------------------------------------------------------------------------

// hedge(max_attempts=3, delay=50ms, non_fatal=[429, 503]): non_fatal is a vector, so the policy
// owns memory, and so does a classifier that captures it (the docs' own example).
auto make_hedge_options(seen* s) {
  const backoff::hedge_policy policy =
      backoff::parse_hedge("hedge(max_attempts=3, delay=50ms, non_fatal=[429, 503])");
  return backoff::hedge_options{.policy = policy,
                                .classify =
                                    [s, policy, name = owned(classify_text)](int status) {
                                      s->classified.push_back(name.text);
                                      return policy.classify_status(status);
                                    },
                                .max_elapsed = 2s};
}

void expect_hedged(const seen& s, const backoff::hedge_result<int>& r) {
  EXPECT_EQ(r.why, outcome::succeeded);
  EXPECT_EQ(r.attempts, 3U);
  EXPECT_EQ(r.winner, 3U);
  EXPECT_EQ(r.last, 200);
  EXPECT_EQ(s.ops, times(3, op_text));
  EXPECT_EQ(s.classified, times(3, classify_text));
}

asio::awaitable<void> hedge_all(seen* s, world* w) {
  {
    auto options = make_hedge_options(s);
    auto env = w->env();
    const auto r = co_await backoff::async_hedge(make_op(s), std::move(options), std::move(env));
    expect_hedged(*s, r);
  }
  *s = {};
  {
    const auto r = co_await backoff::async_hedge(make_op(s), make_hedge_options(s), w->env());
    expect_hedged(*s, r);
  }
  *s = {};
  {
    const auto r = co_await backoff::async_hedge(make_op(s), make_hedge_options(s));
    expect_hedged(*s, r);
  }
}

TEST_F(AsyncTemporaries, AsyncHedgeNamedFromFactoriesAndWithoutEnv) {
  seen s;
  world w{&s};
  run_void(hedge_all(&s, &w));
}

// docs/LIBRARY.md's hedging example, in the shape it now has.
struct reply {
  int status;
  std::optional<backoff::duration> retry_after;
};

asio::awaitable<int> library_hedging_example(backoff::retry_budget* budget) {
  const auto policy =
      backoff::parse_hedge("hedge(max_attempts=3, delay=50ms, non_fatal=[429, 503])");
  int calls = 0;
  const auto http_get_async = [&]() -> asio::awaitable<reply> {
    co_return reply{++calls < 3 ? 503 : 200, std::nullopt};
  };
  auto options = backoff::hedge_options{
      .policy = policy,
      .classify =
          [policy](const reply& r) {
            return policy.classify_status(r.status, r.retry_after);  // 1xx-3xx, non_fatal, fatal
          },
      .gates = {.budget = budget},  // every copy after the first is charged as a retry
      .max_elapsed = 2s};           // the whole call, copies in flight or not
  auto result = co_await backoff::async_hedge(
      [&]() -> asio::awaitable<reply> { co_return co_await http_get_async(); }, std::move(options));
  EXPECT_TRUE(result);
  EXPECT_EQ(result.winner, 3U);
  co_return result.last ? result.last->status : 0;
}

TEST_F(AsyncTemporaries, LibraryHedgingExample) {
  backoff::retry_budget budget{backoff::ratio_budget_config{0.0, 10.0, 10s}};
  EXPECT_EQ(run_coroutine(library_hedging_example(&budget)), 200);
}

// ---- The window: async_retry(window, ...), windowed(), lane::acquire ----------------------------

asio::awaitable<void> window_retry_all(backoff::async_window* window, seen* s, world* w) {
  const backoff::retry_gates gates{};
  {
    // Named and moved. Before the fix, the overload wrapped on_retry in a braced temporary inside
    // its own co_await, and GCC 12 freed the hook's capture twice.
    auto op = make_op(s);
    auto classify = make_classify(s);
    auto on_retry = make_on_retry(s);
    const auto r =
        co_await backoff::async_retry(*window, std::move(op), three_attempts(), std::move(classify),
                                      w->env(), std::move(on_retry), gates);
    expect_three_attempts(*s, r.attempts, r.why);
    EXPECT_EQ(r.last, 200);
    EXPECT_EQ(s->retries, times(2, hooks_text));
    EXPECT_EQ(s->retried_results, (std::vector<int>{503, 503}));
  }
  *s = {};
  {
    const auto r = co_await backoff::async_retry(*window, make_op(s), three_attempts(),
                                                 make_classify(s), w->env(), make_on_retry(s));
    expect_three_attempts(*s, r.attempts, r.why);
    EXPECT_EQ(s->retries, times(2, hooks_text));
  }
  *s = {};
  {
    const auto r = co_await backoff::async_retry(*window, make_op(s), three_attempts(),
                                                 make_classify(s), w->env());
    expect_three_attempts(*s, r.attempts, r.why);
  }
  *s = {};
  {
    const auto r =
        co_await backoff::async_retry(*window, make_op(s), three_attempts(), make_classify(s));
    expect_three_attempts(*s, r.attempts, r.why);
  }
  *s = {};
  {
    const auto r = co_await backoff::async_retry(*window, make_bool_op(s), three_attempts());
    EXPECT_EQ(r.why, outcome::succeeded);
    EXPECT_EQ(s->ops, times(3, op_text));
  }
}

TEST_F(AsyncTemporaries, AsyncRetryThroughAWindowAtEveryArity) {
  seen s;
  world w{&s};
  asio::io_context io;
  {
    backoff::async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
    run_on(io, window_retry_all(&window, &s, &w));
    EXPECT_EQ(window.statistics().lanes, 0U);
    EXPECT_EQ(window.window().flying(), 0U);
  }
}

asio::awaitable<void> windowed_all(backoff::async_window* window, seen* s, world* w) {
  {
    auto paced = backoff::windowed(*window, make_op(s), make_classify(s));
    auto options = backoff::retry_options{.policy = three_attempts(),
                                          .classify = backoff::windowed_classifier{},
                                          .hooks = make_hooks(s)};
    const auto r = co_await backoff::async_retry(std::move(paced), std::move(options), w->env());
    expect_three_attempts(*s, r.attempts, r.why);
    EXPECT_TRUE(r.last && r.last->reply);
    if (r.last && r.last->reply) {
      EXPECT_EQ(*r.last->reply, 200);
    }
    EXPECT_EQ(s->attempts, times(3, hooks_text));
    EXPECT_EQ(s->retries, times(2, hooks_text));
  }
  *s = {};
  {
    const auto r = co_await backoff::async_retry(
        backoff::windowed(*window, make_op(s), make_classify(s)), three_attempts(),
        backoff::windowed_classifier{}, w->env(), make_on_retry(s));
    expect_three_attempts(*s, r.attempts, r.why);
    EXPECT_EQ(s->retries, times(2, hooks_text));
  }
}

TEST_F(AsyncTemporaries, WindowedOperationWithAsyncRetry) {
  seen s;
  world w{&s};
  asio::io_context io;
  backoff::async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
  run_on(io, windowed_all(&window, &s, &w));
  EXPECT_EQ(window.statistics().lanes, 0U);
}

asio::awaitable<void> lane_loop(backoff::async_window* window, seen* s) {
  auto lane = window->join();
  auto op = make_op(s);
  auto classify = make_classify(s);
  std::uint32_t attempt = 0;
  for (;;) {
    const bool turn = co_await lane.acquire();
    if (!turn) break;
    const int status = co_await op(++attempt);
    if (classify(status).kind == backoff::verdict_kind::success) {
      lane.success();
      break;
    }
    lane.failure();
  }
  EXPECT_EQ(attempt, 3U);
}

TEST_F(AsyncTemporaries, LaneAcquireThroughSeveralAttempts) {
  seen s;
  asio::io_context io;
  backoff::async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
  // Two operations through a window of one: turns alternate between them.
  asio::co_spawn(io, lane_loop(&window, &s), [](std::exception_ptr e) { EXPECT_FALSE(e); });
  seen other;
  asio::co_spawn(io, lane_loop(&window, &other), [](std::exception_ptr e) { EXPECT_FALSE(e); });
  io.run();
  EXPECT_EQ(s.ops, times(3, op_text));
  EXPECT_EQ(s.classified, times(3, classify_text));
  EXPECT_EQ(other.ops, times(3, op_text));
  EXPECT_EQ(window.statistics().lanes, 0U);
  EXPECT_EQ(window.statistics().sends, 6U);
}

// ---- async_enter ------------------------------------------------------------------------------

// Holds the slot across a suspension, so that the other caller queues behind it, then leaves:
// the leave() hands the slot over.
asio::awaitable<void> hold_slot_then_leave(backoff::bulkhead* pool) {
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  co_await asio::post(executor, asio::use_awaitable);
  pool->leave();
}

// Enters `pool` four times, once through each form of the call, and calls the operation (503,
// 503, 200) inside the first three. The stop token is the only argument that owns memory (its
// shared stop state); `in_use_before` records the slots taken at each call, so that the test
// sees which entries waited in the queue.
asio::awaitable<void> enter_at_every_arity(backoff::bulkhead* pool, seen* s,
                                           std::vector<std::uint32_t>* in_use_before) {
  std::stop_source source;
  auto op = make_op(s);
  auto classify = make_classify(s);
  {
    // The stop token a temporary of the co_await.
    in_use_before->push_back(pool->in_use());
    const bool in = co_await backoff::async_enter(*pool, 1h, source.get_token());
    EXPECT_TRUE(in);
    const int status = co_await op(1);
    EXPECT_EQ(classify(status).kind, backoff::verdict_kind::retryable);
    co_await hold_slot_then_leave(pool);
  }
  {
    // The token named and moved.
    std::stop_token token = source.get_token();
    in_use_before->push_back(pool->in_use());
    const bool in = co_await backoff::async_enter(*pool, 1h, std::move(token));
    EXPECT_TRUE(in);
    const int status = co_await op(2);
    EXPECT_EQ(classify(status).kind, backoff::verdict_kind::retryable);
    co_await hold_slot_then_leave(pool);
  }
  {
    // The bulkhead's own wait.
    in_use_before->push_back(pool->in_use());
    const bool in = co_await backoff::async_enter(*pool);
    EXPECT_TRUE(in);
    const int status = co_await op(3);
    EXPECT_EQ(classify(status).kind, backoff::verdict_kind::success);
    co_await hold_slot_then_leave(pool);
  }
  {
    // A wait and no token, the call outside the co_await.
    in_use_before->push_back(pool->in_use());
    auto entering = backoff::async_enter(*pool, 1h);
    const bool in = co_await std::move(entering);
    EXPECT_TRUE(in);
    co_await hold_slot_then_leave(pool);
  }
}

// Two callers through a bulkhead of one slot take turns: every entry but the first waits in the
// queue and is handed the slot by the other's leave() (async_bulkhead_test.cpp,
// HeapOwningCapturesSurviveTheWait, covers one call of one form).
TEST_F(AsyncTemporaries, AsyncEnterAtEveryArityThroughTheQueue) {
  seen first, second;
  std::vector<std::uint32_t> first_in_use, second_in_use;
  backoff::bulkhead pool{backoff::parse_bulkhead("bulkhead(max=1, queue=1, wait=1h)")};
  int finished = 0;
  {
    asio::io_context io;
    const auto on_end = [&finished](std::exception_ptr e) {
      EXPECT_FALSE(e);
      ++finished;
    };
    asio::co_spawn(io, enter_at_every_arity(&pool, &first, &first_in_use), on_end);
    asio::co_spawn(io, enter_at_every_arity(&pool, &second, &second_in_use), on_end);
    // Only ready handlers: a wake that went missing leaves a caller waiting for its hour, and the
    // test fails instead of waiting.
    io.poll();
  }
  EXPECT_EQ(finished, 2);
  EXPECT_EQ(first_in_use, (std::vector<std::uint32_t>{0, 1, 1, 1}));
  EXPECT_EQ(second_in_use, (std::vector<std::uint32_t>{1, 1, 1, 1}));
  EXPECT_EQ(first.ops, times(3, op_text));
  EXPECT_EQ(first.classified, times(3, classify_text));
  EXPECT_EQ(second.ops, times(3, op_text));
  EXPECT_EQ(second.classified, times(3, classify_text));
  EXPECT_EQ(pool.in_use(), 0U);
  EXPECT_EQ(pool.waiting(), 0U);
}

// ---- async_sleep -------------------------------------------------------------------------------

asio::awaitable<int> sleep_three_times() {
  std::stop_source source;
  int completed = 0;
  for (int i = 0; i < 3; ++i) {
    // The token (a reference to the source's heap state) a temporary of the co_await.
    if (co_await backoff::async_sleep(1ms, source.get_token())) ++completed;
  }
  std::stop_token token = source.get_token();
  if (co_await backoff::async_sleep(1ms, std::move(token))) ++completed;
  source.request_stop();
  if (co_await backoff::async_sleep(1h, source.get_token())) ++completed;  // stopped: false
  co_return completed;
}

TEST_F(AsyncTemporaries, AsyncSleepWithItsStopTokenATemporary) {
  EXPECT_EQ(run_coroutine(sleep_three_times()), 4);
}

}  // namespace async_temporaries_test

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
