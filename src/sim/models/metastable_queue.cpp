// SPDX-License-Identifier: Apache-2.0
// Metafor's canonical metastable system (mpi-sws-rse/metafor, README "Example 1"; Bronson et al.,
// HotOS'21; Huang et al., OSDI'22): one server, an M/M/1 queue with a bounded waiting room, and
// open-loop clients that time out and retry (docs/models/metastable-queue.md has every rule with
// the metafor function it comes from, and the decisions where we differ).
//
// Workload (metafor simulator/client.py OpenLoopClientWithTimeout.generate): requests arrive as a
// Poisson process of rate workload.rate_per_s (9.5); during the trigger spike
// [spike.start, + spike.duration) the rate is spike.factor times that (metafor's rho_fault).
// Each request is one operation whose retry_controller (the strategy's policy, max_attempts and
// gates) decides whether and when to resend after a timeout.
// Server (simulator/server.py Server.offer and job_done): server.threads (1) threads serve in
// FIFO order, service ~ Exp(server.rate_per_s = 10 per second); an attempt that finds every thread
// busy waits in a queue of at most server.queue (100) attempts, or is dropped when it is full
// (the client is not told: it learns by its timeout). Abandoned attempts stay queued and are
// served anyway (no cancellation): the wasted work that sustains the overload.
// Clients (client.py on_timeout): an attempt not answered within workload.timeout (3 s) is
// abandoned (a later answer is ignored) and, if the controller allows, the request is sent again
// after the policy's delay (metafor: at once, up to 4 retries = max_attempts 5).
// Outage (optional trigger): the server stops for [outage.start, + outage.duration); the request in
// service resumes where it was.
#include "metastable_queue.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim::metastable_queue_model {

std::vector<double> timeout_tail(const chain_params& p) {
  // ctmc.py _tail_prob_computer: Chebyshev's bound on P(wait > T) for a wait that is the sum of
  // n exponential services at rate min(n, c) mu (metafor's over-approximation).
  std::vector<double> tail(static_cast<std::size_t>(std::max(p.queue_states, 1)), 0.0);
  for (int n = 1; n < p.queue_states; ++n) {
    const double rate = std::min(n, p.threads) * p.mu;
    const double mean = n / rate;
    const double sigma = std::sqrt(n / (rate * rate));
    const double margin = p.timeout_s - mean;
    tail[static_cast<std::size_t>(n)] = margin > sigma ? (sigma / margin) * (sigma / margin) : 1.0;
  }
  return tail;
}

namespace {

// An off-diagonal rate matrix kept within a band: |i - j| <= band.
class band_matrix {
 public:
  band_matrix(std::size_t size, std::size_t band)
      : size_(size), band_(band), width_(2 * band + 1), a_(size * (2 * band + 1), 0.0) {}
  double& at(std::size_t i, std::size_t j) { return a_[i * width_ + (j + band_ - i)]; }
  std::size_t size() const { return size_; }
  std::size_t band() const { return band_; }

 private:
  std::size_t size_, band_, width_;
  std::vector<double> a_;
};

band_matrix generator(const chain_params& p) {
  const int q = p.queue_states, o = p.orbit_states;
  band_matrix m(static_cast<std::size_t>(q) * static_cast<std::size_t>(o),
                static_cast<std::size_t>(q) + 1);
  const std::vector<double> tail = timeout_tail(p);
  const double retry = p.retries / ((p.retries + 1.0) * p.timeout_s);
  const double give_up = 1.0 / ((p.retries + 1.0) * p.timeout_s);
  const auto add = [&](int n, int r, int n2, int r2, double rate) {
    if (rate > 0) m.at(state(p, n, r), state(p, n2, r2)) += rate;
  };
  for (int r = 0; r < o; ++r) {
    for (int n = 0; n < q; ++n) {
      const double t = tail[static_cast<std::size_t>(n)];
      if (n == 0) {  // generator_mat_exact: "queue is empty"
        add(n, r, n + 1, r, p.lambda);
        if (r > 0) {
          add(n, r, n, r - 1, r * give_up);
          add(n, r, n + 1, r - 1, r * retry);
        }
      } else if (n == q - 1) {  // "queue is full", retry_when_full = false
        add(n, r, n - 1, r, std::min(q, p.threads) * p.mu);
        if (r > 0) add(n, r, n, r - 1, r * (give_up + retry));
      } else {
        if (r < o - 1) add(n, r, n + 1, r + 1, p.alpha * p.lambda * t);
        add(n, r, n + 1, r, p.lambda + r * retry * t);
        if (r > 0) {
          add(n, r, n + 1, r - 1, r * retry * (1 - t));
          add(n, r, n, r - 1, r * give_up);
        }
        add(n, r, n - 1, r, std::min(n, p.threads) * p.mu);
      }
    }
  }
  return m;
}

}  // namespace

