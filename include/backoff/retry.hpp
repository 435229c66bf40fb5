// The retry loop: call an operation until it succeeds, fails permanently, runs out of attempts or
// time, or is cancelled; wait between attempts as a backoff policy says.
//
//   backoff::retry_policy policy{backoff::parse_policy("grpc"), /*max_attempts=*/5,
//                                /*max_elapsed=*/30s};
//   auto result = backoff::retry(
//       [&] { return http_get(url); },                           // the operation
//       policy,
//       [](const reply& r) { return backoff::classify_http_status(r.status, r.retry_after); });
//   if (result) use(*result.last);                                // succeeded
//   else log(backoff::to_string(result.why), result.attempts);
//
// Three questions, three pieces: whether to go on (max_attempts, max_elapsed), how long to wait
// (the backoff_policy), whether it is worth it (the classifier's verdict). retry_controller makes
// every decision, given the time; the sync loop here, the Asio coroutine loop and the simulator
// only carry them out, so all three behave alike by construction.
//
// Time, sleeping and randomness come from a retry_env. The default one is the real world
// (steady_clock, an interruptible sleep, a per-thread generator seeded from random_device);
// tests pass one whose clock is manual and whose sleep records the delays.
//
// Deadline semantics: no attempt starts after start + max_elapsed. When the next delay would
// pass the deadline, the sleep is clamped to end at the deadline and one last attempt is made
// there, unless the server's Retry-After asks for more than the time left: then the loop stops
// at once (deadline_exceeded) rather than call the server before it asked.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>

#include "backoff/duration.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

// Why a retry loop ended.
enum class outcome : std::uint8_t {
  succeeded,
  attempts_exhausted,  // max_attempts reached
  deadline_exceeded,   // max_elapsed reached
  permanent,           // the classifier said the failure is not retryable
  cancelled,           // the stop token was triggered
};

std::string_view to_string(outcome o) noexcept;

constexpr bool is_exhausted(outcome o) noexcept {
  return o == outcome::attempts_exhausted || o == outcome::deadline_exceeded;
}

// Immutable and shareable, like the backoff policy it holds.
struct retry_policy {
  backoff_policy backoff;
  std::uint32_t max_attempts = 0;  // 0: unlimited
  duration max_elapsed{0};         // 0: no deadline; measured from the first attempt's start
};

// The decisions of one retried operation. Call sequence:
//
//   retry_controller c{policy, now()};
//   for (;;) {
//     c.attempt_started();
//     verdict v = classify(attempt());
//     auto d = c.after(v, now(), rng);
//     if (!d.retry) return d.stop;          // succeeded, permanent, exhausted
//     wait(d.delay);                        // sleep, timer, or virtual-time event
//   }
//
// `now` is any monotonic time as a duration since that clock's epoch; only differences matter.
class retry_controller {
 public:
  struct decision {
    bool retry = false;
    duration delay{0};                  // when retry: how long to wait
    outcome stop = outcome::succeeded;  // when not retry: why it ends
  };

  retry_controller(const retry_policy& policy, duration start) noexcept
      : policy_(&policy), backoff_(policy.backoff.start()), start_(start) {}

  void attempt_started() noexcept {
    if (attempts_ != UINT32_MAX) ++attempts_;
  }
  std::uint32_t attempts() const noexcept { return attempts_; }
  bool has_deadline() const noexcept { return policy_->max_elapsed.count() > 0; }
  duration deadline() const noexcept { return start_ + policy_->max_elapsed; }
  const backoff_state& backoff() const noexcept { return backoff_; }

  template <bit_generator64 G>
  decision after(const verdict& v, duration now, G& g) noexcept {
    switch (v.kind) {
      case verdict_kind::success: return {false, duration{0}, outcome::succeeded};
      case verdict_kind::permanent: return {false, duration{0}, outcome::permanent};
      case verdict_kind::retryable: break;
    }
    if (policy_->max_attempts != 0 && attempts_ >= policy_->max_attempts) {
      return {false, duration{0}, outcome::attempts_exhausted};
    }
    if (has_deadline() && now >= deadline()) return {false, duration{0}, outcome::deadline_exceeded};
    duration delay = backoff_.next_delay(g);
    if (v.retry_after && *v.retry_after > delay) delay = *v.retry_after;
    if (has_deadline()) {
      const duration left = deadline() - now;
      if (delay > left) {
        if (v.retry_after && *v.retry_after > left) {
          return {false, duration{0}, outcome::deadline_exceeded};
        }
        delay = left;
      }
    }
    return {true, delay, outcome::succeeded};
  }

