// SPDX-License-Identifier: Apache-2.0
// The engine's contract: time order, ties broken by insertion order (across the timer queue and
// lanes alike), run_until's bound, and no scheduling into the past. The timer queue (heap, then
// calendar) against a std::priority_queue of (time, sequence) under adversarial schedules.
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "backoff/random.hpp"
#include "sim/engine/timer_queue.hpp"

namespace {

namespace sim = backoff::sim;

// Records (time, payload) of every event it handles.
struct log_model final : sim::model {
  std::vector<std::pair<sim::time_ns, std::uint64_t>> seen;
  void handle(sim::engine& e, const sim::event& ev) override {
    seen.emplace_back(e.now(), ev.payload);
  }
};

TEST(Engine, RunsEventsInTimeOrder) {
  sim::engine e;
  log_model m;
  const auto id = e.add(m);
  e.schedule_at(30, id, 0, 3);
  e.schedule_at(10, id, 0, 1);
  e.schedule_at(20, id, 0, 2);
  e.run();
  EXPECT_EQ(m.seen,
            (std::vector<std::pair<sim::time_ns, std::uint64_t>>{{10, 1}, {20, 2}, {30, 3}}));
  EXPECT_EQ(e.events_processed(), 3u);
}

TEST(Engine, BreaksTiesByInsertionOrder) {
  sim::engine e;
  log_model m;
  const auto id = e.add(m);
  for (std::uint64_t i = 0; i < 1000; ++i) e.schedule_at(5, id, 0, i);
  e.run();
  ASSERT_EQ(m.seen.size(), 1000u);
  for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(m.seen[i].second, i);
}

TEST(Engine, LanesKeepTheGlobalTimeAndInsertionOrder) {
  // The same random schedule through lanes and through the heap alone gives the same order.
  const auto run = [](bool use_lanes) {
    sim::engine e;
    log_model m;
    const auto id = e.add(m);
    const sim::lane_id fast = e.add_lane(7);
    const sim::lane_id slow = e.add_lane(13);
    struct driver final : sim::model {
      sim::engine* engine;
      sim::handler_id sink;
      sim::lane_id fast, slow;
      bool lanes;
      backoff::random_generator rng{3};
      int left = 2000;
      void handle(sim::engine& en, const sim::event&) override {
        if (--left <= 0) return;
        const auto r = rng() % 3;
        const std::uint64_t tag = static_cast<std::uint64_t>(left);
        if (r == 0) {
          lanes ? en.schedule_in(fast, sink, 0, tag) : en.schedule_after(7, sink, 0, tag);
        } else if (r == 1) {
          lanes ? en.schedule_in(slow, sink, 0, tag) : en.schedule_after(13, sink, 0, tag);
        } else {
          en.schedule_after(static_cast<sim::time_ns>(rng() % 20), sink, 0, tag);
        }
        en.schedule_after(static_cast<sim::time_ns>(rng() % 5), self, 0, 0);
      }
      sim::handler_id self = 0;
    } d;
    d.sink = id;
    d.fast = fast;
    d.slow = slow;
    d.lanes = use_lanes;
    d.self = e.add(d);
    e.schedule_at(0, d.self, 0, 0);
    e.run();
    return m.seen;
  };
  const auto with_lanes = run(true);
  EXPECT_EQ(with_lanes.size(), 1999u);
  EXPECT_EQ(with_lanes, run(false));
}

TEST(Engine, RunUntilStopsAtTheBoundAndAdvancesTime) {
  sim::engine e;
  log_model m;
  const auto id = e.add(m);
  e.schedule_at(10, id, 0, 1);
  e.schedule_at(20, id, 0, 2);
  e.run_until(15);
  EXPECT_EQ(m.seen.size(), 1u);
  EXPECT_EQ(e.now(), 15);
  EXPECT_EQ(e.pending(), 1u);
  e.run_until(20);
  EXPECT_EQ(m.seen.size(), 2u);
}

TEST(Engine, RefusesToScheduleIntoThePast) {
  sim::engine e;
  log_model m;
  const auto id = e.add(m);
  e.schedule_at(10, id, 0, 1);
  e.run();
  EXPECT_THROW(e.schedule_at(5, id, 0, 2), std::logic_error);
}

// --- The timer queue against a reference -------------------------------------------------

// The reference: std::priority_queue ordered by (time, sequence), earliest first.
using timer_ref_key = std::pair<sim::time_ns, std::uint64_t>;
using timer_ref =
    std::priority_queue<timer_ref_key, std::vector<timer_ref_key>, std::greater<timer_ref_key>>;

// Draws the next event's delay after `now`; each schedule stresses one part of the calendar.
using timer_delay_fn = std::function<sim::time_ns(backoff::random_generator&, sim::time_ns now)>;

struct timer_schedule {
  const char* name;
  timer_delay_fn delay;
};

std::vector<timer_schedule> timer_schedules() {
  const auto uniform = [](backoff::random_generator& g, std::uint64_t n) {
    return static_cast<sim::time_ns>(g() % n);
  };
  return {
      // Backoff sleepers: 50 ms x 2^k with full jitter, capped at 30 s.
      {"backoff",
       [=](backoff::random_generator& g, sim::time_ns) {
         const sim::time_ns cap = 50'000'000LL << (g() % 10);
         return uniform(g, static_cast<std::uint64_t>(std::min<sim::time_ns>(cap, 30'000'000'000)));
       }},
      // Many events at the very same times: ties only the sequence breaks.
      {"equal-times",
       [=](backoff::random_generator& g, sim::time_ns now) {
         const sim::time_ns slot = (now / 1000 + 1 + uniform(g, 4)) * 1000;
         return slot - now;
       }},
      // Zero delays (due now, behind the horizon) mixed with far-future ones and time_max.
      {"far-future",
       [=](backoff::random_generator& g, sim::time_ns now) -> sim::time_ns {
         switch (g() % 8) {
           case 0:
             return 0;
           case 1:
             return sim::time_max - now;
           case 2:
             return (sim::time_max - now) / 2 + uniform(g, 1000);
           case 3:
             return static_cast<sim::time_ns>(
                 (g() >> 2) % (static_cast<std::uint64_t>(sim::time_max - now) + 1));
           default:
             return uniform(g, 1'000'000);
         }
       }},
      // Just before, at and after powers of two (the bucket edges whatever the width).
      {"bucket-edges",
       [=](backoff::random_generator& g, sim::time_ns now) {
         const int k = static_cast<int>(g() % 40);
         const sim::time_ns edge = ((now >> k) + 1 + uniform(g, 3)) << k;
         return std::max<sim::time_ns>(0, edge - now + uniform(g, 3) - 1);
       }},
      // Dense then sparse: a spread 10^6 times wider every few thousand events.
      {"density-swings",
       [=](backoff::random_generator& g, sim::time_ns now) {
         const std::uint64_t scale =
             (static_cast<std::uint64_t>(now) >> 20) % 3 == 0 ? 1'000 : 1'000'000'000;
         return uniform(g, scale);
       }},
  };
}

// Pushes and pops in bursts (a growing population, then a draining one) and checks every pop
// against the reference. Pushes never go before the last popped time, as in the engine.
void check_timer_queue(const timer_schedule& schedule, std::uint64_t seed) {
  SCOPED_TRACE(schedule.name);
  backoff::random_generator g{seed};
  sim::timer_queue q;
  timer_ref ref;
  sim::time_ns now = 0;
  std::uint64_t sequence = 0;
  bool calendar_seen = false;
  const auto push = [&] {
    // Nothing after time_max: the last representable time takes whatever would go beyond.
    const sim::time_ns at = now + std::min(schedule.delay(g, now), sim::time_max - now);
    q.push(sim::event{at, sequence, 0, 0, sequence});
    ref.emplace(at, sequence);
    ++sequence;
  };
  const auto pop = [&] {
    ASSERT_FALSE(q.empty());
    const sim::event top = q.top();
    ASSERT_EQ(std::make_pair(top.time, top.sequence), ref.top()) << "after " << sequence;
    ASSERT_EQ(top.payload, top.sequence);
    now = top.time;
    q.pop();
    ref.pop();
    ASSERT_EQ(q.size(), ref.size());
  };
  // Populations 20k (a calendar), 3k (the heap alone), 40k, then empty; each event popped may
  // schedule another (a sleeper waking and sleeping again).
  for (const std::size_t population : {20'000U, 3'000U, 40'000U, 0U}) {
    while (ref.size() < population) push();
    for (int churn = 0; churn < 20'000; ++churn) {
      if (ref.empty()) break;
      pop();
      if (::testing::Test::HasFatalFailure()) return;
      calendar_seen = calendar_seen || q.calendar();
      if (ref.size() < population || g() % 2 == 0) push();
    }
    while (ref.size() > population) {
      pop();
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(calendar_seen) << "the schedule never reached the calendar";
  EXPECT_GE(q.stats().spawns, 1U);
  EXPECT_GE(q.stats().merges, 1U);
}

TEST(TimerQueueOrder, MatchesAPriorityQueueUnderAdversarialSchedules) {
  for (const auto& schedule : timer_schedules()) check_timer_queue(schedule, 42);
}

TEST(TimerQueueOrder, ReachesItsColdPaths) {
  // Far-future events wait in the overflow and come back by a jump; a thinned population makes
  // the buckets too narrow and the calendar re-cuts.
  backoff::random_generator g{7};
  sim::timer_queue q;
  timer_ref ref;
  std::uint64_t sequence = 0;
  const auto push = [&](sim::time_ns at) {
    q.push(sim::event{at, sequence, 0, 0, 0});
    ref.emplace(at, sequence++);
  };
  // 10k events within 10 us, and 5k a second later (far beyond the ring that 10k events cut).
  for (int i = 0; i < 10'000; ++i) push(static_cast<sim::time_ns>(g() % 10'000));
  for (int i = 0; i < 5'000; ++i)
    push(1'000'000'000 + static_cast<sim::time_ns>(g() % 100'000'000));
  sim::time_ns now = 0;
  while (!ref.empty()) {
    ASSERT_EQ(std::make_pair(q.top().time, q.top().sequence), ref.top());
    now = q.top().time;
    q.pop();
    ref.pop();
    // While the second group drains, a few sleepers far apart: mostly empty buckets.
    if (now >= 1'000'000'000 && g() % 4 == 0)
      push(now + static_cast<sim::time_ns>(g() % 10'000'000'000));
  }
  EXPECT_GE(q.stats().jumps + q.stats().migrations, 1U);
  EXPECT_GE(q.stats().spawns, 1U);
}

// The engine with timers and lanes interleaved against a reference engine made of one
// std::priority_queue (a lane's event is just an event `delay` later): the same driver, the
// same random stream, the same handled sequence.
struct engine_calendar_driver {
  backoff::random_generator rng{11};
  int left = 36'000;
  // Decides what one handled event schedules: (delay or lane, payload) pairs.
  template <class Schedule, class Lane>
  void act(sim::time_ns now, Schedule&& at, Lane&& in) {
    if (--left <= 0) return;
    const int fanout = left > 18'000 ? 2 : (rng() % 3 == 0 ? 0 : 1);  // grow, then drain
    for (int k = 0; k < fanout; ++k) {
      const auto tag = static_cast<std::uint64_t>(left) * 4 + static_cast<std::uint64_t>(k);
      switch (rng() % 6) {
        case 0:
          in(0, tag);
          break;
        case 1:
          in(1, tag);
          break;
        case 2:
          at(now, tag);
          break;  // due now: behind every bucket
        case 3:
          at(now + static_cast<sim::time_ns>(rng() % 4) * 50'000'000, tag);
          break;  // ties
        default:
          at(now + static_cast<sim::time_ns>(rng() % 30'000'000'000ULL), tag);
          break;
      }
    }
  }
};

TEST(EngineCalendarOrder, TimersAndLanesMatchAReferenceQueue) {
  constexpr sim::time_ns lane_delay[2] = {100'000'000, 500'000'000};
  using seen_t = std::vector<std::pair<sim::time_ns, std::uint64_t>>;

  seen_t expected;
  {
    engine_calendar_driver d;
    std::priority_queue<std::tuple<sim::time_ns, std::uint64_t, std::uint64_t>,
                        std::vector<std::tuple<sim::time_ns, std::uint64_t, std::uint64_t>>,
                        std::greater<>>
        pending;
    std::uint64_t sequence = 0;
    for (int i = 0; i < 12'000; ++i) pending.emplace(i % 7, sequence++, 1'000'000 + i);
    while (!pending.empty()) {
      const auto [t, seq, tag] = pending.top();
      pending.pop();
      expected.emplace_back(t, tag);
      d.act(
          t, [&](sim::time_ns at, std::uint64_t p) { pending.emplace(at, sequence++, p); },
          [&](int lane, std::uint64_t p) { pending.emplace(t + lane_delay[lane], sequence++, p); });
    }
  }

  struct engine_driver final : sim::model {
    engine_calendar_driver d;
    sim::lane_id lanes[2] = {0, 0};
    sim::handler_id self = 0;
    seen_t seen;
    void handle(sim::engine& e, const sim::event& ev) override {
      seen.emplace_back(e.now(), ev.payload);
      d.act(
          e.now(), [&](sim::time_ns at, std::uint64_t p) { e.schedule_at(at, self, 0, p); },
          [&](int lane, std::uint64_t p) { e.schedule_in(lanes[lane], self, 0, p); });
    }
  };
  // With the hint on, the engine keeps the next event it found until it is taken or an earlier
  // one is scheduled; the driver schedules events due now, ties and lane events while one is
  // kept, so a stale one would run out of order here.
  for (const bool prefetch : {false, true}) {
    SCOPED_TRACE(prefetch ? "with the prefetch hint" : "without");
    engine_driver m;
    sim::engine e;
    m.self = e.add(m);
    // Records for the hint: any array will do; the mask keeps every payload's index in it.
    std::vector<std::uint64_t> records(4096);
    if (prefetch) e.prefetch_records(m.self, records.data(), sizeof(std::uint64_t), 4096, 4095);
    m.lanes[0] = e.add_lane(lane_delay[0]);
    m.lanes[1] = e.add_lane(lane_delay[1]);
    for (int i = 0; i < 12'000; ++i)
      e.schedule_at(i % 7, m.self, 0, 1'000'000 + static_cast<std::uint64_t>(i));
    e.run();
    ASSERT_EQ(m.seen.size(), expected.size());
    EXPECT_GT(expected.size(), 40'000U);
    EXPECT_TRUE(m.seen == expected);
  }
}

// An event scheduled while the engine keeps the next one (a lane's front) for its hint, due
// before it: in the timer queue at the same instant, and through another lane.
TEST(Engine, AnEventScheduledBeforeTheHintedOneRunsFirst) {
  struct recorder final : sim::model {
    std::vector<std::uint64_t> order;
    sim::lane_id long_lane = 0, short_lane = 0;
    void handle(sim::engine& e, const sim::event& ev) override {
      order.push_back(ev.payload);
      if (ev.payload == 0) {
        e.schedule_in(long_lane, 0, 0, 4);  // due at 100: the hint while 1 runs
        e.schedule_at(10, 0, 0, 1);
      } else if (ev.payload == 1) {
        e.schedule_at(e.now(), 0, 0, 2);     // due at 10
        e.schedule_in(short_lane, 0, 0, 3);  // due at 15
      }
    }
  } m;
  sim::engine e;
  e.add(m);
  std::vector<std::uint64_t> records(8);
  e.prefetch_records(0, records.data(), sizeof(std::uint64_t), records.size(), ~0ULL);
  m.long_lane = e.add_lane(100);
  m.short_lane = e.add_lane(5);
  e.schedule_at(0, 0, 0, 0);
  e.run();
  EXPECT_EQ(m.order, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
}

}  // namespace
