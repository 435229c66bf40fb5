// SPDX-License-Identifier: Apache-2.0
// A run where no operation completed has no latency: summary.json says null, sweep.csv leaves the
// fields empty and the comparison table shows `-`, never a 0 that reads as "instant". A mean over
// replications is over the runs that have a latency, and says how many did (latency_runs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "report/result.hpp"
#include "report/summary.hpp"

namespace {

namespace report = backoff::report;

report::strategy_summary run(const std::string& name, std::uint64_t completed, double p50) {
  report::strategy_summary s;
  s.name = name;
  s.operations = 10;
  s.completed = completed;
  s.attempts = 20;
  s.attempts_per_operation = 2;
  if (completed > 0) s.latency_s = report::latency_summary{p50, p50, p50, p50, p50, p50, p50, p50};
  return s;
}

// Splits a CSV text into rows of fields (no quoting in these tests).
std::vector<std::vector<std::string>> rows_of(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream cells(line);
    while (std::getline(cells, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    rows.push_back(fields);
  }
  return rows;
}

std::string field(const std::vector<std::vector<std::string>>& rows, std::size_t row,
                  const std::string& name) {
  const auto& header = rows.at(0);
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return rows.at(row).at(i);
  }
  ADD_FAILURE() << "no column " << name;
  return {};
}

// The words of the table's row that starts with `name`.
std::vector<std::string> words_of_row(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + " ", 0) != 0) continue;
    std::vector<std::string> words;
    std::istringstream w(line);
    for (std::string word; w >> word;) words.push_back(word);
    return words;
  }
  return {};
}

TEST(NoLatency, APlainRunWithNothingCompletedHasNullPercentiles) {
  report::scenario_result r;
  r.scenario = "x";
  r.model = "m";
  r.strategies = {run("timed", 10, 0.25), run("none-done", 0, 0)};
  std::ostringstream json;
  report::write_summary_json(r, json);
  const auto doc = nlohmann::json::parse(json.str());
  EXPECT_DOUBLE_EQ(doc["strategies"][0]["latency_s"]["p50"].get<double>(), 0.25);
  for (const char* p : {"p50", "p75", "p90", "p95", "p99", "p999", "p9999", "max"}) {
    EXPECT_TRUE(doc["strategies"][1]["latency_s"].contains(p)) << p;
    EXPECT_TRUE(doc["strategies"][1]["latency_s"][p].is_null()) << p;
  }
  const std::string table = report::comparison_table(r);
  // Columns: strategy ops done failed attempts att/op makespan_s p50 p75 p95 p99 max goodput
  // peak.
  const auto none_done = words_of_row(table, "none-done");
  ASSERT_EQ(none_done.size(), 14u) << table;
  for (std::size_t i = 7; i <= 11; ++i) EXPECT_EQ(none_done[i], "-") << i << '\n' << table;
  const auto timed = words_of_row(table, "timed");
  ASSERT_EQ(timed.size(), 14u) << table;
  for (std::size_t i = 7; i <= 11; ++i) EXPECT_EQ(timed[i], "0.25") << i << '\n' << table;
}

TEST(NoLatency, SweepMeansAreOverTheRunsThatHaveALatency) {
  report::scenario_result r;
  r.scenario = "x";
  r.model = "m";
  r.sweep = true;
  r.replications = 3;
  r.sweep_keys = {"k"};
  report::point_result point;
  point.params.push_back({"k", report::sweep_value{"1", "1"}});
  // Two of three replications completed something (p50 1 and 3), and a cell where none did.
  point.strategies.push_back(
      {"some", {run("some", 5, 1), run("some", 0, 0), run("some", 5, 3)}, {1, 1, 1}});
  point.strategies.push_back(
      {"never", {run("never", 0, 0), run("never", 0, 0), run("never", 0, 0)}, {1, 1, 1}});
  r.points.push_back(point);

  std::ostringstream json;
  report::write_summary_json(r, json);
  const auto doc = nlohmann::json::parse(json.str());
  const auto& some = doc["points"][0]["strategies"][0];
  EXPECT_DOUBLE_EQ(some["latency_s"]["p50"].get<double>(), 2.0);  // not (1 + 0 + 3) / 3
  EXPECT_EQ(some["latency_runs"], 2);
  EXPECT_DOUBLE_EQ(some["completed"].get<double>(), 10.0 / 3);  // the others over all three
  const auto& never = doc["points"][0]["strategies"][1];
  EXPECT_TRUE(never["latency_s"]["p99"].is_null());
  EXPECT_TRUE(never["ci95"]["latency_s"]["p99"].is_null());
  EXPECT_EQ(never["latency_runs"], 0);

  std::ostringstream csv;
  report::write_sweep_csv(r, csv);
  const auto rows = rows_of(csv.str());
  ASSERT_EQ(rows.size(), 3u) << csv.str();
  EXPECT_EQ(field(rows, 1, "latency_s_p50"), "2");
  EXPECT_EQ(field(rows, 1, "latency_runs"), "2");
  EXPECT_EQ(field(rows, 2, "latency_s_p50"), "");
  EXPECT_EQ(field(rows, 2, "latency_s_p50_ci95"), "");
  EXPECT_EQ(field(rows, 2, "latency_runs"), "0");
  EXPECT_EQ(rows[1].size(), rows[0].size());
  EXPECT_EQ(rows[2].size(), rows[0].size());

  const std::string table = report::comparison_table(r);
  EXPECT_NE(table.find("2 (2/3)"), std::string::npos) << table;
  // Columns: k strategy ops done failed attempts att/op makespan_s p50 p75 p95 p99 max goodput
  // peak.
  std::istringstream in(table);
  bool seen = false;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> words;
    std::istringstream w(line);
    for (std::string word; w >> word;) words.push_back(word);
    if (words.size() < 2 || words[1] != "never") continue;
    seen = true;
    ASSERT_EQ(words.size(), 15u) << table;
    for (std::size_t i = 8; i <= 12; ++i) EXPECT_EQ(words[i], "-") << i << '\n' << table;
  }
  EXPECT_TRUE(seen) << table;
}

}  // namespace
