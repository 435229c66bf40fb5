// SPDX-License-Identifier: Apache-2.0
// Hedging (gRPC A6's hedging policy): instead of waiting for a failure before trying again, send
// another copy of the call when the first has not answered after `delay`, up to `max_attempts`
// copies in flight; the first success wins and the others are cancelled. It trades extra load for
// a shorter tail of latency, so every copy after the first is charged to the retry budget and
// the throttle, as a retry would be.
//
//   const backoff::hedge_policy p =
//     backoff::parse_hedge("hedge(max_attempts=3, delay=1s, non_fatal=[429, 503])");
//   const std::string text = p.to_string();                 // canonical; parses back equal
//   const backoff::verdict v = p.classify_status(503);      // non-fatal: the next copy goes now
//
// hedge_controller (below) makes every decision; the coroutine loop (async_hedge.hpp), the
// simulator and the load generator only carry them out. What ends a hedged call:
// - a success: it wins, the other copies are cancelled (outcome::succeeded);
// - a fatal answer (verdict_kind::permanent, a status outside non_fatal): the other copies are
//  cancelled and that answer is the result (outcome::permanent);
// - every copy sent has answered non-fatally and no more may be sent: attempts_exhausted when
//  max_attempts were sent or the server pushed back, budget_exhausted or throttled when a gate
//  refused the next copy;
// - the call's deadline (max_elapsed, when given), whatever is in flight (deadline_exceeded);
// - the caller cancels (cancelled).
//
// Departures from A6, each on purpose:
// - max_attempts above 5 is refused rather than silently treated as 5 (A6's client-side cap,
//  meant for configurations that arrive by DNS): a spec written by hand that the program reads
//  differently from what it says is worse than an error. 1 is allowed (A6 asks for > 1): the
//  no-hedging baseline of a sweep, with the same driver.
// - Any pushback (a verdict carrying retry_after: Retry-After, or a classifier's way of saying
//  "do not hedge") stops further copies for this call. A6 would instead send the next copy
//  after the pushback delay; a Retry-After is usually seconds, far beyond a hedging delay
//  chosen for tail latency, and a server that asks clients to wait is exactly the one that
//  hedging would overload.
// - A gate's refusal also stops further copies for the call (A6: the refused hedge is dropped,
//  and the call fails if nothing else is in flight); no gate is asked twice for one copy.
//
// No sync form: a blocking call cannot be cancelled, so the losers would run to completion on
// their threads after the winner returned, which is the load hedging must not leave behind.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/outcome.hpp"
#include "backoff/random.hpp"
#include "backoff/retry.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

// Immutable and shareable; written "hedge(max_attempts=3, delay=1s, non_fatal=[429, 503])".
struct BACKOFF_EXPORT hedge_policy {
  // gRPC A6's client-side cap on copies of one call.
  static constexpr std::uint32_t max_attempts_limit = 5;

  std::uint32_t max_attempts = 2;  // copies of the call, the first included: 1..5
  duration delay{0};               // between copies when none answered: [0, 1d]; 0: all at once
  std::vector<int> non_fatal;      // HTTP statuses (100..599) that send the next copy at once

  // Throws parse_error with one line naming the bad value.
  void validate() const;
  // "hedge(max_attempts=3, delay=1s, non_fatal=[429, 503])", non_fatal sorted and each status
  // once; parse_hedge(p.to_string()) == p.
  std::string to_string() const;

  bool is_non_fatal(int status) const noexcept {
    return std::find(non_fatal.begin(), non_fatal.end(), status) != non_fatal.end();
  }
  // An HTTP answer under this policy: 1xx-3xx succeed (as classify_http_status says), a status in
  // non_fatal is non-fatal (retryable, with retry_after as the server's pushback), any other is
  // fatal (permanent).
  verdict classify_status(int status, std::optional<duration> retry_after = std::nullopt) const;
};

// Equal when they hedge alike: non_fatal compares as a set (order and repeats do not matter).
BACKOFF_EXPORT bool operator==(const hedge_policy& a, const hedge_policy& b);

// Reads "hedge(max_attempts=N, delay=D, non_fatal=[S, ...])"; max_attempts is required (A6),
// delay defaults to 0 and non_fatal to none; "non_fatal=503" is a list of one. Throws parse_error
// with one line: bad hedge "<spec>": <why>.
BACKOFF_EXPORT hedge_policy parse_hedge(std::string_view text);

