// SPDX-License-Identifier: Apache-2.0
// The discrete-event engine of the simulator: virtual time and a set of pending events, nothing
// more. It knows nothing of clients, servers or policies; models (servers, workloads, outages,
// client strategies) plug in by implementing `sim::model` and scheduling events to themselves or
// to each other.
//
//   sim::engine e;
//   const auto server = e.add(my_server);            // a sim::model&; returns its handler id
//   e.schedule_at(0, server, my_server::kind_start); // (time, target, kind, payload)
//   e.run_until(3'000'000'000);                      // or run(), or step() one event at a time
//
// Time is integer nanoseconds (tick models count ticks). Events at the same time run in the
// order they were scheduled (the insertion sequence breaks ties), which is what makes a seed
// reproduce a run bit for bit. The hot path is a timer queue of 32-byte plain events
// (timer_queue.hpp: a flat 4-ary heap while a few thousand are pending, a calendar of buckets
// beyond, in the same order) and one virtual call per event: no allocation (after the queue has
// grown) and no std::function per event. An event cannot be cancelled; models ignore stale ones
// (e.g. by carrying a generation number in the payload), which is cheaper than searching the
// queue.
//
// Lanes: most events of a model come after a constant delay (a network hop, a fixed service
// time). Events scheduled through a lane of fixed delay d are due in the order they were
// scheduled, so a lane is a FIFO queue, O(1) each way, with no comparison on the way in:
//
//   const auto hop = e.add_lane(100'000'000);         // a 100 ms hop
//   e.schedule_in(hop, server, arrive, request);       // due at now() + 100 ms
//
// The next event is the earliest of the queue's top and the lanes' fronts, by (time, sequence),
// so lanes change the speed, never the order.
//
// An engine given a run_guard (guard.hpp) polls it every 2^16 events, which may end
// run()/run_until()/step() with a run_stopped exception between two events: how the runner stops
// a run on Ctrl-C or over a memory limit without touching the models. The runner makes each run's
// engine and hands it to the model; an engine made without a guard (tests, a model's own
// reference computation) never stops early.
//
// An engine given a limit of events per instant stops the same way (stop_reason::instant_limit)
// once it has run more than that many events without its time advancing: a model whose loop
// feeds itself at zero delay would otherwise run forever at one instant, with neither the run's
// time limit nor the memory guard ever tripping. The check rides on the same 2^16-event poll
// (one comparison there, nothing per event), so it counts from the first poll that saw the
// current time and stops at most 2^17 events past the limit.
#pragma once

#include <cstdint>
#include <vector>

#include "engine_types.hpp"
#include "timer_queue.hpp"

namespace backoff::sim {

class engine;
struct run_guard;

class model {
 public:
  virtual ~model() = default;
  virtual void handle(engine& e, const event& ev) = 0;
};

class engine {
 public:
  engine() = default;
  explicit engine(run_guard* guard, std::uint64_t max_events_per_instant = 0) noexcept
      : guard_(guard), max_events_per_instant_(max_events_per_instant) {}

  handler_id add(model& m) {
    models_.push_back(&m);
    return static_cast<handler_id>(models_.size() - 1);
  }

  time_ns now() const noexcept { return now_; }
  std::uint64_t events_processed() const noexcept { return processed_; }
  std::size_t pending() const noexcept {
    std::size_t n = queue_.size();
    for (const auto& l : lanes_) n += l.size();
    return n;
  }
  void reserve(std::size_t events) { queue_.reserve(events); }

  // Schedules an event at an absolute time, which must not be in the past.
  void schedule_at(time_ns at, handler_id target, std::uint32_t kind, std::uint64_t payload = 0) {
    if (at < now_) [[unlikely]]
      scheduled_in_the_past(at);
    queue_.push(event{at, next_sequence_++, target, kind, payload});
    if (at < next_time_) next_known_ = false;  // equal: a later sequence, so not earlier
  }
  void schedule_after(time_ns delay, handler_id target, std::uint32_t kind,
                      std::uint64_t payload = 0) {
    schedule_at(now_ + delay, target, kind, payload);
  }

  // A FIFO lane for events that all come `delay` after they are scheduled.
  lane_id add_lane(time_ns delay);
  void schedule_in(lane_id in, handler_id target, std::uint32_t kind, std::uint64_t payload = 0) {
    const time_ns at = now_ + lanes_[in].delay;
    lanes_[in].push(event{at, next_sequence_++, target, kind, payload});
    if (at < next_time_) next_known_ = false;
  }

