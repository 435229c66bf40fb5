// SPDX-License-Identifier: Apache-2.0
// The outage's figures both outage-amplification models report (report/outage_load.hpp): each
// phase's work over the base load, the peak over whole buckets only, and the share of operations
// ending in a phase that succeeded, on a series whose answers are known.
#include "report/outage_load.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace {

namespace report = backoff::report;

report::recorder_options options_of(report::time_units bucket, double seconds_per_unit) {
  report::recorder_options o;
  o.bucket = bucket;
  o.seconds_per_unit = seconds_per_unit;
  return o;
}

std::optional<double> field(const report::strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  ADD_FAILURE() << "no field " << name;
  return std::nullopt;
}

TEST(OutageLoad, EachPhaseIsItsWorkOverTheBaseLoadAndThePeakIsAWholeBucket) {
  // Units of 1 ms (seconds_per_unit 1e-3), a base of 100 a second: 1 unit of work per 10 ms is
  // a load of 1. Warm-up to 100, outage [200, 300), run to 450 with 40 ms buckets (the last,
  // [440, 450), partial).
  report::outage_load tally({.warmup = 100,
                             .outage = {200, 300},
                             .end = 450,
                             .bucket = 40,
                             .base_per_s = 100,
                             .seconds_per_unit = 1e-3});
  for (int t = 0; t < 200; t += 10) tally.work(t);    // load 1 before the outage
  for (int t = 200; t < 300; t += 5) tally.work(t);   // 2 during it
  for (int t = 300; t < 440; t += 10) tally.work(t);  // 1 after it
  for (int t = 440; t < 450; t += 1) tally.work(t);   // 10 in the partial last bucket
  tally.work(460);                                    // past the end: nowhere
  tally.ended(250, false);
  tally.ended(260, true);
  tally.ended(270, false);
  tally.ended(350, true);
  tally.ended(500, false);  // past the end
  report::recorder rec(options_of(40, 1e-3), nullptr);
  tally.report(rec);
  const report::strategy_summary s = rec.finish(500, 0);
  EXPECT_DOUBLE_EQ(*field(s, "load_amplification.pre"), 1.0);
  EXPECT_DOUBLE_EQ(*field(s, "load_amplification.outage_mean"), 2.0);
  // After: 14 in [300, 440) and 10 in [440, 450), over 150 ms at 100 a second.
  EXPECT_DOUBLE_EQ(*field(s, "load_amplification.after"), 24.0 / 15.0);
  // Buckets [200, 240) and [240, 280) hold 8 each: 2; the partial bucket's 10 are left out.
  EXPECT_DOUBLE_EQ(*field(s, "load_amplification.peak"), 2.0);
  EXPECT_DOUBLE_EQ(*field(s, "success_by_phase.outage"), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(*field(s, "success_by_phase.after"), 1.0);
}

TEST(OutageLoad, APhaseWithNothingInItIsNull) {
  report::outage_load tally(
      {.warmup = 0, .outage = {100, 200}, .end = 200, .bucket = 50, .base_per_s = 10});
  tally.work(50);
  report::recorder rec(options_of(50, 1e-9), nullptr);
  tally.report(rec);
  const report::strategy_summary s = rec.finish(200, 0);
  EXPECT_FALSE(field(s, "load_amplification.after").has_value());  // no time after the outage
  EXPECT_FALSE(field(s, "success_by_phase.outage").has_value());   // no operation ended there
}

}  // namespace
