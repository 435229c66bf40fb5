// SPDX-License-Identifier: Apache-2.0
// An adaptive concurrency limit: how many calls may be in flight at once, found from what the
// calls measure (their latency, their drops) instead of set by hand, so that a client does not
// queue more work on a dependency than it can take, and a server sheds what it cannot serve in
// time. The three algorithms of Netflix/concurrency-limits (concurrency-limits-core, 2018-2026,
// at 78a74b9), each as its Java source defines it:
//
// aimd (limit/AIMDLimit.java): a drop, or a call slower than `timeout`, cuts the limit to
//   floor(limit * backoff_ratio); any other sample adds 1 while inflight * 2 >= limit (a limit
//   that is not being used does not grow). Loss-based: for dependencies that say "overloaded".
// vegas (limit/VegasLimit.java, after TCP Vegas): keeps the lowest RTT seen (the no-load RTT,
//   re-measured now and then) and estimates the queue as limit * (1 - rtt_noload / rtt); with
//   L = max(1, floor(log10(limit))), a queue <= L grows the limit by beta (6 L), a queue below
//   alpha (3 L) by L, a queue above beta shrinks it by L; a drop shrinks it by L. Delay-based: it
//   backs off before anything fails.
// gradient2 (limit/Gradient2Limit.java): compares each RTT with a long exponential average of
//   the RTTs; limit = limit * clamp(rtt_tolerance * long_rtt / rtt, 0.5, 1) + queue_size, smoothed
//   by `smoothing`. Follows a baseline latency that drifts; drops do not move it.
//
// Call sequence (Netflix's Limiter.acquire and Listener.onSuccess/onDropped/onIgnore):
//   auto p = limiter.try_acquire(now);   // refused while inflight >= limit
//   if (!p) fail fast (a client gate) or reject (a server: 503 or 429);
//   else, when the call ends: limiter.release(p, now, outcome);
// outcome is `success`; or `dropped`, for overload (a timeout, a 503, a refused connection: the
// limit backs off); or `ignored`, for a result that says nothing about capacity (a client
// error, a cancellation: the call leaves the count and no sample is taken). Every admitted
// permit is released exactly once; a refused one needs no release. The RTT of a sample is the
// release's `now` minus the acquire's, carried in the permit, with the in-flight count the call
// was admitted at (AbstractLimiter.createListener); the limit is updated on release.
//
// Client gate, before each send:
//   backoff::concurrency_limiter gate{backoff::parse_limit("limit(kind=gradient2, max=200)")};
//   const backoff::limit_permit permit = gate.try_acquire(now());
//   if (!permit) return fail_fast();              // as many calls in flight as the limit
//   const reply r = send_request();
//   gate.release(permit, now(),
//                r.overloaded()     ? backoff::limit_outcome::dropped   // 503, timeout
//                : r.client_error() ? backoff::limit_outcome::ignored   // 4xx, cancelled
//                                   : backoff::limit_outcome::success);
// Server admission, when a request arrives:
//   backoff::concurrency_limiter admission{backoff::parse_limit("limit(kind=vegas)")};
//   const backoff::limit_permit admitted = admission.try_acquire(now());
//   if (!admitted) return respond(503);           // shed: no worker time spent on it
//   respond(handle());
//   admission.release(admitted, now(), backoff::limit_outcome::success);  // its latency
//
// Threads: every member is safe to call concurrently. try_acquire is a compare-and-swap on the
// in-flight count against the current limit (both atomics), so the count never passes the limit
// a call was admitted under; a limit that falls below the count refuses until calls finish, as
// Netflix's SimpleLimiter's semaphore does. release decrements the count; the aimd update is a
// compare-and-swap on the limit, the vegas and gradient2 updates run under a spin lock (their
// state is several fields; Netflix's AbstractLimit.onSample is synchronized). Nothing allocates.
//
// Time is injected: `now` is the caller's clock reading as a duration since that clock's epoch
// (steady_clock, a manual_clock, the simulator's time); the limiter never reads a clock. The
// vegas probe is jittered by a generator seeded at construction (give each instance its own
// seed, so that instances do not re-measure in step).
//
// parse_limit reads the grammar (docs/POLICIES.md; the key table is spec_keys_markdown("limit")):
//   limit(kind=aimd, initial=20, min=20, max=200, backoff_ratio=0.9, timeout=5s)
//   limit(kind=vegas, initial=20, min=1, max=1000, smoothing=1, probe_multiplier=30)
//   limit(kind=vegas, alpha=3, beta=6)               // fixed thresholds instead of log10 rules
//   limit(kind=gradient2, initial=20, min=20, max=200, smoothing=0.2, queue_size=4,
//         long_window=600, rtt_tolerance=1.5)
// Each kind's defaults are Netflix's builder defaults (kind=vegas when no kind is given, as
// Netflix's limiters default to VegasLimit). Where this differs from Netflix on purpose:
// `initial` must lie in [min, max] (Netflix logs a warning); `min` is at least 1 (a limit of 0
// admits nothing, so nothing would ever raise it); vegas takes `min` too (Netflix: 1); a sample
// with an RTT <= 0 is not fed to vegas or gradient2 (Netflix's Vegas throws, its Gradient2
// divides by zero).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backoff/detail/spin_lock.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/random.hpp"

