// SPDX-License-Identifier: Apache-2.0
// A replica's door and seats (docs/SYSTEMS.md, "Services"): its accept limit (requests held),
// its admission limit (`concurrency(N)` or the library's adaptive limit), its workers (fewer
// while a capacity fault lasts) and its waiting room with its discipline. No clock and no I/O:
// a real tier (`backoff serve --system`) asks it on its own clock what the simulator's replicas
// decide on virtual time, so that both refuse, shed, queue and serve by the same rules.
//
//   replica_gate gate{service};
//   admission_ticket ticket;
//   switch (gate.arrive(now, ticket)) {
//     case door::refused: reset the connection;  // at max_connections: fails fast, not sent
//     case door::shed:    answer 503;             // the admission limit
//     case door::in:      break;                  // held until gate.leave
//   }
//   if (gate.seat(now)) serve(); else if (gate.queue_full()) shed; else gate.wait(id, now);
//   ... its answer is sent:
//   gate.leave(ticket, now, ok, /*had_worker=*/true);
//   while (const auto next = gate.next(now)) next->dropped ? shed(next->id) : serve(next->id);
//
// A request that leaves from the queue (full, or dropped by CoDel) leaves with had_worker false.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>

#include "backoff/concurrency_limit.hpp"
#include "systems/system_spec.hpp"
#include "systems/waiting_room.hpp"

namespace backoff::systems {

enum class door : std::uint8_t { in, refused, shed };

// What a request holds of its replica's admission limit until it leaves.
struct admission_ticket {
  limit_permit permit;
  bool admitted = false;
};

class replica_gate {
 public:
  explicit replica_gate(const service_spec& service)
      : service_(&service), room_(service.discipline) {
    if (service.admission == admission_kind::adaptive && service.adaptive) {
      adaptive_ = std::make_unique<concurrency_limiter>(*service.adaptive);
    }
  }

  // The accept limit first (refused at once, as a full backlog or a connection cap), then
  // admission (shed before any work); an admitted request is held until leave().
  door arrive(time_ns now, admission_ticket& ticket) {
    const service_spec& s = *service_;
    if (s.max_connections > 0 && held_ >= s.max_connections) return door::refused;
    if (s.admission == admission_kind::concurrency) {
      if (admitted_ >= s.concurrency) return door::shed;
      ++admitted_;
      ticket.admitted = true;
    } else if (s.admission == admission_kind::adaptive) {
      ticket.permit = adaptive_->try_acquire(duration{now});
      if (!ticket.permit) return door::shed;
      ticket.admitted = true;
    }
    ++held_;
    return door::in;
  }

  // A worker for it now, if one is free.
  bool seat(time_ns now) {
    if (busy_ >= workers_now(now)) return false;
    ++busy_;
    return true;
  }
  bool queue_full() const noexcept { return room_.size() >= service_->queue; }
  void wait(std::uint32_t id, time_ns now) { room_.push(id, now); }

  // The request is over: its hold, its admission and its worker (if it had one) go back.
  void leave(admission_ticket& ticket, time_ns now, bool ok, bool had_worker) {
    --held_;
    if (had_worker) --busy_;
    if (!ticket.admitted) return;
    ticket.admitted = false;
    if (service_->admission == admission_kind::concurrency) {
      --admitted_;
    } else {
      adaptive_->release(ticket.permit, duration{now},
                         ok ? limit_outcome::success : limit_outcome::dropped);
    }
  }

  // The waiting request a free worker takes next, by the discipline: seated (it holds a worker
  // now) or dropped (CoDel: it waited too long; the caller sheds it and calls leave). None when
  // no worker is free or nobody waits.
  std::optional<waiting_room::taken> next(time_ns now) {
    if (room_.empty() || busy_ >= workers_now(now)) {
      room_.idle(now);
      return std::nullopt;
    }
    const waiting_room::taken t = room_.take(now);
    if (!t.dropped) ++busy_;
    return t;
  }

  // Workers now: `workers` (0: no limit), or its share while a capacity fault lasts (rounded, at
  // least one).
  std::uint32_t workers_now(time_ns now) const {
    const service_spec& s = *service_;
    if (s.workers == 0) return UINT32_MAX;
    if (!s.capacity_faults) return s.workers;
    const double share = faults::capacity_share(s.faults, duration{now});
    if (share >= 1) return s.workers;
    return std::max<std::uint32_t>(
        1, static_cast<std::uint32_t>(std::llround(static_cast<double>(s.workers) * share)));
  }

  std::uint32_t busy() const noexcept { return busy_; }
  std::uint32_t held() const noexcept { return held_; }
  std::size_t queued() const noexcept { return room_.size(); }
  // The admission limit now: concurrency(N)'s N, the adaptive limit's current value, or none.
  std::optional<std::uint32_t> admission_limit() const {
    if (service_->admission == admission_kind::concurrency) return service_->concurrency;
    if (adaptive_) return adaptive_->limit();
    return std::nullopt;
  }

 private:
  const service_spec* service_;
  waiting_room room_;
  std::unique_ptr<concurrency_limiter> adaptive_;
  std::uint32_t busy_ = 0;      // workers serving
  std::uint32_t held_ = 0;      // requests held: queued, served, or waiting downstream
  std::uint32_t admitted_ = 0;  // under a concurrency(N) limit
};

}  // namespace backoff::systems
