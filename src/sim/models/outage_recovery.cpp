// SPDX-License-Identifier: Apache-2.0
// Seed 004 ("Exponential Backoff or how not to crash a server"): closed-loop clients against a
// server whose service time grows with its concurrency, through a pause of the server (SPEC 2.2,
// docs/models/outage-recovery.md). The seed's Go project (smira/exponential-backoff, server.go
// and client.go) is the reference for every rule below.
//
// Server: concurrency_server.hpp (seed 004's server.go): service time
//     D(N) = base_delay * factor^(max(0, N - limit) / k)           (100 ms, 30, 1.05, 15)
// re-evaluated every `tick` (50 ms) of a request with the current N, which counts abandoned
// requests too; paused from outage.start for outage.duration (the seed's SIGSTOP).
//
// Clients. Each of `clients` runs the Go client's loop: wait a think time ~ Exp(think_mean),
// send, wait for the answer or `timeout` (2 s; the request is abandoned but keeps running on the
// server); after a success think again; after a timeout, wait the strategy's backoff and resend.
// One operation is one think-to-success cycle: its retry_controller (the library's) decides the
// backoff. With `quirks` (default on) the exponential backoff grows from the think time just
// waited, as in the Go client, whose `lastDelay` is the think time when the first error comes
// (retry_controller::continue_from); without it, the backoff starts from the policy's initial.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "concurrency_server.hpp"
#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim {
namespace {

class outage_recovery final : public model_runner,
                              public model,
                              private concurrency_server::listener {
 public:
  explicit outage_recovery(config_reader& keys)
      : client_count_(keys.integer("workload.clients", 1000, 1, 10'000'000)),
        think_mean_(keys.duration_value("workload.think_mean", std::chrono::seconds{10},
                                        std::chrono::nanoseconds{1})
                        .count()),
        timeout_(keys.duration_value("workload.timeout", std::chrono::seconds{2},
                                     std::chrono::nanoseconds{1})
                     .count()),
        quirks_(keys.boolean("quirks", true)),
        server_(
            {.limit = keys.integer("server.limit", 30, 0, 1'000'000'000),
             .factor = keys.number("server.factor", 1.05, 1.0, 1e6),
             .k = keys.number("server.k", 15.0, 1e-9, 1e12),
             .base_delay = keys.duration_value("server.base_delay", std::chrono::milliseconds{100},
                                               std::chrono::nanoseconds{1})
                               .count(),
             .tick = keys.duration_value("server.tick", std::chrono::milliseconds{50},
                                         std::chrono::nanoseconds{1})
                         .count()},
            *this),
        outage_start_(keys.duration_value("outage.start", std::chrono::seconds{60}).count()),
        outage_length_(keys.duration_value("outage.duration", std::chrono::seconds{10}).count()),
        duration_(keys.duration_value("run.duration", std::chrono::seconds{400},
                                      std::chrono::nanoseconds{1})
                      .count()),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{1}, std::chrono::nanoseconds{1})
                .count()) {
    if (outage_length_ > 0 && outage_start_ > duration_) {
      keys.fail("outage.start", "is after the end of the run (run.duration)");
    }
  }

  time_ns bucket() const override { return bucket_; }
  // A breaker acts through the retry controller's gates, which every attempt here goes through.
  guard_support guards() const override { return {.breaker = true}; }
  memory_need memory() const override {
    memory_need m;
    // A client's own state (measured 120 B), and the requests it may leave in the server: seed
    // 004's server keeps a request until it is served, and a client that times out sends another,
    // so once it collapses each client leaves up to one per timeout over the run, with the
    // server's bookkeeping and timers for it (measured 62 to 87 B each from peak RSS: 1,000 to
    // 10,000 clients over 400 s, and outage-tipping's 1,000 over 300 s, with a 2 s timeout).
    const double requests_each = std::ceil(static_cast<double>(duration_) /
                                           static_cast<double>(std::max<time_ns>(timeout_, 1)));
    m.per("workload.clients", client_count_, 128 + 80 * requests_each,
          "clients, with the requests each may leave in the server (one per workload.timeout)");
    m.over("run.duration", duration_, bucket_);
    return m;
  }

