// SPDX-License-Identifier: Apache-2.0
// A scenario's [[strategy]] (docs/SIMULATOR.md): its name, where it was written, and the
// library's backoff::strategy that holds its guards, read and validated once when the scenario
// loads. Runner, models, sweeps and charts use these values; nothing parses a strategy's text
// after load. The simulator runs exactly the library's code, on virtual time; it has no policy
// logic of its own.
//
//   const sim::client_strategy& s = scenario.strategies()[i];  // read by scenario::load
//   auto live = s.instantiate();                 // fresh window/budget/throttle for one run
//   backoff::retry_controller op{s.policy(), now, live.gates()};
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backoff/strategy.hpp"
#include "systems/edge_setting.hpp"

namespace backoff::sim {

// A guard a system scenario's [[strategy]] sets on one named edge (`edge.db.max_attempts = 1`):
// the system reader lays it over that edge's [edge.NAME] defaults (docs/SYSTEMS.md).
using edge_setting = systems::edge_setting;

class client_strategy {
 public:
  using live = backoff::strategy::live;

  // `where`: "file:line:col" of its [[strategy]] table, for messages.
  client_strategy(std::string name, std::string where, backoff::strategy guards)
      : name_(std::move(name)),
        where_(std::move(where)),
        guards_(std::move(guards)),
        policy_(guards_.retry()) {}

  const std::string& name() const noexcept { return name_; }
  const std::string& where() const noexcept { return where_; }
  const backoff::strategy& guards() const noexcept { return guards_; }
  // The controller's policy (it refers to it, so it lives here, as long as the strategy).
  const retry_policy& policy() const noexcept { return policy_; }
  live instantiate() const { return guards_.instantiate(); }
  // The edge.NAME.KEY settings, in file order (only the system model takes them).
  const std::vector<edge_setting>& edge_settings() const noexcept { return edges_; }
  void set_edge_settings(std::vector<edge_setting> settings) { edges_ = std::move(settings); }

  bool has_window() const noexcept { return guards_.window.has_value(); }
  bool has_budget() const noexcept { return guards_.budget.has_value(); }
  bool has_throttle() const noexcept { return guards_.throttle.has_value(); }
  const std::optional<aimd_config>& window() const noexcept { return guards_.window; }
  const std::optional<budget_config>& budget() const noexcept { return guards_.budget; }
  const std::optional<throttle_config>& throttle() const noexcept { return guards_.throttle; }
  const std::optional<breaker_config>& breaker() const noexcept { return guards_.breaker; }
  const std::optional<hedge_policy>& hedge() const noexcept { return guards_.hedge; }
  const std::optional<deadline_config>& deadline() const noexcept { return guards_.deadline; }
  bool retries_at_once() const noexcept { return guards_.retries_at_once(); }
  bool retries_forever_at_zero_delay() const noexcept {
    return guards_.retries_forever_at_zero_delay();
  }

 private:
  std::string name_;
  std::string where_;
  backoff::strategy guards_;
  retry_policy policy_;
  std::vector<edge_setting> edges_;
};

}  // namespace backoff::sim
