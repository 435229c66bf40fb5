// SPDX-License-Identifier: Apache-2.0
// The timer queue's cold paths: the calendar's buckets, refills, re-cuts and folding back
// (timer_queue.hpp says why and how the order stays exact).
#include "timer_queue.hpp"

#include <algorithm>
#include <bit>

namespace backoff::sim {

namespace timer_queue_detail {
// The ring never has more buckets than this (1.5 MiB of vector headers); events beyond wait in
// the overflow.
constexpr std::uint64_t max_ring = std::uint64_t{1} << 16;
constexpr std::uint64_t min_ring = 16;
}  // namespace timer_queue_detail

void timer_queue::heapify() noexcept {
  const std::size_t n = near_.size();
  if (n < 2) return;
  for (std::size_t i = (n - 2) / 4 + 1; i-- > 0;) sift_down(i, near_[i]);
}

void timer_queue::set_horizon() noexcept {
  // The last representable bucket: its events stay in the near heap with everything before.
  const std::uint64_t last = static_cast<std::uint64_t>(time_max) >> shift_;
  horizon_ = next_ > last ? time_max : static_cast<time_ns>(next_ << shift_);
}

void timer_queue::push_far(const event& ev) {
  if (!calendar_) {  // the heap alone: horizon_ is time_max and ev.time is too
    push_near(ev);
    return;
  }
  const std::uint64_t b = bucket_of(ev.time);
  if (b < next_) {  // only past the last representable bucket (horizon_ == time_max)
    push_near(ev);
    return;
  }
  if (b - next_ <= mask_) {
    ring_[b & mask_].push_back(ev);
    ++ring_count_;
  } else {
    if (overflow_.empty() || b < overflow_min_) overflow_min_ = b;
    overflow_.push_back(ev);
  }
  ++far_count_;
}

// Moves the overflow's events whose bucket is now within the ring into it.
void timer_queue::migrate_overflow() noexcept {
  ++stats_.migrations;
  std::size_t kept = 0;
  std::uint64_t kept_min = 0;
  for (const event& ev : overflow_) {
    const std::uint64_t b = bucket_of(ev.time);
    if (b - next_ <= mask_) {
      // Capacity may grow here; bucket vectors keep theirs, so this allocates rarely.
      ring_[b & mask_].push_back(ev);
      ++ring_count_;
    } else {
      if (kept == 0 || b < kept_min) kept_min = b;
      overflow_[kept++] = ev;
    }
  }
  overflow_.resize(kept);
  overflow_min_ = kept_min;
}

void timer_queue::refill() {
  // near_ is empty. A calendar this small is no faster than the heap alone.
  if (far_count_ < merge_size) {
    merge();
    return;
  }
  for (;;) {
    if (ring_count_ == 0) {
      next_ = overflow_min_;  // everything waits in the overflow: jump to its first bucket
      ++stats_.jumps;
      migrate_overflow();
    } else if (!overflow_.empty() && overflow_min_ < next_ + (mask_ + 1) / 2) {
      // Half the ring ahead: the overflow's first events are due soon; never later than this,
      // so that none of them is ever due before the bucket being drained.
      migrate_overflow();
    }
    std::vector<event>& bucket = ring_[next_ & mask_];
    ++next_;
    if (bucket.empty()) {
      ++skipped_;
      continue;
    }
    ring_count_ -= bucket.size();
    far_count_ -= bucket.size();
    near_.swap(bucket);  // bucket keeps near_'s empty buffer for its next events
    // ... unless that buffer is large (it held a burst of events due at once): buffers swapped
    // around the ring would otherwise each end up as large as the largest bucket ever was.
    if (bucket.capacity() > 4 * bucket_target) std::vector<event>().swap(bucket);
    set_horizon();
    heapify();
    drained_ += near_.size();
    break;
  }
  // Buckets far too narrow for the events (the population thinned or spread out): re-cut.
  if (skipped_ > 4 * drained_ + 4096) spawn();
}

void timer_queue::merge() {
  ++stats_.merges;
  for (auto& bucket : ring_) {
    for (const event& ev : bucket) near_.push_back(ev);
    bucket.clear();
  }
  for (const event& ev : overflow_) near_.push_back(ev);
  overflow_.clear();
  ring_count_ = 0;
  far_count_ = 0;
  heapify();
  calendar_ = false;
  horizon_ = time_max;
  spawn_at_ = std::max(spawn_size, 2 * near_.size());
}

void timer_queue::spawn() {
  namespace d = timer_queue_detail;
  // Amortized: re-cutting costs O(size), so it waits for half as many pushes since the last.
  if (calendar_ && pushes_ - pushes_at_spawn_ < size() / 2) {
    spawn_at_ = std::max(spawn_at_, 2 * near_.size());
    skipped_ = 0;
    drained_ = 0;
    return;
  }
  ++stats_.spawns;
  scratch_.clear();
  scratch_.swap(near_);
  for (auto& bucket : ring_) {
    scratch_.insert(scratch_.end(), bucket.begin(), bucket.end());
    bucket.clear();
  }
  scratch_.insert(scratch_.end(), overflow_.begin(), overflow_.end());
  overflow_.clear();
  ring_count_ = 0;
  far_count_ = 0;

  time_ns lo = time_max, hi = 0;
  for (const event& ev : scratch_) {
    lo = std::min(lo, ev.time);
    hi = std::max(hi, ev.time);
  }
  const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  const std::uint64_t buckets = std::max<std::uint64_t>(1, scratch_.size() / bucket_target);
  const std::uint64_t width = span / buckets;
  shift_ = width <= 1 ? 0 : static_cast<int>(std::bit_width(width)) - 1;
  const std::uint64_t first = static_cast<std::uint64_t>(lo) >> shift_;
  const std::uint64_t needed = (static_cast<std::uint64_t>(hi) >> shift_) - first + 1;
  const std::uint64_t ring = std::bit_ceil(std::clamp(needed, d::min_ring, d::max_ring));
  ring_.resize(ring);
  mask_ = ring - 1;

  calendar_ = true;
  next_ = first + 1;
  set_horizon();
  for (const event& ev : scratch_) {
    if (ev.time < horizon_) {
      near_.push_back(ev);
    } else {
      push_far(ev);
    }
  }
  heapify();
  pushes_at_spawn_ = pushes_;
  skipped_ = 0;
  drained_ = near_.size();
  spawn_at_ = std::max(spawn_size, 2 * near_.size());
  scratch_.clear();
}

}  // namespace backoff::sim
