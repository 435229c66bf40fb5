// SPDX-License-Identifier: Apache-2.0
// Validation models mm1 and mmc (src/sim/models/queueing.{hpp,cpp}): the simulated mean wait in
// queue must agree with queueing theory (M/M/1: Wq = rho / (mu - lambda); M/M/c: Erlang C)
// within the run's own 95 % confidence interval (batch means), at several loads, with fixed
// seeds.
#include "sim/models/queueing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
using backoff::test::builtin_source;
using namespace std::chrono_literals;

// Erlang C in its textbook form (Kleinrock, "Queueing Systems, Volume 1", 1975, eq. 3.40):
//   C(c, a) = (a^c / c!) (c / (c - a)) / (sum_{k<c} a^k / k! + (a^c / c!) (c / (c - a)))
// written out here independently of queueing.hpp's recursion.
double erlang_c_textbook(int c, double a) {
  double term = 1.0;  // a^k / k!
  double sum = 0.0;
  for (int k = 0; k < c; ++k) {
    sum += term;
    term *= a / (k + 1);
  }
  const double top = term * c / (c - a);  // term is now a^c / c!
  return top / (sum + top);
}

TEST(ErlangC, MatchesTheTextbookFormAndKnownValues) {
  for (const double rho : {0.1, 0.5, 0.8, 0.9, 0.99}) {
    EXPECT_NEAR(sim::erlang_c(1, rho), rho, 1e-12);  // M/M/1: P(wait) = rho
    EXPECT_NEAR(sim::mmc_mean_wait(rho * 100, 100, 1), rho / (100 - rho * 100), 1e-12);
    for (const int c : {2, 4, 8, 50}) {
      EXPECT_NEAR(sim::erlang_c(c, rho * c), erlang_c_textbook(c, rho * c), 1e-9)
          << "c=" << c << " rho=" << rho;
    }
  }
  EXPECT_NEAR(sim::erlang_c(2, 1.0), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(sim::erlang_c(4, 3.2), 0.596432, 1e-6);
}

struct case_ {
  std::int64_t servers;
  double load;
  std::uint64_t seed;
};

class QueueingMatchesTheory : public testing::TestWithParam<case_> {};

std::string case_name(const testing::TestParamInfo<case_>& param) {
  return "c" + std::to_string(param.param.servers) + "_load" +
         std::to_string(static_cast<int>(param.param.load * 100 + 0.5));
}

// About 1.5 million customers per run: a few tenths of a second each.
TEST_P(QueueingMatchesTheory, MeanWaitWithinTheRunsConfidenceInterval) {
  const auto [c, load, seed] = GetParam();
  const double mu = 100.0;  // mean service 10 ms
  const double lambda = load * static_cast<double>(c) * mu;
  sim::queueing_params p;
  p.rate_per_s = lambda;
  p.servers = c;
  p.mean_service = 10ms;
  p.length =
      std::chrono::duration_cast<backoff::duration>(std::chrono::duration<double>(1.5e6 / lambda));
  p.warmup = 60s;
  const sim::queueing_estimate w = sim::simulate_queue(p, seed);
  const double theory = sim::mmc_mean_wait(lambda, mu, c);

  EXPECT_EQ(w.batches, sim::queueing_batches);
  EXPECT_GT(w.customers, 1'400'000u);
  EXPECT_NEAR(w.mean_wait_s, theory, w.ci95_half_width_s)
      << "c=" << c << " load=" << load << " simulated " << w.mean_wait_s << " +- "
      << w.ci95_half_width_s << ", theory " << theory;
  // The interval is informative: a few percent of the mean, not a blanket.
  EXPECT_LT(w.ci95_half_width_s, 0.10 * theory) << "c=" << c << " load=" << load;
  EXPECT_GT(w.ci95_half_width_s, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Loads, QueueingMatchesTheory,
                         testing::Values(case_{1, 0.5, 1}, case_{1, 0.8, 1}, case_{1, 0.9, 1},
                                         case_{4, 0.5, 1}, case_{4, 0.8, 1}, case_{4, 0.9, 1}),
                         case_name);

TEST(Queueing, SameSeedSameEstimate) {
  sim::queueing_params p;
  p.length = 600s;
  const auto a = sim::simulate_queue(p, 5);
  const auto b = sim::simulate_queue(p, 5);
  EXPECT_EQ(a.mean_wait_s, b.mean_wait_s);
  EXPECT_EQ(a.ci95_half_width_s, b.ci95_half_width_s);
  EXPECT_EQ(a.events, b.events);
  EXPECT_NE(a.mean_wait_s, sim::simulate_queue(p, 6).mean_wait_s);
}

// The built-in mm1: latency is the time in system, exponential with rate mu - lambda = 20/s in
// M/M/1, so its median is ln 2 / 20 s and its 99th percentile ln 100 / 20 s.
TEST(Queueing, BuiltinMm1TimeInSystemIsExponential) {
  // Four hours rather than the scenario's 30 minutes, for tight percentiles.
  sim::scenario sc = sim::scenario::load(builtin_source("mm1"), {"run.duration=4h"});
  const auto r = sim::run_scenario(sc, {});
  ASSERT_EQ(r.strategies.size(), 1u);
  const auto& s = r.strategies.front();
  EXPECT_GT(s.operations, 1'000'000u);
  EXPECT_EQ(s.attempts, s.operations);  // no retries
  EXPECT_EQ(s.gave_up, 0u);
  EXPECT_LE(s.unfinished, 50u);  // those in the system at the end
  ASSERT_TRUE(s.latency_s.has_value());
  EXPECT_NEAR(s.latency_s->p50, std::log(2.0) / 20.0, 0.03 * std::log(2.0) / 20.0);
  EXPECT_NEAR(s.latency_s->p99, std::log(100.0) / 20.0, 0.05 * std::log(100.0) / 20.0);
  EXPECT_NEAR(s.goodput_per_s, 80.0, 1.0);
  EXPECT_NEAR(s.mean_load, 0.8, 0.01);  // time-averaged busy servers = rho
}

TEST(Queueing, BuiltinMmcHasFourServersAtLoadPointEight) {
  sim::scenario sc = sim::scenario::load(builtin_source("mmc"));
  const auto r = sim::run_scenario(sc, {});
  const auto& s = r.strategies.front();
  EXPECT_EQ(s.peak_load, 4);
  EXPECT_NEAR(s.mean_load, 3.2, 0.03);
  EXPECT_NEAR(s.goodput_per_s, 320.0, 3.0);
}

TEST(Queueing, RejectsRetriesAndOverload) {
  const std::string base = R"(scenario = "q"
model = "queueing"
)";
  {
    sim::scenario sc = sim::scenario::load(
        {"q.toml", base + "[[strategy]]\nname = \"c\"\npolicy = \"constant\"\n"});
    EXPECT_THROW(sim::check_scenario(sc), sim::scenario_error);
  }
  {
    sim::scenario sc = sim::scenario::load({"q.toml", base + "[[strategy]]\nname = \"n\"\n"},
                                           {"workload.rate_per_s=100"});
    EXPECT_THROW(sim::check_scenario(sc), sim::scenario_error);  // load 1: unstable
  }
  {
    sim::scenario sc = sim::scenario::load({"q.toml", base + "[[strategy]]\nname = \"n\"\n"},
                                           {"server.sevrers=2"});
    EXPECT_THROW(sim::check_scenario(sc), sim::scenario_error);
  }
}

}  // namespace