namespace backoff {

class prometheus_writer;

enum class limit_kind : std::uint8_t { aimd, vegas, gradient2 };

// "aimd", "vegas", "gradient2".
BACKOFF_EXPORT std::string_view to_string(limit_kind kind) noexcept;

struct BACKOFF_EXPORT limit_config {
  limit_kind kind = limit_kind::vegas;
  std::uint32_t initial = 20;  // the limit before the first sample
  std::uint32_t min = 1;       // aimd, gradient2: 20 (their builders)
  std::uint32_t max = 1000;    // aimd, gradient2: 200
  // aimd (AIMDLimit.Builder)
  double backoff_ratio = 0.9;  // [0.5, 1)
  duration timeout = std::chrono::seconds{5};
  // vegas and gradient2: the weight of the new estimate; 1 (vegas), 0.2 (gradient2)
  double smoothing = 1.0;
  // vegas (VegasLimit.Builder): fixed thresholds; unset, 3 and 6 times log10(limit)
  std::optional<std::uint32_t> alpha;
  std::optional<std::uint32_t> beta;
  std::uint32_t probe_multiplier = 30;
  // gradient2 (Gradient2Limit.Builder)
  std::uint32_t queue_size = 4;
  std::uint32_t long_window = 600;
  double rtt_tolerance = 1.5;

  // Netflix's builder defaults for the kind.
  static limit_config defaults(limit_kind kind) noexcept;
  // Throws parse_error with one line naming the bad value.
  void validate() const;
  // The canonical spec text; parse_limit(c.to_string()) == c.
  std::string to_string() const;

  friend bool operator==(const limit_config&, const limit_config&) = default;
};

// Reads "limit(kind=..., ...)"; every key is optional. Throws parse_error with one line that
// quotes the spec and names the bad part, with a did-you-mean for a misspelt key or kind.
BACKOFF_EXPORT limit_config parse_limit(std::string_view text);

// One of the three algorithms as a plain value: Netflix's Limit, fed one sample at a time. Not
// thread-safe; concurrency_limiter serializes it. Tests and the simulator use it directly.
class BACKOFF_EXPORT limit_algorithm {
 public:
  explicit limit_algorithm(const limit_config& config = {}, std::uint64_t seed = 1);

  // Limit.onSample(startTime, rtt, inflight, didDrop) (the start time is unused by all three):
  // `inflight` counts the sampled call, at its admission. Returns the new limit.
  std::uint32_t on_sample(duration rtt, std::uint32_t inflight, bool dropped) noexcept;

  std::uint32_t limit() const noexcept { return limit_; }
  // vegas and gradient2 keep the limit as a double and report its integer part.
  double estimated_limit() const noexcept { return estimated_; }
  // vegas: the no-load RTT (0 before the first sample); gradient2: the long average RTT.
  duration baseline_rtt() const noexcept;
  const limit_config& config() const noexcept { return config_; }

  // AIMDLimit._update: the aimd rule as a pure function of the current limit, shared by
  // on_sample and concurrency_limiter's lock-free update.
  static std::uint32_t aimd_next(const limit_config& config, std::uint32_t limit, duration rtt,
                                 std::uint32_t inflight, bool dropped) noexcept;

 private:
  std::uint32_t vegas_sample(duration rtt, std::uint32_t inflight, bool dropped) noexcept;
  std::uint32_t vegas_estimate(std::int64_t rtt, std::int64_t noload, std::uint32_t inflight,
                               bool dropped) noexcept;
  std::uint32_t gradient2_sample(duration rtt, std::uint32_t inflight) noexcept;
  void reset_probe_jitter() noexcept;
  double clamp_limit(double limit) const noexcept;

  limit_config config_;
  std::uint32_t limit_;
  double estimated_;
  // vegas
  std::int64_t rtt_noload_ = 0;  // nanoseconds; 0: none yet
  std::uint64_t probe_count_ = 0;
  double probe_jitter_ = 0.0;
  random_generator rng_;
  // gradient2: the long RTT as ExpAvgMeasurement(long_window, warm-up 10)
  double long_rtt_ = 0.0;
  double long_rtt_sum_ = 0.0;
  std::uint32_t long_rtt_count_ = 0;
};

// What a call reports on release (Limiter.Listener).
enum class limit_outcome : std::uint8_t {
  success,  // onSuccess: an RTT sample
  dropped,  // onDropped: overload (timeout, 503, refused connection); loss-based limits back off
  ignored,  // onIgnore: says nothing about capacity (client error, cancellation); no sample
};

// "success", "dropped", "ignored".
BACKOFF_EXPORT std::string_view to_string(limit_outcome o) noexcept;

// What try_acquire (or bypass) hands out: false when refused. Give an admitted permit back to
// release exactly once.
class limit_permit {
 public:
  limit_permit() noexcept = default;

