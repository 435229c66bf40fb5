// SPDX-License-Identifier: Apache-2.0
// The system model's run state (docs/SYSTEMS.md): the records of the calls (a retry loop on an
// edge: a client's operation, or a service's call downstream) and of the requests (one attempt
// at one replica), and each replica's workers, queue, accept limit and admission. The model
// (system_model.cpp) moves them through events; this header only holds them, so that the
// caller's side and the server's side read the same layout.
//
// Life of one attempt: a call asks its retry controller (the library's) before each attempt,
// picks a replica (its edge's balancer, another replica for a retry), and sends a request that
// arrives after the hop's latency. The replica refuses it at once (accept limit), sheds it
// (admission limit, full queue, CoDel), fails it (a fault), or serves it: a worker for its
// service time, then its own calls downstream, in order or fanned out, holding the worker. Its
// answer comes back after the hop's latency; an attempt cut at its timeout leaves the request
// running, its answer ignored when it comes (the generation it carries is stale).
//
// A call on an edge whose strategy hedges (gRPC A6) sends copies instead: its hedge_state holds
// the library's hedge controller, and copy n carries generation first_generation + n - 1, so
// that several requests of one call are awaited at once and an answer after the call's end (or
// from an earlier use of its slot) is still stale.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backoff/concurrency_limit.hpp"
#include "backoff/hedge.hpp"
#include "backoff/retry.hpp"
#include "report/hdr_histogram.hpp"
#include "report/result.hpp"
#include "sim/engine/engine_types.hpp"
#include "sim/models/concurrency_server.hpp"
#include "systems/replica_gate.hpp"
#include "systems/system_spec.hpp"

namespace backoff::sim::system_model {

// The system file as src/systems reads it (system_spec.hpp, distribution.hpp): one reader for the
// simulator and the network harness.
using namespace backoff::systems;

inline constexpr std::uint32_t no_index = UINT32_MAX;

struct call_record {
  std::optional<retry_controller> control;
  std::uint32_t parent = no_index;  // the request making it; none for a client's operation
  std::uint32_t group = 0;          // a client's operation: its group
  std::uint32_t edge = 0;
  std::uint32_t service = 0;     // where its attempts go
  std::uint32_t slot = 0;        // whose guards (lives_): a group, or a replica's call
  std::uint32_t call = 0;        // its index in the parent service's calls
  std::uint32_t generation = 0;  // of the attempt in flight; never reset, so slots can be reused
  std::uint32_t last_replica = no_index;
  std::uint32_t attempts = 0;  // sent
  time_ns deadline = 0;        // received from upstream (0: none)
  time_ns started = 0;
  time_ns first_sent = 0;              // when its first attempt (or copy) left
  std::uint64_t operation = 0;         // a client's operation: its id
  std::uint32_t root = no_index;       // the client operation's call this one serves
  std::uint32_t first_generation = 0;  // hedged: copy 1's; copy n's is this + n - 1
  bool waiting = false;                // an attempt's answer is awaited (not hedged)
  // breaker_asks = "first-tries": the edge's breaker is asked here, not by the controller; an
  // allowed permit is recorded when its attempt's answer comes.
  bool permit_pending = false;
  circuit_breaker::permit permit;
  bool hedged = false;  // its edge hedges: copies, not retries (hedges_)
  bool in_use = false;
};

// A hedged call's copies: the library's controller, the time of its pending timer event, and the
// replica each copy went to. Indexed like the calls, and sized only when an edge hedges.
struct hedge_state {
  std::optional<hedge_controller> control;
  time_ns timer_at = -1;
  std::array<std::uint32_t, hedge_policy::max_attempts_limit> replicas{};
};

struct request_record {
  std::uint32_t call = no_index;  // whose attempt it is
  std::uint32_t generation = 0;
  std::uint32_t service = 0, replica = 0;
  std::uint32_t pending = 0;    // calls downstream in flight
  std::uint32_t next_call = 0;  // the next call in order
  std::uint32_t depth = 1;      // 1 at a client's service
  time_ns arrived = 0, deadline = 0, delay = 0;
  std::uint64_t key = 0;    // its client operation's key, 0..999: fixed across retries
  time_ns since_first = 0;  // how long before it its call's first attempt left
  double slowdown = 1;      // a cold start's: its work takes this many times its drawn time
  admission_ticket ticket;  // what it holds of its replica's admission limit
  bool worker = false, failed = false, in_use = false;
  bool first = false;         // its call's first attempt (an arrival, not a retry)
  bool calls_done = false;    // work = "after-calls": its calls are over, its work under way
  bool do_not_retry = false;  // a call of its gave up on an edge that says "do not retry"
  int status = 0;             // a fault's status when it failed at one (else 0: taken for a 503)
};

struct replica_state {
  explicit replica_state(const service_spec& service) : gate(service) {}
  // Its accept limit, admission, workers and waiting room: a real tier's (replica_gate.hpp).
  replica_gate gate;
  std::uint32_t failures_in_a_row = 0;
  std::uint32_t times_ejected = 0;
  time_ns ejected_until = 0;
  // A concurrency curve with a tick: smira's server (2016), which re-reads N while it works.
  std::unique_ptr<concurrency_server> curve;
};

// One bucket of a service's time series: the report layer's (services.csv, its charts).
using service_bucket = report::service_counts_bucket;

// What one service saw in one run (summary.json's `services`): the bucket's counts over the whole
// run (peak_queue unused), and the requests it holds and queues now.
struct service_counts : service_bucket {
  std::int64_t in_flight = 0, queued = 0;
};

}  // namespace backoff::sim::system_model
