// SPDX-License-Identifier: Apache-2.0
// Validation models `mm1` and `mmc` (one model type, "queueing"; queueing.hpp has the theory and
// the Wq estimator). An M/M/c FIFO queue in nanoseconds:
//   - arrivals form a Poisson process of rate `workload.rate_per_s` (exponential inter-arrival
//     times from the workload stream), the first one an inter-arrival time after 0; none after
//     warm-up + duration;
//   - `server.servers` identical servers; an arrival that finds one idle starts service at once,
//     otherwise it joins the FIFO queue; a departing customer's server takes the queue's head;
//   - service times are exponential with mean `server.mean_service` (server stream);
//   - the run lasts `run.warmup` + `run.duration`; customers still in the system at its end are
//     reported unfinished. Customers that arrive during the warm-up are simulated and reported
//     like the others but left out of the Wq estimate (the queue starts empty, a state far
//     from the stationary one at high load).
// Exponential draws are rounded to the nearest nanosecond (a bias of at most 0.5 ns per draw).
// No customer ever fails, so the only strategy is one with policy "none" and no window, budget
// or throttle: each customer makes exactly one attempt, and no retry_controller is needed.
// The recorder sees every customer: started and attempt at arrival, success and done at
// departure (latency = time in system), and the load (in service, queued) at every change.
//
// Hot path: two event kinds (arrival; departure with the server's index as payload), a ring
// buffer for the queue and a fixed slot per server, so nothing is allocated per event once the
// ring has grown to the longest queue seen. Same-time events run in insertion order (the
// engine's rule); with continuous draws they are rare.
#include "queueing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim {
namespace {

// t(0.975, df) for df = 1..19 (the largest needed with 20 batches).
constexpr double t975[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646,
                           2.3060,  2.2622, 2.2281, 2.2010, 2.1788, 2.1604, 2.1448,
                           2.1314,  2.1199, 2.1098, 2.1009, 2.0930};

class queue_core final : public model {
 public:
  explicit queue_core(const queueing_params& p)
      : servers_(p.servers),
        mean_interarrival_ns_(1e9 / p.rate_per_s),
        mean_service_ns_(static_cast<double>(p.mean_service.count())),
        warmup_(p.warmup.count()),
        end_(p.warmup.count() + p.length.count()) {
    if (!(p.rate_per_s > 0.0) || !std::isfinite(p.rate_per_s)) {
      throw std::invalid_argument("queueing: rate_per_s must be > 0");
    }
    if (p.servers < 1) throw std::invalid_argument("queueing: servers must be >= 1");
    if (p.mean_service.count() <= 0)
      throw std::invalid_argument("queueing: mean_service must be > 0");
    if (p.length.count() <= 0 || p.warmup.count() < 0) {
      throw std::invalid_argument("queueing: duration must be > 0 and warmup >= 0");
    }
  }

