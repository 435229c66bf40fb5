// SPDX-License-Identifier: Apache-2.0
// Circuit breakers: a client that has seen its dependency fail stops calling it for a while, so
// that a failing server is not also buried under the load of calls that cannot succeed. A budget
// (retry_budget.hpp) limits retries; a breaker can refuse first tries too.
//
//   backoff::circuit_breaker breaker{backoff::parse_breaker(
//       "breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s, half_open=3)")};
//   const auto permit = breaker.try_acquire(now(), /*first_try=*/true);
//   if (!permit) return fail_fast(breaker.open_remaining(now()));  // open: not called; the
//                                                                  // time left for Retry-After
//   const bool ok = call();
//   breaker.record(now(), permit, /*failure=*/!ok);    // every allowed permit is recorded
//
// Call sequence: try_acquire before each attempt; when it allows, exactly one of record (the
// attempt ended) or release (it was abandoned before it had a result) with that permit. For the
// retry-only and run-ratio kinds, which never refuse an attempt, ask retry_allowed(now) after a
// failure, before waiting to retry, as with a retry budget. retry_gates::breaker (retry.hpp)
// does all of this inside the retry loops.
//
// Four kinds, each as its source defines it:
//
// consecutive (Polly's classic breaker, failsafe-go's WithFailureThreshold(n)): opens after
//   `failures` failures in a row; a success resets the count.
// rate (resilience4j's CircuitBreaker, Polly's advanced breaker): over a sliding window of time
//   (`window=10s`) or of the last calls (`window=100calls`, resilience4j's COUNT_BASED), opens
//   when at least `min_calls` calls were recorded and failures / calls >= `threshold` (checked
//   after each recorded call, success or failure, as resilience4j does).
//   Both kinds then stay open for `open`, refusing every attempt; the first attempt after that
//   moves the breaker to half-open, where at most `half_open` trial calls are admitted; when all
//   of them succeed it closes (with its counts cleared), and the first failure among them opens
//   it again for another `open` (failsafe-go's success threshold; Polly with half_open=1).
//   With `trials=ratio` (rate only; jirfag/simulations' CircuitBreaker, "Good Retry, Bad
//   Retry"), a half-open breaker instead waits for the results of all `half_open` trials and
//   opens again when failed trials / trials >= `threshold`, else closes: a few failures among
//   many trials, as a dependency with a low base error rate always has, do not reopen it.
// retry-only (jirfag/simulations, "Good Retry, Bad Retry"): never refuses an attempt; a retry is
//   refused while failed attempts / attempts over the window (of time or of calls) is at or
//   above `threshold`. An empty window refuses: there is no evidence that retrying helps.
// run-ratio (Brooker's retry_sim, mbrooker/simulator_example retry_strategy.py,
//   CircuitBreakerRetryStrategy): never refuses an attempt; counts first tries and failed
//   attempts since the breaker was made, and refuses a retry when failed / first tries is above
//   `threshold` (strictly, as there). Nothing counted yet refuses, as an empty window does.
//
// Slow calls (rate only; resilience4j's slowCallDurationThreshold and slowCallRateThreshold):
//   with `slow=2s`, a call that took longer than 2 s from try_acquire to record (strictly, as
//   resilience4j's CircuitBreakerMetrics.onSuccess/onError compare `duration > threshold`) is
//   slow, success or failure; the breaker opens when, with at least `min_calls` in the window,
//   failures / calls >= `threshold` OR slow calls / calls >= `slow_threshold` (100% unless
//   given). Half-open, the trials decide on both: with trials=all the first failure reopens it
//   and, once all `half_open` trials succeeded, it reopens when slow trials / trials >=
//   `slow_threshold` (resilience4j's HalfOpenState judges both rates over its permitted calls);
//   with trials=ratio both rates of all the trials decide. The consecutive kind takes no slow=:
//   it counts failures in a row, and no peer defines slow calls in a row; a caller that wants
//   one slow call to count as a failure classifies it so.
//
// A break that grows (consecutive, rate; Polly v8's BreakDurationGenerator fed its
//   HalfOpenAttempts): with `open=5s, open_growth=2, open_max=5m` each reopening since the last
//   close stays open `open_growth` times longer than the one before, at most `open_max` (1d
//   when not given): 5 s, 10 s, 20 s, ... 5 min. A close (and every manual call) starts
//   again at `open`.
//
// Manual states (resilience4j's transitionToForcedOpenState, transitionToDisabledState,
//   transitionToMetricsOnlyState and reset; Polly's Isolate and Close), for every kind:
//   force_open refuses every attempt (and, for the retry-only and run-ratio kinds, every retry)
//   until another manual call; disable admits everything and counts nothing; metrics_only
//   admits everything and counts as closed does, but never opens (resilience4j then publishes
//   its failure-rate-exceeded events; this breaker's listener hears transitions only, so read
//   current_counts); reset closes it with every count cleared. Each reaches the listener as a
//   transition when it changes the state (resilience4j also publishes X -> X; we do not); the
//   counts are cleared on entering closed, forced_open, disabled and metrics_only, as
//   resilience4j gives each of those states fresh metrics.
//
// Time left open: open_remaining(now) is how long until the next try_acquire half-opens the
// breaker, for a Retry-After answer (failsafe-go's CircuitBreaker.RemainingDelay): 0 when it
// admits calls, nullopt when forced open (no end is known).
//
// What counts as a failure is the caller's: the retry loops record a retryable verdict as a
// failure and a success or a permanent verdict (the server answered) as a success.
//
// Threads: every member is safe to call concurrently. The closed path is lock-free and
// allocation-free: try_acquire is one atomic load (run-ratio adds one fetch_add), record a few
// relaxed atomic operations. Transitions, the half-open bookkeeping and the listener run under a
// mutex; an open breaker refuses without taking it. A result is counted only in the state
// generation that admitted it (a slow call admitted before the breaker opened does not count as
// a half-open trial, nor against the closed breaker that follows); a result racing a transition
// may still land in the new counts, at most one per racing thread.
//
// Time is injected: every call takes `now`, the caller's clock reading as a duration since that
// clock's epoch (steady_clock, a manual_clock in tests, the simulator's virtual time); the
// breaker never reads a clock, except in state() and open_remaining() without arguments, which
// read std::chrono::steady_clock: the clock the retry loops use by default (retry_env's `now`,
// detail::steady_now, is steady_clock's time since its epoch), so that state() and
// state(detail::steady_now()) agree for a breaker the loops drive on their default env.
//
// Transitions reach the listener given at construction, on the thread that made them, in order,
// while the breaker holds its transition lock: the listener may call state() but must not call
// try_acquire, record or release on the same breaker, and must not throw (it runs inside
// noexcept calls). hooks.hpp's count_transitions() counts them into a retry_metrics.
//
// parse_breaker reads the spec grammar (docs/POLICIES.md):
//   breaker(kind=consecutive, failures=5, open=5s, half_open=1)
//   breaker(kind=rate, threshold=50%, window=10s, min_calls=20, open=5s, half_open=3)
//   breaker(kind=rate, ..., half_open=100, trials=ratio)
//   breaker(kind=retry-only, threshold=10%, window=200ms)
//   breaker(kind=run-ratio, threshold=10%)
//   breaker(kind=rate, ..., slow=2s, slow_threshold=50%)
//   breaker(kind=consecutive, ..., open=5s, open_growth=2, open_max=5m)
// with `keyed=true, max_keys=1000` for one breaker per key (keyed_breakers.hpp), and the presets
// retry-only-10pct (jirfag's retry-only breaker at 10 %, window 200 ms) and run-ratio-10pct
// (Brooker's, 10 %), which take overrides: retry-only-10pct(window=1s).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/detail/sliding_counts.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"

