// SPDX-License-Identifier: Apache-2.0
// Every guard of one call edge as one value: the wait before a retry, the attempt limit, whether
// the call is idempotent, an AIMD window, a retry budget (or the AWS SDKs' retry quota), a
// throttle, a circuit breaker, a limiter (a bulkhead, an adaptive concurrency limit or a rate
// limiter), hedging, a deadline and the outcomes a fallback answers for. The loops run them in
// one order, outermost first: fallback, retry, breaker, timeout, limiters, hedging where it
// applies (docs/LIBRARY.md, "The order of the guards"). The fallback's value is the caller's (a
// fallback<T> built with the strategy's `fallback->on`); a simulator counts the operations it
// would answer. The simulator's [[strategy]] tables and
// `backoff load`'s flags both build this type, so a rule between guards (gRPC A6: hedging replaces
// retrying) is checked here once, for every driver.
//
//   backoff::strategy s = backoff::parse_strategy(
//       "policy=exponential(initial=50ms, max=10s, jitter=full), max_attempts=4, "
//       "idempotent=false, budget=quota(retry_cost=14), deadline=deadline(total=5s), "
//       "fallback=fallback(on=[breaker_open])");
//   std::string text = s.to_string();                // canonical; parses back equal
//   const backoff::retry_policy policy = s.retry();  // backoff, max_attempts, deadline total
//   backoff::strategy::live guards = s.instantiate();  // fresh budget, throttle, breaker
//   backoff::retry_controller op{policy, now, guards.gates()};
//   backoff::fallback<std::string> cached{"(cached)", s.fallback->on};  // apply(result) at the end
//
// The call sequence: set the fields (or set(key, text), or parse_strategy), validate() (set and
// parse_strategy leave cross-field rules to it; parse_strategy calls it), then, per run,
// instantiate() for the mutable parts and retry() for the controller's policy. A driver that
// cannot honour a guard asks refusal(what it supports) and refuses the strategy in one line.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/aimd_window.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/deadline.hpp"
#include "backoff/error.hpp"
#include "backoff/export.hpp"
#include "backoff/fallback.hpp"
#include "backoff/hedge.hpp"
#include "backoff/limiter.hpp"
#include "backoff/policy.hpp"
#include "backoff/retry.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"

namespace backoff {

// The `none` preset: retry at once. What a strategy without a policy waits.
BACKOFF_EXPORT const backoff_policy& no_wait_policy() noexcept;

// What a driver (a simulator model, the load generator) can honour of a strategy's guards. The
// policy, max_attempts, idempotent, window, budget and throttle run through retry_controller,
// which every driver uses; these need the driver's own events or targets.
struct guard_support {
  bool breaker = false;   // attempts go through the controller's gates (a limiter's too)
  bool hedge = false;     // two attempts of one operation can be in flight
  bool deadline = false;  // attempts can be cut at a per-attempt timeout
  bool keys = false;      // several targets to key a keyed breaker on
  bool queue = false;     // an attempt can wait in a bulkhead's line until a slot frees
  // Why not, in the refusal's words, when the reason is the driver's own.
  std::string_view breaker_why_not =
      "its clients do not retry through the library's retry controller";
  std::string_view keys_why_not = "it calls one server";
};

// A guard a driver cannot honour: the strategy key and why, for "... cannot honour
// strategy.KEY: WHY".
struct guard_refusal {
  std::string_view key;
  std::string why;
};

// Two or more keys of one strategy that contradict each other. what() names them by their
// strategy keys; a driver whose users know other names (flags) words it with message().
class BACKOFF_EXPORT strategy_error : public parse_error {
 public:
  strategy_error(std::vector<std::string_view> keys, std::string rule, std::string remedy);
  const std::vector<std::string_view>& keys() const noexcept { return keys_; }
  // "RULE: give it no NAME, NAME or NAME", each key named by `name_of`.
  template <class NameOf>
  std::string message(const NameOf& name_of) const {
    std::vector<std::string> names;
    for (const std::string_view key : keys_) names.emplace_back(name_of(key));
    return compose(names, rule_, remedy_);
  }

