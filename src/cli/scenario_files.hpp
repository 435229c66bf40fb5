// Where `backoff sim` and `backoff sweep` find a scenario: a TOML file, or the name of a
// built-in one (scenarios/*.toml, compiled in).
//
//   sim::scenario_source s = cli::resolve_scenario("tick-burst");   // or "my/exp.toml"
#pragma once

#include <string>

#include "scenario/scenario.hpp"

namespace backoff::cli {

// Throws sim::scenario_error naming the built-in scenarios when `arg` is neither.
sim::scenario_source resolve_scenario(const std::string& arg);

}  // namespace backoff::cli
