// SPDX-License-Identifier: Apache-2.0
// Hedging against a server with a long tail of latency (issue 22: `hedging-tail`, from grpc-java's
// examples/src/main/java/io/grpc/examples/hedging, and `hedging-overload`, ours), on the library's
// hedge_controller (gRPC A6). docs/models/hedging.md has every rule with its source.
//
// Clients. `workload.operations` calls, either from `workload.concurrency` workers that each call
// again as soon as their last call returns (closed: HedgingHelloWorldClient.main submits 2000
// blocking calls to a ForkJoinPool, which runs as many at once as it has threads), or as a
// Poisson stream (open: `workload.rate_per_s`, or `workload.utilization` of the server's
// capacity). A call's latency runs from its start (greet()'s startTime) to its first success.
// Every call goes through a hedge_controller; a strategy without `hedge` gets max_attempts = 1,
// the same driver with one copy. Copies cross the network in `network.one_way` each way.
//
// Server. `server.capacity` workers (0: a thread per call, as grpc-java's default executor, a
// cached thread pool) behind one FIFO queue. A copy holds its worker for `server.service`
// (constant or exponential) plus the latency the interceptor injects: one draw per copy, as
// HedgingHelloWorldServer.LatencyInjectionInterceptor.interceptCall does (10 s below 1 %, 5 s
// below 5 %, 2 s below 10 %; `server.tail`; with quirks = false the README's reading, each delay
// at its own chance). A Thread.sleep holds the thread: so does the delay here.
//
// Cancellation. The winner's arrival ends the call; the client cancels the copies still out
// (A6), and the cancel reaches the server one way later. `server.cancel` says what the server
// does with it: "none" (the example's interceptor sleeps through it: the work is done anyway),
// "queued" (a copy still waiting is dropped; one in service finishes) or "running" (a copy in
// service is stopped there too, freeing its worker).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model.hpp"
#include "strategy_refusal.hpp"

