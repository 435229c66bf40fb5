// SPDX-License-Identifier: Apache-2.0
// retry-layers (ThomWright, "Retries upon retries"): servers in series in front of a dependency
// that fails transiently. Bounds here are the source's arithmetic ((1 + retries)^depth, and
// 1 - p^4 for a top-only retry whose every call below is a first attempt) and orderings between
// strategies on one seed, never a pinned figure (docs/models/retry-layers.md).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "sim/models/model.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace retry_layers_test {

namespace sim = backoff::sim;
namespace report = backoff::report;
using backoff::test::by_name;
using backoff::test::run_builtin;

std::optional<double> layers_field(const report::strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  ADD_FAILURE() << s.name << ": no field " << name;
  return std::nullopt;
}

double layers_value(const report::strategy_summary& s, const std::string& name) {
  const auto v = layers_field(s, name);
  EXPECT_TRUE(v.has_value()) << s.name << ": " << name << " is null";
  return v.value_or(std::nan(""));
}

std::map<std::string, report::strategy_summary> layers_run(std::vector<std::string> sets,
                                                           std::uint64_t seed = 1) {
  // A named string: GCC 12 misreads a literal pushed here as an out-of-bounds copy.
  static const std::string shorter = "workload.requests=3000";
  sets.insert(sets.begin(), shorter);  // first: a test's own --set wins
  return by_name(run_builtin("retry-layers", sets, seed));
}

TEST(RetryLayers, EveryLayerRetryingMultipliesCallsUpToTheBound) {
  // The dependency fails every first call: the code's worst case, 4^3 = 64 calls at most.
  const auto r = layers_run({"failure_rate=1"});
  const auto& all = r.at("retry-every-layer");
  const double deepest = layers_value(all, "deepest_calls_per_request");
  EXPECT_LE(deepest, 64.0);
  EXPECT_GT(deepest, 32.0);  // far above one layer's 4: the retries multiply
  EXPECT_EQ(layers_value(all, "calls_per_request.layer1"), 1.0);
  EXPECT_EQ(layers_value(all, "calls_per_request.layer4"), deepest);
  for (int k = 1; k <= 3; ++k) {
    const double above = layers_value(all, "calls_per_request.layer" + std::to_string(k));
    const double below = layers_value(all, "calls_per_request.layer" + std::to_string(k + 1));
    EXPECT_GE(below, above) << k;
    EXPECT_LE(below, 4.0 * above) << k;
  }
  // The recorder's attempts are the calls reaching the dependency.
  EXPECT_NEAR(all.attempts_per_operation, deepest, 1e-9);
  // Top-only: the layer that calls the dependency never retries, so every call there is a first
  // call and fails; the top's 4 attempts are all there is.
  const auto& top = r.at("retry-top-only");
  EXPECT_EQ(layers_value(top, "deepest_calls_per_request"), 4.0);
  EXPECT_EQ(top.completed, 0u);
  EXPECT_GT(all.success_rate(), top.success_rate());
}

TEST(RetryLayers, TopOnlyFailsAsIndependentFirstCalls) {
  // Each of the top's up to 4 attempts reaches the dependency as a first call: the request fails
  // with p^4, and the dependency sees 1 + p + p^2 + p^3 calls on average.
  const double p = 0.5;
  const auto r = layers_run({"failure_rate=0.5"});
  const auto& top = r.at("retry-top-only");
  const double n = static_cast<double>(top.operations);
  const double expected = 1.0 - std::pow(p, 4);
  EXPECT_NEAR(top.success_rate(), expected, 5.0 * std::sqrt(expected * (1 - expected) / n));
  EXPECT_NEAR(layers_value(top, "deepest_calls_per_request"), 1 + p + p * p + p * p * p, 0.08);
  EXPECT_LE(layers_value(top, "calls_per_request.layer2"), 4.0);
  EXPECT_EQ(layers_value(top, "calls_per_request.layer2"),
            layers_value(top, "calls_per_request.layer4"));
}

TEST(RetryLayers, StrategiesOrderAsTheSourceAndTheGuardsSay) {
  const auto r = layers_run({"failure_rate=0.75"});
  const auto& all = r.at("retry-every-layer");
  const auto& top = r.at("retry-top-only");
  const auto& budget = r.at("budget-every-layer");
  const auto& signal = r.at("retry-only-if-retryable");
  const auto deepest = [](const report::strategy_summary& s) {
    return layers_value(s, "deepest_calls_per_request");
  };
  // The source: cascading retries are persistent, so more succeed, at a far higher load.
  EXPECT_GT(all.success_rate(), top.success_rate());
  EXPECT_GT(deepest(all), deepest(top));
  // The budget caps the multiplication.
  EXPECT_LT(deepest(budget), deepest(all));
  // The signal: only the layer next to the dependency retries (at most 4 calls).
  EXPECT_LE(deepest(signal), 4.0);
  EXPECT_EQ(layers_value(signal, "calls_per_request.layer2"), 1.0);
  EXPECT_EQ(layers_value(signal, "calls_per_request.layer3"), 1.0);
  EXPECT_LT(deepest(signal), deepest(all));
}

