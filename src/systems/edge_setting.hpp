// SPDX-License-Identifier: Apache-2.0
// What a compared strategy of a system file sets on its edges (docs/SYSTEMS.md, "[[strategy]]"):
// each `edge.NAME.KEY = VALUE`, and the strategy as the system reader resolves it over the edges'
// defaults (system_spec::resolve). The simulator's [[strategy]] reader makes them; a real run of
// the same file reads the same.
//
//   edge_setting set{"db", "max_attempts", "1", "mine.toml:30:1"};
//   spec.resolve(std::vector<strategy_edges>{{name, where, &guards, &settings}});
#pragma once

#include <string>
#include <vector>

#include "backoff/strategy.hpp"

namespace backoff::systems {

// A guard (or an edge option: on_give_up, breaker_asks) a strategy sets on one named edge
// (`edge.db.max_attempts = 1`), laid over that edge's [edge.NAME] defaults.
struct edge_setting {
  std::string edge;   // "db"
  std::string key;    // a backoff::strategy key ("max_attempts") or an edge option
  std::string text;   // its value as strategy::set reads it: "1"
  std::string where;  // "file:line:col" of the value
};

// One compared strategy as the system reader needs it: its name and place for messages, the
// guards set at its top (refused there: a system sets guards per edge), and its edge settings.
struct strategy_edges {
  std::string_view name, where;
  const backoff::strategy* guards = nullptr;
  const std::vector<edge_setting>* edges = nullptr;
};

}  // namespace backoff::systems
