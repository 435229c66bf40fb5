// SPDX-License-Identifier: Apache-2.0
// A real run beside its simulation (report/twin_comparison.hpp, twin_charts.cpp): the rows of
// comparison.csv, their ratios and bounds, the agreement verdicts, and the overlaid charts.
#include "report/twin_comparison.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/chart_choice.hpp"

namespace twin_comparison_test {

namespace report = backoff::report;
namespace plotting = backoff::report::plotting;

report::strategy_summary strategy(const std::string& name, std::uint64_t operations,
                                  std::uint64_t completed, std::uint64_t attempts, double goodput,
                                  double amplification) {
  report::strategy_summary s;
  s.name = name;
  s.operations = operations;
  s.completed = completed;
  s.attempts = attempts;
  s.attempts_per_operation = static_cast<double>(attempts) / static_cast<double>(operations);
  s.goodput_per_s = goodput;
  s.bucket_width = 1'000'000'000;
  s.buckets.resize(2);
  s.buckets[0].successes = completed / 2;
  s.buckets[1].successes = completed - completed / 2;
  s.buckets[0].attempts = attempts;
  s.fields.push_back({"services.db.amplification", amplification});
  s.fields.push_back({"services.db.attempts", amplification * static_cast<double>(operations)});
  s.services.push_back({"db", std::vector<report::service_counts_bucket>(2)});
  s.services[0].buckets[0].attempts = attempts;
  return s;
}

report::scenario_result run_of(std::vector<report::strategy_summary> strategies,
                               bool outage = false) {
  report::scenario_result r;
  r.scenario = "twin";
  r.model = "system";
  r.outage = outage;
  r.strategies = std::move(strategies);
  return r;
}

const report::twin_row& row(const std::vector<report::twin_row>& rows, const std::string& strategy,
                            const std::string& metric, const std::string& service = "") {
  for (const auto& r : rows) {
    if (r.strategy == strategy && r.metric == metric && r.service == service) return r;
  }
  throw std::runtime_error("no row " + strategy + " " + service + " " + metric);
}

TEST(TwinComparison, RowsCarryBothFiguresTheirRatioAndTheBoundTheyAreHeldTo) {
  const auto simulated = run_of({strategy("a", 100, 90, 150, 9.0, 2.0)});
  const auto real = run_of({strategy("a", 100, 81, 180, 8.0, 2.6)});
  const auto rows = report::compare_twins(simulated, real);
  const auto& success = row(rows, "a", "success_rate");
  EXPECT_DOUBLE_EQ(*success.simulated, 0.9);
  EXPECT_DOUBLE_EQ(*success.real, 0.81);
  EXPECT_DOUBLE_EQ(*success.ratio(), 0.9);
  EXPECT_TRUE(success.agrees());  // within 15 %
  const auto& load = row(rows, "a", "load");
  EXPECT_DOUBLE_EQ(*load.ratio(), 1.2);
  EXPECT_FALSE(load.agrees());                            // 20 % apart
  EXPECT_TRUE(row(rows, "a", "goodput_per_s").agrees());  // 8 / 9: 11 % apart
  const auto& amplification = row(rows, "a", "amplification", "db");
  EXPECT_DOUBLE_EQ(*amplification.bound, 0.25);
  EXPECT_FALSE(amplification.agrees());                              // 30 % apart
  EXPECT_FALSE(row(rows, "a", "attempts", "db").bound.has_value());  // shown, not bounded
  EXPECT_FALSE(report::twins_agree(rows));
  const std::string table = report::agreement_table(rows);
  EXPECT_NE(table.find("2 of 4 within bounds"), std::string::npos) << table;
}

TEST(TwinComparison, ComparisonCsvHasTheContractsColumnsAndEmptyFieldsForWhatIsMissing) {
  auto sim_a = strategy("a, quoted", 100, 90, 150, 9.0, 2.0);
  sim_a.latency_s.reset();
  const auto rows = report::compare_twins(run_of({sim_a}),
                                          run_of({strategy("a, quoted", 100, 0, 150, 0.0, 2.0)}));
  std::ostringstream out;
  report::write_comparison_csv(rows, out);
  const std::string csv = out.str();
  EXPECT_EQ(csv.rfind("strategy,service,metric,simulated,real,ratio\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("\"a, quoted\",,success_rate,0.9,0,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"a, quoted\",,latency_s.p50,,,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"a, quoted\",db,amplification,2,2,1\n"), std::string::npos) << csv;
}

TEST(TwinComparison, RecoveryIsComparedAsAVerdictWhenTheScenarioHasAnOutage) {
  auto sim_fixed = strategy("fixed", 100, 50, 400, 5.0, 4.0);
  auto sim_exp = strategy("exponential", 100, 90, 110, 9.0, 1.1);
  sim_exp.recovery_s = 4.0;
  auto real_fixed = sim_fixed;
  auto real_exp = sim_exp;
  real_exp.recovery_s.reset();  // the real run never recovered
  const auto rows = report::compare_twins(run_of({sim_fixed, sim_exp}, true),
                                          run_of({real_fixed, real_exp}, true));
  EXPECT_TRUE(row(rows, "fixed", "recovered").agrees());  // never in both
  EXPECT_FALSE(row(rows, "exponential", "recovered").agrees());
  EXPECT_FALSE(row(rows, "exponential", "recovery_s").bound.has_value());
}

TEST(TwinCharts, EachStrategyHasItsRealAndSimulatedCurveOnOnePanel) {
  const auto simulated =
      run_of({strategy("a", 100, 90, 150, 9.0, 2.0), strategy("b", 100, 90, 150, 9.0, 2.0)});
  const auto real = run_of({strategy("b", 100, 80, 150, 8.0, 2.0)});  // b only: a did not run
  std::vector<plotting::chart> charts;
  plotting::twin_charts(real, simulated, charts);
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(charts[0].name, "twin-goodput");
  EXPECT_EQ(charts[1].name, "twin-attempts");
  EXPECT_EQ(charts[2].name, "twin-service-db");
  // One panel (b), two data blocks: real then simulated.
  EXPECT_NE(charts[0].body.find("plot DATA index 0 using 1:2 with steps lw 1.5 lt 1 title 'real', "
                                "'' index 1 using 1:2 with steps lw 1.5 lt 2 dt 2 title "
                                "'simulated'"),
            std::string::npos)
      << charts[0].body;
  EXPECT_EQ(charts[0].body.find("index 2"), std::string::npos);
  EXPECT_EQ(charts[0].data, "0 40\n1 40\n\n\n0 45\n1 45\n\n\n");
  const std::string html = plotting::twin_html(real, simulated);
  EXPECT_NE(html.find("<td>b</td><td>-</td><td>success_rate</td>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<td>a</td>"), std::string::npos);
}

}  // namespace twin_comparison_test
