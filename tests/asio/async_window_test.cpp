// SPDX-License-Identifier: Apache-2.0
// async_window on an io_context: turns handed out in the window's queue order and kept for lanes
// that are not yet waiting, cancellation of a waiting acquire, lanes that leave in every state,
// a randomized run checked against the window after every step, and many operations against a
// fake server with a fixed capacity, paced by one window through async_retry, compared with the
// same operations without it. Real timers of 1-3 ms; assertions are on counts and orders only.
#include "backoff/async_window.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backoff/http.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using backoff::async_window;
using backoff::request_id;

// Runs what is ready now, without waiting for timers.
void settle(asio::io_context& io) {
  io.restart();
  io.poll();
}

// An acquire spawned on its own, with a cancellation signal of its own.
struct pending_acquire {
  asio::cancellation_signal signal;
  bool done = false;
  bool result = false;
  bool threw = false;
};

std::shared_ptr<pending_acquire> spawn_acquire(asio::io_context& io, async_window::lane& lane) {
  auto p = std::make_shared<pending_acquire>();
  asio::co_spawn(io, lane.acquire(),
                 asio::bind_cancellation_slot(p->signal.slot(), [p](std::exception_ptr e, bool r) {
                   p->done = true;
                   p->threw = static_cast<bool>(e);
                   p->result = r;
                 }));
  return p;
}

// Acquires on a lane whose turn is kept: must complete without waiting.
bool acquire_now(asio::io_context& io, async_window::lane& lane) {
  const auto p = spawn_acquire(io, lane);
  settle(io);
  EXPECT_TRUE(p->done) << "acquire waited";
  return p->done && p->result;
}

// ---- Turns, order and keeping ------------------------------------------------------------------

TEST(AsyncWindow, KeepsATurnHandedOutBeforeItsOwnerWaits) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
  std::vector<request_id> handed;
  window.observe([&](const async_window::send_event& e) { handed.push_back(e.request); });

  auto a = window.join();
  auto b = window.join();
  auto c = window.join();
  EXPECT_TRUE(a.ready()) << "the window had room at join";
  EXPECT_FALSE(b.ready());
  const auto wait_b = spawn_acquire(io, b);
  const auto wait_c = spawn_acquire(io, c);
  settle(io);
  EXPECT_EQ(window.statistics().waiting, 2U);

  ASSERT_TRUE(acquire_now(io, a));
  a.failure();  // a cut; a's request goes to the front and, the window having room, out again
  EXPECT_TRUE(a.ready()) << "the resend's turn is kept while a's coroutine is elsewhere";
  settle(io);
  EXPECT_FALSE(wait_b->done);
  EXPECT_FALSE(wait_c->done);
  ASSERT_TRUE(acquire_now(io, a));
  EXPECT_EQ(a.request(), 0U);

  a.success();  // the window, full, grows to 2: b and c are sent, in their order
  EXPECT_EQ(window.window().cwnd(), 2.0);
  settle(io);
  EXPECT_TRUE(wait_b->done && wait_b->result);
  EXPECT_TRUE(wait_c->done && wait_c->result);
  b.success();
  c.success();

  EXPECT_EQ(handed, (std::vector<request_id>{0, 0, 1, 2}));
  const auto s = window.statistics();
  EXPECT_EQ(s.sends, 4U);
  EXPECT_EQ(s.resends, 1U);
  EXPECT_EQ(s.lanes, 0U);
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.window().pending(), 0U);
}