  explicit operator bool() const noexcept { return state_ != state::refused; }
  bool bypassed() const noexcept { return state_ == state::bypassed; }
  duration start() const noexcept { return start_; }
  // In flight with this call, at its admission (Netflix's currentInflight).
  std::uint32_t inflight() const noexcept { return inflight_; }
  // The limit it was admitted under: inflight() <= limit() for an admitted permit.
  std::uint32_t limit() const noexcept { return limit_; }

 private:
  friend class concurrency_limiter;
  enum class state : std::uint8_t { refused, admitted, bypassed };
  limit_permit(state s, duration start, std::uint32_t inflight, std::uint32_t limit) noexcept
      : start_(start), inflight_(inflight), limit_(limit), state_(s) {}

  duration start_{};
  std::uint32_t inflight_ = 0;
  std::uint32_t limit_ = 0;
  state state_ = state::refused;
};

// What a /metrics page shows of a limiter; each field read atomically, not all at one instant.
struct limiter_stats {
  std::uint32_t limit = 0;
  std::uint32_t inflight = 0;
  std::uint64_t rejected = 0;  // try_acquire refused
  std::uint64_t succeeded = 0;
  std::uint64_t dropped = 0;
  std::uint64_t ignored = 0;
  std::uint64_t bypassed = 0;
};

// Netflix's SimpleLimiter over one limit_algorithm (the header comment has the whole contract).
class BACKOFF_EXPORT concurrency_limiter {
 public:
  explicit concurrency_limiter(const limit_config& config = {}, std::uint64_t seed = 1);
  concurrency_limiter(const concurrency_limiter&) = delete;
  concurrency_limiter& operator=(const concurrency_limiter&) = delete;

  // Admits the call when fewer than limit() calls are in flight.
  limit_permit try_acquire(duration now) noexcept {
    std::uint32_t inflight = inflight_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t limit = limit_.load(std::memory_order_relaxed);
      if (inflight >= limit) {
        rejected_.fetch_add(1, std::memory_order_relaxed);
        return {};
      }
      if (inflight_.compare_exchange_weak(inflight, inflight + 1, std::memory_order_relaxed)) {
        return {limit_permit::state::admitted, now, inflight + 1, limit};
      }
    }
  }

  // A call that skips the limit (Netflix's bypass resolver, e.g. a health check): not counted
  // in flight, no sample on release; counted as bypassed.
  limit_permit bypass() noexcept {
    bypassed_.fetch_add(1, std::memory_order_relaxed);
    return {limit_permit::state::bypassed, duration{0}, 0, 0};
  }

  // The call of an admitted permit ended at `now`; a refused or bypassed permit is ignored.
  void release(const limit_permit& permit, duration now, limit_outcome outcome) noexcept {
    if (permit.state_ != limit_permit::state::admitted) return;
    inflight_.fetch_sub(1, std::memory_order_relaxed);
    switch (outcome) {
      case limit_outcome::success:
        succeeded_.fetch_add(1, std::memory_order_relaxed);
        break;
      case limit_outcome::dropped:
        dropped_.fetch_add(1, std::memory_order_relaxed);
        break;
      case limit_outcome::ignored:
        ignored_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    sample(now - permit.start_, permit.inflight_, outcome == limit_outcome::dropped);
  }

  std::uint32_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  std::uint32_t inflight() const noexcept { return inflight_.load(std::memory_order_relaxed); }
  limiter_stats stats() const noexcept;
  const limit_config& config() const noexcept { return algorithm_.config(); }

 private:
  void sample(duration rtt, std::uint32_t inflight, bool dropped) noexcept;

  std::atomic<std::uint32_t> inflight_{0};
  std::atomic<std::uint32_t> limit_;
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<std::uint64_t> succeeded_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> ignored_{0};
  std::atomic<std::uint64_t> bypassed_{0};
  detail::spin_lock update_lock_;
  limit_algorithm algorithm_;  // vegas and gradient2: under update_lock_
};

// The stats as Prometheus families: <prefix>_limit and <prefix>_inflight (gauges) and
// <prefix>_calls_total{status="success|dropped|ignored|rejected|bypassed"} (Netflix's
// MetricIds.CALL_NAME with its status tag).
BACKOFF_EXPORT void write_limiter_metrics(prometheus_writer& out, const limiter_stats& stats,
                                          std::string_view prefix = "backoff_concurrency");

namespace detail {
// The key table of the limit spec, as docs/POLICIES.md carries it (spec_keys_markdown).
BACKOFF_EXPORT std::string limit_keys_markdown();
}  // namespace detail

}  // namespace backoff
