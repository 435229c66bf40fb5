// SPDX-License-Identifier: Apache-2.0
// Sweeps (SPEC 2.4, 6.2): [sweep] axes and replications as users write them, the grid they make,
// outputs that do not depend on the thread count, and confidence intervals that are right.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
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
using backoff::test::on_threads;

const std::string head = R"toml(scenario = "s"
model = "one-client-burst"
)toml";

const std::string tail = R"toml([workload]
rate_per_s = 1000
[[strategy]]
name = "full"
policy = "exponential(initial=50ms, factor=2, max=30s, jitter=full)"
[[strategy]]
name = "none"
policy = "exponential(initial=50ms, factor=2, max=30s, jitter=none)"
)toml";

sim::scenario load(const std::string& extra, const std::vector<std::string>& sets = {}) {
  return sim::scenario::load({"s.toml", head + extra + tail}, sets);
}

std::vector<std::string> point_texts(const sim::scenario& sc) {
  std::vector<std::string> out;
  for (const auto& p : sc.points()) {
    std::string text;
    for (const auto& [axis, value] : p.params) {
      text += (text.empty() ? "" : " ") + axis->key + "=" + value->text;
    }
    out.push_back(text);
  }
  return out;
}

std::string sweep_error_of(const std::string& extra, const std::vector<std::string>& sets = {}) {
  try {
    sim::scenario sc = load(extra, sets);
    sim::check_scenario(sc);
    return "";
  } catch (const sim::scenario_error& e) {
    return e.what();
  }
}

TEST(SweepAxes, ListsRangesAndNestedKeysMakeAGridInFileOrder) {
  const auto sc = load(R"toml(replications = 2
[sweep]
workload.operations = [10, 20]
server.connect = { start = "50ms", stop = "150ms", step = "50ms" }
)toml");
  EXPECT_TRUE(sc.is_sweep());
  EXPECT_EQ(sc.replications(), 2U);
  EXPECT_EQ(point_texts(sc),
            (std::vector<std::string>{"workload.operations=10 server.connect=50ms",
                                      "workload.operations=10 server.connect=100ms",
                                      "workload.operations=10 server.connect=150ms",
                                      "workload.operations=20 server.connect=50ms",
                                      "workload.operations=20 server.connect=100ms",
                                      "workload.operations=20 server.connect=150ms"}));
}

TEST(SweepAxes, NumericRangesIncludeTheStopWhenOnTheGrid) {
  const auto ints = load("[sweep]\nworkload.operations = { start = 10, stop = 40, step = 15 }\n");
  EXPECT_EQ(point_texts(ints),
            (std::vector<std::string>{"workload.operations=10", "workload.operations=25",
                                      "workload.operations=40"}));
  const auto reals =
      load("[sweep]\nworkload.rate_per_s = { start = 0.1, stop = 0.3, step = 0.1 }\n");
  EXPECT_EQ(point_texts(reals).size(), 3U);  // 0.1 + 2 * 0.1 rounds to 0.30000000000000004
}

TEST(SweepAxes, ASetOfASweptKeyPinsIt) {
  const auto sc = load("[sweep]\nworkload.operations = [10, 20]\n", {"workload.operations=30"});
  EXPECT_FALSE(sc.is_sweep());
  EXPECT_EQ(point_texts(sc), (std::vector<std::string>{""}));
}

TEST(SweepAxes, APointIsAPlainRunOfThatValue) {
  auto sc = load("replications = 3\n[sweep]\nworkload.operations = [10, 20]\n");
  const auto points = sc.points();
  sim::scenario at = sc.at(points[1]);
  EXPECT_FALSE(at.is_sweep());
  EXPECT_EQ(at.config().integer("workload.operations", 0, 0, 100), 20);
}

struct bad_sweep {
  std::string extra;
  std::string expected;
};

class SweepRejects : public testing::TestWithParam<bad_sweep> {};