TEST(AsyncWindow, ResendsWaitAtTheFrontOfTheQueue) {
  asio::io_context io;
  // Reno with cwnd 2: after a's error cwnd is 1 with b still in flight, so a's resend waits.
  async_window window{io.get_executor(),
                      backoff::parse_window("aimd(initial=2, decrease=0.5, variant=reno)")};
  std::vector<request_id> handed;
  window.observe([&](const async_window::send_event& e) { handed.push_back(e.request); });
  auto a = window.join();
  auto b = window.join();
  auto c = window.join();
  ASSERT_TRUE(acquire_now(io, a));
  ASSERT_TRUE(acquire_now(io, b));
  const auto wait_c = spawn_acquire(io, c);
  a.failure();
  EXPECT_EQ(window.window().cwnd(), 1.0);
  EXPECT_FALSE(a.ready());
  const auto wait_a = spawn_acquire(io, a);
  settle(io);
  EXPECT_FALSE(wait_c->done);
  b.success();  // cwnd 2: a, which joined before c but failed after it waited, goes first
  settle(io);
  EXPECT_TRUE(wait_a->done && wait_a->result);
  EXPECT_TRUE(wait_c->done && wait_c->result);
  EXPECT_EQ(handed, (std::vector<request_id>{0, 1, 0, 2}));
  a.success();
  c.success();
  EXPECT_EQ(window.window().flying(), 0U);
}

// ---- Cancellation ------------------------------------------------------------------------------

TEST(AsyncWindow, ACancelledAcquireReturnsFalseAndTheLaneKeepsItsPlace) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
  auto a = window.join();
  auto b = window.join();
  auto c = window.join();
  const auto wait_b = spawn_acquire(io, b);
  const auto wait_c = spawn_acquire(io, c);
  settle(io);
  wait_b->signal.emit(asio::cancellation_type::terminal);
  settle(io);
  ASSERT_TRUE(wait_b->done);
  EXPECT_FALSE(wait_b->result);
  EXPECT_FALSE(wait_b->threw);
  EXPECT_TRUE(b.joined());
  EXPECT_EQ(window.statistics().waiting, 1U);
  EXPECT_EQ(window.statistics().queued, 2U);

  ASSERT_TRUE(acquire_now(io, a));
  a.success();  // cwnd 2: b, first in line, gets a turn, kept for it; then c
  EXPECT_TRUE(b.ready());
  EXPECT_EQ(b.request(), 1U);
  settle(io);
  EXPECT_TRUE(wait_c->done && wait_c->result);
  EXPECT_EQ(c.request(), 2U);
  ASSERT_TRUE(acquire_now(io, b));
  b.success();
  c.success();
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.window().pending(), 0U);
}

TEST(AsyncWindow, ALaneThatLeavesWhileNeverSentLeavesItsIdForTheNextJoin) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
  auto a = window.join();
  auto b = window.join();
  auto c = window.join();
  const auto wait_b = spawn_acquire(io, b);
  const auto wait_c = spawn_acquire(io, c);
  settle(io);
  wait_b->signal.emit(asio::cancellation_type::terminal);
  settle(io);
  ASSERT_TRUE(wait_b->done);
  EXPECT_FALSE(wait_b->result);
  b = async_window::lane{};  // leaves: its id 1 stays in the window's queue, unowned
  EXPECT_EQ(window.statistics().abandoned, 1U);
  EXPECT_EQ(window.window().pending(), 2U);

  ASSERT_TRUE(acquire_now(io, a));
  a.success();  // the turn goes to c, not to the id b left
  settle(io);
  ASSERT_TRUE(wait_c->done && wait_c->result);
  EXPECT_EQ(c.request(), 1U) << "never-sent ids are interchangeable: c is sent as the first";
  c.success();
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.window().pending(), 1U);
  EXPECT_EQ(window.statistics().abandoned, 1U);

  auto d = window.join();  // takes the unowned id over instead of enqueuing one
  EXPECT_TRUE(d.ready());
  EXPECT_EQ(d.request(), 2U);
  EXPECT_EQ(window.window().pending(), 0U);
  EXPECT_EQ(window.statistics().abandoned, 0U);
  ASSERT_TRUE(acquire_now(io, d));
  d.success();
}

