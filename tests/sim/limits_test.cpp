// SPDX-License-Identifier: Apache-2.0
// The simulator's limits: sizes, the up-front memory estimate (which refuses without
// allocating), the engine's guard (interrupts and the resident-set limit, polled every 2^16
// events), and partial results that are marked as such. Whole runs are unchanged by all of it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "builtin_scenario.hpp"
#include "report/summary.hpp"
#include "scratch.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/guard.hpp"
#include "sim/models/model.hpp"
#include "sim/run/memory.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;
using backoff::test::builtin_source;
namespace fs = std::filesystem;
using backoff::test::slurp;

// Leaves no interrupt request behind for the next test, whatever happens in this one.
struct interrupt_cleanup {
  interrupt_cleanup() { sim::clear_interrupt(); }
  ~interrupt_cleanup() { sim::clear_interrupt(); }
};

// Schedules itself again after every event, for ever.
struct ticker final : sim::model {
  void handle(sim::engine& e, const sim::event& ev) override { e.schedule_after(1, ev.target, 0); }
};

// Schedules itself again at the same instant, for ever: a loop at zero delay.
struct spinner final : sim::model {
  void handle(sim::engine& e, const sim::event& ev) override { e.schedule_after(0, ev.target, 0); }
};

// At time 5, `burst` events at that instant, then one more at time 6.
struct burster final : sim::model {
  std::uint64_t burst = 0, seen = 0;
  void handle(sim::engine& e, const sim::event& ev) override {
    ++seen;
    if (ev.kind == 0) {
      for (std::uint64_t i = 0; i < burst; ++i) e.schedule_after(0, ev.target, 1);
      e.schedule_after(1, ev.target, 2);
    }
  }
};

// A one-client-burst scenario whose refused attempts are answered at once, with one strategy.
std::string zero_time_scenario(const std::string& strategy_body) {
  return "scenario = \"zero-time\"\nmodel = \"one-client-burst\"\n"
         "[server]\nconnect = \"0s\"\nerror = \"0s\"\nmax_busy = 1\n"
         "[[strategy]]\nname = \"spin\"\n" +
         strategy_body;
}

sim::scenario load_text(const std::string& text, const std::vector<std::string>& sets = {}) {
  return sim::scenario::load(sim::scenario_source{"zero-time.toml", text}, sets);
}

// summary.json without its wall-clock figures.
nlohmann::json summary_without_wall(const fs::path& p) {
  auto doc = nlohmann::json::parse(slurp(p));
  doc["run"].erase("wall_s");
  doc["run"].erase("events_per_s");
  return doc;
}