std::vector<double> stationary(const chain_params& p) {
  band_matrix m = generator(p);
  const std::size_t size = m.size(), band = m.band();
  // Grassmann-Taksar-Heyman: censor the chain on {0 .. k - 1}, k from the top down.
  for (std::size_t k = size; k-- > 1;) {
    const std::size_t lo = k > band ? k - band : 0;
    double out = 0;
    for (std::size_t j = lo; j < k; ++j) out += m.at(k, j);
    if (!(out > 0)) continue;  // cannot happen in metafor's chain: every state can step down
    for (std::size_t i = lo; i < k; ++i) {
      double& ik = m.at(i, k);
      if (ik == 0) continue;
      ik /= out;
      for (std::size_t j = lo; j < k; ++j) m.at(i, j) += ik * m.at(k, j);
    }
  }
  std::vector<double> pi(size, 0.0);
  pi[0] = 1;
  double total = 1;
  for (std::size_t j = 1; j < size; ++j) {
    double v = 0;
    for (std::size_t i = j > band ? j - band : 0; i < j; ++i) v += pi[i] * m.at(i, j);
    pi[j] = v;
    total += v;
  }
  for (double& v : pi) v /= total;
  return pi;
}

double mean_time_to_reach(const chain_params& p, int level) {
  // ctmc.py hitting_time_average_us: Q u = -1 off the target, u = 0 on it; solved by banded
  // Gaussian elimination without pivoting (-Q off the target is a diagonally dominant M-matrix).
  band_matrix m = generator(p);
  const std::size_t size = m.size(), band = m.band();
  std::vector<double> b(size, -1.0);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t lo = i > band ? i - band : 0, hi = std::min(size - 1, i + band);
    const bool target = static_cast<int>(i % static_cast<std::size_t>(p.queue_states)) >= level;
    double out = 0;
    for (std::size_t j = lo; j <= hi; ++j) {
      if (j != i) out += m.at(i, j);
    }
    for (std::size_t j = lo; j <= hi; ++j) {
      if (target) m.at(i, j) = 0;
    }
    m.at(i, i) = target ? 1.0 : -out;
    if (target) b[i] = 0;
  }
  for (std::size_t k = 0; k < size; ++k) {
    const double pivot = m.at(k, k);
    const std::size_t hi = std::min(size - 1, k + band);
    for (std::size_t i = k + 1; i <= hi; ++i) {
      const double f = m.at(i, k) / pivot;
      if (f == 0) continue;
      for (std::size_t j = k; j <= hi; ++j) m.at(i, j) -= f * m.at(k, j);
      b[i] -= f * b[k];
    }
  }
  for (std::size_t k = size; k-- > 0;) {
    double v = b[k];
    for (std::size_t j = k + 1; j <= std::min(size - 1, k + band); ++j) v -= m.at(k, j) * b[j];
    b[k] = v / m.at(k, k);
  }
  return b[state(p, 0, 0)];
}