TEST(AsyncWindow, LeavingWakesAWaitingAcquireWithFalse) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=1)")};
  auto a = window.join();
  auto b = window.join();
  const auto wait_b = spawn_acquire(io, b);
  settle(io);
  b.give_up();
  settle(io);
  EXPECT_TRUE(wait_b->done);
  EXPECT_FALSE(wait_b->result);
  EXPECT_FALSE(b.joined());
  EXPECT_EQ(window.statistics().waiting, 0U);
  ASSERT_TRUE(acquire_now(io, a));
  a.success();
}

// ---- Leaving -----------------------------------------------------------------------------------

TEST(AsyncWindow, LeavingWithAnUnusedResendTurnChangesNothingButTheIgnoredCount) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=2, decrease=0.5)")};
  auto a = window.join();
  auto b = window.join();
  auto c = window.join();
  ASSERT_TRUE(acquire_now(io, a));
  ASSERT_TRUE(acquire_now(io, b));
  a.failure();  // Tahoe: cwnd back to 2, ssthresh 1; a's resend turn handed out and kept
  ASSERT_TRUE(a.ready());
  const auto before = window.window().snapshot();
  EXPECT_EQ(before.cuts, 1U);
  a.give_up();  // as async_retry does when it stops after a retryable error
  const auto after = window.window().snapshot();
  EXPECT_EQ(after.cwnd, before.cwnd);
  EXPECT_EQ(after.ssthresh, before.ssthresh);
  EXPECT_EQ(after.cuts, 1U);
  EXPECT_EQ(after.ignored, before.ignored + 1);
  EXPECT_TRUE(c.ready()) << "the freed room went to c";
  EXPECT_EQ(window.statistics().released, 1U);
  ASSERT_TRUE(acquire_now(io, c));
  b.success();
  c.success();
  EXPECT_EQ(window.window().flying(), 0U);
}

TEST(AsyncWindow, LeavingWhileQueuedForAResendChangesNothingButTheIgnoredCount) {
  asio::io_context io;
  async_window window{io.get_executor(),
                      backoff::parse_window("aimd(initial=2, decrease=0.5, variant=reno)")};
  auto a = window.join();
  auto b = window.join();
  auto c = window.join();
  ASSERT_TRUE(acquire_now(io, a));
  ASSERT_TRUE(acquire_now(io, b));
  a.failure();  // Reno: cwnd 1 with b in flight: a's id waits at the front
  EXPECT_FALSE(a.ready());
  a.give_up();
  EXPECT_EQ(window.statistics().abandoned, 1U);
  const auto before = window.window().snapshot();
  b.success();  // room: a's unowned id is taken out (an ignored error), then c is sent
  const auto after = window.window().snapshot();
  EXPECT_EQ(after.cuts, before.cuts);
  EXPECT_EQ(after.ignored, before.ignored + 1);
  EXPECT_EQ(after.ssthresh, before.ssthresh);
  EXPECT_TRUE(c.ready());
  EXPECT_EQ(c.request(), 2U);
  EXPECT_EQ(window.statistics().abandoned, 0U);
  EXPECT_EQ(window.window().pending(), 0U);
  ASSERT_TRUE(acquire_now(io, c));
  c.success();
  EXPECT_EQ(window.window().flying(), 0U);
}

TEST(AsyncWindow, AnUnusedFirstTurnPassesToTheNextLaneInLine) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=2)")};
  auto a = window.join();
  auto d = window.join();
  auto e = window.join();
  ASSERT_TRUE(d.ready());
  EXPECT_EQ(d.request(), 1U);
  const auto wait_e = spawn_acquire(io, e);
  settle(io);
  const auto before = window.window().snapshot();
  d.give_up();  // nothing was sent: e takes d's turn, as it would have had d never joined
  settle(io);
  ASSERT_TRUE(wait_e->done && wait_e->result);
  EXPECT_EQ(e.request(), 1U);
  const auto after = window.window().snapshot();
  EXPECT_EQ(after.cwnd, before.cwnd);
  EXPECT_EQ(after.flying, before.flying);
  EXPECT_EQ(after.ignored, before.ignored);
  EXPECT_EQ(window.statistics().passed, 1U);
  EXPECT_EQ(window.statistics().abandoned, 1U) << "e's own id, still queued";
  ASSERT_TRUE(acquire_now(io, a));
  a.success();
  e.success();
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.window().pending(), window.statistics().abandoned);
}

