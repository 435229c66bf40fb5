// SPDX-License-Identifier: Apache-2.0
// Brooker's retry study ("Fixing retries with token buckets and circuit breakers", 2022-02-28;
// code mbrooker/simulator_example, retry_sim/retry_sim.py, retry_strategy.py, client.py): open-loop
// clients against a server that fails each call with a fixed probability and never overloads,
// so the only question is what each retry strategy costs (load) and buys (success rate).
// docs/models/retry-failure-rate.md has every rule with its source.
//
// Clients (client.py Client): `clients` clients, each starting operations as a Poisson process
// (rate_per_client, or total_rate / clients); the first arrival comes after one network-delay
// draw (retry_sim.py sim_loop seeds its queue with net_rtt()). After run.duration no client
// starts an operation (the source's drain); in-flight operations run to their end.
// Network (client.py net_rtt): every hop, request or reply, takes Exp(network.delay_mean).
// Server (retry_sim.py Server.handle): fails a call with probability failure_rate
// (random() > failure_rate succeeds), answering after one network delay.
// Retries (client.py Call.done_failure): decided when the failure reaches the client, by the
// strategy through the library's retry_controller and its gates; a retry waits the policy's
// delay (the source's base_backoff, 0 in run_sims) and then one fresh network delay.
// Gates: the source's factories make one strategy object per client (AdaptiveRetryFactory,
// CircuitBreakerRetryFactory .make()), so each client gets its own budget and breaker unless
// gates.shared is set.
// quirks (default true): the token is earned per operation (the code's start()); false: per
// success, as the post's prose says (a token bucket with earn=request becomes earn=success).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim::brooker_retry_model {
namespace {

class retry_failure_rate final : public model_runner, public model {
 public:
  explicit retry_failure_rate(config_reader& keys)
      : client_count_(keys.integer("clients", 100, 1, 1'000'000)),
        failure_rate_(keys.number("failure_rate", 0.0, 0.0, 1.0)),
        delay_mean_(keys.duration_value("network.delay_mean", std::chrono::milliseconds{10},
                                        std::chrono::nanoseconds{1})
                        .count()),
        duration_(keys.duration_value("run.duration", std::chrono::seconds{10},
                                      std::chrono::nanoseconds{1})
                      .count()),
        limit_(
            keys.duration_value("run.limit", std::chrono::seconds{60}, std::chrono::nanoseconds{1})
                .count()),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{1}, std::chrono::nanoseconds{1})
                .count()),
        quirks_(keys.boolean("quirks", true)),
        shared_gates_(keys.boolean("gates.shared", false)) {
    const bool per_client = keys.has("rate_per_client");
    const bool total = keys.has("total_rate");
    if (per_client && total) {
      keys.fail("total_rate", "give rate_per_client or total_rate, not both");
    }
    if (total) {
      rate_per_client_ =
          keys.number("total_rate", 100.0, 1e-9, 1e12) / static_cast<double>(client_count_);
    } else {
      rate_per_client_ = keys.number("rate_per_client", 10.0, 1e-9, 1e12);
    }
    if (limit_ < duration_) keys.fail("run.limit", "is shorter than run.duration");
  }

  time_ns bucket() const override { return bucket_; }
  // The breaker acts through the retry controller's gates, which every attempt goes through.
  guard_support guards() const override { return {.breaker = true}; }
  memory_need memory() const override {
    memory_need m;
    // A client's gates (budget, breaker) and arrival state; operations in flight are few (the
    // arrival rate times a few network delays) and ride on the same estimate.
    m.per("clients", client_count_, 2048, "clients");
    m.over("run.limit", limit_, bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      refuse_strategy(strategy,
                      "retry-failure-rate clients have no window: their operations "
                      "arrive open-loop and never queue");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    reset(strategy, seed, out);
    self_ = e.add(*this);
    out.work_label("server calls");
    for (std::int64_t c = 0; c < client_count_; ++c) {
      e.schedule_at(network_delay(), self_, arrive, static_cast<std::uint64_t>(c));
    }

    // Run in slices for the progress bar; after run.duration nothing new starts and the run
    // ends when the last operation does (or at run.limit).
    const time_ns slice = std::max<time_ns>(duration_ / 10, 1);
    time_ns t = 0;
    while (e.pending() > 0 && t < limit_) {
      t = std::min(t + slice, limit_);
      e.run_until(t);
      if (progress) {
        progress(std::min(1.0, static_cast<double>(t) / static_cast<double>(duration_)));
      }
    }
    const time_ns end = e.now();
    for (op& o : ops_) {
      if (o.control) {
        out.operation_done(
            {o.id, o.first_attempt, end, o.control->attempts(), report::op_status::unfinished});
        o.control.reset();
      }
    }
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    switch (ev.kind) {
      case arrive:
        return on_arrive(e, static_cast<std::uint32_t>(ev.payload));
      case at_server:
        return on_server(e, static_cast<std::uint32_t>(ev.payload));
      case reply:
        return on_reply(e, static_cast<std::uint32_t>(ev.payload), (ev.payload >> 32) != 0);
      case resend:
        return send(e, static_cast<std::uint32_t>(ev.payload));
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t { arrive, at_server, reply, resend };

  struct op {
    std::optional<retry_controller> control;  // engaged while the operation runs
    std::uint64_t id = 0;
    time_ns first_attempt = 0;
    std::uint32_t client = 0;
  };

  void reset(const client_strategy& strategy, std::uint64_t seed, report::recorder& out) {
    strategy_ = &strategy;
    out_ = &out;
    // Operations first: a controller holding a breaker permit releases it into its own breaker.
    ops_.clear();
    free_.clear();
    gates_.clear();
    std::optional<budget_config> budget = strategy.budget();
    if (budget && !quirks_) {
      if (auto* tb = std::get_if<token_bucket_config>(&*budget)) {
        if (tb->earn == token_earn::request) tb->earn = token_earn::success;
      }
    }
    const std::size_t lives = shared_gates_ ? 1 : static_cast<std::size_t>(client_count_);
    gates_.reserve(lives);
    for (std::size_t i = 0; i < lives; ++i) {
      gates_.push_back(strategy.instantiate());
      if (budget) gates_.back().budget.emplace(*budget);
    }
    workload_rng_ = random_generator{stream_seed(seed, stream::workload)};
    server_rng_ = random_generator{stream_seed(seed, stream::server)};
    client_rng_ = random_generator{stream_seed(seed, stream::client)};
    network_rng_ = random_generator{stream_seed(seed, stream::network)};
    operations_ = 0;
  }

  time_ns network_delay() {
    return static_cast<time_ns>(
        exponential_variate(network_rng_, static_cast<double>(delay_mean_)));
  }

  retry_gates gates_of(std::uint32_t c) {
    return gates_[shared_gates_ ? 0 : static_cast<std::size_t>(c)].gates();
  }

  // Client.gen_load: after run.duration the client stops (the source's drain); otherwise it
  // plans its next arrival and starts an operation now.
  void on_arrive(engine& e, std::uint32_t c) {
    if (e.now() > duration_) return;
    const double gap_ns = exponential_variate(workload_rng_, 1e9 / rate_per_client_);
    e.schedule_after(static_cast<time_ns>(gap_ns), self_, arrive, c);

    std::uint32_t slot;
    if (free_.empty()) {
      slot = static_cast<std::uint32_t>(ops_.size());
      ops_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    op& o = ops_[slot];
    o.control.emplace(strategy_->policy(), duration{e.now()}, gates_of(c));
    o.id = operations_++;
    o.first_attempt = e.now();
    o.client = c;
    out_->operation_started(e.now());
    send(e, slot);
  }

  // One attempt: through the controller's gates (the breaker counts first tries; the budget
  // earns with earn=request), then one network delay to the server.
  void send(engine& e, std::uint32_t slot) {
    op& o = ops_[slot];
    const auto g = o.control->before_attempt(duration{e.now()}, client_rng_);
    if (!g.send) return finish(e, slot, g.stop);
    if (g.wait.count() > 0) {  // a throttle's pacing
      return e.schedule_after(g.wait.count(), self_, resend, slot);
    }
    out_->attempt(e.now());
    e.schedule_after(network_delay(), self_, at_server, slot);
  }

  // Server.handle: success when random() > failure_rate; the answer takes one network delay.
  void on_server(engine& e, std::uint32_t slot) {
    out_->work(e.now(), 1.0);
    const bool ok = uniform01(server_rng_) > failure_rate_;
    e.schedule_after(network_delay(), self_, reply,
                     static_cast<std::uint64_t>(ok ? 1 : 0) << 32 | slot);
  }

  // Call.done_success / done_failure: the strategy decides on a failure when it arrives.
  void on_reply(engine& e, std::uint32_t slot, bool ok) {
    op& o = ops_[slot];
    if (ok) {
      out_->success(e.now());
      (void)o.control->after(verdict::success(), duration{e.now()}, client_rng_);
      return finish(e, slot, outcome::succeeded);
    }
    out_->error(e.now());
    const auto d = o.control->after(verdict::retryable(), duration{e.now()}, client_rng_);
    if (!d.retry) return finish(e, slot, d.stop);
    if (d.delay.count() > 0) return e.schedule_after(d.delay.count(), self_, resend, slot);
    send(e, slot);
  }

  void finish(engine& e, std::uint32_t slot, outcome why) {
    op& o = ops_[slot];
    out_->operation_done(
        {o.id, o.first_attempt, e.now(), o.control->attempts(), report::status_of(why), why});
    o.control.reset();
    free_.push_back(slot);
  }

  // Scenario keys.
  std::int64_t client_count_;
  double failure_rate_;
  time_ns delay_mean_, duration_, limit_, bucket_;
  bool quirks_, shared_gates_;
  double rate_per_client_ = 10.0;

  // One run's state. gates_ before ops_, so that the controllers (which may hold a breaker
  // permit) go first.
  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  std::vector<client_strategy::live> gates_;
  std::vector<op> ops_;
  std::vector<std::uint32_t> free_;
  random_generator workload_rng_, server_rng_, client_rng_, network_rng_;
  std::uint64_t operations_ = 0;
  handler_id self_ = 0;
};

const model_registration retry_failure_rate_registration{
    "retry-failure-rate", [](config_reader& keys) {
      return std::unique_ptr<model_runner>(new retry_failure_rate(keys));
    }};

}  // namespace
}  // namespace backoff::sim::brooker_retry_model
