// SPDX-License-Identifier: Apache-2.0
// Bulkheads: at most `max` calls to a dependency run at once; up to `queue` more callers wait, in
// the order they came, for at most `wait` each; anyone beyond that is refused at once. A slow
// dependency then ties up `max` of a client's threads or connections, not all of them.
//
//   backoff::bulkhead pool{backoff::parse_bulkhead("bulkhead(max=10, queue=20, wait=1s)")};
//   if (pool.try_enter()) {         // a slot now, or refuse at once
//     call();
//     pool.leave();
//   }
//   if (backoff::enter(pool)) {     // or wait in line for up to 1 s (a blocking sleep)
//     call();
//     pool.leave();
//   }
//
// Sources, taken for their rules and numbers: failsafe-go bulkhead/bulkhead.go (2024: a
// semaphore of maxConcurrency permits with a max wait time; TryAcquirePermit, ReleasePermit),
// resilience4j SemaphoreBulkhead.java (2017; maxConcurrentCalls 25 and maxWaitDuration 0 by
// default, the defaults here), Polly's BulkheadPolicy (2017; maxParallelization,
// maxQueuingActions) and System.Threading.RateLimiting's ConcurrencyLimiter (2022, Polly v8's
// concurrency limiter; PermitLimit, QueueLimit, oldest first).
// Unlike failsafe-go and resilience4j, the number of waiters is bounded (`queue`, as Polly's), and
// a freed slot goes to the oldest waiter, never to a newcomer that barges in (try_enter refuses
// while anyone waits), so a waiter is never overtaken.
//
// Call sequence. Every slot taken (try_enter true, enqueue admitted, a waiter handed a slot, the
// helper enter() true) is given back by exactly one leave(). The waiting form is non-blocking, so
// that every driver (the sync loop, the Asio coroutine loop, the simulator) waits its own way:
//   1. bulkhead_waiter w{wake};       // an intrusive node, usually on the waiter's stack or frame
//   2. b.enqueue(w): admitted (a slot now), full (refused), or queued;
//   3. when queued, wait until wake(w) is called or the wait times out or is cancelled;
//   4. then always b.cancel(w): true when w was handed a slot (woken, or handed one while timing
//      out), false when it was taken out of the queue without one. Only after cancel returns may
//      w be destroyed.
// leave() hands its slot straight to the oldest waiter (the slot count does not drop, so nobody
// can take it in between) and calls that waiter's wake function after releasing the lock. The
// wake function must not block and must not call back into the bulkhead for that waiter; cancel()
// waits for a wake call in progress to return, so that the waker never touches a destroyed node.
//
// enter() waits through an injected sleep (retry_env's: `bool(duration, std::stop_token)`); the
// wake requests stop on the stop_source whose token the sleep was given, so the library's
// interruptible sleep returns as soon as a slot is handed over, and a test's sleep can simply
// record. async_bulkhead.hpp waits on an Asio timer instead.
//
// Threads: every member is safe to call concurrently. try_enter and leave are lock-free (one
// compare-and-swap on one word holding the slots in use and the number waiting) while nobody
// waits; enqueue, cancel, and a leave that hands its slot over take a mutex. Nothing allocates.
// The bulkhead needs no clock: time limits are the waiter's timer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "backoff/duration.hpp"
#include "backoff/export.hpp"

namespace backoff {

struct bulkhead_config {
  std::uint32_t max = 25;   // calls at once (resilience4j's maxConcurrentCalls); 1..1000000
  std::uint32_t queue = 0;  // callers that may wait for a slot (Polly's QueueLimit); 0..1000000
  duration wait{0};         // how long each may wait; (0, 1d] with a queue, 0 without one

  // Throws parse_error with one line naming the bad value.
  BACKOFF_EXPORT void validate() const;
  // "bulkhead(max=10, queue=20, wait=1s)"; parse_bulkhead(c.to_string()) == c.
  BACKOFF_EXPORT std::string to_string() const;
  friend bool operator==(const bulkhead_config&, const bulkhead_config&) = default;
};

// Reads "bulkhead(max=10, queue=20, wait=1s)"; every key is optional. Throws parse_error with one
// line that quotes the spec and names the bad part, with a did-you-mean for a misspelt key.
BACKOFF_EXPORT bulkhead_config parse_bulkhead(std::string_view text);

enum class bulkhead_entry : std::uint8_t {
  admitted,  // the caller holds a slot
  queued,    // the caller waits in line (the waiting form only)
  full,      // refused: every slot taken and the queue full
};

// One caller waiting for a slot: a node of the bulkhead's queue, owned by the caller. Neither
// copyable nor movable (the queue points at it).
class bulkhead_waiter {
 public:
  // Called once, by the thread whose leave() handed this waiter a slot, outside the lock.
  using wake_function = void (*)(bulkhead_waiter&) noexcept;

