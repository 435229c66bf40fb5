// A scenario's [[strategy]] (SPEC 6.3) made of the library's own pieces: the backoff policy and
// max_attempts (a retry_policy), an optional AIMD window, retry budget and throttle. The simulator
// runs exactly this code, on virtual time; it has no policy logic of its own.
//
//   sim::client_strategy s{spec};               // parses once; throws backoff::parse_error
//   auto live = s.instantiate();                 // fresh window/budget/throttle for one run
//   backoff::retry_controller op{s.policy(), now, live.gates()};
#pragma once

#include <optional>
#include <string>

#include "backoff/aimd_window.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::sim {

class client_strategy {
 public:
  explicit client_strategy(const strategy_spec& spec)
      : name_(spec.name),
        where_(spec.where),
        policy_{parse_policy(spec.policy), spec.max_attempts, duration{0}},
        window_(spec.window.empty() ? std::nullopt
                                    : std::optional<aimd_config>(parse_window(spec.window))),
        budget_(spec.budget.empty() ? std::nullopt
                                    : std::optional<budget_config>(parse_budget(spec.budget))),
        throttle_(spec.throttle.empty()
                      ? std::nullopt
                      : std::optional<throttle_config>(parse_throttle(spec.throttle))) {}

  // The shared, mutable parts for one run of one client (or of all clients that share them).
  struct live {
    std::optional<aimd_window> window;
    std::optional<retry_budget> budget;
    std::optional<backoff::throttle> throttle;
    retry_gates gates() { return {budget ? &*budget : nullptr, throttle ? &*throttle : nullptr}; }
  };
  live instantiate() const {
    live l;
    if (window_) l.window.emplace(*window_);
    if (budget_) l.budget.emplace(*budget_);
    if (throttle_) l.throttle.emplace(*throttle_);
    return l;
  }

  const std::string& name() const noexcept { return name_; }
  // "file:line:col" of the strategy's table, for messages.
  const std::string& where() const noexcept { return where_; }
  const retry_policy& policy() const noexcept { return policy_; }
  bool has_window() const noexcept { return window_.has_value(); }

 private:
  std::string name_;
  std::string where_;
  retry_policy policy_;
  std::optional<aimd_config> window_;
  std::optional<budget_config> budget_;
  std::optional<throttle_config> throttle_;
};

}  // namespace backoff::sim
