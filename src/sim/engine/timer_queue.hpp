// SPDX-License-Identifier: Apache-2.0
// The engine's priority queue of timed events: exact (time, sequence) order, at a cost per event
// that does not grow with the number pending (amortized).
//
// A few thousand pending events live in one flat 4-ary heap (the "near" heap), as the engine
// always kept them. When the heap grows past `spawn_size` (a million operations sleeping in
// backoff make a million entries, 32 MiB, and every pop walks it with cache misses), the queue
// becomes a calendar (Brown, "Calendar queues: a fast O(1) priority queue implementation for
// the simulation event set problem", CACM 31(10), 1988), in the two-tier form of the ladder
// queue's bottom and rungs (Tang, Goh & Thng, "Ladder queue: an O(1) priority queue structure
// for large-scale discrete event simulation", ACM TOMACS 15(3), 2005):
//   - time is cut into buckets of width 2^shift ns, chosen so that a bucket holds about
//     `bucket_target` events; a ring of buckets covers the next ring.size() widths, and events
//     beyond the ring wait, unsorted, in `overflow` (the ladder's "top");
//   - the near heap holds every event due before `horizon` (the end of the bucket being
//     drained), the buckets and the overflow every event due at or after it;
//   - an event is appended to its bucket unsorted (O(1)); when the near heap runs dry, the next
//     non-empty bucket becomes the near heap (a vector swap and an O(k) heapify).
// Order: the near heap's top is the earliest event of the whole queue, because everything
// outside it is due at or after `horizon` and everything in it before (or, at the last
// representable bucket, at) it; inside the heap the order is (time, sequence), exactly as
// before. Widths, ring size and when to re-cut only change speed; tests/sim/engine_test.cpp
// checks the order against a std::priority_queue under adversarial schedules.
//
// Re-cutting ("spawn") gathers every pending event and chooses the width again from their
// spread; it runs when the near heap outgrows `spawn_size` (a bucket too wide), or when draining
// skips far more empty buckets than it finds events (buckets too narrow), and at most once per
// pushes-since-last-spawn >= half the population, so its O(n) cost is amortized O(1) per event.
// Below `merge_size` pending events the calendar folds back into the heap alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine_types.hpp"

namespace backoff::sim {

class timer_queue {
 public:
  // Heap alone up to this many events (a 256 KiB heap stays in L2); a calendar beyond.
  static constexpr std::size_t spawn_size = 8192;
  // A calendar with fewer pending events than this folds back into the heap alone.
  static constexpr std::size_t merge_size = 1024;
  // Events per bucket the width aims at: the near heap's size after a refill.
  static constexpr std::size_t bucket_target = 128;

  bool empty() const noexcept { return near_.empty(); }  // near_ empty => everything empty
  std::size_t size() const noexcept { return near_.size() + far_count_; }
  // The earliest event; the queue must not be empty.
  const event& top() const noexcept { return near_.front(); }
  bool calendar() const noexcept { return calendar_; }
  // How often the cold paths ran (tests check that their schedules reach them).
  struct counters {
    std::uint64_t spawns = 0, merges = 0, jumps = 0, migrations = 0;
  };
  const counters& stats() const noexcept { return stats_; }
  void reserve(std::size_t events) { near_.reserve(events); }

  void push(const event& ev) {
    if (ev.time < horizon_) [[likely]] {
      push_near(ev);
      if (near_.size() > spawn_at_) [[unlikely]]
        spawn();
    } else {
      push_far(ev);
    }
    ++pushes_;
  }

  // Removes top().
  void pop() {
    const event last = near_.back();
    near_.pop_back();
    if (!near_.empty()) {
      sift_down(0, last);
    } else if (calendar_) [[unlikely]] {
      refill();
    }
  }

  static bool later(const event& a, const event& b) noexcept {
    return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
  }

 private:
  // Sift up from a local copy: re-reading the slot just written would stall on store-to-load
  // forwarding.
  void push_near(const event& ev) {
    std::size_t i = near_.size();
    if (i == near_.capacity()) [[unlikely]]
      near_.reserve(i < 64 ? 64 : 2 * i);
    near_.emplace_back(ev);  // within capacity: no call left out of line
    event* h = near_.data();
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!later(h[parent], ev)) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = ev;
  }
  // Puts `slot` (a copy of it) at slot i, whose old content is gone, and sifts it down.
  void sift_down(std::size_t i, const event& slot) noexcept {
    const event moving = slot;  // a copy: slot may be h[i] itself, overwritten below
    event* h = near_.data();
    const std::size_t n = near_.size();
    for (;;) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t last = first + 4 < n ? first + 4 : n;
      for (std::size_t c = first + 1; c < last; ++c) {
        if (later(h[best], h[c])) best = c;
      }
      if (!later(moving, h[best])) break;
      h[i] = h[best];
      i = best;
    }
    h[i] = moving;
  }
  void heapify() noexcept;
  void push_far(const event& ev);
  void refill();
  void migrate_overflow() noexcept;
  void spawn();
  void merge();
  std::uint64_t bucket_of(time_ns t) const noexcept {
    return static_cast<std::uint64_t>(t) >> shift_;
  }
  void set_horizon() noexcept;

  std::vector<event> near_;            // a 4-ary heap by (time, sequence)
  time_ns horizon_ = time_max;         // near_ holds the events before it, the rest after
  std::size_t spawn_at_ = spawn_size;  // re-cut when near_ grows past this
  bool calendar_ = false;

  // The calendar (used while calendar_): bucket b holds events with time >> shift_ == b, for b
  // in [next_, next_ + ring.size()), at ring[b & mask]; overflow_ holds those beyond.
  std::vector<std::vector<event>> ring_;
  std::uint64_t mask_ = 0;
  int shift_ = 0;
  std::uint64_t next_ = 0;  // the next bucket to drain: horizon_ == next_ << shift_
  std::size_t ring_count_ = 0, far_count_ = 0;  // events in the ring; in the ring and overflow
  std::vector<event> overflow_;
  std::uint64_t overflow_min_ = 0;  // the smallest bucket in overflow_ (when not empty)

  // Amortization of spawn(): pushes since the last one; empty buckets skipped and events
  // drained since then.
  std::uint64_t pushes_ = 0, pushes_at_spawn_ = 0;
  std::uint64_t skipped_ = 0, drained_ = 0;
  std::vector<event> scratch_;
  counters stats_;
};

}  // namespace backoff::sim