  explicit bulkhead_waiter(wake_function wake) noexcept : wake_(wake) {}
  bulkhead_waiter(const bulkhead_waiter&) = delete;
  bulkhead_waiter& operator=(const bulkhead_waiter&) = delete;

 private:
  friend class bulkhead;
  enum stage : std::uint8_t { idle, waiting, handing, handed };

  wake_function wake_;
  bulkhead_waiter* prev_ = nullptr;
  bulkhead_waiter* next_ = nullptr;
  // idle -> waiting (enqueue) -> handing (leave, under the lock) -> handed (leave, after the
  // wake call) -> idle (cancel); or waiting -> idle (cancel, taken out of the queue).
  std::atomic<std::uint8_t> stage_{idle};
};

class BACKOFF_EXPORT bulkhead {
 public:
  explicit bulkhead(const bulkhead_config& config = {}) noexcept : config_(config) {}
  bulkhead(const bulkhead&) = delete;
  bulkhead& operator=(const bulkhead&) = delete;

  // A slot now, if one is free and nobody waits ahead; false otherwise.
  bool try_enter() noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if (waiting_of(s) != 0 || in_use_of(s) >= config_.max) return false;
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  // Gives a slot back; while anyone waits, the oldest waiter gets it and is woken.
  void leave() noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    while (waiting_of(s) == 0) {
      if (state_.compare_exchange_weak(s, s - 1, std::memory_order_release,
                                       std::memory_order_relaxed)) {
        return;
      }
    }
    hand_over();
  }

  // A slot now as try_enter gives one, else a place at the back of the queue if it has room.
  // `waiter` must be idle (new, or its last wait ended with cancel).
  bulkhead_entry enqueue(bulkhead_waiter& waiter) noexcept;

  // Ends a wait that enqueue answered `queued`, however it ended (woken, timed out, cancelled):
  // true when the waiter holds a slot (it must leave() it), false when it was taken out of the
  // queue without one. Returns false for an idle waiter.
  bool cancel(bulkhead_waiter& waiter) noexcept;

  std::uint32_t in_use() const noexcept {
    return in_use_of(state_.load(std::memory_order_relaxed));
  }
  std::uint32_t waiting() const noexcept {
    return waiting_of(state_.load(std::memory_order_relaxed));
  }
  const bulkhead_config& config() const noexcept { return config_; }

 private:
  // The state word: the slots in use in the low half, the waiters in the high half, so that one
  // compare-and-swap sees both (a slot is never taken past a waiter).
  static constexpr std::uint64_t waiter_unit = std::uint64_t{1} << 32;
  static constexpr std::uint32_t in_use_of(std::uint64_t s) noexcept {
    return static_cast<std::uint32_t>(s & (waiter_unit - 1));
  }
  static constexpr std::uint32_t waiting_of(std::uint64_t s) noexcept {
    return static_cast<std::uint32_t>(s >> 32);
  }

  void hand_over() noexcept;

  bulkhead_config config_;
  std::atomic<std::uint64_t> state_{0};
  std::mutex mutex_;  // the queue, and every change of the waiter count
  bulkhead_waiter* head_ = nullptr;
  bulkhead_waiter* tail_ = nullptr;
};

// Waits for a slot for at most `wait` through `sleep` (retry_env::sleep's shape: it returns false
// when woken early through its stop token), queued behind earlier waiters. true: the caller holds
// a slot and must leave() it. false: full, timed out, or `cancel` was requested (a slot that
// arrived meanwhile is given back). wait <= 0 only tries a slot now.
BACKOFF_EXPORT bool enter(bulkhead& b, duration wait,
                          const std::function<bool(duration, std::stop_token)>& sleep,
                          std::stop_token cancel = {});
// The same with the bulkhead's own `wait` and the library's interruptible sleep.
BACKOFF_EXPORT bool enter(bulkhead& b, std::stop_token cancel = {});

}  // namespace backoff
