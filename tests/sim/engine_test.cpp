// SPDX-License-Identifier: Apache-2.0
// The engine's contract: time order, ties broken by insertion order (across the heap and lanes
// alike), run_until's bound, and no scheduling into the past.
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backoff/random.hpp"

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

}  // namespace
