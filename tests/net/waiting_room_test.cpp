// SPDX-License-Identifier: Apache-2.0
// The waiting room that the simulator's replicas run and a real tier will (systems/
// waiting_room.hpp): which request a freed worker takes under each discipline, and which CoDel
// drops, worked out by hand on a clock given in milliseconds.
#include "systems/waiting_room.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace waiting_room_test {

using backoff::systems::discipline_kind;
using backoff::systems::discipline_spec;
using backoff::systems::time_ns;
using backoff::systems::waiting_room;

constexpr time_ns ms = 1'000'000;

discipline_spec of(discipline_kind kind) {
  return discipline_spec{.kind = kind, .target = 5 * ms, .interval = 100 * ms};
}

// Requests 1, 2, 3 wait from 0, 1 and 2 ms; then each is taken at `at`.
std::vector<std::uint32_t> order(discipline_kind kind, time_ns at) {
  waiting_room room{of(kind)};
  for (std::uint32_t id = 1; id <= 3; ++id) room.push(id, (id - 1) * ms);
  std::vector<std::uint32_t> out;
  while (!room.empty()) out.push_back(room.take(at).id);
  return out;
}

TEST(WaitingRoom, FifoTakesTheOldestAndLifoTheNewest) {
  EXPECT_EQ(order(discipline_kind::fifo, 3 * ms), (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(order(discipline_kind::lifo, 3 * ms), (std::vector<std::uint32_t>{3, 2, 1}));
}

TEST(WaitingRoom, AdaptiveLifoTurnsNewestFirstOnlyOnceTheQueueStands) {
  // Not empty since 0: at 50 ms it has not stood a whole 100 ms interval (oldest first), at
  // 150 ms it has (newest first). The room empties on the last take, so "standing" starts again.
  EXPECT_EQ(order(discipline_kind::adaptive_lifo, 50 * ms), (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(order(discipline_kind::adaptive_lifo, 150 * ms), (std::vector<std::uint32_t>{3, 2, 1}));
}

TEST(WaitingRoom, CodelDropsWhatWaitedPastItsTargetWhileTheQueueStands) {
  waiting_room room{of(discipline_kind::codel)};
  room.push(1, 0);
  room.push(2, 95 * ms);
  room.push(3, 140 * ms);
  // At 150 ms the queue has stood 150 ms: the target (5 ms) applies. 1 waited 150 ms: dropped;
  // 2 waited 55 ms: dropped; 3 waited 10 ms: dropped too (over 5 ms).
  EXPECT_TRUE(room.take(150 * ms).dropped);
  EXPECT_TRUE(room.take(150 * ms).dropped);
  const auto last = room.take(150 * ms);
  EXPECT_EQ(last.id, 3u);
  EXPECT_TRUE(last.dropped);
  // Empty until 160 ms: at 220 ms the queue has not stood a whole interval, so the interval
  // (100 ms), not the target, bounds the wait, and 60 ms is served.
  room.push(4, 160 * ms);
  const auto fresh = room.take(220 * ms);
  EXPECT_EQ(fresh.id, 4u);
  EXPECT_FALSE(fresh.dropped);
  // Alone in the room for 99 ms: served; for 101 ms: the queue stands, and it is dropped.
  room.push(5, 300 * ms);
  EXPECT_FALSE(room.take(399 * ms).dropped);
  room.push(6, 400 * ms);
  EXPECT_TRUE(room.take(501 * ms).dropped);
}

TEST(WaitingRoom, AnIdleRoomStaysEmptyAsOfNow) {
  waiting_room room{of(discipline_kind::adaptive_lifo)};
  room.idle(500 * ms);  // empty until 500 ms
  room.push(1, 510 * ms);
  room.push(2, 520 * ms);
  // 590 ms: not a whole interval since 500 ms, so oldest first.
  EXPECT_EQ(room.take(590 * ms).id, 1u);
  EXPECT_EQ(room.size(), 1u);
}

}  // namespace waiting_room_test
