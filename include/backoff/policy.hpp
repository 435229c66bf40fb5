// SPDX-License-Identifier: Apache-2.0
// Backoff policies: how long to wait before each retry. A policy is an immutable value (the
// configuration); start() gives the small per-operation state that draws the delays. One policy
// can serve any number of operations, threads or simulated clients at once.
//
//   const auto policy = backoff::backoff_policy::exponential(50ms, 2.0, 30s)
//                           .with_jitter(backoff::jitter_kind::full);
//   backoff::random_generator rng{seed};
//   auto state = policy.start();                  // per operation; cheap to copy
//   for (;;) {
//     if (attempt()) break;                       // succeeded
//     sleep(state.next_delay(rng));               // 1st call: the wait before retry 1, ...
//   }
//
// A policy never sleeps and never reads a clock: the sync loop, the async loop and the simulator
// each wait in their own way for the delay it returns. The state keeps a pointer to its policy,
// which must outlive it.
//
// The delay before retry n (n = 0 for the first retry) is computed in three steps:
//   1. base b_n from the schedule: constant (b = initial), linear (initial + n * step),
//      exponential (initial * factor^n), fibonacci (initial * F(n+1): 1, 1, 2, 3, 5, ...);
//      with growth::previous the exponential base is instead the previous *actual* delay times
//      factor (smira 2016's pseudo-code), starting from `initial`;
//   2. with cap_mode::before, b = min(b, max);
//   3. jitter (below), then with cap_mode::after, d = min(d, max); finally d = max(d, 0).
//
// | jitter          | delay                         | source                                   |
// |-----------------|-------------------------------|------------------------------------------|
// | none            | b                             |                                          |
// | full            | U(0, b)                       | AWS, "Exponential Backoff and Jitter"    |
// | equal           | b/2 + U(0, b/2)               | same                                     |
// | decorrelated    | min(max, U(initial, 3p))      | same; p = previous delay, p0 = initial   |
// | decorrelated-v2 | min(max, (g(t) - g(t')) / 1.4 | Polly v8 (Polly.Core RetryHelper         |
// |                 |   * initial), t = n + U(0, 1) | DecorrelatedJitterBackoffV2, 2023), from |
// |                 |   g(t) = 2^t tanh(sqrt(4 t))  | Polly.Contrib.WaitAndRetry (2020)        |
// | additive        | b + U(0, jitter_max)          | Google Cloud IoT Core docs               |
// | multiplicative  | b * U(lo, hi)                 | Thain 2009 (R in [1, 2])                 |
// | proportional    | b * U(1 - r, 1 + r)           | gRPC (r = 0.2), cenkalti (0.5)           |
// | gaussian        | b + N(0, sigma*b) or N(0, sd) | smira 2016 (relative); its Go code (sd)  |
//
// Both decorrelated jitters ignore the schedule (and `factor`). decorrelated-v2 is George
// Polevoy's formula as Polly adopted it (Polly#530: fewer spikes and a smoother spread than AWS's).
// Its `initial` is Polly's medianFirstRetryDelay, the median the delays are scaled to: the medians
// of retries 0, 1, 2, 3, 4... are about 0.9, 1.1, 2, 4, 8... times initial. t' is the previous
// retry's t, and g(t') = 0 before the first retry. The state carries g(t') as Polly's `prev`
// does: the cap bounds the delay returned, never that state. However many retries, the delay
// stays in [0, max] (Polly#2163 was NaN after 1025); with initial = 0 it is 0. continue_from()
// does not affect it. It calls exp2 and tanh, which C libraries need not round alike: on another
// platform a delay may come out 1 ns apart for the same seed.
//
// Every step saturates: the base never exceeds about 146 years whatever the attempt count, so no
// schedule overflows or turns negative (AEONCASE 2019's author overflowed 64-bit time by doubling).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/random.hpp"

namespace backoff {

enum class schedule_kind : std::uint8_t { constant, linear, exponential, fibonacci };
enum class jitter_kind : std::uint8_t {
  none,
  full,
  equal,
  decorrelated,
  additive,
  multiplicative,
  proportional,
  gaussian,
  decorrelated_v2  // spelled "decorrelated-v2" in specs
};
// Whether `max` bounds the base before jitter (randomness survives at the cap) or the jittered
// delay (every client at the cap waits exactly `max`).
enum class cap_mode : std::uint8_t { before, after };
// What an exponential schedule multiplies: its own previous base, or the previous actual delay.
enum class growth : std::uint8_t { base, previous };

class backoff_state;

class BACKOFF_EXPORT backoff_policy {
 public:
  schedule_kind schedule = schedule_kind::exponential;
  duration initial = std::chrono::seconds{2};
  double factor = 2.0;                      // exponential
  duration step{0};                         // linear
  duration max = std::chrono::seconds{30};  // the cap
  jitter_kind jitter = jitter_kind::none;
  duration jitter_max = std::chrono::seconds{1};  // additive
  double lo = 1.0;                                // multiplicative
  double hi = 2.0;                                // multiplicative
  double r = 0.2;                                 // proportional
  double sigma = 0.1;                             // gaussian, relative to the base
  duration sd{0};                                 // gaussian, absolute (used when > 0)
  cap_mode cap = cap_mode::before;
  growth grow = growth::base;
  bool jitter_first = true;  // false: the first delay is the bare base

