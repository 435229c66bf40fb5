// SPDX-License-Identifier: Apache-2.0
// One replica of a system file's service, served for real (`backoff serve --system FILE
// --service NAME`; docs/NETWORK.md, "A service of a system file"): the simulator's replica on
// a real clock. The door and the seats are the simulator's own (systems/replica_gate.hpp: accept
// limit, admission, workers, waiting room and discipline); the work is a timer as long as a draw
// from the service's distribution, so that a tier's capacity is its workers and not the
// machine's cores, as in the model.
//
//   tier t{service, seed, executor, metrics};
//   t.start(origin);                                 // time 0 of the fault schedule
//   const tier::answer a = co_await t.serve(request);  // refused, shed, queued, served
//   t.set_paused(true);  ...  t.stop();              // from the tier's own thread only
//
// Single-threaded: a tier runs on one io_context (serve --system uses one thread), so its gate
// needs no lock; /metrics reads its gauges from server_metrics, which any thread may read.
//
// The request's path, as the system model's replica (sim/models/system/system_servers.cpp):
// the accept limit (refused: the connection is reset, so the caller knows it was not served),
// admission (shed: 503), the faults decided at arrival (or after the work, with
// faults_decided = "after-work"), a worker or the queue (full: 503; CoDel's drop: 503), the work
// (a latency fault's delay is part of it, on the worker; a cold start's slowdown multiplies it;
// a retry with retry_skips_work does a uniform share of it), then the answer. A propagated
// deadline (grpc-timeout, x-envoy-expected-rq-timeout-ms) that passed before the work started
// costs expired_cost (or expired_share of the work) and answers 504; with check_cost, one that
// passes during the work stops there. A pause (outage(action=pause), /admin/pause) stops the work
// under way; it goes on after.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backoff/random.hpp"
#include "downstream.hpp"
#include "faults/faults.hpp"
#include "metrics.hpp"
#include "net/common/loop.hpp"
#include "report/hdr_histogram.hpp"
#include "report/result.hpp"
#include "systems/replica_gate.hpp"
#include "systems/system_spec.hpp"

namespace backoff::net {

// What a tier saw, counted as the simulator counts a service (summary.json's `services`,
// services.csv): attempts (every request that reached it) and arrivals (first attempts);
// completed and failed (served, the answer a success or not); rejected (refused at the accept
// limit, or shed: admission, a full queue, CoDel); the peaks of requests held and queued; the
// latency of the completed ones, from arrival to answer. With a bucket width, the same per bucket
// of time from the start (each bucket starts at the levels held then).
struct tier_figures {
  report::service_counts_bucket total;
  report::hdr_histogram latency{86'400'000'000'000, report::hdr_precision::significant_digits(3)};
  std::vector<report::service_counts_bucket> buckets;
};

class tier {
 public:
  using clock = std::chrono::steady_clock;

  // What the tier needs of one /api request.
  struct request {
    faults::request_view view;                  // path and headers, for the fault plan
    std::optional<clock::time_point> deadline;  // its caller's, from the deadline headers
    bool retry = false;                         // sent as a retry (x-envoy-attempt-count > 1)
    std::string key;                            // its operation's x-backoff-key, passed down
  };

  enum class answer_kind : std::uint8_t {
    ok,      // served: 200
    status,  // answered with `status`: a fault's, 503 when shed, 504 when expired
    reset,   // refused at the accept limit, or a reset fault: reset the connection
    gone,    // the server stops: no answer
  };
  struct answer {
    answer_kind kind = answer_kind::ok;
    int status = 200;
    // A call downstream gave up on an edge with on_give_up = "do-not-retry": the answer says
    // not to retry it (grpc-retry-pushback-ms: -1).
    bool do_not_retry = false;
  };

  // Its path and headers (borrowed: `req` must outlive the request), the deadline its caller
  // gives it (deadline_headers.hpp), and whether it is a retry.
  static request request_of(
      const boost::beast::http::request<boost::beast::http::string_body>& req);

  // `calls`: the service's calls downstream, one per service.NAME.calls entry, in order.
  // `bucket` > 0: figures().buckets of that width are kept (a run that ends; a server that runs
  // for days keeps totals only).
  tier(const systems::service_spec& service, std::uint64_t seed, loop_executor executor,
       server_metrics& metrics, std::vector<downstream_spec> calls = {},
       std::chrono::nanoseconds bucket = std::chrono::nanoseconds{0});
  tier(const tier&) = delete;
  tier& operator=(const tier&) = delete;

  void start(clock::time_point origin);
  task<answer> serve(const request& r);
  void set_paused(bool on);
  void stop();
  // From the tier's thread, or once it has ended.
  const tier_figures& figures() const noexcept { return figures_; }

 private:
  struct waiter;
  struct fan_join;
  enum class seat_state : std::uint8_t { waiting, seated, dropped };

  systems::time_ns now_ns() const;
  task<answer> serve_admitted(const request& r, systems::admission_ticket& ticket,
                              const faults::fault_decision& fault, clock::time_point arrived);
  void ended(bool ok, clock::time_point arrived);
  report::service_counts_bucket* bucket_now();
  task<seat_state> wait_for_worker(systems::admission_ticket& ticket);
  task<answer> work(const request& r, const faults::fault_decision& fault,
                    std::chrono::nanoseconds& answer_delay);
  task<bool> work_for(std::chrono::nanoseconds d);
  task<bool> sleep_until(clock::time_point until);
  task<bool> tick_curve();
  task<bool> unpaused();
  task<downstream::result> make_calls(const request& r);
  task<> fan_one(std::size_t i, downstream::context from, std::shared_ptr<fan_join> join);
  void seat_waiting();
  void finish(systems::admission_ticket& ticket, bool ok, bool had_worker);
  void shed(server_metrics::shed_reason why);
  void publish();
  void note_peaks();
  clock::duration paused_so_far(clock::time_point now) const;

  const systems::service_spec& service_;
  loop_executor executor_;
  server_metrics& metrics_;
  systems::replica_gate gate_;
  std::unique_ptr<downstream> calls_;  // none when the service calls no other
  tier_figures figures_;
  random_generator work_rng_, fault_rng_;
  std::vector<waiter*> waiting_;  // by the id the waiting room holds
  std::vector<std::uint32_t> free_ids_;
  timer_type pause_gate_;  // expires at "never" while paused; cancelled to resume
  clock::time_point origin_{};
  bool paused_ = false, stopping_ = false;
  clock::time_point paused_since_{};
  clock::duration paused_before_{0};  // pauses that ended
  std::chrono::nanoseconds bucket_;   // figures_.buckets' width (0: none)
  bool started_ = false;
};

}  // namespace backoff::net