namespace backoff {

enum class breaker_kind : std::uint8_t { consecutive, rate, retry_only, run_ratio };
// The first three the breaker moves between by itself; the last three only a manual call sets
// (force_open, disable, metrics_only) and only another manual call leaves.
enum class breaker_state : std::uint8_t {
  closed,
  open,
  half_open,
  forced_open,
  disabled,
  metrics_only
};
// How a half-open breaker decides: `all` trials must succeed (the first failure reopens it), or
// the failure `ratio` of all its trials against the threshold (rate kind only).
enum class half_open_rule : std::uint8_t { all, ratio };
inline constexpr std::size_t breaker_state_count = 6;

// "consecutive", "rate", "retry-only", "run-ratio": the spec's names.
BACKOFF_EXPORT std::string_view to_string(breaker_kind kind) noexcept;
// "closed", "open", "half_open", "forced_open", "disabled", "metrics_only".
BACKOFF_EXPORT std::string_view to_string(breaker_state state) noexcept;

// A breaker's configuration: an immutable value. Its defaults are the consecutive kind's row of
// the grammar; defaults(kind) gives another kind's row (what "breaker(kind=rate)" reads as).
// Fields that do not apply to the kind keep these defaults (validate() says so otherwise), so
// that to_string() names every field that matters and parse_breaker reads it back equal.
struct BACKOFF_EXPORT breaker_config {
  breaker_kind kind = breaker_kind::consecutive;
  std::uint32_t failures = 5;                   // consecutive: failures in a row that open it
  double threshold = 0.5;                       // rate, retry-only, run-ratio: (0, 1], millionths
  duration window = std::chrono::seconds{10};   // rate, retry-only: a window of time, (0, 1d] ...
  std::uint32_t window_calls = 0;               // ... or of the last N calls (then window is 0)
  std::uint32_t min_calls = 20;                 // rate: calls in the window before it may open
  duration open = std::chrono::seconds{5};      // consecutive, rate: how long it stays open
  std::uint32_t half_open = 1;                  // consecutive, rate: trial calls in half-open
  half_open_rule trials = half_open_rule::all;  // rate: how the trials decide (`trials=ratio`)
  bool keyed = false;                           // one breaker per key (keyed_breakers.hpp)
  std::uint32_t max_keys = 1000;                // keyed: breakers kept at most
  duration slow{0};                             // rate: a longer call is slow; 0: none is
  double slow_threshold = 1.0;                  // rate with slow: (0, 1], millionths
  double open_growth = 1.0;                     // consecutive, rate: each reopening's factor
  duration open_max{0};                         // with open_growth > 1: the cap; 0: 1d

