// SPDX-License-Identifier: Apache-2.0
// Seed 004's experiment: 1000 closed-loop clients, a server whose service time grows with its
// concurrency, and a 10 s pause. Fixed retries keep it down for good; the seed's exponential
// backoff lets it come back. The bounds are the seed's claims, not tuned figures
// (docs/models/outage-recovery.md). The full-scale run takes about a tenth of a second, so the
// tests run it as shipped, with a shorter tail where the end does not matter.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "report/summary.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;
using backoff::test::on_threads;

using backoff::test::run_builtin;

const report::strategy_summary& strategy(const report::scenario_result& r,
                                         const std::string& name) {
  for (const auto& s : r.strategies) {
    if (s.name == name) return s;
  }
  throw std::runtime_error("no strategy " + name);
}

// Successes per second between two times (bucket starts, seconds).
double goodput(const report::strategy_summary& s, int from_s, int to_s) {
  double sum = 0;
  for (int t = from_s; t < to_s; ++t) sum += static_cast<double>(s.buckets.at(t).successes);
  return sum / (to_s - from_s);
}

class OutageRecovery : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    result_ = new report::scenario_result(run_builtin("outage-recovery"));
  }
  static void TearDownTestSuite() { delete result_; }
  static const report::strategy_summary& get(const std::string& name) {
    return strategy(*result_, name);
  }
  static report::scenario_result* result_;
};
report::scenario_result* OutageRecovery::result_ = nullptr;

TEST_F(OutageRecovery, BothServeTheSteadyLoadBeforeThePause) {
  // 1000 clients thinking 10 s on average: about 99 requests a second, all served in 100 ms.
  for (const char* name : {"fixed", "exponential"}) {
    const double before = goodput(get(name), 30, 60);
    EXPECT_GT(before, 90) << name;
    EXPECT_LT(before, 110) << name;
  }
}

