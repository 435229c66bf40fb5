// SPDX-License-Identifier: Apache-2.0
// A plain run's strategies side by side on several workers (runner.hpp): the outputs are those of
// running them in turn, byte for byte, clients.csv's rows included; a stop is taken where the
// runs in turn would meet it; and the memory limit runs fewer at once rather than refusing a run
// that fits one at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "scratch.hpp"
#include "sim/engine/guard.hpp"
#include "sim/run/memory.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace fs = std::filesystem;
using backoff::test::builtin_source;
using backoff::test::slurp;

nlohmann::json summary_less_wall(const fs::path& file) {
  auto doc = nlohmann::json::parse(slurp(file));
  doc["run"].erase("wall_s");
  doc["run"].erase("events_per_s");
  return doc;
}

// The strategies' names in the order clients.csv lists their rows, each once.
std::vector<std::string> strategies_in_rows(const std::string& csv) {
  std::vector<std::string> names;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(','));
    if (names.empty() || names.back() != name) names.push_back(name);
  }
  return names;
}

TEST(StrategiesSideBySide, OutputsAreTheSameOnOneOrManyWorkers) {
  const backoff::test::test_scratch scratch("side-by-side");
  for (const unsigned threads : {1U, 2U, 3U, 8U}) {
    sim::scenario sc =
        sim::scenario::load(builtin_source("one-client-burst"), {"workload.operations=600"});
    sim::run_options o;
    o.out = scratch / std::to_string(threads);
    o.threads = threads;
    const auto r = sim::run_scenario(sc, o);
    ASSERT_FALSE(r.stopped.has_value());
    ASSERT_EQ(r.strategies.size(), sc.strategies().size());
    for (std::size_t i = 0; i < r.strategies.size(); ++i) {
      EXPECT_EQ(r.strategies[i].name, sc.strategies()[i].name());
    }
  }
  const fs::path one = scratch / "1";
  const std::string rows = slurp(one / "clients.csv");
  // One row per operation and strategy, strategy by strategy.
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1 + 600 * 8);
  const std::vector<std::string> order = strategies_in_rows(rows);
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(order.front(), "exponential-none");
  EXPECT_EQ(order.back(), "aimd-reno-0.9");
  for (const char* threads : {"2", "3", "8"}) {
    SCOPED_TRACE(threads);
    const fs::path many = scratch / threads;
    EXPECT_EQ(slurp(many / "clients.csv"), rows);
    EXPECT_EQ(slurp(many / "timeseries.csv"), slurp(one / "timeseries.csv"));
    EXPECT_EQ(summary_less_wall(many / "summary.json"), summary_less_wall(one / "summary.json"));
  }
}

TEST(StrategiesSideBySide, TwoRunAtOnceAndFinishingOutOfOrderChangesNothing) {
  // The first strategy waits to start until the third has: on two workers, the second ran whole
  // meanwhile, so the runs finish out of order. Run in turn, the wait would time out.
  std::mutex lock;
  std::condition_variable started;
  bool third_started = false, waited_for_it = false;
  sim::run_options o;
  o.threads = 2;
  o.on_strategy_start = [&](std::size_t s) {
    std::unique_lock hold(lock);
    if (s == 0) {
      waited_for_it =
          started.wait_for(hold, std::chrono::seconds(30), [&] { return third_started; });
    } else if (s == 2) {
      third_started = true;
      started.notify_all();
    }
  };
  const backoff::test::test_scratch scratch("side-by-side");
  const auto run = [&](const fs::path& out, sim::run_options options) {
    sim::scenario sc =
        sim::scenario::load(builtin_source("one-client-burst"), {"workload.operations=300"});
    options.out = out;
    return sim::run_scenario(sc, options);
  };
  const auto together = run(scratch / "together", o);
  EXPECT_TRUE(waited_for_it) << "the first strategy did not run beside the others";
  sim::run_options in_turn;
  in_turn.threads = 1;
  (void)run(scratch / "in-turn", in_turn);
  EXPECT_FALSE(together.stopped.has_value());
  EXPECT_EQ(slurp(scratch / "together" / "clients.csv"),
            slurp(scratch / "in-turn" / "clients.csv"));
  EXPECT_EQ(slurp(scratch / "together" / "timeseries.csv"),
            slurp(scratch / "in-turn" / "timeseries.csv"));
  EXPECT_EQ(summary_less_wall(scratch / "together" / "summary.json"),
            summary_less_wall(scratch / "in-turn" / "summary.json"));
}

// Three strategies against a server that answers a refusal at once: the middle one retries
// without end at one instant, and the engine's limit stops it.
sim::scenario stuck_in_the_middle() {
  const std::string text =
      "scenario = \"stuck\"\nmodel = \"one-client-burst\"\n"
      "[server]\nconnect = \"0s\"\nerror = \"0s\"\nmax_busy = 1\n"
      "[[strategy]]\nname = \"before\"\npolicy = \"none\"\nmax_attempts = 3\n"
      "[[strategy]]\nname = \"spin\"\npolicy = \"none\"\nmax_attempts = 1000000000\n"
      "[[strategy]]\nname = \"after\"\npolicy = \"none\"\nmax_attempts = 2\n";
  return sim::scenario::load(sim::scenario_source{"stuck.toml", text},
                             {"run.max_events_per_instant=200000"});
}

