// SPDX-License-Identifier: Apache-2.0
// A system file's client groups, for real (`backoff load --system`; docs/NETWORK.md, "A system
// for real"): each group's operations as the simulator's callers make them
// (sim/models/system/system_model.cpp: on_group_arrival, user_thinks, start_operation), each one a
// call through the group's edge under the strategy run, by the very caller a tier uses for its
// calls downstream (downstream.hpp): the library's retry_controller, the edge's balancer over the
// service's replicas, the key and time-since-first-try headers.
//
//   system_clients clients{spec, strategy, replicas, seed, recorder, executor};
//   clients.start(origin);   // arrivals from origin until origin + spec.duration
//   ... run the executor's io_context; at the end:
//   clients.stop(end);       // calls in flight stop; their operations are counted unfinished
//
// Open groups (poisson, constant, ramp) send at intended times drawn ahead of the clock, whatever
// the answers do, and an operation's latency counts from its intended time, not from when the
// loop got round to it (wrk2's correction of coordinated omission); a send more than a
// millisecond late is counted (late_sends). Closed groups run `users` loops of think, operation.
// Each instance of a group keeps its own guards (budget, breaker, limiter), as each client
// process does; an operation belongs to one drawn at random.
//
// The recorder hears what the simulator's recorder hears, in nanoseconds from origin: operations
// started and done, attempts, failed attempts (errors, timeouts) and successes.
// Single-threaded: everything runs on one io_context.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backoff/random.hpp"
#include "net/common/loop.hpp"
#include "net/server/downstream.hpp"
#include "report/recorder.hpp"
#include "systems/system_spec.hpp"

namespace backoff::net {

class system_clients {
 public:
  using clock = std::chrono::steady_clock;
  using endpoints = std::vector<boost::asio::ip::tcp::endpoint>;

  // `strategy`: the index of the strategy run (spec.edge_guards, resolved); `replicas`: per
  // service, where its replicas listen. The spec and the recorder must outlive this.
  system_clients(const systems::system_spec& spec, std::size_t strategy,
                 const std::vector<endpoints>& replicas, std::uint64_t seed, report::recorder& out,
                 loop_executor executor);
  ~system_clients();
  system_clients(const system_clients&) = delete;
  system_clients& operator=(const system_clients&) = delete;

  void start(clock::time_point origin);
  // Every call in flight ends; the operations it ends are recorded unfinished at `end`.
  void stop(clock::time_point end);

  // True once arrivals are over (each group has sent its last operation, or the duration
  // passed) and no operation is in flight.
  bool done() const noexcept;
  std::uint64_t operations() const noexcept { return operations_; }
  std::uint64_t in_flight() const noexcept { return in_flight_; }
  std::uint64_t late_sends() const noexcept { return late_sends_; }
  // Attempts that could not connect for want of this machine's resources (downstream.hpp).
  std::uint64_t local_errors() const noexcept;

 private:
  struct instance;
  class counter;

  task<> open_group(std::uint32_t g);
  task<> closed_user(std::uint32_t g);
  task<> operation(std::uint32_t g, clock::time_point intended, systems::time_ns thought);
  systems::time_ns since_origin(clock::time_point t) const;

  const systems::system_spec& spec_;
  report::recorder& out_;
  loop_executor executor_;
  std::vector<std::vector<std::unique_ptr<instance>>> instances_;  // per group
  std::vector<std::uint64_t> started_;                             // per group
  random_generator arrivals_rng_;
  clock::time_point origin_{};
  std::uint64_t operations_ = 0, in_flight_ = 0, late_sends_ = 0;
  std::uint32_t sources_ = 0;  // open groups and closed users still to send
  bool stopping_ = false;
  clock::time_point end_{};
};

}  // namespace backoff::net
