// SPDX-License-Identifier: Apache-2.0
// A system run's per-service outputs (docs/SYSTEMS.md): services.csv beside timeseries.csv, whose
// per-service sums are the services.NAME fields of summary.json; the report's charts and table
// per service; and none of it for other models or for sweeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report/csv.hpp"
#include "report/plots.hpp"
#include "report/summary.hpp"
#include "scratch.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace system_outputs_test {

namespace fs = std::filesystem;
namespace sim = backoff::sim;
namespace report = backoff::report;

// Two tiers, the lower one small enough to shed: every column of services.csv has something.
const std::string outputs_system = R"toml(scenario = "tiers"
model = "system"
seed = 7

[run]
duration = "6s"

[service.api]
workers = 16
queue = 50
service_time = "exponential(mean=2ms)"
calls = [{ to = "db", edge = "db" }]

[service.db]
workers = 2
queue = 4
service_time = "exponential(mean=8ms)"

[[clients]]
to = "api"
arrivals = "poisson(rate=300)"
edge = "front"

[edge.front]
policy = "exponential(initial=10ms, factor=2, max=1s, jitter=full)"
max_attempts = 3

[edge.db]
policy = "constant(initial=5ms)"
max_attempts = 2

[[strategy]]
name = "as-is"

[[strategy]]
name = "budgeted"
edge.front.budget = "token-bucket(max=10, ratio=0.1)"
)toml";

const std::string outputs_burst = R"toml(scenario = "small-burst"
model = "one-client-burst"
seed = 3
[workload]
operations = 100
rate_per_s = 1000
[server]
max_busy = 20
[[strategy]]
name = "full"
policy = "exponential(initial=50ms, factor=2, max=30s, jitter=full)"
)toml";

report::scenario_result outputs_run(const std::string& text, const fs::path& dir) {
  sim::scenario sc = sim::scenario::load({"test.toml", text});
  sim::run_options options;
  options.out = dir;
  options.threads = 1;
  return sim::run_scenario(sc, options);
}

std::vector<std::vector<std::string>> outputs_csv(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> fields;
  while (report::csv_read_record(in, fields)) records.push_back(fields);
  return records;
}

double outputs_field(const report::strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name && f.value) return *f.value;
  }
  ADD_FAILURE() << s.name << ": no field " << name;
  return -1;
}

bool outputs_has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(SystemOutputs, ServicesCsvHasEveryBucketAndSumsToTheServicesFields) {
  const backoff::test::test_scratch tiers_dir("sim");
  const report::scenario_result tiers = outputs_run(outputs_system, tiers_dir.dir());
  ASSERT_EQ(tiers.strategies.size(), 2u);
  const auto service_rows = outputs_csv(tiers_dir.dir() / "services.csv");
  ASSERT_FALSE(service_rows.empty());
  std::string header_line;
  for (const auto& field : service_rows.front()) {
    header_line += (header_line.empty() ? "" : ",") + field;
  }
  EXPECT_EQ(header_line, report::services_csv_header);
  // Strategies in run order, services in file order, buckets from 0 (one second each) to the
  // run's last: as many as timeseries.csv has for the strategy.
  const std::vector<std::string> header_fields = service_rows.front();
  const auto column_at = [&](const std::string& column_name) {
    return static_cast<std::size_t>(
        std::find(header_fields.begin(), header_fields.end(), column_name) - header_fields.begin());
  };
  std::size_t row_at = 1;
  for (const auto& strategy : tiers.strategies) {
    for (const std::string service_name : {"api", "db"}) {
      std::map<std::string, double> sums_of;
      for (std::size_t bucket_index = 0; bucket_index < strategy.buckets.size();
           ++bucket_index, ++row_at) {
        ASSERT_LT(row_at, service_rows.size());
        const auto& service_row = service_rows[row_at];
        ASSERT_EQ(service_row.size(), header_fields.size());
        EXPECT_EQ(service_row[column_at("strategy")], strategy.name);
        EXPECT_EQ(service_row[column_at("service")], service_name);
        EXPECT_EQ(std::stod(service_row[column_at("t_s")]), static_cast<double>(bucket_index));
        for (const std::string counted :
             {"arrivals", "attempts", "completed", "rejected", "failed"}) {
          sums_of[counted] += std::stod(service_row[column_at(counted)]);
        }
        EXPECT_LE(std::stod(service_row[column_at("peak_queue")]),
                  std::stod(service_row[column_at("peak_in_flight")]));
      }
      for (const auto& [counted, total] : sums_of) {
        EXPECT_EQ(total, outputs_field(strategy, "services." + service_name + "." + counted))
            << strategy.name << " " << service_name << " " << counted;
      }
    }
  }
  EXPECT_EQ(row_at, service_rows.size());
  // The scenario sheds at db, and retries reach it more than once per operation.
  EXPECT_GT(outputs_field(tiers.strategies.front(), "services.db.rejected"), 0);
  EXPECT_GT(outputs_field(tiers.strategies.front(), "services.db.attempts"),
            outputs_field(tiers.strategies.front(), "services.db.arrivals"));
}

