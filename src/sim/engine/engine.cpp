// SPDX-License-Identifier: Apache-2.0
#include "engine.hpp"

#include <stdexcept>
#include <string>

#include "guard.hpp"

namespace backoff::sim {

void engine::scheduled_in_the_past(time_ns at) const {
  // A model bug, not bad input: scheduling into the past would break causality.
  throw std::logic_error("sim::engine: event scheduled at " + std::to_string(at) + " before now " +
                         std::to_string(now_));
}

lane_id engine::add_lane(time_ns delay) {
  if (delay < 0) throw std::logic_error("sim::engine: a lane's delay must not be negative");
  lanes_.push_back(lane{delay, std::vector<event>(16), 15, 0, 0});
  return static_cast<lane_id>(lanes_.size() - 1);
}

void engine::lane::grow() {
  std::vector<event> bigger(ring.size() * 2);
  for (std::size_t k = 0; k < count; ++k) bigger[k] = ring[(head + k) & mask];
  ring = std::move(bigger);
  mask = ring.size() - 1;
  head = 0;
}

void engine::find_next() noexcept {
  const event* best = queue_.empty() ? nullptr : &queue_.top();
  int source = best == nullptr ? no_source : -1;
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    if (lanes_[l].count == 0) continue;
    const event& front = lanes_[l].front();
    if (best == nullptr || later(*best, front)) {
      best = &front;
      source = static_cast<int>(l);
    }
  }
  next_source_ = source;
  // Nothing pending is not cached: any push must find its event.
  next_known_ = best != nullptr;
  next_time_ = best == nullptr ? time_max : best->time;
}

const event* engine::next_event() noexcept {
  if (!next_known_) find_next();
  if (next_source_ == -1) return &queue_.top();
  if (next_source_ >= 0) return &lanes_[static_cast<std::size_t>(next_source_)].front();
  return nullptr;
}

event engine::take_next() {
  next_known_ = false;
  if (next_source_ < 0) {
    const event ev = queue_.top();
    queue_.pop();
    return ev;
  }
  lane& l = lanes_[static_cast<std::size_t>(next_source_)];
  const event ev = l.front();
  l.pop();
  return ev;
}

void engine::checkpoint() {
  if (now_ != polled_time_) {
    polled_time_ = now_;
    polled_since_ = processed_;
  } else if (max_events_per_instant_ != 0 && processed_ - polled_since_ > max_events_per_instant_) {
    throw run_stopped(report::stop_reason::instant_limit, now_, processed_, 0, 0);
  }
  if (guard_ != nullptr) guard_->poll(now_, processed_);
}

// One event: take it, hint the next, handle it, poll every 2^16. (Inline in this file: step()
// and run_until() share it on the hot path.)
inline void engine::run_next() {
  const event ev = take_next();
  now_ = ev.time;
  ++processed_;
  if (prefetch_) {
    if (const event* after = next_event()) hint(*after);
  }
  models_[ev.target]->handle(*this, ev);
  if ((processed_ & run_guard::poll_mask) == 0) [[unlikely]]
    checkpoint();
}

bool engine::step() {
  if (next_event() == nullptr) return false;
  run_next();
  return true;
}

void engine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {
  }
}

void engine::run_until(time_ns until) {
  stopped_ = false;
  for (const event* next = next_event(); !stopped_ && next != nullptr && next->time <= until;
       next = next_event()) {
    run_next();
  }
  if (!stopped_ && now_ < until) now_ = until;
}

}  // namespace backoff::sim
