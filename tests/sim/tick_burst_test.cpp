// SPDX-License-Identifier: Apache-2.0
// Seed 001's tick model (scenarios/tick-burst.toml, src/sim/models/tick_burst.cpp): the rules on
// small cases whose outcome follows from them exactly, then the seed's published conclusions on
// the built-in scenario with fixed seeds. The model is not tuned to those conclusions; the
// parameters are the seed's.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "report/summary.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;
using backoff::test::builtin_source;
using backoff::test::by_name;

report::scenario_result run_tick_burst(std::uint64_t seed,
                                       const std::vector<std::string>& sets = {}) {
  sim::scenario sc = sim::scenario::load(builtin_source("tick-burst"), sets);
  sc.set_seed(seed);
  return sim::run_scenario(sc, {});
}

// --- The rules, on cases small enough to follow by hand ---------------------------------------

// One client alone: 5 ticks of work, answered at the end of the fifth tick, whatever the strategy.
TEST(TickBurstRules, AnUncontendedRequestTakesWorkTicks) {
  const auto r = run_tick_burst(1, {"workload.clients=1"});
  ASSERT_EQ(r.strategies.size(), 5u);
  for (const auto& s : r.strategies) {
    EXPECT_EQ(s.completed, 1u) << s.name;
    EXPECT_EQ(s.attempts, 1u) << s.name;
    ASSERT_TRUE(s.latency_s.has_value());
    EXPECT_EQ(s.latency_s->max, 5.0) << s.name;
  }
}

// Six clients at tick 10, five slots: five are served (done at 15); the sixth is rejected after
// one tick (answered at 11) and retries per its strategy. Slots free up at the end of tick 14.
//   NB  retries at 11, 12, 13, 14 (rejected), 15 (served): 6 attempts, done at 20, latency 10.
//   CB  idles 5 ticks: retries at 16 (served): 2 attempts, done at 21, latency 11.
//   EB  idles 2 then 4 ticks: 13 (rejected, answered 14), 18 (served): 3 attempts, latency 13.
TEST(TickBurstRules, RejectedAfterOneTickThenRetriedPerStrategy) {
  const auto r = by_name(run_tick_burst(
      1, {"workload.clients=6", "workload.spike_fraction=1", "workload.spike_width=1"}));
  const std::map<std::string, std::pair<std::uint64_t, double>> expected{
      {"NB", {11, 10.0}}, {"CB", {7, 11.0}}, {"EB", {8, 13.0}}};
  for (const auto& [name, attempts_and_max] : expected) {
    const auto& s = r.at(name);
    EXPECT_EQ(s.completed, 6u) << name;
    EXPECT_EQ(s.attempts, attempts_and_max.first) << name;
    ASSERT_TRUE(s.latency_s.has_value());
    EXPECT_EQ(s.latency_s->max, attempts_and_max.second) << name;
    EXPECT_EQ(s.latency_s->p50, 5.0) << name;
  }
}

// Overwhelmed: with overwhelmed_above = 1, two requests in service share one tick of progress
// per tick, so together they need 10 ticks: the last one is answered at 10 + 10 = 20.
TEST(TickBurstRules, WhenOverwhelmedOnlyThatManyMakeProgress) {
  const auto r = run_tick_burst(3, {"workload.clients=2", "workload.spike_fraction=1",
                                    "workload.spike_width=1", "server.overwhelmed_above=1"});
  for (const auto& s : r.strategies) {
    EXPECT_EQ(s.completed, 2u) << s.name;
    EXPECT_EQ(s.attempts, 2u) << s.name;
    EXPECT_EQ(s.makespan_s, 20.0) << s.name;
    ASSERT_TRUE(s.latency_s.has_value());
    EXPECT_EQ(s.latency_s->max, 10.0) << s.name;
  }
}

