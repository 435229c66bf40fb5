// SPDX-License-Identifier: Apache-2.0
// Issue 8's end-to-end check: seed 004's experiment for real on loopback, scaled down to run in
// well under a minute, shows both outcomes (fixed retries never let the paused server come back;
// exponential backoff does), and the simulator's outage-recovery at the same parameters has the
// same shape.
//
// Scaling: the server's concurrency N enters the service time only through (N - limit) / k, and
// N grows with the number of clients, so 200 clients against limit 6 and k 3 behave like the
// seed's 1000 clients against limit 30 and k 15, at a fifth of the request rate. The pause
// (6 s from 4 s) is past the simulated tipping point of fixed retries (about 4 s at the seed's
// scale, docs/models/outage-recovery.md) and far below exponential's (about 40 s).
#include "experiments/outage_experiment.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "builtin_scenario.hpp"

namespace {

using namespace std::chrono_literals;
using namespace backoff;

constexpr int clients = 200;
constexpr int server_limit = 6;
constexpr int k = 3;
constexpr double pause_after_s = 4, pause_for_s = 6, run_s = 20;

struct shape {
  double before = 0;            // successes per second before the pause
  double after = 0;             // successes per second over the last 5 s
  std::int64_t final_load = 0;  // the server's concurrency at the end
};

shape shape_of(const report::strategy_summary& s) {
  shape out;
  double before = 0, after = 0;
  for (std::size_t i = 0; i < s.buckets.size(); ++i) {
    const double t = static_cast<double>(i) * static_cast<double>(s.bucket_width) * 1e-9;
    if (t < pause_after_s) before += static_cast<double>(s.buckets[i].successes);
    if (t >= run_s - 5 && t < run_s) after += static_cast<double>(s.buckets[i].successes);
    out.final_load = std::max(out.final_load, t >= run_s - 2 ? s.buckets[i].in_service : 0);
  }
  out.before = before / pause_after_s;
  out.after = after / 5;
  return out;
}

const report::strategy_summary& strategy(const report::scenario_result& r,
                                         const std::string& name) {
  for (const auto& s : r.strategies) {
    if (s.name == name) return s;
  }
  throw std::runtime_error("no strategy " + name);
}

// The seed's outcome, asserted the same way on the real run and on the simulation.
void expect_seed_outcome(const report::scenario_result& r, const std::string& what) {
  SCOPED_TRACE(what);
  const shape fixed = shape_of(strategy(r, "fixed"));
  const shape exponential = shape_of(strategy(r, "exponential"));
  std::cout << what << ": fixed " << fixed.before << "/s before, " << fixed.after
            << "/s after, load " << fixed.final_load << "; exponential " << exponential.before
            << "/s before, " << exponential.after << "/s after, load " << exponential.final_load
            << '\n';
  EXPECT_GT(fixed.before, 10) << "steady state before the pause (about 20/s)";
  EXPECT_GT(exponential.before, 10);
  // Fixed: nothing gets through after the resume, and requests pile up at the server.
  EXPECT_LT(fixed.after, 0.1 * fixed.before);
  EXPECT_GT(fixed.final_load, 10 * server_limit);
  // Exponential: the server serves again, and its concurrency is back near its limit.
  EXPECT_GT(exponential.after, 0.5 * exponential.before);
  EXPECT_LT(exponential.final_load, 5 * server_limit);
}

TEST(OutageExperimentWallClock, FixedNeverRecoversExponentialDoesForRealAndInTheSimulator) {
  net::outage_experiment e;
  e.server.threads = 2;
  e.server.service.limit = server_limit;
  e.server.service.k = k;
  e.load.clients = clients;
  e.load.think_mean = 10s;
  e.load.timeout = 2s;
  e.load.duration_total =
      std::chrono::duration_cast<duration>(std::chrono::duration<double>(run_s));
  e.load.report_every = 60s;
  e.pause_after =
      std::chrono::duration_cast<duration>(std::chrono::duration<double>(pause_after_s));
  e.pause_for = std::chrono::duration_cast<duration>(std::chrono::duration<double>(pause_for_s));
  const report::scenario_result real = net::run_outage_experiment(e, {});
  ASSERT_EQ(real.strategies.size(), 2u);
  expect_seed_outcome(real, "real run on loopback");
  // Goodput per phase (issue 17): fixed's collapse shows after the pause, where completed /
  // makespan showed its pre-outage rate.
  const auto& fixed = strategy(real, "fixed");
  const auto& exponential = strategy(real, "exponential");
  ASSERT_TRUE(fixed.phases.has_value());
  ASSERT_TRUE(exponential.phases.has_value());
  EXPECT_GT(fixed.phases->before_per_s, 10);
  EXPECT_LT(fixed.phases->during_per_s, 0.2 * fixed.phases->before_per_s);
  EXPECT_LT(fixed.phases->after_per_s, 0.2 * fixed.phases->before_per_s);
  EXPECT_GT(exponential.phases->after_per_s, 2 * fixed.phases->after_per_s);

  const report::scenario_result simulated =
      test::run_builtin("outage-recovery", {"workload.clients=" + std::to_string(clients),
                                            "server.limit=" + std::to_string(server_limit),
                                            "server.k=" + std::to_string(k), "outage.start=\"4s\"",
                                            "outage.duration=\"6s\"", "run.duration=\"20s\""});
  expect_seed_outcome(simulated, "simulation at the same parameters");

  // And the two agree on how much was sent: the real clients are the simulated ones.
  for (const char* name : {"fixed", "exponential"}) {
    const double a = static_cast<double>(strategy(real, name).attempts);
    const double b = static_cast<double>(strategy(simulated, name).attempts);
    EXPECT_NEAR(a / b, 1.0, 0.35) << name << ": real " << a << " vs simulated " << b;
  }
}

}  // namespace