 private:
  static std::string compose(const std::vector<std::string>& names, const std::string& rule,
                             const std::string& remedy);
  std::vector<std::string_view> keys_;
  std::string rule_, remedy_;
};

struct strategy {
  backoff_policy policy = no_wait_policy();  // the wait before a retry
  std::uint32_t max_attempts = 0;            // per operation; 0: no limit
  bool idempotent = true;                    // false: retry only not_sent failures
  std::optional<aimd_config> window;         // paces sends through an AIMD window
  std::optional<budget_config> budget;       // may refuse a retry (or a hedge copy)
  std::optional<throttle_config> throttle;   // may refuse or pace an attempt
  std::optional<breaker_config> breaker;     // may refuse an attempt while open
  std::optional<limiter_config> limiter;     // may refuse, pace or queue an attempt
  std::optional<hedge_policy> hedge;         // copies of an operation instead of retries
  std::optional<deadline_config> deadline;   // the operation's time, and each attempt's
  std::optional<fallback_config> fallback;   // the outcomes a fallback answers for

  // The keys a strategy takes, in the order to_string writes them.
  BACKOFF_EXPORT static std::span<const std::string_view> keys();
  // Sets one key from its text ("budget", "token-bucket(max=10, ratio=0.1)"; "max_attempts",
  // "4"). Throws parse_error: an unknown key (with a did-you-mean), or a bad value.
  BACKOFF_EXPORT void set(std::string_view key, std::string_view text);
  // Whether a key holds a value other than its default.
  BACKOFF_EXPORT bool has(std::string_view key) const;

  // Throws strategy_error when guards contradict each other: hedging replaces retrying (gRPC A6:
  // no policy, max_attempts or window beside a hedge); a hedge's copies have no per-attempt
  // timeout (a deadline beside a hedge takes total and propagate only); a hedge sends copies
  // that may all reach the server (not with idempotent=false), and they are no operation's
  // retries, so a quota could not refund them (a hedge takes a token-bucket or ratio budget).
  BACKOFF_EXPORT void validate() const;
  // "policy=..., max_attempts=4, budget=..."; keys at their default left out but policy, which
  // is always written ("policy=none" for no wait). parse_strategy(to_string()) == *this.
  BACKOFF_EXPORT std::string to_string() const;
  // The first guard `can` does not honour, or none.
  BACKOFF_EXPORT std::optional<guard_refusal> refusal(const guard_support& can) const;

  // The controller's policy: the backoff, max_attempts, the deadline's total as max_elapsed, and
  // idempotent.
  BACKOFF_EXPORT retry_policy retry() const;
  // The policy is the `none` preset: a retry goes at once.
  BACKOFF_EXPORT bool retries_at_once() const noexcept;
  // Every delay the policy can draw is zero, and nothing bounds its retries (no max_attempts, no
  // budget): a driver whose failed attempt is answered at once would retry forever at one
  // instant.
  BACKOFF_EXPORT bool retries_forever_at_zero_delay() const noexcept;

  // The mutable parts for one run of one client (or of every client that shares them).
  struct live {
    std::optional<aimd_window> window;
    std::optional<retry_budget> budget;
    std::optional<backoff::throttle> throttle;
    std::unique_ptr<circuit_breaker> breaker;   // not movable: it is shared by address
    std::unique_ptr<backoff::limiter> limiter;  // likewise
    retry_gates gates() {
      return {budget ? &*budget : nullptr, throttle ? &*throttle : nullptr, breaker.get(),
              limiter.get()};
    }
  };
  BACKOFF_EXPORT live instantiate() const;

  friend bool operator==(const strategy&, const strategy&) = default;
};

// "KEY=VALUE, KEY=VALUE, ..." (the keys of strategy::keys(); a VALUE is a spec of its kind, whose
// own commas sit inside its parentheses or brackets), then validate(). Throws parse_error naming
// the bad key and quoting the text.
BACKOFF_EXPORT strategy parse_strategy(std::string_view text);

}  // namespace backoff
