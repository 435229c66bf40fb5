// SPDX-License-Identifier: Apache-2.0
// The system model's replicas (system_runner.hpp): a request's arrival (accept limit, admission,
// faults), its wait for a worker (the queue's discipline, CoDel), its work and calls downstream,
// its answer, and the figures the run reports per service.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "system_runner.hpp"

namespace backoff::sim::system_model {

// ---- servers --------------------------------------------------------------------------------

service_bucket& system_runner::bucket_of(std::uint32_t service, time_ns t) {
  auto& series = series_[service];
  const auto i = static_cast<std::size_t>(t / spec_.bucket);
  if (series.size() <= i) {
    // A bucket no event has touched yet starts at the level the service holds now, so that a
    // quiet bucket with requests held shows them.
    service_bucket level;
    level.peak_in_flight = counts_[service].in_flight;
    level.peak_queue = counts_[service].queued;
    series.resize(i + 1, level);
  }
  return series[i];
}

void system_runner::note_load(engine& e, std::uint32_t service) {
  service_counts& n = counts_[service];
  n.peak_in_flight = std::max(n.peak_in_flight, n.in_flight);
  service_bucket& b = bucket_of(service, e.now());
  b.peak_in_flight = std::max(b.peak_in_flight, n.in_flight);
  b.peak_queue = std::max(b.peak_queue, n.queued);
  out_->load(e.now(), total_in_flight_ - total_queued_, total_queued_);
}

void system_runner::on_arrive(engine& e, std::uint32_t r) {
  request_record& req = requests_[r];
  const service_spec& s = spec_.services[req.service];
  replica_state& rep = replica(req.service, req.replica);
  service_counts& n = counts_[req.service];
  ++n.attempts;
  service_bucket& b = bucket_of(req.service, e.now());
  ++b.attempts;
  if (req.first) {
    ++n.arrivals;
    ++b.arrivals;
  }
  req.arrived = e.now();
  // The accept limit (refused at once, as a full listen backlog or a connection cap does), then
  // admission (shed before any work).
  switch (rep.gate.arrive(e.now(), req.ticket)) {
    case door::refused:
      return reject(e, r, true);
    case door::shed:
      return reject(e, r, false);
    case door::in:
      break;
  }
  ++n.in_flight;
  ++total_in_flight_;
  if (!s.faults.empty() && !s.faults_after_work) {
    const faults::fault_decision d = decide_faults(e, r);
    if (d.reset) return finish(e, r, false);
    req.delay = d.delay.count();
    req.slowdown = d.slowdown;
    if (d.abort_status) {
      req.failed = true;
      req.status = *d.abort_status;
      return finish(e, r, false);
    }
    if (d.hold_until && d.hold_until->count() > e.now()) {
      return e.schedule_at(d.hold_until->count(), self_, resume, r);
    }
  }
  admit(e, r);
}

// Into service, or into the queue; a full queue rejects.
void system_runner::admit(engine& e, std::uint32_t r) {
  request_record& req = requests_[r];
  replica_state& rep = replica(req.service, req.replica);
  if (rep.gate.seat(e.now())) {
    req.worker = true;
    note_load(e, req.service);
    return begin_serving(e, r);
  }
  if (rep.gate.queue_full()) {
    --counts_[req.service].in_flight;
    --total_in_flight_;
    rep.gate.leave(req.ticket, e.now(), false, false);
    return reject(e, r, false);
  }
  rep.gate.wait(r, e.now());
  ++counts_[req.service].queued;
  ++total_queued_;
  note_load(e, req.service);
}

// On a worker: its work, then its calls; or, with work = "after-calls", its calls first (unless
// its deadline has passed: then only what an expired request costs).
void system_runner::begin_serving(engine& e, std::uint32_t r) {
  const request_record& req = requests_[r];
  const service_spec& s = spec_.services[req.service];
  const bool expired = req.deadline > 0 && e.now() >= req.deadline;
  if (s.work_after_calls && !s.calls.empty() && !expired) return start_calls(e, r);
  start_work(e, r);
}

void system_runner::start_work(engine& e, std::uint32_t r) {
  request_record& req = requests_[r];
  const service_spec& s = spec_.services[req.service];
  // A request whose deadline has passed is not worth serving: it costs expired_cost, then fails.
  // A latency fault makes the service slow: its delay is part of the work, on the worker
  // (a brownout fills the pool), not a wait after it.
  const time_ns slower = req.delay;
  if (req.deadline > 0 && e.now() >= req.deadline && !s.expired_share) {
    req.delay = 0;
    req.failed = true;
    return work_until(e, r, after_pauses(req.service, e.now(), s.expired_cost));
  }
  replica_state& rep = replica(req.service, req.replica);
  if (rep.curve) return rep.curve->arrive(e, r);  // its slowdown follows N; served() is next
  req.delay = 0;
  const auto in_service = static_cast<std::int64_t>(rep.gate.busy());
  time_ns work = s.service_time.sample(server_rng_, in_service);
  if (req.slowdown != 1) {
    work = static_cast<time_ns>(std::min(static_cast<double>(work) * req.slowdown, 1e18) + 0.5);
  }
  if (s.retry_skips_work && !req.first) {
    work = static_cast<time_ns>(uniform01(server_rng_) * static_cast<double>(work) + 0.5);
  }
  work += slower;
  if (req.deadline > 0 && (s.expired_share || s.check_cost)) {
    // server.py _base_handle: an expired request is dropped after a share of its work; one that
    // expires during it stops at the deadline plus check_cost of it (its checkpoints). Both fail.
    const time_ns rest = req.deadline - e.now();
    const auto share = [&](double f) {
      return static_cast<time_ns>(static_cast<double>(work) * f);
    };
    if (rest <= 0 && s.expired_share) {
      work = share(*s.expired_share);
      req.failed = true;
    } else if (rest < work && s.check_cost) {
      work = std::min(std::max<time_ns>(rest, 0) + share(*s.check_cost), work);
      req.failed = true;
    }
  }
  work_until(e, r, after_pauses(req.service, e.now(), work));
}

void system_runner::work_until(engine& e, std::uint32_t r, time_ns at) {
  if (at != time_max) e.schedule_at(at, self_, work_done, r);  // else paused for good: held
}

// When work of this length started at `from` ends: a pause stops it, and it goes on after.
time_ns system_runner::after_pauses(std::uint32_t service, time_ns from, time_ns work) const {
  time_ns at = from;
  for (const faults::fault_window& w : spec_.services[service].pauses) {  // in start order
    const time_ns start = w.start.count(), end = w.end.count();
    if (end <= at) continue;
    if (start >= at + work) break;
    work -= std::max<time_ns>(0, start - at);
    if (w.end == duration::max()) return time_max;
    at = end;
  }
  return at + work;
}

// The curve let the request go; a latency fault's delay is its work's tail, on the worker.
void system_runner::served(engine& e, std::uint64_t tag) {
  const auto r = static_cast<std::uint32_t>(tag);
  const time_ns slower = requests_[r].delay;
  requests_[r].delay = 0;
  if (slower > 0) return e.schedule_after(slower, self_, work_done, r);
  on_work_done(e, r);
}

void system_runner::pause_service(engine& e, std::uint32_t service, bool begins) {
  for (std::uint32_t i = 0; i < spec_.services[service].replicas; ++i) {
    concurrency_server* curve = replica(service, i).curve.get();
    if (curve == nullptr) continue;  // its work's end already counts the pause (after_pauses)
    if (begins) {
      curve->pause(e);
    } else {
      curve->resume(e);
    }
  }
}

void system_runner::on_work_done(engine& e, std::uint32_t r) {
  request_record& req = requests_[r];
  out_->work(e.now(), 1.0);
  if (tally_ && req.service == spec_.clients.front().to) tally_->work(e.now());
  if (req.failed) return finish(e, r, false);
  const service_spec& s = spec_.services[req.service];
  if (s.faults_after_work && !s.faults.empty()) {
    // Decided when the work ends (server.py): a failure has cost the whole work.
    const faults::fault_decision d = decide_faults(e, r);
    req.delay = d.delay.count();
    if (d.reset || d.abort_status) {
      req.failed = true;
      return finish(e, r, false);
    }
  }
  if (s.calls.empty() || req.calls_done) return finish(e, r, true);
  start_calls(e, r);
}

// Its calls downstream: in order, or every one at once (fanned out); calls_over is next.
void system_runner::start_calls(engine& e, std::uint32_t r) {
  const service_spec& s = spec_.services[requests_[r].service];
  if (!s.fan_out) return next_downstream(e, r);
  // Fanned out: every call at once; the request answers when the last is over.
  requests_[r].pending = 1;  // held until every call is made, so one over at once does not end it
  for (std::uint32_t i = 0; i < s.calls.size(); ++i) {
    if (uniform01(server_rng_) >= s.calls[i].probability) continue;
    ++requests_[r].pending;
    start_downstream(e, r, i);
  }
  downstream_over(e, r, true);
}

// Its calls are over: its answer, or (work = "after-calls") its work, done whether they
// succeeded or not, then its answer.
void system_runner::calls_over(engine& e, std::uint32_t r) {
  request_record& req = requests_[r];
  if (!spec_.services[req.service].work_after_calls) return finish(e, r, !req.failed);
  req.calls_done = true;
  start_work(e, r);
}

// The next call made in order (those skipped by their probability passed over).
void system_runner::next_downstream(engine& e, std::uint32_t r) {
  const service_spec& s = spec_.services[requests_[r].service];
  while (requests_[r].next_call < s.calls.size()) {
    const std::uint32_t i = requests_[r].next_call++;
    if (uniform01(server_rng_) >= s.calls[i].probability) continue;
    requests_[r].pending = 1;
    return start_downstream(e, r, i);
  }
  calls_over(e, r);
}

void system_runner::start_downstream(engine& e, std::uint32_t r, std::uint32_t i) {
  const request_record& req = requests_[r];
  const call_spec& call = spec_.services[req.service].calls[i];
  if (spec_.max_depth > 0 && req.depth >= spec_.max_depth) {
    return downstream_over(e, r, false);  // deeper than run.max_depth: not made
  }
  const std::uint32_t slot =
      slot_base_[req.service] +
      req.replica * static_cast<std::uint32_t>(spec_.services[req.service].calls.size()) + i;
  const std::uint32_t root = root_of(req.call);
  const std::uint32_t c = open_call(e, call.edge, call.to, slot);
  call_record& rec = calls_[c];
  rec.parent = r;
  rec.call = i;
  rec.root = root;
  rec.deadline = requests_[r].deadline;
  attempt(e, c, false);
}

void system_runner::downstream_over(engine& e, std::uint32_t r, bool ok, bool do_not_retry) {
  request_record& req = requests_[r];
  if (!ok) req.failed = true;
  if (do_not_retry) req.do_not_retry = true;
  if (--req.pending > 0) return;
  if (spec_.services[req.service].fan_out || req.failed) return calls_over(e, r);
  next_downstream(e, r);
}

// The request is over at its replica: its worker and connection go, and its answer goes back.
void system_runner::finish(engine& e, std::uint32_t r, bool ok) {
  request_record& req = requests_[r];
  const std::uint32_t service = req.service;
  const std::uint32_t replica_index = req.replica;
  replica_state& rep = replica(service, replica_index);
  const service_spec& s = spec_.services[service];
  service_counts& n = counts_[service];
  const bool worker = req.worker;
  rep.gate.leave(req.ticket, e.now(), ok, worker);
  --n.in_flight;
  --total_in_flight_;
  if (ok) {
    ++n.completed;
    ++bucket_of(service, e.now()).completed;
    latency_[service].record(e.now() - req.arrived);
  } else {
    ++n.failed;
    ++bucket_of(service, e.now()).failed;
  }
  if (s.ejection.on) {
    rep.failures_in_a_row = ok ? 0 : rep.failures_in_a_row + 1;
    if (rep.failures_in_a_row >= s.ejection.failures && rep.ejected_until <= e.now()) {
      std::uint32_t out = 0;
      for (std::uint32_t i = 0; i < s.replicas; ++i)
        out += replica(service, i).ejected_until > e.now();
      if (static_cast<double>(out + 1) <= s.ejection.max_share * s.replicas || out == 0) {
        rep.ejected_until = e.now() + s.ejection.base * ++rep.times_ejected;
        rep.failures_in_a_row = 0;
      }
    }
  }
  answer(e, r, ok ? answer_ok : req.do_not_retry ? answer_do_not_retry : answer_failed);
  if (worker) serve_next(e, service, replica_index);
  note_load(e, service);
}

// A request turned away without service: refused at the accept limit (the caller knows it was
// not sent), or shed (admission, a full queue, CoDel).
void system_runner::reject(engine& e, std::uint32_t r, bool refused) {
  const std::uint32_t service = requests_[r].service;
  ++counts_[service].rejected;
  ++bucket_of(service, e.now()).rejected;
  answer(e, r, refused ? answer_refused : answer_failed);
}

// The answer travels back over the caller's hop; the request's record is free from now on.
void system_runner::answer(engine& e, std::uint32_t r, std::uint32_t how) {
  request_record& req = requests_[r];
  const call_record& caller = calls_[req.call];
  // A caller that gave up on this attempt (timed out, or over) ignores the answer: not sent.
  if (awaits(req)) {
    const std::optional<distribution>* back =
        caller.parent == no_index ? &spec_.clients[caller.group].latency_back : nullptr;
    const distribution& way = back != nullptr && *back ? **back : hop(caller);
    e.schedule_after(req.delay + way.sample(network_rng_, 0), self_, answer_kind(req, how),
                     pack(req.call, req.generation));
  }
  req.in_use = false;
  free_requests_.push_back(r);
}

// Workers free: the queue's next request by the discipline; CoDel drops what waited too long.
void system_runner::serve_next(engine& e, std::uint32_t service, std::uint32_t replica_index) {
  replica_state& rep = replica(service, replica_index);
  while (const auto next = rep.gate.next(e.now())) {
    const std::uint32_t r = next->id;
    --counts_[service].queued;
    --total_queued_;
    if (next->dropped) {
      --counts_[service].in_flight;
      --total_in_flight_;
      rep.gate.leave(requests_[r].ticket, e.now(), false, false);
      reject(e, r, false);
      continue;
    }
    requests_[r].worker = true;
    begin_serving(e, r);
  }
}

// A simulated request has two headers: how long ago its call's first attempt left (the one a
// fading errors fault reads), and its key, which any other header a fault reads (a per-key
// outage's key_header) gets. Each is written only when a fault asks for it.
faults::fault_decision system_runner::decide_faults(engine& e, std::uint32_t r) {
  const request_record& req = requests_[r];
  const auto header = [this, &req](std::string_view name) {
    if (name == faults::since_first_attempt_header) {
      header_text_ = fmt::format("{:.6f}", static_cast<double>(req.since_first) * 1e-6);
    } else {
      header_text_ = std::to_string(req.key);
    }
    return std::string_view{header_text_};
  };
  return faults::decide(spec_.services[req.service].faults, duration{e.now()}, {"/", header},
                        fault_rng_);
}

void system_runner::start_outage_tally() {
  tally_.reset();
  const auto window = outage();
  if (!window) return;
  double rate = 0;
  for (const client_group& g : spec_.clients) {
    if (g.to != spec_.clients.front().to) continue;
    if (g.arrivals != arrival_kind::poisson && g.arrivals != arrival_kind::constant) return;
    rate += g.rate;
  }
  if (rate <= 0 || spec_.warmup > window->start) return;
  tally_.emplace(report::outage_phases{.warmup = spec_.warmup,
                                       .outage = *window,
                                       .end = spec_.duration,
                                       .bucket = spec_.bucket,
                                       .base_per_s = rate});
}

std::uint32_t system_runner::root_of(std::uint32_t c) const {
  return calls_[c].root;
}

// summary.json's `services` and the model's own figures; services.csv's series (moved out).
void system_runner::report_fields(report::recorder& out) {
  const auto ops = static_cast<double>(operations_);
  const auto per_op = [&](std::uint64_t n) -> std::optional<double> {
    if (operations_ == 0) return std::nullopt;
    return static_cast<double>(n) / ops;
  };
  out.field("deepest_calls_per_request", per_op(counts_[deepest_].attempts));
  if (tally_) tally_->report(out);
  for (std::uint32_t i = 0; i < spec_.services.size(); ++i) {
    const service_counts& n = counts_[i];
    const std::string p = "services." + spec_.services[i].name + ".";
    out.field(p + "arrivals", static_cast<double>(n.arrivals));
    out.field(p + "attempts", static_cast<double>(n.attempts));
    out.field(p + "completed", static_cast<double>(n.completed));
    out.field(p + "rejected", static_cast<double>(n.rejected));
    out.field(p + "failed", static_cast<double>(n.failed));
    out.field(p + "amplification", per_op(n.attempts));
    out.field(p + "peak_in_flight", static_cast<double>(n.peak_in_flight));
    const report::hdr_histogram& h = latency_[i];
    for (const auto& [name, q] :
         {std::pair{"p50", 0.5}, std::pair{"p95", 0.95}, std::pair{"p99", 0.99}}) {
      out.field(p + "latency_s." + name,
                h.count() == 0
                    ? std::nullopt
                    : std::optional<double>(static_cast<double>(h.value_at_quantile(q)) * 1e-9));
    }
  }
  std::vector<report::service_series> series;
  for (std::uint32_t i = 0; i < spec_.services.size(); ++i) {
    series.push_back({spec_.services[i].name, std::move(series_[i])});
  }
  out.services(std::move(series));
}

}  // namespace backoff::sim::system_model
