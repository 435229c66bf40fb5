// SPDX-License-Identifier: Apache-2.0
// ThomWright, "Retries upon retries" (2022) and its model (ThomWright/retry-model,
// retry-model.ts): services called in series, the deepest dependency failing transiently, and
// retries at every layer or only some, with what each choice does to the calls reaching the
// deepest dependency (at most (1 + retries)^depth per request). docs/models/retry-layers.md has
// every rule with its source.
//
// Layers: 1 .. depth are servers; layer k's client calls layer k + 1 through its own
// retry_controller (the library's), with its own live budget/throttle/breaker; layer depth + 1 is
// the deepest dependency, which answers after its service time and is the only one that fails.
// Its failure rule is the code's create_service().request: a first attempt of the calling loop
// fails with probability failure_rate; a retry with failure_rate * (1 - min(t / recovery, 1)),
// where t is the calling loop's time since its first attempt (with quirks, the sum of its backoff
// delays only, as the code measures it). Every layer does its own work (Erlang) once its loop
// is over, before it answers upward; a layer called as a retry does a uniform fraction of it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim::retry_layers_model {
namespace {

constexpr std::uint32_t no_record = UINT32_MAX;

class retry_layers final : public model_runner, public model {
 public:
  explicit retry_layers(config_reader& keys)
      // At most 6: retrying at every layer sends up to max_attempts^depth calls per request
      // to the dependency (4^6 = 4096 with the source's 3 retries; 4^10 would be hours).
      : depth_(static_cast<int>(keys.integer("topology.depth", 3, 1, 6))),
        requests_(keys.integer("workload.requests", 10'000, 1, 100'000'000)),
        rate_per_s_(keys.number("workload.rate_per_s", 100.0, 1e-6, 1e9)),
        failure_rate_(keys.number("failure_rate", 0.9, 0.0, 1.0)),
        recovery_(keys.duration_value("failure.recovery", std::chrono::seconds{2},
                                      std::chrono::nanoseconds{1})
                      .count()),
        service_mean_(keys.duration_value("service.mean", std::chrono::milliseconds{5},
                                          std::chrono::nanoseconds{1})
                          .count()),
        erlang_k_(static_cast<int>(keys.integer("service.erlang_k", 5, 1, 64))),
        retry_skips_work_(keys.boolean("service.retry_skips_work", true)),
        quirks_(keys.boolean("quirks", true)),
        top_only_(keys.strings("layers.top_only", {"retry-top-only"})),
        top_only_where_(keys.has("layers.top_only") ? keys.where("layers.top_only") : ""),
        signal_(keys.strings("layers.do_not_retry_signal", {"retry-only-if-retryable"})),
        signal_where_(
            keys.has("layers.do_not_retry_signal") ? keys.where("layers.do_not_retry_signal") : ""),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{1}, std::chrono::nanoseconds{1})
                .count()),
        limit_(keys.duration_value("run.limit", std::chrono::hours{24}, std::chrono::nanoseconds{1})
                   .count()) {
    // Service times are drawn as doubles and rounded to ns: keep their tail far from overflow.
    if (service_mean_ > 86'400'000'000'000) keys.fail("service.mean", "is more than a day");
  }

  time_ns bucket() const override { return bucket_; }
  // A breaker acts through each layer's retry controller gates, which every call goes through.
  guard_support guards() const override { return {.breaker = true}; }
  memory_need memory() const override {
    // A request holds one record per layer its call chain has reached; requests overlap for
    // about their latency (well under 10 s at the source's service times and backoffs).
    const double in_flight =
        std::min<double>(static_cast<double>(requests_), std::ceil(rate_per_s_ * 10.0) + 1.0);
    memory_need m;
    m.per("workload.requests", static_cast<std::int64_t>(in_flight) * depth_, 256,
          "layer calls in flight (10 s of requests at workload.rate_per_s, times topology.depth)");
    const double span_s = static_cast<double>(requests_) / rate_per_s_ + 60.0;
    m.over("run.limit", std::min<time_ns>(limit_, static_cast<time_ns>(span_s * 1e9)), bucket_);
    return m;
  }

