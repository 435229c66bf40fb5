// SPDX-License-Identifier: Apache-2.0
// A strategy's fallback in the recorder: a failed operation whose outcome the fallback answers for
// is counted as answered ("fell_back" in clients.csv, fell_back_rate and answered_rate in the
// summary) and stays a failure in success_rate; without a fallback nothing is added.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "backoff/fallback.hpp"
#include "report/recorder.hpp"

namespace {

namespace report = backoff::report;
using backoff::outcome;

std::optional<double> recorder_fallback_field(const report::strategy_summary& s,
                                              std::string_view name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

bool recorder_fallback_has_field(const report::strategy_summary& s, std::string_view name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return true;
  }
  return false;
}

report::strategy_summary recorder_fallback_run(std::optional<backoff::fallback_outcomes> fallback,
                                               std::ostringstream& csv) {
  report::recorder_options options;
  options.strategy = "s";
  options.bucket = 10;
  options.seconds_per_unit = 1.0;
  options.fallback = fallback;
  report::recorder rec(options, &csv);
  const outcome ends[] = {outcome::succeeded, outcome::breaker_open, outcome::attempts_exhausted,
                          outcome::breaker_open, outcome::cancelled};
  std::uint64_t id = 0;
  for (const outcome why : ends) {
    rec.operation_started(1);
    rec.operation_done({.id = id++,
                        .first_attempt = 1,
                        .done = 5,
                        .attempts = 2,
                        .status = report::status_of(why),
                        .why = why});
  }
  rec.operation_started(2);
  rec.operation_done({.id = id,
                      .first_attempt = 2,
                      .done = 9,
                      .attempts = 1,
                      .status = report::op_status::unfinished});
  return rec.finish(10, 0);
}

TEST(RecorderFallback, CountsTheFailuresItAnswersForAndNoOthers) {
  std::ostringstream csv;
  const report::strategy_summary s =
      recorder_fallback_run(backoff::fallback_outcomes{outcome::breaker_open}, csv);
  EXPECT_EQ(s.operations, 6u);
  EXPECT_EQ(s.completed, 1u);
  EXPECT_EQ(s.gave_up, 4u);  // still failures: success_rate does not count a fallback
  EXPECT_DOUBLE_EQ(s.success_rate(), 1.0 / 6.0);
  EXPECT_EQ(recorder_fallback_field(s, report::fell_back_rate_field), 2.0 / 6.0);
  EXPECT_EQ(recorder_fallback_field(s, report::answered_rate_field), 3.0 / 6.0);
  const std::string rows = csv.str();
  EXPECT_NE(rows.find(",1,1,5,2,4,fell_back\n"), std::string::npos) << rows;
  EXPECT_NE(rows.find(",2,1,5,2,4,failed\n"), std::string::npos) << rows;
  EXPECT_NE(rows.find(",3,1,5,2,4,fell_back\n"), std::string::npos) << rows;
  EXPECT_NE(rows.find(",4,1,5,2,4,failed\n"), std::string::npos) << rows;  // a cancellation
}

TEST(RecorderFallback, TheDefaultSetAnswersEveryFailureButACancellation) {
  std::ostringstream csv;
  const report::strategy_summary s = recorder_fallback_run(backoff::fallback_outcomes{}, csv);
  EXPECT_EQ(recorder_fallback_field(s, report::fell_back_rate_field), 3.0 / 6.0);
  EXPECT_EQ(recorder_fallback_field(s, report::answered_rate_field), 4.0 / 6.0);
}

TEST(RecorderFallback, WithoutAFallbackNothingIsAdded) {
  std::ostringstream csv;
  const report::strategy_summary s = recorder_fallback_run(std::nullopt, csv);
  EXPECT_FALSE(recorder_fallback_has_field(s, report::fell_back_rate_field));
  EXPECT_FALSE(recorder_fallback_has_field(s, report::answered_rate_field));
  EXPECT_EQ(csv.str().find("fell_back"), std::string::npos);
}

}  // namespace
