// SPDX-License-Identifier: Apache-2.0
// A scenario's [[strategy]] (SPEC 6.3, 7.2), typed and checked once, when the scenario loads: the
// library's own pieces, a backoff policy with max_attempts (a retry_policy), and an optional AIMD
// window, retry budget, throttle, circuit breaker, hedging policy and deadline. Runner, models,
// sweeps and charts use these values; nothing parses a strategy's text after load. The simulator
// runs exactly this code, on virtual time; it has no policy logic of its own.
//
//   const sim::client_strategy& s = scenario.strategies()[i];  // parsed by scenario::load
//   auto live = s.instantiate();                 // fresh window/budget/throttle for one run
//   backoff::retry_controller op{s.policy(), now, live.gates()};
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backoff/aimd_window.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/deadline.hpp"
#include "backoff/hedge.hpp"
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
    std::optional<breaker_config> breaker;
    std::optional<hedge_policy> hedge;
    std::optional<deadline_config> deadline;
  };

  explicit client_strategy(parts p) : p_(std::move(p)) {}

  // The shared, mutable parts for one run of one client (or of all clients that share them).
  struct live {
    std::optional<aimd_window> window;
    std::optional<retry_budget> budget;
    std::optional<backoff::throttle> throttle;
    std::unique_ptr<circuit_breaker> breaker;  // not movable: it is shared by address
    retry_gates gates() {
      return {budget ? &*budget : nullptr, throttle ? &*throttle : nullptr, breaker.get()};
    }
  };
  live instantiate() const {
    live l;
    if (p_.window) l.window.emplace(*p_.window);
    if (p_.budget) l.budget.emplace(*p_.budget);
    if (p_.throttle) l.throttle.emplace(*p_.throttle);
    if (p_.breaker) l.breaker = std::make_unique<circuit_breaker>(*p_.breaker);
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
  const std::optional<breaker_config>& breaker() const noexcept { return p_.breaker; }
  const std::optional<hedge_policy>& hedge() const noexcept { return p_.hedge; }
  const std::optional<deadline_config>& deadline() const noexcept { return p_.deadline; }
  // The policy is the `none` preset (retry at once), also what a strategy without one gets.
  bool retries_at_once() const noexcept { return p_.policy.backoff == find_preset("none")->policy; }
  // Every delay its policy can draw is zero (`none`, a zero base with a jitter that keeps it
  // zero, a zero cap after jitter), and nothing bounds its retries (no max_attempts, no budget):
  // a model whose failed attempt is answered at once would then retry forever at one instant.
  bool retries_forever_at_zero_delay() const noexcept {
    return p_.policy.max_attempts == 0 && !p_.budget && always_zero(p_.policy.backoff);
  }

 private:
  static bool always_zero(const backoff_policy& b) noexcept {
    const duration zero{0};
    if (b.max == zero && b.cap == cap_mode::after) return true;
    if (b.jitter == jitter_kind::decorrelated) return b.initial == zero || b.max == zero;
    const bool base_zero =
        (b.initial == zero && (b.schedule != schedule_kind::linear || b.step == zero)) ||
        (b.max == zero && b.cap == cap_mode::before);
    switch (b.jitter) {
      case jitter_kind::additive:
        return base_zero && b.jitter_max == zero;
      case jitter_kind::gaussian:
        return base_zero && b.sd == zero;
      default:
        return base_zero;  // none, full, equal, multiplicative, proportional scale the base
    }
  }

  parts p_;
};

}  // namespace backoff::sim
