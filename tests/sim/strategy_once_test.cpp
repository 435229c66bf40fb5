// SPDX-License-Identifier: Apache-2.0
// Strategies are parsed once, when the scenario loads: the runner hands every model the very
// client_strategy objects scenario::load built (a model that records what it was given shows
// it), at every point and replication of a sweep, and the typed values are the parsed specs.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backoff/presets.hpp"
#include "backoff/spec.hpp"
#include "sim/models/model.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;

// Every strategy object a model was asked to run, from any thread.
struct given_strategies {
  std::mutex lock;
  std::vector<const sim::client_strategy*> run;
  std::uint64_t models = 0;
};
given_strategies& given() {
  static given_strategies g;
  return g;
}

class recording_model final : public sim::model_runner {
 public:
  explicit recording_model(sim::config_reader& keys) : x_(keys.integer("x", 0, 0, 100)) {
    const std::scoped_lock hold(given().lock);
    ++given().models;
  }
  sim::time_ns bucket() const override { return 1'000'000'000; }
  sim::memory_need memory() const override { return {}; }
  sim::run_info run(const sim::client_strategy& strategy, std::uint64_t, sim::engine&,
                    report::recorder&, const sim::progress_fn&) override {
    const std::scoped_lock hold(given().lock);
    given().run.push_back(&strategy);
    return {1, static_cast<std::uint64_t>(x_)};
  }

 private:
  std::int64_t x_;
};

const sim::model_registration registration{
    "test-strategy-recorder", [](sim::config_reader& k) {
      return std::unique_ptr<sim::model_runner>(new recording_model(k));
    }};

const std::string scenario_text = R"toml(scenario = "once"
model = "test-strategy-recorder"
replications = 3
[sweep]
x = [1, 2, 3, 4]
[[strategy]]
name = "grpc"
policy = "grpc(max=10s)"
max_attempts = 4
budget = "token-bucket(max=10, ratio=0.1)"
[[strategy]]
name = "plain"
)toml";

TEST(StrategiesParsedOnce, TheRunnerHandsModelsTheObjectsTheScenarioLoaded) {
  sim::scenario sc = sim::scenario::load({"once.toml", scenario_text});
  ASSERT_EQ(sc.strategies().size(), 2u);
  const std::set<const sim::client_strategy*> loaded{&sc.strategies()[0], &sc.strategies()[1]};
  given().run.clear();
  sim::run_options options;
  options.threads = 3;
  const report::scenario_result r = sim::run_scenario(sc, options);
  ASSERT_EQ(r.points.size(), 4u);
  ASSERT_EQ(given().run.size(), 4u * 2u * 3u);  // points x strategies x replications
  for (const sim::client_strategy* s : given().run) {
    EXPECT_TRUE(loaded.contains(s)) << "a strategy object not built by scenario::load";
  }
}

TEST(StrategiesParsedOnce, LoadingGivesTypedCheckedValues) {
  const sim::scenario sc = sim::scenario::load({"once.toml", scenario_text});
  const sim::client_strategy& grpc = sc.strategies()[0];
  EXPECT_EQ(grpc.name(), "grpc");
  EXPECT_EQ(grpc.where(), "once.toml:6:1");
  EXPECT_EQ(grpc.policy().backoff, backoff::parse_policy("grpc(max=10s)"));
  EXPECT_EQ(grpc.policy().max_attempts, 4u);
  EXPECT_TRUE(grpc.has_budget());
  EXPECT_FALSE(grpc.has_window());
  EXPECT_FALSE(grpc.has_throttle());
  EXPECT_FALSE(grpc.retries_at_once());
  const sim::client_strategy& plain = sc.strategies()[1];
  EXPECT_EQ(plain.policy().backoff, backoff::find_preset("none")->policy);
  EXPECT_TRUE(plain.retries_at_once());
  EXPECT_EQ(plain.policy().max_attempts, 0u);
}

// A sweep point's scenario takes the strategies as they are (they cannot be swept).
TEST(StrategiesParsedOnce, APointKeepsTheLoadedStrategies) {
  const sim::scenario sc = sim::scenario::load({"once.toml", scenario_text});
  const auto points = sc.points();
  const sim::scenario at = sc.at(points[2]);
  ASSERT_EQ(at.strategies().size(), 2u);
  EXPECT_EQ(at.strategies()[0].policy().backoff, sc.strategies()[0].policy().backoff);
  EXPECT_EQ(at.strategies()[1].where(), sc.strategies()[1].where());
}

TEST(StrategiesParsedOnce, ABadSpecIsRefusedAtLoadWithItsPosition) {
  const std::string bad = R"toml(scenario = "s"
model = "test-strategy-recorder"
[[strategy]]
name = "a"
window = "aimd(decrease=2)"
)toml";
  try {
    (void)sim::scenario::load({"bad.toml", bad});
    FAIL() << "loaded";
  } catch (const sim::scenario_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.toml:5:10: strategy.window: ", 0), 0u) << e.what();
  }
}

}  // namespace
