// SPDX-License-Identifier: Apache-2.0
// services.csv (report/summary.hpp): a model's per-service series, handed to the recorder before
// finish(), come out padded to the run's last bucket, and are written one row per strategy,
// service and bucket with the bucket's start in seconds (ticks in tick models).
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "report/recorder.hpp"
#include "report/summary.hpp"

namespace services_csv_test {

namespace report = backoff::report;

report::service_counts_bucket services_csv_bucket(std::uint64_t attempts, std::int64_t queue) {
  report::service_counts_bucket b;
  b.arrivals = attempts / 2;
  b.attempts = attempts;
  b.completed = attempts - 1;
  b.rejected = 1;
  b.peak_in_flight = queue + 2;
  b.peak_queue = queue;
  return b;
}

TEST(ServicesCsv, FinishPadsEveryServiceToTheRunsLastBucket) {
  report::recorder_options options;
  options.strategy = "s";
  options.bucket = 10;
  options.seconds_per_unit = 1.0;
  report::recorder rec(options, nullptr);
  rec.attempt(3);
  rec.services({{"api", {services_csv_bucket(4, 1)}},
                {"db", {services_csv_bucket(2, 0), {}, services_csv_bucket(6, 3)}}});
  const report::strategy_summary s = rec.finish(45, 1);  // buckets 0..4
  ASSERT_EQ(s.buckets.size(), 5u);
  ASSERT_EQ(s.services.size(), 2u);
  EXPECT_EQ(s.services[0].service, "api");
  EXPECT_EQ(s.services[0].buckets.size(), 5u);
  EXPECT_EQ(s.services[0].buckets[0].attempts, 4u);
  EXPECT_EQ(s.services[0].buckets[4].attempts, 0u);
  EXPECT_EQ(s.services[1].buckets.size(), 5u);
  EXPECT_EQ(s.services[1].buckets[2].peak_queue, 3);
}

TEST(ServicesCsv, NoServicesWithoutAModelThatReportsThem) {
  report::recorder_options options;
  options.strategy = "s";
  options.bucket = 10;
  options.seconds_per_unit = 1.0;
  report::recorder rec(options, nullptr);
  rec.attempt(3);
  EXPECT_TRUE(rec.finish(20, 1).services.empty());
}

TEST(ServicesCsv, OneRowPerStrategyServiceAndBucketInSecondsOrTicks) {
  report::scenario_result r;
  report::strategy_summary a;
  a.name = "as, is";  // quoted as one field
  a.bucket_width = 500'000'000;
  a.seconds_per_unit = 1e-9;
  a.services = {{"api", {services_csv_bucket(4, 1), services_csv_bucket(2, 0)}},
                {"db", {services_csv_bucket(6, 3), {}}}};
  report::strategy_summary ticks;
  ticks.name = "t";
  ticks.bucket_width = 10;
  ticks.seconds_per_unit = 1.0;
  ticks.services = {{"api", {{}, services_csv_bucket(8, 2)}}};
  r.strategies = {a, ticks};
  std::ostringstream out;
  report::write_services_csv(r, out);
  EXPECT_EQ(out.str(),
            "strategy,service,t_s,arrivals,attempts,completed,rejected,failed,peak_in_flight,"
            "peak_queue\n"
            "\"as, is\",api,0,2,4,3,1,0,3,1\n"
            "\"as, is\",api,0.5,1,2,1,1,0,2,0\n"
            "\"as, is\",db,0,3,6,5,1,0,5,3\n"
            "\"as, is\",db,0.5,0,0,0,0,0,0,0\n"
            "t,api,0,0,0,0,0,0,0,0\n"
            "t,api,10,4,8,7,1,0,4,2\n");
}

}  // namespace services_csv_test
