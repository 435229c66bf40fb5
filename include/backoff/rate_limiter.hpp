// SPDX-License-Identifier: Apache-2.0
// Rate limiting: a token bucket that lets calls through at `per_s` a second on average, with
// bursts of up to `burst` after a quiet spell. A call takes a token now, or reserves a future one
// and waits for it (at most `wait`), or is refused.
//
//   auto config = backoff::parse_rate_limiter("rate(per_s=100, burst=20, wait=1s)");
//   backoff::rate_limiter limiter{config};
//   if (limiter.try_acquire(now())) call();           // a token now, or refuse at once
//   if (const auto delay = limiter.reserve(now())) {  // or a token in at most 1 s
//     sleep(*delay);                                  // the caller's own sleep or timer
//     call();
//   }
//
// The bucket holds up to `burst` tokens and starts full; it refills continuously, one token every
// 1e9 / per_s nanoseconds (rounded to the nanosecond, as failsafe-go rounds period / executions).
// try_acquire takes a token if one is there. reserve takes one even when the bucket is empty,
// driving it below zero, and answers how long the caller must wait before acting on it (Guava's
// SmoothBursty reserve, failsafe-go's TryReservePermit); it refuses, taking nothing, when that
// wait would exceed the limit (`wait` in the config, or the max_wait given). So reservations
// drive the count down to -(max wait * per_s) at most, and over any span of time T the limiter
// grants at most burst + per_s * T tokens. A reservation is spent even if its caller stops
// waiting, as in Guava and failsafe-go.
//
// Sources, taken for their rules and numbers: Polly v7's LockFreeTokenBucketRateLimiter.cs
// (2021; starts full, one token per interval, a refused call told how long until the next
// token), System.Threading.RateLimiting's TokenBucketRateLimiter (2022, Polly v8's rate limiter),
// failsafe-go ratelimiter/ratelimiterstats.go (2024: reservations that wait, refused beyond a max
// wait), and Guava's SmoothBursty (2012; reserve, then sleep outside the limiter). Unlike
// failsafe-go's smooth limiter, grants are not aligned to a grid of intervals counted from its
// creation; unlike its bursty limiter and resilience4j's AtomicRateLimiter, tokens do not arrive
// a period's worth at a time but one by one.
//
// How: the state is one integer, the time at which the bucket will be full again (the
// "theoretical arrival time" of the generic cell rate algorithm, ATM Forum 1996); a grant adds one
// interval to it in a single compare-and-swap, so counts never drift with rounding and the success
// path is a load and a CAS.
//
// Time is injected: every call takes `now`, the caller's clock reading as a duration since that
// clock's epoch (steady_clock, a manual_clock in tests, the simulator's virtual time). The limiter
// never reads a clock and never sleeps. Thread-safe, lock-free, allocation-free. Copying one takes
// a snapshot of its state.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"

namespace backoff {

struct rate_limiter_config {
  double per_s = 100.0;     // tokens added per second; [0.001, 1e9]
  std::uint32_t burst = 1;  // tokens the bucket holds (it starts full); 1..1000000
  duration wait{0};         // the longest wait reserve() takes on; 0: refuse at once; [0, 1d]

  // Throws parse_error with one line naming the bad value.
  BACKOFF_EXPORT void validate() const;
  // "rate(per_s=100, burst=20, wait=0s)"; parse_rate_limiter(c.to_string()) == c.
  BACKOFF_EXPORT std::string to_string() const;
  friend bool operator==(const rate_limiter_config&, const rate_limiter_config&) = default;
};

// Reads "rate(per_s=100, burst=20, wait=1s)"; every key is optional. Throws parse_error with one
// line that quotes the spec and names the bad part, with a did-you-mean for a misspelt key.
BACKOFF_EXPORT rate_limiter_config parse_rate_limiter(std::string_view text);

class rate_limiter {
 public:
  explicit rate_limiter(const rate_limiter_config& config = {}) noexcept
      : config_(config),
        interval_(interval_of(config.per_s)),
        capacity_(interval_ * std::clamp<std::int64_t>(config.burst, 1, max_burst)),
        max_tokens_per_call_(std::numeric_limits<std::int64_t>::max() / interval_) {}

