// SPDX-License-Identifier: Apache-2.0
// A system scenario as the system model runs it (docs/SYSTEMS.md): services with their replicas,
// queues, limits and downstream calls; client groups; the edges' guards, per compared strategy.
// Everything is read and checked here, once, when the scenario loads: unknown services and
// edges, bad capacities and distributions, calls that form a cycle, each one line naming the
// key's file position. The run (system_model.cpp) only follows indices.
//
//   system_spec spec = read_system(keys);            // keys: the scenario's config_reader
//   spec.resolve(strategies);                        // each strategy's guards on every edge
//   const backoff::strategy& g = spec.edge_guards[strategy_index][edge_index];
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backoff/concurrency_limit.hpp"
#include "backoff/strategy.hpp"
#include "config/config_reader.hpp"
#include "distribution.hpp"
#include "edge_setting.hpp"
#include "faults/faults.hpp"

namespace backoff::systems {

using config::config_error;
using config::config_reader;

enum class balance_kind : std::uint8_t { round_robin, random, least_request };
enum class discipline_kind : std::uint8_t { fifo, lifo, adaptive_lifo, codel };
enum class admission_kind : std::uint8_t { none, concurrency, adaptive };

// Facebook's controlled-delay queue ("Fail at Scale", 2015): a request that waited longer than
// `target` while the queue has not been empty for `interval` is dropped (and one that waited
// longer than `interval` in any case). Adaptive LIFO serves newest first while the queue has
// not been empty for `interval`.
struct discipline_spec {
  discipline_kind kind = discipline_kind::fifo;
  time_ns target = 5'000'000;
  time_ns interval = 100'000'000;
};

// Envoy's outlier detection (consecutive_5xx): a replica that fails `failures` answers in a row
// is taken out of balancing for base * (times ejected) , while no more than max_share of the
// replicas are out.
struct ejection_spec {
  bool on = false;
  std::uint32_t failures = 5;
  time_ns base = 30'000'000'000;
  double max_share = 0.1;
};

struct call_spec {
  std::uint32_t to = 0;    // service index
  std::uint32_t edge = 0;  // edge index
  distribution latency;    // one way, each direction
  double probability = 1;  // the share of requests that make this call
};

struct service_spec {
  std::string name, where;
  std::uint32_t replicas = 1;
  balance_kind balance = balance_kind::round_robin;
  std::uint32_t workers = 8;  // 0: no limit (a goroutine per request)
  std::uint32_t queue = 1000;
  std::uint32_t max_connections = 0;  // 0: no accept limit
  discipline_spec discipline;
  distribution service_time;
  admission_kind admission = admission_kind::none;
  std::uint32_t concurrency = 0;               // admission concurrency(N)
  std::optional<limit_config> adaptive;        // admission adaptive(...)
  faults::fault_plan faults;                   // errors and the fault schedule
  std::optional<faults::fault_window> outage;  // the first outage, for recovery_s
  std::vector<faults::fault_window> pauses;    // outage(action=pause): the replicas stop
  std::vector<time_ns> capacity_returns;  // when a capacity(...) window ends: workers come back
  bool capacity_faults = false;           // a capacity(...) fault: workers are counted per moment
  time_ns expired_cost = 0;
  // Deadlines and faults as Isaev's server (server.py _base_handle) treats them, each unset by
  // default: an expired request costs this share of the work it would have taken (instead of
  // expired_cost); one whose deadline passes during its work stops at the deadline plus
  // check_cost of its work, and fails.
  std::optional<double> expired_share;
  std::optional<double> check_cost;
  // faults_decided = "after-work": the faults are decided when the request's own work ends (it
  // fails having cost its whole work), not when it arrives.
  bool faults_after_work = false;
  // spare_capacity: workers = int(spare * offered rate * mean service time), the offered rate
  // being that of the open client groups calling it (read_system sizes `workers`).
  std::optional<double> spare_capacity;
  ejection_spec ejection;
  std::vector<call_spec> calls;
  bool fan_out = false;
  // work = "after-calls": its own work comes once its calls are over (whether they succeeded or
  // not), before its answer; by default it comes first.
  bool work_after_calls = false;
  // A request sent as a retry does a uniform share of its work (ThomWright's retry-model: "assume
  // we can skip some work sometimes because we've already done it").
  bool retry_skips_work = false;
  std::uint32_t depth = 0;  // the longest chain of calls from a client to it (1: a client's)
};

enum class arrival_kind : std::uint8_t { poisson, constant, ramp, closed };

struct client_group {
  std::string name, where;
  std::uint32_t to = 0, edge = 0;
  arrival_kind arrivals = arrival_kind::poisson;
  double rate = 0;               // per second (poisson, constant; ramp: the start)
  double rate_to = 0;            // ramp: the end
  time_ns ramp_over = 0;         // ramp: how long the rate takes to go from rate to rate_to
  std::uint32_t users = 0;       // closed
  distribution think;            // closed: between an operation's end and the next
  distribution latency;          // one way, to the service and back
  std::uint64_t operations = 0;  // 0: until run.duration
  // latency_back: the way back, when it differs from latency.
  std::optional<distribution> latency_back;
  // Client processes in the group, each with its own guards (budget, breaker, limiter); each
  // operation belongs to one drawn at random (so each is a Poisson process of rate / instances).
  std::uint32_t instances = 1;
  bool think_first = false;  // closed: each user thinks before its first operation too
  // Closed: an operation's first backoff grows from the think time before it, as smira's Go
  // client's does (its lastDelay is the think time when the first error comes).
  bool backoff_from_think = false;
};

// An edge's keys beside the strategy's (docs/SYSTEMS.md, "[edge.NAME]"):
//   on_give_up = "retryable" | "do-not-retry"      what its caller answers upward when a call on
//                                                  the edge gives up: the end-to-end signal after
//                                                  Google's SRE book ("Handling Overload"), as
//                                                  gRPC's pushback that asks not to retry
//   breaker_asks = "every-attempt" | "first-tries" when the edge's breaker is asked: before every
//                                                  attempt (inside the retry loop, the library's
//                                                  order), or before a call's first try only,
//                                                  its retries always going (a breaker around the
//                                                  retried call: Isaev's client breaker)
struct edge_options {
  // A call on this edge that ends without success (its attempts, a budget or a breaker gave up,
  // or the answer said not to retry) makes its service answer its own caller "do not retry".
  bool do_not_retry_on_give_up = false;
  bool breaker_first_tries = false;
  friend bool operator==(const edge_options&, const edge_options&) = default;
};
inline constexpr std::string_view edge_option_keys[] = {"on_give_up", "breaker_asks"};
// Sets one of edge_option_keys from its text; throws parse_error.
void set_edge_option(edge_options& options, std::string_view key, std::string_view text);

struct edge_spec {
  std::string name, where;
  backoff::strategy defaults;
  edge_options options;
};

struct system_spec {
  std::vector<service_spec> services;
  std::vector<client_group> clients;
  std::vector<edge_spec> edges;
  time_ns duration = 60'000'000'000;  // arrivals stop
  time_ns drain = 30'000'000'000;     // then operations in flight may finish
  time_ns bucket = 1'000'000'000;
  std::uint32_t max_depth = 0;  // 0: calls must not form a cycle
  // recovery.hold: how long goodput must hold for recovery_s; phase.warmup: where
  // load_amplification.pre starts (outage_load).
  time_ns recovery_hold = 5'000'000'000;
  time_ns warmup = 0;
  // resolve(): per strategy (scenario order), per edge, the guards that strategy runs with.
  std::vector<std::vector<backoff::strategy>> edge_guards;
  // resolve(): per strategy, per edge, its options.
  std::vector<std::vector<edge_options>> edge_options_of;

  // Lays each strategy's edge.NAME.KEY settings over the edges' defaults and validates them;
  // throws config_error naming the setting.
  void resolve(std::span<const strategy_edges> strategies);
  std::optional<std::uint32_t> edge_index(std::string_view name) const;
};

// Reads [run], [service.*], [[clients]] and [edge.*]; throws config_error.
system_spec read_system(config_reader& keys);

}  // namespace backoff::systems
