// SPDX-License-Identifier: Apache-2.0
// The limiter of a strategy: one of a bulkhead (bulkhead.hpp), an adaptive concurrency limit
// (concurrency_limit.hpp) or a rate limiter (rate_limiter.hpp), behind the one gate the retry
// loops ask before each attempt. A strategy's `limiter = bulkhead(...)`, `limit(...)` or
// `rate(...)` builds one; retry_gates::limiter hands it to the loops, which ask it after the
// circuit breaker and the throttle, and tell it how each attempt ended.
//
//   backoff::limiter gate{backoff::parse_limiter("limit(kind=gradient2, max=200)")};
//   backoff::limiter_ticket t = gate.acquire(now());
//   if (t.what == backoff::limiter_answer::refused) return fail_fast();
//   if (t.what == backoff::limiter_answer::wait) sleep(t.wait);    // a rate reservation
//   const bool ok = call();
//   gate.release(t, now(), ok ? backoff::limit_outcome::success : backoff::limit_outcome::dropped);
//
// Call sequence: acquire(now) before an attempt. Its answer:
//   admitted  the attempt may go now;
//   wait      (rate) a token is reserved: go after `wait`, the caller's own sleep, timer or event;
//   queue     (bulkhead with a queue) every slot is taken: wait in line for up to `wait` with
//             enter() or async_enter() on bulkhead(), then mark the ticket with queued_entry();
//             when that fails, the attempt is refused;
//   refused   the attempt must not be sent (outcome::limited in the loops).
// Every admitted ticket is released exactly once with how the attempt ended: a bulkhead slot is
// left, a concurrency limit gets its sample (success: the attempt's latency; dropped: a
// retryable failure, which tells a loss-based limit to back off; ignored: the attempt was
// abandoned, nothing to learn), a rate token is spent either way. A refused ticket needs no
// release; releasing it does nothing.
//
// Threads: as its limiter, every member is safe to call concurrently. acquire and release add a
// switch on the kind to the limiter's own cost, and allocate nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "backoff/bulkhead.hpp"
#include "backoff/concurrency_limit.hpp"
#include "backoff/duration.hpp"
#include "backoff/export.hpp"
#include "backoff/rate_limiter.hpp"

namespace backoff {

using limiter_config = std::variant<bulkhead_config, limit_config, rate_limiter_config>;

// Reads "bulkhead(...)", "limit(...)" or "rate(...)" (docs/POLICIES.md). Throws parse_error with
// one line that quotes the spec and names the bad part, with a did-you-mean for the name.
BACKOFF_EXPORT limiter_config parse_limiter(std::string_view text);
// The spec text of the chosen kind; parse_limiter(to_string(c)) == c.
BACKOFF_EXPORT std::string to_string(const limiter_config& config);
// "bulkhead", "limit" or "rate".
BACKOFF_EXPORT std::string_view limiter_name(const limiter_config& config) noexcept;
// Whether an attempt may have to wait in a queue for a slot (a bulkhead with queue > 0): a driver
// that cannot park an attempt until a slot frees refuses such a limiter.
BACKOFF_EXPORT bool may_queue(const limiter_config& config) noexcept;

enum class limiter_answer : std::uint8_t { admitted, wait, queue, refused };

struct limiter_ticket {
  limiter_answer what = limiter_answer::refused;
  duration wait{0};     // wait: the reservation's delay; queue: the longest wait in line
  limit_permit permit;  // a concurrency limit's permit
  bool holds = false;   // a bulkhead slot or a limit permit is held: release it
};

class BACKOFF_EXPORT limiter {
 public:
  // `seed` jitters a vegas limit's probe (concurrency_limit.hpp).
  explicit limiter(const limiter_config& config, std::uint64_t seed = 1);
  limiter(const limiter&) = delete;
  limiter& operator=(const limiter&) = delete;

  limiter_ticket acquire(duration now) noexcept {
    switch (limiter_.index()) {
      case 0: {
        bulkhead& b = std::get<0>(limiter_);
        if (b.try_enter()) return {limiter_answer::admitted, duration{0}, {}, true};
        if (b.config().queue > 0) return {limiter_answer::queue, b.config().wait, {}, false};
        return {};
      }
      case 1: {
        limit_permit p = std::get<1>(limiter_).try_acquire(now);
        if (!p) return {};
        return {limiter_answer::admitted, duration{0}, p, true};
      }
      default: {
        const auto delay = std::get<2>(limiter_).reserve(now);
        if (!delay) return {};
        if (delay->count() > 0) return {limiter_answer::wait, *delay, {}, false};
        return {limiter_answer::admitted, duration{0}, {}, false};
      }
    }
  }

  // A queued ticket whose wait in line (enter, async_enter) got a slot: it now holds it.
  static void queued_entry(limiter_ticket& t) noexcept {
    t.what = limiter_answer::admitted;
    t.holds = true;
  }

  void release(const limiter_ticket& t, duration now, limit_outcome how) noexcept {
    if (!t.holds) return;
    if (auto* b = std::get_if<bulkhead>(&limiter_)) {
      b->leave();
    } else if (auto* l = std::get_if<concurrency_limiter>(&limiter_)) {
      l->release(t.permit, now, how);
    }
  }

  // The limiter itself, for its counts and for waiting in a bulkhead's line; null when it is
  // another kind.
  bulkhead* as_bulkhead() noexcept { return std::get_if<bulkhead>(&limiter_); }
  concurrency_limiter* as_limit() noexcept { return std::get_if<concurrency_limiter>(&limiter_); }
  rate_limiter* as_rate() noexcept { return std::get_if<rate_limiter>(&limiter_); }
  const limiter_config& config() const noexcept { return config_; }

 private:
  limiter_config config_;
  std::variant<bulkhead, concurrency_limiter, rate_limiter> limiter_;
};

}  // namespace backoff
