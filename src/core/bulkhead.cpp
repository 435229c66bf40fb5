// SPDX-License-Identifier: Apache-2.0
// Bulkheads (bulkhead.hpp): the queue of waiters and the hand-over of a freed slot, the blocking
// helper, and the spec reader, checks and canonical text.
#include "backoff/bulkhead.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "backoff/error.hpp"
#include "backoff/retry.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view bulkhead_what = "bulkhead";
constexpr std::string_view bulkhead_names[] = {"bulkhead"};
constexpr std::uint32_t bulkhead_max_count = 1'000'000;
constexpr duration bulkhead_max_wait = 24h;

constexpr spec_key<bulkhead_config> bulkhead_keys[] = {
    detail::whole_number_key<&bulkhead_config::max, 1, bulkhead_max_count>(
        "max", all_variants, "a whole number in 1..1000000", "25", "calls inside at once"),
    detail::whole_number_key<&bulkhead_config::queue, 0, bulkhead_max_count>(
        "queue", all_variants, "a whole number in 0..1000000", "0",
        "callers that may wait, oldest first, for a slot; more are refused at once"),
    {"wait", all_variants, "a duration in (0, 1d] with a queue, 0 without", "0s",
     "how long a queued caller waits for a slot before it is refused",
     [](bulkhead_config& c, const spec_value& v) { c.wait = v.time(); },
     [](const bulkhead_config& c) -> std::optional<std::string> {
       return format_duration(c.wait);
     }},
};

}  // namespace

void bulkhead_config::validate() const {
  if (max < 1 || max > bulkhead_max_count) {
    throw parse_error("max=" + std::to_string(max) + " must be a whole number in 1..1000000");
  }
  if (queue > bulkhead_max_count) {
    throw parse_error("queue=" + std::to_string(queue) + " must be a whole number in 0..1000000");
  }
  if (wait < duration{0} || wait > bulkhead_max_wait) {
    throw parse_error("wait=" + format_duration(wait) + " must be in [0, 1d]");
  }
  if (queue > 0 && wait == duration{0}) {
    throw parse_error("queue=" + std::to_string(queue) +
                      " with wait=0s: a queued caller would give up at once (give wait > 0)");
  }
  if (queue == 0 && wait > duration{0}) {
    throw parse_error("wait=" + format_duration(wait) +
                      " with queue=0: no caller may wait (give queue > 0)");
  }
}

std::string bulkhead_config::to_string() const {
  return write_spec(bulkhead_names[0], bulkhead_keys, *this);
}

bulkhead_config parse_bulkhead(std::string_view text) {
  return detail::read_named_spec(bulkhead_what, "bulkhead", text, bulkhead_names, bulkhead_keys);
}

std::string detail::bulkhead_keys_markdown() {
  return key_table_markdown(bulkhead_keys, spec_variants{bulkhead_names, {}});
}

// ---------------------------------------------------------------------------------------------
// The queue.

bulkhead_entry bulkhead::enqueue(bulkhead_waiter& waiter) noexcept {
  if (try_enter()) return bulkhead_entry::admitted;
  const std::lock_guard lock(mutex_);
  // Every change of the waiter count happens under the lock, so the count read here matches the
  // list; the slots in use may still change under us (lock-free try_enter and leave).
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    if (waiting_of(s) == 0 && in_use_of(s) < config_.max) {
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return bulkhead_entry::admitted;
      }
      continue;
    }
    if (waiting_of(s) >= config_.queue) return bulkhead_entry::full;
    // A leave() that sees this count goes to hand_over and waits for the lock, by which time
    // the waiter is in the list.
    if (state_.compare_exchange_weak(s, s + waiter_unit, std::memory_order_relaxed)) break;
  }
  waiter.prev_ = tail_;
  waiter.next_ = nullptr;
  (tail_ != nullptr ? tail_->next_ : head_) = &waiter;
  tail_ = &waiter;
  waiter.stage_.store(bulkhead_waiter::waiting, std::memory_order_relaxed);
  return bulkhead_entry::queued;
}

