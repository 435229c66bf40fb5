// SPDX-License-Identifier: Apache-2.0
// The report's charts per service (report/chart_choice.hpp, service_charts.cpp): two per service
// for the first eight, saying so when there are more; queue charts kept on disk past three
// services; file names distinct even for names that differ in case only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "report/chart_choice.hpp"

namespace service_charts_test {

namespace report = backoff::report;
namespace plotting = backoff::report::plotting;

report::scenario_result service_charts_run(const std::vector<std::string>& services) {
  report::strategy_summary s;
  s.name = "only";
  s.bucket_width = 1'000'000'000;
  s.seconds_per_unit = 1e-9;
  for (const std::string& name : services) {
    report::service_series series{name, std::vector<report::service_counts_bucket>(3)};
    series.buckets[1].attempts = 5;
    series.buckets[1].peak_queue = 2;
    s.services.push_back(series);
  }
  report::scenario_result r;
  r.scenario = "many";
  r.strategies.push_back(s);
  return r;
}

std::vector<const plotting::chart*> service_charts_of(const std::vector<plotting::chart>& all) {
  std::vector<const plotting::chart*> found;
  for (const auto& c : all) {
    if (c.name.rfind("service-", 0) == 0) found.push_back(&c);
  }
  return found;
}

TEST(ServiceCharts, TwoPerServiceForTheFirstEightAndTheCaptionSaysHowManyThereAre) {
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back("s" + std::to_string(i));
  const auto all = plotting::charts_of(service_charts_run(names), "/nonexistent");
  const auto found = service_charts_of(all);
  ASSERT_EQ(found.size(), 2 * plotting::max_charted_services);
  EXPECT_EQ(found[0]->name, "service-s0");
  EXPECT_EQ(found[1]->name, "service-s0-queue");
  EXPECT_EQ(found.back()->name, "service-s7-queue");
  EXPECT_NE(found[0]->caption.find("first 8 of 10 services"), std::string::npos)
      << found[0]->caption;
  for (const plotting::chart* c : found) {
    const bool queue = c->name.ends_with("-queue");
    EXPECT_EQ(c->embed, !queue) << c->name;  // past three services the queue charts stay on disk
  }
}

TEST(ServiceCharts, AFewServicesEmbedBothChartsUnderDistinctNames) {
  const auto all = plotting::charts_of(service_charts_run({"Db", "db"}), "/nonexistent");
  const auto found = service_charts_of(all);
  std::vector<std::string> got;
  for (const plotting::chart* c : found) {
    got.push_back(c->name);
    EXPECT_TRUE(c->embed) << c->name;
    EXPECT_EQ(c->caption.find("services.csv has every one"), std::string::npos);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"service-db", "service-db-queue", "service-db-2",
                                           "service-db-queue-2"}));
}

TEST(ServiceCharts, NoneWithoutServices) {
  report::scenario_result r = service_charts_run({});
  r.strategies.front().buckets.resize(3);
  r.strategies.front().buckets[1].attempts = 5;
  EXPECT_TRUE(service_charts_of(plotting::charts_of(r, "/nonexistent")).empty());
}

}  // namespace service_charts_test