TEST(StrategiesSideBySide, AStopIsTakenWhereTheRunsInTurnWouldMeetIt) {
  const backoff::test::test_scratch scratch("side-by-side");
  std::vector<std::string> messages;
  for (const unsigned threads : {1U, 3U}) {
    sim::scenario sc = stuck_in_the_middle();
    sim::run_options o;
    o.out = scratch / std::to_string(threads);
    o.threads = threads;
    try {
      (void)sim::run_scenario(sc, o);
      ADD_FAILURE() << "not stopped on " << threads << " threads";
    } catch (const sim::instant_limit_error& e) {
      messages.emplace_back(e.what());
    }
  }
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("strategy 'spin'"), std::string::npos) << messages[0];
  const fs::path one = scratch / "1", three = scratch / "3";
  const auto doc = summary_less_wall(three / "summary.json");
  EXPECT_EQ(doc, summary_less_wall(one / "summary.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["stopped_in"], "spin");
  // "after" is not run, although a worker of the three ran it while "spin" spun.
  ASSERT_EQ(doc["not_run"].size(), 1u);
  EXPECT_EQ(doc["not_run"][0], "after");
  ASSERT_EQ(doc["strategies"].size(), 2u);
  EXPECT_EQ(doc["strategies"][0]["name"], "before");
  EXPECT_EQ(doc["strategies"][1]["name"], "spin");
  const std::string rows = slurp(three / "clients.csv");
  EXPECT_EQ(rows, slurp(one / "clients.csv"));
  EXPECT_EQ(strategies_in_rows(rows), (std::vector<std::string>{"before"}));
}

TEST(StrategiesSideBySide, AnInterruptBeforeTheFirstRunLeavesEveryStrategyNotRun) {
  struct cleanup {
    cleanup() { sim::clear_interrupt(); }
    ~cleanup() { sim::clear_interrupt(); }
  } const clear;
  sim::scenario sc = sim::scenario::load(builtin_source("one-client-burst"), {});
  sim::request_interrupt(SIGTERM);
  sim::run_options o;
  o.threads = 3;
  const auto r = sim::run_scenario(sc, o);
  ASSERT_TRUE(r.stopped.has_value());
  EXPECT_EQ(r.stopped->reason, backoff::report::stop_reason::interrupted);
  EXPECT_EQ(r.stopped->signal, SIGTERM);
  EXPECT_TRUE(r.strategies.empty());
  EXPECT_TRUE(r.stopped->strategy.empty());
  ASSERT_EQ(r.stopped->not_run.size(), sc.strategies().size());
  for (std::size_t i = 0; i < sc.strategies().size(); ++i) {
    EXPECT_EQ(r.stopped->not_run[i], sc.strategies()[i].name());
  }
}

TEST(StrategiesSideBySide, TheMemoryLimitRunsFewerAtOnceRatherThanRefusing) {
  // 2 x 10^7 operations in flight: gigabytes per run, far above what the process holds.
  sim::scenario sc =
      sim::scenario::load(builtin_source("one-client-burst"), {"workload.operations=20000000"});
  const sim::memory_estimate alone = sim::estimate_memory(sc, 1);
  const sim::memory_estimate two = sim::estimate_memory(sc, 2);
  ASSERT_GT(two.bytes, alone.bytes + (1ULL << 30));
  EXPECT_EQ(alone.workers, 1u);
  EXPECT_EQ(two.workers, 2u);
  EXPECT_NE(two.driver.find("on 2 worker threads"), std::string::npos) << two.driver;
  EXPECT_EQ(alone.driver.find("worker threads"), std::string::npos) << alone.driver;
  // One worker per strategy at most; no limit, as many as asked.
  EXPECT_EQ(sim::plain_run_workers(sc, 64, 0), 8u);
  EXPECT_EQ(sim::plain_run_workers(sc, 2, 0), 2u);
  const std::uint64_t between = alone.bytes + (two.bytes - alone.bytes) / 2;
  EXPECT_EQ(sim::plain_run_workers(sc, 2, between), 1u);
  EXPECT_EQ(sim::plain_run_workers(sc, 2, two.bytes + (1ULL << 28)), 2u);
  // The estimate under that limit is one run's, so the check passes where two would not fit.
  const sim::memory_estimate fitted = sim::estimate_memory(sc, 2, between);
  EXPECT_LT(fitted.bytes, between);
  EXPECT_EQ(fitted.workers, 1u);
  EXPECT_NO_THROW(sim::check_memory(sc, 2, between));
  // Below one run: refused, naming the driver without workers.
  try {
    sim::check_memory(sc, 2, alone.bytes / 2);
    ADD_FAILURE() << "not refused";
  } catch (const sim::memory_limit_error& e) {
    EXPECT_NE(std::string(e.what()).find("workload.operations"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("worker threads"), std::string::npos) << e.what();
  }
}

}  // namespace
