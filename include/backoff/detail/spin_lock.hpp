// SPDX-License-Identifier: Apache-2.0
// A lock for critical sections of a few dozen instructions that never block, allocate or call
// out (the AIMD window's bookkeeping, the CUBIC rate's arithmetic). Uncontended, lock() is one
// atomic exchange and unlock() one plain store, about half the cost of a std::mutex pair; a
// waiter spins with a pause instruction and then yields, so a holder preempted by the scheduler
// costs the others a time slice, not a spinning core. It meets Lockable, so std::lock_guard and
// std::scoped_lock work with it:
//
//   backoff::detail::spin_lock lock;
//   { std::lock_guard guard{lock}; /* a few loads and stores */ }
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace backoff::detail {

class spin_lock {
 public:
  void lock() noexcept {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Wait on a plain load, so that waiters share the cache line instead of bouncing it.
      for (int spins = 0; locked_.load(std::memory_order_relaxed);) {
        if (++spins < 64) {
          relax();
        } else {
          std::this_thread::yield();
          spins = 0;
        }
      }
    }
  }

  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace backoff::detail
