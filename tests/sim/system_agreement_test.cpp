// SPDX-License-Identifier: Apache-2.0
// The papers as systems: each built-in system-* scenario against the dedicated model it
// restates (docs/RESULTS.md, "The papers as systems"), strategy by strategy, within the bounds
// the two must share: success rate within 0.03; load, attempts per operation and the tails
// within 10 %. Different random streams, so the bounds carry sampling noise as well: runs are
// long enough (30 000 operations) that the noise is a small part of them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "sim/run/runner.hpp"

namespace system_agreement_test {

namespace report = backoff::report;
using backoff::test::by_name;
using backoff::test::run_builtin;

void expect_agreement(const std::string& dedicated, const std::string& system,
                      const std::vector<std::string>& sets) {
  const auto a = by_name(run_builtin(dedicated, sets));
  const auto b = by_name(run_builtin(system, sets));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, d] : a) {
    ASSERT_TRUE(b.contains(name)) << system << " has no strategy " << name;
    const report::strategy_summary& s = b.at(name);
    const std::string where = system + " " + name;
    EXPECT_NEAR(s.success_rate(), d.success_rate(), 0.03) << where;
    EXPECT_NEAR(s.attempts_per_operation, d.attempts_per_operation, 0.1 * d.attempts_per_operation)
        << where;
    ASSERT_TRUE(d.latency_s && s.latency_s) << where;
    EXPECT_NEAR(s.latency_s->p95, d.latency_s->p95, 0.1 * d.latency_s->p95) << where;
    EXPECT_NEAR(s.latency_s->p99, d.latency_s->p99, 0.1 * d.latency_s->p99) << where;
  }
}

TEST(SystemAgreement, RetryFailureRate) {
  for (const char* rate : {"failure_rate=0.01", "failure_rate=0.2", "failure_rate=0.5"}) {
    expect_agreement("retry-failure-rate", "system-retry-failure-rate",
                     {rate, "replications=1", "run.duration=\"30s\""});
  }
}

// Seed 004 as a system (a concurrency curve with a tick, a pause, users who think first): the
// fixed retry keeps the server down in both, exponential backoff recovers in both, within 25 %
// of the same time. Also with a shorter pause, through the dedicated model's keys as knobs.
TEST(SystemAgreement, OutageRecovery) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{},
        std::vector<std::string>{"outage.duration=\"4s\"", "workload.clients=800"}}) {
    expect_agreement("outage-recovery", "system-outage-recovery", sets);
    const auto a = by_name(run_builtin("outage-recovery", sets));
    const auto b = by_name(run_builtin("system-outage-recovery", sets));
    for (const auto& [name, d] : a) {
      const report::strategy_summary& s = b.at(name);
      ASSERT_EQ(s.recovery_s.has_value(), d.recovery_s.has_value()) << name;
      if (d.recovery_s) {
        EXPECT_NEAR(*s.recovery_s, *d.recovery_s, 0.25 * *d.recovery_s) << name;
      }
      EXPECT_NEAR(static_cast<double>(s.peak_load), static_cast<double>(d.peak_load),
                  0.1 * static_cast<double>(d.peak_load))
          << name;
    }
  }
  // At the defaults, what the article shows: fixed never comes back, exponential does.
  const auto b = by_name(run_builtin("system-outage-recovery"));
  EXPECT_FALSE(b.at("fixed").recovery_s.has_value());
  EXPECT_TRUE(b.at("exponential").recovery_s.has_value());
}

}  // namespace system_agreement_test
