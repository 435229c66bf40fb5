// SPDX-License-Identifier: Apache-2.0
// Seed 003 ("Improve on exponential backoff"): one client creates `operations` requests at
// `rate_per_s` against a server that serves at most `max_busy` at once (SPEC 2.2).
//
// The model, in its own time (nanoseconds):
//   - operation i is created at i / rate_per_s (evenly spaced: the seed says "initially generated
//     at a 1000/s rate" and shows no randomness in the arrivals);
//   - an attempt reaches the server `connect` (100 ms) after it is sent;
//   - if fewer than max_busy requests are being handled, it takes a slot and succeeds `success`
//     (500 ms) later; otherwise it fails `error` (50 ms) later, and with errors_hold_slot the
//     error holds a slot for those 50 ms too ("error responses keep the server busy"), so an
//     overloaded server stays busy answering errors;
//   - the reply reaches the client when the server finishes (the seed gives no return delay).
// Strategies without a window retry each operation on its own with the library's backoff policy
// (a retry_controller per operation). Strategies with an AIMD window send from the window's queue
// and put a failed request back at its front, as the seed's algorithm does; such a strategy's
// policy must be `none`, since the window, not a timer, decides when to resend.
// The optimum: operations * success / max_busy = 20 s for the defaults.
#include <cstdint>
#include <optional>
#include <vector>

#include "model.hpp"

namespace backoff::sim {
namespace {

class one_client_burst final : public model_runner, public model {
 public:
  explicit one_client_burst(config_reader& keys)
      : operations_(keys.integer("workload.operations", 2000, 1, 100'000'000)),
        rate_per_s_(keys.number("workload.rate_per_s", 1000.0, 1e-6, 1e12)),
        max_busy_(keys.integer("server.max_busy", 50, 1, 1'000'000'000)),
        connect_(keys.duration_value("server.connect", std::chrono::milliseconds{100}).count()),
        success_(keys.duration_value("server.success", std::chrono::milliseconds{500}).count()),
        error_(keys.duration_value("server.error", std::chrono::milliseconds{50}).count()),
        errors_hold_slot_(keys.boolean("server.errors_hold_slot", true)),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{1}, std::chrono::nanoseconds{1})
                .count()),
        limit_(keys.duration_value("run.limit", std::chrono::hours{24}, std::chrono::nanoseconds{1})
                   .count()) {}

  time_ns bucket() const override { return bucket_; }
  memory_need memory() const override {
    memory_need m;
    // Measured 248 bytes per operation in flight (retry controller, window ticket, pending events
    // and the heap's doubling) between 10^5 and 4 x 10^5 of them; rounded up.
    m.per("workload.operations", operations_, 256, "in flight at once");
    m.over("run.limit", limit_, bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window() && !strategy.retries_at_once()) {
      throw scenario_error(strategy.where() + ": strategy " + strategy.name() +
                           ": a window resends from its queue; give it no policy (or \"none\")");
    }
    // A refused attempt is answered connect + error after it is sent; at zero, a strategy that
    // resends at once (a window requeues, a zero delay) loops at one instant while the request
    // holding the slot never finishes.
    const bool resends_at_once = strategy.has_window()
                                     ? strategy.policy().max_attempts == 0 && !strategy.has_budget()
                                     : strategy.retries_forever_at_zero_delay();
    if (connect_ + error_ == 0 && operations_ > max_busy_ && resends_at_once) {
      throw scenario_error(strategy.where() + ": strategy " + strategy.name() +
                           ": with server.connect + server.error = 0s a refused attempt is "
                           "answered at once, and this strategy retries at once without end: it "
                           "would loop forever at one instant; give server.connect or "
                           "server.error a time, or the strategy a delay or max_attempts");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    strategy_ = &strategy;
    out_ = &out;
    live_ = strategy.instantiate();
    rng_ = random_generator{stream_seed(seed, stream::client)};
    ops_.clear();
    ops_.resize(static_cast<std::size_t>(operations_));
    busy_ = 0;
    created_ = 0;
    finished_ = 0;
    engine_ = &e;
    self_ = e.add(*this);
    // The three constant delays are FIFO lanes; only backoff timers use the heap.
    connect_lane_ = e.add_lane(connect_);
    success_lane_ = e.add_lane(success_);
    error_lane_ = e.add_lane(error_);
    e.schedule_at(0, self_, create);

    // Run in slices so the progress bar can move; stop once every operation has finished.
    const time_ns slice = 1'000'000'000;
    time_ns t = 0;
    while (finished_ < static_cast<std::uint64_t>(operations_) && e.pending() > 0 && t < limit_) {
      t = std::min(t + slice, limit_);
      e.run_until(t);
      progress(static_cast<double>(finished_) / static_cast<double>(operations_));
    }
    const time_ns end = e.now();
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const op& o = ops_[i];
      if (!o.done && o.created) {
        out.operation_done(
            {i, o.first_attempt, end, o.control->attempts(), report::op_status::unfinished});
      }
    }
    engine_ = nullptr;
    return {end, e.events_processed()};
  }