namespace backoff::sim::hedging_model {
namespace {

// One slowness of the injected latency: `delay` with the draw below `below` (cumulative).
struct slow_band {
  double below = 0;
  time_ns delay = 0;
};

enum class cancel_mode : std::uint8_t { none, queued, running };

// Which of `choices` the string key `key` names, the first when it is absent; any other value is
// refused with the list ("must be \"none\", \"queued\" or \"running\", not \"x\"").
std::size_t read_choice(config_reader& keys, std::string_view key,
                        const std::vector<std::string_view>& choices) {
  const std::string value = keys.string(key, choices.front());
  const auto found = std::find(choices.begin(), choices.end(), value);
  if (found != choices.end()) return static_cast<std::size_t>(found - choices.begin());
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    list += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    list += "\"" + std::string(choices[i]) + "\"";
  }
  keys.fail(key, "must be " + list + ", not \"" + value + "\"");
}

// "1%: 10s" -> {0.01, 10 s}; one line on error.
slow_band parse_band(config_reader& keys, const std::string& text) {
  const auto colon = text.find(':');
  const auto bad = [&](const std::string& why) {
    keys.fail("server.tail",
              "bad entry \"" + text + "\": " + why + " (write \"P%: DURATION\", e.g. \"1%: 10s\")");
  };
  if (colon == std::string::npos) bad("no ':'");
  std::string pct = text.substr(0, colon);
  std::string dur = text.substr(colon + 1);
  const auto trim = [](std::string& s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
  };
  trim(pct);
  trim(dur);
  if (pct.empty() || pct.back() != '%') bad("the chance must end with '%'");
  pct.pop_back();
  double p = 0;
  try {
    std::size_t used = 0;
    p = std::stod(pct, &used);
    if (used != pct.size()) bad("the chance is not a number");
  } catch (const std::exception&) {
    bad("the chance is not a number");
  }
  if (!(p >= 0 && p <= 100)) bad("the chance must be in [0%, 100%]");
  duration d{0};
  try {
    d = parse_duration(dur);
  } catch (const std::exception& e) {
    bad(e.what());
  }
  return {p / 100.0, d.count()};
}

class hedging final : public model_runner, public model {
 public:
  explicit hedging(config_reader& keys)
      : operations_(keys.integer("workload.operations", 2000, 1, 100'000'000)),
        concurrency_(keys.integer("workload.concurrency", 12, 1, 10'000'000)),
        one_way_(keys.duration_value("network.one_way", std::chrono::microseconds{250}).count()),
        capacity_(keys.integer("server.capacity", 0, 0, 1'000'000'000)),
        service_(keys.duration_value("server.service", duration{0}).count()),
        quirks_(keys.boolean("quirks", true)),
        bucket_(
            keys.duration_value("run.bucket", std::chrono::seconds{1}, std::chrono::nanoseconds{1})
                .count()),
        limit_(
            keys.duration_value("run.limit", std::chrono::seconds{100}, std::chrono::nanoseconds{1})
                .count()) {
    open_ = read_choice(keys, "workload.arrival", {"closed", "poisson"}) == 1;
    exponential_service_ =
        read_choice(keys, "server.service_dist", {"constant", "exponential"}) == 1;
    constexpr cancel_mode cancel_modes[] = {cancel_mode::none, cancel_mode::queued,
                                            cancel_mode::running};
    cancel_ = cancel_modes[read_choice(keys, "server.cancel", {"none", "queued", "running"})];
    read_tail(keys);

    // Mean service time of one copy, what `utilization` is measured against.
    mean_service_s_ = static_cast<double>(service_) * 1e-9;
    double previous = 0;
    for (const slow_band& b : tail_) {
      mean_service_s_ += (b.below - previous) * static_cast<double>(b.delay) * 1e-9;
      previous = b.below;
    }
    const bool has_rate = keys.has("workload.rate_per_s");
    const bool has_utilization = keys.has("workload.utilization");
    rate_per_s_ = keys.number("workload.rate_per_s", 100.0, 1e-9, 1e12);
    const double utilization = keys.number("workload.utilization", 0.5, 1e-6, 100.0);
    if (has_rate && has_utilization) {
      keys.fail("workload.utilization",
                "give workload.rate_per_s or workload.utilization, not both");
    }
    if (has_utilization) {
      if (capacity_ == 0 || mean_service_s_ <= 0) {
        keys.fail("workload.utilization",
                  "needs a finite server.capacity and a service time (server.service or "
                  "server.tail) to be a fraction of");
      }
      rate_per_s_ = utilization * static_cast<double>(capacity_) / mean_service_s_;
    }
    if (!open_ && (has_rate || has_utilization)) {
      keys.fail(has_rate ? "workload.rate_per_s" : "workload.utilization",
                "applies to workload.arrival = \"poisson\" only; closed workers call back to back");
    }
  }

  time_ns bucket() const override { return bucket_; }
  // Every copy goes through the hedge controller's gates, which ask the breaker too.
  guard_support guards() const override { return {.breaker = true, .hedge = true}; }
  memory_need memory() const override {
    memory_need m;
    // Operations in flight hold a slot (about 290 bytes: the hedge controller is 192), their
    // copies' queue entries and events. A collapsed hedged run has every operation in flight:
    // measured 320 bytes per operation (RSS at utilization 0.9, 2.5 x 10^5 against 10^6
    // operations); rounded up. Closed runs with few workers hold far less.
    m.per("workload.operations", operations_, 384, "operations");
    m.over("run.limit", limit_, bucket_);
    return m;
  }

  void check(const client_strategy& strategy) const override {
    if (strategy.has_window()) {
      refuse_strategy(strategy, "this model has no window: give it no `window`");
    }
    if (!strategy.retries_at_once() || strategy.policy().max_attempts != 0) {
      refuse_strategy(
          strategy,
          "this server never fails, so a retry policy would never act: give it no policy or "
          "max_attempts (use `hedge` to send copies)");
    }
  }

  run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
               report::recorder& out, const progress_fn& progress) override {
    strategy_ = &strategy;
    out_ = &out;
    slots_.clear();  // before live_: a controller's breaker permits go back to the old breaker
    free_.clear();
    live_ = strategy.instantiate();
    if (strategy.hedge()) {
      policy_ = *strategy.hedge();
    } else {
      policy_ = hedge_policy{};
      policy_.max_attempts = 1;  // no hedging: the same driver with one copy (hedge.hpp allows 1)
    }
    rng_ = random_generator{stream_seed(seed, stream::client)};
    arrivals_ = random_generator{stream_seed(seed, stream::workload)};
    server_seed_ = stream_seed(seed, stream::server);
    queue_.assign(64, 0);
    queue_head_ = queue_count_ = 0;
    waiting_ = 0;
    busy_ = 0;
    started_ = finished_ = pending_starts_ = 0;
    work_ns_ = needed_ns_ = 0;
    at_server_ = 0;
    draining_ = false;
    self_ = e.add(*this);
    net_ = e.add_lane(one_way_);
    // Most hedge timers fall `delay` after a copy is sent, and outlive their call (an event is
    // never cancelled): a lane keeps them out of the heap.
    timer_lane_.reset();
    if (policy_.max_attempts > 1 && policy_.delay.count() > 0) {
      timer_lane_ = e.add_lane(policy_.delay.count());
    }
    out.work_label("busy workers (worker-seconds per second)");

    if (open_) {
      e.schedule_at(interarrival(), self_, create);
    } else {
      const std::int64_t n = std::min(concurrency_, operations_);
      pending_starts_ = static_cast<std::uint64_t>(n);
      for (std::int64_t w = 0; w < n; ++w) e.schedule_at(0, self_, create);
    }

    const time_ns slice = std::max<time_ns>(limit_ / 100, 1);
    time_ns t = 0;
    while (finished_ < static_cast<std::uint64_t>(operations_) && e.pending() > 0 && t < limit_) {
      t = std::min(t + slice, limit_);
      e.run_until(t);
      progress(static_cast<double>(finished_) / static_cast<double>(operations_));
    }
    const time_ns end = e.now();
    for (const op& o : slots_) {
      if (o.hedge && !o.done) {
        out.operation_done(
            {o.id, o.first_attempt, end, o.transmitted, report::op_status::unfinished});
      }
    }
    if (finished_ == static_cast<std::uint64_t>(operations_)) {
      // Every call has ended, but losers may still be queued or in service: the server does that
      // work for these calls all the same, so let it finish (without recording: the run, its
      // series and its makespan end with the last call). Else work_amplification would depend on
      // where the last slice cut the run. A run stopped by run.limit counts the work up to the
      // stop, as that is all the server did.
      draining_ = true;
      time_ns t_drain = end;
      while (at_server_ > 0 && e.pending() > 0) {
        t_drain += slice;
        e.run_until(t_drain);
      }
    } else {
      // Stopped by run.limit: copies in service have worked until the stop.
      for (const op& o : slots_) {
        if (!o.hedge) continue;
        for (std::uint32_t n = 1; n <= o.hedge->sent(); ++n) {
          if (o.copies[n - 1] == copy_state::serving) work_ns_ += end - o.service_start[n - 1];
        }
      }
    }
    // Server work done for the run's calls over the work their first copies alone would need.
    out.field("work_amplification", needed_ns_ > 0
                                        ? std::optional<double>(static_cast<double>(work_ns_) /
                                                                static_cast<double>(needed_ns_))
                                        : std::nullopt);
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
      case served:
        return on_served(e, ev.payload);
      case reply:
        return on_reply(e, ev.payload);
      case hedge_timer:
        return on_hedge_timer(e, ev.payload);
      case cancel_arrives:
        return on_cancel(e, ev.payload);
      default:
        return;
    }
  }

