// SPDX-License-Identifier: Apache-2.0
// The exact message of each refusal a scenario file, a --set, a [sweep], a [[strategy]] or a
// [[map]] can meet: scripts and users read these lines, so they are compared whole, position
// included. The reads they guard (sweep values, map triggers) are pinned here too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace sim = backoff::sim;

struct refused_text {
  std::string text;
  std::vector<std::string> sets;
  std::string message;  // the whole message
};

// Loads and checks (model keys, and every sweep point's, included) without running.
std::string whole_error_of(const std::string& text, const std::vector<std::string>& sets) {
  try {
    sim::scenario sc = sim::scenario::load({"m.toml", text}, sets);
    if (!sc.is_map()) sim::check_scenario(sc);
    return "";
  } catch (const sim::scenario_error& e) {
    return e.what();
  }
}

void expect_messages(const std::vector<refused_text>& cases) {
  for (const auto& c : cases) {
    EXPECT_EQ(whole_error_of(c.text, c.sets), c.message) << c.text;
  }
}

const std::string burst_head = "scenario = \"t\"\nmodel = \"one-client-burst\"\n";
const std::string one_strategy = "[[strategy]]\nname = \"a\"\npolicy = \"none\"\n";

// idempotent is a TOML boolean, as max_attempts is an integer; the strategy reads it.
TEST(ScenarioMessages, IdempotentIsABoolean) {
  EXPECT_EQ(whole_error_of(burst_head + one_strategy + "idempotent = false\n", {}), "");
  const sim::scenario sc =
      sim::scenario::load({"m.toml", burst_head + one_strategy + "idempotent = false\n"}, {});
  EXPECT_FALSE(sc.strategies().at(0).guards().idempotent);
  expect_messages({
      {burst_head + one_strategy + "idempotent = \"no\"\n",
       {},
       "m.toml:6:14: strategy.idempotent: expected true or false, found a string"},
  });
}

TEST(ScenarioMessages, TypedKeysAndNames) {
  const std::string ok = burst_head + one_strategy;
  expect_messages({
      {ok + "[workload]\nrate_per_s = -1.5\n",
       {},
       "m.toml:7:14: workload.rate_per_s: -1.5 is out of range [1e-06, 1e+12]"},
      {ok + "[server]\nerrors_hold_slot = 1\n",
       {},
       "m.toml:7:20: server.errors_hold_slot: expected true or false, found an integer"},
      {ok + "[run]\nbucket = \"0s\"\n", {}, "m.toml:7:10: run.bucket: must be at least 1ns"},
      {ok + "[workload]\noperations = 1.5\n",
       {},
       "m.toml:7:14: workload.operations: expected an integer, found a number"},
      {"scenario = 3\n" + one_strategy,
       {},
       "m.toml:1:12: scenario: expected a string, found an integer"},
      {"scenario = \"\"\n" + one_strategy,
       {},
       "m.toml:1:12: scenario: missing: every scenario needs a name"},
      {"scenario = \"t\"\nmodel = \"\"\n" + one_strategy,
       {},
       "m.toml:2:9: model: empty: name a model, or leave the key out to use the scenario's name"},
      {"scenario = \"t\"\nmodel = \"ethernet-clients\"\n" + one_strategy +
           "[carrier_sense]\nstrategies = [\"a\", 1]\n",
       {},
       "m.toml:7:14: carrier_sense.strategies: expected an array of strings, found an integer in "
       "it"},
      {"scenario = \"t\"\nmodel = \"ethernet-clients\"\n" + one_strategy +
           "[carrier_sense]\nstrategies = \"a\"\n",
       {},
       "m.toml:7:14: carrier_sense.strategies: expected an array of strings, found a string"},
  });
}

TEST(ScenarioMessages, Overrides) {
  const std::string ok = burst_head + one_strategy;
  expect_messages({
      {ok, {"x"}, "--set x: expected key=value, e.g. server.max_busy=100"},
      {ok, {"=1"}, "--set =1: expected key=value, e.g. server.max_busy=100"},
      {ok, {"a..b=1"}, "--set a..b=1: empty part in key"},
      {ok, {"a=1\n2"}, "--set a: the value must be on one line"},
      {ok,
       {"server.max_busy=99999999999999999999"},
       "--set server.max_busy: 99999999999999999999 is out of range for an integer (at most "
       "9223372036854775807)"},
      {ok, {"scenario.x=1"}, "--set scenario.x: scenario is not a table"},
      {ok,
       {"server.max_busy=100ms"},
       "--set server.max_busy: server.max_busy: expected an integer, found a string"},
      {ok, {"server.bogus=1"}, "--set server.bogus: unknown key 'server.bogus'"},
  });
}