TEST(AsyncWindow, LeavingInFlightCountsAsAnError) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=4, decrease=0.5)")};
  {
    auto a = window.join();
    ASSERT_TRUE(acquire_now(io, a));
    EXPECT_TRUE(a.in_flight());
  }  // destroyed in flight: its outcome is unknown
  EXPECT_EQ(window.window().snapshot().cuts, 1U);
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.window().pending(), 0U);
}

TEST(AsyncWindow, MisuseIsALogicError) {
  asio::io_context io;
  async_window window{io.get_executor()};
  auto a = window.join();
  EXPECT_THROW(a.success(), std::logic_error) << "not acquired";
  ASSERT_TRUE(acquire_now(io, a));
  const auto again = spawn_acquire(io, a);
  settle(io);
  EXPECT_TRUE(again->done && again->threw) << "the last send is not reported";
  a.success();
  EXPECT_THROW(a.failure(), std::logic_error) << "left";
  EXPECT_FALSE(acquire_now(io, a));
}

// ---- A randomized run, checked after every step ------------------------------------------------

struct random_op {
  std::optional<async_window::lane> lane;
  std::shared_ptr<pending_acquire> acquire;  // the last one spawned
};

void random_run(std::uint64_t seed, backoff::aimd_variant variant, double initial,
                backoff::async_window::stats& totals) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  asio::io_context io;
  backoff::aimd_config config;
  config.initial = initial;
  config.decrease = 0.5;
  config.variant = variant;
  async_window window{io.get_executor(), config};
  backoff::random_generator rng{seed};
  const auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(backoff::uniform01(rng) * static_cast<double>(n));
  };
  std::deque<random_op> ops;
  for (int step = 0; step < 3000; ++step) {
    if (ops.size() < 12 && pick(4) == 0) {
      ops.push_back({window.join(), nullptr});
    } else if (!ops.empty()) {
      const std::size_t index = pick(ops.size());
      random_op& op = ops[index];
      const bool waiting = op.acquire && !op.acquire->done;
      if (!op.lane || !op.lane->joined()) {
        ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(index));
      } else if (op.lane->in_flight()) {
        const std::size_t r = pick(10);
        if (r < 5) {
          op.lane->failure();
        } else if (r < 9) {
          op.lane->success();
        } else {
          op.lane->give_up();
        }
      } else if (waiting) {
        if (pick(3) == 0) {
          op.acquire->signal.emit(asio::cancellation_type::terminal);
        } else if (pick(4) == 0) {
          op.lane.reset();
        }
      } else {
        const std::size_t r = pick(12);
        if (r < 10) {
          op.acquire = spawn_acquire(io, *op.lane);
        } else if (r < 11) {
          op.lane->give_up();
        } else {
          op.lane.reset();
        }
      }
    }
    settle(io);

    const auto s = window.statistics();
    const auto w = window.window().snapshot();
    std::size_t holding = 0;
    std::size_t waiting = 0;
    std::size_t lanes = 0;
    for (const random_op& op : ops) {
      if (op.acquire && op.acquire->done) {
        EXPECT_FALSE(op.acquire->threw);
      }
      if (op.acquire && !op.acquire->done) ++waiting;
      if (!op.lane || !op.lane->joined()) continue;
      ++lanes;
      if (op.lane->ready() || op.lane->in_flight()) ++holding;
    }
    ASSERT_EQ(w.flying, holding) << "step " << step << ": every turn out is held by a lane";
    ASSERT_EQ(s.lanes, lanes) << "step " << step;
    ASSERT_EQ(s.waiting, waiting) << "step " << step;
    ASSERT_EQ(w.pending, s.queued + s.abandoned) << "step " << step;
    ASSERT_TRUE(s.queued == 0 || static_cast<double>(w.flying) >= w.cwnd)
        << "step " << step << ": a lane waits while the window has room";
  }
  for (random_op& op : ops) op.lane.reset();
  settle(io);
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.statistics().lanes, 0U);
  EXPECT_EQ(window.statistics().waiting, 0U);
  EXPECT_EQ(window.window().pending(), window.statistics().abandoned);
  const auto s = window.statistics();
  totals.sends += s.sends;
  totals.resends += s.resends;
  totals.released += s.released;
  totals.passed += s.passed;
}

