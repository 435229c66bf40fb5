// SPDX-License-Identifier: Apache-2.0
// Client-side throttles: a client that sees its server overloaded sends less, before the server
// has to refuse. Two kinds, as their sources define them:
//
// adaptive_throttle (Google SRE book, "Handling Overload", client-side throttling): over a
// sliding window (2 minutes), count the requests the application attempted and the ones the
// backend accepted; reject a new request locally with probability
//     max(0, (requests - k * accepts) / (requests + 1)),   k = 2.
// A healthy backend (accepts = requests) gives 0; when it accepts nothing, the probability
// approaches 1 as requests mount. The book counts locally rejected requests as requests (not
// accepted), so that the probability keeps rising while the backend refuses everything.
//
//   backoff::adaptive_throttle throttle;                       // k = 2, window 2 min
//   if (throttle.should_reject(now(), rng)) {
//     throttle.record(now(), /*accepted=*/false);              // rejected here: still a request
//     return overloaded;
//   }
//   auto reply = send();
//   throttle.record(now(), /*accepted=*/!reply.overloaded);    // 429, 503, "overloaded" errors
//
// cubic_rate_limiter (the AWS SDKs' "adaptive" retry mode; aws-sdk-cpp
// src/aws-cpp-sdk-core/source/client/AdaptiveRetryStrategy.cpp, RetryTokenBucket): a token
// bucket that paces sends. It is off until the first throttling response; from then on every
// response moves its fill rate:
//   - measured rate: responses are counted in 0.5 s buckets (`bucket`); when a response lands in
//     a new bucket, measured = 0.8 * count / (seconds since the previous bucket) + 0.2 * measured
//     (`smooth` = 0.8), and the count restarts;
//   - on a throttling response: rate = min(measured, fill_rate) (just measured while off);
//     last_max_rate = rate; last_throttle = now; new = rate * beta   (beta = 0.7);
//   - on any other response: K = cbrt(last_max_rate * (1 - beta) / C),
//     new = C * (t - last_throttle - K)^3 + last_max_rate   (C = `scale` = 0.4; CUBIC);
//   - then new = min(new, 2 * measured); fill_rate = max(new, 0.5) (`min_rate`);
//     max_capacity = max(new, 1) (`min_capacity`); capacity = min(capacity, max_capacity).
//   The bucket refills at fill_rate tokens per second up to max_capacity, and each send takes one.
//
//   backoff::cubic_rate_limiter rate;
//   sleep(rate.acquire(now()));                  // 0 while the bucket has a token (or is off)
//   auto reply = send();
//   rate.on_response(now(), /*throttled=*/reply.throttled);
//
// Where this differs from the SDK, the behaviour is the SDK's in practice:
//   - The SDK sleeps inside Acquire, holding the bucket's lock; acquire() instead takes the
//     token at once and returns how long to wait before sending, letting the balance go
//     negative: later callers then wait behind earlier ones, just as they queue on the SDK's
//     lock. Waiting is the caller's (sync sleep, Asio timer, virtual-time event).
//   - The SDK's clock starts at the Unix epoch: its first rate measurement divides one response
//     by about 1.7e9 s and its cubic term before the first throttle is astronomically large.
//     Here those are written as what they amount to, 0 and +infinity, so the results do not
//     depend on where the caller's clock starts.
//   - Time is in nanoseconds, not milliseconds; a reading older than the last one adds no tokens
//     (the SDK adds |difference|, a guard for wall clocks); K uses cbrt, not pow(x, 1.0 / 3).
//
// Time is injected: every call takes `now`, the caller's clock reading as a duration since that
// clock's epoch (steady_clock::now().time_since_epoch(), a manual_clock, virtual time); only
// differences matter. adaptive_throttle is lock-free (detail/sliding_counts.hpp, whose window
// approximation applies); cubic_rate_limiter keeps its few doubles under a spin lock, as the SDK
// does under a mutex. Both are safe to share between threads and allocate nothing.
//
// `throttle` puts either behind one interface for the drivers, and parse_throttle reads
// "sre(k=2, window=2m)" or "cubic(beta=0.7, scale=0.4, smooth=0.8, min_rate=0.5,
// min_capacity=1, bucket=500ms)".
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>