TEST(ScenarioMessages, Strategies) {
  expect_messages({
      {burst_head, {}, "m.toml:1:1: no [[strategy]]: a scenario needs at least one"},
      {burst_head + "strategy = 3\n", {}, "m.toml:3:12: strategy: expected [[strategy]] tables"},
      {burst_head + "[[strategy]]\nname = 3\n",
       {},
       "m.toml:4:8: strategy.name: expected a string, found an integer"},
      {burst_head + "[[strategy]]\npolicy = \"none\"\n", {}, "m.toml:3:1: strategy: missing name"},
      {burst_head + one_strategy + one_strategy, {}, "m.toml:6:1: strategy: name 'a' used twice"},
      {burst_head + one_strategy + "max_attempts = -1\n",
       {},
       "m.toml:6:16: strategy.max_attempts: expected an integer >= 0 (0 = unlimited)"},
      {burst_head + one_strategy + "max_attempts = \"3\"\n",
       {},
       "m.toml:6:16: strategy.max_attempts: expected an integer >= 0 (0 = unlimited)"},
      {burst_head + "[[strategy]]\nname = \"a\"\npolicy = 3\n",
       {},
       "m.toml:5:10: strategy.policy: expected a string, found an integer"},
      {burst_head + "[[strategy]]\nname = \"a\"\npolcy = \"none\"\n",
       {},
       "m.toml:5:1: unknown strategy key 'polcy' (did you mean 'policy'?) (known: name, policy, "
       "max_attempts, idempotent, window, budget, throttle, breaker, limiter, hedge, "
       "deadline, fallback)"},
  });
}

TEST(ScenarioMessages, Sweeps) {
  const auto sweep = [](const std::string& axes) {
    return burst_head + "[sweep]\n" + axes + "\n" + one_strategy;
  };
  expect_messages({
      {sweep("a = { start = \"1s\", stop = 2, step = \"1s\" }"),
       {},
       "m.toml:4:1: sweep.a: start, stop and step must all be durations (strings) or all numbers"},
      {sweep("a = { start = \"1s\", stop = \"x\", step = \"1s\" }"),
       {},
       "m.toml:4:1: sweep.a: bad duration \"x\": expected a number at position 1, found \"x\""},
      {sweep("a = { start = 1.5, stop = \"2\", step = 1 }"),
       {},
       "m.toml:4:1: sweep.a: start, stop and step must all be durations (strings) or all numbers"},
      {sweep("a = { start = 0.5, stop = 0.1, step = 0.1 }"),
       {},
       "m.toml:4:1: sweep.a: stop must not be less than start"},
      {sweep("a = { start = 0.0, stop = 1.0, step = 0.0 }"),
       {},
       "m.toml:4:1: sweep.a: step must be greater than 0"},
      {sweep("a = { start = 0.0, stop = 1e9, step = 1e-3 }"),
       {},
       "m.toml:4:1: sweep.a: more than 100000 values"},
      {sweep("a = { start = 5, stop = 1, step = 1 }"),
       {},
       "m.toml:4:1: sweep.a: stop must not be less than start"},
      {sweep("a = { start = \"1s\", stop = \"2s\", step = \"0s\" }"),
       {},
       "m.toml:4:1: sweep.a: step must be greater than 0"},
      {sweep("a = { start = 1, stop = 3, step = 1, by = 1 }"),
       {},
       "m.toml:4:38: sweep.a: unknown range key 'by' (known: start, stop, step)"},
      {sweep("a = { start = 1, stop = 3 }"),
       {},
       "m.toml:4:1: sweep.a: a range needs start, stop and step"},
      {sweep("a = [1, nan]"), {}, "m.toml:4:1: sweep.a: values must be finite"},
      {sweep("a = [1, 1979-05-27]"),
       {},
       "m.toml:4:1: sweep.a: values must be integers, numbers, strings or booleans, found a date "
       "or time"},
      {sweep("a = []"), {}, "m.toml:4:1: sweep.a: the list is empty"},
      {sweep("a = 3"),
       {},
       "m.toml:4:1: sweep.a: expected a list of values or { start, stop, step }, found an "
       "integer"},
      {sweep("seed = [1, 2]"),
       {},
       "m.toml:4:1: sweep.seed: cannot be swept (use replications for seeds)"},
      {sweep("about.claim = [\"x\"]"),
       {},
       "m.toml:4:7: sweep.about.claim: cannot be swept (use replications for seeds)"},
      {sweep("a = [1]"), {"sweep.a=[]"}, "--set sweep.a: sweep.a: the list is empty"},
      {sweep("a = [1]"),
       {"sweep=3"},
       "--set sweep: sweep: expected a table of keys and their values"},
      {"replications = 0\n" + burst_head + one_strategy,
       {},
       "m.toml:1:16: replications: 0 is out of range [1, 1000000]"},
      {sweep("server.max_busy = [5, 0]"),
       {},
       "m.toml:4:8 (sweep server.max_busy=0): server.max_busy: 0 is out of range [1, "
       "1000000000]"},
      {burst_head + "[sweep.server]\nmax_busy = [5, 0]\n" + one_strategy,
       {},
       "m.toml:4:1 (sweep server.max_busy=0): server.max_busy: 0 is out of range [1, "
       "1000000000]"},
  });
}