TEST(AsyncWindow, RandomJoinsReportsCancellationsAndLeavesKeepItConsistent) {
  async_window::stats totals{};
  std::uint64_t seed = 1;
  for (const auto variant : {backoff::aimd_variant::tahoe, backoff::aimd_variant::reno}) {
    for (const double initial : {1.0, 2.0, 3.0, 5.0}) {
      random_run(seed++, variant, initial, totals);
      if (HasFatalFailure()) return;
    }
  }
  // Every path was taken, turns passed on and given back included.
  EXPECT_GT(totals.resends, 100U);
  EXPECT_GT(totals.released, 10U);
  EXPECT_GT(totals.passed, 10U);
}

// ---- Many operations against a server of fixed capacity ----------------------------------------

// Serves `capacity` requests at a time (3 ms each); a request beyond that gets an error after
// 1 ms. Counts everything, and, when given the window, every request that arrives while more
// requests are at the server than the window has turns out.
struct fake_server {
  asio::any_io_executor executor;
  std::size_t capacity;
  const async_window* window = nullptr;
  std::size_t busy = 0;
  std::size_t at_server = 0;
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
  std::uint64_t without_turn = 0;
};

asio::awaitable<bool> serve(fake_server* server) {
  ++server->requests;
  ++server->at_server;
  if (server->window != nullptr && server->at_server > server->window->window().flying()) {
    ++server->without_turn;
  }
  const bool ok = server->busy < server->capacity;
  if (ok) {
    ++server->busy;
  } else {
    ++server->errors;
  }
  asio::steady_timer timer{server->executor, ok ? 3ms : 1ms};
  static_cast<void>(co_await timer.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (ok) --server->busy;
  --server->at_server;
  co_return ok;
}

struct server_call {
  fake_server* server;
  asio::awaitable<bool> operator()() const { return serve(server); }
};

// Checks, on every turn handed out, the seed's rule: fewer than cwnd in flight before it.
struct window_rule_check {
  std::uint64_t turns = 0;
  std::uint64_t over = 0;
  void operator()(const async_window::send_event& e) {
    ++turns;
    if (!(static_cast<double>(e.window.flying) - 1.0 < e.window.cwnd)) ++over;
  }
};

constexpr std::size_t kOperations = 200;
constexpr std::size_t kCapacity = 8;

struct run_totals {
  std::size_t succeeded = 0;
  std::uint64_t attempts = 0;
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
};

run_totals run_windowed(std::uint64_t& over, std::uint64_t& without_turn) {
  window_rule_check check;
  asio::io_context io;
  async_window window{io.get_executor(),
                      backoff::parse_window("aimd(initial=4, decrease=0.5, variant=reno)")};
  window.observe([&check](const async_window::send_event& e) { check(e); });
  fake_server server{io.get_executor(), kCapacity, &window};
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=0ms)"), 0, 0s};
  run_totals totals;
  for (std::size_t i = 0; i < kOperations; ++i) {
    asio::co_spawn(io, backoff::async_retry(window, server_call{&server}, policy),
                   [&totals](std::exception_ptr e, backoff::retry_result<bool> r) {
                     EXPECT_FALSE(e);
                     if (r) ++totals.succeeded;
                     totals.attempts += r.attempts;
                   });
  }
  io.run();
  totals.requests = server.requests;
  totals.errors = server.errors;
  over = check.over;
  without_turn = server.without_turn;
  EXPECT_EQ(check.turns, server.requests) << "one turn per request sent";
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.window().pending(), 0U);
  EXPECT_EQ(window.statistics().lanes, 0U);
  return totals;
}

