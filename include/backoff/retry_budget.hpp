// SPDX-License-Identifier: Apache-2.0
// Retry budgets: a cap on retries shared by every operation of a client, so that when a server
// fails, the clients' retries do not multiply its load. A backoff policy spaces the retries of
// one operation; a budget decides whether the client, as a whole, may retry at all.
//
//   backoff::retry_budget budget{backoff::parse_budget("token-bucket(max=10, ratio=0.1)")};
//   budget.on_request(now());                  // an operation starts (its first attempt)
//   std::uint32_t taken = 0;                   // what a quota took from this operation
//   for (bool retry = false;; retry = true) {
//     const bool ok = attempt();
//     budget.on_outcome(now(), ok, retry, taken);  // a success or a retryable failure
//     if (ok) break;
//     if (!budget.try_retry(now(), false, taken)) break;  // spent: fail now, do not retry
//     sleep(state.next_delay(rng));
//   }
//
// Three kinds, each in the style of its source:
//
// token_bucket_budget (gRPC retry throttling, grpc/proposal A6 and C-core retry_throttle.cc):
//   tokens start at max_tokens; each failed attempt takes 1 (not below 0), each success adds
//   token_ratio (not above max_tokens); a retry is allowed only while tokens > max_tokens / 2.
//   Like C-core, it counts milli-tokens as integers in one atomic updated by compare-and-swap,
//   so token_ratio has at most 3 decimals and no rounding ever drifts. With max=10, ratio=0.1,
//   retries stop once failures outrun successes by about 10 %.
//   Other token buckets differ in three rules, which the config names (gRPC's are the defaults):
//   what earns tokens (`earn`: every success; every operation's first attempt, as in Brooker's
//   retry_sim, mbrooker/simulator_example retry_strategy.py AdaptiveRetryStrategy.start; or
//   only a first attempt that succeeds, as in jirfag/simulations RetryBudgetStrategy, where a
//   successful retry earns nothing), what spends one (`spend`: every failed attempt, or every
//   retry the bucket allows, as both of those do), and the test (`above`: tokens > X, Brooker's
//   "more than one token"; `at_least`: tokens >= X, jirfag's "enough for one retry").
//
// ratio_budget (Finagle's RetryBudget, tower's TpsBudget, Envoy's budget_interval):
//   over a sliding window, retries <= percent / 100 * requests + min_per_s * window,
//   i.e. retries may be `percent` % of the recent requests, plus a floor of min_per_s retries
//   per second on average so that a client that sends little can still retry. Defaults are
//   Finagle's: 20 %, 10 per second, 10 s. The window is 10 slices of window/10 in a lock-free
//   ring (detail/sliding_counts.hpp): the oldest slice leaves whole, so the counted span is
//   between 9/10 and 10/10 of the window, as in Finagle and tower. Where Finagle rounds the
//   cost of a retry to an integer (1000 / percentCanRetry), this compares exactly in integers
//   (percent is in thousandths). Within one slice a retry's check and its count are one atomic
//   step, so concurrent retries never overdraw the budget.
//
// retry_quota (the AWS SDKs' standard retry mode: botocore retries/quota.py RetryQuota and
//   retries/standard.py RetryQuotaChecker, aws-sdk-cpp DefaultRetryQuotaContainer, 2019-2026):
//   a pool of `capacity` tokens (500), full at the start. A retry takes retry_cost (5), or
//   timeout_cost (10) when the failed attempt timed out (its verdict says `timeout`); when the
//   pool holds less than the cost, the retry is refused. An operation that succeeds gives back
//   what its last retry took, or `refund` (1) when it made no retry; a permanent failure or an
//   operation that runs out of attempts gives nothing back. So on a healthy server the pool
//   stays full, and in an outage of all-failing calls a client stops retrying after
//   capacity / retry_cost retries (100) until successes refill it. What an operation took is
//   that operation's state, not the pool's: retry_controller keeps it per operation and hands
//   it to try_retry and on_outcome, so the refund is exact however many operations share the
//   pool. Newer SDKs charge 14 per retry (botocore _RETRY_COST_V2) and 5 for throttling errors:
//   the costs are configurable; the throttling cost is not (a verdict does not say "throttled").
//   Tokens are whole numbers in one atomic updated by compare-and-swap, as RetryQuota's lock
//   guards one integer. Called without an operation's account (a hedge's copies), a retry
//   takes retry_cost and a success gives back `refund`.
//
// Time is injected: every call that depends on it takes `now`, the caller's clock reading as a
// duration since that clock's epoch (steady_clock::now().time_since_epoch(), a manual_clock in
// tests, the simulator's virtual time). Only differences between readings matter.
//
// All budgets are safe to share between threads, lock-free, and allocate nothing. Copying one
// takes a snapshot of its counts (each read atomically, not all at one instant).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "backoff/detail/sliding_counts.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"