#include "backoff/detail/sliding_counts.hpp"
#include "backoff/detail/spin_lock.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/random.hpp"

namespace backoff {

// ---------------------------------------------------------------------------------------------
// Adaptive throttling (Google SRE).

struct BACKOFF_EXPORT adaptive_throttle_config {
  double k = 2.0;                             // accepts weigh k requests; (0, 1000]
  duration window = std::chrono::minutes{2};  // (0, 1d]

  void validate() const;
  // "sre(k=2, window=2m)"; parse_throttle(c.to_string()) gives c back.
  std::string to_string() const;

  friend bool operator==(const adaptive_throttle_config&,
                         const adaptive_throttle_config&) = default;
};

class adaptive_throttle {
 public:
  struct counts {
    std::uint64_t requests = 0;
    std::uint64_t accepts = 0;
  };

  explicit adaptive_throttle(const adaptive_throttle_config& config = {}) noexcept
      : config_(config), counts_(config.window) {}

  // max(0, (requests - k * accepts) / (requests + 1)) over the window that ends at `now`.
  double reject_probability(duration now) const noexcept {
    const counts c = window_counts(now);
    const double requests = static_cast<double>(c.requests);
    const double p = (requests - config_.k * static_cast<double>(c.accepts)) / (requests + 1.0);
    return p > 0.0 ? p : 0.0;
  }

  // Whether to refuse the next request locally: true with reject_probability(now). Draws one
  // uniform01 from `g` when that probability is positive, none when it is 0.
  template <bit_generator64 G>
  bool should_reject(duration now, G& g) const {
    const double p = reject_probability(now);
    return p > 0.0 && uniform01(g) < p;
  }

  // One request the application attempted; `accepted` when the backend accepted it (false for
  // an overload refusal and for a request should_reject refused).
  void record(duration now, bool accepted) noexcept { counts_.add(now, 1, accepted ? 1U : 0U); }

  counts window_counts(duration now) const noexcept {
    const auto t = counts_.sum(now);
    return {t.first, t.second};
  }
  const adaptive_throttle_config& config() const noexcept { return config_; }

 private:
  adaptive_throttle_config config_;
  detail::sliding_counts counts_;
};

// ---------------------------------------------------------------------------------------------
// Adaptive send rate (AWS SDK, CUBIC).

struct BACKOFF_EXPORT cubic_rate_config {
  double beta = 0.7;          // BETA: the multiplicative decrease; (0, 1)
  double scale = 0.4;         // SCALE_CONSTANT, CUBIC's C; > 0
  double smooth = 0.8;        // SMOOTH: weight of the newest rate measurement; [0, 1]
  double min_rate = 0.5;      // MIN_FILL_RATE, tokens per second; > 0
  double min_capacity = 1.0;  // MIN_CAPACITY, tokens; > 0
  duration bucket = std::chrono::milliseconds{500};  // the rate measurement's time bucket; > 0

  void validate() const;
  // "cubic(beta=0.7, scale=0.4, smooth=0.8, min_rate=0.5, min_capacity=1, bucket=500ms)".
  std::string to_string() const;

  friend bool operator==(const cubic_rate_config&, const cubic_rate_config&) = default;
};

class BACKOFF_EXPORT cubic_rate_limiter {
 public:
  // Everything at one moment, read under one lock (for tests, reports and time series).
  struct state {
    bool enabled;          // a throttling response has been seen
    double fill_rate;      // tokens per second
    double max_capacity;   // tokens
    double capacity;       // tokens as of the last refill; negative: sends already waiting
    double measured_rate;  // responses per second, smoothed
    double last_max_rate;  // the rate at the last throttle (CUBIC's W_max)
  };

