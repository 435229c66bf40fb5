// SPDX-License-Identifier: Apache-2.0
// The engine's plain types (virtual time, ids, the 32-byte event), apart so that the timer queue
// (timer_queue.hpp) and its benchmark need not see the engine.
#pragma once

#include <cstdint>
#include <limits>

namespace backoff::sim {

using time_ns = std::int64_t;
inline constexpr time_ns time_max = std::numeric_limits<time_ns>::max();

using handler_id = std::uint32_t;
using lane_id = std::uint32_t;

// Aligned to its size so that no event straddles two cache lines: the vectors that hold them
// (the heap, the calendar's buckets, the lanes) would otherwise start 16 bytes into a line, as
// malloc aligns, and split every other event, and a copy on the stack would split or not with
// the stack's position (mm1 ran at 24 or 29 M events/s with the length of the environment).
struct alignas(32) event {
  time_ns time;
  std::uint64_t sequence;  // insertion order: the tie-breaker
  handler_id target;       // which model handles it
  std::uint32_t kind;      // the model's own event type
  std::uint64_t payload;   // the model's own data (an index, an id, a packed pair)
};

}  // namespace backoff::sim