void bulkhead::hand_over() noexcept {
  bulkhead_waiter* oldest = nullptr;
  {
    const std::lock_guard lock(mutex_);
    if (head_ == nullptr) {
      // Every waiter seen by leave() cancelled before it got the lock: the slot is free.
      state_.fetch_sub(1, std::memory_order_release);
      return;
    }
    oldest = head_;
    head_ = oldest->next_;
    (head_ != nullptr ? head_->prev_ : tail_) = nullptr;
    oldest->prev_ = oldest->next_ = nullptr;
    oldest->stage_.store(bulkhead_waiter::handing, std::memory_order_relaxed);
    // The slot passes on: one waiter fewer, the slots in use unchanged.
    state_.fetch_sub(waiter_unit, std::memory_order_acq_rel);
  }
  oldest->wake_(*oldest);
  // The last touch of the node: from here its owner may destroy it (cancel waits for this).
  oldest->stage_.store(bulkhead_waiter::handed, std::memory_order_release);
}

bool bulkhead::cancel(bulkhead_waiter& waiter) noexcept {
  {
    const std::lock_guard lock(mutex_);
    if (waiter.stage_.load(std::memory_order_relaxed) == bulkhead_waiter::waiting) {
      (waiter.prev_ != nullptr ? waiter.prev_->next_ : head_) = waiter.next_;
      (waiter.next_ != nullptr ? waiter.next_->prev_ : tail_) = waiter.prev_;
      waiter.prev_ = waiter.next_ = nullptr;
      waiter.stage_.store(bulkhead_waiter::idle, std::memory_order_relaxed);
      state_.fetch_sub(waiter_unit, std::memory_order_relaxed);
      return false;
    }
  }
  std::uint8_t stage = waiter.stage_.load(std::memory_order_acquire);
  if (stage == bulkhead_waiter::idle) return false;
  // Handed a slot: wait for the waker's wake call to return (it does not block).
  while (stage == bulkhead_waiter::handing) {
    std::this_thread::yield();
    stage = waiter.stage_.load(std::memory_order_acquire);
  }
  waiter.stage_.store(bulkhead_waiter::idle, std::memory_order_relaxed);
  return true;
}

// ---------------------------------------------------------------------------------------------
// The blocking helper.

namespace {

// A waiter whose wake interrupts the sleep it waits in.
struct sleeping_waiter : bulkhead_waiter {
  sleeping_waiter() noexcept : bulkhead_waiter(&wake) {}
  static void wake(bulkhead_waiter& self) noexcept {
    static_cast<sleeping_waiter&>(self).wakeup.request_stop();
  }
  std::stop_source wakeup;
};

}  // namespace

bool enter(bulkhead& b, duration wait, const std::function<bool(duration, std::stop_token)>& sleep,
           std::stop_token cancel) {
  if (cancel.stop_requested()) return false;
  if (b.try_enter()) return true;
  if (wait <= duration{0}) return false;
  sleeping_waiter waiter;
  switch (b.enqueue(waiter)) {
    case bulkhead_entry::admitted:
      return true;
    case bulkhead_entry::full:
      return false;
    case bulkhead_entry::queued:
      break;
  }
  {
    // A cancel request wakes the sleep as a hand-over does; cancel() below tells them apart.
    const std::stop_callback forward(cancel,
                                     [&waiter]() noexcept { waiter.wakeup.request_stop(); });
    try {
      static_cast<void>(sleep(wait, waiter.wakeup.get_token()));
    } catch (...) {
      if (b.cancel(waiter)) b.leave();
      throw;
    }
  }
  const bool holds_slot = b.cancel(waiter);
  if (holds_slot && cancel.stop_requested()) {
    b.leave();
    return false;
  }
  return holds_slot;
}

bool enter(bulkhead& b, std::stop_token cancel) {
  return enter(b, b.config().wait, detail::interruptible_sleep, std::move(cancel));
}

}  // namespace backoff
