// SPDX-License-Identifier: Apache-2.0
// The JSON mappings of the result types (report/result_json.hpp): summary.json's document opens
// with its schema and shows the figures as SPEC 6.2 does, and a shard's record of a run gives back
// every figure exactly, refusing a field of the wrong type or range by its name.
#include "report/result_json.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "report/result.hpp"
#include "report/summary.hpp"

namespace {

namespace report = backoff::report;

report::strategy_summary figures_of_a_run() {
  report::strategy_summary s;
  s.name = "exponential-full";
  s.operations = 2000;
  s.completed = 1990;
  s.gave_up = 7;
  s.unfinished = 3;
  s.attempts = 19170;
  s.attempts_per_operation = 9.585;
  s.makespan_s = 46.000000000000014;  // a double that only round-trips with every digit
  s.latency_s = report::latency_summary{0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.55, 0.6};
  s.goodput_per_s = 43.26086956521739;
  s.peak_load = 50;
  s.mean_load = 12.5;
  s.recovery_s = 7.25;
  s.events = 123456;
  s.has_window = true;
  s.seconds_per_unit = 1e-9;
  s.bucket_width = 1'000'000'000;
  s.fields = {{"load_amplification.peak", 3.5}, {"deepest_calls_per_request", std::nullopt}};
  return s;
}

TEST(ResultJson, SummaryDocumentOpensWithItsSchema) {
  report::scenario_result r;
  r.scenario = "one-client-burst";
  r.model = "one-client-burst";
  r.seed = 1;
  r.strategies.push_back(figures_of_a_run());
  const nlohmann::ordered_json doc = r;
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(doc.begin().key(), "schema");
  EXPECT_EQ(doc["schema"], report::summary_schema);
  EXPECT_EQ(doc["schema"], 1);
  // The file is the document as it maps: no second way of writing it.
  std::ostringstream file;
  report::write_summary_json(r, file);
  EXPECT_EQ(file.str(), report::json_text(doc) + "\n");
}

TEST(ResultJson, StrategyEntryShowsDerivedFiguresAndNestsModelFields) {
  const nlohmann::ordered_json j = figures_of_a_run();
  EXPECT_EQ(j["failed"], 10);
  EXPECT_DOUBLE_EQ(j["success_rate"].get<double>(), 0.995);
  EXPECT_EQ(j["load"], j["attempts_per_operation"]);
  EXPECT_EQ(j["latency_s"]["p95"], 0.35);
  EXPECT_EQ(j["load_amplification"]["peak"], 3.5);
  EXPECT_TRUE(j["deepest_calls_per_request"].is_null());

  report::strategy_summary nothing_completed = figures_of_a_run();
  nothing_completed.latency_s.reset();
  const nlohmann::ordered_json none = nothing_completed;
  ASSERT_EQ(none["latency_s"].size(), 8u);
  for (const auto& [name, value] : none["latency_s"].items()) EXPECT_TRUE(value.is_null()) << name;
}

TEST(ResultJson, ShardRecordGivesBackEveryFigureExactly) {
  const report::strategy_summary s = figures_of_a_run();
  const nlohmann::json record = s;
  const auto back = nlohmann::json::parse(record.dump()).get<report::strategy_summary>();
  // Through text and back, number for number: summary.json's entry is the same.
  report::strategy_summary named = back;
  named.name = s.name;
  EXPECT_EQ(nlohmann::ordered_json(named).dump(), nlohmann::ordered_json(s).dump());
  EXPECT_EQ(back.has_window, s.has_window);
  EXPECT_EQ(back.seconds_per_unit, s.seconds_per_unit);
  EXPECT_EQ(back.bucket_width, s.bucket_width);
  EXPECT_EQ(back.makespan_s, s.makespan_s);
}

TEST(ResultJson, ShardRecordRefusesAFieldByItsName) {
  // As the merge reads it: from text (where a count of 0 or more is an unsigned number).
  const nlohmann::json good = nlohmann::json::parse(nlohmann::json(figures_of_a_run()).dump());
  const auto refused = [&](const char* key, nlohmann::json value) {
    nlohmann::json bad = good;
    bad[key] = std::move(value);
    try {
      (void)bad.get<report::strategy_summary>();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused("operations", -1), "operations: expected a count");
  EXPECT_EQ(refused("makespan_s", -0.5), "makespan_s: expected a finite number >= 0");
  EXPECT_EQ(refused("has_window", 1), "has_window: expected a boolean");
  EXPECT_EQ(refused("peak_load", std::numeric_limits<std::uint64_t>::max()),
            "peak_load: out of range");
  EXPECT_EQ(refused("latency_s", nlohmann::json::array({1, 2})),
            "latency_s: expected 8 numbers or null");
}

TEST(ResultJson, SweptValuesAreTypedInTheSummaryAndExactInShards) {
  const report::sweep_value integer{"25", "25", report::sweep_value::kind::integer};
  const report::sweep_value text{"\"10s\"", "10s", report::sweep_value::kind::string};
  EXPECT_EQ(nlohmann::ordered_json(integer), 25);
  EXPECT_EQ(nlohmann::ordered_json(text), "10s");
  const auto back = nlohmann::json(text).get<report::sweep_value>();
  EXPECT_EQ(back.toml, text.toml);
  EXPECT_EQ(back.text, text.text);
  EXPECT_EQ(back.type, text.type);
  nlohmann::json forged = integer;
  forged["text"] = "2.5";
  EXPECT_THROW((void)forged.get<report::sweep_value>(), std::invalid_argument);
}

}  // namespace