  // Named constructors for the common shapes; the members can also be set directly.
  static backoff_policy constant(duration delay);
  static backoff_policy linear(duration initial, duration step, duration max = duration::max());
  static backoff_policy exponential(duration initial, double factor, duration max);
  static backoff_policy fibonacci(duration initial, duration max);

  backoff_policy with_jitter(jitter_kind kind) const {
    backoff_policy p = *this;
    p.jitter = kind;
    return p;
  }
  backoff_policy with_cap(cap_mode mode) const {
    backoff_policy p = *this;
    p.cap = mode;
    return p;
  }

  // Throws parse_error with one line naming the contradiction (factor < 1, lo > hi, ...).
  void validate() const;

  // The canonical spec text; parse_policy(p.to_string()) gives back an equal policy.
  std::string to_string() const;

  // The state refers to this policy, which must outlive it: starting from a temporary policy
  // (`parse_policy("grpc").start()`) would leave it dangling, so it does not compile.
  [[nodiscard]] backoff_state start() const& noexcept;
  backoff_state start() const&& = delete;

  friend bool operator==(const backoff_policy&, const backoff_policy&) = default;
};

// Per-operation state: which retry comes next and what the previous delay was.
class backoff_state {
 public:
  // The delay before the next retry; advances the state. Never negative, never throws.
  template <bit_generator64 G>
  duration next_delay(G& g) noexcept;

  // Retries drawn so far (saturates at 2^32 - 1).
  std::uint32_t retries() const noexcept { return retries_; }
  // The delay the last next_delay() returned (0 before the first).
  duration previous() const noexcept { return duration{static_cast<std::int64_t>(previous_)}; }
  // Makes the next delay grow from `previous` as if next_delay() had returned it: the
  // growth::previous schedule multiplies it by the factor and decorrelated jitter draws up to 3x
  // it, even before the first retry. Other schedules and decorrelated-v2 ignore it. smira's Go
  // client (2016) does this by accident (its first backoff grows from the think time it waited
  // before the attempt); the simulator reproduces that quirk with this call.
  void continue_from(duration previous) noexcept {
    previous_ = static_cast<double>(std::max(previous, duration{0}).count());
    continued_ = true;
  }
  const backoff_policy& policy() const noexcept { return *policy_; }

 private:
  friend class backoff_policy;
  explicit backoff_state(const backoff_policy& p) noexcept;

