// SPDX-License-Identifier: Apache-2.0
// Seed 000 (Thain, "Exponential Backoff in Distributed Systems", and the figure it takes from
// Thain and Livny, "The Ethernet Approach to Grid Computing", HPDC 2003): many clients submit
// jobs to one scheduler whose bottleneck is a finite pool of file descriptors (SPEC 2.2, the
// `ethernet-clients` row). The full model, every parameter and where its value comes from are in
// docs/models/ethernet-clients.md; in short, in virtual nanoseconds:
//
//   - `clients` clients (the sweep's key) each submit one job after another for `run.window`;
//     a job submission is one operation with its own retry_controller, from the strategy's policy;
//   - a submission attempt reaches the scheduler at once. If the scheduler is not jammed and at
//     least `server.descriptors_per_submission` (k) of its `server.descriptors` (D) are free, it
//     takes k descriptors and runs for an exponential time of mean `server.submit_time` (the one
//     calibrated parameter), then succeeds and gives them back;
//   - an attempt that finds fewer than k free descriptors fails and jams the scheduler (the
//     "broadcast jam"): for `server.jam` nothing runs (running submissions freeze and finish that
//     much later) and the scheduler answers no one; every attempt that arrived meanwhile, and the
//     one that caused the jam, gets its error when the jam ends;
//   - carrier sense (strategies named in `carrier_sense.strategies`): before an attempt, a client
//     reads the scheduler's free descriptors; below `carrier_sense.min_free` it does not submit.
//     The skipped attempt counts as a failure for backoff (retry_controller::attempt_deferred()
//     and after_deferred()) without touching the scheduler, and is not an `attempt` in the
//     recorder (which counts submissions that reached the scheduler); clients.csv's `attempts`
//     column is the controller's count, deferred ones included, as in backoff::retry_result.
//
// Load reported: in_service = submissions running, queued = attempts waiting for a jam's end.
// The throughput the sweep plots is `completed`: jobs whose submission finished in the window.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim {
namespace {

class ethernet_clients final : public model_runner, public model {
 public:
  explicit ethernet_clients(config_reader& keys)
      : clients_(keys.integer("clients", 100, 1, 1'000'000)),
        descriptors_(keys.integer("server.descriptors", 7500, 1, 1'000'000'000)),
        per_submission_(keys.integer("server.descriptors_per_submission", 20, 1, 1'000'000'000)),
        submit_time_(keys.duration_value("server.submit_time", std::chrono::microseconds{9'375'000},
                                         std::chrono::microseconds{1})
                         .count()),
        jam_(
            keys.duration_value("server.jam", std::chrono::seconds{10}, std::chrono::nanoseconds{1})
                .count()),
        think_(keys.duration_value("workload.think", std::chrono::seconds{0}).count()),
        start_spread_(
            keys.duration_value("workload.start_spread", std::chrono::seconds{0}).count()),
        min_free_(keys.integer("carrier_sense.min_free", 1000, 0, 1'000'000'000)),
        sensing_(keys.strings("carrier_sense.strategies", {"ethernet"})),
        sensing_where_(keys.has("carrier_sense.strategies") ? keys.where("carrier_sense.strategies")
                                                            : ""),
        window_(
            keys.duration_value("run.window", std::chrono::minutes{5}, std::chrono::nanoseconds{1})
                .count()),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{5}, std::chrono::nanoseconds{1})
                .count()) {
    if (per_submission_ > descriptors_) {
      keys.fail("server.descriptors_per_submission",
                std::to_string(per_submission_) + " is more than server.descriptors (" +
                    std::to_string(descriptors_) + "): no submission could ever run");
    }
  }

  time_ns bucket() const override { return bucket_; }
  // A breaker acts through the retry controller's gates, which every attempt here goes through.
  guard_support guards() const override { return {.breaker = true}; }
  memory_need memory() const override {
    memory_need m;
    m.per("clients", clients_, 256, "clients");  // measured 195
    m.over("run.window", window_, bucket_);
    return m;
  }

  void check_all(const std::vector<client_strategy>& all) const override {
    for (const auto& name : sensing_where_.empty() ? std::vector<std::string>{} : sensing_) {
      const bool found = std::any_of(all.begin(), all.end(),
                                     [&](const client_strategy& s) { return s.name() == name; });
      if (!found) {
        throw scenario_error(sensing_where_ + ": carrier_sense.strategies: no strategy named '" +
                             name + "'");
      }
    }
    model_runner::check_all(all);
  }

  void check(const client_strategy& strategy) const override {
    // A sensing client that waits 0 after a deferral would sense again at the same instant,
    // forever: nothing frees descriptors in zero time.
    if (senses(strategy) && strategy.policy().backoff.initial.count() == 0) {
      refuse_strategy(strategy,
                      "carrier sense needs a backoff that waits (initial > 0), or a "
                      "deferred client would sense again at the same instant forever");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    // Every piece of per-run state is reset here: a run depends only on (keys, strategy, seed).
    strategy_ = &strategy;
    out_ = &out;
    // The previous run's controllers first: a controller with an attempt in flight releases its
    // breaker permit when destroyed, into the breaker of that run.
    clients_state_.clear();
    live_ = strategy.instantiate();
    sense_ = senses(strategy);
    backoff_rng_ = random_generator{stream_seed(seed, stream::client)};
    service_rng_ = random_generator{stream_seed(seed, stream::server)};
    random_generator start_rng{stream_seed(seed, stream::workload)};
    clients_state_.assign(static_cast<std::size_t>(clients_), client{});
    running_ = {};
    waiting_.clear();
    used_ = 0;
    jammed_ = false;
    jam_start_ = 0;
    jammed_total_ = 0;
    generation_ = 0;
    next_op_ = 0;

    self_ = e.add(*this);
    for (std::size_t c = 0; c < clients_state_.size(); ++c) {
      const auto at =
          start_spread_ == 0
              ? time_ns{0}
              : static_cast<time_ns>(uniform01(start_rng) * static_cast<double>(start_spread_));
      e.schedule_at(at, self_, start_job, c);
    }

    // The window, in slices so the progress bar can move.
    const time_ns slice = std::max<time_ns>(window_ / 100, 1);
    time_ns t = 0;
    while (t < window_ && e.pending() > 0) {
      t = std::min(t + slice, window_);
      e.run_until(t);
      progress(static_cast<double>(t) / static_cast<double>(window_));
    }
    const time_ns end = window_;
    for (const client& c : clients_state_) {
      if (c.control) {
        out.operation_done(
            {c.op, c.first_attempt, end, c.control->attempts(), report::op_status::unfinished});
      }
    }
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    if (e.now() >= window_) return;  // the window is over: nothing starts or finishes any more
    switch (ev.kind) {
      case start_job:
        return new_job(e, static_cast<std::size_t>(ev.payload));
      case try_submit:
        return try_now(e, static_cast<std::size_t>(ev.payload));
      case send:
        return arrive(e, static_cast<std::size_t>(ev.payload));
      case complete:
        if (ev.payload == generation_) complete_due(e);
        return;
      case jam_over:
        return end_jam(e);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t { start_job, try_submit, send, complete, jam_over };

  struct client {
    std::optional<retry_controller> control;  // the job being submitted; empty between jobs
    std::uint64_t op = 0;
    time_ns first_attempt = 0;
  };

  // A running submission: when it finishes, in scheduler work time (time not jammed).
  struct submission {
    time_ns work_done;
    std::size_t client;
    friend bool operator>(const submission& a, const submission& b) {
      return a.work_done != b.work_done ? a.work_done > b.work_done : a.client > b.client;
    }
  };

  bool senses(const client_strategy& s) const {
    return std::find(sensing_.begin(), sensing_.end(), s.name()) != sensing_.end();
  }

  std::int64_t free_descriptors() const { return descriptors_ - used_; }

  // Time during which the scheduler was not jammed, up to now.
  time_ns work_now(time_ns now) const {
    return now - jammed_total_ - (jammed_ ? now - jam_start_ : 0);
  }

  void new_job(engine& e, std::size_t c) {
    client& cl = clients_state_[c];
    cl.op = next_op_++;
    cl.first_attempt = e.now();
    cl.control.emplace(strategy_->policy(), duration{e.now()}, live_.gates());
    out_->operation_started(e.now());
    try_now(e, c);
  }

  // The client is ready to submit: sense the carrier (if it does), then send.
  void try_now(engine& e, std::size_t c) {
    client& cl = clients_state_[c];
    if (sense_ && free_descriptors() < min_free_) {
      cl.control->attempt_deferred();
      const auto d = cl.control->after_deferred(duration{e.now()}, backoff_rng_);
      if (!d.retry) return finish(e, c, d.stop);
      e.schedule_after(d.delay.count(), self_, try_submit, c);
      return;
    }
    const auto g = cl.control->before_attempt(duration{e.now()}, backoff_rng_);
    if (!g.send) return finish(e, c, g.stop);
    if (g.wait.count() > 0) {
      e.schedule_after(g.wait.count(), self_, send, c);
    } else {
      arrive(e, c);
    }
  }

  // A submission attempt reaches the scheduler.
  void arrive(engine& e, std::size_t c) {
    out_->attempt(e.now());
    if (!jammed_ && free_descriptors() >= per_submission_) {
      used_ += per_submission_;
      const auto run_for =
          std::max<time_ns>(1, static_cast<time_ns>(exponential_variate(
                                   service_rng_, static_cast<double>(submit_time_))));
      running_.push({work_now(e.now()) + run_for, c});
      if (running_.top().client == c) schedule_completion(e);
    } else {
      if (!jammed_) begin_jam(e);
      waiting_.push_back(c);
    }
    report_load(e);
  }

  void begin_jam(engine& e) {
    jammed_ = true;
    jam_start_ = e.now();
    ++generation_;  // the pending completion event is stale: nothing finishes while jammed
    e.schedule_after(jam_, self_, jam_over);
  }

  void end_jam(engine& e) {
    jammed_ = false;
    jammed_total_ += e.now() - jam_start_;
    // Everyone who knocked during the jam hears "failed" now, in the order they came.
    std::vector<std::size_t> failed;
    failed.swap(waiting_);
    for (const std::size_t c : failed) {
      out_->error(e.now());
      client& cl = clients_state_[c];
      const auto d = cl.control->after(verdict::retryable(), duration{e.now()}, backoff_rng_);
      if (!d.retry) {
        finish(e, c, d.stop);
        continue;
      }
      // Through the event queue even for a zero delay, so that retries run after this handler.
      e.schedule_after(d.delay.count(), self_, try_submit, c);
    }
    schedule_completion(e);
    report_load(e);
  }

  // Schedules the earliest running submission's finish (unless jammed).
  void schedule_completion(engine& e) {
    ++generation_;
    if (jammed_ || running_.empty()) return;
    const time_ns at = e.now() + std::max<time_ns>(running_.top().work_done - work_now(e.now()), 0);
    e.schedule_at(at, self_, complete, generation_);
  }

  void complete_due(engine& e) {
    const time_ns work = work_now(e.now());
    while (!running_.empty() && running_.top().work_done <= work) {
      const std::size_t c = running_.top().client;
      running_.pop();
      used_ -= per_submission_;
      out_->success(e.now());
      client& cl = clients_state_[c];
      (void)cl.control->after(verdict::success(), duration{e.now()}, backoff_rng_);
      finish(e, c, outcome::succeeded);
      // The next job: at once (or after the think time), with a fresh controller.
      if (think_ == 0) {
        new_job(e, c);
      } else {
        e.schedule_after(think_, self_, start_job, c);
      }
    }
    schedule_completion(e);
    report_load(e);
  }

  void finish(engine& e, std::size_t c, outcome why) {
    client& cl = clients_state_[c];
    out_->operation_done(
        {cl.op, cl.first_attempt, e.now(), cl.control->attempts(), report::status_of(why), why});
    cl.control.reset();
  }

  void report_load(engine& e) {
    out_->load(e.now(), static_cast<std::int64_t>(running_.size()),
               static_cast<std::int64_t>(waiting_.size()));
  }

  // Keys.
  std::int64_t clients_;
  std::int64_t descriptors_;
  std::int64_t per_submission_;
  time_ns submit_time_;
  time_ns jam_;
  time_ns think_;
  time_ns start_spread_;
  std::int64_t min_free_;
  std::vector<std::string> sensing_;
  std::string sensing_where_;
  time_ns window_;
  time_ns bucket_;

  // Per-run state (reset by run()).
  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  client_strategy::live live_;
  bool sense_ = false;
  random_generator backoff_rng_;
  random_generator service_rng_;
  std::vector<client> clients_state_;
  std::priority_queue<submission, std::vector<submission>, std::greater<>> running_;
  std::vector<std::size_t> waiting_;
  std::int64_t used_ = 0;
  bool jammed_ = false;
  time_ns jam_start_ = 0;
  time_ns jammed_total_ = 0;
  std::uint64_t generation_ = 0;
  std::uint64_t next_op_ = 0;
  handler_id self_ = 0;
};

const model_registration ethernet_clients_registration{
    "ethernet-clients",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new ethernet_clients(keys)); }};

}  // namespace
}  // namespace backoff::sim
