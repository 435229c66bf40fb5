// SPDX-License-Identifier: Apache-2.0
// Isaev, "Good Retry, Bad Retry: an incident story" (Yandex, 2024), and its simulator
// (jirfag/simulations: simulation_main.py, simulator.py, client.py, server.py,
// retry_strategies.py, circuit_breaker.py): an open stream of one-call clients against a CPU-bound
// server that fails everything for a while; how much each retry strategy multiplies the server's
// work, and how many calls still succeed (docs/models/outage-amplification.md).
//
// Workload (simulator.py _run_parametrized): int(rate * run.duration) operations, the first at 0,
// then Poisson gaps of mean 1 / rate; each is one client making one call (client.py _call_once).
// Each attempt pays a network delay ~ Exp(network.mean) before it reaches the server (the whole
// round trip up front, as client.py's call_server does); the answer is back the instant the
// server finishes. The client gives up on an attempt after its timeout (client.timeout, or one
// of client.timeouts drawn per operation) and the server still does the work.
// Server (server.py CpuBoundServer): `workers` = int(spare * rate * mean service), as Python
// computes it (reported as the field server_workers), in a FIFO pool;
// service = server.service * LogNormal(0, sigma). The outcome is decided when the work ends
// (_base_handle): inside the outage an attempt fails with probability outage.fraction (by call)
// or when its user's id mod 1000 is below fraction * 1000 (by user, fixed for the operation's
// retries); outside it with probability server.failure_rate. With a deadline that propagates,
// the server learns the operation's deadline (its start + the client timeout) and drops late work
// at a fraction of its cost.
// Strategies go through the library: retry_controller with the strategy's policy, max_attempts,
// budget and breaker. jirfag's client breaker gates first tries only (client.py calls
// is_request_allowed once per call) and records every attempt; the library's gates would refuse
// retries too, so with breaker.first_tries_only (default) the model asks the breaker itself
// (first_try_gate below).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "report/outage_load.hpp"

namespace backoff::sim::isaev_model {
namespace {

class outage_amplification final : public model_runner, public model {
 public:
  explicit outage_amplification(config_reader& keys)
      : rate_(keys.number("workload.rate_per_s", 5000.0, 1e-3, 1e8)),
        network_mean_(keys.duration_value("network.mean", std::chrono::milliseconds{5}).count()),
        spare_(keys.number("server.spare", 4.0, 1e-6, 1e6)),
        service_(keys.duration_value("server.service", std::chrono::milliseconds{10},
                                     std::chrono::nanoseconds{1})
                     .count()),
        sigma_(keys.number("server.sigma", 0.25, 0.0, 5.0)),
        failure_rate_(keys.number("server.failure_rate", 0.005, 0.0, 1.0)),
        expired_cost_(keys.number("server.expired_cost", 0.05, 0.0, 1.0)),
        check_cost_(keys.number("server.check_cost", 0.2, 0.0, 1.0)),
        timeout_(keys.duration_value("client.timeout", std::chrono::milliseconds{100},
                                     std::chrono::nanoseconds{1})
                     .count()),
        first_tries_only_(keys.boolean("breaker.first_tries_only", true)),
        outage_start_(keys.duration_value("outage.start", std::chrono::milliseconds{500}).count()),
        outage_length_(
            keys.duration_value("outage.duration", std::chrono::milliseconds{500}).count()),
        fraction_(keys.number("outage.fraction", 1.0, 0.0, 1.0)),
        duration_(keys.duration_value("run.duration", std::chrono::milliseconds{1500},
                                      std::chrono::nanoseconds{1})
                      .count()),
        bucket_(keys.duration_value("run.bucket", std::chrono::milliseconds{20},
                                    std::chrono::nanoseconds{1})
                    .count()),
        limit_(
            keys.duration_value("run.limit", std::chrono::seconds{60}, std::chrono::nanoseconds{1})
                .count()),
        warmup_(keys.duration_value("phase.warmup", std::chrono::milliseconds{100}).count()),
        hold_(keys.duration_value("recovery.hold", std::chrono::milliseconds{100},
                                  std::chrono::nanoseconds{1})
                  .count()) {
    const std::string by = keys.string("outage.by", "call");
    if (by != "call" && by != "user") keys.fail("outage.by", "must be \"call\" or \"user\"");
    by_user_ = by == "user";
    for (const std::string& text : keys.strings("client.timeouts", {})) {
      duration d{0};
      try {
        d = parse_duration(text);
      } catch (const std::exception& e) {
        keys.fail("client.timeouts", e.what());
      }
      if (d.count() <= 0) keys.fail("client.timeouts", "each timeout must be above 0s");
      timeouts_.push_back(d.count());
    }
    if (timeouts_.empty()) timeouts_.push_back(timeout_);
    if (timeouts_.size() > 64) keys.fail("client.timeouts", "at most 64 timeouts");
    const double ops = std::floor(rate_ * static_cast<double>(duration_) * 1e-9);
    if (ops < 1 || ops > 1e8) {
      keys.fail("workload.rate_per_s",
                "times run.duration must give 1 to 10^8 operations, not " + std::to_string(ops));
    }
    operations_ = static_cast<std::uint64_t>(ops);
    // simulation_main.py build_input: cpu_count = int(4 * cpu_count_coef * target_rps *
    // SIMPLE_HANLDER_MEAN_DURATION_FLOAT / TIME_DURATION_SECOND), evaluated left to right in
    // doubles as Python does (spare = 4 * coef is exact: a power of two), the mean in ns being
    // 10^7 * exp(0 + sigma^2 / 2). Only exp's last bit (numpy's against libm's) could differ,
    // and it changes int() only when the product is within ~1e-13 of a whole number.
    const double mean_service = static_cast<double>(service_) * std::exp(0.0 + sigma_ * sigma_ / 2);
    workers_ =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(spare_ * rate_ * mean_service / 1e9));
    if (warmup_ > outage_start_) keys.fail("phase.warmup", "is after outage.start");
    if (outage_start_ + outage_length_ > duration_) {
      keys.fail("outage.duration", "the outage must end by run.duration");
    }
    if (limit_ < duration_) keys.fail("run.limit", "is shorter than run.duration");
  }

