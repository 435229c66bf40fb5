// SPDX-License-Identifier: Apache-2.0
// `backoff load --system` in-process (experiments/system_load.hpp): a system file's replicas as
// real servers on loopback and its client groups as real callers, beside the simulation of the
// same file. Every test runs on real time (a second or a few), so every suite here is a
// WallClock one: plain build only, labelled walltime.
#include "experiments/system_load.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "builtin_scenario.hpp"
#include "report/twin_comparison.hpp"
#include "system_scenario.hpp"

namespace {

using namespace backoff;
using clock_type = std::chrono::steady_clock;

// Two tiers: the clients call `front`, which calls `back`, which fails 30 % of its requests.
// Work is in milliseconds, far above timer and loopback overheads.
const std::string two_tiers = R"toml(
scenario = "two-tiers"
model = "system"
seed = 7

[run]
duration = "1500ms"
drain = "2s"
bucket = "500ms"

[service.front]
workers = 16
queue = 100
service_time = "constant(value=1ms)"
calls = [{ to = "back", edge = "inner", latency = "constant(value=200us)" }]

[service.back]
replicas = 2
workers = 16
queue = 100
service_time = "exponential(mean=2ms)"
errors = "30%:503"

[[clients]]
name = "users"
to = "front"
arrivals = { kind = "poisson", rate = 300 }
latency = "constant(value=200us)"
edge = "outer"

[edge.outer]
max_attempts = 1
deadline = "deadline(per_attempt=1s)"

[edge.inner]
policy = "exponential(initial=5ms, factor=2, max=50ms, jitter=full)"
max_attempts = 3
deadline = "deadline(per_attempt=500ms)"

[[strategy]]
name = "three-tries-inside"

[[strategy]]
name = "one-try-inside"
edge.inner.max_attempts = 1
)toml";

net::system_load_result run_text(const std::string& text, const std::vector<std::string>& sets,
                                 net::system_load_options options = {}) {
  return net::run_system_load({"two-tiers.toml", text}, sets, std::nullopt, options);
}

std::string refusal_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    run_text(text, sets);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

double field(const report::strategy_summary& s, const std::string& name) {
  return test::system_field(s, name);
}

// Every request counted once: what the clients sent is what the front received, and what the
// front's calls sent is what the back received; the back's retries follow its error rate.
TEST(SystemLoadWallClock, EveryRequestIsCountedOnceByItsCallerAndItsService) {
  const net::system_load_result r = run_text(two_tiers, {});
  ASSERT_EQ(r.real.strategies.size(), 2u);
  ASSERT_FALSE(r.real.stopped);
  for (const report::strategy_summary& s : r.real.strategies) {
    SCOPED_TRACE(s.name);
    EXPECT_GT(s.operations, 300u);  // 300/s over 1.5 s: 450 expected
    EXPECT_EQ(s.unfinished, 0u);    // the drain let every operation end
    EXPECT_EQ(static_cast<double>(s.attempts), field(s, "services.front.attempts"));
    EXPECT_EQ(static_cast<double>(s.operations), field(s, "services.front.arrivals"));
    // Each request the front served made one call: its first try is an arrival at the back.
    EXPECT_EQ(field(s, "services.front.completed") + field(s, "services.front.failed"),
              field(s, "services.back.arrivals"));
    EXPECT_EQ(field(s, "services.back.rejected"), 0);
  }
  // Attempts per call at the back: 1 + p + p^2 with p = 0.3 for three tries (1.39), 1 for one.
  const report::strategy_summary& three = r.real.strategies[0];
  const double calls = field(three, "services.back.arrivals");
  const double per_call = field(three, "services.back.attempts") / calls;
  // Var = E[A^2] - E[A]^2 = (0.7 + 4 * 0.21 + 9 * 0.09) - 1.39^2 = 0.4179.
  const double sd = std::sqrt(0.4179 / calls);
  EXPECT_NEAR(per_call, 1.39, 5 * sd + 0.01);
  const report::strategy_summary& one = r.real.strategies[1];
  EXPECT_EQ(field(one, "services.back.attempts"), field(one, "services.back.arrivals"));
  // Failures at the front: three tries fail 0.3^3 of calls, one try 0.3.
  EXPECT_LT(three.success_rate(), 1.0);
  EXPECT_GT(three.success_rate(), 0.9);
  EXPECT_NEAR(one.success_rate(), 0.7, 0.1);
}

// With --compare, the simulation of the same file: at this size the figures the twins are held
// to agree (the full-size twins are checked by bench/twin.sh).
TEST(SystemLoadWallClock, ItsSimulationAgreesOnTheBoundedFigures) {
  net::system_load_options o;
  o.compare = true;
  const net::system_load_result r = run_text(two_tiers, {}, o);
  ASSERT_TRUE(r.simulated.has_value());
  const auto rows = report::compare_twins(*r.simulated, r.real);
  EXPECT_TRUE(report::twins_agree(rows)) << report::agreement_table(rows);
  std::size_t bounded = 0;
  for (const auto& row : rows) bounded += row.bound ? 1 : 0;
  EXPECT_EQ(bounded, 2u * (3 + 2));  // per strategy: 3 totals, 2 services' amplification
}

