// A scenario's [[strategy]] (SPEC 6.3), typed and checked once, when the scenario loads: the
// library's own pieces, a backoff policy with max_attempts (a retry_policy), and an optional AIMD
// window, retry budget and throttle. Runner, models, sweeps and charts use these values; nothing
// parses a strategy's text after load. The simulator runs exactly this code, on virtual time; it
// has no policy logic of its own.
//
//   const sim::client_strategy& s = scenario.strategies()[i];  // parsed by scenario::load
//   auto live = s.instantiate();                 // fresh window/budget/throttle for one run
//   backoff::retry_controller op{s.policy(), now, live.gates()};
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "backoff/aimd_window.hpp"
#include "backoff/presets.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"

namespace backoff::sim {

class client_strategy {
 public:
  struct parts {
    std::string name;
    std::string where;    // "file:line:col" of its [[strategy]] table, for messages
    retry_policy policy;  // backoff and max_attempts; no deadline
    std::optional<aimd_config> window;
    std::optional<budget_config> budget;
    std::optional<throttle_config> throttle;
  };

  explicit client_strategy(parts p) : p_(std::move(p)) {}

  // The shared, mutable parts for one run of one client (or of all clients that share them).
  struct live {
    std::optional<aimd_window> window;
    std::optional<retry_budget> budget;
    std::optional<backoff::throttle> throttle;
    retry_gates gates() { return {budget ? &*budget : nullptr, throttle ? &*throttle : nullptr}; }
  };
  live instantiate() const {
    live l;
    if (p_.window) l.window.emplace(*p_.window);
    if (p_.budget) l.budget.emplace(*p_.budget);
    if (p_.throttle) l.throttle.emplace(*p_.throttle);
    return l;
  }

  const std::string& name() const noexcept { return p_.name; }
  const std::string& where() const noexcept { return p_.where; }
  const retry_policy& policy() const noexcept { return p_.policy; }
  bool has_window() const noexcept { return p_.window.has_value(); }
  bool has_budget() const noexcept { return p_.budget.has_value(); }
  bool has_throttle() const noexcept { return p_.throttle.has_value(); }
  const std::optional<aimd_config>& window() const noexcept { return p_.window; }
  const std::optional<budget_config>& budget() const noexcept { return p_.budget; }
  const std::optional<throttle_config>& throttle() const noexcept { return p_.throttle; }
  // The policy is the `none` preset (retry at once), also what a strategy without one gets.
  bool retries_at_once() const noexcept { return p_.policy.backoff == find_preset("none")->policy; }

 private:
  parts p_;
};

}  // namespace backoff::sim