  static breaker_config defaults(breaker_kind kind) noexcept;

  // Throws parse_error with one line naming the bad value.
  void validate() const;
  // "breaker(kind=consecutive, failures=5, open=5s, half_open=1)"; parse_breaker gives it back.
  std::string to_string() const;

  friend bool operator==(const breaker_config&, const breaker_config&) = default;
};

// Reads a breaker spec or a preset with overrides. Throws parse_error with one line that quotes
// the spec and names the bad part ("bad breaker \"...\": ..."); a key that does not apply to the
// kind is an error, not ignored.
BACKOFF_EXPORT breaker_config parse_breaker(std::string_view text);

struct breaker_transition {
  breaker_state from;
  breaker_state to;
  duration at;  // the `now` of the call that made it
};

using breaker_listener = std::function<void(const breaker_transition&)>;

class BACKOFF_EXPORT circuit_breaker {
 public:
  // try_acquire's answer; pass it back to record or release.
  struct permit {
    bool allowed = false;
    bool trial = false;      // a half-open trial: its result decides the next state
    bool first_try = false;  // as given to try_acquire
    std::uint64_t generation = 0;
    duration acquired{0};  // try_acquire's `now`: record's `now` minus this is the call's length

    explicit operator bool() const noexcept { return allowed; }
  };

