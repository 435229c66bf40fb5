// SPDX-License-Identifier: Apache-2.0
// How a model refuses a strategy it cannot run (model_runner::check, model.hpp): one line that
// names the strategy's [[strategy]] table and the strategy, then why, the same in every model.
//
//   if (strategy.has_window()) refuse_strategy(strategy, "this model has no window");
//   // throws "scenario.toml:12:1: strategy aimd: this model has no window"
#pragma once

#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/strategy.hpp"

namespace backoff::sim {

[[noreturn]] inline void refuse_strategy(const client_strategy& strategy, const std::string& why) {
  throw scenario_error(strategy.where() + ": strategy " + strategy.name() + ": " + why);
}

}  // namespace backoff::sim
