// SPDX-License-Identifier: Apache-2.0
// Two event counts over a sliding window of time, shared by threads without a lock: the ratio
// retry budget counts (requests, retries), the adaptive throttle (requests, accepts).
//
//   backoff::detail::sliding_counts counts{10s};
//   counts.add(now, 1, 0);                                  // one request
//   auto [requests, retries] = counts.sum(now);             // over the last 10 s
//   bool ok = counts.add_if(now, 0, 1, [](auto t) { return t.second <= t.first / 5; });
//
// `now` is the caller's time as a duration since its clock's epoch (steady, manual or virtual);
// only differences matter, and it may be negative.
//
// How: the window is cut into `slices` equal slices (10, as in Finagle's WindowedAdder and
// tower's TpsBudget), one atomic 64-bit word per slice holding both counts (32 bits each), in
// a ring. `published_` names the newest slice; the first call that sees a later time moves it
// forward and zeroes the slots of the slices it skips (at most `slices` stores), and only then
// publishes the new slice, so every slot always holds the counts of the one slice of the window
// (published - slices, published] that maps to it. An add is then one load and one fetch_add;
// a sum is `slices` loads; add_if is one compare-and-swap on the newest slot, which makes its
// check and its add one atomic step against every other call in the same slice.
//
// The approximations, all documented to callers:
//   - The window is whole slices: a sum counts the current slice and the `slices - 1` before
//     it, so events between (slices - 1) and `slices` slices old are forgotten a little early.
//   - A call that arrives while another thread is moving the window forward does not wait: it
//     counts in the previously published slice. When the move skips a whole window (the
//     counts were idle that long), that slice is being zeroed, and such a racing event can be
//     dropped with it. A call with a time older than the published slice counts in that slice.
//   - Each count holds up to 2^32 - 1 events per slice; more carries into the neighbour.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "backoff/duration.hpp"

namespace backoff::detail {

class sliding_counts {
 public:
  static constexpr std::int64_t slices = 10;

  struct totals {
    std::uint64_t first = 0;
    std::uint64_t second = 0;
  };

  // The slice length is window / slices, at least 1 ns.
  explicit sliding_counts(duration window) noexcept
      : slice_ns_(window.count() / slices > 0 ? window.count() / slices : 1) {}

  // A snapshot of `other`; safe while other threads use it, but not atomic as a whole.
  sliding_counts(const sliding_counts& other) noexcept
      : slice_ns_(other.slice_ns_), published_(other.published_.load(std::memory_order_acquire)) {
    copy_slots(other);
  }
  sliding_counts& operator=(const sliding_counts& other) noexcept {
    if (this != &other) {
      slice_ns_ = other.slice_ns_;
      published_.store(other.published_.load(std::memory_order_acquire), std::memory_order_relaxed);
      copy_slots(other);
    }
    return *this;
  }

  duration slice_length() const noexcept { return duration{slice_ns_}; }

  // Forgets every count, with atomic stores only (the slice length stays), so that it may run
  // while other threads read or add: a concurrent add lands before or after the reset.
  void reset() noexcept {
    published_.store(never, std::memory_order_release);
    for (auto& slot : slots_) slot.store(0, std::memory_order_relaxed);
  }

  // Adds to the counts of the slice that holds `now`.
  void add(duration now, std::uint32_t first, std::uint32_t second) noexcept {
    const std::int64_t s = advance_to(now);
    slots_[index(s)].fetch_add(pack(first, second), std::memory_order_relaxed);
  }

  // The counts over the window that ends at `now`.
  totals sum(duration now) const noexcept {
    const std::int64_t c = published_.load(std::memory_order_acquire);
    if (c == never) return {};
    if (within(now, c)) return sum_slices(c - slices + 1, c);
    const std::int64_t s = slice_of(now);
    if (s <= c) return sum_slices(c - slices + 1, c);
    if (static_cast<std::uint64_t>(s) - static_cast<std::uint64_t>(c) >=
        static_cast<std::uint64_t>(slices)) {
      return {};  // the whole window is newer than every count
    }
    return sum_slices(s - slices + 1, c);  // the slices after c have no events yet
  }