  explicit circuit_breaker(const breaker_config& config, breaker_listener listener = {});
  ~circuit_breaker();
  circuit_breaker(const circuit_breaker&) = delete;
  circuit_breaker& operator=(const circuit_breaker&) = delete;

  // Whether an attempt may be sent now. `first_try`: the operation's first attempt (the
  // run-ratio kind counts them). Never refuses for the retry-only and run-ratio kinds, unless
  // forced open.
  permit try_acquire(duration now, bool first_try) noexcept {
    const std::uint64_t w = word_.load(std::memory_order_acquire);
    if (state_of(w) != breaker_state::closed) return acquire_slow(now, first_try, w);
    if (first_try && config_.kind == breaker_kind::run_ratio) {
      first_tries_.fetch_add(1, std::memory_order_relaxed);
    }
    return {true, false, first_try, w >> state_bits, now};
  }

  // The attempt a permit allowed has ended; `failure` as the caller classifies it. A refused
  // permit is ignored.
  void record(duration now, const permit& p, bool failure) noexcept {
    if (!p.allowed) return;
    if (p.trial) {
      record_trial(now, p, failure);
    } else if (config_.kind == breaker_kind::consecutive) {
      const std::uint64_t w = word_.load(std::memory_order_acquire);
      // Admitted by an earlier state, or by a disabled breaker: not counted.
      if ((w >> state_bits) != p.generation || state_of(w) == breaker_state::disabled) return;
      if (!failure) {
        // A healthy dependency writes nothing: the count is already 0.
        if (consecutive_.load(std::memory_order_relaxed) != 0) {
          consecutive_.store(0, std::memory_order_relaxed);
        }
      } else if (consecutive_.fetch_add(1, std::memory_order_relaxed) + 1 >= config_.failures &&
                 state_of(w) == breaker_state::closed) {
        trip(now, w);
      }
    } else {
      record_counts(now, p, failure);
    }
  }

  // The attempt a permit allowed was abandoned without a result (an exception the loop does not
  // retry, a destroyed coroutine): a half-open trial gives its place back, so an abandoned
  // attempt cannot hold the breaker half-open for ever. Nothing else is counted.
  void release(const permit& p) noexcept;

  // For the retry-only and run-ratio kinds: whether a failed operation may retry now (decided
  // when the failure arrives, after it was recorded). For the other kinds: whether the breaker
  // is not open at `now` (the next try_acquire decides).
  bool retry_allowed(duration now) const noexcept;

  // The state at `now`: an open breaker whose open time is over reads half_open (what the next
  // try_acquire will find). The retry-only and run-ratio kinds are closed unless a manual call
  // set forced_open, disabled or metrics_only.
  breaker_state state(duration now) const noexcept;
  // The state now on std::chrono::steady_clock, the retry loops' default clock (see above).
  breaker_state state() const noexcept;

  // How long until the next try_acquire half-opens an open breaker (0 once that time is
  // reached), for a refused call's Retry-After; 0 in every state that admits calls (closed,
  // half_open, disabled, metrics_only); nullopt when forced open, which ends only by a manual
  // call.
  std::optional<duration> open_remaining(duration now) const noexcept;
  std::optional<duration> open_remaining() const noexcept;  // on steady_clock, as state()

  // Manual states, for every kind. Each takes the lock and, when it changes the state, tells the
  // listener (transition.at = now); a call that finds the state already set does nothing, but
  // reset always clears the counts and the grown break.
  void force_open(duration now) noexcept;    // refuses everything until another manual call
  void disable(duration now) noexcept;       // admits everything, counts nothing
  void metrics_only(duration now) noexcept;  // admits everything, counts, never opens
  void reset(duration now) noexcept;         // closed, counts cleared, the break back at `open`