TEST(SystemOutputs, OtherModelsAndSweepsWriteNoServicesCsv) {
  const backoff::test::test_scratch burst_dir("sim", "burst");
  const report::scenario_result burst_result = outputs_run(outputs_burst, burst_dir.dir());
  EXPECT_TRUE(fs::exists(burst_dir.dir() / "timeseries.csv"));
  EXPECT_FALSE(fs::exists(burst_dir.dir() / "services.csv"));
  EXPECT_TRUE(burst_result.strategies.at(0).services.empty());

  const backoff::test::test_scratch sweep_dir("sim", "sweep");
  const report::scenario_result sweep_result =
      outputs_run(outputs_system + "\n[sweep]\nservice.db.workers = [2, 4]\n", sweep_dir.dir());
  ASSERT_EQ(sweep_result.points.size(), 2u);
  EXPECT_TRUE(fs::exists(sweep_dir.dir() / "sweep.csv"));
  EXPECT_FALSE(fs::exists(sweep_dir.dir() / "services.csv"));
  for (const auto& point : sweep_result.points) {
    for (const auto& one_cell : point.strategies) {
      for (const auto& one_run : one_cell.runs) {
        EXPECT_TRUE(one_run.services.empty()) << one_cell.name;
        // The totals still flow through the fields.
        EXPECT_GT(outputs_field(one_run, "services.db.attempts"), 0) << one_cell.name;
      }
    }
  }
}

TEST(SystemOutputs, TheReportHasChartsAndATablePerServiceForASystemRunOnly) {
  const backoff::test::test_scratch system_dir("sim", "system");
  const report::scenario_result tiers = outputs_run(outputs_system, system_dir.dir());
  const auto tiers_charts = report::write_plots(tiers, system_dir.dir());
  for (const std::string chart_name :
       {"service-api", "service-api-queue", "service-db", "service-db-queue"}) {
    EXPECT_TRUE(outputs_has(tiers_charts, chart_name)) << chart_name;
    EXPECT_TRUE(fs::exists(system_dir.dir() / (chart_name + ".svg"))) << chart_name;
  }
  const std::string report_html = backoff::test::slurp(system_dir.dir() / "report.html");
  EXPECT_NE(report_html.find("<h2 id=\"services\">"), std::string::npos);
  EXPECT_NE(report_html.find("<table class=\"ranking\" id=\"services-2\">"), std::string::npos);
  EXPECT_NE(report_html.find("<figure id=\"service-db-queue\">"), std::string::npos);

  const backoff::test::test_scratch burst_dir("sim", "burst");
  const report::scenario_result burst_result = outputs_run(outputs_burst, burst_dir.dir());
  const auto burst_charts = report::write_plots(burst_result, burst_dir.dir());
  for (const auto& chart_name : burst_charts) {
    EXPECT_NE(chart_name.rfind("service-", 0), 0u) << chart_name;
  }
  EXPECT_EQ(backoff::test::slurp(burst_dir.dir() / "report.html").find("id=\"services\""),
            std::string::npos);
}

}  // namespace system_outputs_test