 private:
  enum kind : std::uint32_t { create, send, arrive, served, reply, hedge_timer, cancel_arrives };
  static constexpr time_ns never = std::numeric_limits<time_ns>::max();

  // Where a copy is, from the server's side.
  enum class copy_state : std::uint8_t {
    unsent,      // not sent yet (or waiting for the throttle's pacing)
    travelling,  // on its way to the server
    queued,      // waiting for a worker
    serving,     // holding a worker
    answered,    // served: its answer is on its way back (or arrived)
    dropped,     // cancelled at the server before it finished
  };

  // An operation in flight, in a slot that is reused once the call has ended and none of its
  // copies is left at the server: a run holds what is in flight, not every call.
  struct op {
    std::optional<hedge_controller> hedge;  // empty: the slot is free
    std::uint64_t id = 0;                   // the operation's number, from 0
    time_ns first_attempt = 0;
    time_ns timer_at = never;
    time_ns first_service = 0;  // the first copy's service time, drawn at the start
    std::array<time_ns, hedge_policy::max_attempts_limit> service_start{};
    std::array<copy_state, hedge_policy::max_attempts_limit> copies{};
    std::uint32_t generation = 0;  // bumped when the slot is freed: older events are stale
    std::uint8_t at_server = 0;    // copies sent and not yet served or dropped
    std::uint8_t transmitted = 0;  // copies actually sent (a paced copy may be dropped unsent)
    bool done = false;
  };