// Why a hedged call stopped sending copies (it may still be waiting for those in flight).
enum class hedge_stop : std::uint8_t {
  none,          // it may send more
  max_attempts,  // max_attempts copies were sent
  pushback,      // an answer carried retry_after
  budget,        // the retry budget refused the next copy
  throttle,      // the throttle refused the next copy
  breaker,       // the circuit breaker refused the next copy
};

namespace detail {

// The breaker permits of a hedged call's copies, from send to answer. One owner: a moved-from
// set releases nothing, and whatever is still held when the set is destroyed (a call abandoned
// mid-flight: its coroutine destroyed, a driver dropping it) is released, as retry_controller's
// lease does, so that a half-open trial among them is not held for ever.
class hedge_permits {
 public:
  explicit hedge_permits(circuit_breaker* breaker) noexcept : breaker_(breaker) {}
  hedge_permits(const hedge_permits&) = delete;
  hedge_permits& operator=(const hedge_permits&) = delete;
  hedge_permits(hedge_permits&& other) noexcept
      : breaker_(std::exchange(other.breaker_, nullptr)), held_(other.held_) {}
  hedge_permits& operator=(hedge_permits&&) = delete;
  ~hedge_permits() { release_all(); }

  void hold(std::uint32_t copy, const circuit_breaker::permit& p) noexcept { held_[copy] = p; }
  // Copy `copy` (from 0) answered.
  void record(std::uint32_t copy, duration now, bool failure) noexcept {
    if (breaker_ == nullptr || !held_[copy].allowed) return;
    breaker_->record(now, held_[copy], failure);
    held_[copy].allowed = false;
  }
  void record_oldest_as_failure(duration now) noexcept {
    for (std::uint32_t n = 0; n < held_.size(); ++n) {
      if (held_[n].allowed) return record(n, now, true);
    }
  }
  void release_all() noexcept {
    if (breaker_ == nullptr) return;
    for (circuit_breaker::permit& p : held_) {
      if (p.allowed) breaker_->release(p);
      p.allowed = false;
    }
  }

 private:
  circuit_breaker* breaker_;
  std::array<circuit_breaker::permit, hedge_policy::max_attempts_limit> held_{};
};

}  // namespace detail

// The decisions of one hedged call, shared by every driver. It never reads a clock or sleeps:
// each event brings its time as `now` (any monotonic clock's reading as a duration since its
// epoch; only differences matter). Call sequence:
//
//   backoff::hedge_controller c{policy, gates};
//   auto s = c.start(now(), rng);                 // the first copy (or done: throttled)
//   for (;;) {
//     if (s.what == backoff::hedge_controller::action::send) launch(s.attempt, s.wait);
//     if (s.what == backoff::hedge_controller::action::done) {
//       cancel_in_flight();                       // losers, whatever s.why says
//       break;
//     }
//     if (c.timer_due(now())) {                   // delay 0 sends every copy this way at once
//       s = c.on_timer(now(), rng);
//       continue;
//     }
//     const event e = wait_until(c.wake_at());    // an answer, or the time of the next copy
//     s = e.answered ? c.on_answer(e.attempt, e.verdict, now(), rng) : c.on_timer(now(), rng);
//   }
//
// launch(n, w) sends copy n (from 1) after the throttle's pacing wait w (usually 0). A copy that
// the driver had to give up without an answer (it threw, and the classifier retries that) is an
// answer too: pass the classifier's verdict. The driver may also end the call itself: cancel().
//
// Gates, as retry_controller charges them: budget->on_request once (at start), try_retry for every
// copy after the first (a ratio budget spends one retry; the token bucket checks its threshold,
// as A6's throttling does), throttle->before_send for every copy (the first included: a refusal
// there ends the call as throttled with nothing sent). Each answer is reported once: success and
// non-fatal to budget->on_outcome and throttle->on_response; fatal to the throttle only (the
// server took it: not an overload), as retry_controller does. A circuit breaker is asked before
// every copy: the first as a first try, the others as retries (retry_allowed, then try_acquire),
// a refusal of the first ending the call as breaker_open with nothing sent; each answer is
// recorded with its copy's permit (a failure only when non-fatal), and the permits of copies
// cancelled unanswered are released. Copies cancelled as losers, and answers that arrive after
// the end, are reported to no one else.
class hedge_controller {
 public:
  enum class action : std::uint8_t {
    none,  // nothing to do now: wait for an answer or until wake_at()
    send,  // send copy `attempt` after `wait`
    done,  // the call ends (`why`); cancel every copy still in flight
  };
  struct step {
    action what = action::none;
    std::uint32_t attempt = 0;         // when send: the copy's number, from 1
    duration wait{0};                  // when send: the throttle's pacing before sending
    outcome why = outcome::succeeded;  // when done
  };