TEST(ScenarioMessages, SweepValuesKeepTheirTomlAndText) {
  const sim::scenario sc =
      sim::scenario::load({"v.toml", burst_head +
                                         "[sweep]\nx = [1, 2.5, true, \"a\\\"b\"]\n"
                                         "d = { start = \"1s\", stop = \"2s\", step = \"500ms\" }\n"
                                         "n = { start = 0.5, stop = 1, step = 0.25 }\n" +
                                         one_strategy});
  ASSERT_EQ(sc.axes().size(), 3u);
  std::vector<std::string> tomls, texts;
  for (const auto& axis : sc.axes()) {
    for (const auto& v : axis.values) {
      tomls.push_back(v.toml);
      texts.push_back(v.text);
    }
  }
  EXPECT_EQ(tomls, (std::vector<std::string>{"1", "2.5", "true", "\"a\\\"b\"", "\"1s\"", "\"1.5s\"",
                                             "\"2s\"", "0.5", "0.75", "1"}));
  EXPECT_EQ(texts, (std::vector<std::string>{"1", "2.5", "true", "a\"b", "1s", "1.5s", "2s", "0.5",
                                             "0.75", "1"}));
}

// One [[map]] with `fields` in it (each a line), after the scenario's name.
std::string one_map_text(const std::string& fields) {
  return "scenario = \"m\"\n[[map]]\n" + fields + "\n";
}

const std::string map_names = "scenario = \"metastable-queue\"\nstrategy = \"s\"\n";
const std::string map_load = "load = { key = \"workload.rate_per_s\", values = [5, 9.5] }\n";
const std::string map_trigger =
    "trigger = { key = \"spike.duration\", low = \"1s\", high = \"10s\", resolution = \"1s\" }\n";

