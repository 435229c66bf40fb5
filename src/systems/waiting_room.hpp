// SPDX-License-Identifier: Apache-2.0
// A replica's waiting room and its discipline (docs/SYSTEMS.md, "Disciplines"; Maurer, "Fail at
// Scale", 2015): which waiting request a freed worker takes, and whether CoDel drops it instead.
// No clock of its own and no I/O: the simulator's replicas run it on virtual time, and a real
// tier can run the same on its own clock, so that both shed the same requests.
//
//   waiting_room room{service.discipline};
//   room.push(request, now);                      // no worker free (the caller bounds the size)
//   while (!room.empty() && worker_free()) {
//     const auto next = room.take(now);
//     if (next.dropped) shed(next.id); else serve(next.id);
//   }
//   room.idle(now);                               // after a worker's end: empty keeps "now"
//
// The queue is *standing* when it has not been empty for a whole `interval`. fifo takes the
// oldest; lifo the newest; adaptive-lifo the oldest while the queue is not standing and the
// newest while it is (it never drops); codel takes the oldest and drops it when it waited longer
// than `target` while the queue stands, or longer than `interval` in any case. A request is
// looked at when it reaches the head, not while it waits.
#pragma once

#include <cstdint>
#include <deque>

#include "systems/system_spec.hpp"

namespace backoff::systems {

class waiting_room {
 public:
  explicit waiting_room(const discipline_spec& discipline) : discipline_(discipline) {}

  bool empty() const noexcept { return waiting_.empty(); }
  std::size_t size() const noexcept { return waiting_.size(); }

  void push(std::uint32_t id, time_ns now) {
    if (waiting_.empty()) last_empty_ = now;
    waiting_.push_back({id, now});
  }

  struct taken {
    std::uint32_t id = 0;
    bool dropped = false;  // CoDel: it waited too long; shed it instead of serving it
  };
  // The next request by the discipline; the room must not be empty.
  taken take(time_ns now) {
    const bool standing = now - last_empty_ > discipline_.interval;
    const bool newest = discipline_.kind == discipline_kind::lifo ||
                        (discipline_.kind == discipline_kind::adaptive_lifo && standing);
    const waiting w = newest ? waiting_.back() : waiting_.front();
    if (newest) {
      waiting_.pop_back();
    } else {
      waiting_.pop_front();
    }
    if (waiting_.empty()) last_empty_ = now;
    taken out{w.id, false};
    if (discipline_.kind == discipline_kind::codel) {
      const time_ns allowed = standing ? discipline_.target : discipline_.interval;
      out.dropped = now - w.since > allowed;
    }
    return out;
  }

  // Nothing taken now: an empty room stays empty as of now.
  void idle(time_ns now) {
    if (waiting_.empty()) last_empty_ = now;
  }

 private:
  struct waiting {
    std::uint32_t id;
    time_ns since;
  };
  discipline_spec discipline_;
  std::deque<waiting> waiting_;
  time_ns last_empty_ = 0;  // when the room was last empty
};

}  // namespace backoff::systems