  run_info run(engine& e, std::uint64_t seed, report::recorder& out, const progress_fn* progress) {
    out_ = &out;
    arrivals_rng_ = random_generator{stream_seed(seed, stream::workload)};
    service_rng_ = random_generator{stream_seed(seed, stream::server)};
    const auto c = static_cast<std::size_t>(servers_);
    slot_.assign(c, customer{0, idle});
    idle_.clear();
    for (std::size_t k = c; k-- > 0;) idle_.push_back(static_cast<std::uint32_t>(k));
    ring_.assign(64, customer{0, 0});
    head_ = 0;
    queued_ = 0;
    next_id_ = 0;
    chunks_.clear();
    const double expected = static_cast<double>(end_ - warmup_) / mean_interarrival_ns_;
    chunks_.reserve(static_cast<std::size_t>(expected / static_cast<double>(queueing_chunk) * 1.1) +
                    16);
    chunk_sum_ = 0;
    chunk_count_ = 0;

    self_ = e.add(*this);
    e.reserve(c + 2);
    const time_ns first = draw(arrivals_rng_, mean_interarrival_ns_);
    if (first < end_) e.schedule_at(first, self_, arrival);

    constexpr int slices = 100;
    for (int i = 1; i <= slices; ++i) {
      const time_ns t = i == slices ? end_ : end_ / slices * i;
      e.run_until(t);
      if (progress != nullptr && *progress) (*progress)(static_cast<double>(i) / slices);
    }
    // Whoever is still in the system is unfinished.
    for (const customer& s : slot_) {
      if (s.id != idle)
        out.operation_done({s.id, s.arrival, end_, 1, report::op_status::unfinished});
    }
    for (std::size_t i = 0; i < queued_; ++i) {
      const customer& q = ring_[(head_ + i) & (ring_.size() - 1)];
      out.operation_done({q.id, q.arrival, end_, 1, report::op_status::unfinished});
    }
    out_ = nullptr;
    return {end_, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    if (ev.kind == arrival) {
      on_arrival(e);
    } else {
      on_departure(e, static_cast<std::size_t>(ev.payload));
    }
  }

  queueing_estimate estimate() const {
    queueing_estimate r;
    const std::size_t chunks = chunks_.size();
    const std::size_t batches = std::min<std::size_t>(queueing_batches, chunks);
    if (batches == 0) {
      r.ci95_half_width_s = std::numeric_limits<double>::infinity();
      return r;
    }
    const std::size_t per_batch = chunks / batches;
    const double n = static_cast<double>(per_batch * queueing_chunk);
    std::vector<double> means(batches);
    double total = 0;
    for (std::size_t b = 0; b < batches; ++b) {
      double sum = 0;
      for (std::size_t k = b * per_batch; k < (b + 1) * per_batch; ++k) sum += chunks_[k];
      means[b] = sum / n * 1e-9;
      total += means[b];
    }
    const double mean = total / static_cast<double>(batches);
    r.mean_wait_s = mean;
    r.batches = static_cast<std::uint32_t>(batches);
    r.batch_size = per_batch * queueing_chunk;
    r.customers = r.batch_size * batches;
    if (batches < 2) {
      r.ci95_half_width_s = std::numeric_limits<double>::infinity();
      return r;
    }
    double ss = 0;
    for (const double m : means) ss += (m - mean) * (m - mean);
    const double sd = std::sqrt(ss / static_cast<double>(batches - 1));
    r.ci95_half_width_s = t975[batches - 2] * sd / std::sqrt(static_cast<double>(batches));
    return r;
  }

 private:
  enum kind : std::uint32_t { arrival, departure };
  static constexpr std::uint64_t idle = std::numeric_limits<std::uint64_t>::max();

  struct customer {
    time_ns arrival;
    std::uint64_t id;
  };

  static time_ns draw(random_generator& g, double mean_ns) {
    return static_cast<time_ns>(exponential_variate(g, mean_ns) + 0.5);
  }

  std::int64_t busy() const noexcept { return servers_ - static_cast<std::int64_t>(idle_.size()); }

  void on_arrival(engine& e) {
    const time_ns now = e.now();
    const customer c{now, next_id_++};
    out_->operation_started(now);
    out_->attempt(now);
    if (!idle_.empty()) {
      const std::uint32_t k = idle_.back();
      idle_.pop_back();
      start(e, k, c, now);
    } else {
      push(c);
    }
    out_->load(now, busy(), static_cast<std::int64_t>(queued_));
    const time_ns next = now + draw(arrivals_rng_, mean_interarrival_ns_);
    if (next < end_) e.schedule_at(next, self_, arrival);
  }

  void on_departure(engine& e, std::size_t k) {
    const time_ns now = e.now();
    const customer done = slot_[k];
    out_->success(now);
    out_->operation_done({done.id, done.arrival, now, 1, report::op_status::completed});
    if (queued_ > 0) {
      start(e, static_cast<std::uint32_t>(k), pop(), now);
    } else {
      slot_[k].id = idle;
      idle_.push_back(static_cast<std::uint32_t>(k));
    }
    out_->load(now, busy(), static_cast<std::int64_t>(queued_));
  }

  // Customer c starts service on server k: its wait ends now. (c by value, in registers: a
  // reference to a freshly built local makes the 16-byte load wait for two 8-byte stores.)
  void start(engine& e, std::uint32_t k, customer c, time_ns now) {
    slot_[k] = c;
    if (c.arrival >= warmup_) record_wait(now - c.arrival);
    e.schedule_at(now + draw(service_rng_, mean_service_ns_), self_, departure, k);
  }

  void record_wait(time_ns w) {
    chunk_sum_ += static_cast<double>(w);
    if (++chunk_count_ == queueing_chunk) {
      chunks_.push_back(chunk_sum_);
      chunk_sum_ = 0;
      chunk_count_ = 0;
    }
  }

  // The FIFO queue: a ring buffer whose size is a power of two, doubled when full.
  void push(customer c) {
    if (queued_ == ring_.size()) {
      std::vector<customer> bigger(ring_.size() * 2);
      for (std::size_t i = 0; i < queued_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
      ring_ = std::move(bigger);
      head_ = 0;
    }
    ring_[(head_ + queued_) & (ring_.size() - 1)] = c;
    ++queued_;
  }

  customer pop() {
    const customer c = ring_[head_];
    head_ = (head_ + 1) & (ring_.size() - 1);
    --queued_;
    return c;
  }

  std::int64_t servers_;
  double mean_interarrival_ns_, mean_service_ns_;
  time_ns warmup_, end_;

  report::recorder* out_ = nullptr;
  handler_id self_ = 0;
  random_generator arrivals_rng_, service_rng_;
  std::vector<customer> slot_;       // the customer each server serves (id = idle: none)
  std::vector<std::uint32_t> idle_;  // idle servers, a stack
  std::vector<customer> ring_;
  std::size_t head_ = 0, queued_ = 0;
  std::uint64_t next_id_ = 0;
  std::vector<double> chunks_;  // sums of queueing_chunk consecutive waits, in ns
  double chunk_sum_ = 0;
  std::uint64_t chunk_count_ = 0;
};

class queueing_model final : public model_runner {
 public:
  explicit queueing_model(config_reader& keys) {
    params_.rate_per_s = keys.number("workload.rate_per_s", 80.0, 1e-9, 1e12);
    params_.servers = keys.integer("server.servers", 1, 1, 1'000'000);
    params_.mean_service = keys.duration_value("server.mean_service", std::chrono::milliseconds{10},
                                               std::chrono::nanoseconds{1});
    params_.length =
        keys.duration_value("run.duration", std::chrono::hours{4}, std::chrono::nanoseconds{1});
    params_.warmup = keys.duration_value("run.warmup", std::chrono::seconds{60});
    bucket_ =
        keys.duration_value("run.bucket", std::chrono::minutes{1}, std::chrono::nanoseconds{1})
            .count();
    const double load = params_.rate_per_s * to_seconds(params_.mean_service) /
                        static_cast<double>(params_.servers);
    if (!(load < 1.0)) {
      keys.fail("workload.rate_per_s",
                "the load rate_per_s * mean_service / servers must be below 1 (it is " +
                    std::to_string(load) + "): the queue would grow without bound");
    }
  }

  time_ns bucket() const override { return bucket_; }

  memory_need memory() const override {
    // A double per queueing_chunk waits (the batch means), reserved 10 % ahead.
    const time_ns length = params_.length.count() + params_.warmup.count();
    const double arrivals = params_.rate_per_s * static_cast<double>(length) * 1e-9;
    memory_need m;
    m.state_bytes = arrivals * 8.0 * 1.1 / static_cast<double>(queueing_chunk);
    m.state_what = fmt::format("run.duration = {} at workload.rate_per_s = {}",
                               format_duration(params_.length), params_.rate_per_s);
    m.over("run.duration + run.warmup", length, bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (!strategy.retries_at_once() || strategy.has_window() || strategy.has_budget() ||
        strategy.has_throttle()) {
      refuse_strategy(strategy,
                      "the queueing models have no failures to retry; use policy "
                      "\"none\" without window, budget or throttle");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    (void)strategy;
    queue_core core(params_);
    return core.run(e, seed, out, &progress);
  }

 private:
  queueing_params params_;
  time_ns bucket_ = 0;
};

const model_registration queueing_registration{
    "queueing",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new queueing_model(keys)); }};

}  // namespace

queueing_estimate simulate_queue(const queueing_params& params, std::uint64_t seed) {
  queue_core core(params);
  report::recorder_options options;
  options.strategy = "none";
  options.bucket = std::chrono::duration_cast<duration>(std::chrono::minutes{1}).count();
  report::recorder rec(options, nullptr);
  const auto start = std::chrono::steady_clock::now();
  engine e;
  const run_info info = core.run(e, seed, rec, nullptr);
  (void)rec.finish(info.end, info.events);
  const auto wall = std::chrono::steady_clock::now() - start;
  queueing_estimate r = core.estimate();
  r.events = info.events;
  r.wall_s = std::chrono::duration<double>(wall).count();
  return r;
}

}  // namespace backoff::sim