  const backoff_policy* policy_;
  double base_;                // the next un-jittered base, in ns (saturating)
  double fib_previous_;        // the base before it (fibonacci)
  double previous_ = 0;        // the last delay returned, in ns
  double polly_previous_ = 0;  // decorrelated-v2: g(t) of the last retry, Polly's `prev`
  std::uint32_t retries_ = 0;
  bool continued_ = false;  // continue_from() set previous_ before the first retry
};

// ---------------------------------------------------------------------------------------------
// Implementation (header, so that the delay computation inlines into the callers' loops).

namespace detail {
// About 146 years: far beyond any useful delay, far below where double arithmetic or the
// conversion to int64 nanoseconds could misbehave.
inline constexpr double base_ceiling_ns = 0x1.0p62;

inline double ns(duration d) noexcept {
  return static_cast<double>(d.count());
}

inline duration to_duration(double v) noexcept {
  if (!(v > 0.0)) return duration{0};  // also NaN
  if (v >= base_ceiling_ns) return duration{static_cast<std::int64_t>(base_ceiling_ns)};
  // Round to nearest. At and above 2^52 every double is already a whole number, and adding 0.5
  // would round to even (an odd delay would come back 1 ns long).
  if (v >= 0x1.0p52) return duration{static_cast<std::int64_t>(v)};
  return duration{static_cast<std::int64_t>(v + 0.5)};
}

// decorrelated-v2 (Polly.Core RetryHelper.DecorrelatedJitterBackoffV2): the delay in ns, at most
// `cap`, for retry `attempt` (0 first) given u in [0, 1); moves `previous` (Polly's `prev`) on.
inline double polly_decorrelated_v2(std::uint32_t attempt, double u, double& previous,
                                    double median_first_ns, double cap) noexcept {
  // Polly's pFactor smooths the first delay; 1 / rpScalingFactor puts the medians near 1, 2, 4...
  // times the median first delay instead of 1.4, 2.8, 5.6...
  constexpr double p_factor = 4.0;
  constexpr double rp_scaling = 1.0 / 1.4;
  const double t = static_cast<double>(attempt) + u;
  const double next = std::exp2(t) * std::tanh(std::sqrt(p_factor * t));
  // From 2^1024 on, next is infinite and next - previous would be NaN (Polly#2163): Polly
  // returns its longest delay, which its cap then bounds.
  const double formula = std::isinf(next) ? next : next - previous;
  previous = next;
  if (!(median_first_ns > 0.0)) return 0.0;
  return std::min(cap, formula * rp_scaling * median_first_ns);
}
}  // namespace detail

inline backoff_state backoff_policy::start() const& noexcept {
  return backoff_state{*this};
}

inline backoff_state::backoff_state(const backoff_policy& p) noexcept
    : policy_(&p),
      base_(std::min(detail::ns(p.initial), detail::base_ceiling_ns)),
      fib_previous_(0.0) {}

template <bit_generator64 G>
duration backoff_state::next_delay(G& g) noexcept {
  const backoff_policy& p = *policy_;
  const double cap = std::min(detail::ns(p.max), detail::base_ceiling_ns);
  const bool first = retries_ == 0;
  const bool has_previous = !first || continued_;

  // 1. The base of this retry, then advance the schedule for the next one.
  double b = base_;
  switch (p.schedule) {
    case schedule_kind::constant:
      break;
    case schedule_kind::linear:
      base_ = std::min(base_ + detail::ns(p.step), detail::base_ceiling_ns);
      break;
    case schedule_kind::exponential:
      if (p.grow == growth::previous && has_previous) {
        b = std::min(previous_ * p.factor, detail::base_ceiling_ns);
      }
      base_ = std::min(base_ * p.factor, detail::base_ceiling_ns);
      break;
    case schedule_kind::fibonacci: {
      const double next = std::min(base_ + fib_previous_, detail::base_ceiling_ns);
      fib_previous_ = base_;
      base_ = next;
      break;
    }
  }
  if (p.cap == cap_mode::before) b = std::min(b, cap);

  // 2. Jitter.
  double d = b;
  if (!first || p.jitter_first) {
    switch (p.jitter) {
      case jitter_kind::none:
        break;
      case jitter_kind::full:
        d = b * uniform01(g);
        break;
      case jitter_kind::equal:
        d = b * (0.5 + 0.5 * uniform01(g));
        break;
      case jitter_kind::decorrelated: {
        const double lo = detail::ns(p.initial);
        const double prev = has_previous ? previous_ : lo;
        const double hi = std::max(lo, 3.0 * prev);
        d = std::min(cap, lo + (hi - lo) * uniform01(g));
        break;
      }
      case jitter_kind::additive:
        d = b + detail::ns(p.jitter_max) * uniform01(g);
        break;
      case jitter_kind::multiplicative:
        d = b * (p.lo + (p.hi - p.lo) * uniform01(g));
        break;
      case jitter_kind::proportional:
        d = b * (1.0 - p.r + 2.0 * p.r * uniform01(g));
        break;
      case jitter_kind::gaussian:
        d = b + standard_normal(g) * (p.sd.count() > 0 ? detail::ns(p.sd) : p.sigma * b);
        break;
      case jitter_kind::decorrelated_v2:
        d = detail::polly_decorrelated_v2(retries_, uniform01(g), polly_previous_,
                                          detail::ns(p.initial), cap);
        break;
    }
  }
  if (p.cap == cap_mode::after) d = std::min(d, cap);

  duration result = detail::to_duration(d);
  // Where the policy promises d <= max, hold it to the nanosecond: above 2^53 ns the double
  // comparison with the cap can round past it.
  const bool bounded = p.cap == cap_mode::after || p.jitter == jitter_kind::none ||
                       p.jitter == jitter_kind::full || p.jitter == jitter_kind::equal ||
                       p.jitter == jitter_kind::decorrelated ||
                       p.jitter == jitter_kind::decorrelated_v2 || (first && !p.jitter_first);
  if (bounded && result > p.max) result = p.max;
  previous_ = static_cast<double>(result.count());
  if (retries_ != UINT32_MAX) ++retries_;
  return result;
}

// One run of `policy` with its own generator random_generator{seed}: next() gives the delay
// before retry 1, then before retry 2, and so on. It is the one source of the draws behind
// `backoff delays`, `backoff presets` and the report's delay charts, so they all show the same
// delays for a seed. for_each_delay visits one run whole; a caller that interleaves runs (the
// delays table: one row per retry, one column per run) or may stop early keeps one delay_stream
// per run rather than every delay. A small value (80 bytes at most; a copy continues the run on its
// own) that refers to `policy`, which must outlive it: as with start(), a temporary does not
// compile.
class delay_stream {
 public:
  delay_stream(const backoff_policy& policy, std::uint64_t seed) noexcept
      : rng_{seed}, state_{policy.start()} {}
  delay_stream(const backoff_policy&& policy, std::uint64_t seed) = delete;

  // The delay before the next retry of this run.
  duration next() noexcept { return state_.next_delay(rng_); }

 private:
  random_generator rng_;
  backoff_state state_;
};

// The first `count` delays of delay_stream{policy, seed}, in order, each passed to
// visit(duration).
template <class Visit>
void for_each_delay(const backoff_policy& policy, std::uint64_t seed, std::uint64_t count,
                    Visit&& visit) {
  delay_stream run{policy, seed};
  for (std::uint64_t n = 0; n < count; ++n) visit(run.next());
}

}  // namespace backoff
