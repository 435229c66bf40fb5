// SPDX-License-Identifier: Apache-2.0
// The AWS Architecture Blog's "Exponential Backoff And Jitter" experiment (Marc Brooker, 2015;
// its simulator is aws-samples/aws-arch-backoff-simulator, src/backoff_simulator.py): `clients`
// clients each want one successful write to a single row under optimistic concurrency (SPEC 2.2).
//
// The model, in nanoseconds (the source works in milliseconds):
//   - the server holds one row with a version v, starting at 0, and takes no time itself;
//   - every message hop (client -> server or back) takes |N(mean, sd)|, drawn afresh per hop
//     (the source's Net.delay(): abs(normalvariate(10, 2)) ms);
//   - at t = 0 every client sends a read; the server answers with the current v;
//   - on the reply the client sends a write carrying that v; the server counts it (the source's
//     `calls`), and if it carries the current v, sets v = v + 1 and answers success, otherwise
//     answers conflict;
//   - on success the client is done; on conflict it waits its strategy's backoff and starts over
//     with a read: the read reaches the server reply_time + hop + backoff (the source adds the
//     backoff to the next read's hop);
//   - the run ends with the last success reply; its time is the completion time (the source's
//     run_sim returns the time of its last event, which is that reply).
// Backoff: with k the number of conflicts so far (the source increments `attempt` before it
// computes the wait, so the first wait uses 2^1), base b = policy.base, cap c = policy.cap:
//   exponential  min(c, b * 2^k)           full  U(0, min(c, b * 2^k))
//   equal        w/2 + U(0, w/2), w = min(c, b * 2^k)
//   decorrelated s = min(c, U(b, 3 s)), s starting at b          none  0
// These are the library's presets (docs/POLICIES.md): an exponential schedule with initial = 2b,
// factor 2, max c, and the decorrelated jitter with initial b. Each client's operation owns a
// backoff::retry_controller built from its strategy's policy, in which the model sets `initial`
// and `max` from policy.base and policy.cap (so --set policy.base=... changes every strategy):
//   decorrelated jitter:    initial = min(b, c),  max = c
//   exponential schedule:   initial = min(2b, c), max = c   (min(c, 2b * 2^n) for n = 0, 1, ...)
//   any other schedule (e.g. `none`): as written.
// One controller attempt is one read-then-write cycle; `attempts` counts write calls, which is
// the same number (the source's `calls`: every write that reaches the server).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "backoff/error.hpp"
#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim {
namespace {

class aws_occ final : public model_runner, public model {
 public:
  explicit aws_occ(config_reader& keys)
      : clients_(keys.integer("clients", 100, 1, max_clients)),
        mean_(bounded(keys, "network.mean", std::chrono::milliseconds{10}, std::chrono::hours{1})),
        sd_(bounded(keys, "network.sd", std::chrono::milliseconds{2}, std::chrono::hours{1})),
        base_(bounded(keys, "policy.base", std::chrono::milliseconds{5}, std::chrono::hours{24})),
        cap_(bounded(keys, "policy.cap", std::chrono::seconds{2}, std::chrono::hours{24})),
        bucket_(keys.duration_value("run.bucket", std::chrono::milliseconds{10},
                                    std::chrono::nanoseconds{1})
                    .count()),
        limit_(keys.duration_value("run.limit", std::chrono::hours{1}, std::chrono::nanoseconds{1})
                   .count()) {}

