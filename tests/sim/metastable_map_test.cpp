// SPDX-License-Identifier: Apache-2.0
// Metastable maps (sim/run/map.hpp, docs/models/metastable-map.md): the [[map]] keys and their
// refusals, the bisection's bracket, outputs that do not depend on the thread count, and the
// felt outage E[X^2] / (2 E[X]) on constructed goodput series.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "report/boundary.hpp"
#include "sim/run/map.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;

// A map of the metastable-queue model, small enough for a test: two loads, two runs per probe.
std::string small_map(const std::string& extra = "") {
  return R"(scenario = "small-map"
seed = 3
[[map]]
scenario = "metastable-queue"
strategy = "metafor-retries"
set = ["spike.start=\"40s\"", "run.duration=\"600s\""]
load = { key = "workload.rate_per_s", values = [5, 9.5] }
trigger = { key = "spike.duration", low = "0.25s", high = "10s", resolution = "0.5s" }
replications = 2
max_probes = 9
)" + extra;
}

sim::scenario load_small_map(const std::string& text) {
  return sim::scenario::load({"small-map.toml", text});
}

std::string map_error_of(const std::string& text) {
  try {
    sim::scenario sc = load_small_map(text);
    sim::check_map(sc, sim::builtin_scenarios());
  } catch (const sim::scenario_error& e) {
    return e.what();
  }
  return "";
}

TEST(MetastableMapKeys, AreReadWithTheirDefaults) {
  const sim::scenario sc = load_small_map(small_map());
  ASSERT_TRUE(sc.is_map());
  EXPECT_EQ(sc.model(), "metastable-map");
  const sim::map_spec& m = sc.maps().at(0);
  EXPECT_EQ(m.load_values, (std::vector<double>{5, 9.5}));
  EXPECT_TRUE(m.trigger_is_duration);
  EXPECT_DOUBLE_EQ(m.low, 0.25);
  EXPECT_DOUBLE_EQ(m.resolution, 0.5);
  EXPECT_EQ(m.trigger_unit, "s");
  EXPECT_EQ(m.trigger_toml(1.5), "\"1.5s\"");
}

TEST(MetastableMapKeys, BadOnesAreRefusedWithOneLine) {
  const auto replace = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::string base = small_map();
  const std::vector<std::pair<std::string, std::string>> cases{
      {replace(base, "max_probes = 9", "max_probes = 9\nsurprise = 1"), "unknown map key"},
      {replace(base, "low = \"0.25s\"", "low = \"20s\""), "low < high"},
      {replace(base, "\"metastable-queue\"", "\"no-such\""), "no built-in scenario"},
      {replace(base, "\"metafor-retries\"", "\"nope\""), "has no such strategy"},
      {replace(base, "\"metastable-queue\"", "\"outage-tipping\""), "is a sweep"},
      {replace(base, "\"spike.duration\"", "\"workload.rate_per_s\""), "the same key"},
      {replace(base, "\"spike.duration\"", "\"../x\""), "empty part"},
      {replace(base, "\"spike.duration\"", "\"seed\""), "cannot be mapped"},
      {replace(base, "resolution = \"0.5s\"", "resolution = 0.5"), "must all be durations"},
      {replace(base, "\"spike.duration\"", "\"spike.bogus\""), "spike.bogus"},
      {base + "\n[[strategy]]\nname = \"x\"\n", "has no strategy of its own"},
      {"replications = 0\n" + base, "replications"},
      {"model = \"other\"\n" + base, "metastable map"},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = map_error_of(text);
    EXPECT_NE(got.find(want), std::string::npos) << "want '" << want << "', got: " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

TEST(MetastableMapKeys, AMapIsNotRunAsAScenario) {
  sim::scenario sc = load_small_map(small_map());
  EXPECT_THROW(sim::run_scenario(sc, {}), sim::scenario_error);
}

TEST(MetastableMapSearch, BracketsTheBoundaryAndIgnoresTheThreadCount) {
  sim::scenario sc = load_small_map(small_map());
  sim::run_options one;
  one.threads = 1;
  const report::scenario_result a = sim::run_map(sc, sim::builtin_scenarios(), one);
  sim::run_options two;
  two.threads = 2;
  const report::scenario_result b = sim::run_map(sc, sim::builtin_scenarios(), two);
  ASSERT_EQ(a.boundary.size(), 2u);
  ASSERT_EQ(a.maps.size(), 1u);
  EXPECT_EQ(a.maps[0].model, "metastable-queue");
  // lambda = 5: a short spike is survived, a 10 s one is not; the bracket is tight.
  const report::boundary_point& low = a.boundary[0];
  EXPECT_FALSE(low.always_down || low.never_down);
  EXPECT_LE(low.trigger_lo, low.trigger);
  EXPECT_LE(low.trigger, low.trigger_hi);
  EXPECT_GE(low.trigger_lo, 0.25);
  EXPECT_LE(low.trigger_hi, 10.0);
  EXPECT_LE(low.probes, 9u);
  EXPECT_EQ(low.replications, 2u);
  // lambda = 9.5: metafor's canonical point tips with no trigger at all.
  EXPECT_TRUE(a.boundary[1].always_down);
  EXPECT_EQ(a.boundary[1].trigger_hi, 0.25);
  std::ostringstream csv_a, csv_b;
  report::write_boundary_csv(a, csv_a);
  report::write_boundary_csv(b, csv_b);
  EXPECT_EQ(csv_a.str(), csv_b.str());
  EXPECT_EQ(csv_a.str().rfind("model,load,trigger,trigger_lo,trigger_hi,replications,", 0), 0u);
}

TEST(MetastableMapSearch, ASystemScenarioIsMappedAsItsDedicatedModelIs) {
  // smira's outage as a system (its pause an outage(action=pause)) against the dedicated model,
  // with the knobs of the dedicated model's keys: the same boundary, since the two runs agree.
  std::string text = R"(scenario = "system-map"
seed = 1
)";
  for (const char* mapped : {"outage-recovery", "system-outage-recovery"}) {
    text += std::string(R"([[map]]
scenario = ")") +
            mapped + R"("
strategy = "fixed"
set = ["server.limit=6", "server.k=3", "outage.start=\"35s\"", "run.duration=\"160s\""]
load = { key = "workload.clients", values = [150, 300] }
trigger = { key = "outage.duration", low = "1s", high = "25s", resolution = "2s" }
replications = 1
max_probes = 6
)";
  }
  sim::scenario sc = sim::scenario::load({"system-map.toml", text});
  const report::scenario_result r = sim::run_map(sc, sim::builtin_scenarios(), {});
  ASSERT_EQ(r.boundary.size(), 4u);
  EXPECT_EQ(r.maps.at(1).model, "system");
  for (std::size_t load = 0; load < 2; ++load) {
    const report::boundary_point& dedicated = r.boundary[load];
    const report::boundary_point& system = r.boundary[2 + load];
    EXPECT_EQ(system.trigger_lo, dedicated.trigger_lo) << load;
    EXPECT_EQ(system.trigger_hi, dedicated.trigger_hi) << load;
    EXPECT_EQ(system.always_down, dedicated.always_down) << load;
    EXPECT_EQ(system.never_down, dedicated.never_down) << load;
  }
  // The fixed retry survives a shorter pause at the higher load: a boundary, not a constant.
  EXPECT_LT(r.boundary[3].trigger, r.boundary[2].trigger);
}

