// SPDX-License-Identifier: Apache-2.0
// A [[strategy]]'s fallback in the simulator: it changes nothing the clients or the server do,
// and counts, of the failed operations, exactly those whose outcome it answers for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "report/recorder.hpp"
#include "report/summary.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;
namespace report = backoff::report;

// Seed 004's server, paused for 20 s: some operations use up max_attempts before 1000
// failures in a row open the breaker, which then ends the others.
constexpr std::string_view fallback_sim_scenario = R"toml(
scenario = "fallback"
model = "outage-recovery"
seed = 3
[workload]
clients = 300
think_mean = "2s"
timeout = "1s"
[server]
limit = 30
[outage]
start = "20s"
duration = "20s"
[run]
duration = "80s"
[[strategy]]
name = "plain"
policy = "constant(initial=200ms)"
max_attempts = 3
breaker = "breaker(kind=consecutive, failures=1000, open=2s)"
[[strategy]]
name = "any"
policy = "constant(initial=200ms)"
max_attempts = 3
breaker = "breaker(kind=consecutive, failures=1000, open=2s)"
fallback = "fallback()"
[[strategy]]
name = "exhausted"
policy = "constant(initial=200ms)"
max_attempts = 3
breaker = "breaker(kind=consecutive, failures=1000, open=2s)"
fallback = "fallback(on=[attempts_exhausted])"
[[strategy]]
name = "open"
policy = "constant(initial=200ms)"
max_attempts = 3
breaker = "breaker(kind=consecutive, failures=1000, open=2s)"
fallback = "fallback(on=[breaker_open])"
)toml";

std::optional<double> fallback_sim_field(const report::strategy_summary& s, std::string_view name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

std::uint64_t fallback_sim_count(const report::strategy_summary& s) {
  const std::optional<double> rate = fallback_sim_field(s, report::fell_back_rate_field);
  if (!rate) return UINT64_MAX;
  return static_cast<std::uint64_t>(std::llround(*rate * static_cast<double>(s.operations)));
}

TEST(FallbackSim, CountsExactlyTheOutcomesItAnswersForAndChangesNothingElse) {
  sim::scenario sc = sim::scenario::load({"fallback.toml", std::string(fallback_sim_scenario)});
  sim::run_options o;
  o.threads = 1;
  const report::scenario_result r = sim::run_scenario(sc, o);
  ASSERT_EQ(r.strategies.size(), 4u);
  const report::strategy_summary& plain = r.strategies[0];
  ASSERT_GT(plain.gave_up, 0u);
  for (const auto& s : r.strategies) {
    EXPECT_EQ(s.operations, plain.operations) << s.name;
    EXPECT_EQ(s.completed, plain.completed) << s.name;
    EXPECT_EQ(s.gave_up, plain.gave_up) << s.name;
    EXPECT_EQ(s.attempts, plain.attempts) << s.name;
  }
  EXPECT_FALSE(fallback_sim_field(plain, report::fell_back_rate_field).has_value());
  // fallback(): every failure here (no cancellation in a simulation).
  EXPECT_EQ(fallback_sim_count(r.strategies[1]), plain.gave_up);
  const std::optional<double> answered =
      fallback_sim_field(r.strategies[1], report::answered_rate_field);
  ASSERT_TRUE(answered.has_value());
  EXPECT_DOUBLE_EQ(*answered, static_cast<double>(plain.completed + plain.gave_up) /
                                  static_cast<double>(plain.operations));
  // With max_attempts and a breaker, an operation fails one of two ways, and each is counted by
  // the fallback that answers for it alone.
  const std::uint64_t exhausted = fallback_sim_count(r.strategies[2]);
  const std::uint64_t open = fallback_sim_count(r.strategies[3]);
  EXPECT_GT(exhausted, 0u);
  EXPECT_GT(open, 0u);
  EXPECT_EQ(exhausted + open, plain.gave_up);
}

}  // namespace