TEST_P(SweepRejects, WithOneLineNamingWhere) {
  const std::string message = sweep_error_of(GetParam().extra);
  ASSERT_FALSE(message.empty()) << "accepted: " << GetParam().extra;
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    BadSweeps, SweepRejects,
    testing::Values(
        bad_sweep{"[sweep]\nworkload.operations = []\n",
                  "s.toml:4:10: sweep.workload.operations: the list is empty"},
        bad_sweep{"[sweep]\nworkload.operations = 10\n",
                  "sweep.workload.operations: expected a list of values or { start, stop, step }"},
        bad_sweep{"[sweep]\nworkload.operations = [[1], [2]]\n",
                  "values must be integers, numbers, strings or booleans, found an array"},
        bad_sweep{"[sweep]\nworkload.operations = { start = 1, stop = 5 }\n",
                  "a range needs start, stop and step"},
        bad_sweep{"[sweep]\nworkload.operations = { start = 1, stop = 5, step = 0 }\n",
                  "step must be greater than 0"},
        bad_sweep{"[sweep]\nworkload.operations = { start = 5, stop = 1, step = 1 }\n",
                  "stop must not be less than start"},
        bad_sweep{"[sweep]\nworkload.operations = { start = 1, stop = 5, stp = 1 }\n",
                  "unknown range key 'stp'"},
        bad_sweep{"[sweep]\nserver.connect = { start = \"1s\", stop = 5, step = \"1s\" }\n",
                  "must all be durations (strings) or all numbers"},
        bad_sweep{"[sweep]\nserver.connect = { start = \"1x\", stop = \"5s\", step = \"1s\" }\n",
                  "sweep.server.connect: bad duration"},
        bad_sweep{"[sweep]\nworkload.operations = { start = 1, stop = 1e9, step = 1 }\n",
                  "more than 100000 values"},
        bad_sweep{"[sweep]\nseed = [1, 2]\n", "sweep.seed: cannot be swept"},
        bad_sweep{"sweep = 3\n", "sweep: expected a table"},
        bad_sweep{"replications = 0\n", "replications: 0 is out of range"},
        // A bad value is found before anything runs, and named by the sweep entry that set it.
        bad_sweep{"[sweep]\nworkload.operations = [10, 0]\n",
                  "s.toml:4:10 (sweep workload.operations=0): workload.operations: 0 is out of "
                  "range"},
        bad_sweep{"[sweep]\nworkload.operatons = [10]\n", "unknown key 'workload.operatons'"}));

std::string without_wall_time(const report::scenario_result& r) {
  std::ostringstream text;
  report::write_summary_json(r, text);
  auto doc = nlohmann::json::parse(text.str());
  doc["run"].erase("wall_s");
  doc["run"].erase("events_per_s");
  return doc.dump();
}

const std::string grid = R"toml(replications = 4
[sweep]
workload.operations = [50, 100, 150]
)toml";

TEST(SweepRuns, GiveTheSameOutputsWhateverTheThreadCount) {
  auto a = load(grid);
  auto b = load(grid);
  const auto one = sim::run_scenario(a, on_threads(1));
  const auto three = sim::run_scenario(b, on_threads(3));
  EXPECT_EQ(without_wall_time(one), without_wall_time(three));
  std::ostringstream csv_one, csv_three;
  report::write_sweep_csv(one, csv_one);
  report::write_sweep_csv(three, csv_three);
  EXPECT_EQ(csv_one.str(), csv_three.str());
}

TEST(SweepRuns, ReplicationZeroIsThePlainRunOfThePoint) {
  auto sweep = load(grid);
  const auto r = sim::run_scenario(sweep, {});
  auto plain = load("", {"workload.operations=100"});
  const auto p = sim::run_scenario(plain, {});
  ASSERT_EQ(r.points.size(), 3U);
  EXPECT_EQ(r.points[1].strategies[0].runs[0].attempts, p.strategies[0].attempts);
  EXPECT_EQ(r.points[1].strategies[0].runs[0].makespan_s, p.strategies[0].makespan_s);
  // The other replications use other seeds: jittered attempts differ.
  EXPECT_NE(r.points[1].strategies[0].runs[1].attempts, p.strategies[0].attempts);
}

