// SPDX-License-Identifier: Apache-2.0
// The papers as systems: each built-in system-* scenario against the dedicated model it
// restates (docs/RESULTS.md, "The papers as systems"), strategy by strategy, within the bounds
// the two must share: success rate within 0.03; load, attempts per operation and the tails
// within 10 %. Different random streams, so the bounds carry sampling noise as well: runs are
// long enough (30 000 operations) that the noise is a small part of them. Isaev's outage adds
// its own figures (load_amplification, success_by_phase, recovery_s), compared the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "sim/run/runner.hpp"

namespace system_agreement_test {

namespace report = backoff::report;
using backoff::test::by_name;
using backoff::test::run_builtin;

template <class Results>
void expect_alike(const Results& a, const Results& b, const std::string& system) {
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

void expect_agreement(const std::string& dedicated, const std::string& system,
                      const std::vector<std::string>& sets) {
  expect_alike(by_name(run_builtin(dedicated, sets)), by_name(run_builtin(system, sets)), system);
}

TEST(SystemAgreement, RetryFailureRate) {
  for (const char* rate : {"failure_rate=0.01", "failure_rate=0.2", "failure_rate=0.5"}) {
    expect_agreement("retry-failure-rate", "system-retry-failure-rate",
                     {rate, "replications=1", "run.duration=\"30s\""});
  }
}

// Isaev's outage figures of one strategy, averaged over seeds (recovery_s over the runs that
// recovered, and how many did).
struct outage_figures {
  std::map<std::string, double> mean;
  int recovered = 0;
};

std::map<std::string, outage_figures> outage_means(const std::string& scenario,
                                                   const std::vector<std::string>& sets,
                                                   int seeds) {
  std::map<std::string, outage_figures> out;
  for (int seed = 1; seed <= seeds; ++seed) {
    for (const auto& s : run_builtin(scenario, sets, static_cast<std::uint64_t>(seed)).strategies) {
      outage_figures& o = out[s.name];
      o.mean["success_rate"] += s.success_rate() / seeds;
      o.mean["load"] += s.attempts_per_operation / seeds;
      if (s.latency_s) {
        o.mean["p95"] += s.latency_s->p95 / seeds;
        o.mean["p99"] += s.latency_s->p99 / seeds;
      }
      for (const auto& f : s.fields) {
        if (f.value) o.mean[f.name] += *f.value / seeds;
      }
      if (s.recovery_s) {
        o.mean["recovery_s"] += *s.recovery_s;
        ++o.recovered;
      }
    }
  }
  for (auto& [name, o] : out) {
    if (o.recovered > 0) o.mean["recovery_s"] /= o.recovered;
  }
  return out;
}

// Both forms over the same seeds (their random streams differ, so the gaps are sampling noise;
// the means of 6 runs of 7500 calls keep it well inside the bounds). Success rates within 0.03;
// load, the tails and load_amplification within 10 %; success_by_phase within 0.03; recovery_s
// in as many runs and, with `recovery`, its mean within 25 % or one 50 ms bucket. At the
// source's 20 ms buckets recovery_s is mostly noise: a bucket holds ~100 calls (+-10 %), and one
// below 90 % of the baseline restarts the 100 ms hold, so plain no-retries reads 0 in one seed
// and 0.12 s in the next (nonzero in 7 of seeds 11-40 dedicated, 12 as a system); with 50 ms
// buckets (hold: 2 of them) it settles. client-breaker is compared on success and recovery
// only: the source's breaker is asked before first tries only, the library's before retries too
// (docs/models/outage-amplification.md, "As a system").
void expect_outage_agreement(const std::vector<std::string>& sets, bool recovery, bool rest) {
  constexpr int seeds = 6;
  const auto a = outage_means("outage-amplification", sets, seeds);
  const auto b = outage_means("system-outage-amplification", sets, seeds);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, d] : a) {
    ASSERT_TRUE(b.contains(name)) << name;
    const outage_figures& s = b.at(name);
    const std::string where = "system-outage-amplification " + name;
    const auto near = [&](const std::string& f, double bound) {
      ASSERT_TRUE(d.mean.contains(f) && s.mean.contains(f)) << where << ": no " << f;
      EXPECT_NEAR(s.mean.at(f), d.mean.at(f), bound) << where << " " << f;
    };
    for (const char* f : {"success_rate", "success_by_phase.after"}) near(f, 0.03);
    ASSERT_EQ(s.recovered, d.recovered) << where << " runs that recovered";
    if (recovery && d.recovered > 0) {
      near("recovery_s", std::max(0.25 * d.mean.at("recovery_s"), 0.05));
    }
    if (!rest || name == "client-breaker") continue;
    if (d.mean.contains("success_by_phase.outage")) near("success_by_phase.outage", 0.03);
    for (const char* f : {"load", "p95", "p99", "load_amplification.pre", "load_amplification.peak",
                          "load_amplification.outage_mean", "load_amplification.after"}) {
      near(f, 0.1 * d.mean.at(f));
    }
  }
}

TEST(SystemAgreement, OutageAmplification) {
  expect_outage_agreement({}, false, true);
  expect_outage_agreement({"run.bucket=\"50ms\""}, true, false);
  expect_outage_agreement({"outage.fraction=0.5", "run.bucket=\"50ms\""}, true, true);
}

}  // namespace system_agreement_test