  time_ns bucket() const override { return bucket_; }
  time_ns recovery_hold() const override { return hold_; }
  guard_support guards() const override { return {.breaker = true, .deadline = true}; }
  std::optional<report::outage_window> outage() const override {
    if (outage_length_ == 0) return std::nullopt;
    return report::outage_window{outage_start_, outage_start_ + outage_length_};
  }
  memory_need memory() const override {
    memory_need m;
    m.per("workload.rate_per_s x run.duration", static_cast<std::int64_t>(operations_), 256,
          "operations");
    m.over("run.limit", limit_, bucket_);
    return m;
  }

  void check(const client_strategy& s) const override {
    const auto refuse = [&](const std::string& why) {
      throw scenario_error(s.where() + ": strategy " + s.name() + ": " + why);
    };
    if (s.has_window()) refuse("outage-amplification clients make one call each: no window");
    if (s.has_throttle()) refuse("outage-amplification has no throttle (the source has none)");
    if (s.hedge()) refuse("outage-amplification does not hedge (the source does not)");
    if (s.retries_forever_at_zero_delay()) {
      refuse("retries at once without end; give it max_attempts, a budget or a delay");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    reset(strategy, seed, out);
    self_ = e.add(*this);
    lanes_.clear();
    for (const time_ns t : timeouts_) lanes_.push_back(e.add_lane(t));
    per_attempt_lane_ = per_attempt_ > 0 ? e.add_lane(per_attempt_) : 0;
    e.schedule_at(0, self_, op_arrives);
    out.work_label("server requests handled per second / workload.rate_per_s");

    const time_ns slice = 100'000'000;
    time_ns t = 0;
    while ((finished_ < operations_ || t < duration_) && e.pending() > 0 && t < limit_) {
      t = std::min(t + slice, limit_);
      e.run_until(t);
      if (progress) {
        progress(static_cast<double>(finished_) / static_cast<double>(operations_));
      }
    }
    // The server's last work on attempts nobody waits for: it still counts as work.
    while (e.pending() > 0 && e.now() < limit_) e.run_until(std::min(e.now() + slice, limit_));
    const time_ns end = std::max(e.now(), duration_);
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if (!ops_[i].done) {
        out.operation_done({i, ops_[i].first, end, ops_[i].sent, report::op_status::unfinished});
      }
    }
    report_fields(out);
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    switch (ev.kind) {
      case op_arrives:
        return on_op_arrives(e);
      case retry_now:
        return attempt(e, static_cast<std::uint32_t>(ev.payload));
      case at_server:
        return on_at_server(e, ev.payload);
      case work_done:
        return on_work_done(e, ev.payload);
      case client_timeout:
        return on_timeout(e, ev.payload);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t { op_arrives, retry_now, at_server, work_done, client_timeout };
  static constexpr std::uint64_t late_bit = 1ULL << 63;  // the deadline check failed it

  // What every event reads, apart from what only a client's decisions need (`call`): a timeout or
  // a finished request touches 40 bytes, not the controller's.
  struct op {
    time_ns first = 0;
    time_ns deadline = 0;       // propagated: first + client timeout (or total)
    time_ns timeout = 0;        // this operation's client timeout
    std::uint32_t attempt = 0;  // the attempt waited for (stale answers ignored)
    std::uint32_t sent = 0;
    std::uint16_t user = 0;         // user id mod 1000 (outage.by = "user")
    std::uint8_t timeout_lane = 0;  // index into lanes_
    bool waiting = false;
    bool permit_pending = false;
    bool done = false;
  };
  struct call {
    std::optional<retry_controller> control;
    circuit_breaker::permit permit{};  // first_try_gate: the attempt in flight's permit
  };

  static std::uint64_t tag(std::uint32_t i, std::uint32_t attempt) {
    return (static_cast<std::uint64_t>(attempt & 0x7fffffffU) << 32) | i;
  }
  static std::uint32_t index_of(std::uint64_t t) { return static_cast<std::uint32_t>(t); }
  static std::uint32_t attempt_of(std::uint64_t t) {
    return static_cast<std::uint32_t>(t >> 32) & 0x7fffffffU;
  }

  void reset(const client_strategy& strategy, std::uint64_t seed, report::recorder& out) {
    strategy_ = &strategy;
    out_ = &out;
    ops_.clear();
    calls_.clear();  // before live_: a controller may hold a permit of the last run's breaker
    live_ = strategy.instantiate();
    gates_ = live_.gates();
    gate_ = nullptr;
    if (first_tries_only_ && live_.breaker) {
      const breaker_kind k = live_.breaker->config().kind;
      if (k == breaker_kind::rate || k == breaker_kind::consecutive) {
        gate_ = live_.breaker.get();
        gates_.breaker = nullptr;
      }
    }
    const std::optional<deadline_config>& d = strategy.deadline();
    propagate_ = d && d->propagate;
    per_attempt_ = d ? d->per_attempt.count() : 0;
    min_useful_ = d ? d->min_useful : duration{0};
    total_ = d ? d->total.count() : 0;
    workload_rng_ = random_generator{stream_seed(seed, stream::workload)};
    network_rng_ = random_generator{stream_seed(seed, stream::network)};
    server_rng_ = random_generator{stream_seed(seed, stream::server)};
    client_rng_ = random_generator{stream_seed(seed, stream::client)};
    ops_.reserve(operations_);
    calls_.reserve(operations_);  // no reallocation: controllers stay put
    queue_.clear();
    head_ = 0;
    busy_ = 0;
    finished_ = 0;
    tally_.emplace(report::outage_phases{.warmup = warmup_,
                                         .outage = {outage_start_, outage_start_ + outage_length_},
                                         .end = duration_,
                                         .bucket = bucket_,
                                         .base_per_s = rate_});
  }

  // --- clients -------------------------------------------------------------------------------

  void on_op_arrives(engine& e) {
    const auto i = static_cast<std::uint32_t>(ops_.size());
    ops_.emplace_back();
    calls_.emplace_back();
    op& o = ops_.back();
    call& c = calls_.back();
    o.first = e.now();
    if (ops_.size() < operations_) {
      const double gap = exponential_variate(workload_rng_, 1e9 / rate_);
      e.schedule_after(static_cast<time_ns>(gap), self_, op_arrives);
    }
    // simulation_main.py different_client_timeouts_builder: random.choice per client.
    o.timeout_lane = static_cast<std::uint8_t>(
        timeouts_.size() == 1
            ? 0
            : std::min<std::size_t>(static_cast<std::size_t>(uniform01(workload_rng_) *
                                                             static_cast<double>(timeouts_.size())),
                                    timeouts_.size() - 1));
    o.timeout = per_attempt_ > 0 ? per_attempt_ : timeouts_[o.timeout_lane];
    o.user =
        static_cast<std::uint16_t>(std::min(999.0, std::floor(uniform01(workload_rng_) * 1000)));
    o.deadline = o.first + (total_ > 0 ? total_ : o.timeout);
    out_->operation_started(e.now());
    c.control.emplace(strategy_->policy(), duration{e.now()}, gates_);
    attempt(e, i);
  }

  void attempt(engine& e, std::uint32_t i) {
    op& o = ops_[i];
    call& c = calls_[i];
    const auto now = [&] { return duration{e.now()}; };
    if (detail::too_little_time(*c.control, min_useful_, now)) {
      return finish(e, i, outcome::deadline_exceeded);
    }
    const auto g = c.control->before_attempt(now(), client_rng_);
    if (!g.send) return finish(e, i, g.stop);
    if (gate_ != nullptr) {
      // first_try_gate, asked only once nothing else can stop the attempt, so that every permit
      // taken is recorded (a half-open trial never taken back would hold the breaker half-open).
      // client.py: a call the breaker refuses fails at once, with no attempt. A retry is never
      // refused (client.py asks only before the first try); an allowed one is recorded, one the
      // breaker would refuse goes unrecorded (jirfag's breaker clears its window on every
      // transition, so its results while open never count).
      const bool first = o.attempt == 0;
      c.permit = gate_->try_acquire(now(), first);
      if (first && !c.permit) return finish(e, i, outcome::breaker_open);
      o.permit_pending = c.permit.allowed;
    }
    o.attempt = o.attempt + 1;
    ++o.sent;
    o.waiting = true;
    out_->attempt(e.now());
    const std::uint64_t t = tag(i, o.attempt);
    time_ns limit = o.timeout;
    if (c.control->has_deadline() && !c.control->at_deadline()) {
      limit = std::clamp<time_ns>(c.control->deadline().count() - e.now(), 1, limit);
    }
    if (limit != o.timeout) {
      e.schedule_after(limit, self_, client_timeout, t);
    } else {
      e.schedule_in(per_attempt_ > 0 ? per_attempt_lane_ : lanes_[o.timeout_lane], self_,
                    client_timeout, t);
    }
    const double hop = exponential_variate(network_rng_, static_cast<double>(network_mean_));
    e.schedule_after(static_cast<time_ns>(hop), self_, at_server, t);
  }

  void on_timeout(engine& e, std::uint64_t t) {
    op& o = ops_[index_of(t)];
    if (o.done || !o.waiting || attempt_of(t) != (o.attempt & 0x7fffffffU)) return;
    out_->timeout(e.now());
    answered(e, index_of(t), false);
  }

  void answered(engine& e, std::uint32_t i, bool ok) {
    op& o = ops_[i];
    call& c = calls_[i];
    o.waiting = false;
    const duration now{e.now()};
    if (o.permit_pending) {
      gate_->record(now, c.permit, !ok);
      o.permit_pending = false;
    }
    const auto d =
        c.control->after(ok ? verdict::success() : verdict::retryable(), now, client_rng_);
    if (ok) return finish(e, i, outcome::succeeded);
    if (!d.retry || detail::too_little_time(
                        *c.control, min_useful_, [&] { return now; }, d.delay)) {
      return finish(e, i, d.retry ? outcome::deadline_exceeded : d.stop);
    }
    if (d.delay.count() == 0) return attempt(e, i);
    e.schedule_after(d.delay.count(), self_, retry_now, i);
  }

  void finish(engine& e, std::uint32_t i, outcome why) {
    op& o = ops_[i];
    if (o.permit_pending) {
      // Defensive: no path ends a call with a permit out today, but a leaked half-open trial
      // would keep the breaker half-open for the rest of the run.
      gate_->release(calls_[i].permit);
      o.permit_pending = false;
    }
    o.done = true;
    ++finished_;
    out_->operation_done({i, o.first, e.now(), o.sent, report::status_of(why), why});
    // client.py: a call's result counts at the time it ends (the client uptime panel).
    tally_->ended(e.now(), why == outcome::succeeded);
    calls_[i].control.reset();
  }

  // --- server --------------------------------------------------------------------------------

  void on_at_server(engine& e, std::uint64_t t) {
    if (busy_ < workers_) return start(e, t);
    queue_.push_back(t);
    out_->load(e.now(), busy_, static_cast<std::int64_t>(queue_.size() - head_));
  }

  void start(engine& e, std::uint64_t t) {
    ++busy_;
    const double normal =
        static_cast<double>(service_) * std::exp(sigma_ * standard_normal(server_rng_));
    auto work = static_cast<time_ns>(normal);
    if (propagate_) {
      // server.py _base_handle: an expired request is dropped after a twentieth of its work; one
      // that will expire during it stops at the deadline plus a fifth (checkpoints), both failed.
      const time_ns rest = ops_[index_of(t)].deadline - e.now();
      if (rest < 0) {
        work = static_cast<time_ns>(normal * expired_cost_);
        t |= late_bit;
      } else if (rest < work) {
        work = std::min(rest + static_cast<time_ns>(normal * check_cost_), work);
        t |= late_bit;
      }
    }
    e.schedule_after(work, self_, work_done, t);
    out_->load(e.now(), busy_, static_cast<std::int64_t>(queue_.size() - head_));
  }

  void on_work_done(engine& e, std::uint64_t t) {
    --busy_;
    count_work(e.now());
    const bool late = (t & late_bit) != 0;
    t &= ~late_bit;
    const std::uint32_t i = index_of(t);
    const bool ok = !late && !fails(e.now(), ops_[i]);
    if (head_ < queue_.size()) {
      const std::uint64_t next = queue_[head_++];
      if (head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
      } else if (head_ >= 4096 && head_ * 2 >= queue_.size()) {
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
      start(e, next);
    } else {
      out_->load(e.now(), busy_, 0);
    }
    op& o = ops_[i];
    if (o.done || !o.waiting || attempt_of(t) != (o.attempt & 0x7fffffffU)) return;
    if (ok) {
      out_->success(e.now());
    } else {
      out_->error(e.now());
    }
    answered(e, i, ok);
  }

  // server.py: the injected failure applies to work that ends inside the outage (both ends
  // included); its probability replaces the base failure rate there.
  bool fails(time_ns now, const op& o) {
    if (outage_length_ > 0 && now >= outage_start_ && now <= outage_start_ + outage_length_) {
      if (by_user_) return static_cast<double>(o.user) < fraction_ * 1000.0;
      return uniform01(server_rng_) < fraction_;
    }
    return uniform01(server_rng_) < failure_rate_;
  }

  // --- what the run reports ------------------------------------------------------------------

  void count_work(time_ns t) {
    out_->work(t, 1.0 / rate_);
    tally_->work(t);
  }

  void report_fields(report::recorder& out) const {
    tally_->report(out);
    // The real spare is server_workers / (rate * mean service): int() makes it depend on the rate.
    out.field("server_workers", static_cast<double>(workers_));
  }

  // Scenario keys.
  double rate_;
  time_ns network_mean_;
  double spare_;
  time_ns service_;
  double sigma_, failure_rate_, expired_cost_, check_cost_;
  time_ns timeout_;
  bool first_tries_only_;
  time_ns outage_start_, outage_length_;
  double fraction_;
  time_ns duration_, bucket_, limit_, warmup_, hold_;
  bool by_user_ = false;
  std::vector<time_ns> timeouts_;
  std::uint64_t operations_ = 0;
  std::int64_t workers_ = 1;

  // One run's state. live_ before ops_: controllers may hold permits of its breaker.
  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  client_strategy::live live_;
  retry_gates gates_;
  circuit_breaker* gate_ = nullptr;  // first_try_gate: the breaker the model asks itself
  bool propagate_ = false;
  time_ns per_attempt_ = 0, total_ = 0;
  duration min_useful_{0};
  random_generator workload_rng_, network_rng_, server_rng_, client_rng_;
  std::vector<op> ops_;
  std::vector<call> calls_;
  std::vector<std::uint64_t> queue_;  // FIFO from head_
  std::size_t head_ = 0;
  std::int64_t busy_ = 0;
  std::uint64_t finished_ = 0;
  std::optional<report::outage_load> tally_;  // load_amplification, success_by_phase
  handler_id self_ = 0;
  std::vector<lane_id> lanes_;
  lane_id per_attempt_lane_ = 0;
};

const model_registration registration{
    "outage-amplification", [](config_reader& keys) {
      return std::unique_ptr<model_runner>(new outage_amplification(keys));
    }};

}  // namespace
}  // namespace backoff::sim::isaev_model