namespace backoff {

// ---------------------------------------------------------------------------------------------
// Token bucket (gRPC).

// What adds token_ratio to the bucket.
enum class token_earn : std::uint8_t {
  success,        // every successful attempt (gRPC)
  request,        // every operation's first attempt, when it is sent (Brooker's retry_sim)
  first_success,  // a successful first attempt only (jirfag/simulations)
};
// What takes one token from the bucket.
enum class token_spend : std::uint8_t {
  failure,  // every failed attempt, retried or not (gRPC)
  retry,    // every retry the bucket allows (Brooker's retry_sim, jirfag/simulations)
};

struct BACKOFF_EXPORT token_bucket_config {
  std::uint32_t max_tokens = 10;  // gRPC's maxTokens: in (0, 1000]
  double token_ratio = 0.1;       // gRPC's tokenRatio: > 0, at most 3 decimals
  token_earn earn = token_earn::success;
  token_spend spend = token_spend::failure;
  // Retries are allowed while tokens > threshold (>= when inclusive); none: max_tokens / 2,
  // exclusive (gRPC). In [0, max_tokens], at most 3 decimals.
  std::optional<double> threshold = std::nullopt;
  bool inclusive = false;

  // Throws parse_error with one line naming the bad value.
  void validate() const;
  // "token-bucket(max=10, ratio=0.1)", then earn, spend and the test where they are not gRPC's;
  // parse_budget(c.to_string()) gives c back.
  std::string to_string() const;

  friend bool operator==(const token_bucket_config&, const token_bucket_config&) = default;
};

class token_bucket_budget {
 public:
  explicit token_bucket_budget(const token_bucket_config& config = {}) noexcept
      : config_(config),
        max_milli_tokens_(static_cast<std::int64_t>(config.max_tokens) * 1000),
        milli_token_ratio_(std::llround(config.token_ratio * 1000.0)),
        milli_threshold_(config.threshold ? std::llround(*config.threshold * 1000.0)
                                          : max_milli_tokens_ / 2),
        milli_tokens_(max_milli_tokens_) {}

  token_bucket_budget(const token_bucket_budget& other) noexcept
      : config_(other.config_),
        max_milli_tokens_(other.max_milli_tokens_),
        milli_token_ratio_(other.milli_token_ratio_),
        milli_threshold_(other.milli_threshold_),
        milli_tokens_(other.milli_tokens()) {}
  token_bucket_budget& operator=(const token_bucket_budget& other) noexcept {
    config_ = other.config_;
    max_milli_tokens_ = other.max_milli_tokens_;
    milli_token_ratio_ = other.milli_token_ratio_;
    milli_threshold_ = other.milli_threshold_;
    milli_tokens_.store(other.milli_tokens(), std::memory_order_relaxed);
    return *this;
  }