TEST(SimLimits, ParsesSizes) {
  std::string error;
  EXPECT_EQ(sim::parse_size("512MiB", error), 512ULL << 20);
  EXPECT_EQ(sim::parse_size("4GiB", error), 4ULL << 30);
  EXPECT_EQ(sim::parse_size("1.5G", error), 3ULL << 29);
  EXPECT_EQ(sim::parse_size("2GB", error), 2'000'000'000ULL);
  EXPECT_EQ(sim::parse_size("1000", error), 1000ULL);
  EXPECT_EQ(sim::parse_size("none", error), 0ULL);
  EXPECT_EQ(sim::parse_size("0", error), 0ULL);
  for (const char* bad : {"", "GiB", "4XB", "-1GiB", "1..2G", "99999999999TiB"}) {
    error.clear();
    EXPECT_FALSE(sim::parse_size(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_EQ(sim::format_size(3ULL << 30), "3.0 GiB");
  EXPECT_EQ(sim::format_size(512ULL << 20), "512 MiB");
  const std::uint64_t def = sim::default_memory_limit();
  EXPECT_GT(def, 0u);
  EXPECT_LE(def, 8ULL << 30);
}

TEST(SimLimits, EstimateRefusesAHugeScenarioBeforeAllocating) {
  sim::scenario sc =
      sim::scenario::load(builtin_source("one-client-burst"), {"workload.operations=100000000"});
  sim::run_options o;
  o.memory_limit = 1ULL << 30;
  const std::uint64_t before = sim::resident_bytes();
  try {
    (void)sim::run_scenario(sc, o);
    FAIL() << "not refused";
  } catch (const sim::memory_limit_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("scenario 'one-client-burst' would need about"), std::string::npos)
        << message;
    EXPECT_NE(message.find("workload.operations = 100000000 in flight at once"), std::string::npos)
        << message;
    EXPECT_NE(message.find("the limit is 1.0 GiB (--memory-limit)"), std::string::npos) << message;
  }
  // 10^8 operations would be about 24 GiB: nothing of the kind was allocated.
  EXPECT_LT(sim::resident_bytes(), before + (256ULL << 20));
}

TEST(SimLimits, EstimateNamesTheSweepsLargestTerm) {
  sim::scenario sc =
      sim::scenario::load(builtin_source("aws-occ"), {"sweep.clients=[10, 1000000]"});
  const sim::memory_estimate e = sim::estimate_memory(sc, 2);
  EXPECT_NE(e.driver.find("clients = 1000000"), std::string::npos) << e.driver;
  EXPECT_NE(e.driver.find("2 worker threads"), std::string::npos) << e.driver;
  EXPECT_GT(e.bytes, e.baseline + 2 * 1'000'000ULL * 190);
}

TEST(SimLimits, AnEngineWithoutAGuardIgnoresInterrupts) {
  const interrupt_cleanup cleanup;
  sim::request_interrupt(SIGINT);
  sim::engine e;
  ticker t;
  e.schedule_at(0, e.add(t), 0);
  e.run_until(200'000);
  EXPECT_EQ(e.now(), 200'000);
}

TEST(SimLimits, TheGuardStopsAnEngineAtItsNextPoll) {
  const interrupt_cleanup cleanup;
  sim::run_guard guard;
  sim::engine e(&guard);
  ticker t;
  e.schedule_at(0, e.add(t), 0);
  e.run_until(1000);  // not interrupted: runs to its bound
  EXPECT_EQ(e.now(), 1000);
  sim::request_interrupt(SIGTERM);
  sim::request_interrupt(SIGINT);  // the first signal wins
  try {
    e.run_until(sim::time_max);
    FAIL() << "not stopped";
  } catch (const sim::run_stopped& s) {
    EXPECT_EQ(s.reason, report::stop_reason::interrupted);
    EXPECT_EQ(s.signal, SIGTERM);
    EXPECT_EQ(s.events, std::uint64_t{1} << sim::run_guard::poll_shift);
    EXPECT_EQ(s.at, e.now());
  }
}

TEST(SimLimits, TheGuardStopsARunWhoseEstimateWasWrong) {
  // The estimate is skipped (as if it had been fooled); the run holds about 50 MiB of
  // operations in flight, the limit leaves it 8 MiB more than the process holds now.
  const interrupt_cleanup cleanup;
  sim::scenario sc = sim::scenario::load(
      builtin_source("one-client-burst"),
      {"workload.operations=200000", "workload.rate_per_s=1000000", "server.max_busy=1"});
  sim::run_options o;
  o.preflight = false;
  o.memory_limit = sim::resident_bytes() + (8ULL << 20);
  try {
    (void)sim::run_scenario(sc, o);
    FAIL() << "not stopped";
  } catch (const sim::memory_limit_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("scenario 'one-client-burst' stopped at"), std::string::npos) << message;
    EXPECT_NE(message.find("in strategy 'exponential-none'"), std::string::npos) << message;
    EXPECT_NE(message.find("over the limit of"), std::string::npos) << message;
    EXPECT_NE(message.find("the estimate was about"), std::string::npos) << message;
  }
}

TEST(SimLimits, AnInterruptedRunIsMarkedPartial) {
  const interrupt_cleanup cleanup;
  sim::scenario sc = sim::scenario::load(
      builtin_source("one-client-burst"),
      {"workload.operations=100000", "workload.rate_per_s=1000000", "server.max_busy=1"});
  const backoff::test::test_scratch scratch("limits");
  const fs::path out = scratch / "out";
  sim::run_options o;
  o.out = out;
  // Interrupt once the run has started (its clients.csv is begun); bounded wait.
  std::thread interrupter([&] {
    for (int i = 0; i < 2000 && !backoff::test::clients_csv_begun(out); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    sim::request_interrupt(SIGINT);
  });
  const report::scenario_result r = sim::run_scenario(sc, o);
  interrupter.join();
  ASSERT_TRUE(r.stopped.has_value());
  EXPECT_EQ(r.stopped->reason, report::stop_reason::interrupted);
  EXPECT_EQ(r.stopped->signal, SIGINT);
  // Each strategy ran, was cut short (and is in `strategies`), or did not start.
  EXPECT_EQ(r.strategies.size() + r.stopped->not_run.size(), sc.strategies().size());
  const auto doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["reason"], "interrupted");
  EXPECT_EQ(doc["signal"], "SIGINT");
  EXPECT_TRUE(doc.contains("stopped_at_s"));
  EXPECT_NE(report::comparison_table(r).find("partial: interrupted (SIGINT)"), std::string::npos);
}

TEST(SimLimits, AnInterruptedSweepWritesFinishedCellsAndMarksTheRest) {
  const interrupt_cleanup cleanup;
  sim::scenario sc = sim::scenario::load(builtin_source("attempts-vs-operations"), {});
  sim::request_interrupt(SIGINT);  // before the first run: every cell is unfinished
  sim::run_options o;
  o.threads = 2;
  const report::scenario_result r = sim::run_scenario(sc, o);
  ASSERT_TRUE(r.stopped.has_value());
  EXPECT_EQ(r.stopped->runs_done, 0u);
  EXPECT_EQ(r.stopped->runs, 8u * 2u * 5u);
  std::ostringstream json, csv;
  report::write_summary_json(r, json);
  report::write_sweep_csv(r, csv);
  const auto doc = nlohmann::json::parse(json.str());
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["runs_done"], 0);
  EXPECT_EQ(doc["points"][0]["strategies"][0]["partial"], true);
  EXPECT_EQ(doc["points"][0]["strategies"][0]["replications_done"], 0);
  const std::string rows = csv.str();
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1);  // the header only
}

TEST(SimLimits, AWholeRunIsTheSameWithOrWithoutALimit) {
  const interrupt_cleanup cleanup;
  const backoff::test::test_scratch scratch("limits");
  const fs::path& base = scratch.dir();
  for (const std::uint64_t limit : {std::uint64_t{0}, sim::default_memory_limit()}) {
    sim::scenario sc = sim::scenario::load(builtin_source("tick-burst"), {});
    sim::run_options o;
    o.out = base / std::to_string(limit);
    o.memory_limit = limit;
    const report::scenario_result r = sim::run_scenario(sc, o);
    EXPECT_FALSE(r.stopped.has_value());
    EXPECT_FALSE(nlohmann::json::parse(slurp(*o.out / "summary.json")).contains("partial"));
  }
  const fs::path a = base / "0", b = base / std::to_string(sim::default_memory_limit());
  EXPECT_EQ(slurp(a / "clients.csv"), slurp(b / "clients.csv"));
  EXPECT_EQ(slurp(a / "timeseries.csv"), slurp(b / "timeseries.csv"));
  EXPECT_EQ(summary_without_wall(a / "summary.json"), summary_without_wall(b / "summary.json"));
}

TEST(SimLimits, TheEngineStopsALoopAtOneInstant) {
  constexpr std::uint64_t limit = 100'000;
  sim::engine e(nullptr, limit);
  spinner s;
  e.schedule_at(7, e.add(s), 0);
  try {
    e.run_until(sim::time_max);
    FAIL() << "not stopped";
  } catch (const sim::run_stopped& stop) {
    EXPECT_EQ(stop.reason, report::stop_reason::instant_limit);
    EXPECT_EQ(stop.at, 7);
    // Counted from the first poll at that instant, checked at each poll after it.
    EXPECT_GT(stop.events, limit);
    EXPECT_LE(stop.events, limit + 2 * (sim::run_guard::poll_mask + 1));
  }
}

TEST(SimLimits, TheInstantLimitCountsOnlyEventsAtOneTime) {
  // Time advances at every event: a million events pass a limit of one.
  sim::engine moving(nullptr, 1);
  ticker t;
  moving.schedule_at(0, moving.add(t), 0);
  moving.run_until(1'000'000);
  EXPECT_EQ(moving.now(), 1'000'000);
  // 300,000 events at one instant pass a limit of 10^6 and the run goes on past it.
  sim::engine busy(nullptr, 1'000'000);
  burster b;
  b.burst = 300'000;
  busy.schedule_at(5, busy.add(b), 0);
  busy.run();
  EXPECT_EQ(b.seen, 300'002u);
  EXPECT_EQ(busy.now(), 6);
}

TEST(SimLimits, AZeroDelayLoopIsRefusedBeforeItRuns) {
  for (const char* body :
       {"policy = \"none\"\n", "policy = \"constant(initial=0s)\"\n",
        "policy = \"exponential(initial=0s, jitter=full)\"\n", "window = \"aimd\"\n"}) {
    sim::scenario sc = load_text(zero_time_scenario(body));
    try {
      sim::check_scenario(sc);
      FAIL() << "accepted: " << body;
    } catch (const sim::scenario_error& e) {
      EXPECT_NE(std::string(e.what()).find("zero-time.toml:7:1: strategy spin: with "
                                           "server.connect + server.error = 0s"),
                std::string::npos)
          << e.what();
    }
  }
  // Bounded retries, a delay, a time on either leg, or no refusals at all: accepted.
  sim::scenario bounded = load_text(zero_time_scenario("policy = \"none\"\nmax_attempts = 3\n"));
  EXPECT_NO_THROW(sim::check_scenario(bounded));
  sim::scenario waits = load_text(zero_time_scenario("policy = \"constant(initial=1ms)\"\n"));
  EXPECT_NO_THROW(sim::check_scenario(waits));
  sim::scenario slow = load_text(zero_time_scenario("policy = \"none\"\n"), {"server.error=1ns"});
  EXPECT_NO_THROW(sim::check_scenario(slow));
  sim::scenario roomy =
      load_text(zero_time_scenario("policy = \"none\"\n"), {"server.max_busy=2000"});
  EXPECT_NO_THROW(sim::check_scenario(roomy));
}

TEST(SimLimits, ARunStuckAtOneInstantStopsWithPartialOutputs) {
  // A billion attempts allowed per operation: validation lets it through (it would end), the
  // engine's limit stops it.
  sim::scenario sc = load_text(zero_time_scenario("policy = \"none\"\nmax_attempts = 1000000000\n"),
                               {"run.max_events_per_instant=200000"});
  const backoff::test::test_scratch scratch("limits");
  sim::run_options o;
  o.out = scratch / "stuck";
  try {
    (void)sim::run_scenario(sc, o);
    FAIL() << "not stopped";
  } catch (const sim::instant_limit_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "scenario 'zero-time': strategy 'spin' ran more events at 0.001 s of simulated time "
              "than run.max_events_per_instant = 200000 without time advancing: a loop that feeds "
              "itself at zero delay (give its delays a non-zero time); the outputs written are "
              "marked partial");
  }
  const auto doc = nlohmann::json::parse(slurp(*o.out / "summary.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["reason"], "events-per-instant-limit");
  EXPECT_EQ(doc["stopped_in"], "spin");
  EXPECT_DOUBLE_EQ(doc["stopped_at_s"].get<double>(), 0.001);
}

TEST(SimLimits, ASweepRunStuckAtOneInstantNamesItsPoint) {
  sim::scenario sc =
      load_text(zero_time_scenario("policy = \"none\"\nmax_attempts = 1000000000\n") +
                    "[sweep]\nserver.max_busy = [1000000, 1]\n",
                {"run.max_events_per_instant=200000", "replications=2"});
  sim::run_options o;
  o.threads = 1;
  try {
    (void)sim::run_scenario(sc, o);
    FAIL() << "not stopped";
  } catch (const sim::instant_limit_error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "strategy 'spin' at server.max_busy = 1, replication 0 ran more events at "
                  "0.001 s of simulated time than run.max_events_per_instant without"),
              std::string::npos)
        << e.what();
  }
}

TEST(SimLimits, TheInstantLimitDefaultGrowsWithTheModel) {
  sim::memory_need small;
  small.per("clients", 800, 256, "clients");
  EXPECT_EQ(sim::default_max_events_per_instant(small), 10'000'000);
  sim::memory_need big;
  big.per("clients", 5'000'000, 256, "clients");
  EXPECT_EQ(sim::default_max_events_per_instant(big), 500'000'000);
}

}  // namespace