  // The calls and failures the breaker is counting at `now`: the window (rate, retry-only), the
  // failures in a row (consecutive: calls = failures), or since the start (run-ratio: calls are
  // the first tries, failures the failed attempts). For tests and reports.
  struct counts {
    std::uint64_t calls = 0;
    std::uint64_t failures = 0;
    std::uint64_t slow = 0;  // rate with slow=: the slow calls among them, failed or not
  };
  counts current_counts(duration now) const noexcept;

  const breaker_config& config() const noexcept { return config_; }

 private:
  class call_window;

  // The word's low bits hold the state, the rest the generation.
  static constexpr unsigned state_bits = 3;
  static constexpr breaker_state state_of(std::uint64_t w) noexcept {
    return static_cast<breaker_state>(w & ((1U << state_bits) - 1));
  }
  static constexpr std::uint64_t word_of(std::uint64_t generation, breaker_state s) noexcept {
    return (generation << state_bits) | static_cast<std::uint64_t>(s);
  }

  permit acquire_slow(duration now, bool first_try, std::uint64_t seen) noexcept;
  void record_trial(duration now, const permit& p, bool failure) noexcept;
  void record_counts(duration now, const permit& p, bool failure) noexcept;
  void add_to_window(duration now, bool failure, bool slow) noexcept;
  bool is_slow(duration now, const permit& p) const noexcept {
    return slow_ns_ > 0 && (now - p.acquired).count() > slow_ns_;
  }
  void trip(duration now, std::uint64_t seen) noexcept;
  // Under mutex_: the transitions.
  void move_locked(breaker_state to, duration now) noexcept;
  void manual_move(breaker_state to, duration now) noexcept;
  void clear_counts_locked() noexcept;
  counts window_counts(duration now) const noexcept;
  bool at_or_above_threshold(counts c) const noexcept {
    return c.failures * 1'000'000 >= threshold_ppm_ * c.calls;
  }
  // The rate kind's rule, in closed (over the window) and in half-open (over the trials).
  bool slow_rate_opens_it(counts c) const noexcept {
    return slow_ns_ > 0 && c.slow * 1'000'000 >= slow_threshold_ppm_ * c.calls;
  }
  bool rates_open_it(counts c) const noexcept {
    return at_or_above_threshold(c) || slow_rate_opens_it(c);
  }

  breaker_config config_;
  breaker_listener listener_;
  bool gates_;                   // consecutive and rate: attempts pass through the states
  std::uint64_t threshold_ppm_;  // threshold in millionths
  std::int64_t open_ns_;         // config_.open in nanoseconds
  std::int64_t open_max_ns_;     // the longest break, in nanoseconds
  std::int64_t slow_ns_;         // config_.slow in nanoseconds; 0: no call is slow
  std::uint64_t slow_threshold_ppm_;
  // (generation << state_bits) | state. Every transition adds one to the generation, so a
  // permit knows whether the state that admitted it still holds.
  std::atomic<std::uint64_t> word_{0};
  // When an open breaker may half-open; written before the open word is published.
  std::atomic<std::int64_t> open_until_ns_{0};
  std::atomic<std::uint32_t> consecutive_{0};
  detail::sliding_counts time_window_;         // (calls, failures); rate and retry-only over time
  detail::sliding_counts slow_window_;         // (slow calls, slow failures); rate over time
  std::unique_ptr<call_window> calls_;         // rate and retry-only over the last N calls
  std::atomic<std::uint64_t> first_tries_{0};  // run-ratio
  std::atomic<std::uint64_t> failed_attempts_{0};  // run-ratio
  std::mutex mutex_;
  std::uint32_t trials_admitted_ = 0;  // half-open, under mutex_
  std::uint32_t trial_successes_ = 0;  // half-open, under mutex_
  std::uint32_t trial_failures_ = 0;   // half-open with trials=ratio, under mutex_
  std::uint32_t trial_slow_ = 0;       // half-open with slow=, under mutex_
  std::int64_t next_open_ns_;          // the next break, grown at each opening; under mutex_
};

}  // namespace backoff