  // Runs the earliest event; false when none is pending.
  bool step();
  // Runs events until none is pending or stop() is called.
  void run();
  // Runs every event with time <= until, then sets the time to `until` (if it got there).
  void run_until(time_ns until);
  // Makes run()/run_until() return after the current event.
  void stop() noexcept { stopped_ = true; }
  // A hint, never a change of what runs or in what order. A model whose per-event state is a
  // large array of records indexed by the payload (one per operation, 10^4 to 10^6 of them, cold
  // by the time their next event comes) names it here: from then on, before handling each event,
  // the engine starts loading the record of the next one due (when it is for `target`; record
  // payload & index_mask of `count` records of `stride` bytes at `records`, none if beyond), so
  // that the miss overlaps the current event's work. Done by the engine, not by a call into the
  // model: a virtual call per event cost more than the hint saved at 10^4 records. The array
  // must stay where it is for the rest of the run (or until the next call).
  void prefetch_records(handler_id target, const void* records, std::size_t stride,
                        std::size_t count, std::uint64_t index_mask) noexcept {
    prefetch_ = true;
    records_ = {static_cast<const char*>(records), stride, count, index_mask, target};
  }

 private:
  // A growable ring buffer of events in due order.
  struct lane {
    time_ns delay = 0;
    std::vector<event> ring;  // size a power of two
    std::size_t mask = 0;     // ring.size() - 1
    std::size_t head = 0, count = 0;
    std::size_t size() const noexcept { return count; }
    const event& front() const noexcept { return ring[head]; }
    void pop() noexcept {
      head = (head + 1) & mask;
      --count;
    }
    void push(const event& ev) {
      if (count > mask) [[unlikely]]
        grow();
      ring[(head + count) & mask] = ev;
      ++count;
    }
    void grow();
  };

  static bool later(const event& a, const event& b) noexcept { return timer_queue::later(a, b); }
  // The earliest pending event, or null: found once per event and kept (next_source_,
  // next_time_) until it is taken or an earlier one is scheduled, so that the prefetch hint and
  // the next step share one search of the queue's top and the lanes' fronts.
  const event* next_event() noexcept;
  [[noreturn]] void scheduled_in_the_past(time_ns at) const;
  void find_next() noexcept;
  // Removes and returns the event next_event() returned.
  event take_next();
  // Takes the event next_event() returned and runs it.
  void run_next();
  // Every 2^16 events: the events-per-instant limit, then the guard (both throw run_stopped).
  void checkpoint();

  timer_queue queue_;  // every event not in a lane
  std::vector<lane> lanes_;
  std::vector<model*> models_;
  time_ns now_ = 0;
  std::uint64_t next_sequence_ = 0;
  static constexpr int no_source = -2;
  // -1: whatever is the timer queue's top (re-read, so a push that becomes the top is seen);
  // >= 0: that lane's front. Only a push into another source can get ahead of it unseen, hence
  // the comparison with next_time_ in schedule_at and schedule_in.
  int next_source_ = no_source;
  time_ns next_time_ = 0;  // its time; a push before it makes next_known_ false
  bool next_known_ = false;
  std::uint64_t processed_ = 0;
  bool stopped_ = false;
  bool prefetch_ = false;
  struct record_array {
    const char* base = nullptr;
    std::size_t stride = 0, count = 0;
    std::uint64_t index_mask = 0;
    handler_id target = 0;
  } records_;
  // Always inlined: as a function of its own it only prefetches, which GCC takes for a pure
  // function whose calls can go (it dropped every call: the hint silently did nothing).
  [[gnu::always_inline]] void hint(const event& next) const noexcept {
    if (next.target != records_.target) return;
    const std::uint64_t i = next.payload & records_.index_mask;
    if (i >= records_.count) return;
    const char* at = records_.base + i * records_.stride;
    for (std::size_t line = 0; line < records_.stride; line += 64) __builtin_prefetch(at + line);
    __builtin_prefetch(at + records_.stride - 1);  // the last line, when a record straddles one
  }
  run_guard* guard_ = nullptr;
  std::uint64_t max_events_per_instant_ = 0;  // 0: no limit
  time_ns polled_time_ = -1;                  // the time the last poll saw ...
  std::uint64_t polled_since_ = 0;            // ... and the event count when it first saw it
};

}  // namespace backoff::sim