// A series of 1 s buckets: `good` successes everywhere except the down seconds.
report::strategy_summary felt_series(std::size_t seconds, const std::vector<std::size_t>& down) {
  report::strategy_summary s;
  s.bucket_width = 1'000'000'000;
  s.seconds_per_unit = 1e-9;
  s.buckets.resize(seconds);
  for (auto& b : s.buckets) b.successes = 100;
  for (const std::size_t i : down) s.buckets.at(i).successes = 10;
  return s;
}

report::down_rule felt_rule_at(std::int64_t start_s, std::size_t seconds) {
  report::down_rule r;
  r.outage = {start_s * 1'000'000'000, (start_s + 1) * 1'000'000'000};
  r.end = static_cast<std::int64_t>(seconds) * 1'000'000'000;
  return r;  // 30 s baseline, 5 s hold, 90 %
}

TEST(FeltOutage, OneOutageOfLengthLFeelsLikeHalfOfIt) {
  std::vector<std::size_t> down;
  for (std::size_t i = 40; i < 52; ++i) down.push_back(i);  // 12 s
  const auto periods = report::down_periods(felt_series(100, down), felt_rule_at(40, 100));
  ASSERT_TRUE(periods.has_value());
  EXPECT_EQ(*periods, (std::vector<double>{12}));
  EXPECT_DOUBLE_EQ(report::felt_outage(*periods), 6.0);
}

TEST(FeltOutage, TwoUnequalOutagesWeighTheLongerMore) {
  std::vector<std::size_t> down;
  for (std::size_t i = 40; i < 42; ++i) down.push_back(i);  // 2 s
  for (std::size_t i = 60; i < 70; ++i) down.push_back(i);  // 10 s
  const auto periods = report::down_periods(felt_series(100, down), felt_rule_at(40, 100));
  ASSERT_TRUE(periods.has_value());
  EXPECT_EQ(*periods, (std::vector<double>{2, 10}));
  // (4 + 100) / (2 * 12)
  EXPECT_DOUBLE_EQ(report::felt_outage(*periods), 104.0 / 24.0);
}

TEST(FeltOutage, ShortRecoveriesDoNotSplitAnOutageAndNoBaselineIsNone) {
  // 3 good seconds (under the 5 s hold) inside one outage; a dip before the outage is ignored.
  const auto periods =
      report::down_periods(felt_series(100, {20, 40, 41, 42, 46, 47}), felt_rule_at(40, 100));
  ASSERT_TRUE(periods.has_value());
  EXPECT_EQ(*periods, (std::vector<double>{8}));
  // Still down at the run's end: cut there.
  EXPECT_EQ(*report::down_periods(felt_series(60, {50, 51, 52, 53, 54, 55, 56, 57, 58, 59}),
                                  felt_rule_at(40, 60)),
            (std::vector<double>{10}));
  EXPECT_EQ(report::felt_outage({}), 0.0);
  report::strategy_summary dead = felt_series(100, {});
  for (auto& b : dead.buckets) b.successes = 0;
  EXPECT_FALSE(report::down_periods(dead, felt_rule_at(40, 100)).has_value());
}

TEST(FeltOutage, IsAFieldOfEveryRunWithAnOutage) {
  const auto r = backoff::test::run_builtin("metastable-queue", {"run.duration=\"200s\""});
  for (const auto& s : r.strategies) {
    bool found = false;
    for (const auto& f : s.fields) {
      if (f.name == "felt_outage_s") {
        found = true;
        ASSERT_TRUE(f.value.has_value());
        EXPECT_GT(*f.value, 0.0);
      }
    }
    EXPECT_TRUE(found) << s.name;
  }
}

}  // namespace