  explicit cubic_rate_limiter(const cubic_rate_config& config = {}) noexcept : config_(config) {}
  // Copies take the other limiter's state under its lock.
  cubic_rate_limiter(const cubic_rate_limiter& other) noexcept;
  cubic_rate_limiter& operator=(const cubic_rate_limiter& other) noexcept;

  // Takes a send token; returns how long to wait before sending (0: send now).
  duration acquire(duration now) noexcept;

  // A response arrived; `throttled` when the server refused it for overload (429, 503 SlowDown,
  // Throttling, ... as the caller's classifier says).
  void on_response(duration now, bool throttled) noexcept;

  state snapshot() const noexcept;
  const cubic_rate_config& config() const noexcept { return config_; }

 private:
  void refill(std::int64_t now_ns) noexcept;
  void update_measured_rate(std::int64_t now_ns) noexcept;

  cubic_rate_config config_;
  mutable detail::spin_lock lock_;
  bool enabled_ = false;
  double fill_rate_ = 0.0;
  double max_capacity_ = 0.0;
  double capacity_ = 0.0;
  bool refilled_ = false;  // whether last_refill_ns_ holds a time yet
  std::int64_t last_refill_ns_ = 0;
  double measured_rate_ = 0.0;
  bool measured_ = false;  // whether last_bucket_ns_ holds a bucket yet
  std::int64_t last_bucket_ns_ = 0;
  std::uint64_t bucket_count_ = 0;
  bool throttled_ = false;  // whether last_throttle_ns_ holds a time yet
  double last_max_rate_ = 0.0;
  std::int64_t last_throttle_ns_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Either throttle, as scenario files and the drivers name them.

using throttle_config = std::variant<adaptive_throttle_config, cubic_rate_config>;

// Reads "sre(k=2, window=2m)" or "cubic(beta=0.7, ...)"; every key is optional. Throws
// parse_error with one line that quotes the spec and names the bad part.
BACKOFF_EXPORT throttle_config parse_throttle(std::string_view text);
BACKOFF_EXPORT std::string to_string(const throttle_config& config);

// One interface over both throttles for the retry loops and the simulator:
//
//   backoff::throttle t{backoff::parse_throttle("sre(k=2, window=2m)")};
//   auto d = t.before_send(now(), rng);
//   if (d.reject) return failed;               // refused locally (already counted)
//   sleep(d.wait);                             // the rate limiter's pacing; 0 for sre
//   auto reply = send();
//   t.on_response(now(), reply.overloaded);
class BACKOFF_EXPORT throttle {
 public:
  struct decision {
    bool reject = false;  // do not send: refused locally
    duration wait{0};     // otherwise, send after this long
  };

  explicit throttle(const throttle_config& config);

  template <bit_generator64 G>
  decision before_send(duration now, G& g) {
    if (auto* a = std::get_if<adaptive_throttle>(&throttle_)) {
      if (!a->should_reject(now, g)) return {};
      a->record(now, false);  // the SRE book counts a locally rejected request as a request
      return {true, duration{0}};
    }
    return {false, std::get<cubic_rate_limiter>(throttle_).acquire(now)};
  }

  // The server answered; `overloaded` when it refused for overload (throttled, 429, 503).
  void on_response(duration now, bool overloaded) noexcept {
    if (auto* a = std::get_if<adaptive_throttle>(&throttle_)) {
      a->record(now, !overloaded);
    } else {
      std::get<cubic_rate_limiter>(throttle_).on_response(now, overloaded);
    }
  }

  const std::variant<adaptive_throttle, cubic_rate_limiter>& get() const noexcept {
    return throttle_;
  }

 private:
  std::variant<adaptive_throttle, cubic_rate_limiter> throttle_;
};

}  // namespace backoff