  // Adds (first, second) if `allow(totals of the window with them added)` is true; returns
  // whether it did. Within one slice the check and the add are one atomic step.
  template <class Allow>
  bool add_if(duration now, std::uint32_t first, std::uint32_t second, Allow allow) noexcept {
    const std::int64_t s = advance_to(now);
    const std::size_t current = index(s);
    totals others;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (i != current) accumulate(others, slots_[i].load(std::memory_order_relaxed));
    }
    std::atomic<std::uint64_t>& slot = slots_[current];
    const std::uint64_t delta = pack(first, second);
    std::uint64_t word = slot.load(std::memory_order_relaxed);
    do {
      totals t = others;
      accumulate(t, word + delta);
      if (!allow(t)) return false;
    } while (!slot.compare_exchange_weak(word, word + delta, std::memory_order_relaxed));
    return true;
  }

 private:
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::min();

  static constexpr std::uint64_t pack(std::uint32_t first, std::uint32_t second) noexcept {
    return static_cast<std::uint64_t>(first) | (static_cast<std::uint64_t>(second) << 32);
  }
  static void accumulate(totals& t, std::uint64_t word) noexcept {
    t.first += word & 0xffffffffULL;
    t.second += word >> 32;
  }

  // floor(now / slice), also for negative times.
  std::int64_t slice_of(duration now) const noexcept {
    const std::int64_t n = now.count();
    std::int64_t q = n / slice_ns_;
    if (n % slice_ns_ < 0) --q;
    return q;
  }

  // Whether `now` falls in slice c. c * slice_ns_ is the start of a slice that some caller's
  // time fell in, so it does not overflow; the difference is taken unsigned, so that a time far
  // before it wraps to a large value (and takes the slow path) instead of overflowing.
  bool within(duration now, std::int64_t c) const noexcept {
    return static_cast<std::uint64_t>(now.count()) - static_cast<std::uint64_t>(c * slice_ns_) <
           static_cast<std::uint64_t>(slice_ns_);
  }

  static std::size_t index(std::int64_t slice) noexcept {
    std::int64_t r = slice % slices;
    if (r < 0) r += slices;
    return static_cast<std::size_t>(r);
  }

  // The slice to count an event at `now` in, after moving the window forward if `now` is past
  // it. The common case, `now` within the published slice, costs no division.
  std::int64_t advance_to(duration now) noexcept {
    const std::int64_t c = published_.load(std::memory_order_acquire);
    if (c != never && within(now, c)) return c;
    return advance(slice_of(now));
  }

  // Moves the window forward to `s` if it is newer than the published slice and no other
  // thread is moving it; returns the slice the caller should count in.
  std::int64_t advance(std::int64_t s) noexcept {
    const std::int64_t c = published_.load(std::memory_order_acquire);
    if (s <= c) return c;
    if (advancing_.exchange(true, std::memory_order_acquire)) {
      return published_.load(std::memory_order_acquire);  // someone else is moving it
    }
    const std::int64_t latest = published_.load(std::memory_order_relaxed);
    if (s > latest) {
      const bool whole_window =
          latest == never || static_cast<std::uint64_t>(s) - static_cast<std::uint64_t>(latest) >=
                                 static_cast<std::uint64_t>(slices);
      const std::int64_t first_skipped = whole_window ? s - slices + 1 : latest + 1;
      for (std::int64_t j = first_skipped; j <= s; ++j) {
        slots_[index(j)].store(0, std::memory_order_relaxed);
      }
      published_.store(s, std::memory_order_release);
    }
    advancing_.store(false, std::memory_order_release);
    return s > latest ? s : latest;
  }

  // Sum over the slices first..last (each within the published window).
  totals sum_slices(std::int64_t first, std::int64_t last) const noexcept {
    totals t;
    for (std::int64_t j = first; j <= last; ++j) {
      accumulate(t, slots_[index(j)].load(std::memory_order_relaxed));
    }
    return t;
  }

  void copy_slots(const sliding_counts& other) noexcept {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].store(other.slots_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }

  std::int64_t slice_ns_;
  std::atomic<std::int64_t> published_{never};
  std::atomic<bool> advancing_{false};
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(slices)> slots_{};
};

}  // namespace backoff::detail