TEST(TickBurstRules, EveryClientIsReportedOnce) {
  const auto r = run_tick_burst(1);
  for (const auto& s : r.strategies) {
    EXPECT_EQ(s.operations, 800u) << s.name;
    EXPECT_EQ(s.completed + s.gave_up + s.unfinished, 800u) << s.name;
    EXPECT_EQ(s.seconds_per_unit, 1.0) << s.name;
    EXPECT_LE(s.peak_load, 5) << s.name;  // in service never exceeds the slots
  }
}

TEST(TickBurstRules, UnknownKeysAndWindowsAreRejected) {
  EXPECT_THROW(run_tick_burst(1, {"server.slot=3"}), sim::scenario_error);
  EXPECT_THROW(run_tick_burst(1, {"workload.send_window=5000"}), sim::scenario_error);
  const std::string text = R"toml(scenario = "t"
model = "tick-burst"
[[strategy]]
name = "w"
window = "aimd(initial=20, ssthresh=1024, decrease=0.5, variant=tahoe)"
)toml";
  sim::scenario sc = sim::scenario::load({"w.toml", text});
  EXPECT_THROW(sim::check_scenario(sc), sim::scenario_error);
}

// --- Seed 001's conclusions -------------------------------------------------------------------

class TickBurstSeed001 : public testing::TestWithParam<std::uint64_t> {
 protected:
  std::map<std::string, report::strategy_summary> run() const {
    return by_name(run_tick_burst(GetParam()));
  }
};

// "Both exponential backoff and random exponential backoff yield significantly better response
// times": they recover, and (nearly) every client gets its answer.
TEST_P(TickBurstSeed001, ExponentialStrategiesCompleteNearlyEveryClient) {
  const auto r = run();
  for (const char* name : {"EB", "REB"}) {
    EXPECT_GE(r.at(name).completed, 784u) << name;  // >= 98 % of 800
  }
}

// "EB and REB send significantly fewer requests than the other backoff strategies"; NB, CB and
// URB keep the service overwhelmed, and most of their clients never get an answer.
TEST_P(TickBurstSeed001, NoConstantOrUniformBackoffOverwhelmsTheService) {
  const auto r = run();
  const auto eb = r.at("EB").attempts;
  for (const char* name : {"NB", "CB", "URB"}) {
    const auto& s = r.at(name);
    EXPECT_GE(s.attempts, 3 * eb) << name;
    EXPECT_LT(s.completed, 400u) << name;  // more than half not completed
  }
}

// "exponential backoff has *slightly* better 75th response times than random exponential
// backoff, however, the long tail is better under REB."
TEST_P(TickBurstSeed001, EbHasTheBetterP75AndRebTheBetterTail) {
  const auto r = run();
  ASSERT_TRUE(r.at("EB").latency_s && r.at("REB").latency_s);
  const auto& eb = *r.at("EB").latency_s;
  const auto& reb = *r.at("REB").latency_s;
  EXPECT_LT(eb.p75, reb.p75);
  EXPECT_LT(reb.p99, eb.p99);
  EXPECT_LT(reb.max, eb.max);
}

// "EB sends fewer requests then REB, but not significantly so."
TEST_P(TickBurstSeed001, EbSendsFewerRequestsThanReb) {
  const auto r = run();
  EXPECT_LT(r.at("EB").attempts, r.at("REB").attempts);
}

INSTANTIATE_TEST_SUITE_P(FixedSeeds, TickBurstSeed001, testing::Values(1u, 2u, 3u, 4u, 5u));

// --- Determinism --------------------------------------------------------------------------------

std::string summary_without_timing(const report::scenario_result& r) {
  std::ostringstream out;
  report::write_summary_json(r, out);
  auto doc = nlohmann::json::parse(out.str());
  doc["run"].erase("wall_s");
  doc["run"].erase("events_per_s");
  return doc.dump();
}

TEST(TickBurstDeterminism, SameSeedSameSummary) {
  const std::string a = summary_without_timing(run_tick_burst(7));
  const std::string b = summary_without_timing(run_tick_burst(7));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, summary_without_timing(run_tick_burst(8)));
}

}  // namespace