  // An operation's first attempt is about to be sent: it earns with earn=request.
  void on_request() noexcept {
    if (config_.earn == token_earn::request) add_clamped(milli_token_ratio_);
  }
  // A failed attempt: one token less (not below 0) with spend=failure. Returns whether a retry
  // is allowed now, as gRPC's RecordFailure does.
  bool on_failure() noexcept {
    if (config_.spend == token_spend::failure) return allows(add_clamped(-1000));
    return retry_allowed();
  }
  // A successful attempt (`first`: the operation's first): token_ratio tokens more (not above
  // max_tokens) with earn=success, or earn=first_success and a first attempt.
  void on_success(bool first = true) noexcept {
    if (config_.earn == token_earn::success ||
        (config_.earn == token_earn::first_success && first)) {
      add_clamped(milli_token_ratio_);
    }
  }
  // Whether the failed operation may retry now; with spend=retry, takes the retry's token in the
  // same compare-and-swap as the test, so concurrent retries never overdraw the bucket.
  bool try_retry() noexcept {
    if (config_.spend == token_spend::failure) return retry_allowed();
    std::int64_t current = milli_tokens_.load(std::memory_order_relaxed);
    for (;;) {
      if (!allows(current)) return false;
      const std::int64_t next = std::max<std::int64_t>(current - 1000, 0);
      if (milli_tokens_.compare_exchange_weak(current, next, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  bool retry_allowed() const noexcept { return allows(milli_tokens()); }

  std::int64_t milli_tokens() const noexcept {
    return milli_tokens_.load(std::memory_order_relaxed);
  }
  double tokens() const noexcept { return static_cast<double>(milli_tokens()) / 1000.0; }
  const token_bucket_config& config() const noexcept { return config_; }

 private:
  bool allows(std::int64_t milli) const noexcept {
    return config_.inclusive ? milli >= milli_threshold_ : milli > milli_threshold_;
  }

  // tokens = clamp(tokens + delta, 0, max) in one compare-and-swap; returns the new value.
  // A full bucket that gains, or an empty one that loses, is left untouched (no write), which
  // keeps the common case of a healthy server to one load.
  std::int64_t add_clamped(std::int64_t delta) noexcept {
    std::int64_t current = milli_tokens_.load(std::memory_order_relaxed);
    for (;;) {
      const std::int64_t next = std::clamp(current + delta, std::int64_t{0}, max_milli_tokens_);
      if (next == current) return current;
      if (milli_tokens_.compare_exchange_weak(current, next, std::memory_order_relaxed)) {
        return next;
      }
    }
  }

  token_bucket_config config_;
  std::int64_t max_milli_tokens_;
  std::int64_t milli_token_ratio_;
  std::int64_t milli_threshold_;
  std::atomic<std::int64_t> milli_tokens_;
};

// ---------------------------------------------------------------------------------------------
// Ratio budget (Finagle).

struct BACKOFF_EXPORT ratio_budget_config {
  double percent = 20.0;                       // retries per 100 requests; [0, 1000], 3 decimals
  double min_per_s = 10.0;                     // the floor, in retries per second; [0, 1e6]
  duration window = std::chrono::seconds{10};  // (0, 1 day]

  void validate() const;
  // "ratio(percent=20, min_per_s=10, window=10s)"; parse_budget(c.to_string()) gives c back.
  std::string to_string() const;

  friend bool operator==(const ratio_budget_config&, const ratio_budget_config&) = default;
};

class BACKOFF_EXPORT ratio_budget {
 public:
  struct counts {
    std::uint64_t requests = 0;
    std::uint64_t retries = 0;
  };

  explicit ratio_budget(const ratio_budget_config& config = {}) noexcept;

  // An operation's first attempt: the deposit that pays for `percent` % of a retry.
  void on_request(duration now) noexcept { counts_.add(now, 1, 0); }

  // Takes one retry from the budget if it has one: true when the retry may go ahead.
  bool try_retry(duration now) noexcept {
    return counts_.add_if(now, 0, 1, [this](detail::sliding_counts::totals t) {
      return t.second * retry_cost <= t.first * request_credit_ + reserve_;
    });
  }

  // The requests and retries counted in the window that ends at `now`.
  counts window_counts(duration now) const noexcept {
    const auto t = counts_.sum(now);
    return {t.first, t.second};
  }
  // How many more retries the budget allows at `now` (fractional; may be 0).
  double available(duration now) const noexcept;

  const ratio_budget_config& config() const noexcept { return config_; }

 private:
  // The comparison retries * 100 % <= requests * percent + reserve, in thousandths of a percent.
  static constexpr std::uint64_t retry_cost = 100'000;

  ratio_budget_config config_;
  std::uint64_t request_credit_;  // percent * 1000
  std::uint64_t reserve_;         // min_per_s * window_s * retry_cost
  detail::sliding_counts counts_;
};

// ---------------------------------------------------------------------------------------------
// Retry quota (the AWS SDKs' standard mode).

struct BACKOFF_EXPORT retry_quota_config {
  std::uint32_t capacity = 500;     // tokens in a full quota; it starts full. 1..1000000
  std::uint32_t retry_cost = 5;     // what a retry takes; 1..capacity
  std::uint32_t timeout_cost = 10;  // what a retry after a timed-out attempt takes; 1..capacity
  std::uint32_t refund =
      1;  // what a success gives back when its operation took nothing; 0..capacity

  void validate() const;
  // "quota(capacity=500, retry_cost=5, timeout_cost=10, refund=1)"; parse_budget(c.to_string())
  // gives c back.
  std::string to_string() const;

  friend bool operator==(const retry_quota_config&, const retry_quota_config&) = default;
};

class retry_quota {
 public:
  explicit retry_quota(const retry_quota_config& config = {}) noexcept
      : config_(config), available_(config.capacity) {}
  retry_quota(const retry_quota& other) noexcept
      : config_(other.config_), available_(other.available()) {}
  retry_quota& operator=(const retry_quota& other) noexcept {
    config_ = other.config_;
    available_.store(other.available(), std::memory_order_relaxed);
    return *this;
  }

  // Takes `amount` when the quota holds at least that much (true); else takes nothing (false).
  bool acquire(std::uint32_t amount) noexcept {
    std::uint32_t current = available_.load(std::memory_order_relaxed);
    for (;;) {
      if (amount > current) return false;
      if (available_.compare_exchange_weak(current, current - amount, std::memory_order_relaxed)) {
        return true;
      }
    }
  }
  // Gives `amount` back, never above capacity; returns what was added. A full quota is only
  // read, which keeps a healthy client's successes to one load.
  std::uint32_t release(std::uint32_t amount) noexcept {
    std::uint32_t current = available_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t added =
          std::min(amount, config_.capacity - std::min(current, config_.capacity));
      if (added == 0) return 0;
      if (available_.compare_exchange_weak(current, current + added, std::memory_order_relaxed)) {
        return added;
      }
    }
  }

  // What a retry after this failure costs.
  std::uint32_t cost(bool timed_out) const noexcept {
    return timed_out ? config_.timeout_cost : config_.retry_cost;
  }
  // An operation succeeded: it gives back `taken`, what its last retry took, or `refund` when it
  // took nothing.
  void on_success(std::uint32_t taken) noexcept { release(taken != 0 ? taken : config_.refund); }

  std::uint32_t available() const noexcept { return available_.load(std::memory_order_relaxed); }
  const retry_quota_config& config() const noexcept { return config_; }

 private:
  retry_quota_config config_;
  std::atomic<std::uint32_t> available_;
};

// ---------------------------------------------------------------------------------------------
// Any budget, as scenario files and the drivers name them.

using budget_config = std::variant<token_bucket_config, ratio_budget_config, retry_quota_config>;

// Reads "token-bucket(max=10, ratio=0.1)", "ratio(percent=20, min_per_s=10, window=10s)" or
// "quota(capacity=500, retry_cost=5, timeout_cost=10, refund=1)"; every key is optional. Throws
// parse_error with one line that quotes the spec and names the bad part.
BACKOFF_EXPORT budget_config parse_budget(std::string_view text);
BACKOFF_EXPORT std::string to_string(const budget_config& config);

// One interface over the budgets for the retry loops and the simulator. A call that does not
// concern the chosen budget does nothing: the token bucket ignores on_request and time, the
// ratio budget ignores outcomes, the quota ignores on_request, time and failures (a retry pays
// when it is allowed).
//
// `taken` is one operation's account of what the quota took from it: try_retry sets it to the
// cost of the retry it allows, on_outcome gives it back on a success. retry_controller keeps one
// per operation; other kinds leave it alone.
class BACKOFF_EXPORT retry_budget {
 public:
  explicit retry_budget(const budget_config& config);

  // An operation's first attempt is about to be sent.
  void on_request(duration now) noexcept {
    if (auto* r = std::get_if<ratio_budget>(&budget_)) {
      r->on_request(now);
    } else if (auto* t = std::get_if<token_bucket_budget>(&budget_)) {
      t->on_request();
    }
  }
  // An attempt ended in success or in a retryable failure (gRPC counts permanent errors as
  // neither: do not report them); `retry`: it was not the operation's first attempt.
  void on_outcome(duration now, bool succeeded, bool retry = false,
                  std::uint32_t taken = 0) noexcept {
    static_cast<void>(now);
    if (auto* t = std::get_if<token_bucket_budget>(&budget_)) {
      if (succeeded) {
        t->on_success(!retry);
      } else {
        t->on_failure();
      }
    } else if (auto* q = std::get_if<retry_quota>(&budget_)) {
      if (succeeded) q->on_success(taken);
    }
  }
  // Whether the failed operation may retry now; a ratio budget spends one retry if so, as does a
  // token bucket with spend=retry, and a quota takes the retry's cost (timeout_cost when
  // `timed_out`) into `taken`.
  bool try_retry(duration now, bool timed_out, std::uint32_t& taken) noexcept {
    if (auto* t = std::get_if<token_bucket_budget>(&budget_)) return t->try_retry();
    if (auto* q = std::get_if<retry_quota>(&budget_)) {
      const std::uint32_t cost = q->cost(timed_out);
      if (!q->acquire(cost)) return false;
      taken = cost;
      return true;
    }
    return std::get<ratio_budget>(budget_).try_retry(now);
  }
  bool try_retry(duration now) noexcept {
    std::uint32_t unaccounted = 0;
    return try_retry(now, false, unaccounted);
  }

  const std::variant<token_bucket_budget, ratio_budget, retry_quota>& get() const noexcept {
    return budget_;
  }

 private:
  std::variant<token_bucket_budget, ratio_budget, retry_quota> budget_;
};

}  // namespace backoff