  // Copies what it needs of `policy` (a policy outside validate()'s ranges is clamped into them).
  // max_elapsed > 0: the call ends at start + max_elapsed whatever is in flight (A6's deadline).
  explicit hedge_controller(const hedge_policy& policy, retry_gates gates = {},
                            duration max_elapsed = duration{0}) noexcept
      : limit_(std::clamp<std::uint32_t>(policy.max_attempts, 1, hedge_policy::max_attempts_limit)),
        delay_(std::max(policy.delay, duration{0})),
        max_elapsed_(std::max(max_elapsed, duration{0})),
        gates_(gates),
        permits_(gates.breaker) {}

  // The first copy. Only the first call does anything.
  template <bit_generator64 G>
  step start(duration now, G& g) {
    if (started_) return {};
    started_ = true;
    deadline_ = max_elapsed_.count() > 0 ? saturating_add(now, max_elapsed_) : duration::max();
    if (gates_.budget != nullptr) gates_.budget->on_request(now);
    circuit_breaker::permit permit;
    if (gates_.breaker != nullptr) {
      permit = gates_.breaker->try_acquire(now, true);
      if (!permit.allowed) {
        stopped_ = hedge_stop::breaker;
        return finish(outcome::breaker_open);
      }
    }
    duration wait{0};
    if (gates_.throttle != nullptr) {
      const auto d = gates_.throttle->before_send(now, g);
      if (d.reject) {
        if (permit.allowed) gates_.breaker->release(permit);  // nothing was sent
        stopped_ = hedge_stop::throttle;
        return finish(outcome::throttled);
      }
      wait = d.wait;
    }
    return sent_one(now, wait, permit);
  }

  // The time of the next copy or the deadline has come (or not yet: then nothing happens).
  template <bit_generator64 G>
  step on_timer(duration now, G& g) {
    if (!live()) return {};
    if (now >= deadline_) return finish_at_deadline(now);
    if (stopped_ == hedge_stop::none && now >= next_copy_) return hedge(now, g);
    return {};
  }

  // Copy `attempt` answered. A number never sent, a second answer for one copy and any answer
  // after the end are ignored (step none) and reported to no one.
  template <bit_generator64 G>
  step on_answer(std::uint32_t attempt, const verdict& v, duration now, G& g) {
    if (!live() || attempt == 0 || attempt > sent_) return {};
    const std::uint32_t bit = 1U << (attempt - 1);
    if ((answered_bits_ & bit) != 0) return {};
    answered_bits_ |= bit;
    ++answered_;
    report(attempt, v, now);
    switch (v.kind) {
      case verdict_kind::success:
        winner_ = attempt;
        return finish(outcome::succeeded);
      case verdict_kind::permanent:
        winner_ = attempt;
        return finish(outcome::permanent);
      case verdict_kind::retryable:
        break;
    }
    if (v.retry_after) {
      pushed_back_ = true;
      if (stopped_ == hedge_stop::none) stopped_ = hedge_stop::pushback;
    }
    if (now >= deadline_) return finish_at_deadline(now);
    // A6: a non-fatal answer sends the next copy at once, shortcutting its delay.
    if (stopped_ == hedge_stop::none) {
      const step s = hedge(now, g);
      if (s.what != action::none) return s;
    }
    if (in_flight() == 0) return finish(exhausted());
    return {};
  }

  // The caller gave up (cancellation, a stop token, an exception to propagate).
  step cancel() noexcept {
    if (done_) return {};
    started_ = true;
    return finish(outcome::cancelled);
  }

  // Whether on_timer(now) has something to do.
  bool timer_due(duration now) const noexcept { return live() && now >= wake_at(); }
  // When on_timer next has something to do: the next copy's time or the deadline, whichever
  // comes first; duration::max() when only an answer can move the call on.
  duration wake_at() const noexcept {
    if (!live()) return duration::max();
    return stopped_ == hedge_stop::none ? std::min(next_copy_, deadline_) : deadline_;
  }

