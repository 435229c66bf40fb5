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
//
// Guards (SPEC 7.2; docs/models/one-client-burst.md, "Guards"):
//   - breaker: through the retry controller's gates, as a budget; a refused attempt ends the
//     operation (failed).
//   - hedge (gRPC A6): instead of retrying, an operation sends copies by the library's
//     hedge_controller; the first success wins. An error is taken for a 503 (fatal unless the
//     policy's non_fatal lists it). A loser is cancelled on the client only: the
//     server finishes its work (this server has no cancellation, as the seed's Go server).
//   - deadline: `total` bounds the operation, `per_attempt` is the client's timeout (a late
//     answer is ignored; the server still works on it), `min_useful` as in the library. With
//     `propagate`, the server knows each attempt's deadline: one arriving after it is refused
//     after server.expired_cost x success (holding a slot), and one in service when it passes is
//     stopped there, freeing its slot.
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "model.hpp"
#include "sim/engine/huge_pages.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim {
namespace {

// `model` first: the engine calls handle() through a model*, for every event, and the first
// base needs no this-adjusting thunk.
class one_client_burst final : public model, public model_runner {
 public:
  explicit one_client_burst(config_reader& keys)
      : operations_(keys.integer("workload.operations", 2000, 1, 100'000'000)),
        rate_per_s_(keys.number("workload.rate_per_s", 1000.0, 1e-6, 1e12)),
        max_busy_(keys.integer("server.max_busy", 50, 1, 1'000'000'000)),
        connect_(keys.duration_value("server.connect", std::chrono::milliseconds{100}).count()),
        success_(keys.duration_value("server.success", std::chrono::milliseconds{500}).count()),
        error_(keys.duration_value("server.error", std::chrono::milliseconds{50}).count()),
        errors_hold_slot_(keys.boolean("server.errors_hold_slot", true)),
        expired_cost_(keys.number("server.expired_cost", 0.05, 0.0, 1.0)),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{1}, std::chrono::nanoseconds{1})
                .count()),
        limit_(keys.duration_value("run.limit", std::chrono::hours{24}, std::chrono::nanoseconds{1})
                   .count()) {}

