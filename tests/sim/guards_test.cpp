// SPDX-License-Identifier: Apache-2.0
// The guards of SPEC 7.2 in the simulator: a scenario's [[strategy]] breaker, hedge and deadline
// keys, run by one-client-burst from the example file a user would run
// (examples/scenarios/one-client-burst-guards.toml), and refused with one line by the models
// that cannot honour them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "report/summary.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;

std::string read_example(const std::string& name) {
  std::ifstream in(std::filesystem::path(BACKOFF_EXAMPLE_SCENARIOS) / name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

report::scenario_result run_guards(std::vector<std::string> sets = {}) {
  sim::scenario sc = sim::scenario::load(
      {"one-client-burst-guards.toml", read_example("one-client-burst-guards.toml")}, sets);
  sim::run_options o;
  o.threads = 1;
  return sim::run_scenario(sc, o);
}

class Guards : public testing::Test {
 protected:
  static void SetUpTestSuite() { result_ = new report::scenario_result(run_guards()); }
  static void TearDownTestSuite() { delete result_; }
  static const report::strategy_summary& get(const std::string& name) {
    for (const auto& s : result_->strategies) {
      if (s.name == name) return s;
    }
    throw std::runtime_error("no strategy " + name);
  }
  static report::scenario_result* result_;
};
report::scenario_result* Guards::result_ = nullptr;

TEST_F(Guards, TheExampleFileRunsEveryStrategyToTheEnd) {
  ASSERT_EQ(result_->strategies.size(), 6u);
  for (const auto& s : result_->strategies) {
    EXPECT_EQ(s.operations, 2000u) << s.name;
    EXPECT_EQ(s.completed + s.gave_up, 2000u) << s.name;
    EXPECT_EQ(s.unfinished, 0u) << s.name;
  }
}

TEST_F(Guards, ABreakerFailsFastInsteadOfRetryingIntoTheOverload) {
  const auto& plain = get("exponential-full");
  const auto& breaker = get("exponential-full-breaker");
  EXPECT_EQ(plain.completed, 2000u);
  EXPECT_GT(breaker.gave_up, 0u);  // refused while open
  EXPECT_LT(breaker.attempts * 10, plain.attempts);
  EXPECT_LT(breaker.makespan_s, plain.makespan_s);
}

TEST_F(Guards, TheRetryOnlyBreakerNeverBlocksAFirstTry) {
  const auto& s = get("exponential-full-retry-only-breaker");
  // Every operation's first try went out; the burst's failure ratio (well above 10 %) then
  // refused every retry.
  EXPECT_EQ(s.attempts, 2000u);
  EXPECT_EQ(s.completed, 50u);  // the server's 50 slots
}

TEST_F(Guards, HedgesNeverExceedMaxAttemptsAndABudgetBoundsThem) {
  const auto& hedged = get("hedge-3-200ms");
  const auto& budgeted = get("hedge-3-200ms-budgeted");
  EXPECT_LE(hedged.attempts, 3u * 2000u);
  EXPECT_GT(hedged.attempts, 2000u);  // the overloaded server answers 503: more copies went out
  // token-bucket(max=10, ratio=0.1): 10 tokens to start, then a tenth per first try at most.
  EXPECT_LE(budgeted.attempts, 2000u + 10u + 200u);
  EXPECT_LT(budgeted.attempts, hedged.attempts);
}

TEST_F(Guards, TheDeadlineBoundsEveryOperation) {
  const auto& s = get("exponential-full-deadline");
  ASSERT_TRUE(s.latency_s.has_value());
  EXPECT_LE(s.latency_s->max, 30.0);  // total=30s
  EXPECT_GT(s.gave_up, 0u);
}

TEST(GuardsRuns, AreByteIdenticalForTheSameSeed) {
  const auto text = [] {
    auto r = run_guards({"workload.operations=300"});
    r.wall_s = 0;
    std::ostringstream out;
    report::write_summary_json(r, out);
    report::write_timeseries_csv(r, out);
    return out.str();
  };
  EXPECT_EQ(text(), text());
}

// A hedge whose copies all fail with a fatal status ends at the first answer.
TEST(GuardsRuns, AHedgeWithoutNonFatalStatusesStopsAtTheFirstError) {
  const std::string text = R"toml(scenario = "h"
model = "one-client-burst"
[workload]
operations = 200
rate_per_s = 200
[[strategy]]
name = "fatal"
hedge = "hedge(max_attempts=3, delay=10s)"
[[strategy]]
name = "non-fatal"
hedge = "hedge(max_attempts=3, delay=10s, non_fatal=[503])"
)toml";
  sim::scenario sc = sim::scenario::load({"h.toml", text});
  const auto r = sim::run_scenario(sc, {});
  ASSERT_EQ(r.strategies.size(), 2u);
  // With a 10 s delay no copy is sent before the first answer: one attempt each when fatal.
  EXPECT_EQ(r.strategies[0].attempts, 200u);
  EXPECT_GT(r.strategies[1].attempts, 200u);
  EXPECT_GT(r.strategies[1].completed, r.strategies[0].completed);
}

// A per-attempt timeout shorter than the service: every attempt times out, nothing completes,
// and with propagate=true the server stops each at its deadline, freeing its slot sooner.
TEST(GuardsRuns, PerAttemptTimeoutsAndPropagation) {
  const std::string text = R"toml(scenario = "d"
model = "one-client-burst"
[workload]
operations = 100
rate_per_s = 10
[[strategy]]
name = "short"
policy = "constant(initial=100ms)"
max_attempts = 3
deadline = "deadline(per_attempt=300ms)"
[[strategy]]
name = "short-propagated"
policy = "constant(initial=100ms)"
max_attempts = 3
deadline = "deadline(per_attempt=300ms, propagate=true)"
[[strategy]]
name = "enough"
policy = "constant(initial=100ms)"
max_attempts = 3
deadline = "deadline(per_attempt=700ms, propagate=true)"
)toml";
  sim::scenario sc = sim::scenario::load({"d.toml", text});
  const auto r = sim::run_scenario(sc, {});
  ASSERT_EQ(r.strategies.size(), 3u);
  EXPECT_EQ(r.strategies[0].completed, 0u);
  EXPECT_EQ(r.strategies[0].attempts, 300u);
  // The same attempts, but the server stops each at its deadline (200 ms after it arrives)
  // instead of working 500 ms for a client that left: less of it is busy.
  EXPECT_EQ(r.strategies[1].attempts, 300u);
  EXPECT_LT(r.strategies[1].peak_load * 2, r.strategies[0].peak_load);
  EXPECT_EQ(r.strategies[2].completed, 100u);  // 600 ms of work fit in 700 ms
  EXPECT_EQ(r.strategies[2].attempts, 100u);
}

