// SPDX-License-Identifier: Apache-2.0
// Scenario files as users write them: every mistake is one line `file:line:col: message` (or
// `--set key: message`), found before anything runs.
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/run/runner.hpp"

namespace {

using backoff::sim::scenario;
using backoff::sim::scenario_error;

const std::string valid = R"toml(scenario = "t"
model = "one-client-burst"
[workload]
operations = 10
[[strategy]]
name = "a"
policy = "constant(initial=1s)"
)toml";

// Loads and checks (model keys included) without running; returns the error or "".
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    scenario sc = scenario::load({"bad.toml", text}, sets);
    backoff::sim::check_scenario(sc);
    return "";
  } catch (const scenario_error& e) {
    return e.what();
  }
}

struct bad_scenario {
  std::string text;
  std::vector<std::string> sets;
  std::string expected;  // the message must contain this (position included)
};

class ScenarioRejects : public testing::TestWithParam<bad_scenario> {};

TEST_P(ScenarioRejects, WithOneLineNamingFileLineAndColumn) {
  const std::string message = error_of(GetParam().text, GetParam().sets);
  ASSERT_FALSE(message.empty()) << "accepted: " << GetParam().text;
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    BadFiles, ScenarioRejects,
    testing::Values(
        bad_scenario{
            valid + "[server]\nmax_bsy = 3\n",
            {},
            "bad.toml:9:1: unknown key 'server.max_bsy' (did you mean 'server.max_busy'?)"},
        bad_scenario{valid + "[server]\nmax_busy = \"50\"\n",
                     {},
                     "bad.toml:9:12: server.max_busy: expected an integer, found a string"},
        bad_scenario{valid + "[server]\nconnect = \"-100ms\"\n",
                     {},
                     "bad.toml:9:11: server.connect: bad duration \"-100ms\": negative"},
        bad_scenario{
            valid + "[server]\nconnect = 100\n", {}, "server.connect: expected a duration string"},
        bad_scenario{valid + "[server]\nsuccess = \"5 parsecs\"\n", {}, "unknown unit"},
        bad_scenario{"scenario = \"t\"\nmodel = \"one-client-burst\"\n",
                     {},
                     "bad.toml:1:1: no [[strategy]]"},
        bad_scenario{valid + "[[strategy]]\nname = \"b\"\npolicy = \"exponential(fator=2)\"\n",
                     {},
                     "bad.toml:10:10: strategy.policy: bad policy"},
        bad_scenario{valid + "[[strategy]]\nname = \"b\"\nwindow = \"aimd(decrease=2)\"\n",
                     {},
                     "bad.toml:10:10: strategy.window"},
        bad_scenario{valid + "[[strategy]]\nname = \"b\"\nbudget = \"token-bucket(max=-1)\"\n",
                     {},
                     "bad.toml:10:10: strategy.budget"},
        bad_scenario{valid + "[[strategy]]\nname = \"b\"\nthrottle = \"sre(k=banana)\"\n",
                     {},
                     "bad.toml:10:12: strategy.throttle"},
        bad_scenario{
            valid + "[[strategy]]\nname = \"b\"\nmax_attempts = -1\n", {}, "strategy.max_attempts"},
        bad_scenario{valid + "[[strategy]]\npolicy = \"none\"\n",
                     {},
                     "bad.toml:8:1: strategy: missing name"},
        bad_scenario{valid + "[[strategy]]\nname = \"a\"\n", {}, "name 'a' used twice"},
        bad_scenario{
            valid + "[[strategy]]\nname = \"b\"\npolcy = \"none\"\n",
            {},
            "bad.toml:10:1: unknown strategy key 'polcy' (did you mean 'policy'?) (known: name, "
            "policy, max_attempts, idempotent, window, budget, throttle, breaker, limiter, "
            "hedge, deadline, fallback)"},
        bad_scenario{
            "model = \"one-client-burst\"\n[[strategy]]\nname = \"a\"\n", {}, "scenario: missing"},
        bad_scenario{"scenario = \"t\"\nmodel = \"no-such-model\"\n[[strategy]]\nname = \"a\"\n",
                     {},
                     "bad.toml:2:9: model: unknown model 'no-such-model'"},
        bad_scenario{"scenario = \"t\"\nmodel = \"\"\n[[strategy]]\nname = \"a\"\n",
                     {},
                     "bad.toml:2:9: model: empty"},  // refused at load, not only by the check
        bad_scenario{"scenario = \"t\"\nmodel = \n", {}, "bad.toml:2:"},
        bad_scenario{valid + "[workload]\n", {}, "bad.toml:"},  // table defined twice
        bad_scenario{valid.substr(0, valid.find("[[strategy]]")) +
                         "rate_per_s = -5\n[[strategy]]\nname = \"a\"\n",
                     {},
                     "workload.rate_per_s: -5 is out of range"},
        bad_scenario{valid.substr(0, valid.find("[[strategy]]")) +
                         "operations = 0\n[[strategy]]\nname = \"a\"\n",
                     {},
                     ""},  // duplicate key: TOML error
        bad_scenario{valid + "[server]\nerrors_hold_slot = \"yes\"\n",
                     {},
                     "server.errors_hold_slot: expected true or false, found a string"},
        bad_scenario{
            valid + "seed = -3\n", {}, ""},  // seed after a table belongs to it: unknown key
        bad_scenario{
            valid, {"server.max_bsy=100"}, "--set server.max_bsy: unknown key 'server.max_bsy'"},
        bad_scenario{valid, {"server.max_busy"}, "--set server.max_busy: expected key=value"},
        bad_scenario{valid,
                     {"server.max_busy=-4"},
                     "--set server.max_busy: server.max_busy: -4 is out of range"},
        bad_scenario{valid,
                     {"server.connect=fast"},
                     "--set server.connect: server.connect: bad duration \"fast\""},
        bad_scenario{valid,
                     {"workload.operations.x=1"},
                     "--set workload.operations.x: operations is not a table"},
        bad_scenario{valid + "[bogus]\n", {}, "bad.toml:8:"},
        bad_scenario{valid + "[bogus]\n", {}, "unknown table 'bogus'"},
        bad_scenario{valid + "[workload.extra]\n", {}, "unknown table 'workload.extra'"},
        bad_scenario{valid + "[server.connect_x]\n", {}, "unknown table 'server.connect_x'"}));