  // A payload: the slot (bits 0-31), its generation (32-59, modulo 2^28) and the copy, from 1
  // (60-62; 0 for the hedge timer).
  static constexpr int generation_shift = 32;
  static constexpr int copy_shift = 60;
  static constexpr std::uint64_t generation_mask = (1ULL << (copy_shift - generation_shift)) - 1;
  static std::uint64_t tag(std::uint32_t slot, const op& o, std::uint32_t copy) {
    return static_cast<std::uint64_t>(slot) |
           ((o.generation & generation_mask) << generation_shift) |
           (static_cast<std::uint64_t>(copy) << copy_shift);
  }
  static std::uint32_t slot_of(std::uint64_t payload) {
    return static_cast<std::uint32_t>(payload & 0xffff'ffffULL);
  }
  static std::uint32_t copy_of(std::uint64_t payload) {
    return static_cast<std::uint32_t>(payload >> copy_shift);
  }
  // The operation an event is about, or null when its slot has since been reused.
  op* find(std::uint64_t payload) {
    op& o = slots_[slot_of(payload)];
    return ((payload >> generation_shift) & generation_mask) == (o.generation & generation_mask)
               ? &o
               : nullptr;
  }

  std::uint32_t acquire() {
    if (!free_.empty()) {
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      return slot;
    }
    slots_.emplace_back();
    return static_cast<std::uint32_t>(slots_.size() - 1);
  }
  // Frees the slot once the call has ended and the server holds none of its copies.
  void maybe_free(std::uint32_t slot) {
    op& o = slots_[slot];
    if (!o.done || o.at_server != 0) return;
    o.hedge.reset();
    o.timer_at = never;
    o.copies.fill(copy_state::unsent);
    o.transmitted = 0;
    o.done = false;
    ++o.generation;
    free_.push_back(slot);
  }

  void read_tail(config_reader& keys) {
    const std::vector<std::string> entries =
        keys.strings("server.tail", {"1%: 10s", "5%: 5s", "10%: 2s"});
    double cumulative = 0;
    for (const std::string& text : entries) {
      slow_band b = parse_band(keys, text);
      if (quirks_) {
        // The code's one draw: `random < 1`, then `< 5`, then `< 10`; each bound above the last.
        if (b.below < cumulative) {
          keys.fail("server.tail",
                    "with quirks = true the chances are bounds of one draw (\"below "
                    "P%\") and must not decrease: \"" +
                        text + "\"");
        }
        cumulative = b.below;
      } else {
        // The README's reading: each delay at its own chance.
        cumulative += b.below;
        if (cumulative > 1.0 + 1e-12) {
          keys.fail("server.tail", "with quirks = false the chances add up and exceed 100%");
        }
        b.below = std::min(cumulative, 1.0);
      }
      tail_.push_back(b);
    }
  }

  time_ns interarrival() {
    return static_cast<time_ns>(exponential_variate(arrivals_, 1e9 / rate_per_s_) + 0.5);
  }

  // The service time of copy `copy` of operation i: its own draw, the same in every strategy
  // (common random numbers: the first copies meet the same delays whether hedged or not).
  // Two hashes of (operation, copy), not a generator per copy: seeding one costs more than the
  // rest of the copy's events.
  time_ns service_time(std::uint64_t i, std::uint32_t copy) const {
    const std::uint64_t h = derive_seed(server_seed_, i * 8 + copy);
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1), as uniform01
    time_ns t = service_;
    if (exponential_service_ && service_ > 0) {
      const double v = static_cast<double>(splitmix64(h) >> 11) * 0x1.0p-53;
      t = static_cast<time_ns>(-static_cast<double>(service_) * std::log1p(-v) + 0.5);
    }
    for (const slow_band& b : tail_) {
      if (u < b.below) return t + b.delay;
    }
    return t;
  }

  duration now_of(const engine& e) const { return duration{e.now()}; }

  void on_create(engine& e) {
    start_operation(e);
    if (open_ && started_ < static_cast<std::uint64_t>(operations_)) {
      e.schedule_after(interarrival(), self_, create);
    }
  }

  void start_operation(engine& e) {
    if (!open_) --pending_starts_;
    const std::uint32_t slot = acquire();
    op& o = slots_[slot];
    o.id = started_++;
    o.first_attempt = e.now();
    o.first_service = service_time(o.id, 1);
    needed_ns_ += o.first_service;
    out_->operation_started(e.now());
    o.hedge.emplace(policy_, live_.gates(), strategy_->policy().max_elapsed);
    carry_out(e, slot, o.hedge->start(now_of(e), rng_));
  }

