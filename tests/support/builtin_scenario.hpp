// Runs a built-in scenario (scenarios/*.toml, compiled in) as the simulator tests need it: by
// name, with --set overrides and a seed, and no output files.
//
//   const auto r = backoff::test::run_builtin("outage-recovery", {"quirks=false"}, 7);
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "run/runner.hpp"
#include "scenario/scenario.hpp"

namespace backoff::test {

inline sim::scenario_result run_builtin(const std::string& name,
                                        const std::vector<std::string>& sets = {},
                                        std::uint64_t seed = 1) {
  for (const auto& source : sim::builtin_scenarios()) {
    if (source.path == "builtin/" + name + ".toml") {
      sim::scenario sc = sim::scenario::load(source, sets);
      sc.set_seed(seed);
      return sim::run_scenario(sc, {});
    }
  }
  ADD_FAILURE() << "no built-in scenario " << name;
  return {};
}

}  // namespace backoff::test