  rate_limiter(const rate_limiter& other) noexcept
      : config_(other.config_),
        interval_(other.interval_),
        capacity_(other.capacity_),
        max_tokens_per_call_(other.max_tokens_per_call_),
        full_at_(other.full_at_.load(std::memory_order_relaxed)) {}
  rate_limiter& operator=(const rate_limiter& other) noexcept {
    config_ = other.config_;
    interval_ = other.interval_;
    capacity_ = other.capacity_;
    max_tokens_per_call_ = other.max_tokens_per_call_;
    full_at_.store(other.full_at_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  // Nanoseconds per token, rounded; a rate out of validate()'s range counts as its nearest bound.
  static std::int64_t interval_of(double per_s) noexcept {
    const double rate = per_s >= min_per_s ? std::min(per_s, max_per_s) : min_per_s;
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(1e9 / rate + 0.5));
  }
  static constexpr double min_per_s = 1e-3;
  static constexpr double max_per_s = 1e9;
  static constexpr std::int64_t max_burst = 1'000'000;

  // Takes `tokens` now if the bucket has them; false (nothing taken) otherwise.
  bool try_acquire(duration now, std::uint32_t tokens = 1) noexcept {
    return reserve(now, duration{0}, tokens).has_value();
  }

  // Takes `tokens`, now or ahead of time: the wait before acting on them (0: act now), or
  // nullopt, nothing taken, when that wait would exceed max_wait.
  std::optional<duration> reserve(duration now, duration max_wait,
                                  std::uint32_t tokens = 1) noexcept {
    const std::int64_t t = now.count();
    const std::uint64_t limit =
        static_cast<std::uint64_t>(capacity_) +
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, max_wait.count()));
    const std::int64_t cost = cost_of(tokens);
    std::int64_t full = full_at_.load(std::memory_order_relaxed);
    for (;;) {
      const std::int64_t next = add_saturated(std::max(full, t), cost);
      const std::uint64_t ahead = distance(t, next);
      if (ahead > limit) return std::nullopt;
      if (full_at_.compare_exchange_weak(full, next, std::memory_order_relaxed)) {
        return duration{ahead > static_cast<std::uint64_t>(capacity_)
                            ? static_cast<std::int64_t>(ahead) - capacity_
                            : 0};
      }
    }
  }
  // The same with the config's `wait`.
  std::optional<duration> reserve(duration now, std::uint32_t tokens = 1) noexcept {
    return reserve(now, config_.wait, tokens);
  }

  // How long from `now` until `tokens` could be taken without waiting (0: now): a refused
  // caller's Retry-After. Nothing is taken.
  duration retry_after(duration now, std::uint32_t tokens = 1) const noexcept {
    const std::int64_t t = now.count();
    const std::int64_t next =
        add_saturated(std::max(full_at_.load(std::memory_order_relaxed), t), cost_of(tokens));
    const std::uint64_t ahead = distance(t, next);
    const auto capacity = static_cast<std::uint64_t>(capacity_);
    if (ahead <= capacity) return duration{0};
    return duration{static_cast<std::int64_t>(
        std::min<std::uint64_t>(ahead - capacity, std::numeric_limits<std::int64_t>::max()))};
  }

  // The tokens in the bucket at `now`, fractions included; below zero while reservations wait.
  double available(duration now) const noexcept {
    const std::int64_t full = full_at_.load(std::memory_order_relaxed);
    if (full <= now.count()) return static_cast<double>(config_.burst);
    return static_cast<double>(config_.burst) -
           static_cast<double>(distance(now.count(), full)) / static_cast<double>(interval_);
  }

  // The time one token takes to come back: 1e9 / per_s nanoseconds, rounded.
  duration interval() const noexcept { return duration{interval_}; }
  const rate_limiter_config& config() const noexcept { return config_; }

 private:
  static std::int64_t add_saturated(std::int64_t a, std::int64_t b) noexcept {
    return a > std::numeric_limits<std::int64_t>::max() - b
               ? std::numeric_limits<std::int64_t>::max()
               : a + b;
  }
  // b - a for a <= b, exact over the whole range of int64.
  static std::uint64_t distance(std::int64_t a, std::int64_t b) noexcept {
    return static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
  }
  std::int64_t cost_of(std::uint32_t tokens) const noexcept {
    return tokens <= max_tokens_per_call_ ? interval_ * tokens
                                          : std::numeric_limits<std::int64_t>::max();
  }

  rate_limiter_config config_;
  std::int64_t interval_;             // nanoseconds per token
  std::int64_t capacity_;             // burst * interval_: how far ahead of now full_at_ may be
  std::int64_t max_tokens_per_call_;  // beyond it, tokens * interval_ would overflow
  // When the bucket is full again; before it, it holds burst - (full_at_ - now) / interval_.
  // Starts "full since ever".
  std::atomic<std::int64_t> full_at_{std::numeric_limits<std::int64_t>::min()};
};

}  // namespace backoff