run_totals run_without_window() {
  asio::io_context io;
  fake_server server{io.get_executor(), kCapacity};
  const backoff::retry_policy policy{
      backoff::parse_policy("exponential(initial=1ms, max=50ms, jitter=full)"), 0, 0s};
  backoff::random_generator rng{3};
  backoff::async_retry_env env;
  env.random = rng;
  run_totals totals;
  for (std::size_t i = 0; i < kOperations; ++i) {
    asio::co_spawn(
        io, backoff::async_retry(server_call{&server}, policy, backoff::default_classifier{}, env),
        [&totals](std::exception_ptr e, backoff::retry_result<bool> r) {
          EXPECT_FALSE(e);
          if (r) ++totals.succeeded;
          totals.attempts += r.attempts;
        });
  }
  io.run();
  totals.requests = server.requests;
  totals.errors = server.errors;
  return totals;
}

TEST(AsyncWindow, PacesManyOperationsThroughAsyncRetryWithFarFewerAttempts) {
  std::uint64_t over = 0;
  std::uint64_t without_turn = 0;
  const run_totals paced = run_windowed(over, without_turn);
  EXPECT_EQ(paced.succeeded, kOperations);
  EXPECT_EQ(paced.attempts, paced.requests);
  EXPECT_EQ(over, 0U) << "a turn was handed out with cwnd or more in flight";
  EXPECT_EQ(without_turn, 0U) << "a request reached the server without a turn";

  const run_totals bare = run_without_window();
  EXPECT_EQ(bare.succeeded, kOperations);
  // Without the window the first burst alone fails kOperations - kCapacity times.
  EXPECT_GE(bare.errors, kOperations - kCapacity);
  EXPECT_LT(paced.errors * 4, bare.errors) << paced.errors << " vs " << bare.errors;
  EXPECT_LT(paced.attempts * 3, bare.attempts) << paced.attempts << " vs " << bare.attempts;
  RecordProperty("paced_attempts", std::to_string(paced.attempts));
  RecordProperty("bare_attempts", std::to_string(bare.attempts));
}

// The same, with the loop written out (the header's example), checking that no request is sent
// for the first time while a failed one waits for its resend.
struct order_check {
  std::set<request_id> awaiting_resend;
  std::uint64_t first_sends_ahead = 0;
  std::uint64_t unexpected_resends = 0;
  std::uint64_t resends = 0;
};

asio::awaitable<void> written_out(async_window* window, fake_server* server, order_check* order,
                                  std::size_t* succeeded) {
  auto lane = window->join();
  for (;;) {
    const bool turn = co_await lane.acquire();
    if (!turn) co_return;
    const bool ok = co_await serve(server);
    if (ok) {
      lane.success();
      ++*succeeded;
      co_return;
    }
    order->awaiting_resend.insert(*lane.request());
    lane.failure();
  }
}

TEST(AsyncWindow, AFailedRequestIsResentBeforeRequestsNeverSent) {
  order_check order;
  window_rule_check check;
  asio::io_context io;
  // Starting above the capacity, so that the first burst fails in part.
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=16, decrease=0.5)")};
  fake_server server{io.get_executor(), kCapacity, &window};
  window.observe([&order, &check](const async_window::send_event& e) {
    check(e);
    if (e.resend) {
      ++order.resends;
      if (order.awaiting_resend.erase(e.request) != 1) ++order.unexpected_resends;
    } else if (!order.awaiting_resend.empty()) {
      ++order.first_sends_ahead;
    }
  });
  std::size_t succeeded = 0;
  for (std::size_t i = 0; i < kOperations; ++i) {
    asio::co_spawn(io, written_out(&window, &server, &order, &succeeded),
                   [](std::exception_ptr e) { EXPECT_FALSE(e); });
  }
  io.run();
  EXPECT_EQ(succeeded, kOperations);
  EXPECT_GE(server.errors, 16 - kCapacity) << "the first burst overflows";
  EXPECT_EQ(order.resends, server.errors);
  EXPECT_EQ(order.first_sends_ahead, 0U);
  EXPECT_EQ(order.unexpected_resends, 0U);
  EXPECT_TRUE(order.awaiting_resend.empty());
  EXPECT_EQ(check.over, 0U);
  EXPECT_EQ(server.without_turn, 0U);
  EXPECT_EQ(window.window().flying(), 0U);
}

