// SPDX-License-Identifier: Apache-2.0
// Runs a built-in scenario (scenarios/*.toml, compiled in) as the simulator tests need it: by
// name, with --set overrides and a seed, and no output files.
//
//   const auto r = backoff::test::run_builtin("outage-recovery", {"quirks=false"}, 7);
//   sim::scenario sc = sim::scenario::load(backoff::test::builtin_source("mm1"), {"seed=2"});
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::test {

// scenarios/NAME.toml as compiled in.
inline const sim::scenario_source& builtin_source(const std::string& name) {
  for (const auto& source : sim::builtin_scenarios()) {
    if (source.path == "builtin/" + name + ".toml") return source;
  }
  throw std::runtime_error("no built-in scenario " + name);
}

inline report::scenario_result run_builtin(const std::string& name,
                                           const std::vector<std::string>& sets = {},
                                           std::uint64_t seed = 1) {
  sim::scenario sc = sim::scenario::load(builtin_source(name), sets);
  sc.set_seed(seed);
  return sim::run_scenario(sc, {});
}

// Options that run a scenario's sweep on `threads` worker threads and write nothing.
inline sim::run_options on_threads(unsigned threads) {
  sim::run_options o;
  o.threads = threads;
  return o;
}

// A run's strategies by name.
inline std::map<std::string, report::strategy_summary> by_name(const report::scenario_result& r) {
  std::map<std::string, report::strategy_summary> m;
  for (const auto& s : r.strategies) m[s.name] = s;
  return m;
}

}  // namespace backoff::test