// toml++ recurses per key part and per nesting level: tens of thousands of them overflowed the
// stack (a segfault) from a file and from --set. Bounded before toml++ sees the text.
TEST(Scenario, DeepKeysAndNestingAreRefusedBeforeParsing) {
  std::string parts = "a";
  for (int i = 0; i < 50'000; ++i) parts += ".a";
  EXPECT_NE(error_of(valid + "[" + parts + "]\n").find("bad.toml:8:"), std::string::npos);
  EXPECT_NE(error_of(valid + "[" + parts + "]\n").find("a key of more than 64 parts"),
            std::string::npos);
  EXPECT_NE(error_of(valid + parts + " = 1\n").find("a key of more than 64 parts"),
            std::string::npos);
  EXPECT_NE(error_of(valid + "x = {" + parts + " = 1}\n").find("more than 64 parts"),
            std::string::npos);
  const std::string deep = "x = " + std::string(50'000, '[') + std::string(50'000, ']') + "\n";
  EXPECT_NE(error_of(valid + deep).find("nested more than 64 deep"), std::string::npos);
  const std::string from_set = error_of(valid, {parts + "=1"});
  EXPECT_EQ(from_set.rfind("--set a.a.a", 0), 0u) << from_set.substr(0, 200);
  EXPECT_NE(from_set.find("a key of more than 64 parts"), std::string::npos);
  EXPECT_LT(from_set.size(), 200u) << "the message repeats the whole key";
  EXPECT_NE(error_of(valid, {"server.max_busy=" + std::string(50'000, '[')}).find("nested"),
            std::string::npos);
  // Dots in strings and numbers are no key parts.
  EXPECT_EQ(error_of(valid + "[server]\nconnect = \"" + parts + "\"\n").find("parts"),
            std::string::npos);
}

// An empty table of keys the model reads leaves their defaults: not a mistake.
TEST(Scenario, AnEmptyKnownTableIsAccepted) {
  EXPECT_EQ(error_of(valid + "[server]\n"), "");
  EXPECT_EQ(error_of(valid + "[run]\n"), "");
}

TEST(Scenario, SetOverridesAKeyAndReadsBareWordsAsStrings) {
  scenario sc =
      scenario::load({"ok.toml", valid}, {"server.connect=250ms", "workload.operations=7"});
  auto& keys = sc.config();
  EXPECT_EQ(keys.duration_value("server.connect", std::chrono::seconds{1}),
            std::chrono::milliseconds{250});
  EXPECT_EQ(keys.integer("workload.operations", 1, 1, 100), 7);
}

TEST(Scenario, EveryBuiltInScenarioLoadsAndChecks) {
  const auto& all = backoff::sim::builtin_scenarios();
  ASSERT_FALSE(all.empty());
  for (const auto& source : all) {
    scenario sc = scenario::load(source);
    EXPECT_NO_THROW(backoff::sim::check_scenario(sc)) << source.path;
    EXPECT_TRUE(sc.is_map() || !sc.strategies().empty()) << source.path;
  }
}

// Found by fuzz/scenario_fuzzer.cpp (fuzz/regressions/scenario/).
TEST(Scenario, ErrorsEscapeControlCharactersFromKeysAndOverrides) {
  for (const std::string& message :
       {error_of(valid, {"a\nb=1"}), error_of(valid, {"x=\x01"}),
        error_of(valid + "[server]\n\"max\\nbusy\" = 3\n"),
        error_of(valid + "[[strategy]]\nname = \"a\\nb\"\n\"pol\\ticy\" = \"none\"\n")}) {
    ASSERT_FALSE(message.empty());
    for (const char c : message) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << message;
    }
  }
  EXPECT_NE(error_of(valid + "[server]\n\"max\\nbusy\" = 3\n").find("'server.max\\nbusy'"),
            std::string::npos);
}

TEST(Scenario, RangesNeverStepPastStopOrInt64) {
  const std::string text =
      "scenario = \"t\"\n[sweep]\n"
      "a = { start = 0, stop = 9223372036854775807, "
      "step = 4611686018427387904 }\n"
      "b = { start = \"0s\", stop = \"9223372036.854775807s\", "
      "step = \"4611686018.427387904s\" }\n"
      "[[strategy]]\nname = \"s\"\n";
  const scenario sc = scenario::load({"range.toml", text});
  ASSERT_EQ(sc.axes().size(), 2u);
  ASSERT_EQ(sc.axes()[0].values.size(), 2u);
  EXPECT_EQ(sc.axes()[0].values[1].text, "4611686018427387904");
  ASSERT_EQ(sc.axes()[1].values.size(), 2u);
  EXPECT_EQ(sc.axes()[1].values[1].text, "53375d23h53m38.427387904s");
}

TEST(Scenario, AGridBeyondAMillionPointsIsRefusedBeforeItIsBuilt) {
  const std::string axes =
      "scenario = \"t\"\n[sweep]\n"
      "a = { start = 1, stop = 100000, step = 1 }\n"
      "b = { start = 1, stop = 100000, step = 1 }\n"
      "[[strategy]]\nname = \"s\"\n";
  const std::string message = error_of(axes);
  EXPECT_NE(message.find("bad.toml:4:1: sweep.b: the grid would have more than 1000000 points"),
            std::string::npos)
      << message;
  // Pinning one axis leaves a grid of 100000 points.
  EXPECT_EQ(scenario::load({"bad.toml", axes}, {"b=3"}).points().size(), 100000u);
}

}  // namespace