TEST(SweepRuns, SummaryJsonHasPointsWithMeansAndConfidenceIntervals) {
  auto sc = load(grid);
  const auto r = sim::run_scenario(sc, {});
  std::ostringstream text;
  report::write_summary_json(r, text);
  const auto doc = nlohmann::json::parse(text.str());
  EXPECT_FALSE(doc.contains("strategies"));
  ASSERT_EQ(doc["points"].size(), 3U);
  const auto& point = doc["points"][2];
  EXPECT_EQ(point["params"]["workload.operations"], 150);
  const auto& full = point["strategies"][0];
  EXPECT_EQ(full["name"], "full");
  EXPECT_EQ(full["replications"], 4);
  std::vector<double> attempts;
  for (const auto& run : r.points[2].strategies[0].runs) {
    attempts.push_back(static_cast<double>(run.attempts));
  }
  const auto expected = report::mean_and_ci95(attempts);
  EXPECT_DOUBLE_EQ(full["attempts"].get<double>(), expected.mean);
  EXPECT_DOUBLE_EQ(full["ci95"]["attempts"].get<double>(), expected.ci95);
  EXPECT_GT(expected.ci95, 0);
  EXPECT_EQ(full["ci95"]["operations"], 0.0);  // every replication has 150
  EXPECT_TRUE(full["ci95"].contains("latency_s"));
}

TEST(SweepRuns, SweepCsvHasOneRowPerPointAndStrategy) {
  auto sc = load(grid);
  const auto r = sim::run_scenario(sc, {});
  std::ostringstream csv;
  report::write_sweep_csv(r, csv);
  std::istringstream lines(csv.str());
  std::string header, row;
  std::getline(lines, header);
  EXPECT_EQ(
      header.rfind("workload.operations,strategy,replications,operations,operations_ci95,", 0), 0U)
      << header;
  int rows = 0;
  while (std::getline(lines, row)) {
    ++rows;
    EXPECT_EQ(std::count(row.begin(), row.end(), ','),
              std::count(header.begin(), header.end(), ','))
        << row;
  }
  EXPECT_EQ(rows, 6);
}

TEST(ConfidenceInterval, UsesStudentsT) {
  // 1..5: mean 3, sd sqrt(2.5); t(0.975, 4) = 2.776445.
  const auto v = report::mean_and_ci95({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(v.mean, 3.0);
  EXPECT_NEAR(v.ci95, 2.776445 * std::sqrt(2.5) / std::sqrt(5.0), 1e-6);
  EXPECT_EQ(report::mean_and_ci95({7}).ci95, 0.0);
  EXPECT_EQ(report::mean_and_ci95({0.1, 0.1, 0.1}).ci95, 0.0);
}

// Checking a sweep is linear in its points: a point no longer parses the file and expands every
// axis again (30,000 points took minutes that way: 6,000 took 12.6 s). Wall clock, plain build.
TEST(SweepScaleWallClock, ALongRangeIsCheckedInLinearTime) {
  sim::scenario sc = load("[sweep]\nworkload.operations = { start = 1, stop = 30000, step = 1 }\n");
  ASSERT_EQ(sc.points().size(), 30000u);
  const auto start = std::chrono::steady_clock::now();
  sim::check_scenario(sc);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took.count(), 30.0);
  const auto points = sc.points();
  sim::scenario last = sc.at(points.back());
  EXPECT_EQ(last.config().integer("workload.operations", 0, 0, 100000), 30000);
  EXPECT_FALSE(last.is_sweep());
}

}  // namespace