  // Does what the hedge controller says, until it waits for an answer or its timer (as
  // one_client_burst.cpp does).
  void carry_out(engine& e, std::uint32_t i, hedge_controller::step s) {
    op& o = slots_[i];
    for (;;) {
      switch (s.what) {
        case hedge_controller::action::done:
          return finish(e, i, s.why);
        case hedge_controller::action::send:
          if (s.wait.count() > 0) {
            e.schedule_after(s.wait.count(), self_, send, tag(i, o, s.attempt));
          } else {
            transmit(e, tag(i, o, s.attempt));
          }
          break;
        case hedge_controller::action::none:
          break;
      }
      if (!o.hedge->timer_due(now_of(e))) break;
      s = o.hedge->on_timer(now_of(e), rng_);
    }
    const duration wake = o.hedge->wake_at();
    if (wake != duration::max() && wake.count() != o.timer_at) {
      o.timer_at = wake.count();
      if (timer_lane_ && wake.count() == e.now() + policy_.delay.count()) {
        e.schedule_in(*timer_lane_, self_, hedge_timer, tag(i, o, 0));  // the usual: FIFO
      } else {
        e.schedule_at(wake.count(), self_, hedge_timer, tag(i, o, 0));
      }
    }
  }

  void on_hedge_timer(engine& e, std::uint64_t payload) {
    op* o = find(payload);
    if (o == nullptr || o->done || e.now() != o->timer_at) return;  // a timer since replaced
    o->timer_at = never;
    carry_out(e, slot_of(payload), o->hedge->on_timer(now_of(e), rng_));
  }

  void transmit(engine& e, std::uint64_t payload) {
    op* o = find(payload);
    if (o == nullptr || o->done) return;  // paced by the throttle past the call's end: not sent
    o->copies[copy_of(payload) - 1] = copy_state::travelling;
    ++o->at_server;
    ++o->transmitted;
    ++at_server_;
    out_->attempt(e.now());
    e.schedule_in(net_, self_, arrive, payload);
  }

  // --- server ---

  void on_arrive(engine& e, std::uint64_t payload) {
    op& o = slots_[slot_of(payload)];  // at the server: the slot is held
    copy_state& c = o.copies[copy_of(payload) - 1];
    if (capacity_ == 0 || busy_ < capacity_) {
      begin_service(e, payload);
    } else {
      c = copy_state::queued;
      push(payload);
      ++waiting_;
    }
    if (!draining_) out_->load(e.now(), busy_, waiting_);
  }

  void begin_service(engine& e, std::uint64_t payload) {
    op& o = slots_[slot_of(payload)];
    const std::uint32_t n = copy_of(payload);
    o.copies[n - 1] = copy_state::serving;
    o.service_start[n - 1] = e.now();
    ++busy_;
    e.schedule_after(n == 1 ? o.first_service : service_time(o.id, n), self_, served, payload);
  }

  void on_served(engine& e, std::uint64_t payload) {
    op* o = find(payload);
    const std::uint32_t n = copy_of(payload);
    if (o == nullptr || o->copies[n - 1] != copy_state::serving) return;  // stopped by a cancel
    o->copies[n - 1] = copy_state::answered;
    --o->at_server;
    --at_server_;
    const time_ns since = o->service_start[n - 1];
    e.schedule_in(net_, self_, reply, payload);
    maybe_free(slot_of(payload));
    release_worker(e, since);
  }

  // A worker is free (its copy served or stopped): the next live copy in the queue takes it.
  void release_worker(engine& e, time_ns since) {
    --busy_;
    const time_ns worked = e.now() - since;
    work_ns_ += worked;
    if (!draining_) out_->work(e.now(), static_cast<double>(worked) * 1e-9);
    while (queue_count_ > 0) {
      const std::uint64_t next = pop();
      const op* o = find(next);
      if (o == nullptr || o->copies[copy_of(next) - 1] != copy_state::queued) continue;
      --waiting_;
      begin_service(e, next);
      break;
    }
    if (!draining_) out_->load(e.now(), busy_, waiting_);
  }