 private:
  const retry_policy* policy_;
  backoff_state backoff_;
  duration start_;
  std::uint32_t attempts_ = 0;
};

namespace detail {
duration steady_now();
bool interruptible_sleep(duration d, std::stop_token stop);
random_generator& thread_generator();
}  // namespace detail

// The world a retry loop lives in. Every member has a real-world default.
struct retry_env {
  std::function<duration()> now = detail::steady_now;
  // Waits d; returns false when woken early because `stop` was requested.
  std::function<bool(duration, std::stop_token)> sleep = detail::interruptible_sleep;
  random_ref random = detail::thread_generator();
  std::stop_token stop;
  // Carrier sense (seed 000's Ethernet approach): when set and it answers true ("busy"), the
  // attempt is not made and counts as a retryable failure, without touching the resource.
  std::function<bool()> busy;
};

// What the on-retry hook is told before each wait.
template <class R>
struct retry_event {
  std::uint32_t attempt;  // the attempt that just failed, from 1
  duration delay;         // the wait before the next one
  verdict why;            // its classification
  const R* result;        // its result; nullptr when carrier sense deferred it
};

template <class R>
struct retry_result {
  outcome why = outcome::succeeded;
  std::uint32_t attempts = 0;  // attempts started, deferred ones included
  std::uint32_t deferred = 0;  // attempts that carrier sense skipped
  duration slept{0};           // total time spent waiting
  std::optional<R> last;       // the last result the operation returned

  explicit operator bool() const noexcept { return why == outcome::succeeded; }
};

// Classifies a bool (true: success) or passes a verdict through.
struct default_classifier {
  constexpr verdict operator()(bool ok) const noexcept {
    return ok ? verdict::success() : verdict::retryable();
  }
  constexpr verdict operator()(const verdict& v) const noexcept { return v; }
};

struct no_retry_hook {
  template <class Event>
  constexpr void operator()(const Event&) const noexcept {}
};

const retry_env& system_env();

// Runs `op` (callable as op() or op(attempt), attempt from 1) until the controller stops.
// An exception from `op` or `classify` propagates at once: classify failures as values.
template <class Op, class Classify = default_classifier, class OnRetry = no_retry_hook>
auto retry(Op&& op, const retry_policy& policy, Classify&& classify = {},
           const retry_env& env = system_env(), OnRetry&& on_retry = {}) {
  constexpr bool takes_attempt = std::is_invocable_v<Op&, std::uint32_t>;
  using R = std::decay_t<
      typename std::conditional_t<takes_attempt, std::invoke_result<Op&, std::uint32_t>,
                                  std::invoke_result<Op&>>::type>;
  static_assert(!std::is_void_v<R>, "the operation must return something to classify");

  retry_result<R> result;
  random_ref rng = env.random;
  const bool timed = policy.max_elapsed.count() > 0;
  retry_controller control(policy, timed ? env.now() : duration{0});
  for (;;) {
    if (env.stop.stop_requested()) {
      result.why = outcome::cancelled;
      break;
    }
    control.attempt_started();
    verdict v;
    const bool deferred = env.busy && env.busy();
    if (deferred) {
      ++result.deferred;
      v = verdict::retryable();
    } else {
      if constexpr (takes_attempt) {
        result.last.emplace(op(control.attempts()));
      } else {
        result.last.emplace(op());
      }
      v = classify(*result.last);
    }
    if (v.kind == verdict_kind::success) {
      result.why = outcome::succeeded;
      break;
    }
    const auto d = control.after(v, timed ? env.now() : duration{0}, rng);
    if (!d.retry) {
      result.why = d.stop;
      break;
    }
    on_retry(retry_event<R>{control.attempts(), d.delay, v, deferred ? nullptr : &*result.last});
    result.slept += d.delay;
    if (!env.sleep(d.delay, env.stop)) {
      result.why = outcome::cancelled;
      break;
    }
  }
  result.attempts = control.attempts();
  return result;
}

}  // namespace backoff
