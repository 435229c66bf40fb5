// SPDX-License-Identifier: Apache-2.0
// What the retry controller holds for the attempt in progress, between the gate it passed and the
// report of how the attempt ended: the circuit breaker's permit and the limiter's ticket. An
// attempt never reported (an exception the loop does not retry, a destroyed coroutine, a later
// gate that refused) gives back what it held, so that an abandoned attempt cannot keep a
// half-open trial or a bulkhead slot for ever. Internal to retry.hpp.
#pragma once

#include <utility>

#include "backoff/circuit_breaker.hpp"
#include "backoff/concurrency_limit.hpp"
#include "backoff/duration.hpp"
#include "backoff/limiter.hpp"

namespace backoff::detail {

// The breaker permit of the attempt in progress, between before_attempt and after. An owner
// destroyed with its permit unreported (the operation threw an exception the loop does not
// retry; a coroutine destroyed mid-attempt) releases it, so that an abandoned half-open trial
// gives its place back. A copy does not own the permit: a copied controller never releases a
// trial twice.
class breaker_lease {
 public:
  breaker_lease() = default;
  breaker_lease(const breaker_lease& other) noexcept
      : breaker_(other.breaker_), permit_(other.permit_) {}
  breaker_lease& operator=(const breaker_lease& other) noexcept {
    if (this != &other) {
      drop();
      breaker_ = other.breaker_;
      permit_ = other.permit_;
    }
    return *this;
  }
  breaker_lease(breaker_lease&& other) noexcept
      : breaker_(other.breaker_),
        permit_(other.permit_),
        pending_(std::exchange(other.pending_, false)) {}
  breaker_lease& operator=(breaker_lease&& other) noexcept {
    if (this != &other) {
      drop();
      breaker_ = other.breaker_;
      permit_ = other.permit_;
      pending_ = std::exchange(other.pending_, false);
    }
    return *this;
  }
  ~breaker_lease() { drop(); }

  // Asks `b` for a permit; true when the attempt may go.
  bool acquire(circuit_breaker& b, duration now, bool first_try) noexcept {
    drop();
    breaker_ = &b;
    permit_ = b.try_acquire(now, first_try);
    pending_ = permit_.allowed;
    return pending_;
  }
  void record(duration now, bool failure) noexcept {
    if (!pending_) return;
    pending_ = false;
    breaker_->record(now, permit_, failure);
  }
  void drop() noexcept {
    if (!pending_) return;
    pending_ = false;
    breaker_->release(permit_);
  }

 private:
  circuit_breaker* breaker_ = nullptr;
  circuit_breaker::permit permit_{};
  bool pending_ = false;
};

// The limiter ticket of the attempt in progress, as breaker_lease holds the breaker's permit: an
// attempt never reported (an exception, a destroyed coroutine, a throttle that refused after the
// limiter admitted) gives its slot back, as `ignored`. A copy does not own the ticket.
class limiter_lease {
 public:
  limiter_lease() = default;
  limiter_lease(const limiter_lease& other) noexcept
      : limiter_(other.limiter_), ticket_(other.ticket_) {
    ticket_.holds = false;
  }
  limiter_lease& operator=(const limiter_lease& other) noexcept {
    if (this != &other) {
      drop();
      limiter_ = other.limiter_;
      ticket_ = other.ticket_;
      ticket_.holds = false;
    }
    return *this;
  }
  limiter_lease(limiter_lease&& other) noexcept
      : limiter_(other.limiter_), ticket_(std::exchange(other.ticket_, {})) {}
  limiter_lease& operator=(limiter_lease&& other) noexcept {
    if (this != &other) {
      drop();
      limiter_ = other.limiter_;
      ticket_ = std::exchange(other.ticket_, {});
    }
    return *this;
  }
  ~limiter_lease() { drop(); }

  const limiter_ticket& acquire(backoff::limiter& l, duration now) noexcept {
    drop();
    limiter_ = &l;
    ticket_ = l.acquire(now);
    return ticket_;
  }
  // The wait in a bulkhead's line got a slot.
  void entered_from_queue() noexcept { limiter::queued_entry(ticket_); }
  void record(duration now, limit_outcome how) noexcept {
    if (!ticket_.holds) return;
    limiter_->release(ticket_, now, how);
    ticket_.holds = false;
  }
  void drop() noexcept {
    if (!ticket_.holds) return;
    limiter_->release(ticket_, duration{0}, limit_outcome::ignored);
    ticket_.holds = false;
  }

 private:
  backoff::limiter* limiter_ = nullptr;
  limiter_ticket ticket_{};
};

}  // namespace backoff::detail