  void on_cancel(engine& e, std::uint64_t payload) {
    op* o = find(payload);
    if (o == nullptr) return;
    const std::uint32_t n = copy_of(payload);
    copy_state& c = o->copies[n - 1];
    if (c == copy_state::queued) {
      c = copy_state::dropped;  // left in the ring, skipped when its turn comes
      --o->at_server;
      --at_server_;
      --waiting_;
      maybe_free(slot_of(payload));
      if (!draining_) out_->load(e.now(), busy_, waiting_);
    } else if (c == copy_state::serving && cancel_ == cancel_mode::running) {
      c = copy_state::dropped;
      --o->at_server;
      --at_server_;
      const time_ns since = o->service_start[n - 1];
      maybe_free(slot_of(payload));
      release_worker(e, since);
    }
  }

  // --- client ---

  void on_reply(engine& e, std::uint64_t payload) {
    op* o = find(payload);
    if (o == nullptr || o->done) return;  // a loser's answer, after the call ended
    out_->success(e.now());
    carry_out(e, slot_of(payload),
              o->hedge->on_answer(copy_of(payload), verdict::success(), now_of(e), rng_));
  }

  void finish(engine& e, std::uint32_t i, outcome why) {
    op& o = slots_[i];
    o.done = true;
    ++finished_;
    out_->operation_done(
        {o.id, o.first_attempt, e.now(), o.transmitted, report::status_of(why), why});
    if (cancel_ != cancel_mode::none) {
      // A6: the losers are cancelled; the server hears of it one way later.
      for (std::uint32_t n = 1; n <= o.hedge->sent(); ++n) {
        const copy_state c = o.copies[n - 1];
        if (c == copy_state::travelling || c == copy_state::queued || c == copy_state::serving) {
          e.schedule_in(net_, self_, cancel_arrives, tag(i, o, n));
        }
      }
    }
    // A closed worker calls again at once (an event, not a call: a run of calls refused at once
    // by a gate must not nest one stack frame each).
    if (!open_ && started_ + pending_starts_ < static_cast<std::uint64_t>(operations_)) {
      ++pending_starts_;
      e.schedule_at(e.now(), self_, create);
    }
    maybe_free(i);
  }

  // The server's FIFO queue: a ring of payloads that grows by doubling.
  void push(std::uint64_t payload) {
    if (queue_count_ == queue_.size()) {
      std::vector<std::uint64_t> bigger(queue_.size() * 2);
      for (std::size_t k = 0; k < queue_count_; ++k) {
        bigger[k] = queue_[(queue_head_ + k) & (queue_.size() - 1)];
      }
      queue_ = std::move(bigger);
      queue_head_ = 0;
    }
    queue_[(queue_head_ + queue_count_) & (queue_.size() - 1)] = payload;
    ++queue_count_;
  }
  std::uint64_t pop() {
    const std::uint64_t p = queue_[queue_head_];
    queue_head_ = (queue_head_ + 1) & (queue_.size() - 1);
    --queue_count_;
    return p;
  }

  std::int64_t operations_;
  std::int64_t concurrency_;
  time_ns one_way_;
  std::int64_t capacity_;
  time_ns service_;
  bool quirks_;
  time_ns bucket_;
  time_ns limit_;
  bool open_ = false;
  bool exponential_service_ = false;
  cancel_mode cancel_ = cancel_mode::none;
  std::vector<slow_band> tail_;
  double mean_service_s_ = 0;
  double rate_per_s_ = 100;

  const client_strategy* strategy_ = nullptr;
  report::recorder* out_ = nullptr;
  client_strategy::live live_;
  hedge_policy policy_;
  random_generator rng_, arrivals_;
  std::uint64_t server_seed_ = 0;
  std::vector<op> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint64_t> queue_;
  std::size_t queue_head_ = 0, queue_count_ = 0;
  std::int64_t waiting_ = 0;  // live copies in the queue (dropped ones excluded)
  std::int64_t busy_ = 0;
  std::uint64_t started_ = 0, finished_ = 0;
  std::uint64_t pending_starts_ = 0;  // closed: calls scheduled to start, not yet started
  time_ns work_ns_ = 0, needed_ns_ = 0;
  std::uint64_t at_server_ = 0;  // copies sent and not yet served or dropped, all calls
  bool draining_ = false;        // every call ended; the server finishes the losers it holds
  handler_id self_ = 0;
  lane_id net_ = 0;
  std::optional<lane_id> timer_lane_;
};

const model_registration hedging_registration{
    "hedging",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new hedging(keys)); }};

}  // namespace
}  // namespace backoff::sim::hedging_model
