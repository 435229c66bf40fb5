// SPDX-License-Identifier: Apache-2.0
// What a call answers when every other guard has failed: a fixed value, or a function of why it
// failed (a cached copy, a default, a degraded answer). The outermost guard of a strategy: it
// sees the retry loop's result, after the retries, the breaker, the timeouts and the limiters
// have all had their say.
//
//   backoff::fallback<std::string> from_cache{[&](const backoff::fallback_reason& why) {
//     log_degraded(backoff::to_string(why.why), why.attempts);
//     return cache.get(key);
//   }};
//   auto result = backoff::retry(fetch, options);
//   backoff::answer<std::string> a = from_cache.apply(std::move(result));
//   if (a.fell_back) count_degraded();   // a.why says why: breaker_open, attempts_exhausted...
//   serve(a.value);
//
// Call sequence: build it once (it is immutable and may be shared between threads when its
// function is); per call, apply() to the loop's result, or, inside a catch block around a loop
// whose operation threw an exception the loop does not retry, from_exception(). Nothing here
// sleeps, reads a clock or allocates beyond what the function does.
//
// Which failures it answers for: every outcome but `succeeded` and `cancelled` by default (a
// caller that cancelled wants no answer: Polly's default predicate leaves
// OperationCanceledException alone too); `handles` narrows or widens the set. A permanent failure
// is answered for by default, as Polly's and failsafe-go's fallbacks handle every failure unless
// told otherwise: narrow it when a 404 must reach the caller.
//
// As strategy text (a simulator's [[strategy]], `backoff load --strategy`), a fallback names only
// the outcomes it answers for, `fallback=fallback(on=[breaker_open, limited])`, since the value is
// the caller's: fallback_config, parse_fallback. A driver counts the operations it would answer.
//
// Sources: Polly v8 FallbackStrategyOptions (FallbackAction, ShouldHandle), failsafe-go
// fallback (OfFunc, OfResult), resilience4j's Decorators.withFallback. Unlike Polly, the value's
// origin is never hidden: answer::fell_back and answer::why say that, and why, it was used.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "backoff/export.hpp"
#include "backoff/outcome.hpp"
#include "backoff/retry.hpp"

namespace backoff {

// Why the fallback was asked for an answer.
struct fallback_reason {
  outcome why = outcome::succeeded;  // how the loop ended
  std::uint32_t attempts = 0;        // attempts the loop made
  std::exception_ptr error;          // the last attempt's exception, or the one that escaped
};

// A call's answer: the operation's value, or the fallback's.
template <class R>
struct answer {
  R value;
  bool fell_back = false;            // value is the fallback's
  outcome why = outcome::succeeded;  // how the loop ended (succeeded when it did)
  std::uint32_t attempts = 0;
};

// The outcomes a fallback answers for.
class fallback_outcomes {
 public:
  // Every failure but a cancellation.
  constexpr fallback_outcomes() noexcept {
    for (std::size_t i = 0; i < outcome_count; ++i) handled_[i] = true;
    handled_[index(outcome::succeeded)] = false;
    handled_[index(outcome::cancelled)] = false;
  }
  // Exactly these.
  constexpr fallback_outcomes(std::initializer_list<outcome> only) noexcept : handled_{} {
    for (const outcome o : only) handled_[index(o)] = true;
  }
  // None yet: add() them one by one.
  static constexpr fallback_outcomes none() noexcept {
    return fallback_outcomes(std::initializer_list<outcome>{});
  }
  constexpr void add(outcome o) noexcept { handled_[index(o)] = true; }
  constexpr bool contains(outcome o) const noexcept { return handled_[index(o)]; }
  constexpr bool empty() const noexcept {
    for (const bool handled : handled_) {
      if (handled) return false;
    }
    return true;
  }
  friend constexpr bool operator==(const fallback_outcomes&, const fallback_outcomes&) = default;

 private:
  static constexpr std::size_t index(outcome o) noexcept { return static_cast<std::size_t>(o); }
  std::array<bool, outcome_count> handled_;
};

// A fallback as text: which outcomes it answers for (the value is the caller's).
//   backoff::fallback_config f = backoff::parse_fallback("fallback(on=[breaker_open, limited])");
//   backoff::fallback<std::string> from_cache{"(cached)", f.on};
struct fallback_config {
  fallback_outcomes on;  // every failure but a cancellation unless narrowed

  // "fallback()" for the default set, else "fallback(on=[...])" in the outcomes' order.
  BACKOFF_EXPORT std::string to_string() const;
  // Throws parse_error when it answers for nothing or for `succeeded`.
  BACKOFF_EXPORT void validate() const;
  friend bool operator==(const fallback_config&, const fallback_config&) = default;
};

// "fallback()" or "fallback(on=[OUTCOME, ...])" (outcome names as to_string(outcome) writes
// them; one name may stand without brackets). Throws parse_error naming the bad outcome, with a
// did-you-mean.
BACKOFF_EXPORT fallback_config parse_fallback(std::string_view text);

template <class R>
class fallback {
 public:
  using function = std::function<R(const fallback_reason&)>;

  // A fixed value.
  explicit fallback(R value, fallback_outcomes handles = {})
      : source_(std::move(value)), handles_(handles) {}
  // A value computed from why the call failed (it may throw: that reaches the caller).
  explicit fallback(function make, fallback_outcomes handles = {})
      : source_(std::move(make)), handles_(handles) {}

  bool handles(outcome o) const noexcept { return handles_.contains(o); }

  // The loop's value when it succeeded (or ended in an outcome the fallback does not handle,
  // with a value to give), else the fallback's. A result the fallback does not handle and that
  // has no value (a cancellation before any answer) is returned as R{} only when R is default
  // constructible; otherwise the caller must check why first: this throws std::bad_optional_access.
  answer<R> apply(retry_result<R>&& result) const {
    const outcome why = result.why;
    if (!handles(why)) {
      if (result.last) return {std::move(*result.last), false, why, result.attempts};
      if constexpr (std::is_default_constructible_v<R>) {
        return {R{}, false, why, result.attempts};
      } else {
        throw std::bad_optional_access();
      }
    }
    return {make({why, result.attempts, std::move(result.error)}), true, why, result.attempts};
  }

  // Inside a catch block: the operation threw an exception the loop does not retry, so no
  // result came back. Answers as for a permanent failure (when handled; else rethrows).
  answer<R> from_exception(std::uint32_t attempts = 1) const {
    std::exception_ptr e = std::current_exception();
    if (!handles(outcome::permanent)) std::rethrow_exception(e);
    return {make({outcome::permanent, attempts, std::move(e)}), true, outcome::permanent, attempts};
  }

 private:
  R make(const fallback_reason& why) const {
    if (const auto* fixed = std::get_if<R>(&source_)) return *fixed;
    return std::get<function>(source_)(why);
  }

  std::variant<R, function> source_;
  fallback_outcomes handles_;
};

}  // namespace backoff
