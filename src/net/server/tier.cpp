// SPDX-License-Identifier: Apache-2.0
#include "tier.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>

#include "backoff/deadline_headers.hpp"
#include "backoff/duration.hpp"

namespace backoff::net {
namespace {

using std::chrono::nanoseconds;

// A stop ends a long wait within this (a work of seconds, a hang).
constexpr auto slice = std::chrono::milliseconds(100);

// A call downstream failed: 502, or 503 saying not to retry when its edge passes that up.
tier::answer failed_below(const downstream::result& below) {
  return below.do_not_retry ? tier::answer{tier::answer_kind::status, 503, true}
                            : tier::answer{tier::answer_kind::status, 502, false};
}

nanoseconds scaled(nanoseconds d, double factor) {
  const double n = std::min(static_cast<double>(d.count()) * factor, 1e18);
  return nanoseconds(static_cast<std::int64_t>(n + 0.5));
}

}  // namespace

// A request waiting for a worker: its coroutine sleeps on `wake` until a free worker takes it,
// CoDel drops it, or the tier stops.
struct tier::waiter {
  waiter(loop_executor executor, systems::admission_ticket& t) : wake(executor), ticket(t) {}
  timer_type wake;
  systems::admission_ticket& ticket;
  seat_state now = seat_state::waiting;
};

tier::tier(const systems::service_spec& service, std::uint64_t seed, loop_executor executor,
           server_metrics& metrics, std::vector<downstream_spec> calls, nanoseconds bucket)
    : service_(service),
      executor_(executor),
      metrics_(metrics),
      gate_(service),
      work_rng_(derive_seed(seed, 1)),
      fault_rng_(derive_seed(seed, 2)),
      pause_gate_(executor),
      bucket_(bucket) {
  if (!calls.empty()) calls_ = std::make_unique<downstream>(std::move(calls), executor, seed);
  metrics_.tier = true;
  publish();
}

tier::request tier::request_of(
    const boost::beast::http::request<boost::beast::http::string_body>& req) {
  const auto field = [&req](std::string_view name) {
    const auto it = req.find(name);
    return it == req.end() ? std::string_view{} : std::string_view(it->value());
  };
  const std::string_view target = req.target();
  request r{{target.substr(0, target.find('?')), field}, std::nullopt, false, {}};
  const propagated_deadline sent = read_deadline_headers(field);
  if (sent.timeout) r.deadline = saturating_add(clock::now(), *sent.timeout);
  r.retry = sent.attempt && *sent.attempt > 1;
  r.key = field("x-backoff-key");
  return r;
}

void tier::start(clock::time_point origin) {
  origin_ = origin;
  started_ = true;
  publish();
}

systems::time_ns tier::now_ns() const {
  return std::chrono::duration_cast<nanoseconds>(clock::now() - origin_).count();
}

task<tier::answer> tier::serve(const request& r) {
  if (stopping_) co_return answer{answer_kind::gone};
  const auto arrived = clock::now();
  ++figures_.total.attempts;
  if (!r.retry) ++figures_.total.arrivals;
  if (auto* b = bucket_now()) {
    ++b->attempts;
    if (!r.retry) ++b->arrivals;
  }
  systems::admission_ticket ticket;
  switch (gate_.arrive(now_ns(), ticket)) {
    case systems::door::refused:
      shed(server_metrics::shed_reason::refused);
      co_return answer{answer_kind::reset};
    case systems::door::shed:
      shed(server_metrics::shed_reason::admission);
      co_return answer{answer_kind::status, 503};
    case systems::door::in:
      break;
  }
  publish();
  faults::fault_decision fault;
  if (!service_.faults.empty() && !service_.faults_after_work) {
    fault = faults::decide(service_.faults, clock::now() - origin_, r.view, fault_rng_);
    if (fault.any()) metrics_.faults_fired(fault.fired);
    if (fault.reset || fault.abort_status) {
      finish(ticket, false, false);
      ended(false, arrived);
      co_return fault.reset ? answer{answer_kind::reset}
                            : answer{answer_kind::status, *fault.abort_status};
    }
    if (fault.hold_until && !co_await sleep_until(saturating_add(origin_, *fault.hold_until))) {
      finish(ticket, false, false);
      co_return answer{answer_kind::gone};
    }
  }
  co_return co_await serve_admitted(r, ticket, fault, arrived);
}

// A worker now, or a place in the queue; then the work and its answer.
task<tier::answer> tier::serve_admitted(const request& r, systems::admission_ticket& ticket,
                                        const faults::fault_decision& fault,
                                        clock::time_point arrived) {
  if (!gate_.seat(now_ns())) {
    if (gate_.queue_full()) {
      finish(ticket, false, false);
      shed(server_metrics::shed_reason::queue_full);
      co_return answer{answer_kind::status, 503};
    }
    switch (co_await wait_for_worker(ticket)) {
      case seat_state::seated:
        break;
      case seat_state::dropped:  // CoDel: seat_waiting let it go and counted it
        co_return answer{answer_kind::status, 503};
      case seat_state::waiting:  // the tier stops
        finish(ticket, false, false);
        co_return answer{answer_kind::gone};
    }
  } else {
    note_peaks();
  }
  publish();
  nanoseconds answer_delay{0};
  answer a;
  if (calls_ && service_.work_after_calls && !(r.deadline && clock::now() >= *r.deadline)) {
    // Its calls first, then its own work whether they succeeded or not (ThomWright's servers).
    const downstream::result below = co_await make_calls(r);
    a = co_await work(r, fault, answer_delay);
    if (a.kind == answer_kind::ok && !below.ok) a = failed_below(below);
  } else {
    a = co_await work(r, fault, answer_delay);
    if (a.kind == answer_kind::ok && calls_) {
      const downstream::result below = co_await make_calls(r);
      if (!below.ok) a = failed_below(below);
    }
  }
  finish(ticket, a.kind == answer_kind::ok, true);
  if (a.kind != answer_kind::gone) ended(a.kind == answer_kind::ok, arrived);
  if (a.kind == answer_kind::ok) metrics_.observe_service(clock::now() - arrived);
  if (answer_delay.count() > 0 && a.kind != answer_kind::gone &&
      !co_await sleep_until(saturating_add(clock::now(), answer_delay))) {
    co_return answer{answer_kind::gone};
  }
  co_return a;
}

// Its calls downstream, on its worker: in order (the first that fails ends them), or all at once
// (fan_out) and over when the last is.
struct tier::fan_join {
  explicit fan_join(loop_executor executor) : done(executor) {}
  std::size_t pending = 0;
  downstream::result all{true, false, 0};
  timer_type done;
};

task<downstream::result> tier::make_calls(const request& r) {
  downstream::context from;
  from.deadline = r.deadline;
  from.key = r.key;
  if (!service_.fan_out) {
    for (std::size_t i = 0; i < calls_->size(); ++i) {
      if (!calls_->drawn(i)) continue;
      const downstream::result one = co_await calls_->call(i, from);
      if (!one.ok) co_return one;
    }
    co_return downstream::result{true, false, 0};
  }
  auto join = std::make_shared<fan_join>(executor_);
  for (std::size_t i = 0; i < calls_->size(); ++i) {
    if (!calls_->drawn(i)) continue;
    ++join->pending;
    boost::asio::co_spawn(executor_, fan_one(i, from, join), boost::asio::detached);
  }
  join->done.expires_at(clock::time_point::max());
  while (join->pending > 0) co_await join->done.async_wait(on_loop);
  co_return join->all;
}

task<> tier::fan_one(std::size_t i, downstream::context from, std::shared_ptr<fan_join> join) {
  const downstream::result one = co_await calls_->call(i, from);
  if (!one.ok) {
    join->all.ok = false;
    join->all.do_not_retry = join->all.do_not_retry || one.do_not_retry;
  }
  if (--join->pending == 0) join->done.cancel();
}

task<tier::seat_state> tier::wait_for_worker(systems::admission_ticket& ticket) {
  waiter w{executor_, ticket};
  std::uint32_t id = 0;
  if (free_ids_.empty()) {
    id = static_cast<std::uint32_t>(waiting_.size());
    waiting_.push_back(&w);
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
    waiting_[id] = &w;
  }
  gate_.wait(id, now_ns());
  note_peaks();
  publish();
  w.wake.expires_at(clock::time_point::max());
  while (w.now == seat_state::waiting && !stopping_) {
    co_await w.wake.async_wait(on_loop);
  }
  if (w.now == seat_state::waiting) waiting_[id] = nullptr;  // stopped: never freed again
  co_return w.now;
}

// Workers free: the queue's next requests by the discipline; CoDel drops what waited too long.
void tier::seat_waiting() {
  if (stopping_) return;
  const systems::time_ns now = now_ns();
  while (const auto next = gate_.next(now)) {
    waiter* w = waiting_[next->id];
    waiting_[next->id] = nullptr;
    free_ids_.push_back(next->id);
    if (next->dropped) {
      gate_.leave(w->ticket, now, false, false);
      shed(server_metrics::shed_reason::codel);
      w->now = seat_state::dropped;
    } else {
      w->now = seat_state::seated;
    }
    w->wake.cancel();
  }
}

// The request's work on its worker, as the system model's start_work: its answer (ok, 504 when
// its deadline passed, a fault's after the work) and how long that answer waits (a latency fault
// decided after the work).
task<tier::answer> tier::work(const request& r, const faults::fault_decision& fault,
                              nanoseconds& answer_delay) {
  metrics_.concurrency.fetch_add(1, std::memory_order_relaxed);
  const auto start = clock::now();
  const bool expired = r.deadline && start >= *r.deadline;
  answer a{answer_kind::ok};
  bool done = true;
  const systems::distribution& time = service_.service_time;
  if (expired && !service_.expired_share) {
    // Not worth serving: it costs what noticing costs, then fails.
    metrics_.expired(server_metrics::expiry::before_service);
    a = answer{answer_kind::status, 504};
    done = co_await work_for(nanoseconds(service_.expired_cost));
  } else if (time.kind == systems::distribution_kind::concurrency && time.tick > 0) {
    // smira's server: N re-read every tick; a latency fault's delay is the work's tail.
    done = co_await tick_curve();
    if (done) done = co_await work_for(fault.delay);
  } else {
    nanoseconds w(time.sample(work_rng_, static_cast<std::int64_t>(gate_.busy())));
    if (fault.slowdown != 1) w = scaled(w, fault.slowdown);
    if (service_.retry_skips_work && r.retry) w = scaled(w, uniform01(work_rng_));
    w += fault.delay;
    if (r.deadline && (service_.expired_share || service_.check_cost)) {
      // Isaev's server.py: dropped after a share of the work when expired; stopped at the
      // deadline plus check_cost of it when the deadline passes during the work.
      const auto rest = std::chrono::duration_cast<nanoseconds>(*r.deadline - start);
      if (rest.count() <= 0 && service_.expired_share) {
        w = scaled(w, *service_.expired_share);
        metrics_.expired(server_metrics::expiry::before_service);
        a = answer{answer_kind::status, 504};
      } else if (rest < w && service_.check_cost) {
        w = std::min(std::max(rest, nanoseconds(0)) + scaled(w, *service_.check_cost), w);
        metrics_.expired(server_metrics::expiry::in_service);
        a = answer{answer_kind::status, 504};
      }
    }
    done = co_await work_for(w);
  }
  metrics_.concurrency.fetch_sub(1, std::memory_order_relaxed);
  if (!done) co_return answer{answer_kind::gone};
  if (a.kind == answer_kind::ok && service_.faults_after_work && !service_.faults.empty()) {
    // Decided when the work ends (server.py): a failure has cost the whole work.
    const faults::fault_decision after =
        faults::decide(service_.faults, clock::now() - origin_, r.view, fault_rng_);
    if (after.any()) metrics_.faults_fired(after.fired);
    answer_delay = after.delay;
    if (after.reset) a = answer{answer_kind::reset};
    if (after.abort_status) a = answer{answer_kind::status, *after.abort_status};
  }
  co_return a;
}

// Waits out a pause; false when the tier stops.
task<bool> tier::unpaused() {
  while (paused_ && !stopping_) co_await pause_gate_.async_wait(on_loop);
  co_return !stopping_;
}

// `d` of work: a pause stops it, and it goes on after. False when the tier stops.
task<bool> tier::work_for(nanoseconds d) {
  const auto begin = clock::now();
  const auto paused_at_begin = paused_so_far(begin);
  timer_type timer(executor_);
  for (;;) {
    if (!co_await unpaused()) co_return false;
    const auto now = clock::now();
    const auto due = saturating_add(begin + (paused_so_far(now) - paused_at_begin), d);
    if (now >= due) co_return true;
    timer.expires_at(due - now > slice ? now + slice : due);
    co_await timer.async_wait(on_loop);
  }
}

// smira's server (2016): the time at the current N, re-read every tick, until the work done
// (pauses excluded) reaches it.
task<bool> tier::tick_curve() {
  const auto begin = clock::now();
  const auto paused_at_begin = paused_so_far(begin);
  const nanoseconds tick(service_.service_time.tick);
  timer_type timer(executor_);
  for (;;) {
    if (!co_await unpaused()) co_return false;
    const nanoseconds due(
        service_.service_time.sample(work_rng_, static_cast<std::int64_t>(gate_.busy())));
    metrics_.last_delay_ns.store(due.count(), std::memory_order_relaxed);
    const auto now = clock::now();
    if (now - begin - (paused_so_far(now) - paused_at_begin) >= due) co_return true;
    timer.expires_after(tick);
    co_await timer.async_wait(on_loop);
  }
}

// Waits until `until` (a hang fault); false when the tier stops meanwhile.
task<bool> tier::sleep_until(clock::time_point until) {
  return wait_until_or_stop(executor_, until, stopping_);
}

void tier::finish(systems::admission_ticket& ticket, bool ok, bool had_worker) {
  gate_.leave(ticket, now_ns(), ok, had_worker);
  if (had_worker) seat_waiting();
  publish();
}

void tier::shed(server_metrics::shed_reason why) {
  metrics_.shed(why);
  ++figures_.total.rejected;
  if (auto* b = bucket_now()) ++b->rejected;
  publish();
}

// A request served: its answer a success or not.
void tier::ended(bool ok, clock::time_point arrived) {
  auto* b = bucket_now();
  if (ok) {
    ++figures_.total.completed;
    if (b != nullptr) ++b->completed;
    figures_.latency.record(
        std::chrono::duration_cast<nanoseconds>(clock::now() - arrived).count());
  } else {
    ++figures_.total.failed;
    if (b != nullptr) ++b->failed;
  }
}

// The bucket of now (none without a bucket width); one no event has touched yet starts at the
// levels held now, so that a quiet bucket with requests held shows them (as the simulator's).
report::service_counts_bucket* tier::bucket_now() {
  if (bucket_.count() <= 0 || !started_) return nullptr;
  const auto i =
      static_cast<std::size_t>(std::max<systems::time_ns>(now_ns(), 0) / bucket_.count());
  if (figures_.buckets.size() <= i) {
    report::service_counts_bucket level;
    level.peak_in_flight = gate_.held();
    level.peak_queue = static_cast<std::int64_t>(gate_.queued());
    figures_.buckets.resize(i + 1, level);
  }
  return &figures_.buckets[i];
}

// The peaks, when a request has a worker or a place in the queue (as the simulator's note_load:
// one that the full queue turns away was never held).
void tier::note_peaks() {
  const auto held = static_cast<std::int64_t>(gate_.held());
  const auto queued = static_cast<std::int64_t>(gate_.queued());
  figures_.total.peak_in_flight = std::max(figures_.total.peak_in_flight, held);
  figures_.total.peak_queue = std::max(figures_.total.peak_queue, queued);
  if (auto* b = bucket_now()) {
    b->peak_in_flight = std::max(b->peak_in_flight, held);
    b->peak_queue = std::max(b->peak_queue, queued);
  }
}

void tier::publish() {
  metrics_.tier_held.store(gate_.held(), std::memory_order_relaxed);
  metrics_.tier_in_service.store(gate_.busy(), std::memory_order_relaxed);
  metrics_.tier_queued.store(static_cast<std::int64_t>(gate_.queued()), std::memory_order_relaxed);
  metrics_.tier_workers.store(service_.workers == 0 ? -1 : gate_.workers_now(now_ns()),
                              std::memory_order_relaxed);
  const auto limit = gate_.admission_limit();
  metrics_.tier_admission_limit.store(limit ? static_cast<std::int64_t>(*limit) : -1,
                                      std::memory_order_relaxed);
}

tier::clock::duration tier::paused_so_far(clock::time_point now) const {
  return paused_before_ + (paused_ ? now - paused_since_ : clock::duration{0});
}

void tier::set_paused(bool on) {
  if (on == paused_) return;
  const auto now = clock::now();
  paused_ = on;
  if (on) {
    paused_since_ = now;
    pause_gate_.expires_at(clock::time_point::max());
  } else {
    paused_before_ += now - paused_since_;
    pause_gate_.cancel();
  }
}

void tier::stop() {
  stopping_ = true;
  if (calls_) calls_->stop();
  pause_gate_.cancel();
  for (waiter* w : waiting_) {
    if (w != nullptr) w->wake.cancel();
  }
}

}  // namespace backoff::net
