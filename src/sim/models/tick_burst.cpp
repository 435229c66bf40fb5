// SPDX-License-Identifier: Apache-2.0
// Seed 001 ("Exploring backoff"): the tick model (SPEC 2.2 `tick-burst`). Many clients send one
// request each, 20 % of them in a spike near the start; a small service is drastically
// overwhelmed and we watch how each retry strategy lets it recover.
//
// Time is integer ticks; tick t is the interval [t, t + 1). One unit of a seed-001 policy is one
// second of the library's policy and one tick here (presets.hpp), so seconds_per_unit() = 1 and
// every `_s` output is in ticks.
//
// The seed's rules, with the SPEC 6.4 keys:
//   - `workload.clients` (800) clients; round(clients * spike_fraction) of them (160; ids 0..159)
//     send their first request at a tick drawn uniformly from [spike_start, spike_start +
//     spike_width) = ticks 10..19, the others at a tick drawn uniformly from [0, send_window) =
//     ticks 0..999 (workload random stream; the same arrivals for every strategy).
//   - The server has `server.slots` (5) service slots. A request arriving while every slot is
//     taken is "being rejected": it needs `server.reject_ticks` (1) ticks of progress, then the
//     client gets an error. A request that finds a free slot takes it and needs
//     `server.work_ticks` (5) ticks of progress, then the client gets a success.
//   - Each tick every outstanding request (in service plus being rejected) makes one tick of
//     progress, unless more than `server.overwhelmed_above` (25) are outstanding: then only that
//     many, chosen uniformly at random without replacement (a partial Fisher-Yates shuffle on the
//     server's random stream), make progress; the others stand still (an in-service request
//     keeps its slot meanwhile).
//   - `run.ticks` (3000) ticks are simulated; clients still without a success then are reported
//     `unfinished` (done = the run's end).
//   - Each client retries after every error with the strategy's policy through its own
//     backoff::retry_controller (policy and max_attempts from the [[strategy]], gates from
//     client_strategy::instantiate(): one budget/throttle per client, since each client is a
//     separate process in the seed). The simulator has no policy logic: delays come from the
//     controller. NB, CB, URB, EB, REB are the presets none, constant, uniform, exponential,
//     exponential-random.
//
// Where the seed is silent, this model decides:
//   - When a response reaches the client: at the end of the tick in which the request made its
//     last tick of progress, i.e. at time t + 1. A request sent at tick s that is served without
//     waiting thus completes at s + 5 (latency 5 ticks = work_ticks), and one rejected at once is
//     answered at s + 1.
//   - Delay to ticks: a delay d from the policy means the client stays idle for
//     k = round(d / 1 s) whole ticks after the response (half-way rounds up), then sends at the
//     start of tick (response time + k). So NB (d = 0) retries in the very next tick, CB (5 s)
//     idles 5 ticks, URB's U(0, 5) idles 0..5 ticks (0 and 5 with probability 0.1 each, 1..4
//     with 0.2 each: the mean stays 2.5), EB idles exactly 2, 4, 8, 16, 30, 30, ... ticks, REB
//     round(U(0, that)). A throttle's pacing wait (if a strategy has a throttle) is converted
//     the same way; an attempt paced past the end of the run counts in the client's attempts
//     (the controller counted it) but is never sent.
//   - Admission: a request is admitted (slot or rejection) when it arrives, in arrival order; a
//     slot freed in tick t is free for arrivals of tick t + 1. A request that arrives in tick t
//     makes its first progress in tick t (if chosen).
//   - The seed's "processing more than 25" counts requests in service plus being rejected (the
//     seed: "outstanding requests that need responses, either successful or failed").
//   - A retry that would be sent at or after run.ticks is not sent; the client is unfinished.
//     Responses to requests that finish in the last tick (due at time run.ticks) are still
//     delivered and counted.
//   - Policy randomness comes from one generator per client (client stream, index = client id).
//   - The load reported each tick (in service, being rejected = "queued") is the set the server
//     works on in that tick: sampled after the tick's arrivals, before its progress.
//   - `run.bucket` (10 ticks) is an added key: the timeseries resolution.
//
// Order within one tick t (the engine runs equal-time events in insertion order; the code below
// schedules them so that this order holds):
//   1. sends scheduled for t: first requests (scheduled at set-up, in client id order) and
//      retries whose backoff ended at t (in the order they were scheduled); each is admitted at
//      once;
//   2. responses to the requests that finished in tick t - 1 (in the order of the server's
//      outstanding list), each followed at once by its retry when the client waits 0 ticks (NB);
//   3. the server's tick: the load (in service, being rejected) is recorded, the chosen requests
//      make progress, the finished ones leave and their responses are scheduled for t + 1, and
//      the tick t + 1 event is scheduled last, after every send or response it must follow.
// (A send for t is always scheduled before the tick-t event: backoff retries k >= 1 ticks ahead
// are scheduled no later than in step 2 of tick t - 1, and the tick-t event in step 3 of it.)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim {
namespace {

class tick_burst final : public model_runner, public model {
 public:
  explicit tick_burst(config_reader& keys)
      : clients_count_(keys.integer("workload.clients", 800, 1, 100'000'000)),
        spike_fraction_(keys.number("workload.spike_fraction", 0.2, 0.0, 1.0)),
        spike_start_(keys.integer("workload.spike_start", 10, 0, max_ticks)),
        spike_width_(keys.integer("workload.spike_width", 10, 1, max_ticks)),
        send_window_(keys.integer("workload.send_window", 1000, 1, max_ticks)),
        ticks_(keys.integer("run.ticks", 3000, 1, max_ticks)),
        slots_(keys.integer("server.slots", 5, 1, 1'000'000'000)),
        work_ticks_(keys.integer("server.work_ticks", 5, 1, max_ticks)),
        reject_ticks_(keys.integer("server.reject_ticks", 1, 1, max_ticks)),
        overwhelmed_above_(keys.integer("server.overwhelmed_above", 25, 1, 1'000'000'000)),
        bucket_(keys.integer("run.bucket", 10, 1, max_ticks)) {
    // Every client must send its first request within the run.
    if (spike_start_ + spike_width_ > ticks_) {
      keys.fail("workload.spike_start",
                "the spike (ticks " + std::to_string(spike_start_) + " to " +
                    std::to_string(spike_start_ + spike_width_ - 1) +
                    ") must end within run.ticks = " + std::to_string(ticks_));
    }
    if (send_window_ > ticks_) {
      keys.fail("workload.send_window",
                "send_window (" + std::to_string(send_window_) +
                    ") must not exceed run.ticks = " + std::to_string(ticks_));
    }
  }

  double seconds_per_unit() const override { return 1.0; }
  time_ns bucket() const override { return bucket_; }
  guard_support guards() const override {
    return {.breaker_why_not =
                "each client has one operation and gates of its own (the article's clients share "
                "nothing), so its breaker would count only that operation's attempts"};
  }
  memory_need memory() const override {
    memory_need m;
    // Measured 792 bytes per client on 2026-11-28 (peak RSS between 10^5 and 4 x 10^5 clients,
    // send_window = 100; it was 632 before round 2's guards), rounded up.
    m.per("workload.clients", clients_count_, 832, "clients in flight at once");
    m.buckets = std::ceil(static_cast<double>(ticks_) / static_cast<double>(bucket_));
    m.buckets_what = "run.ticks = " + std::to_string(ticks_) +
                     " in buckets of run.bucket = " + std::to_string(bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      refuse_strategy(strategy,
                      "tick-burst clients send one request each and retry it with a "
                      "backoff policy; a window has nothing to schedule");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    out_ = &out;
    setup(strategy, seed);
    engine_ = &e;
    self_ = e.add(*this);
    e.reserve(clients_.size() + 64);  // sends pending at once: at most one per client

    // First sends, in client id order, then tick 0 (inserted after every send at time 0).
    for (std::size_t i = 0; i < clients_.size(); ++i) {
      e.schedule_at(clients_[i].first_attempt, self_, send, i);
    }
    e.schedule_at(0, self_, tick);

    const time_ns slice = 100;
    for (time_ns t = 0; t < ticks_;) {
      t = std::min(t + slice, ticks_);
      e.run_until(t);  // at t = ticks_: the responses of the last tick
      progress(static_cast<double>(t) / static_cast<double>(ticks_));
    }
    const time_ns end = ticks_;
    for (std::size_t i = 0; i < clients_.size(); ++i) {
      const client& c = clients_[i];
      if (!c.done) {
        out.operation_done(
            {i, c.first_attempt, end, c.control.attempts(), report::op_status::unfinished});
      }
    }
    engine_ = nullptr;
    out_ = nullptr;
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    switch (ev.kind) {
      case tick:
        return on_tick(e);
      case send:
        return on_send(e, static_cast<std::size_t>(ev.payload));
      case transmit_now:
        return transmit(e, static_cast<std::size_t>(ev.payload));
      case reply_ok:
        return on_reply(e, static_cast<std::size_t>(ev.payload), true);
      case reply_error:
        return on_reply(e, static_cast<std::size_t>(ev.payload), false);
      default:
        return;
    }
  }

 private:
  static constexpr std::int64_t max_ticks = 1'000'000'000;

  enum kind : std::uint32_t { tick, send, transmit_now, reply_ok, reply_error };

  struct client {
    client(const retry_policy& policy, retry_gates gates, std::uint64_t seed, time_ns first)
        : rng(seed), control(policy, duration{0}, gates), first_attempt(first) {}
    random_generator rng;
    retry_controller control;
    time_ns first_attempt;
    bool started = false;
    bool done = false;
  };

  struct request {
    std::uint32_t client;
    std::int32_t in_service;  // 1: holds a slot (success when done); 0: being rejected
    std::int64_t remaining;   // ticks of progress still needed
  };

  // The policy's time: one tick is one second.
  static duration policy_time(time_ns t) { return std::chrono::seconds{t}; }

  // A delay (or pacing wait) as whole ticks of idling, rounded to nearest (half up).
  static time_ns idle_ticks(duration d) {
    const std::int64_t ns = std::max<std::int64_t>(d.count(), 0);
    return (ns / 1'000'000'000) + ((ns % 1'000'000'000) >= 500'000'000 ? 1 : 0);
  }

  // An integer uniform on [0, n), n >= 1, from one draw.
  static std::int64_t uniform_index(random_generator& g, std::int64_t n) {
    const auto k = static_cast<std::int64_t>(uniform01(g) * static_cast<double>(n));
    return std::min(k, n - 1);
  }

  void setup(const client_strategy& strategy, std::uint64_t seed) {
    const auto n = static_cast<std::size_t>(clients_count_);
    const auto spike =
        static_cast<std::size_t>(std::llround(static_cast<double>(n) * spike_fraction_));
    random_generator workload{stream_seed(seed, stream::workload)};
    server_rng_ = random_generator{stream_seed(seed, stream::server)};

    clients_.clear();  // before the gates their controllers point into
    lives_.clear();
    lives_.reserve(n);  // no reallocation: the controllers keep pointers into it
    clients_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const time_ns first = i < spike ? spike_start_ + uniform_index(workload, spike_width_)
                                      : uniform_index(workload, send_window_);
      lives_.push_back(strategy.instantiate());
      clients_.emplace_back(strategy.policy(), lives_.back().gates(),
                            stream_seed(seed, stream::client, i), first);
    }
    outstanding_.clear();
    outstanding_.reserve(n);
    in_service_ = 0;
    rejecting_ = 0;
  }

  // Step 1 (and step 2's zero-wait retries): the client asks its gates, then sends.
  void on_send(engine& e, std::size_t i) {
    client& c = clients_[i];
    const time_ns now = e.now();
    if (!c.started) {
      c.started = true;
      out_->operation_started(now);
    }
    const auto g = c.control.before_attempt(policy_time(now), c.rng);
    if (!g.send) return finish(now, i, g.stop);
    const time_ns wait = idle_ticks(g.wait);
    if (wait == 0) return transmit(e, i);
    if (now + wait < ticks_) e.schedule_at(now + wait, self_, transmit_now, i);
    // else: paced past the end of the run; the client stays unfinished.
  }

  // The request reaches the server, which admits it at once: a free slot, or rejection.
  void transmit(engine& e, std::size_t i) {
    out_->attempt(e.now());
    const bool slot = in_service_ < slots_;
    if (slot) {
      ++in_service_;
    } else {
      ++rejecting_;
    }
    outstanding_.push_back(
        request{static_cast<std::uint32_t>(i), slot ? 1 : 0, slot ? work_ticks_ : reject_ticks_});
  }

  // Step 3: the server's tick.
  void on_tick(engine& e) {
    const time_ns now = e.now();
    out_->load(now, in_service_, rejecting_);

    const std::size_t n = outstanding_.size();
    const auto cap = static_cast<std::size_t>(overwhelmed_above_);
    std::size_t chosen = n;
    if (n > cap) {
      // Overwhelmed: a uniformly random subset of `cap` requests makes progress. Partial
      // Fisher-Yates: positions [0, cap) end up holding a uniform sample without replacement.
      for (std::size_t k = 0; k < cap; ++k) {
        const auto j = k + static_cast<std::size_t>(
                               uniform_index(server_rng_, static_cast<std::int64_t>(n - k)));
        std::swap(outstanding_[k], outstanding_[j]);
      }
      chosen = cap;
    }
    for (std::size_t k = 0; k < chosen; ++k) --outstanding_[k].remaining;

    // The finished leave (order kept for the rest); their responses arrive at the tick's end.
    std::size_t kept = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const request r = outstanding_[k];
      if (r.remaining > 0) {
        outstanding_[kept++] = r;
        continue;
      }
      if (r.in_service != 0) {
        --in_service_;
      } else {
        --rejecting_;
      }
      e.schedule_at(now + 1, self_, r.in_service != 0 ? reply_ok : reply_error, r.client);
    }
    outstanding_.resize(kept);

    if (now + 1 < ticks_) e.schedule_at(now + 1, self_, tick);
  }

  // Step 2: a response reaches its client, whose controller decides what comes next.
  void on_reply(engine& e, std::size_t i, bool ok) {
    client& c = clients_[i];
    const time_ns now = e.now();
    if (ok) {
      out_->success(now);
    } else {
      out_->error(now);
    }
    const auto d =
        c.control.after(ok ? verdict::success() : verdict::retryable(), policy_time(now), c.rng);
    if (ok) return finish(now, i, outcome::succeeded);
    if (!d.retry) return finish(now, i, d.stop);
    const time_ns wait = idle_ticks(d.delay);
    if (wait >= ticks_ - now) return;     // the retry would fall after the run: unfinished
    if (wait == 0) return on_send(e, i);  // before this tick's server step (step 2)
    e.schedule_at(now + wait, self_, send, i);
  }

  void finish(time_ns now, std::size_t i, outcome why) {
    client& c = clients_[i];
    c.done = true;
    out_->operation_done(
        {i, c.first_attempt, now, c.control.attempts(), report::status_of(why), why});
  }

  // Keys.
  std::int64_t clients_count_;
  double spike_fraction_;
  std::int64_t spike_start_, spike_width_, send_window_, ticks_;
  std::int64_t slots_, work_ticks_, reject_ticks_, overwhelmed_above_;
  time_ns bucket_;

  // One run's state.
  report::recorder* out_ = nullptr;
  engine* engine_ = nullptr;
  handler_id self_ = 0;
  std::vector<client_strategy::live> lives_;
  std::vector<client> clients_;
  std::vector<request> outstanding_;
  random_generator server_rng_;
  std::int64_t in_service_ = 0, rejecting_ = 0;
};

const model_registration tick_burst_registration{
    "tick-burst",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new tick_burst(keys)); }};

}  // namespace
}  // namespace backoff::sim