  void handle(engine& e, const event& ev) override {
    switch (ev.kind) {
      case create:
        return on_create(e);
      case send:
        return transmit(e, ev.payload);
      case arrive:
        return on_arrive(e, ev.payload);
      case reply_ok:
        return on_reply(e, ev.payload, true);
      case reply_error:
        return on_reply(e, ev.payload, false);
      case retry_now:
        return attempt(e, static_cast<std::size_t>(ev.payload));
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t { create, send, arrive, reply_ok, reply_error, retry_now };

  struct op {
    std::optional<retry_controller> control;
    std::optional<send_ticket> ticket;
    time_ns first_attempt = 0;
    bool created = false;
    bool done = false;
  };

  void on_create(engine& e) {
    const auto i = static_cast<std::size_t>(created_++);
    op& o = ops_[i];
    o.created = true;
    o.first_attempt = e.now();
    o.control.emplace(strategy_->policy(), duration{e.now()}, live_.gates());
    out_->operation_started(e.now());
    if (created_ < static_cast<std::uint64_t>(operations_)) {
      const auto next = static_cast<time_ns>(static_cast<double>(created_) * 1e9 / rate_per_s_);
      e.schedule_at(std::max(next, e.now()), self_, create);
    }
    if (live_.window) {
      live_.window->enqueue();
      pump(e);
    } else {
      attempt(e, i);
    }
  }

  // Asks the gates, then sends (now or after the throttle's pacing).
  void attempt(engine& e, std::size_t i) {
    op& o = ops_[i];
    const auto g = o.control->before_attempt(duration{e.now()}, rng_);
    if (!g.send) return finish(e, i, report::op_status::failed);
    if (g.wait.count() > 0) {
      e.schedule_after(g.wait.count(), self_, send, i);
    } else {
      transmit(e, i);
    }
  }

  void transmit(engine& e, std::uint64_t i) {
    out_->attempt(e.now());
    e.schedule_in(connect_lane_, self_, arrive, i);
  }

  // Sends from the window's queue while it has room.
  void pump(engine& e) {
    while (auto ticket = live_.window->try_send()) {
      const auto i = static_cast<std::size_t>(ticket->request());
      op& o = ops_[i];
      o.ticket = *ticket;
      const auto g = o.control->before_attempt(duration{e.now()}, rng_);
      (void)g;  // window strategies have no throttle pacing to honour here
      transmit(e, i);
    }
    record_window(e);
  }

  void record_window(engine& e) {
    const auto s = live_.window->snapshot();
    out_->window(e.now(), s.cwnd, s.ssthresh);
  }

  void on_arrive(engine& e, std::uint64_t i) {
    if (busy_ < max_busy_) {
      ++busy_;
      e.schedule_in(success_lane_, self_, reply_ok, i);
    } else {
      if (errors_hold_slot_) ++busy_;
      e.schedule_in(error_lane_, self_, reply_error, i | error_held(errors_hold_slot_));
    }
    out_->load(e.now(), busy_, 0);
  }

  static constexpr std::uint64_t held_bit = 1ULL << 63;
  static std::uint64_t error_held(bool held) { return held ? held_bit : 0; }

  void on_reply(engine& e, std::uint64_t payload, bool ok) {
    const auto i = static_cast<std::size_t>(payload & ~held_bit);
    if (ok || (payload & held_bit) != 0) --busy_;
    out_->load(e.now(), busy_, 0);
    op& o = ops_[i];
    const verdict v = ok ? verdict::success() : verdict::retryable();
    if (ok) {
      out_->success(e.now());
    } else {
      out_->error(e.now());
    }
    const auto d = o.control->after(v, duration{e.now()}, rng_);
    if (live_.window) {
      if (ok) {
        live_.window->on_success(*o.ticket);
        finish(e, i, report::op_status::completed);
      } else if (!d.retry) {
        live_.window->on_error(*o.ticket, aimd_window::requeue::no);  // cut, then drop it
        finish(e, i, report::op_status::failed);
      } else {
        live_.window->on_error(*o.ticket);
      }
      pump(e);
      return;
    }
    if (ok) return finish(e, i, report::op_status::completed);
    if (!d.retry) return finish(e, i, report::op_status::failed);
    e.schedule_after(d.delay.count(), self_, retry_now, i);
  }

  void finish(engine& e, std::size_t i, report::op_status status) {
    op& o = ops_[i];
    o.done = true;
    ++finished_;
    out_->operation_done({i, o.first_attempt, e.now(), o.control->attempts(), status});
  }

  std::int64_t operations_;
  double rate_per_s_;
  std::int64_t max_busy_;
  time_ns connect_, success_, error_;
  bool errors_hold_slot_;
  time_ns bucket_;
  time_ns limit_;

  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  client_strategy::live live_;
  random_generator rng_;
  std::vector<op> ops_;
  std::int64_t busy_ = 0;
  std::uint64_t created_ = 0, finished_ = 0;
  engine* engine_ = nullptr;
  handler_id self_ = 0;
  lane_id connect_lane_ = 0, success_lane_ = 0, error_lane_ = 0;
};

const model_registration one_client_burst_registration{
    "one-client-burst",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new one_client_burst(keys)); }};

}  // namespace
}  // namespace backoff::sim