  std::uint32_t sent() const noexcept { return sent_; }
  std::uint32_t answered() const noexcept { return answered_; }
  // Sent, not answered and not cancelled by the end of the call.
  std::uint32_t in_flight() const noexcept { return sent_ - answered_ - cancelled_; }
  // Copies in flight when the call ended: the ones the driver cancels.
  std::uint32_t cancelled() const noexcept { return cancelled_; }
  std::uint32_t max_attempts() const noexcept { return limit_; }
  bool done() const noexcept { return done_; }
  // When done: why the call ended.
  outcome result() const noexcept { return why_; }
  // The copy whose answer ended the call (success or fatal); 0 when none did.
  std::uint32_t winner() const noexcept { return winner_; }
  hedge_stop stopped() const noexcept { return stopped_; }
  bool pushed_back() const noexcept { return pushed_back_; }
  // The call's deadline once started; duration::max() without max_elapsed.
  duration deadline() const noexcept { return deadline_; }

 private:
  bool live() const noexcept { return started_ && !done_; }

  step sent_one(duration now, duration wait, const circuit_breaker::permit& permit) noexcept {
    permits_.hold(sent_, permit);
    ++sent_;
    next_copy_ = saturating_add(now, delay_);  // A6: later copies resume `delay` after this one
    if (sent_ >= limit_) stopped_ = hedge_stop::max_attempts;
    return {action::send, sent_, wait, outcome::succeeded};
  }

  // One more copy if the gates allow it; otherwise hedging stops (and the call, with nothing in
  // flight).
  template <bit_generator64 G>
  step hedge(duration now, G& g) {
    circuit_breaker::permit permit;
    if (gates_.breaker != nullptr) {
      // A copy is a retry to the breaker: retry-only and run-ratio kinds judge it by their
      // ratio, consecutive and rate kinds by their state.
      if (gates_.breaker->retry_allowed(now)) permit = gates_.breaker->try_acquire(now, false);
      if (!permit.allowed) return stop_hedging(hedge_stop::breaker);
    }
    if (gates_.budget != nullptr && !gates_.budget->try_retry(now)) {
      return stop_hedging(hedge_stop::budget, permit);
    }
    duration wait{0};
    if (gates_.throttle != nullptr) {
      const auto d = gates_.throttle->before_send(now, g);
      if (d.reject) return stop_hedging(hedge_stop::throttle, permit);
      wait = d.wait;
    }
    return sent_one(now, wait, permit);
  }

  // A gate refused the next copy: no more copies (each would be refused or charged again), and
  // the call ends when nothing is in flight.
  step stop_hedging(hedge_stop why, const circuit_breaker::permit& unused = {}) noexcept {
    if (unused.allowed) gates_.breaker->release(unused);  // nothing was sent
    stopped_ = why;
    if (in_flight() == 0) return finish(exhausted());
    return {};
  }

  void report(std::uint32_t attempt, const verdict& v, duration now) noexcept {
    detail::report_answer(gates_, v, now, attempt > 1);
    // As retry_controller: only a non-fatal answer is a breaker failure.
    permits_.record(attempt - 1, now, v.kind == verdict_kind::retryable);
  }

  outcome exhausted() const noexcept {
    switch (stopped_) {
      case hedge_stop::budget:
        return outcome::budget_exhausted;
      case hedge_stop::throttle:
        return outcome::throttled;
      case hedge_stop::breaker:
        return outcome::breaker_open;
      default:
        return outcome::attempts_exhausted;
    }
  }

  // The deadline passed with copies unanswered: the oldest of them, which had the most time, is
  // a failure to the breaker, as a timed-out attempt of the retry loop is (else a dependency that
  // never answers would never open it); the later ones are released as losers.
  step finish_at_deadline(duration now) noexcept {
    permits_.record_oldest_as_failure(now);
    return finish(outcome::deadline_exceeded);
  }

  step finish(outcome why) noexcept {
    done_ = true;
    why_ = why;
    cancelled_ = sent_ - answered_;
    permits_.release_all();  // copies cancelled unanswered tell the breaker nothing
    return {action::done, 0, duration{0}, why};
  }

  std::uint32_t limit_;
  duration delay_;
  duration max_elapsed_;
  retry_gates gates_;
  detail::hedge_permits permits_;
  duration deadline_ = duration::max();
  duration next_copy_ = duration::max();
  std::uint32_t sent_ = 0;
  std::uint32_t answered_ = 0;
  std::uint32_t cancelled_ = 0;
  std::uint32_t answered_bits_ = 0;
  std::uint32_t winner_ = 0;
  outcome why_ = outcome::succeeded;
  hedge_stop stopped_ = hedge_stop::none;
  bool started_ = false;
  bool done_ = false;
  bool pushed_back_ = false;
};

// "none", "max_attempts", "pushback", "budget", "throttle", "breaker".
BACKOFF_EXPORT std::string_view to_string(hedge_stop s) noexcept;

}  // namespace backoff