  std::optional<report::outage_window> outage() const override {
    if (outage_length_ == 0) return std::nullopt;
    return report::outage_window{outage_start_, outage_start_ + outage_length_};
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      refuse_strategy(strategy,
                      "outage-recovery clients have one request in flight each; an AIMD "
                      "window has nothing to do here");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    reset(strategy, seed, out);
    self_ = e.add(*this);
    server_.attach(e);
    timeout_lane_ = e.add_lane(timeout_);
    if (outage_length_ > 0) {
      e.schedule_at(outage_start_, self_, pause);
      e.schedule_at(outage_start_ + outage_length_, self_, resume);
    }
    for (std::size_t c = 0; c < clients_.size(); ++c) think(e, c);

    const time_ns slice = 10'000'000'000;
    for (time_ns t = 0; t < duration_;) {
      t = std::min(t + slice, duration_);
      e.run_until(t);
      if (progress) progress(static_cast<double>(t) / static_cast<double>(duration_));
    }
    for (std::size_t c = 0; c < clients_.size(); ++c) {
      client& cl = clients_[c];
      if (cl.control) {
        out.operation_done({cl.operation, cl.first_attempt, duration_, cl.control->attempts(),
                            report::op_status::unfinished});
      }
    }
    return {duration_, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    switch (ev.kind) {
      case wake_client:
        return on_client_wake(e, static_cast<std::size_t>(ev.payload));
      case send_now:
        return send(e, static_cast<std::size_t>(ev.payload));
      case client_timeout:
        return on_timeout(e, ev.payload);
      case pause:
        server_.pause(e);
        return record_load(e);
      case resume:
        server_.resume(e);
        return record_load(e);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t { wake_client, send_now, client_timeout, pause, resume };

  struct client {
    std::optional<retry_controller> control;  // the operation in progress, if any
    std::uint64_t operation = 0;
    time_ns first_attempt = 0;
    time_ns waited = 0;         // the think time before this operation
    std::uint32_t attempt = 0;  // generation of the attempt in flight (stale replies ignored)
    bool awaiting = false;      // an attempt is in flight
  };

  static std::uint64_t pack(std::uint32_t index, std::uint32_t generation) {
    return static_cast<std::uint64_t>(generation) << 32 | index;
  }

  void reset(const client_strategy& strategy, std::uint64_t seed, report::recorder& out) {
    strategy_ = &strategy;
    out_ = &out;
    // The previous run's controllers first: a controller with an attempt in flight releases its
    // breaker permit when destroyed, into the breaker of that run.
    clients_.clear();
    live_ = strategy.instantiate();
    workload_rng_ = random_generator{stream_seed(seed, stream::workload)};
    client_rng_ = random_generator{stream_seed(seed, stream::client)};
    clients_.assign(static_cast<std::size_t>(client_count_), client{});  // allocated per run
    operations_ = 0;
  }

  void record_load(engine& e) { out_->load(e.now(), server_.in_service(), server_.queued()); }

  void think(engine& e, std::size_t c) {
    const auto wait =
        detail::to_duration(exponential_variate(workload_rng_, static_cast<double>(think_mean_)));
    clients_[c].waited = wait.count();
    e.schedule_after(wait.count(), self_, wake_client, c);
  }

  void on_client_wake(engine& e, std::size_t c) {
    client& cl = clients_[c];
    if (!cl.control) {  // a think time ended: a new operation
      cl.control.emplace(strategy_->policy(), duration{e.now()}, live_.gates());
      if (quirks_) cl.control->continue_from(duration{cl.waited});
      cl.operation = operations_++;
      cl.first_attempt = e.now();
      out_->operation_started(e.now());
    }
    const auto g = cl.control->before_attempt(duration{e.now()}, client_rng_);
    if (!g.send) return finish(e, c, g.stop);
    if (g.wait.count() > 0) return e.schedule_after(g.wait.count(), self_, send_now, c);
    send(e, c);
  }

  void send(engine& e, std::size_t c) {
    client& cl = clients_[c];
    out_->attempt(e.now());
    ++cl.attempt;
    cl.awaiting = true;
    e.schedule_in(timeout_lane_, self_, client_timeout,
                  pack(static_cast<std::uint32_t>(c), cl.attempt));
    server_.arrive(e, pack(static_cast<std::uint32_t>(c), cl.attempt));
    record_load(e);
  }

  // The server finished a request; its client may have given up on it long ago.
  void served(engine& e, std::uint64_t tag) override {
    record_load(e);
    const auto c = static_cast<std::uint32_t>(tag);
    client& cl = clients_[c];
    if (!cl.awaiting || cl.attempt != static_cast<std::uint32_t>(tag >> 32)) return;
    cl.awaiting = false;
    out_->success(e.now());
    (void)cl.control->after(verdict::success(), duration{e.now()}, client_rng_);
    finish(e, c, outcome::succeeded);
  }

  void on_timeout(engine& e, std::uint64_t payload) {
    const auto c = static_cast<std::uint32_t>(payload);
    client& cl = clients_[c];
    if (!cl.awaiting || cl.attempt != static_cast<std::uint32_t>(payload >> 32)) return;
    cl.awaiting = false;
    ++cl.attempt;  // its answer, if it ever comes, is stale
    out_->timeout(e.now());
    const auto d = cl.control->after(verdict::retryable(), duration{e.now()}, client_rng_);
    if (!d.retry) return finish(e, c, d.stop);
    e.schedule_after(d.delay.count(), self_, wake_client, c);
  }

  void finish(engine& e, std::size_t c, outcome why) {
    client& cl = clients_[c];
    out_->operation_done({cl.operation, cl.first_attempt, e.now(), cl.control->attempts(),
                          report::status_of(why), why});
    cl.control.reset();
    think(e, c);
  }

  // Before clients_, so that it outlives their controllers (which may hold a breaker permit).
  client_strategy::live live_;

  // Scenario keys.
  std::int64_t client_count_;
  std::vector<client> clients_;
  time_ns think_mean_, timeout_;
  bool quirks_;
  concurrency_server server_;
  time_ns outage_start_, outage_length_, duration_, bucket_;

  // One run's state.
  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  random_generator workload_rng_, client_rng_;
  std::uint64_t operations_ = 0;
  handler_id self_ = 0;
  lane_id timeout_lane_ = 0;
};

const model_registration outage_recovery_registration{
    "outage-recovery",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new outage_recovery(keys)); }};

}  // namespace
}  // namespace backoff::sim
