// SPDX-License-Identifier: Apache-2.0
// The real-world side of the retry loop: the steady clock, an interruptible sleep, a per-thread
// generator, and outcome names.
#include "backoff/retry.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

namespace backoff {

std::string_view to_string(outcome o) noexcept {
  switch (o) {
    case outcome::succeeded:
      return "succeeded";
    case outcome::attempts_exhausted:
      return "attempts_exhausted";
    case outcome::deadline_exceeded:
      return "deadline_exceeded";
    case outcome::permanent:
      return "permanent";
    case outcome::cancelled:
      return "cancelled";
    case outcome::budget_exhausted:
      return "budget_exhausted";
    case outcome::throttled:
      return "throttled";
    case outcome::breaker_open:
      return "breaker_open";
    case outcome::not_idempotent:
      return "not_idempotent";
    case outcome::limited:
      return "limited";
  }
  return "?";
}

namespace detail {

duration steady_now() {
  return std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch());
}

bool interruptible_sleep(duration d, std::stop_token stop) {
  if (d.count() <= 0) return !stop.stop_requested();
  // Waits of at most a day at a time: the standard library computes now + d, which overflows
  // for a wait of centuries (and then returns at once).
  constexpr duration chunk = std::chrono::hours(24);
  const duration now = steady_now();
  const duration until = saturating_add(now, d);
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  for (duration left = d; left.count() > 0; left = until - steady_now()) {
    if (!stop.stop_possible()) {
      std::this_thread::sleep_for(std::min(left, chunk));
      continue;
    }
    // Nothing notifies cv: it wakes on the timeout or on a stop request, which the token's
    // callback delivers.
    if (cv.wait_for(lock, stop, std::min(left, chunk), [] { return false; }) ||
        stop.stop_requested()) {
      return false;
    }
  }
  return !stop.stop_requested();
}

random_generator& thread_generator() {
  // The one place where the library seeds from the operating system: production retries want
  // clients decorrelated from each other. Tests and the simulator inject their own generator.
  thread_local random_generator generator{[] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }()};
  return generator;
}

}  // namespace detail

const retry_env& system_env() {
  // One for every thread: its generator is looked up at each draw (detail::per_thread_random).
  static const retry_env env;
  return env;
}

}  // namespace backoff