// Ten of forty operations are cancelled while they wait for a turn; the others all complete.
TEST(AsyncWindow, CancellingWaitingOperationsLeavesTheOthersToComplete) {
  asio::io_context io;
  async_window window{io.get_executor(), backoff::parse_window("aimd(initial=2)")};
  fake_server server{io.get_executor(), 100, &window};
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=0ms)"), 0, 0s};
  constexpr std::size_t n = 40;
  std::vector<asio::cancellation_signal> signals(n);
  std::vector<std::optional<backoff::retry_result<bool>>> results(n);
  for (std::size_t i = 0; i < n; ++i) {
    asio::co_spawn(
        io, backoff::async_retry(window, server_call{&server}, policy),
        asio::bind_cancellation_slot(
            signals[i].slot(), [&results, i](std::exception_ptr e, backoff::retry_result<bool> r) {
              EXPECT_FALSE(e);
              results[i] = r;
            }));
  }
  std::size_t waiting_when_cancelled = 0;
  asio::post(io, [&] {
    waiting_when_cancelled = window.statistics().waiting;
    for (std::size_t i = 10; i < 20; ++i) signals[i].emit(asio::cancellation_type::terminal);
  });
  io.run();
  EXPECT_EQ(waiting_when_cancelled, n - 2) << "all but the first two wait for a turn";
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(results[i].has_value()) << i;
    if (i >= 10 && i < 20) {
      EXPECT_EQ(results[i]->why, backoff::outcome::cancelled) << i;
      EXPECT_FALSE(results[i]->last.has_value());
    } else {
      EXPECT_EQ(results[i]->why, backoff::outcome::succeeded) << i;
    }
  }
  EXPECT_EQ(server.requests, n - 10);
  EXPECT_EQ(window.window().flying(), 0U);
  EXPECT_EQ(window.statistics().lanes, 0U);
  EXPECT_EQ(window.statistics().waiting, 0U);
  EXPECT_EQ(window.window().pending(), window.statistics().abandoned);
}

// windowed() with async_retry's own signature, and a permanent error.
TEST(AsyncWindow, WindowedComposesWithAsyncRetryAndAPermanentErrorIsNoCut) {
  asio::io_context io;
  async_window window{io.get_executor()};
  const backoff::retry_policy policy{backoff::parse_policy("constant(initial=0ms)"), 5, 0s};
  std::optional<backoff::retry_result<backoff::windowed_reply<int>>> result;
  asio::co_spawn(
      io,
      backoff::async_retry(backoff::windowed(
                               window, []() -> asio::awaitable<int> { co_return 404; },
                               [](int status) { return backoff::classify_http_status(status); }),
                           policy, backoff::windowed_classifier{}),
      [&](std::exception_ptr e, backoff::retry_result<backoff::windowed_reply<int>> r) {
        EXPECT_FALSE(e);
        result = r;
      });
  io.run();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->why, backoff::outcome::permanent);
  EXPECT_EQ(result->attempts, 1U);
  ASSERT_TRUE(result->last.has_value() && result->last->reply.has_value());
  EXPECT_EQ(*result->last->reply, 404);
  EXPECT_EQ(window.window().snapshot().cuts, 0U);
  EXPECT_EQ(window.window().flying(), 0U);
}

}  // namespace