  time_ns bucket() const override { return bucket_; }
  guard_support guards() const override { return {true, true, true}; }
  memory_need memory() const override {
    memory_need m;
    // Measured 329 bytes per operation in flight (the 152-byte record, pending events, the
    // queue's and lanes' doubling) between 10^5 and 4 x 10^5 of them (peak RSS of the built-in
    // strategies with every operation created at once, run.limit = 3s); a hedging strategy adds
    // its 192-byte hedge record, a window its 32-byte ticket. Rounded up.
    m.per("workload.operations", operations_, 384, "in flight at once");
    m.over("run.limit", limit_, bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window() && (strategy.breaker() || strategy.hedge() || strategy.deadline())) {
      refuse_strategy(strategy,
                      "a window resends from its queue: give it no breaker, hedge or deadline");
    }
    if (strategy.has_window() && !strategy.retries_at_once()) {
      refuse_strategy(strategy, "a window resends from its queue; give it no policy (or \"none\")");
    }
    // A refused attempt is answered connect + error after it is sent; at zero, a strategy that
    // resends at once (a window requeues, a zero delay) loops at one instant while the request
    // holding the slot never finishes.
    const bool resends_at_once = strategy.has_window()
                                     ? strategy.policy().max_attempts == 0 && !strategy.has_budget()
                                     : strategy.retries_forever_at_zero_delay();
    if (connect_ + error_ == 0 && operations_ > max_busy_ && resends_at_once) {
      refuse_strategy(strategy,
                      "with server.connect + server.error = 0s a refused attempt is "
                      "answered at once, and this strategy retries at once without end: it "
                      "would loop forever at one instant; give server.connect or "
                      "server.error a time, or the strategy a delay or max_attempts");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    strategy_ = &strategy;
    hedging_ = strategy.hedge().has_value();
    out_ = &out;
    // The previous run's operations first: a controller with an attempt in flight releases its
    // breaker permit when destroyed, into the breaker of that run.
    ops_.clear();
    hedges_.clear();
    tickets_.clear();
    live_ = strategy.instantiate();
    const std::optional<deadline_config>& d = strategy.deadline();
    per_attempt_ = d ? d->per_attempt : duration{0};
    min_useful_ = d ? d->min_useful : duration{0};
    propagate_ = d && d->propagate;
    rng_ = random_generator{stream_seed(seed, stream::client)};
    ops_.resize(static_cast<std::size_t>(operations_));
    if (hedging_) hedges_.resize(ops_.size());
    if (live_.window) tickets_.resize(ops_.size());
    busy_ = 0;
    created_ = 0;
    finished_ = 0;
    engine_ = &e;
    self_ = e.add(*this);
    // Every event but `create` wakes an operation whose record went cold while it slept or
    // waited: the engine starts loading it one event ahead.
    e.prefetch_records(self_, ops_.data(), sizeof(op), ops_.size(), index_mask);
    // The three constant delays are FIFO lanes; only backoff timers use the timer queue.
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
        out.operation_done({i, o.first_attempt, end, attempts(i), report::op_status::unfinished});
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
      case attempt_timeout:
        return on_attempt_timeout(e, ev.payload);
      case hedge_timer:
        return on_hedge_timer(e, static_cast<std::size_t>(ev.payload));
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t {
    create,
    send,
    arrive,
    reply_ok,
    reply_error,
    retry_now,
    attempt_timeout,
    hedge_timer
  };
  static constexpr time_ns never = std::numeric_limits<time_ns>::max();

  // Hot fields first, then the retry controller they sit beside, so that waking an operation
  // touches as few cache lines as possible (with 10^4 to 10^6 operations the record is cold by the
  // time its next event comes: a miss per line touched). The hedge controller and the window's
  // ticket, which few strategies use, live in vectors of their own (hedges_, tickets_), sized only
  // for those: in the record they made it 384 bytes instead of 152.
  struct op {
    std::uint32_t attempt = 0;  // the attempt the client waits for (hedge: copies sent)
    bool waiting = false;       // without hedge: an answer to `attempt` is still awaited
    bool created = false;
    bool done = false;
    time_ns first_attempt = 0;
    time_ns deadline = never;  // with propagate: the current attempt's, as the server learns it
    std::optional<retry_controller> control;
  };
  struct hedged {
    time_ns timer_at = never;  // the pending hedge_timer event's time
    std::optional<hedge_controller> control;
  };

  // An event's payload: the operation (bits 0-38), its attempt (39-62, modulo 2^24: attempts
  // overlap only with timeouts or hedges, a handful at a time) and whether an error holds a slot.
  static constexpr int attempt_shift = 39;
  static constexpr std::uint64_t index_mask = (1ULL << attempt_shift) - 1;
  static constexpr std::uint64_t attempt_mask = (1ULL << 24) - 1;
  static constexpr std::uint64_t held_bit = 1ULL << 63;
  static std::uint64_t tag(std::size_t i, std::uint32_t attempt) {
    return static_cast<std::uint64_t>(i) | ((attempt & attempt_mask) << attempt_shift);
  }
  static std::size_t index_of(std::uint64_t payload) {
    return static_cast<std::size_t>(payload & index_mask);
  }
  static std::uint32_t attempt_of(std::uint64_t payload) {
    return static_cast<std::uint32_t>((payload >> attempt_shift) & attempt_mask);
  }
  static std::uint64_t error_held(bool held) { return held ? held_bit : 0; }

  std::uint32_t attempts(std::size_t i) const {
    return hedging_ ? hedges_[i].control->sent() : ops_[i].control->attempts();
  }
  duration now_of(const engine& e) const { return duration{e.now()}; }

  void on_create(engine& e) {
    const auto i = static_cast<std::size_t>(created_++);
    op& o = ops_[i];
    o.created = true;
    o.first_attempt = e.now();
    out_->operation_started(e.now());
    if (created_ < static_cast<std::uint64_t>(operations_)) {
      const auto next = static_cast<time_ns>(static_cast<double>(created_) * 1e9 / rate_per_s_);
      e.schedule_at(std::max(next, e.now()), self_, create);
    }
    if (strategy_->hedge()) {
      hedges_[i].control.emplace(*strategy_->hedge(), live_.gates(),
                                 strategy_->policy().max_elapsed);
      return carry_out(e, i, hedges_[i].control->start(now_of(e), rng_));
    }
    o.control.emplace(strategy_->policy(), now_of(e), live_.gates());
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
    const auto now = [&] { return now_of(e); };
    if (detail::too_little_time(*o.control, min_useful_, now)) {
      return finish(e, i, outcome::deadline_exceeded);
    }
    const auto g = o.control->before_attempt(now_of(e), rng_);
    if (!g.send) return finish(e, i, g.stop);
    o.attempt = o.control->attempts();
    if (g.wait.count() > 0) {
      e.schedule_after(g.wait.count(), self_, send, tag(i, o.attempt));
    } else {
      transmit(e, tag(i, o.attempt));
    }
  }

  void transmit(engine& e, std::uint64_t payload) {
    const std::size_t i = index_of(payload);
    op& o = ops_[i];
    if (o.done) return;  // a hedge's copy, paced by the throttle, after its operation ended
    out_->attempt(e.now());
    if (!hedging_) {
      o.waiting = true;
      const duration timeout =
          detail::attempt_time(*o.control, per_attempt_, [&] { return now_of(e); });
      if (timeout.count() > 0) e.schedule_after(timeout.count(), self_, attempt_timeout, payload);
      if (propagate_) {
        o.deadline = deadline_after(
            e, timeout, o.control->has_deadline() ? o.control->deadline() : duration::max());
      }
    } else if (propagate_) {
      o.deadline = deadline_after(e, duration{0}, hedges_[i].control->deadline());
    }
    e.schedule_in(connect_lane_, self_, arrive, payload);
  }

  // The deadline the server learns: now + the attempt's timeout, or the operation's deadline.
  static time_ns deadline_after(const engine& e, duration timeout, duration op_deadline) {
    time_ns at = op_deadline == duration::max() ? never : op_deadline.count();
    if (timeout.count() > 0) at = std::min(at, e.now() + timeout.count());
    return at;
  }

  // Sends from the window's queue while it has room.
  void pump(engine& e) {
    while (auto ticket = live_.window->try_send()) {
      const auto i = static_cast<std::size_t>(ticket->request());
      op& o = ops_[i];
      tickets_[i] = *ticket;
      const auto g = o.control->before_attempt(now_of(e), rng_);
      (void)g;  // window strategies have no throttle pacing to honour here
      o.attempt = o.control->attempts();
      transmit(e, tag(i, o.attempt));
    }
    record_window(e);
  }

  void record_window(engine& e) {
    const auto s = live_.window->snapshot();
    out_->window(e.now(), s.cwnd, s.ssthresh);
  }

  void on_arrive(engine& e, std::uint64_t payload) {
    // The operation's record only with propagate: without, the server needs nothing of it (and
    // a cold record costs a cache miss per event).
    bool expired = false;
    time_ns deadline = never;
    if (propagate_) {
      const op& o = ops_[index_of(payload)];
      // An attempt the client has moved on from (it timed out and the next one was sent) has an
      // expired deadline, whatever the deadline of the attempt now waited for.
      const bool superseded = !hedging_ && attempt_of(payload) != (o.attempt & attempt_mask);
      deadline = o.deadline;
      expired = superseded || e.now() >= deadline;
    }
    if (busy_ < max_busy_) {
      ++busy_;
      if (expired) {
        // Noticed, then dropped: a fraction of the work, and an error.
        const auto cost = static_cast<time_ns>(static_cast<double>(success_) * expired_cost_);
        e.schedule_after(cost, self_, reply_error, payload | held_bit);
      } else if (propagate_ && deadline < e.now() + success_) {
        // Stopped in service when its deadline passes: the slot is free from then.
        e.schedule_at(deadline, self_, reply_error, payload | held_bit);
      } else {
        e.schedule_in(success_lane_, self_, reply_ok, payload);
      }
    } else {
      if (errors_hold_slot_) ++busy_;
      e.schedule_in(error_lane_, self_, reply_error, payload | error_held(errors_hold_slot_));
    }
    out_->load(e.now(), busy_, 0);
  }

  void on_reply(engine& e, std::uint64_t payload, bool ok) {
    const std::size_t i = index_of(payload);
    if (ok || (payload & held_bit) != 0) --busy_;
    out_->load(e.now(), busy_, 0);
    op& o = ops_[i];
    const std::uint32_t n = attempt_of(payload);
    if (o.done) return;  // a hedge's loser, or an answer after a timeout ended the operation
    if (hedging_) {
      // An error is this server's overload answer, a 503: non-fatal if the policy lists it.
      const verdict v = ok ? verdict::success() : strategy_->hedge()->classify_status(503);
      record_reply(e, ok);
      return carry_out(e, i, hedges_[i].control->on_answer(n, v, now_of(e), rng_));
    }
    if (!o.waiting || n != (o.attempt & attempt_mask)) return;  // timed out: nobody listens
    o.waiting = false;
    const verdict v = ok ? verdict::success() : verdict::retryable();
    record_reply(e, ok);
    const auto d = o.control->after(v, now_of(e), rng_);
    if (live_.window) {
      if (ok) {
        live_.window->on_success(*tickets_[i]);
        finish(e, i, outcome::succeeded);
      } else if (!d.retry) {
        live_.window->on_error(*tickets_[i], aimd_window::requeue::no);  // cut, then drop it
        finish(e, i, d.stop);
      } else {
        live_.window->on_error(*tickets_[i]);
      }
      pump(e);
      return;
    }
    if (ok) return finish(e, i, outcome::succeeded);
    retry_or_finish(e, i, d);
  }

  void record_reply(engine& e, bool ok) {
    if (ok) {
      out_->success(e.now());
    } else {
      out_->error(e.now());
    }
  }

  // The client stops waiting for an attempt at its timeout (deadline.per_attempt).
  void on_attempt_timeout(engine& e, std::uint64_t payload) {
    const std::size_t i = index_of(payload);
    op& o = ops_[i];
    if (o.done || !o.waiting || attempt_of(payload) != (o.attempt & attempt_mask)) return;
    o.waiting = false;
    out_->timeout(e.now());
    verdict timed_out = verdict::retryable();
    timed_out.timeout = true;  // a retry quota charges its timeout cost
    retry_or_finish(e, i, o.control->after(timed_out, now_of(e), rng_));
  }

  void retry_or_finish(engine& e, std::size_t i, const retry_controller::decision& d) {
    op& o = ops_[i];
    if (!d.retry || detail::too_little_time(
                        *o.control, min_useful_, [&] { return now_of(e); }, d.delay)) {
      return finish(e, i, d.retry ? outcome::deadline_exceeded : d.stop);
    }
    e.schedule_after(d.delay.count(), self_, retry_now, i);
  }

  // Does what the hedge controller says, until it waits for an answer or its timer.
  void carry_out(engine& e, std::size_t i, hedge_controller::step s) {
    op& o = ops_[i];
    hedged& h = hedges_[i];
    for (;;) {
      switch (s.what) {
        case hedge_controller::action::done:
          return finish(e, i, s.why);
        case hedge_controller::action::send:
          o.attempt = s.attempt;
          if (s.wait.count() > 0) {
            e.schedule_after(s.wait.count(), self_, send, tag(i, s.attempt));
          } else {
            transmit(e, tag(i, s.attempt));
          }
          break;
        case hedge_controller::action::none:
          break;
      }
      if (!h.control->timer_due(now_of(e))) break;
      s = h.control->on_timer(now_of(e), rng_);
    }
    const duration wake = h.control->wake_at();
    if (wake != duration::max() && wake.count() != h.timer_at) {
      h.timer_at = wake.count();
      e.schedule_at(wake.count(), self_, hedge_timer, i);
    }
  }

  void on_hedge_timer(engine& e, std::size_t i) {
    op& o = ops_[i];
    hedged& h = hedges_[i];
    if (o.done || e.now() != h.timer_at) return;  // a timer since replaced
    h.timer_at = never;
    carry_out(e, i, h.control->on_timer(now_of(e), rng_));
  }

  void finish(engine& e, std::size_t i, outcome why) {
    op& o = ops_[i];
    o.done = true;
    ++finished_;
    out_->operation_done({i, o.first_attempt, e.now(), attempts(i), report::status_of(why), why});
  }

  std::int64_t operations_;
  double rate_per_s_;
  std::int64_t max_busy_;
  time_ns connect_, success_, error_;
  bool errors_hold_slot_;
  double expired_cost_;
  time_ns bucket_;
  time_ns limit_;

  const client_strategy* strategy_ = nullptr;
  bool hedging_ = false;  // strategy_->hedge(): operations have a hedge_controller, no control
  report::recorder* out_ = nullptr;
  client_strategy::live live_;
  random_generator rng_;
  duration per_attempt_{0}, min_useful_{0};
  bool propagate_ = false;
  std::vector<op, huge_page_allocator<op>> ops_;     // at x500, 152 MB visited at random
  std::vector<hedged> hedges_;                       // with hedge, one per operation
  std::vector<std::optional<send_ticket>> tickets_;  // with a window, one per operation
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
