// SPDX-License-Identifier: Apache-2.0
// The system model's runner (docs/SYSTEMS.md), shared by its two halves: system_model.cpp (setup,
// the run, the clients and every caller's retry loop) and system_servers.cpp (the replicas:
// accept limit, admission, faults, workers and queue, calls downstream, the answer, and what the
// run reports). Internal to src/sim/models/system; system_model.hpp has the records it moves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/outage_load.hpp"
#include "sim/models/model.hpp"
#include "system_model.hpp"
#include "systems/system_spec.hpp"

namespace backoff::sim::system_model {

enum kind : std::uint32_t {
  group_arrival,  // payload: group
  send_now,       // call: its pacing wait is over
  retry_wake,     // call
  arrive,         // request, at its replica
  resume,         // request: a hang fault let it go
  work_done,      // request: its own work is over
  answer_ok,      // call | generation << 32
  answer_failed,
  answer_refused,
  attempt_timeout,
  user_wakes,    // payload: a closed group | the think time it waited << 16
  pause_begins,  // payload: service
  pause_ends,
  answer_fatal,         // as answer_failed, with a status the caller's hedge takes as fatal
  hedge_send,           // call | the copy's generation << 32: the throttle's pacing is over
  hedge_timer,          // call | first_generation << 32: the next copy's time or the deadline
  answer_do_not_retry,  // as answer_failed, from a service whose call gave up on an edge that
                        // says so (on_give_up = "do-not-retry"): its caller stops
  capacity_returns,     // payload: service; a capacity(...) window is over
};

inline std::uint64_t pack(std::uint32_t index, std::uint32_t generation) {
  return static_cast<std::uint64_t>(index) | static_cast<std::uint64_t>(generation) << 32;
}

class system_runner final : public model_runner,
                            public model,
                            private concurrency_server::listener {
 public:
  explicit system_runner(config_reader& keys) : spec_(read_system(keys)) {}

  bool takes_edge_settings() const override { return true; }
  guard_support guards() const override {
    return {.breaker = true, .hedge = true, .deadline = true};
  }
  time_ns bucket() const override { return spec_.bucket; }
  time_ns recovery_hold() const override { return spec_.recovery_hold; }
  std::optional<report::outage_window> outage() const override {
    const auto& o = spec_.services[spec_.clients.front().to].outage;
    if (!o) return std::nullopt;
    const time_ns end = o->end == duration::max() ? spec_.duration + spec_.drain : o->end.count();
    return report::outage_window{o->start.count(), end};
  }
  memory_need memory() const override;
  void check_all(const std::vector<client_strategy>& all) const override;
  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override;
  void handle(engine& e, const event& ev) override;

 private:
  void reset(const client_strategy& strategy, std::uint64_t seed, report::recorder& out);
  // Callers.
  void on_group_arrival(engine& e, std::uint32_t group);
  void start_operation(engine& e, std::uint32_t group, time_ns thought);
  void user_thinks(engine& e, std::uint32_t group);
  std::uint32_t open_call(engine& e, std::uint32_t edge, std::uint32_t service, std::uint32_t slot);
  void attempt(engine& e, std::uint32_t c, bool paced);
  void send_request(engine& e, std::uint32_t c, std::uint32_t generation,
                    std::uint32_t replica_index, time_ns carried);
  std::uint32_t choose_replica(const call_record& c, time_ns now_ns,
                               const hedge_state* copies = nullptr, std::uint32_t sent = 0);
  void on_answer(engine& e, std::uint64_t payload, std::uint32_t how);
  void call_over(engine& e, std::uint32_t c, outcome why);
  // An edge's AIMD window (system_windows.cpp).
  void enqueue_in_window(engine& e, std::uint32_t c);
  void pump_window(engine& e, std::uint32_t slot);
  void window_answer(engine& e, std::uint32_t c, verdict_kind kind,
                     const retry_controller::decision& d);
  void leave_window(std::uint32_t c);
  // Hedged calls (gRPC A6, through the library's hedge_controller).
  void start_hedged(engine& e, std::uint32_t c);
  void carry_out(engine& e, std::uint32_t c, hedge_controller::step s);
  void send_copy(engine& e, std::uint32_t c, std::uint32_t copy);
  void on_hedge_send(engine& e, std::uint64_t payload);
  void on_hedge_timer(engine& e, std::uint64_t payload);
  void on_hedged_answer(engine& e, std::uint32_t c, std::uint32_t generation, std::uint32_t how);
  // Whether the request's caller still awaits its answer: the attempt in flight, or one of a
  // hedged call's copies (the controller ignores a copy that answered already).
  bool awaits(const request_record& req) const {
    const call_record& c = calls_[req.call];
    if (!c.in_use) return false;
    if (c.hedged) return req.generation - c.first_generation <= c.generation - c.first_generation;
    return c.waiting && c.generation == req.generation;
  }
  // The event a failed answer comes back as: answer_fatal when the caller hedges and the
  // request's status (a fault's, else 503) is not among its hedge's non_fatal.
  std::uint32_t answer_kind(const request_record& req, std::uint32_t how) const {
    const call_record& c = calls_[req.call];
    if (how == answer_ok || !c.hedged) return how;
    if (how == answer_do_not_retry) return answer_fatal;
    const int status = req.status != 0 ? req.status : 503;
    return (*guards_now_)[c.edge].hedge->is_non_fatal(status) ? how : answer_fatal;
  }
  const distribution& hop(const call_record& c) const {
    return c.parent == no_index ? spec_.clients[c.group].latency
                                : spec_.services[requests_[c.parent].service].calls[c.call].latency;
  }
  // Servers.
  void on_arrive(engine& e, std::uint32_t r);
  void admit(engine& e, std::uint32_t r);
  void begin_serving(engine& e, std::uint32_t r);
  void start_work(engine& e, std::uint32_t r);
  time_ns after_pauses(std::uint32_t service, time_ns from, time_ns work) const;
  void work_until(engine& e, std::uint32_t r, time_ns at);
  void served(engine& e, std::uint64_t r) override;  // a curve with a tick finished it
  void pause_service(engine& e, std::uint32_t service, bool begins);
  void on_work_done(engine& e, std::uint32_t r);
  void next_downstream(engine& e, std::uint32_t r);
  void downstream_over(engine& e, std::uint32_t r, bool ok, bool do_not_retry = false);
  void start_calls(engine& e, std::uint32_t r);
  void calls_over(engine& e, std::uint32_t r);
  void finish(engine& e, std::uint32_t r, bool ok);
  void reject(engine& e, std::uint32_t r, bool refused);
  void answer(engine& e, std::uint32_t r, std::uint32_t how);
  void serve_next(engine& e, std::uint32_t service, std::uint32_t replica);
  // The workers each replica of the service has now: all, or a capacity fault's share (at
  // least one); UINT32_MAX for no limit.
  void start_downstream(engine& e, std::uint32_t r, std::uint32_t i);
  std::uint32_t root_of(std::uint32_t c) const;
  void note_load(engine& e, std::uint32_t service);
  service_bucket& bucket_of(std::uint32_t service, time_ns t);

  std::uint32_t take_call();
  std::uint32_t take_request();
  replica_state& replica(std::uint32_t service, std::uint32_t r) {
    return replicas_[replica_base_[service] + r];
  }
  void report_fields(report::recorder& out);
  // The outage's load and success by phase (SPEC 7.3), when the clients' service has an outage
  // and only open groups call it (their rate is the base load).
  void start_outage_tally();
  faults::fault_decision decide_faults(engine& e, std::uint32_t r);

  system_spec spec_;
  std::vector<std::string> strategy_names_;  // check_all's, in the order of edge_guards
  const std::vector<backoff::strategy>* guards_now_ = nullptr;  // the running strategy's edges
  const std::vector<edge_options>* options_now_ = nullptr;      // its edges' options

  // One run's state. Lives and policies outlive the calls (their controllers point at both).
  std::vector<client_strategy::live> lives_;
  std::vector<retry_policy> policies_;     // per edge
  std::vector<std::uint32_t> slot_edge_;   // per slot: its edge
  std::vector<std::uint32_t> slot_base_;   // per service: its replicas' first slot
  std::vector<std::uint32_t> group_base_;  // per client group: its instances' first slot
  std::vector<call_record> calls_;
  std::vector<std::vector<std::uint32_t>> window_calls_;  // per slot: its calls by window id
  std::vector<std::optional<send_ticket>> tickets_;       // per call: its window's ticket
  std::vector<std::uint32_t> free_calls_;
  std::vector<hedge_state> hedges_;  // per call, sized when a hedged call opens
  std::vector<request_record> requests_;
  std::vector<std::uint32_t> free_requests_;
  std::vector<replica_state> replicas_;
  std::vector<std::uint32_t> replica_base_;
  std::vector<std::uint32_t> round_robin_;
  std::vector<service_counts> counts_;
  std::vector<report::hdr_histogram> latency_;  // per service, ns, completed requests
  std::vector<std::vector<service_bucket>> series_;
  std::vector<std::uint64_t> group_started_;
  std::optional<report::outage_load> tally_;
  std::string header_text_;    // a request's header as the faults layer reads it
  std::uint32_t deepest_ = 0;  // the service with the largest depth
  report::recorder* out_ = nullptr;
  random_generator arrivals_rng_, server_rng_, client_rng_, network_rng_, fault_rng_;
  std::uint64_t operations_ = 0, finished_ = 0;
  std::int64_t total_in_flight_ = 0, total_queued_ = 0;
  handler_id self_ = 0;
};

}  // namespace backoff::sim::system_model
