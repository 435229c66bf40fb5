// SPDX-License-Identifier: Apache-2.0
// The seed 004 server (smira/exponential-backoff, server.go) as a simulator component: a server
// with no queue and no capacity limit whose service time grows with its concurrency, and which
// can be paused (the seed's SIGSTOP). docs/models/outage-recovery.md states the model.
//
//   sim::concurrency_server server{{.limit = 30, .factor = 1.05, .k = 15,
//                                    .base_delay = 100'000'000, .tick = 50'000'000}, listener};
//   server.attach(e);                          // registers its handler with the engine
//   server.arrive(e, tag);                     // a request arrives now (tag: the caller's id)
//   server.pause(e);  ...  server.resume(e);   // nothing runs in between
//   // listener.served(e, tag) is called when the request finishes, answered or abandoned.
//
// The rule, per request: N counts every request in service; a request checks every `tick` from
// its start and finishes at the first check where its elapsed time reaches
//   D(N) = base_delay                                  if N <= limit
//   D(N) = base_delay * factor^((N - limit) / k)       otherwise,
// with N read at that check. (Go checks `elapsed > delay`, but its timers fire a little late,
// so its check at 2 x 50 ms already sees more than 100 ms: we use >=.) Checks that fall at the
// same instant run oldest first, after the arrivals of that instant (Go leaves that order to
// its scheduler; it decides which of two requests that start together sees the lower N).
// A pause stops everything: the checks that fall due during it happen at the resume instant,
// in the order they fell due, and count their next ticks from there; then the requests that
// arrived during the pause start, in arrival order (the kernel held their connections).
//
// Cost: requests are not woken at every tick. Those waiting sit in groups whose members would
// finish in start order if N stayed as it is: the requests whose ticks count from their own
// start (the same D and tick count for all), and, per resume, those whose ticks count from that
// resume (one grid for all, so the older reaches D first). Only the oldest of each group has a
// timer, at the first tick where it would finish. A request that finishes at its very next tick
// gets a check event of its own, where N is read again. So a collapsed server holding 10^5
// requests costs a few events per request, not one per request per tick, with the outcome of
// the per-tick rule (tests/sim/concurrency_server_test.cpp compares the two on random arrivals).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/engine/engine.hpp"

namespace backoff::sim {

class concurrency_server final : public model {
 public:
  struct params {
    std::int64_t limit = 30;
    double factor = 1.05;
    double k = 15;
    time_ns base_delay = 100'000'000;
    time_ns tick = 50'000'000;
  };

  class listener {
   public:
    virtual ~listener() = default;
    // The request with this tag finished (at e.now()).
    virtual void served(engine& e, std::uint64_t tag) = 0;
  };

  concurrency_server(params p, listener& to) : params_(p), listener_(&to) {}

  // Registers with a fresh engine and forgets any previous run.
  void attach(engine& e);
  void arrive(engine& e, std::uint64_t tag);
  void pause(engine& e);
  void resume(engine& e);

  std::int64_t in_service() const noexcept { return n_; }
  std::int64_t queued() const noexcept { return static_cast<std::int64_t>(backlog_.size()); }
  bool paused() const noexcept { return paused_; }
  // D(n) in ns; +infinity where it overflows.
  double service_time(std::int64_t n) const;

  void handle(engine& e, const event& ev) override;

 private:
  enum kind : std::uint32_t { check_request, wake };

  struct request {
    time_ns start = 0;     // its elapsed time counts from here
    time_ns origin = 0;    // its checks fall at origin + j * tick, j >= 1
    time_ns checked = -1;  // its last check; the next one is strictly later
    std::uint64_t tag = 0;
    std::uint64_t admitted = 0;    // admission order: breaks ties between equal starts
    std::uint32_t group = 0;       // which of groups_ it waits in
    std::uint32_t generation = 0;  // bumped when the slot is freed or its check is voided
    bool ready = false;            // has a check event of its own
  };

  // The first check of r at or after `from` (and after its last check) at which its elapsed
  // time reaches `need` ns; time_max if that is beyond any run.
  time_ns first_check(const request& r, time_ns from, double need) const;
  std::uint32_t allocate(std::uint64_t tag);
  void admit(engine& e, std::uint32_t index);
  void reconcile(engine& e);
  void wait_in_order(std::uint32_t index);
  void on_check(engine& e, std::uint64_t payload);
  void finish(engine& e, std::uint32_t index);
  bool older(std::uint32_t a, std::uint32_t b) const {
    const request &x = requests_[a], &y = requests_[b];
    return x.start != y.start ? x.start < y.start : x.admitted < y.admitted;
  }

  params params_;
  listener* listener_;
  handler_id self_ = 0;
  std::vector<request> requests_;
  std::vector<std::uint32_t> free_;
  // In service without a check event of their own, by start: group 0 ticks from each start,
  // group k from the k-th resume.
  std::vector<std::deque<std::uint32_t>> groups_;
  std::vector<std::uint32_t> backlog_;  // arrived during the pause
  std::int64_t n_ = 0;
  std::uint64_t admitted_ = 0;
  bool paused_ = false;
  time_ns paused_at_ = 0;
  time_ns wake_at_ = time_max;
  std::uint64_t wake_generation_ = 0;
};

}  // namespace backoff::sim
