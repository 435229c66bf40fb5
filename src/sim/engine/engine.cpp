#include "engine.hpp"

#include <stdexcept>
#include <string>

namespace backoff::sim {

void engine::schedule_at(time_ns at, handler_id target, std::uint32_t kind,
                         std::uint64_t payload) {
  if (at < now_) {
    // A model bug, not bad input: scheduling into the past would break causality.
    throw std::logic_error("sim::engine: event scheduled at " + std::to_string(at) +
                           " before now " + std::to_string(now_));
  }
  heap_.push_back(event{at, next_sequence_++, target, kind, payload});
  sift_up(heap_.size() - 1);
}

void engine::sift_up(std::size_t i) noexcept {
  const event moving = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!later(heap_[parent], moving)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = moving;
}

void engine::sift_down(std::size_t i) noexcept {
  const std::size_t n = heap_.size();
  const event moving = heap_[i];
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && later(heap_[child], heap_[child + 1])) ++child;
    if (!later(moving, heap_[child])) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = moving;
}

event engine::pop() noexcept {
  const event top = heap_.front();
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
  return top;
}

bool engine::step() {
  if (heap_.empty()) return false;
  const event ev = pop();
  now_ = ev.time;
  ++processed_;
  models_[ev.target]->handle(*this, ev);
  return true;
}

void engine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {
  }
}

void engine::run_until(time_ns until) {
  stopped_ = false;
  while (!stopped_ && !heap_.empty() && heap_.front().time <= until) step();
  if (!stopped_ && now_ < until) now_ = until;
}

}  // namespace backoff::sim