  time_ns bucket() const override { return bucket_; }
  memory_need memory() const override {
    memory_need m;
    m.per("clients", clients_, 256, "clients in flight at once");  // measured 194
    m.over("run.limit", limit_, bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window() || strategy.has_budget() || strategy.has_throttle()) {
      refuse_strategy(strategy,
                      "aws-occ clients retry with a backoff policy only (no window, budget "
                      "or throttle)");
    }
    try {
      scaled(strategy.policy()).backoff.validate();
    } catch (const parse_error& e) {
      refuse_strategy(strategy, std::string("with policy.base and policy.cap: ") + e.what());
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    policy_ = scaled(strategy.policy());
    out_ = &out;
    version_ = 0;
    finished_ = 0;
    writes_in_flight_ = 0;
    last_event_ = 0;
    clients_state_.clear();
    clients_state_.resize(static_cast<std::size_t>(clients_));
    self_ = e.add(*this);
    e.reserve(static_cast<std::size_t>(clients_) + 16);
    for (std::size_t i = 0; i < clients_state_.size(); ++i) {
      client& c = clients_state_[i];
      c.net = random_generator{stream_seed(seed, stream::network, i)};
      c.jitter = random_generator{stream_seed(seed, stream::client, i)};
      c.control.emplace(policy_, duration{0});
      out.operation_started(0);
    }
    for (std::size_t i = 0; i < clients_state_.size(); ++i) start_cycle(e, i);

    // Slices of virtual time, so that a progress bar can move.
    const time_ns slice = 1'000'000'000;
    time_ns t = 0;
    const auto n = static_cast<std::uint64_t>(clients_);
    while (finished_ < n && e.pending() > 0 && t < limit_) {
      t = std::min(t + slice, limit_);
      e.run_until(t);
      progress(static_cast<double>(finished_) / static_cast<double>(n));
    }
    // run_until moves the clock to the end of the slice; the run ends at the last event.
    const time_ns end = finished_ == n ? last_event_ : e.now();
    for (std::size_t i = 0; i < clients_state_.size(); ++i) {
      const client& c = clients_state_[i];
      if (!c.done)
        out.operation_done({i, 0, end, c.control->attempts(), report::op_status::unfinished});
    }
    out_ = nullptr;
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    last_event_ = e.now();
    const auto i = static_cast<std::size_t>(ev.payload & index_mask);
    const auto value = ev.payload >> value_shift;
    switch (ev.kind) {
      case read_arrives:  // the server answers with the current version
        return send(e, i, read_replied, version_);
      case read_replied:  // the client writes with the version it read
        out_->attempt(e.now());
        ++writes_in_flight_;
        out_->load(e.now(), writes_in_flight_, 0);
        return send(e, i, write_arrives, value);
      case write_arrives: {
        const bool ok = value == version_;
        if (ok) ++version_;
        return send(e, i, write_replied, ok ? 1 : 0);
      }
      case write_replied:
        return on_write_reply(e, i, value != 0);
      case backoff_over:
        return start_cycle(e, i);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t {
    read_arrives,
    read_replied,
    write_arrives,
    write_replied,
    backoff_over
  };

  // A payload is a client index in the low 32 bits and a value (a version, or 1 for success)
  // in the high 32: clients and versions stay below max_clients.
  static constexpr std::int64_t max_clients = 10'000'000;
  static constexpr std::uint64_t index_mask = 0xffff'ffffULL;
  static constexpr int value_shift = 32;

  struct client {
    std::optional<retry_controller> control;
    random_generator net;     // its messages' hop latencies, both ways
    random_generator jitter;  // its backoff's draws
    bool done = false;
  };

  static duration bounded(config_reader& keys, std::string_view key, duration fallback,
                          duration max) {
    const duration d = keys.duration_value(key, fallback);
    if (d > max) keys.fail(key, "must be at most " + format_duration(max));
    return d;
  }

  // The strategy's policy with initial and max taken from policy.base and policy.cap.
  retry_policy scaled(const retry_policy& written) const {
    retry_policy p = written;
    backoff_policy& b = p.backoff;
    if (b.jitter == jitter_kind::decorrelated) {
      b.initial = std::min(base_, cap_);
      b.max = cap_;
    } else if (b.schedule == schedule_kind::exponential) {
      b.initial = std::min(2 * base_, cap_);
      b.max = cap_;
    }
    return p;
  }

  // One hop of client i's message: |N(mean, sd)|, rounded to the nanosecond.
  time_ns hop(std::size_t i) {
    const double z = standard_normal(clients_state_[i].net);
    const double d =
        std::abs(static_cast<double>(mean_.count()) + static_cast<double>(sd_.count()) * z);
    return static_cast<time_ns>(std::llround(d));
  }

  void send(engine& e, std::size_t i, kind k, std::uint64_t value) {
    e.schedule_after(hop(i), self_, k, (value << value_shift) | i);
  }

  // A read-then-write cycle: one attempt of the client's retried operation.
  void start_cycle(engine& e, std::size_t i) {
    client& c = clients_state_[i];
    const auto g = c.control->before_attempt(duration{0}, c.jitter);
    if (!g.send) return finish(e, i, g.stop);  // no gates here, but be exact
    send(e, i, read_arrives, 0);
  }

  void on_write_reply(engine& e, std::size_t i, bool ok) {
    --writes_in_flight_;
    out_->load(e.now(), writes_in_flight_, 0);
    client& c = clients_state_[i];
    if (ok) {
      out_->success(e.now());
      return finish(e, i, outcome::succeeded);
    }
    out_->error(e.now());
    const auto d = c.control->after(verdict::retryable(), duration{0}, c.jitter);
    if (!d.retry) return finish(e, i, d.stop);  // max_attempts, if a strategy sets it
    if (d.delay.count() == 0) return start_cycle(e, i);
    e.schedule_after(d.delay.count(), self_, backoff_over, i);
  }

  void finish(engine& e, std::size_t i, outcome why) {
    client& c = clients_state_[i];
    c.done = true;
    ++finished_;
    out_->operation_done({i, 0, e.now(), c.control->attempts(), report::status_of(why), why});
  }

  std::int64_t clients_;
  duration mean_, sd_, base_, cap_;
  time_ns bucket_;
  time_ns limit_;

  retry_policy policy_;
  report::recorder* out_ = nullptr;
  std::vector<client> clients_state_;
  std::uint64_t version_ = 0;
  std::uint64_t finished_ = 0;
  std::int64_t writes_in_flight_ = 0;
  time_ns last_event_ = 0;
  handler_id self_ = 0;
};

const model_registration aws_occ_registration{
    "aws-occ",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new aws_occ(keys)); }};

}  // namespace
}  // namespace backoff::sim