TEST_F(OutageRecovery, FixedRetriesKeepTheServerDownForGood) {
  const auto& fixed = get("fixed");
  EXPECT_FALSE(fixed.recovery_s.has_value());
  // Goodput near zero from a minute after the resume to the end of the run.
  EXPECT_LT(goodput(fixed, 130, 400), 1.0);
  // Every client stuck: about 1000 / (2 s + 100 ms) = 476 attempts a second, all timing out.
  double attempts = 0, timeouts = 0;
  for (int t = 200; t < 400; ++t) {
    attempts += static_cast<double>(fixed.buckets.at(t).attempts);
    timeouts += static_cast<double>(fixed.buckets.at(t).timeouts);
  }
  EXPECT_NEAR(attempts / 200, 476, 20);
  EXPECT_NEAR(timeouts / 200, 476, 20);
  // Concurrency still climbing at the end: abandoned requests keep counting.
  EXPECT_GT(fixed.buckets.at(399).in_service, fixed.buckets.at(300).in_service + 40'000);
  EXPECT_GT(fixed.buckets.at(300).in_service, fixed.buckets.at(200).in_service + 40'000);
}

TEST_F(OutageRecovery, ExponentialBackoffRecovers) {
  const auto& exponential = get("exponential");
  ASSERT_TRUE(exponential.recovery_s.has_value());
  EXPECT_GT(*exponential.recovery_s, 0);
  EXPECT_LT(*exponential.recovery_s, 200);
  // The server itself is back within seconds: concurrency falls to its normal level.
  EXPECT_LT(exponential.buckets.at(75).in_service, 60);
  EXPECT_GT(goodput(exponential, 300, 400), 90);
}

TEST_F(OutageRecovery, RequestsSentDuringThePauseStartTogetherOnResume) {
  // The pause holds everything sent during it; the resume puts it all on the server at once.
  const auto& fixed = get("fixed");
  EXPECT_GT(fixed.buckets.at(69).queued, 1'000);  // held during the pause
  EXPECT_EQ(fixed.buckets.at(70).queued, 0);
  EXPECT_GT(fixed.buckets.at(70).in_service, 2'000);
  EXPECT_EQ(fixed.buckets.at(65).successes, 0);  // nothing is answered while paused
}

TEST(OutageRecoveryRuns, AShortPauseTimesNothingOutAndLeavesBothAlike) {
  // A 1 s pause is shorter than the 2 s timeout: no retries, so no difference between them.
  const auto r =
      run_builtin("outage-recovery", {"outage.duration=\"1s\"", "run.duration=\"120s\""});
  const auto& fixed = strategy(r, "fixed");
  const auto& exponential = strategy(r, "exponential");
  EXPECT_EQ(fixed.attempts, fixed.operations);
  EXPECT_EQ(fixed.attempts, exponential.attempts);
  ASSERT_TRUE(fixed.recovery_s.has_value());
  EXPECT_LT(*fixed.recovery_s, 10);
}

TEST(OutageRecoveryRuns, WithoutTheQuirkTheFirstRetriesComeSoonerAndPileUpHigher) {
  // The Go client's first backoff grows from the think time (mean 27 s); without that quirk it
  // starts at 272 ms, so more retries are waiting when the server resumes.
  const std::vector<std::string> sets{"run.duration=\"100s\""};
  auto with_quirk = sets, without = sets;
  without.push_back("quirks=false");
  const auto a = run_builtin("outage-recovery", with_quirk);
  const auto b = run_builtin("outage-recovery", without);
  const auto& quirky = strategy(a, "exponential");
  const auto& plain = strategy(b, "exponential");
  EXPECT_GT(plain.buckets.at(70).in_service, 2 * quirky.buckets.at(70).in_service);
  // The fixed strategy has no previous delay to grow from: the switch does not touch it.
  EXPECT_EQ(strategy(a, "fixed").attempts, strategy(b, "fixed").attempts);
}

TEST(OutageRecoveryRuns, AreIdenticalForTheSameSeedAndDifferForAnother) {
  const std::vector<std::string> sets{"run.duration=\"90s\""};
  const auto a = run_builtin("outage-recovery", sets, 7);
  const auto b = run_builtin("outage-recovery", sets, 7);
  const auto c = run_builtin("outage-recovery", sets, 8);
  std::ostringstream ja, jb, jc;
  report::write_timeseries_csv(a, ja);
  report::write_timeseries_csv(b, jb);
  report::write_timeseries_csv(c, jc);
  EXPECT_EQ(ja.str(), jb.str());
  EXPECT_NE(ja.str(), jc.str());
}

TEST(OutageRecoveryRuns, NoPauseMeansNoRecoveryToMeasure) {
  const auto r = run_builtin("outage-recovery", {"outage.duration=\"0s\"", "run.duration=\"60s\""});
  EXPECT_FALSE(strategy(r, "fixed").recovery_s.has_value());
  EXPECT_EQ(strategy(r, "fixed").attempts, strategy(r, "fixed").operations);
}

TEST(OutageRecoveryKeys, APauseAfterTheEndIsOneLineNamingTheKey) {
  for (const auto& source : sim::builtin_scenarios()) {
    if (source.path != "builtin/outage-recovery.toml") continue;
    sim::scenario sc = sim::scenario::load(source, {"outage.start=\"500s\""});
    try {
      sim::check_scenario(sc);
      ADD_FAILURE() << "accepted";
    } catch (const sim::scenario_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("--set outage.start: outage.start: is after the end"), std::string::npos)
          << m;
      EXPECT_EQ(m.find('\n'), std::string::npos);
    }
  }
}

TEST(OutageRecoveryKeys, AWindowStrategyIsRejected) {
  const std::string text = R"toml(scenario = "w"
model = "outage-recovery"
[[strategy]]
name = "aimd"
window = "aimd(initial=20, ssthresh=1024, decrease=0.5, variant=tahoe)"
)toml";
  sim::scenario sc = sim::scenario::load({"w.toml", text});
  EXPECT_THROW(sim::check_scenario(sc), sim::scenario_error);
}

// The tipping sweep, reduced: fixed survives a 2 s pause and not a 10 s one, in every
// replication; exponential survives both.
TEST(OutageTipping, FixedTipsOverBetweenShortAndLongPausesAndExponentialHolds) {
  for (const auto& source : sim::builtin_scenarios()) {
    if (source.path != "builtin/outage-tipping.toml") continue;
    sim::scenario sc = sim::scenario::load(source, {"sweep.outage.duration=[\"2s\", \"10s\"]",
                                                    "replications=3", "run.duration=\"160s\""});
    const auto r = sim::run_scenario(sc, on_threads(2));
    ASSERT_EQ(r.points.size(), 2U);
    const auto recovered = [&](std::size_t point, const std::string& name) {
      for (const auto& cell : r.points[point].strategies) {
        if (cell.name != name) continue;
        std::size_t n = 0;
        for (const auto& run : cell.runs) n += run.recovery_s.has_value() ? 1 : 0;
        return n;
      }
      return std::size_t{99};
    };
    EXPECT_EQ(recovered(0, "fixed"), 3U);
    EXPECT_EQ(recovered(1, "fixed"), 0U);
    EXPECT_EQ(recovered(0, "exponential"), 3U);
    EXPECT_EQ(recovered(1, "exponential"), 3U);
    return;
  }
  FAIL() << "no built-in outage-tipping";
}

}  // namespace