TEST(ScenarioMessages, MapNamesAndSets) {
  const std::string rest = map_load + map_trigger;
  expect_messages({
      {"scenario = \"m\"\nmap = 3\n", {}, "m.toml:2:7: map: expected [[map]] tables"},
      {one_map_text("strategy = \"s\"\n" + rest), {}, "m.toml:2:1: map.scenario: missing"},
      {one_map_text("scenario = 3\nstrategy = \"s\"\n" + rest),
       {},
       "m.toml:3:12: map.scenario: expected a string, found an integer"},
      {one_map_text("scenario = \"\"\nstrategy = \"s\"\n" + rest),
       {},
       "m.toml:3:12: map.scenario: empty"},
      {one_map_text("scenario = \"q\"\n" + rest), {}, "m.toml:2:1: map.strategy: missing"},
      {one_map_text(map_names + "bogus = 1\n" + rest),
       {},
       "m.toml:5:1: unknown map key 'bogus' (known: scenario, strategy, set, load, trigger, "
       "replications, max_probes)"},
      {one_map_text(map_names + "set = \"a=1\"\n" + rest),
       {},
       "m.toml:5:7: map.set: expected a list of \"key=value\" strings"},
      {one_map_text(map_names + "set = [\"novalue\"]\n" + rest),
       {},
       "m.toml:5:8: map.set: each entry is a \"key=value\" string, as --set takes"},
      {one_map_text(map_names + "set = [\"=1\"]\n" + rest),
       {},
       "m.toml:5:8: map.set: each entry is a \"key=value\" string, as --set takes"},
      {one_map_text(map_names + "set = [3]\n" + rest),
       {},
       "m.toml:5:8: map.set: each entry is a \"key=value\" string, as --set takes"},
      {one_map_text(map_names + "set = [\"a b=1\"]\n" + rest),
       {},
       "m.toml:5:8: map.set: 'a b' is not a dotted scenario key"},
      {one_map_text(map_names + "set = [\"a..b=1\"]\n" + rest),
       {},
       "m.toml:5:8: map.set: empty part in key 'a..b'"},
      {one_map_text(map_names + "set = [\"model=x\"]\n" + rest),
       {},
       "m.toml:5:8: map.set: 'model' cannot be mapped"},
      {one_map_text(map_names + rest) + "[sweep]\nx = [1]\n",
       {},
       "m.toml:8:1: sweep: a metastable map ([[map]]) has no sweep of its own: each [[map]] names "
       "its loads and the mapped scenario's strategy"},
      {"model = \"other\"\n" + one_map_text(map_names + rest),
       {},
       "m.toml:1:9: model: a scenario with [[map]] tables is a metastable map: leave `model` out "
       "or set it to \"metastable-map\""},
      {"scenario = \"\"\n[[map]]\n" + map_names + rest,
       {},
       "m.toml:1:12: scenario: missing: every scenario needs a name"},
      {one_map_text(map_names + rest),
       {"replications=0"},
       "--set replications: replications: 0 is out of range [1, 1000]"},
      {one_map_text(map_names + rest) + "bogus = 1\n",
       {},
       "m.toml:8:1: unknown map key 'bogus' (known: scenario, strategy, set, load, trigger, "
       "replications, max_probes)"},
  });
}

TEST(ScenarioMessages, MapLoads) {
  const auto with_load = [](const std::string& load) {
    return one_map_text(map_names + load + "\n" + map_trigger);
  };
  std::string thousand_and_one = "0";
  for (int i = 1; i <= 1000; ++i) thousand_and_one += ", " + std::to_string(i);
  expect_messages({
      {one_map_text(map_names + map_trigger),
       {},
       "m.toml:2:1: map.load: expected { key = \"...\", values = [...] }"},
      {with_load("load = 3"),
       {},
       "m.toml:2:1: map.load: expected { key = \"...\", values = [...] }"},
      {with_load("load = { key = \"x\", values = [1], per = 1 }"),
       {},
       "m.toml:5:35: unknown map.load key 'per' (known: key, values, unit)"},
      {with_load("load = { values = [1] }"), {}, "m.toml:5:8: map.load.key: missing"},
      {with_load("load = { key = \"seed\", values = [1] }"),
       {},
       "m.toml:5:8: map.load.key: 'seed' cannot be mapped"},
      {with_load("load = { key = \"x\" }"),
       {},
       "m.toml:5:8: map.load.values: expected a non-empty list"},
      {with_load("load = { key = \"x\", values = [] }"),
       {},
       "m.toml:5:8: map.load.values: expected a non-empty list"},
      {with_load("load = { key = \"x\", values = [" + thousand_and_one + "] }"),
       {},
       "m.toml:5:8: map.load.values: more than 1000 loads"},
      {with_load("load = { key = \"x\", values = [\"1s\", 2] }"),
       {},
       "m.toml:5:37: map.load.values: all durations or all numbers"},
      {with_load("load = { key = \"x\", values = [1, nan] }"),
       {},
       "m.toml:5:34: map.load.values: must be finite"},
      {with_load("load = { key = \"x\", values = [\"fast\"] }"),
       {},
       "m.toml:5:31: map.load.values: bad duration \"fast\": expected a number at position 1, "
       "found \"f\""},
      {with_load("load = { key = \"x\", values = [true] }"),
       {},
       "m.toml:5:31: map.load.values: expected a number or a duration string, found a boolean"},
      {with_load("load = { key = \"x\", values = [1], unit = 3 }"),
       {},
       "m.toml:5:42: map.load.unit: expected a string, found an integer"},
      {with_load("load = { key = \"x\", values = [1], unit = \"\" }"),
       {},
       "m.toml:5:42: map.load.unit: empty"},
  });
}

