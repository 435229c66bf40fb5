// SPDX-License-Identifier: Apache-2.0
#include "concurrency_server.hpp"

#include <algorithm>
#include <cmath>

#include "seed_models/service_time.hpp"

namespace backoff::sim {
namespace {

std::uint64_t pack(std::uint32_t index, std::uint32_t generation) {
  return static_cast<std::uint64_t>(generation) << 32 | index;
}

}  // namespace

void concurrency_server::attach(engine& e) {
  self_ = e.add(*this);
  requests_.clear();
  free_.clear();
  groups_.assign(1, {});
  backlog_.clear();
  n_ = 0;
  admitted_ = 0;
  paused_ = false;
  paused_at_ = 0;
  wake_at_ = time_max;
  wake_generation_ = 0;
}

double concurrency_server::service_time(std::int64_t n) const {
  return seed_models::service_time({params_.limit, params_.factor, params_.k},
                                   static_cast<double>(params_.base_delay), n);
}

time_ns concurrency_server::first_check(const request& r, time_ns from, double need) const {
  const auto tick = static_cast<double>(params_.tick);
  const time_ns after = std::max(from, r.checked + 1);
  const double by_time = std::ceil(static_cast<double>(after - r.origin) / tick);
  const double by_need = std::ceil((need - static_cast<double>(r.origin - r.start)) / tick);
  const double j = std::max({1.0, by_time, by_need});
  if (!(static_cast<double>(r.origin) + j * tick < 4e18)) return time_max;  // also NaN
  return r.origin + static_cast<time_ns>(j) * params_.tick;
}

std::uint32_t concurrency_server::allocate(std::uint64_t tag) {
  std::uint32_t index = 0;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(requests_.size());
    requests_.emplace_back();
  }
  request& r = requests_[index];
  r.tag = tag;
  r.ready = false;
  return index;
}

void concurrency_server::arrive(engine& e, std::uint64_t tag) {
  const std::uint32_t index = allocate(tag);
  if (paused_) {
    backlog_.push_back(index);
    return;
  }
  admit(e, index);
  // A newcomer raises D, which only delays the others: their timers stay (an early timer looks
  // again). Only when nobody else in its group waits does it need a timer itself.
  if (groups_.front().size() == 1) reconcile(e);
}

void concurrency_server::admit(engine& e, std::uint32_t index) {
  request& r = requests_[index];
  r.start = r.origin = e.now();
  r.checked = e.now();  // no check at the instant it starts
  r.admitted = admitted_++;
  r.group = 0;
  ++n_;
  groups_.front().push_back(index);
}

void concurrency_server::wait_in_order(std::uint32_t index) {
  auto& group = groups_[requests_[index].group];
  auto it = group.begin();  // it is older than most: search from the front
  while (it != group.end() && older(*it, index)) ++it;
  group.insert(it, index);
}

// After N changed, or the oldest waiting request did: requests that finish at their next check
// get a check event of their own; the oldest of the others gets the timer.
void concurrency_server::reconcile(engine& e) {
  const double need = service_time(n_);
  time_ns earliest = time_max;
  for (auto& group : groups_) {
    while (!group.empty()) {
      request& r = requests_[group.front()];
      const time_ns next = first_check(r, e.now(), 0.0);
      if (static_cast<double>(next - r.start) < need) break;
      r.ready = true;
      e.schedule_at(next, self_, check_request, pack(group.front(), r.generation));
      group.pop_front();
    }
    if (!group.empty()) {
      earliest = std::min(earliest, first_check(requests_[group.front()], e.now(), need));
    }
  }
  if (earliest < wake_at_) {
    wake_at_ = earliest;
    e.schedule_at(earliest, self_, wake, ++wake_generation_);
  }
}

void concurrency_server::handle(engine& e, const event& ev) {
  if (paused_) return;  // resume() looks at every request again
  switch (ev.kind) {
    case check_request:
      return on_check(e, ev.payload);
    case wake:
      if (ev.payload == wake_generation_) {
        wake_at_ = time_max;
        reconcile(e);
      }
      return;
    default:
      return;
  }
}

void concurrency_server::on_check(engine& e, std::uint64_t payload) {
  const auto index = static_cast<std::uint32_t>(payload);
  request& r = requests_[index];
  if (!r.ready || r.generation != static_cast<std::uint32_t>(payload >> 32)) return;
  r.checked = e.now();
  r.ready = false;
  if (static_cast<double>(e.now() - r.start) >= service_time(n_)) {
    finish(e, index);
  } else {
    wait_in_order(index);  // N rose since it was made ready
  }
  reconcile(e);
}

// The listener may call arrive(), which may grow requests_: no reference survives this call.
void concurrency_server::finish(engine& e, std::uint32_t index) {
  request& r = requests_[index];
  const std::uint64_t tag = r.tag;
  --n_;
  ++r.generation;
  free_.push_back(index);
  listener_->served(e, tag);
}

void concurrency_server::pause(engine& e) {
  paused_ = true;
  paused_at_ = e.now();
}

void concurrency_server::resume(engine& e) {
  if (!paused_) return;
  const time_ns now = e.now();
  std::vector<std::uint32_t> queued;  // arrived during the pause
  queued.swap(backlog_);
  // Every request whose next check fell due during the pause checks now. Those whose next
  // check comes after the resume (a pause shorter than a tick) keep their place and events.
  struct due {
    time_ns at;
    std::uint32_t index;
  };
  std::vector<due> deferred;
  const auto is_deferred = [&](std::uint32_t i) {
    const time_ns at = first_check(requests_[i], paused_at_, 0.0);
    if (at >= now) return false;
    deferred.push_back({at, i});
    return true;
  };
  for (auto& group : groups_) {
    group.erase(std::remove_if(group.begin(), group.end(), is_deferred), group.end());
  }
  for (std::uint32_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i].ready && is_deferred(i)) {
      requests_[i].ready = false;
      ++requests_[i].generation;  // its check event is void
    }
  }
  // Still paused while the deferred checks run: a request that the listener sends meanwhile
  // joins the backlog, behind those that waited. In the order they fell due:
  std::sort(deferred.begin(), deferred.end(), [&](const due& a, const due& b) {
    return a.at != b.at ? a.at < b.at : older(a.index, b.index);
  });
  std::vector<std::uint32_t> regrid;
  for (const due& d : deferred) {
    requests_[d.index].checked = now;
    if (static_cast<double>(now - requests_[d.index].start) >= service_time(n_)) {
      finish(e, d.index);
    } else {
      regrid.push_back(d.index);
    }
  }
  // The rest tick from now on: one grid for all of them, a group of its own.
  std::sort(regrid.begin(), regrid.end(),
            [&](std::uint32_t a, std::uint32_t b) { return older(a, b); });
  const auto group = static_cast<std::uint32_t>(groups_.size());
  auto& ticks_from_now = groups_.emplace_back();
  for (const std::uint32_t i : regrid) {
    requests_[i].origin = now;
    requests_[i].group = group;
    ticks_from_now.push_back(i);
  }
  // Then the connections that queued during the pause are accepted, in arrival order.
  paused_ = false;
  for (const std::uint32_t i : queued) admit(e, i);
  std::vector<std::uint32_t> late;
  late.swap(backlog_);
  for (const std::uint32_t i : late) admit(e, i);
  wake_at_ = time_max;
  ++wake_generation_;
  reconcile(e);
}

}  // namespace backoff::sim