// A stop (SIGINT, SIGTERM) ends the run where it is: the strategy under way keeps what it did,
// its calls in flight unfinished, and the strategies after it are named as not run.
TEST(SystemLoadWallClock, AStopEndsTheRunAndSaysWhatDidNotRun) {
  const auto started = clock_type::now();
  net::system_load_options o;
  o.stop = [&] { return clock_type::now() - started > std::chrono::milliseconds(700); };
  o.stop_signal = 2;
  o.compare = true;  // not simulated: the real run did not finish
  const net::system_load_result r = run_text(two_tiers, {"run.duration=\"60s\""}, o);
  EXPECT_LT(clock_type::now() - started, std::chrono::seconds(5));
  ASSERT_TRUE(r.real.stopped.has_value());
  EXPECT_EQ(r.real.stopped->strategy, "three-tries-inside");
  EXPECT_EQ(r.real.stopped->not_run, std::vector<std::string>{"one-try-inside"});
  EXPECT_EQ(r.real.stopped->signal, 2);
  EXPECT_FALSE(r.simulated.has_value());
  ASSERT_EQ(r.real.strategies.size(), 1u);
  const report::strategy_summary& s = r.real.strategies[0];
  EXPECT_GT(s.operations, 50u);
  EXPECT_EQ(s.completed + s.gave_up + s.unfinished, s.operations);
}

TEST(SystemLoadWallClock, WhatARealRunCannotHonourIsRefusedInOneLine) {
  std::string windowed = two_tiers;
  const std::string retries =
      "policy = \"exponential(initial=5ms, factor=2, max=50ms, jitter=full)\"";
  windowed.replace(windowed.find(retries), retries.size(),
                   "policy = \"none\"\nwindow = \"aimd()\"");
  const std::string why = refusal_of(windowed);
  EXPECT_NE(why.find("edge inner: a real run cannot honour window yet"), std::string::npos) << why;
  const std::string queueing = refusal_of(
      "scenario = \"x\"\nmodel = \"mm1\"\n[[strategy]]\nname = \"a\"\npolicy = \"none\"\n");
  EXPECT_NE(queueing.find("not a system"), std::string::npos) << queueing;
  const std::string sweep =
      refusal_of(two_tiers + "\n[sweep]\n\"clients.0.arrivals.rate\" = [100, 200]\n");
  EXPECT_NE(sweep.find("a sweep; load --system runs one system"), std::string::npos) << sweep;
}

TEST(SystemLoadWallClock, ASystemTooLargeForThisMachineIsRefusedWithWhatWouldFit) {
  // As many users as descriptors: both ends of their connections cannot fit.
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  const auto users = std::to_string(std::min<rlim_t>(files.rlim_max, 5'000'000));
  const std::string why = refusal_of(
      two_tiers,
      {"clients.0.arrivals={kind=\"closed\", users=" + users + "}", "clients.0.think=\"1s\""});
  EXPECT_NE(why.find("descriptors, over this machine's limit"), std::string::npos) << why;
  EXPECT_NE(why.find("connections would fit"), std::string::npos) << why;
  // Ten million users (the most a group takes): some 600 GiB of connections, more than a machine
  // running this has available.
  const std::string memory = refusal_of(
      two_tiers,
      {"clients.0.arrivals={kind=\"closed\", users=10000000}", "clients.0.think=\"1s\""});
  EXPECT_NE(memory.find("MiB this machine has available; about"), std::string::npos) << memory;
  const std::string replicas = refusal_of(two_tiers, {"service.back.replicas=400"});
  EXPECT_NE(replicas.find("at most 256 fit here"), std::string::npos) << replicas;
}

}  // namespace

namespace {

// The built-in twin-three-tier scaled down to a few seconds a strategy: the brownout from 1 s for
// 2 s of a 4 s run. The real figures the twins are held to agree with the simulated ones (at full
// size, bench/twin.sh runs each twin three times).
TEST(TwinWallClock, ThreeTierScaledDownAgreesWithItsSimulation) {
  net::system_load_options o;
  o.compare = true;
  const net::system_load_result r =
      net::run_system_load(test::builtin_source("twin-three-tier"),
                           {"run.duration=\"4s\"", "run.drain=\"2s\"",
                            "service.db.faults.0.at=\"1s\"", "brownout=\"2s\""},
                           std::nullopt, o);
  ASSERT_TRUE(r.simulated.has_value());
  ASSERT_EQ(r.real.strategies.size(), 4u);
  const auto rows = report::compare_twins(*r.simulated, r.real);
  EXPECT_TRUE(report::twins_agree(rows)) << report::agreement_table(rows);
  // The brownout shows in both: the database sheds or times out, and retries add attempts.
  const auto& every_layer = r.real.strategies[0];
  EXPECT_LT(every_layer.success_rate(), 0.95);
  EXPECT_GT(test::system_field(every_layer, "services.app.amplification"),
            test::system_field(every_layer, "services.gateway.amplification"));
}

}  // namespace