  void check_all(const std::vector<client_strategy>& all) const override {
    const auto names_exist = [&](const std::vector<std::string>& names, const std::string& where,
                                 const char* key) {
      if (where.empty()) return;  // the defaults name strategies a scenario may leave out
      for (const auto& name : names) {
        const bool found = std::any_of(all.begin(), all.end(),
                                       [&](const client_strategy& s) { return s.name() == name; });
        if (!found) {
          throw scenario_error(where + ": " + key + ": no strategy named '" + name + "'");
        }
      }
    };
    names_exist(top_only_, top_only_where_, "layers.top_only");
    names_exist(signal_, signal_where_, "layers.do_not_retry_signal");
    model_runner::check_all(all);
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      refuse_strategy(strategy,
                      "retry-layers calls have one attempt in flight each; an AIMD window "
                      "has nothing to do here");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    reset(strategy, seed, out);
    self_ = e.add(*this);
    e.schedule_at(0, self_, arrive);

    const time_ns slice = 1'000'000'000;
    time_ns t = 0;
    const auto total = static_cast<std::uint64_t>(requests_);
    while (finished_ < total && e.pending() > 0 && t < limit_) {
      t = std::min(t + slice, limit_);
      e.run_until(t);
      if (progress) progress(static_cast<double>(finished_) / static_cast<double>(total));
    }
    const time_ns end = e.now();
    for (const call& c : calls_) {
      if (c.in_use && c.layer == 0) {
        out.operation_done(
            {c.request, c.arrived, end, c.deepest_calls, report::op_status::unfinished});
      }
    }
    report_fields(out);
    // Before the lives: a controller with an attempt in flight holds a breaker permit.
    calls_.clear();
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    const auto r = static_cast<std::uint32_t>(ev.payload);
    switch (ev.kind) {
      case arrive:
        return on_arrive(e);
      case dependency_ok:
        return on_dependency_answer(e, r, true);
      case dependency_failed:
        return on_dependency_answer(e, r, false);
      case retry_wake:
      case send_now:
        return attempt(e, r, ev.kind == send_now);
      case work_done:
        return on_work_done(e, r);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t {
    arrive,
    dependency_ok,
    dependency_failed,
    retry_wake,
    send_now,
    work_done
  };

  // One layer's handling of one incoming call: its retry loop towards the layer below, then its
  // own work. A request's records form a chain, one per layer reached, each with one event due.
  struct call {
    std::optional<retry_controller> control;
    std::uint32_t parent = no_record;  // the caller's record (none for layer 1)
    std::uint32_t root = no_record;    // the layer-1 record of this request
    int layer = 0;                     // 0-based: 0 is the top server
    bool in_use = false;
    bool arrived_as_retry = false;       // its caller sent it as a retry
    outcome ended = outcome::succeeded;  // how its loop ended: the answer it gives upward
    time_ns first_attempt = 0;           // its loop's first attempt
    time_ns backed_off = 0;              // the sum of its loop's backoff delays
    // Layer 1 only: the top-level request.
    std::uint64_t request = 0;
    time_ns arrived = 0;
    std::uint32_t deepest_calls = 0;
  };

  void reset(const client_strategy& strategy, std::uint64_t seed, report::recorder& out) {
    out_ = &out;
    calls_.clear();  // before the lives their controllers point into
    free_.clear();
    lives_ = std::make_unique<client_strategy::live[]>(static_cast<std::size_t>(depth_));
    policies_.assign(static_cast<std::size_t>(depth_), strategy.policy());
    const bool top_only = named(top_only_, strategy);
    for (int k = 0; k < depth_; ++k) {
      lives_[static_cast<std::size_t>(k)] = strategy.instantiate();
      // The code's retry_strategy "top_only": the layers below the top make one attempt.
      if (top_only && k > 0) policies_[static_cast<std::size_t>(k)].max_attempts = 1;
    }
    signal_on_ = named(signal_, strategy);
    workload_rng_ = random_generator{stream_seed(seed, stream::workload)};
    failure_rng_ = random_generator{stream_seed(seed, stream::outage)};
    service_rngs_.clear();
    client_rngs_.clear();
    for (int k = 0; k <= depth_; ++k) {
      service_rngs_.emplace_back(stream_seed(seed, stream::server, static_cast<std::uint64_t>(k)));
      client_rngs_.emplace_back(stream_seed(seed, stream::client, static_cast<std::uint64_t>(k)));
    }
    layer_calls_.assign(static_cast<std::size_t>(depth_) + 1, 0);
    created_ = 0;
    finished_ = 0;
    in_dependency_ = 0;
    out.work_label("calls to the deepest dependency");
  }

  static bool named(const std::vector<std::string>& names, const client_strategy& s) {
    return std::find(names.begin(), names.end(), s.name()) != names.end();
  }

  std::uint32_t allocate() {
    std::uint32_t r;
    if (!free_.empty()) {
      r = free_.back();
      free_.pop_back();
    } else {
      r = static_cast<std::uint32_t>(calls_.size());
      calls_.emplace_back();
    }
    call& c = calls_[r];
    c.in_use = true;
    return r;
  }

  void release(std::uint32_t r) {
    call& c = calls_[r];
    c.control.reset();
    c.in_use = false;
    free_.push_back(r);
  }

  // A non-negative time in ns, rounded (llround's error handling costs more than the rest here).
  static time_ns to_ns(double t) { return static_cast<time_ns>(t + 0.5); }

  // Erlang(k) with the given mean: -log of a product of k uniforms, times mean / k (one log per
  // draw; the product is folded into the log before it could underflow).
  time_ns service_time(random_generator& g) const {
    double product = 1.0, log_sum = 0.0;
    for (int i = 0; i < erlang_k_; ++i) {
      product *= 1.0 - uniform01(g);
      if (product < 1e-280) {
        log_sum += std::log(product);
        product = 1.0;
      }
    }
    const double t = -(log_sum + std::log(product)) * static_cast<double>(service_mean_) /
                     static_cast<double>(erlang_k_);
    return to_ns(t);
  }

  void on_arrive(engine& e) {
    const std::uint32_t r = allocate();
    call& c = calls_[r];
    c.parent = no_record;
    c.root = r;
    c.layer = 0;
    c.arrived_as_retry = false;  // the client above the top server does not retry
    c.request = created_++;
    c.arrived = e.now();
    c.deepest_calls = 0;
    out_->operation_started(e.now());
    ++layer_calls_[0];
    if (created_ < static_cast<std::uint64_t>(requests_)) {
      const double gap = exponential_variate(workload_rng_, 1e9 / rate_per_s_);
      e.schedule_after(to_ns(gap), self_, arrive);
    }
    start_loop(e, r);
  }

  void start_loop(engine& e, std::uint32_t r) {
    call& c = calls_[r];
    const auto k = static_cast<std::size_t>(c.layer);
    c.control.emplace(policies_[k], duration{e.now()}, lives_[k].gates());
    c.first_attempt = e.now();
    c.backed_off = 0;
    attempt(e, r, false);
  }

  // `paced`: the throttle's wait before this attempt is over; send without asking again.
  void attempt(engine& e, std::uint32_t r, bool paced) {
    call& c = calls_[r];
    if (!paced) {
      const auto g = c.control->before_attempt(duration{e.now()},
                                               client_rngs_[static_cast<std::size_t>(c.layer)]);
      if (!g.send) return loop_over(e, r, g.stop);
      if (g.wait.count() > 0) return e.schedule_after(g.wait.count(), self_, send_now, r);
    }
    const bool retry = c.control->attempts() > 1;
    if (c.layer + 1 == depth_) return call_dependency(e, r, retry);
    const int below = c.layer + 1;
    const std::uint32_t root = c.root;
    const std::uint32_t child = allocate();  // may move calls_: `c` is not used after this
    call& d = calls_[child];
    d.parent = r;
    d.root = root;
    d.layer = below;
    d.arrived_as_retry = retry;
    ++layer_calls_[static_cast<std::size_t>(below)];
    start_loop(e, child);
  }

  void call_dependency(engine& e, std::uint32_t r, bool retry) {
    call& c = calls_[r];
    ++layer_calls_[static_cast<std::size_t>(depth_)];
    ++calls_[c.root].deepest_calls;
    out_->attempt(e.now());
    out_->work(e.now(), 1.0);
    out_->load(e.now(), ++in_dependency_, 0);
    // The code's clock for a retry: its loop's backoff so far (quirks), or the time elapsed.
    const time_ns since = quirks_ ? c.backed_off : e.now() - c.first_attempt;
    const double scale =
        retry ? 1.0 - std::min(static_cast<double>(since) / static_cast<double>(recovery_), 1.0)
              : 1.0;
    const bool fails = uniform01(failure_rng_) < failure_rate_ * scale;
    const time_ns t = service_time(service_rngs_[static_cast<std::size_t>(depth_)]);
    e.schedule_after(t, self_, fails ? dependency_failed : dependency_ok, r);
  }

  void on_dependency_answer(engine& e, std::uint32_t r, bool ok) {
    out_->load(e.now(), --in_dependency_, 0);
    if (!ok) out_->error(e.now());
    answer(e, r, ok ? verdict::success() : verdict::retryable());
  }

  // The layer of `r` got the answer to its attempt.
  void answer(engine& e, std::uint32_t r, const verdict& v) {
    call& c = calls_[r];
    const auto d =
        c.control->after(v, duration{e.now()}, client_rngs_[static_cast<std::size_t>(c.layer)]);
    if (v.kind == verdict_kind::success) return loop_over(e, r, outcome::succeeded);
    if (!d.retry) return loop_over(e, r, d.stop);
    c.backed_off += d.delay.count();
    e.schedule_after(d.delay.count(), self_, retry_wake, r);
  }

  // The loop of `r` is over; its own work follows (the code adds it whether the call below
  // succeeded or not), then the answer upward.
  void loop_over(engine& e, std::uint32_t r, outcome why) {
    call& c = calls_[r];
    c.ended = why;
    c.control.reset();
    auto& g = service_rngs_[static_cast<std::size_t>(c.layer)];
    time_ns work = service_time(g);
    // The code: "If this is a retry, assume we can skip some work sometimes".
    if (c.arrived_as_retry && retry_skips_work_) {
      work = to_ns(uniform01(g) * static_cast<double>(work));
    }
    e.schedule_after(work, self_, work_done, r);
  }

  void on_work_done(engine& e, std::uint32_t r) {
    call& c = calls_[r];
    const bool ok = c.ended == outcome::succeeded;
    if (c.layer == 0) {
      out_->operation_done(
          {c.request, c.arrived, e.now(), c.deepest_calls, report::status_of(c.ended), c.ended});
      if (ok) out_->success(e.now());
      ++finished_;
      return release(r);
    }
    const std::uint32_t parent = c.parent;
    release(r);
    // With the signal, a layer that has given up says so: the caller's controller takes it as
    // permanent and stops (and, having given up in turn, says the same upward).
    const verdict v = ok           ? verdict::success()
                      : signal_on_ ? verdict::permanent()
                                   : verdict::retryable();
    answer(e, parent, v);
  }

  void report_fields(report::recorder& out) const {
    const double n = static_cast<double>(created_);
    const auto per = [&](std::uint64_t calls) -> std::optional<double> {
      if (created_ == 0) return std::nullopt;
      return static_cast<double>(calls) / n;
    };
    out.field("deepest_calls_per_request", per(layer_calls_[static_cast<std::size_t>(depth_)]));
    for (int k = 0; k <= depth_; ++k) {
      out.field("calls_per_request.layer" + std::to_string(k + 1),
                per(layer_calls_[static_cast<std::size_t>(k)]));
    }
  }

  // Scenario keys.
  int depth_;
  std::int64_t requests_;
  double rate_per_s_;
  double failure_rate_;
  time_ns recovery_, service_mean_;
  int erlang_k_;
  bool retry_skips_work_, quirks_;
  std::vector<std::string> top_only_;
  std::string top_only_where_;
  std::vector<std::string> signal_;
  std::string signal_where_;
  time_ns bucket_, limit_;

  // One run's state. The lives and policies outlive calls_ (declared first, destroyed last).
  std::unique_ptr<client_strategy::live[]> lives_;
  std::vector<retry_policy> policies_;
  std::vector<call> calls_;
  std::vector<std::uint32_t> free_;
  bool signal_on_ = false;
  report::recorder* out_ = nullptr;
  random_generator workload_rng_, failure_rng_;
  std::vector<random_generator> service_rngs_, client_rngs_;  // per layer, the dependency last
  std::vector<std::uint64_t> layer_calls_;  // calls arriving at each layer, the dependency last
  std::uint64_t created_ = 0, finished_ = 0;
  std::int64_t in_dependency_ = 0;
  handler_id self_ = 0;
};

const model_registration retry_layers_registration{
    "retry-layers",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new retry_layers(keys)); }};

}  // namespace
}  // namespace backoff::sim::retry_layers_model
