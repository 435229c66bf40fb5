// SPDX-License-Identifier: Apache-2.0
#include "engine.hpp"

#include <stdexcept>
#include <string>

#include "guard.hpp"

namespace backoff::sim {

void engine::schedule_at(time_ns at, handler_id target, std::uint32_t kind, std::uint64_t payload) {
  if (at < now_) {
    // A model bug, not bad input: scheduling into the past would break causality.
    throw std::logic_error("sim::engine: event scheduled at " + std::to_string(at) +
                           " before now " + std::to_string(now_));
  }
  queue_.push(event{at, next_sequence_++, target, kind, payload});
}

lane_id engine::add_lane(time_ns delay) {
  if (delay < 0) throw std::logic_error("sim::engine: a lane's delay must not be negative");
  lanes_.push_back(lane{delay, std::vector<event>(16), 0, 0});
  return static_cast<lane_id>(lanes_.size() - 1);
}

void engine::lane::push(const event& ev) {
  if (count == ring.size()) {
    std::vector<event> bigger(ring.size() * 2);
    for (std::size_t k = 0; k < count; ++k) bigger[k] = ring[(head + k) & (ring.size() - 1)];
    ring = std::move(bigger);
    head = 0;
  }
  ring[(head + count) & (ring.size() - 1)] = ev;
  ++count;
}

const event* engine::earliest(int& source) const noexcept {
  const event* best = queue_.empty() ? nullptr : &queue_.top();
  source = -1;
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    if (lanes_[l].count == 0) continue;
    const event& front = lanes_[l].front();
    if (best == nullptr || later(*best, front)) {
      best = &front;
      source = static_cast<int>(l);
    }
  }
  return best;
}

event engine::take(int source) {
  if (source < 0) {
    const event ev = queue_.top();
    queue_.pop();
    return ev;
  }
  lane& l = lanes_[static_cast<std::size_t>(source)];
  const event ev = l.front();
  l.pop();
  return ev;
}

void engine::hint_next() const noexcept {
  int source = -1;
  if (const event* next = earliest(source)) models_[next->target]->prefetch(*next);
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

bool engine::step() {
  int source = -1;
  if (earliest(source) == nullptr) return false;
  const event ev = take(source);
  now_ = ev.time;
  ++processed_;
  if (prefetch_) hint_next();
  models_[ev.target]->handle(*this, ev);
  if ((processed_ & run_guard::poll_mask) == 0) [[unlikely]]
    checkpoint();
  return true;
}

void engine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {
  }
}

void engine::run_until(time_ns until) {
  stopped_ = false;
  int source = -1;
  for (const event* next = earliest(source); !stopped_ && next != nullptr && next->time <= until;
       next = earliest(source)) {
    const event ev = take(source);
    now_ = ev.time;
    ++processed_;
    if (prefetch_) hint_next();
    models_[ev.target]->handle(*this, ev);
    if ((processed_ & run_guard::poll_mask) == 0) [[unlikely]]
      checkpoint();
  }
  if (!stopped_ && now_ < until) now_ = until;
}

}  // namespace backoff::sim