TEST(RetryLayers, OnlyRetriesNextToTheDependencySeeItRecover) {
  // With a recovery as short as the backoffs, the retries of the layer that calls the
  // dependency (every-layer, signal) find it recovering; the top's retries never do, since each
  // reaches the dependency as a first call. At 2 s the effect is too small for one seed.
  const auto r = layers_run({"failure_rate=0.75", "failure.recovery=\"50ms\""});
  const auto& top = r.at("retry-top-only");
  const auto& signal = r.at("retry-only-if-retryable");
  EXPECT_GT(signal.success_rate(), top.success_rate() + 0.1);
  EXPECT_GE(r.at("retry-every-layer").success_rate(), signal.success_rate());
  // Without the code's clock (backoff only), the elapsed time is longer: recovery comes sooner.
  const auto elapsed =
      layers_run({"failure_rate=0.75", "failure.recovery=\"50ms\"", "quirks=false"});
  EXPECT_GT(elapsed.at("retry-only-if-retryable").success_rate(), signal.success_rate());
  EXPECT_EQ(elapsed.at("retry-top-only").completed, top.completed);  // no retry sees the clock
}

TEST(RetryLayers, NoFailureMeansOneCallPerLayer) {
  const auto r = layers_run({"failure_rate=0"});
  for (const auto& [name, s] : r) {
    EXPECT_EQ(s.success_rate(), 1.0) << name;
    for (int k = 1; k <= 4; ++k) {
      EXPECT_EQ(layers_value(s, "calls_per_request.layer" + std::to_string(k)), 1.0) << name;
    }
    ASSERT_TRUE(s.latency_s.has_value());
    // Four services of 5 ms each on average.
    EXPECT_GT(s.latency_s->p50, 0.010) << name;
    EXPECT_LT(s.latency_s->p50, 0.030) << name;
  }
}

TEST(RetryLayers, DepthSetsTheLayersAndTheBound) {
  const auto r = layers_run({"failure_rate=1", "topology.depth=2", "workload.requests=1000"});
  const auto& all = r.at("retry-every-layer");
  EXPECT_LE(layers_value(all, "deepest_calls_per_request"), 16.0);
  EXPECT_GT(layers_value(all, "deepest_calls_per_request"), 8.0);
  bool has_layer4 = false;
  for (const auto& f : all.fields) has_layer4 = has_layer4 || f.name == "calls_per_request.layer4";
  EXPECT_FALSE(has_layer4);
  EXPECT_EQ(layers_value(all, "calls_per_request.layer3"),
            layers_value(all, "deepest_calls_per_request"));
}

TEST(RetryLayers, SameSeedSameRunOtherSeedOtherRun) {
  const std::vector<std::string> sets{"failure_rate=0.6", "workload.requests=500"};
  const auto a = by_name(run_builtin("retry-layers", sets, 3));
  const auto b = by_name(run_builtin("retry-layers", sets, 3));
  const auto c = by_name(run_builtin("retry-layers", sets, 4));
  for (const auto& [name, s] : a) {
    EXPECT_EQ(s.attempts, b.at(name).attempts) << name;
    EXPECT_EQ(s.completed, b.at(name).completed) << name;
    EXPECT_EQ(s.events, b.at(name).events) << name;
  }
  EXPECT_NE(a.at("retry-every-layer").events, c.at("retry-every-layer").events);
}

// A scenario of this model with the given [[strategy]] tables.
backoff::sim::scenario layers_scenario(const std::string& strategies,
                                       const std::vector<std::string>& sets) {
  const std::string text = "scenario = \"layers-guards\"\nmodel = \"retry-layers\"\n" +
                           std::string("failure_rate = 1.0\n[workload]\nrequests = 2000\n") +
                           strategies;
  return sim::scenario::load({"layers-guards.toml", text}, sets);
}

TEST(RetryLayers, ABreakerPerLayerCutsTheCascadeAndAHedgeIsRefused) {
  const std::string retry =
      "policy = \"exponential(initial=10ms, factor=2, jitter=full)\"\nmax_attempts = 4\n";
  sim::scenario sc = layers_scenario("[[strategy]]\nname = \"plain\"\n" + retry +
                                         "[[strategy]]\nname = \"breaker\"\n" + retry +
                                         "breaker = \"breaker(kind=run-ratio, threshold=10%)\"\n",
                                     {});
  const auto r = by_name(sim::run_scenario(sc, {}));
  const double plain = layers_value(r.at("plain"), "deepest_calls_per_request");
  const double guarded = layers_value(r.at("breaker"), "deepest_calls_per_request");
  EXPECT_GT(plain, 32.0);
  EXPECT_LT(guarded, plain / 4);
  EXPECT_GE(guarded, 1.0);  // a first call always goes: run-ratio breakers refuse retries only

  sim::scenario hedged = layers_scenario(
      "[[strategy]]\nname = \"hedged\"\nhedge = \"hedge(max_attempts=3, delay=10ms)\"\n", {});
  EXPECT_THROW((void)sim::make_model(hedged), sim::scenario_error);
}

TEST(RetryLayers, BadKeysAreRefusedWithOneLine) {
  const auto load = [](const std::vector<std::string>& sets) {
    sim::scenario sc = sim::scenario::load(backoff::test::builtin_source("retry-layers"), sets);
    (void)sim::make_model(sc);
  };
  EXPECT_THROW(load({"topology.depth=0"}), sim::scenario_error);
  EXPECT_THROW(load({"failure_rate=1.5"}), sim::scenario_error);
  EXPECT_THROW(load({"service.mean=\"0s\""}), sim::scenario_error);
  try {
    load({"layers.top_only=[\"no-such\"]"});
    ADD_FAILURE() << "a missing strategy name was accepted";
  } catch (const sim::scenario_error& e) {
    EXPECT_NE(std::string(e.what()).find("no strategy named 'no-such'"), std::string::npos)
        << e.what();
  }
}

}  // namespace retry_layers_test
