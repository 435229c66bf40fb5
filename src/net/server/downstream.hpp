// SPDX-License-Identifier: Apache-2.0
// A tier's calls to the services below it (docs/NETWORK.md, "Calls downstream"): each call runs
// its edge's strategy through the library's retry_controller, step for step as the simulator's
// callers do (sim/models/system/system_model.cpp: open_call, attempt, on_answer), over HTTP/1.1
// kept-alive connections to the called service's replicas, picked by its balancer.
//
//   downstream calls{std::move(specs), executor, seed};  // one per tier: its own guards
//   if (calls.drawn(i)) {                                   // the call's probability
//     const downstream::result r = co_await calls.call(i, {deadline, key});
//     if (!r.ok) ... r.do_not_retry: answer "do not retry" upward
//   }
//   calls.stop();                                           // from the tier's thread
//
// What an attempt carries, as the simulator's requests do: x-envoy-attempt-count (and
// grpc-previous-rpc-attempts); with an edge that propagates its deadline, grpc-timeout and
// x-envoy-expected-rq-timeout-ms of the tighter of its own (this attempt's timeout, the call's
// total) and the one the request received; the operation's key it received (x-backoff-key); how
// long ago the call's first attempt left (x-backoff-since-first-attempt, ms). An answer is a
// success when it is 200, "do not retry" (permanent) when it carries a negative
// grpc-retry-pushback-ms, and a retryable failure otherwise (the simulator's rule: every failure
// is retried while the strategy allows). A connection reset before any byte of the answer is a
// refusal (the accept limit): retryable, not sent. A timed-out attempt's connection is closed,
// and its answer is not read.
//
// Single-threaded, on the tier's own io_context.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backoff/outcome.hpp"
#include "backoff/random.hpp"
#include "backoff/strategy.hpp"
#include "net/common/loop.hpp"
#include "systems/system_spec.hpp"

namespace backoff::net {

// One call a service makes (service.NAME.calls), and where the called service listens.
struct downstream_spec {
  systems::call_spec call;  // to, edge, latency (each way), probability
  std::string to;           // the called service's name (the Host of its requests)
  systems::balance_kind balance = systems::balance_kind::round_robin;
  std::vector<boost::asio::ip::tcp::endpoint> replicas;
  backoff::strategy guards;  // the edge's, under the strategy served
  systems::edge_options options;
  systems::ejection_spec ejection;  // the called service's outlier_ejection
};

// What the caller below cannot honour of an edge's guards (an AIMD window, a bulkhead's line),
// with why; none when it runs them all.
std::optional<guard_refusal> caller_refusal(const backoff::strategy& guards);

class downstream {
 public:
  using clock = std::chrono::steady_clock;

  // Told of each attempt of a call (a client group's operation counts them: load --system).
  class attempt_watch {
   public:
    virtual void sent() = 0;                  // an attempt leaves
    virtual void failed(bool timed_out) = 0;  // its answer was a failure, or it timed out
   protected:
    ~attempt_watch() = default;
  };

  // What the request making the call carries down.
  struct context {
    std::optional<clock::time_point> deadline;  // the one it received
    std::string key;                            // the x-backoff-key it received ("": none)
    // A closed client group's operation with backoff_from_think: its first backoff grows from
    // the think time before it (the simulator's start_operation).
    std::optional<duration> thought;
    attempt_watch* watch = nullptr;  // none: nobody counts the attempts
  };
  struct result {
    bool ok = false;
    bool do_not_retry = false;  // it failed on an edge with on_give_up = "do-not-retry"
    std::uint32_t attempts = 0;
    // Why it ended: succeeded, the retry loop's reason to stop, deadline_exceeded when the
    // deadline it received passed, cancelled when the tier stopped.
    outcome why = outcome::cancelled;
  };

  downstream(std::vector<downstream_spec> calls, loop_executor executor, std::uint64_t seed);
  ~downstream();
  downstream(const downstream&) = delete;
  downstream& operator=(const downstream&) = delete;

  std::size_t size() const noexcept;
  // Connections that failed for want of this machine's resources (descriptors, ports, memory:
  // load.hpp's is_local_error): retried as refusals, and counted here, since the replica never
  // saw them.
  std::uint64_t local_errors() const noexcept { return local_errors_; }
  // Whether the request makes call i (its probability; one draw).
  bool drawn(std::size_t i);
  task<result> call(std::size_t i, const context& from);
  void stop();

 private:
  struct edge_state;
  struct connection;
  struct answer;
  struct copy_handle;
  struct hedged_call;

  std::uint32_t choose_replica(edge_state& e, std::uint32_t attempt, std::uint32_t last);
  void note_answer(edge_state& e, std::uint32_t replica, const answer& a);
  task<answer> exchange(edge_state& e, std::uint32_t replica, const std::string& request,
                        duration limit, copy_handle* handle = nullptr);
  task<answer> attempt(edge_state& e, std::uint32_t replica, const std::string& request,
                       duration limit, copy_handle* handle = nullptr);
  // A call on an edge that hedges: copies through the library's hedge_controller, as the
  // simulator's hedged callers send them (gRPC A6).
  task<result> call_hedged(edge_state& e, const context& from);
  task<> send_copy(edge_state& e, std::shared_ptr<hedged_call> call, std::uint32_t copy,
                   duration pacing);
  std::uint32_t replica_for_copy(edge_state& e, const hedged_call& call, std::uint32_t copy);
  static std::string request_text(const downstream_spec& s, std::uint32_t attempt,
                                  std::optional<clock::time_point> carried, const std::string& key,
                                  clock::duration since_first);
  task<bool> sleep_for(duration d);

  loop_executor executor_;
  random_generator rng_;
  std::vector<std::unique_ptr<edge_state>> edges_;
  bool stopping_ = false;
  std::uint64_t local_errors_ = 0;
};

}  // namespace backoff::net
