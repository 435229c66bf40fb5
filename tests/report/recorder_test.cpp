// SPDX-License-Identifier: Apache-2.0
// The recorder's outputs that are not the simulator's numbers: its clients.csv rows follow the
// one column list (report/clients_csv.hpp), and a driver that measures latencies itself (backoff
// load) gets its summary's percentiles from the histograms it adds, in their unit and precision.
#include "report/recorder.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "report/clients_csv.hpp"

namespace {

namespace report = backoff::report;

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  for (const char c : line) {
    if (c == ',') {
      out.emplace_back();
    } else if (c != '\n') {
      out.back() += c;
    }
  }
  return out;
}

TEST(RecorderClientsCsv, ARowHasClientsCsvsColumnsInTheirOrder) {
  std::ostringstream csv;
  report::recorder_options options;
  options.strategy = "EB";
  options.bucket = 10;
  options.seconds_per_unit = 1.0;
  report::recorder rec(options, &csv);
  rec.operation_started(12);
  rec.operation_done({.id = 7,
                      .first_attempt = 12,
                      .done = 40,
                      .attempts = 3,
                      .status = report::op_status::completed});
  const std::map<std::string_view, std::string> expected{
      {"strategy", "EB"}, {"id", "7"},         {"first_attempt_s", "12"}, {"done_s", "40"},
      {"attempts", "3"},  {"latency_s", "28"}, {"status", "completed"}};
  const std::vector<std::string> row = csv_fields(csv.str());
  ASSERT_EQ(row.size(), report::clients_csv_columns.size()) << csv.str();
  for (std::size_t i = 0; i < row.size(); ++i) {
    EXPECT_EQ(row[i], expected.at(report::clients_csv_columns[i]))
        << report::clients_csv_columns[i];
  }
}

TEST(RecorderLatency, ADriversHistogramsAreWhatTheSummaryReads) {
  report::recorder_options options;
  options.strategy = "load";
  options.latency.precision = report::hdr_precision::significant_digits(3);
  options.latency.highest = 3'600'000'000;
  options.latency.seconds_per_unit = 1e-6;
  options.latency.rule = report::quantile_rule::highest_equivalent;
  options.latency.from_operations = false;
  report::recorder rec(options, nullptr);
  report::hdr_histogram interval(3'600'000'000, report::hdr_precision::significant_digits(3));
  for (std::int64_t us = 1; us <= 5000; ++us) interval.record(us);
  for (std::uint64_t id = 0; id < 5000; ++id) {
    rec.operation_started(0);
    // Ignored for the histogram: the driver's intervals hold the latencies.
    rec.operation_done({id, 0, 7'000'000'000, 1, report::op_status::completed});
  }
  rec.add_latencies(interval);
  const report::strategy_summary s = rec.finish(8'000'000'000, 0);
  ASSERT_TRUE(s.latency_s);
  EXPECT_EQ(rec.latencies().count(), 5000u);
  EXPECT_DOUBLE_EQ(s.latency_s->p50, static_cast<double>(interval.value_at_quantile(0.5)) * 1e-6);
  EXPECT_DOUBLE_EQ(s.latency_s->p99, static_cast<double>(interval.value_at_quantile(0.99)) * 1e-6);
  EXPECT_DOUBLE_EQ(s.latency_s->max, static_cast<double>(interval.max()) * 1e-6);
}

}  // namespace
