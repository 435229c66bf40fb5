// Seed 004 ("Exponential Backoff or how not to crash a server"): closed-loop clients against a
// server whose service time grows with its concurrency, through a pause of the server (SPEC 2.2,
// docs/models/outage-recovery.md). The seed's Go project (smira/exponential-backoff, server.go
// and client.go) is the reference for every rule below.
//
// Server. N counts every request the server is working on, including those whose client has
// given up (the Go handler never looks at the client). A request's service time, re-evaluated at
// each of its checks with the N of that moment, is
//     D(N) = base_delay                                  if N <= limit
//     D(N) = base_delay * factor^((N - limit) / k)       otherwise        (100 ms, 30, 1.05, 15)
// A request checks every `tick` (50 ms) from its start and finishes at the first check where its
// elapsed time reaches D(N). So a rising N holds requests longer, and requests that started
// together finish together. (Go checks `elapsed > delay`, but each of its timers fires a little
// late, so a check at 2 x 50 ms already sees more than 100 ms: we use >=.)
// The server pauses at outage.start for outage.duration (the seed sends SIGSTOP): nothing runs;
// the checks that fell due meanwhile happen at the resume instant, in the order they fell due
// (their next ticks then count from the resume), and then every request that arrived during the
// pause starts, in arrival order (the kernel held their connections).
//
// Clients. Each of `clients` runs the Go client's loop: wait a think time ~ Exp(think_mean),
// send, wait for the answer or `timeout` (2 s; the request is abandoned but keeps running on the
// server); after a success think again; after a timeout, wait the strategy's backoff and resend.
// One operation is one think-to-success cycle: its retry_controller (the library's) decides the
// backoff. With `quirks` (default on) the exponential backoff grows from the think time just
// waited, as in the Go client, whose `lastDelay` is the think time when the first error comes
// (retry_controller::continue_from); without it, the backoff starts from the policy's initial.
//
// Cost. A request is not woken every 50 ms: the requests waiting for service sit in start order,
// which is also the order in which they will finish (same D, same tick count, for every request
// whose ticks count from its start), and only the oldest has a timer, at the first tick where it
// would finish if N stayed as it is. A request that will finish at its very next tick gets its
// own check event, where N is read again. So a collapsed server with 10^5 requests costs events
// per request, not per request per tick, and the outcome is that of the per-tick rule above.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "model.hpp"