double mass_at_or_above(const chain_params& p, const std::vector<double>& pi, int level) {
  double sum = 0;
  for (int r = 0; r < p.orbit_states; ++r) {
    for (int n = std::max(level, 0); n < p.queue_states; ++n) sum += pi[state(p, n, r)];
  }
  return sum;
}

double mean_queue(const chain_params& p, const std::vector<double>& pi) {
  double sum = 0;
  for (int r = 0; r < p.orbit_states; ++r) {
    for (int n = 0; n < p.queue_states; ++n) sum += n * pi[state(p, n, r)];
  }
  return sum;
}

namespace {

class metastable_queue final : public model_runner, public model {
 public:
  explicit metastable_queue(config_reader& keys)
      : rate_(keys.number("workload.rate_per_s", 9.5, 1e-6, 1e9)),
        timeout_(keys.duration_value("workload.timeout", std::chrono::seconds{3},
                                     std::chrono::nanoseconds{1})
                     .count()),
        service_rate_(keys.number("server.rate_per_s", 10.0, 1e-6, 1e9)),
        threads_(keys.integer("server.threads", 1, 1, 1'000'000)),
        capacity_(keys.integer("server.queue", 100, 0, 100'000'000)),
        spike_start_(keys.duration_value("spike.start", std::chrono::seconds{60}).count()),
        spike_length_(keys.duration_value("spike.duration", std::chrono::seconds{0}).count()),
        spike_factor_(keys.number("spike.factor", 10.0, 0.0, 1e6)),
        outage_start_(keys.duration_value("outage.start", std::chrono::seconds{60}).count()),
        outage_length_(keys.duration_value("outage.duration", std::chrono::seconds{0}).count()),
        duration_(keys.duration_value("run.duration", std::chrono::seconds{300},
                                      std::chrono::nanoseconds{1})
                      .count()),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{10}, std::chrono::nanoseconds{1})
                .count()),
        hold_(keys.duration_value("recovery.hold", std::chrono::seconds{20},
                                  std::chrono::nanoseconds{1})
                  .count()) {
    if (spike_length_ > 0 && spike_start_ >= duration_) {
      keys.fail("spike.start", "is at or after the end of the run (run.duration)");
    }
    if (outage_length_ > 0 && outage_start_ >= duration_) {
      keys.fail("outage.start", "is at or after the end of the run (run.duration)");
    }
    if (rate_ * spike_factor_ > 1e9) {
      keys.fail("spike.factor", "makes the spike's rate over 1e9 arrivals per second");
    }
  }

  time_ns bucket() const override { return bucket_; }
  time_ns recovery_hold() const override { return hold_; }
  // A breaker acts through the retry controller's gates, which every attempt goes through.
  guard_support guards() const override { return {.breaker = true}; }
  memory_need memory() const override {
    memory_need m;
    // Requests in flight: those of one timeout at the spike's rate, times the attempts a request
    // can make is not bounded by the model, so count the queue and a timeout's arrivals.
    const double peak_rate = rate_ * std::max(1.0, spike_length_ > 0 ? spike_factor_ : 1.0);
    const auto in_flight = static_cast<std::int64_t>(
        std::min(1e12, peak_rate * static_cast<double>(timeout_) * 1e-9 * 2 + 64));
    m.per("workload.rate_per_s", in_flight + capacity_, 96, "requests in flight");
    m.over("run.duration", duration_, bucket_);
    return m;
  }
  // The trigger window: recovery_s and the charts measure from its end. An outage if there is
  // one, else the spike.
  std::optional<report::outage_window> outage() const override {
    if (outage_length_ > 0)
      return report::outage_window{outage_start_, outage_start_ + outage_length_};
    if (spike_length_ > 0) return report::outage_window{spike_start_, spike_start_ + spike_length_};
    return std::nullopt;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      refuse_strategy(strategy,
                      "metastable-queue clients are open-loop, one request each; an AIMD "
                      "window has nothing to do here");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    reset(strategy, seed, out);
    self_ = e.add(*this);
    timeout_lane_ = e.add_lane(timeout_);
    out.work_label("requests served");
    if (spike_length_ > 0) {
      e.schedule_at(spike_start_, self_, rate_change, 1);
      e.schedule_at(std::min(spike_start_ + spike_length_, duration_), self_, rate_change, 0);
    }
    if (outage_length_ > 0) {
      e.schedule_at(outage_start_, self_, pause);
      e.schedule_at(std::min(outage_start_ + outage_length_, duration_), self_, resume);
    }
    next_arrival(e);

    constexpr int slices = 20;
    for (int i = 1; i <= slices; ++i) {
      const time_ns t = i == slices ? duration_ : duration_ / slices * i;
      e.run_until(t);
      if (progress) progress(static_cast<double>(i) / slices);
    }
    for (std::uint32_t i = 0; i < slots_; ++i) {
      request& r = slot_at(i);
      if (r.control) {
        out.operation_done({r.operation, r.first_attempt, duration_, r.control->attempts(),
                            report::op_status::unfinished});
      }
    }
    const double served = static_cast<double>(served_);
    out.field(
        "stale_work_fraction",
        served > 0 ? std::optional<double>(static_cast<double>(stale_) / served) : std::nullopt);
    out.field("dropped_attempts", static_cast<double>(dropped_));
    return {duration_, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    switch (ev.kind) {
      case arrival:
        if (ev.payload == arrival_generation_) on_arrival(e);
        return;
      case departure:
        return on_departure(e, ev.payload);
      case attempt_timeout:
        return on_timeout(e, ev.payload);
      case send_later:
        return send(e, static_cast<std::uint32_t>(ev.payload));
      case retry_wake:
        return try_send(e, static_cast<std::uint32_t>(ev.payload));
      case rate_change:
        spiking_ = ev.payload != 0;
        // Poisson arrivals are memoryless: restarting the gap at the new rate is exact.
        ++arrival_generation_;
        return next_arrival(e);
      case pause:
        return on_pause(e);
      case resume:
        return on_resume(e);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t {
    arrival,
    departure,
    attempt_timeout,
    send_later,
    retry_wake,
    rate_change,
    pause,
    resume
  };

  struct request {
    std::optional<retry_controller> control;  // empty: the slot is free
    std::uint64_t operation = 0;
    time_ns first_attempt = 0;
    std::uint32_t attempt = 0;  // generation of the attempt the client waits for
    bool awaiting = false;
  };
  struct thread {
    std::uint64_t tag = 0;  // the attempt in service
    time_ns due = 0;        // when its service ends (left to go, while paused)
    std::uint32_t generation = 0;
    bool busy = false;
  };

  static std::uint64_t pack(std::uint32_t slot, std::uint32_t generation) {
    return static_cast<std::uint64_t>(generation) << 32 | slot;
  }

  void reset(const client_strategy& strategy, std::uint64_t seed, report::recorder& out) {
    strategy_ = &strategy;
    out_ = &out;
    // The previous run's controllers first: one with an attempt in flight releases its breaker
    // permit into the breaker of that run.
    chunks_.clear();
    slots_ = 0;
    free_.clear();
    live_ = strategy.instantiate();
    workload_rng_ = random_generator{stream_seed(seed, stream::workload)};
    server_rng_ = random_generator{stream_seed(seed, stream::server)};
    client_rng_ = random_generator{stream_seed(seed, stream::client)};
    threads_state_.assign(static_cast<std::size_t>(threads_), thread{});
    idle_threads_ = threads_;
    queue_.assign(std::bit_ceil(static_cast<std::size_t>(capacity_) + 1), 0);
    head_ = 0;
    queued_ = 0;
    operations_ = served_ = stale_ = dropped_ = 0;
    spiking_ = paused_ = false;
    arrival_generation_ = 0;
  }

  void record_load(engine& e) {
    out_->load(e.now(), threads_ - idle_threads_, static_cast<std::int64_t>(queued_));
  }

  void next_arrival(engine& e) {
    const double rate = spiking_ ? rate_ * spike_factor_ : rate_;
    if (!(rate > 0)) return;
    const double gap = exponential_variate(workload_rng_, 1e9 / rate);
    const double at = static_cast<double>(e.now()) + std::max(1.0, gap + 0.5);
    if (at >= static_cast<double>(duration_)) return;
    e.schedule_at(static_cast<time_ns>(at), self_, arrival, arrival_generation_);
  }

  void on_arrival(engine& e) {
    next_arrival(e);
    std::uint32_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = slots_++;
      if ((slot >> chunk_bits) >= chunks_.size()) {
        chunks_.push_back(std::make_unique<request[]>(std::size_t{1} << chunk_bits));
      }
    }
    request& r = slot_at(slot);
    r.control.emplace(strategy_->policy(), duration{e.now()}, live_.gates());
    r.operation = operations_++;
    r.first_attempt = e.now();
    out_->operation_started(e.now());
    try_send(e, slot);
  }

  // The controller's gate before an attempt (a breaker may refuse it), then the attempt.
  void try_send(engine& e, std::uint32_t slot) {
    request& r = slot_at(slot);
    const auto g = r.control->before_attempt(duration{e.now()}, client_rng_);
    if (!g.send) return finish(e, slot, g.stop);
    if (g.wait.count() > 0) return e.schedule_after(g.wait.count(), self_, send_later, slot);
    send(e, slot);
  }

  void send(engine& e, std::uint32_t slot) {
    request& r = slot_at(slot);
    out_->attempt(e.now());
    ++r.attempt;
    r.awaiting = true;
    const std::uint64_t tag = pack(slot, r.attempt);
    e.schedule_in(timeout_lane_, self_, attempt_timeout, tag);
    offer(e, tag);
  }

  // server.py Server.offer: a free thread, else the queue, else dropped.
  void offer(engine& e, std::uint64_t tag) {
    if (idle_threads_ > 0 && !paused_) {
      start_service(e, tag);
    } else if (queued_ < static_cast<std::size_t>(capacity_)) {
      queue_[(head_ + queued_) & (queue_.size() - 1)] = tag;
      ++queued_;
    } else {
      ++dropped_;  // nothing changed: no load to record
      return;
    }
    record_load(e);
  }

  void start_service(engine& e, std::uint64_t tag) {
    std::size_t k = 0;
    while (threads_state_[k].busy) ++k;
    thread& t = threads_state_[k];
    t.busy = true;
    t.tag = tag;
    --idle_threads_;
    const double s = exponential_variate(server_rng_, 1e9 / service_rate_);
    t.due = e.now() + static_cast<time_ns>(std::max(1.0, s + 0.5));  // whole ns, at least 1
    e.schedule_at(t.due, self_, departure, pack(static_cast<std::uint32_t>(k), t.generation));
  }

  void on_departure(engine& e, std::uint64_t payload) {
    thread& t = threads_state_[static_cast<std::uint32_t>(payload)];
    if (!t.busy || t.generation != static_cast<std::uint32_t>(payload >> 32)) return;
    t.busy = false;
    ++idle_threads_;
    ++served_;
    out_->work(e.now(), 1.0);
    const auto slot = static_cast<std::uint32_t>(t.tag);
    request& r = slot_at(slot);
    if (r.control && r.awaiting && r.attempt == static_cast<std::uint32_t>(t.tag >> 32)) {
      r.awaiting = false;
      out_->success(e.now());
      (void)r.control->after(verdict::success(), duration{e.now()}, client_rng_);
      finish(e, slot, outcome::succeeded);
    } else {
      ++stale_;  // its client gave up on it: the work was wasted
    }
    if (queued_ > 0) {  // server.py _drain_queue: the thread takes the queue's head
      const std::uint64_t next = queue_[head_];
      head_ = (head_ + 1) & (queue_.size() - 1);
      --queued_;
      start_service(e, next);
    }
    record_load(e);
  }

  void on_timeout(engine& e, std::uint64_t tag) {
    const auto slot = static_cast<std::uint32_t>(tag);
    request& r = slot_at(slot);
    if (!r.control || !r.awaiting || r.attempt != static_cast<std::uint32_t>(tag >> 32)) return;
    r.awaiting = false;
    out_->timeout(e.now());
    verdict timed_out = verdict::retryable();
    timed_out.timeout = true;  // a retry quota charges its timeout cost
    const auto d = r.control->after(timed_out, duration{e.now()}, client_rng_);
    if (!d.retry) return finish(e, slot, d.stop);
    if (d.delay.count() > 0) {
      return e.schedule_after(d.delay.count(), self_, retry_wake, slot);
    }
    try_send(e, slot);
  }

  void finish(engine& e, std::uint32_t slot, outcome why) {
    request& r = slot_at(slot);
    out_->operation_done({r.operation, r.first_attempt, e.now(), r.control->attempts(),
                          report::status_of(why), why});
    r.control.reset();
    r.awaiting = false;
    ++r.attempt;  // any answer still on its way is stale
    free_.push_back(slot);
  }

  void on_pause(engine& e) {
    paused_ = true;
    for (thread& t : threads_state_) {
      if (!t.busy) continue;
      t.due -= e.now();  // left to serve
      ++t.generation;    // its departure event is now stale
    }
    record_load(e);
  }

  void on_resume(engine& e) {
    paused_ = false;
    for (std::size_t k = 0; k < threads_state_.size(); ++k) {
      thread& t = threads_state_[k];
      if (!t.busy) continue;
      t.due += e.now();
      e.schedule_at(t.due, self_, departure, pack(static_cast<std::uint32_t>(k), t.generation));
    }
    while (idle_threads_ > 0 && queued_ > 0) {
      const std::uint64_t next = queue_[head_];
      head_ = (head_ + 1) & (queue_.size() - 1);
      --queued_;
      start_service(e, next);
    }
    record_load(e);
  }

  // Before chunks_, so that it outlives their controllers (which may hold a breaker permit).
  client_strategy::live live_;

  // Scenario keys.
  double rate_;
  time_ns timeout_;
  double service_rate_;
  std::int64_t threads_, capacity_;
  time_ns spike_start_, spike_length_;
  double spike_factor_;
  time_ns outage_start_, outage_length_, duration_, bucket_, hold_;

  // One run's state.
  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  random_generator workload_rng_, server_rng_, client_rng_;
  // Requests in fixed chunks: a controller never moves once made (it may hold a breaker permit),
  // and a slot's address is two shifts away (a deque's indexing was a tenth of a run).
  static constexpr unsigned chunk_bits = 10;
  std::vector<std::unique_ptr<request[]>> chunks_;
  std::uint32_t slots_ = 0;  // slots made so far
  request& slot_at(std::uint32_t slot) {
    return chunks_[slot >> chunk_bits][slot & ((1U << chunk_bits) - 1)];
  }
  std::vector<std::uint32_t> free_;
  std::vector<thread> threads_state_;
  std::int64_t idle_threads_ = 0;
  std::vector<std::uint64_t> queue_;  // ring buffer of attempt tags, a power of two long
  std::size_t head_ = 0, queued_ = 0;
  std::uint64_t operations_ = 0, served_ = 0, stale_ = 0, dropped_ = 0;
  bool spiking_ = false, paused_ = false;
  std::uint64_t arrival_generation_ = 0;
  handler_id self_ = 0;
  lane_id timeout_lane_ = 0;
};

const model_registration metastable_queue_registration{
    "metastable-queue",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new metastable_queue(keys)); }};

}  // namespace
}  // namespace backoff::sim::metastable_queue_model