std::string refusal(const std::string& model, const std::string& strategy_keys) {
  const std::string text = "scenario = \"r\"\nmodel = \"" + model +
                           "\"\n[[strategy]]\nname = \"s\"\n" + strategy_keys + "\n";
  try {
    sim::scenario sc = sim::scenario::load({"r.toml", text});
    sim::check_scenario(sc);
  } catch (const sim::scenario_error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(GuardsKeys, ModelsThatCannotHonourAGuardRefuseItWithOneLine) {
  const std::string hedge = refusal("tick-burst", "hedge = \"hedge(max_attempts=2, delay=1s)\"");
  EXPECT_NE(hedge.find("r.toml:3:1: strategy s: model 'tick-burst' cannot honour strategy.hedge"),
            std::string::npos)
      << hedge;
  EXPECT_EQ(hedge.find('\n'), std::string::npos);
  const std::string deadline =
      refusal("outage-recovery", "deadline = \"deadline(per_attempt=1s)\"");
  EXPECT_NE(deadline.find("cannot honour strategy.deadline"), std::string::npos) << deadline;
  const std::string breaker = refusal("queueing", "breaker = \"run-ratio-10pct\"");
  EXPECT_NE(breaker.find("model 'queueing' cannot honour strategy.breaker"), std::string::npos)
      << breaker;
  const std::string keyed =
      refusal("one-client-burst", "breaker = \"breaker(kind=consecutive, keyed=true)\"");
  EXPECT_NE(keyed.find("keyed=true needs keys"), std::string::npos) << keyed;
  EXPECT_NE(refusal("tick-burst", "breaker = \"breaker(kind=consecutive, failures=3)\"")
                .find("cannot honour strategy.breaker: each client has one operation"),
            std::string::npos);
  EXPECT_EQ(refusal("outage-recovery", "breaker = \"breaker(kind=consecutive, failures=3)\""),
            "accepted");
}

// A limiter goes through the controller's gates as a breaker does; a bulkhead's line needs a
// model that can park an attempt until a slot frees, which none can.
TEST(GuardsKeys, ALimiterRunsWhereTheGatesDoButABulkheadLineIsRefused) {
  EXPECT_EQ(refusal("outage-recovery", "limiter = \"rate(per_s=50, burst=10)\""), "accepted");
  EXPECT_EQ(refusal("one-client-burst", "limiter = \"limit(kind=aimd)\""), "accepted");
  const std::string queued =
      refusal("outage-recovery", "limiter = \"bulkhead(max=5, queue=10, wait=1s)\"");
  EXPECT_NE(queued.find("model 'outage-recovery' cannot honour strategy.limiter: a bulkhead "
                        "with a queue"),
            std::string::npos)
      << queued;
  EXPECT_NE(refusal("queueing", "limiter = \"bulkhead(max=5)\"")
                .find("model 'queueing' cannot honour strategy.limiter"),
            std::string::npos);
}

TEST(GuardsKeys, OneClientBurstRefusesCombinationsItCannotModel) {
  EXPECT_NE(refusal("one-client-burst",
                    "policy = \"exponential\"\nhedge = \"hedge(max_attempts=2, delay=1s)\"")
                .find("hedge replaces retrying (gRPC A6): give it no policy"),
            std::string::npos);
  // The rule is the library strategy's, so every model gives it, before its own checks.
  EXPECT_NE(refusal("hedging", "max_attempts = 3\nhedge = \"hedge(max_attempts=2, delay=1s)\"")
                .find("hedge replaces retrying (gRPC A6): give it no max_attempts"),
            std::string::npos);
  EXPECT_NE(refusal("one-client-burst",
                    "window = \"aimd(initial=20, ssthresh=1024, decrease=0.5, variant=tahoe)\"\n"
                    "breaker = \"breaker(kind=consecutive)\"")
                .find("a window resends from its queue: give it no breaker"),
            std::string::npos);
  EXPECT_NE(refusal("one-client-burst",
                    "hedge = \"hedge(max_attempts=2, delay=1s)\"\n"
                    "deadline = \"deadline(per_attempt=1s)\"")
                .find("with hedge, a deadline takes total"),
            std::string::npos);
}

TEST(GuardsKeys, AHedgeTakesABreakerAndABudget) {
  EXPECT_EQ(refusal("one-client-burst",
                    "hedge = \"hedge(max_attempts=2, delay=1s)\"\n"
                    "breaker = \"breaker(kind=consecutive)\"\n"
                    "budget = \"token-bucket(max=10, ratio=0.1)\"\n"
                    "deadline = \"deadline(total=10s, propagate=true)\""),
            "accepted");
}

TEST(GuardsKeys, ABadGuardSpecIsRefusedAtItsPosition) {
  const std::string m = refusal("one-client-burst", "hedge = \"hedge(max_attempts=9)\"");
  EXPECT_NE(m.find("r.toml:5:9: strategy.hedge: bad hedge \"hedge(max_attempts=9)\""),
            std::string::npos)
      << m;
}

}  // namespace

namespace {

// Runs cut short with attempts in flight, replicated on one model object: each run's controllers
// give their breaker permits back to that run's breaker, never to a destroyed one (AddressSanitizer
// checks this in the asan preset).
TEST(GuardsRuns, RunsCutShortWithABreakerReplicateCleanly) {
  const std::string text = R"toml(scenario = "cut"
model = "outage-recovery"
replications = 3
[workload]
clients = 50
think_mean = "100ms"
[outage]
start = "1s"
duration = "2s"
[run]
duration = "4s"
[[strategy]]
name = "breaker"
policy = "constant(initial=200ms)"
breaker = "breaker(kind=consecutive, failures=3, open=500ms, half_open=2)"
)toml";
  sim::scenario sc = sim::scenario::load({"cut.toml", text});
  sim::run_options o;
  o.threads = 1;
  const auto r = sim::run_scenario(sc, o);
  ASSERT_EQ(r.points.size(), 1u);
  ASSERT_EQ(r.points[0].strategies.size(), 1u);
  const auto& runs = r.points[0].strategies[0].runs;
  ASSERT_EQ(runs.size(), 3u);
  for (const auto& run : runs) {
    EXPECT_GT(run.operations, 0u);
    EXPECT_GT(run.gave_up, 0u);     // refused while open during the outage
    EXPECT_GT(run.unfinished, 0u);  // cut short with operations in flight
  }
}

}  // namespace