namespace backoff::sim {
namespace {

class outage_recovery final : public model_runner, public model {
 public:
  explicit outage_recovery(config_reader& keys)
      : clients_(static_cast<std::size_t>(keys.integer("workload.clients", 1000, 1, 10'000'000))),
        think_mean_(keys.duration_value("workload.think_mean", std::chrono::seconds{10},
                                        std::chrono::nanoseconds{1})
                        .count()),
        timeout_(keys.duration_value("workload.timeout", std::chrono::seconds{2},
                                     std::chrono::nanoseconds{1})
                     .count()),
        quirks_(keys.boolean("quirks", true)),
        limit_(keys.integer("server.limit", 30, 0, 1'000'000'000)),
        factor_(keys.number("server.factor", 1.05, 1.0, 1e6)),
        k_(keys.number("server.k", 15.0, 1e-9, 1e12)),
        base_delay_(keys.duration_value("server.base_delay", std::chrono::milliseconds{100},
                                        std::chrono::nanoseconds{1})
                        .count()),
        tick_(keys.duration_value("server.tick", std::chrono::milliseconds{50},
                                  std::chrono::nanoseconds{1})
                  .count()),
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

  std::optional<outage_window> outage() const override {
    if (outage_length_ == 0) return std::nullopt;
    return outage_window{outage_start_, outage_start_ + outage_length_};
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      throw scenario_error(strategy.where() + ": strategy " + strategy.name() +
                           ": outage-recovery clients have one request in flight each; an AIMD "
                           "window has nothing to do here");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, recorder& out,
               const progress_fn& progress) override {
    reset(strategy, seed, out);
    engine e;
    self_ = e.add(*this);
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
        out.operation_done(
            {cl.operation, cl.first_attempt, duration_, cl.control->attempts(), op_status::unfinished});
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
      case check_request:
        return on_check(e, ev.payload);
      case wake_server:
        if (!paused_ && ev.payload == wake_generation_) {
          wake_at_ = time_max;
          reconcile(e);
        }
        return;
      case pause:
        paused_ = true;
        paused_at_ = e.now();
        return;
      case resume:
        return on_resume(e);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t {
    wake_client,
    send_now,
    client_timeout,
    check_request,
    wake_server,
    pause,
    resume
  };

  struct client {
    std::optional<retry_controller> control;  // the operation in progress, if any
    std::uint64_t operation = 0;
    time_ns first_attempt = 0;
    time_ns waited = 0;          // the think time before this operation
    std::uint32_t attempt = 0;   // generation of the attempt in flight (stale replies ignored)
    bool awaiting = false;       // an attempt is in flight
  };

  struct request {
    time_ns start = 0;    // when the server started it (its elapsed time counts from here)
    time_ns origin = 0;   // its checks fall at origin + j * tick, j >= 1
    time_ns checked = -1; // its last check; the next one is strictly later
    std::uint32_t client = 0;
    std::uint32_t attempt = 0;
    std::uint32_t generation = 0;  // bumped when the slot is reused or a check is cancelled
    bool ready = false;            // has its own check event
  };

  static std::uint64_t pack(std::uint32_t index, std::uint32_t generation) {
    return static_cast<std::uint64_t>(generation) << 32 | index;
  }

  void reset(const client_strategy& strategy, std::uint64_t seed, recorder& out) {
    strategy_ = &strategy;
    out_ = &out;
    live_ = strategy.instantiate();
    workload_rng_ = random_generator{stream_seed(seed, stream::workload)};
    client_rng_ = random_generator{stream_seed(seed, stream::client)};
    clients_.assign(clients_.size(), client{});
    requests_.clear();
    free_.clear();
    waiting_.clear();
    backlog_.clear();
    n_ = 0;
    operations_ = 0;
    paused_ = false;
    paused_at_ = 0;
    wake_at_ = time_max;
    wake_generation_ = 0;
  }

  // The service time at concurrency n, in ns (infinity once it passes any run length).
  double service_time(std::int64_t n) const {
    if (n <= limit_) return static_cast<double>(base_delay_);
    return static_cast<double>(base_delay_) *
           std::pow(factor_, static_cast<double>(n - limit_) / k_);
  }

  // The first check of r at or after `from` (and after its last check) where its elapsed time
  // reaches `need`; time_max if that is beyond any run.
  time_ns first_check(const request& r, time_ns from, double need) const {
    const time_ns after = std::max(from, r.checked + 1);
    const double by_time = std::ceil(static_cast<double>(after - r.origin) / static_cast<double>(tick_));
    const double by_need =
        std::ceil((need - static_cast<double>(r.origin - r.start)) / static_cast<double>(tick_));
    const double j = std::max({1.0, by_time, by_need});
    const double at = static_cast<double>(r.origin) + j * static_cast<double>(tick_);
    if (!(at < 4e18)) return time_max;
    return r.origin + static_cast<time_ns>(j) * tick_;
  }

  void think(engine& e, std::size_t c) {
    const double u = uniform01(workload_rng_);
    const auto wait = detail::to_duration(-std::log1p(-u) * static_cast<double>(think_mean_));
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
    if (!g.send) return finish(e, c, op_status::failed);
    if (g.wait.count() > 0) return e.schedule_after(g.wait.count(), self_, send_now, c);
    send(e, c);
  }

  void send(engine& e, std::size_t c) {
    client& cl = clients_[c];
    out_->attempt(e.now());
    ++cl.attempt;
    cl.awaiting = true;
    e.schedule_in(timeout_lane_, self_, client_timeout, pack(static_cast<std::uint32_t>(c), cl.attempt));
    std::uint32_t index = 0;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<std::uint32_t>(requests_.size());
      requests_.emplace_back();
    }
    request& r = requests_[index];
    r.client = static_cast<std::uint32_t>(c);
    r.attempt = cl.attempt;
    r.ready = false;
    ++r.generation;
    if (paused_) {
      backlog_.push_back(index);
      out_->load(e.now(), n_, static_cast<std::int64_t>(backlog_.size()));
      return;
    }
    admit(e, index);
    if (waiting_.size() == 1) reconcile(e);  // nobody else waits: it needs the timer
  }

  void admit(engine& e, std::uint32_t index) {
    request& r = requests_[index];
    r.start = r.origin = e.now();
    r.checked = e.now();  // no check at the instant it starts
    ++n_;
    waiting_.push_back(index);
    out_->load(e.now(), n_, static_cast<std::int64_t>(backlog_.size()));
  }

  // After N changed (or the oldest waiting request did): requests that will finish at their
  // next check get their own check event; the oldest of the others gets the server's timer.
  void reconcile(engine& e) {
    const double need = service_time(n_);
    while (!waiting_.empty()) {
      request& r = requests_[waiting_.front()];
      const time_ns next = first_check(r, e.now(), 0.0);
      if (static_cast<double>(next - r.start) < need) break;
      r.ready = true;
      e.schedule_at(next, self_, check_request, pack(waiting_.front(), r.generation));
      waiting_.pop_front();
    }
    if (waiting_.empty()) return;
    const time_ns at = first_check(requests_[waiting_.front()], e.now(), need);
    // An earlier timer stays: it will find the oldest not done yet and look again.
    if (at < wake_at_) {
      wake_at_ = at;
      e.schedule_at(at, self_, wake_server, ++wake_generation_);
    }
  }

  void on_check(engine& e, std::uint64_t payload) {
    const auto index = static_cast<std::uint32_t>(payload);
    request& r = requests_[index];
    if (paused_ || !r.ready || r.generation != static_cast<std::uint32_t>(payload >> 32)) return;
    r.checked = e.now();
    r.ready = false;
    if (static_cast<double>(e.now() - r.start) >= service_time(n_)) {
      complete(e, index);
    } else {
      // N rose since: back among the waiting, by start (it is older than most of them).
      auto it = waiting_.begin();
      while (it != waiting_.end() && requests_[*it].start <= r.start) ++it;
      waiting_.insert(it, index);
    }
    reconcile(e);
  }

  void complete(engine& e, std::uint32_t index) {
    request& r = requests_[index];
    --n_;
    ++r.generation;
    free_.push_back(index);
    out_->load(e.now(), n_, static_cast<std::int64_t>(backlog_.size()));
    client& cl = clients_[r.client];
    if (!cl.awaiting || cl.attempt != r.attempt) return;  // abandoned: nobody reads the answer
    cl.awaiting = false;
    out_->success(e.now());
    (void)cl.control->after(verdict::success(), duration{e.now()}, client_rng_);
    finish(e, r.client, op_status::completed);
  }

  void on_timeout(engine& e, std::uint64_t payload) {
    const auto c = static_cast<std::uint32_t>(payload);
    client& cl = clients_[c];
    if (!cl.awaiting || cl.attempt != static_cast<std::uint32_t>(payload >> 32)) return;
    cl.awaiting = false;
    ++cl.attempt;  // its answer, if it ever comes, is stale
    out_->timeout(e.now());
    const auto d = cl.control->after(verdict::retryable(), duration{e.now()}, client_rng_);
    if (!d.retry) return finish(e, c, op_status::failed);
    e.schedule_after(d.delay.count(), self_, wake_client, c);
  }

  void finish(engine& e, std::size_t c, op_status status) {
    client& cl = clients_[c];
    out_->operation_done({cl.operation, cl.first_attempt, e.now(), cl.control->attempts(), status});
    cl.control.reset();
    think(e, c);
  }

  void on_resume(engine& e) {
    paused_ = false;
    const time_ns now = e.now();
    // Every request in service had a check fall due during the pause: they run now, in the order
    // they fell due, and count their ticks from now on.
    std::vector<std::uint32_t> active(waiting_.begin(), waiting_.end());
    for (std::uint32_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i].ready) active.push_back(i);
    }
    waiting_.clear();
    struct due {
      time_ns at;
      time_ns start;
      std::uint32_t index;
    };
    std::vector<due> deferred;
    std::vector<std::uint32_t> untouched;
    for (const std::uint32_t i : active) {
      request& r = requests_[i];
      r.ready = false;
      ++r.generation;  // any check event it had is void
      const time_ns at = first_check(r, paused_at_, 0.0);
      if (at < now) {
        deferred.push_back({at, r.start, i});
      } else {
        untouched.push_back(i);
      }
    }
    std::sort(deferred.begin(), deferred.end(), [](const due& a, const due& b) {
      return a.at != b.at ? a.at < b.at : a.start != b.start ? a.start < b.start : a.index < b.index;
    });
    std::vector<std::uint32_t> still;
    for (const due& d : deferred) {
      request& r = requests_[d.index];
      r.checked = now;
      if (static_cast<double>(now - r.start) >= service_time(n_)) {
        complete(e, d.index);
      } else {
        r.origin = now;
        still.push_back(d.index);
      }
    }
    still.insert(still.end(), untouched.begin(), untouched.end());
    std::sort(still.begin(), still.end(), [&](std::uint32_t a, std::uint32_t b) {
      return requests_[a].start != requests_[b].start ? requests_[a].start < requests_[b].start
                                                      : a < b;
    });
    waiting_.assign(still.begin(), still.end());
    // Then the connections that queued during the pause are accepted, in arrival order.
    std::vector<std::uint32_t> queued;
    queued.swap(backlog_);
    for (const std::uint32_t i : queued) admit(e, i);
    wake_at_ = time_max;
    ++wake_generation_;
    reconcile(e);
  }

  // Scenario keys.
  std::vector<client> clients_;
  time_ns think_mean_, timeout_;
  bool quirks_;
  std::int64_t limit_;
  double factor_, k_;
  time_ns base_delay_, tick_, outage_start_, outage_length_, duration_, bucket_;

  // One run's state.
  const client_strategy* strategy_ = nullptr;
  recorder* out_ = nullptr;
  client_strategy::live live_;
  random_generator workload_rng_, client_rng_;
  std::vector<request> requests_;
  std::vector<std::uint32_t> free_;
  std::deque<std::uint32_t> waiting_;  // in service, no check event of their own; by start
  std::vector<std::uint32_t> backlog_; // arrived during the pause
  std::int64_t n_ = 0;
  std::uint64_t operations_ = 0;
  bool paused_ = false;
  time_ns paused_at_ = 0;
  time_ns wake_at_ = time_max;
  std::uint64_t wake_generation_ = 0;
  handler_id self_ = 0;
  lane_id timeout_lane_ = 0;
};

const model_registration registration{
    "outage-recovery",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new outage_recovery(keys)); }};

}  // namespace
}  // namespace backoff::sim
