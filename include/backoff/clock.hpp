// SPDX-License-Identifier: Apache-2.0
// Clocks for the code that waits. Policies never read a clock; the loops that drive them do, and
// take the clock as an injection point so that tests and the simulator control time.
//
//   backoff::manual_clock clock;                       // starts at 0
//   clock.advance(250ms);
//   auto t = clock.now();                              // manual_clock::time_point{250ms}
//
// manual_clock has the shape of a std::chrono clock (rep, period, duration, time_point, now())
// but its time moves only when told; it is thread-safe (one atomic counter). Each instance is its
// own clock, so two tests never share time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "backoff/duration.hpp"

namespace backoff {

class manual_clock {
 public:
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<manual_clock, duration>;
  static constexpr bool is_steady = true;

  explicit manual_clock(duration start = duration{0}) noexcept : now_(start.count()) {}

  time_point now() const noexcept { return time_point{duration{now_.load()}}; }
  void advance(duration d) noexcept { now_.fetch_add(d.count()); }
  void set(time_point t) noexcept { now_.store(t.time_since_epoch().count()); }

 private:
  std::atomic<std::int64_t> now_;
};

}  // namespace backoff