TEST(ScenarioMessages, MapTriggersAndCounts) {
  const auto with_trigger = [](const std::string& trigger) {
    return one_map_text(map_names + map_load + trigger + "\n");
  };
  const std::string ok = one_map_text(map_names + map_load + map_trigger);
  expect_messages({
      {one_map_text(map_names + map_load),
       {},
       "m.toml:2:1: map.trigger: expected { key = \"...\", low = .., high = .., resolution = .. }"},
      {with_trigger("trigger = { key = \"k\", low = 1, high = 2, resolution = 1, by = 1 }"),
       {},
       "m.toml:6:59: unknown map.trigger key 'by' (known: key, low, high, resolution, unit)"},
      {with_trigger(
           "trigger = { key = \"workload.rate_per_s\", low = 1, high = 2, resolution = 1 }"),
       {},
       "m.toml:6:11: map.trigger.key: the same key as map.load.key"},
      {with_trigger("trigger = { key = \"k\", high = 2, resolution = 1 }"),
       {},
       "m.toml:6:11: map.trigger.low: missing"},
      {with_trigger("trigger = { key = \"k\", low = 1, resolution = 1 }"),
       {},
       "m.toml:6:11: map.trigger.high: missing"},
      {with_trigger("trigger = { key = \"k\", low = true, high = 2, resolution = 1 }"),
       {},
       "m.toml:6:30: map.trigger.low: expected a number or a duration string, found a boolean"},
      {with_trigger("trigger = { key = \"k\", low = 1, high = \"2s\", resolution = 1 }"),
       {},
       "m.toml:6:40: map.trigger: low, high and resolution must all be durations (strings) or all "
       "numbers"},
      {with_trigger("trigger = { key = \"k\", low = 5, high = 1, resolution = 1 }"),
       {},
       "m.toml:6:11: map.trigger: needs 0 <= low < high"},
      {with_trigger("trigger = { key = \"k\", low = -1, high = 1, resolution = 1 }"),
       {},
       "m.toml:6:11: map.trigger: needs 0 <= low < high"},
      {with_trigger("trigger = { key = \"k\", low = 1, high = 2, resolution = 0 }"),
       {},
       "m.toml:6:11: map.trigger.resolution: must be greater than 0"},
      {with_trigger("trigger = { key = \"k\", low = 1, high = 2, resolution = 1, unit = 1 }"),
       {},
       "m.toml:6:66: map.trigger.unit: expected a string, found an integer"},
      {ok + "replications = 0\n",
       {},
       "m.toml:8:16: map.replications: expected an integer in [1, 1000]"},
      {ok + "max_probes = 1\n",
       {},
       "m.toml:8:14: map.max_probes: expected an integer in [2, 1000]"},
      {ok + "max_probes = \"3\"\n",
       {},
       "m.toml:8:14: map.max_probes: expected an integer in [2, 1000]"},
  });
}

TEST(ScenarioMessages, MapReadsTheirTriggersAndLoads) {
  const auto first_map = [](const std::string& trigger) {
    return sim::scenario::load(
               {"m.toml",
                one_map_text(map_names + "load = { key = \"x\", values = [\"1s\", \"2.5s\"] }\n" +
                             trigger + "\nmax_probes = 4\n")})
        .maps()
        .at(0);
  };
  const sim::map_spec durations =
      first_map("trigger = { key = \"k\", low = \"1s\", high = \"1m\", resolution = \"250ms\" }");
  EXPECT_EQ(durations.load_values, (std::vector<double>{1, 2.5}));
  EXPECT_EQ(durations.load_unit, "s");
  EXPECT_EQ(durations.loads.at(1).toml, "\"2.5s\"");
  EXPECT_DOUBLE_EQ(durations.high, 60);
  EXPECT_EQ(durations.max_probes, 4u);
  EXPECT_EQ(durations.replications, 3u);
  EXPECT_EQ(durations.trigger_toml(1.25), "\"1.25s\"");
  const sim::map_spec integers =
      first_map("trigger = { key = \"k\", low = 1, high = 9, resolution = 2, unit = \"users\" }");
  EXPECT_TRUE(integers.trigger_is_integer);
  EXPECT_EQ(integers.trigger_unit, "users");
  EXPECT_EQ(integers.trigger_toml(4.6), "5");
  const sim::map_spec numbers =
      first_map("trigger = { key = \"k\", low = 0.5, high = 9, resolution = 2 }");
  EXPECT_FALSE(numbers.trigger_is_integer);
  EXPECT_EQ(numbers.trigger_toml(4.25), "4.25");
}

}  // namespace
