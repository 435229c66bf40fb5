// SPDX-License-Identifier: Apache-2.0
// model = "system": the user's own system (docs/SYSTEMS.md). Services with replicas, workers,
// queues, accept and admission limits, faults and downstream calls; client groups open or
// closed; each edge's guards a backoff::strategy, run through the library's retry controller (or,
// on an edge that hedges, its hedge controller) as a real client runs them. system_model.hpp has
// the life of one attempt; system_spec.hpp what the file says.
#include <algorithm>
#include <cmath>
#include <string>

#include "system_runner.hpp"

namespace backoff::sim::system_model {

// ---- setup ----------------------------------------------------------------------------------

memory_need system_runner::memory() const {
  // Operations in flight: a closed group's users, or ten seconds of an open group's arrivals;
  // each holds a call and a request per tier it has reached.
  double in_flight = 0;
  for (const client_group& g : spec_.clients) {
    in_flight +=
        g.arrivals == arrival_kind::closed ? g.users : std::max(g.rate, g.rate_to) * 10.0 + 1.0;
  }
  memory_need m;
  const auto tiers = static_cast<double>(spec_.services.size());
  // A call's record, its request's; and, sized like the calls, a hedge's copies when an edge
  // hedges and a window's ticket when one paces.
  bool hedges = false, windows = false;
  const auto look = [&](const backoff::strategy& g) {
    hedges = hedges || g.hedge.has_value();
    windows = windows || g.window.has_value();
  };
  for (const edge_spec& e : spec_.edges) look(e.defaults);
  for (const auto& per_edge : spec_.edge_guards) {
    for (const backoff::strategy& g : per_edge) look(g);
  }
  const std::size_t per_call =
      sizeof(call_record) + sizeof(request_record) + (hedges ? sizeof(hedge_state) : 0) +
      (windows ? sizeof(std::optional<send_ticket>) + sizeof(std::uint32_t) : 0);
  m.per("[[clients]]", static_cast<std::int64_t>(in_flight * tiers), static_cast<double>(per_call),
        "calls in flight (10 s of each open group's arrivals or a closed group's users, at "
        "every service)");
  m.over("run.duration", spec_.duration + spec_.drain, spec_.bucket);
  return m;
}

void system_runner::check_all(const std::vector<client_strategy>& all) const {
  // Resolved once, before any run (make_model calls this before the runner starts).
  auto& self = const_cast<system_runner&>(*this);
  std::vector<systems::strategy_edges> strategies;
  for (const client_strategy& s : all) {
    strategies.push_back({s.name(), s.where(), &s.guards(), &s.edge_settings()});
  }
  self.spec_.resolve(strategies);
  self.strategy_names_.clear();
  for (const client_strategy& s : all) self.strategy_names_.push_back(s.name());
  const guard_support can = guards();
  for (std::size_t s = 0; s < all.size(); ++s) {
    for (std::size_t e = 0; e < spec_.edges.size(); ++e) {
      const backoff::strategy& g = spec_.edge_guards[s][e];
      std::optional<guard_refusal> refused = g.refusal(can);
      if (!refused && g.window && !g.retries_at_once()) {
        // The window, not a timer, decides when a failed call goes again.
        refused = guard_refusal{"window",
                                "a window resends from its queue: give the edge "
                                "policy = \"none\""};
      }
      if (refused) {
        throw scenario_error(all[s].where() + ": strategy " + all[s].name() + ": edge " +
                             spec_.edges[e].name + ": the system model cannot honour " +
                             std::string(refused->key) + ": " + refused->why);
      }
    }
  }
}

void system_runner::reset(const client_strategy& strategy, std::uint64_t seed,
                          report::recorder& out) {
  out_ = &out;
  calls_.clear();  // before the lives their controllers point into
  hedges_.clear();
  free_calls_.clear();
  requests_.clear();
  free_requests_.clear();
  const auto named = std::find(strategy_names_.begin(), strategy_names_.end(), strategy.name());
  const std::vector<backoff::strategy>& guards =
      spec_.edge_guards[static_cast<std::size_t>(named - strategy_names_.begin())];
  guards_now_ = &guards;
  options_now_ = &spec_.edge_options_of[static_cast<std::size_t>(named - strategy_names_.begin())];
  policies_.clear();
  for (const backoff::strategy& g : guards) policies_.push_back(g.retry());
  // Slots: one per client group, then one per (replica, call) of each service: each caller keeps
  // its own budget, breaker and limiter, as each real client process does.
  slot_edge_.clear();
  group_base_.clear();
  for (const client_group& g : spec_.clients) {
    group_base_.push_back(static_cast<std::uint32_t>(slot_edge_.size()));
    slot_edge_.insert(slot_edge_.end(), g.instances, g.edge);
  }
  slot_base_.clear();
  replica_base_.clear();
  replicas_.clear();
  for (const service_spec& s : spec_.services) {
    slot_base_.push_back(static_cast<std::uint32_t>(slot_edge_.size()));
    replica_base_.push_back(static_cast<std::uint32_t>(replicas_.size()));
    for (std::uint32_t r = 0; r < s.replicas; ++r) {
      for (const call_spec& c : s.calls) slot_edge_.push_back(c.edge);
      replica_state& st = replicas_.emplace_back(s);
      if (s.service_time.kind == distribution_kind::concurrency && s.service_time.tick > 0) {
        const distribution& d = s.service_time;
        st.curve = std::make_unique<concurrency_server>(
            concurrency_server::params{.limit = d.curve.limit,
                                       .factor = d.curve.factor,
                                       .k = d.curve.k,
                                       .base_delay = static_cast<time_ns>(d.a),
                                       .tick = d.tick},
            static_cast<concurrency_server::listener&>(*this));
      }
    }
  }
  lives_.clear();
  lives_.reserve(slot_edge_.size());
  for (const std::uint32_t edge : slot_edge_) lives_.push_back(guards[edge].instantiate());
  window_calls_.assign(slot_edge_.size(), {});
  tickets_.clear();
  round_robin_.assign(spec_.services.size(), 0);
  counts_.assign(spec_.services.size(), {});
  latency_.assign(
      spec_.services.size(),
      report::hdr_histogram(86'400'000'000'000, report::hdr_precision::significant_digits(3)));
  series_.assign(spec_.services.size(), {});
  group_started_.assign(spec_.clients.size(), 0);
  deepest_ = 0;
  for (std::uint32_t s = 0; s < spec_.services.size(); ++s) {
    if (spec_.services[s].depth > spec_.services[deepest_].depth) deepest_ = s;
  }
  arrivals_rng_ = random_generator{stream_seed(seed, stream::workload)};
  server_rng_ = random_generator{stream_seed(seed, stream::server)};
  client_rng_ = random_generator{stream_seed(seed, stream::client)};
  network_rng_ = random_generator{stream_seed(seed, stream::network)};
  fault_rng_ = random_generator{stream_seed(seed, stream::outage)};
  operations_ = finished_ = 0;
  start_outage_tally();
  total_in_flight_ = total_queued_ = 0;
  out.work_label("requests served (every service)");
}

run_info system_runner::run(const client_strategy& strategy, std::uint64_t seed, engine& e,
                            report::recorder& out, const progress_fn& progress) {
  reset(strategy, seed, out);
  self_ = e.add(*this);
  for (replica_state& r : replicas_) {
    if (r.curve) r.curve->attach(e);
  }
  for (std::uint32_t s = 0; s < spec_.services.size(); ++s) {
    for (const faults::fault_window& w : spec_.services[s].pauses) {
      e.schedule_at(w.start.count(), self_, pause_begins, s);
      if (w.end != duration::max()) e.schedule_at(w.end.count(), self_, pause_ends, s);
    }
    for (const time_ns at : spec_.services[s].capacity_returns) {
      e.schedule_at(at, self_, capacity_returns, s);
    }
  }
  for (std::uint32_t g = 0; g < spec_.clients.size(); ++g) {
    const client_group& group = spec_.clients[g];
    if (group.arrivals == arrival_kind::closed) {
      // A closed group of N users with fewer operations than users starts only those.
      const std::uint64_t users = group.operations > 0
                                      ? std::min<std::uint64_t>(group.users, group.operations)
                                      : group.users;
      for (std::uint64_t u = 0; u < users; ++u) {
        if (group.think_first) {
          user_thinks(e, g);
        } else {
          start_operation(e, g, 0);
        }
      }
    } else {
      e.schedule_at(0, self_, group_arrival, g);
    }
  }
  const time_ns limit = spec_.duration + spec_.drain;
  const time_ns slice = std::max<time_ns>(spec_.bucket, 1'000'000'000);
  time_ns t = 0;
  while (e.pending() > 0 && t < limit) {
    t = std::min(t + slice, limit);
    e.run_until(t);
    if (progress) progress(static_cast<double>(t) / static_cast<double>(limit));
  }
  const time_ns end = e.now();
  for (const call_record& c : calls_) {
    if (c.in_use && c.parent == no_index) {
      out.operation_done({c.operation, c.started, end, c.attempts, report::op_status::unfinished});
    }
  }
  report_fields(out);
  calls_.clear();  // before the lives: a controller with an attempt in flight holds a permit
  hedges_.clear();
  return {end, e.events_processed()};
}

void system_runner::handle(engine& e, const event& ev) {
  const auto index = static_cast<std::uint32_t>(ev.payload);
  switch (ev.kind) {
    case group_arrival:
      return on_group_arrival(e, index);
    case user_wakes:
      if (e.now() >= spec_.duration) return;  // arrivals have stopped
      return start_operation(e, static_cast<std::uint32_t>(ev.payload & 0xffff),
                             static_cast<time_ns>(ev.payload >> 16));
    case pause_begins:
    case pause_ends:
      return pause_service(e, index, ev.kind == pause_begins);
    case capacity_returns:
      for (std::uint32_t i = 0; i < spec_.services[index].replicas; ++i) serve_next(e, index, i);
      return;
    case send_now:
      return attempt(e, index, true);
    case retry_wake:
      return attempt(e, index, false);
    case arrive:
      return on_arrive(e, index);
    case resume:
      return admit(e, index);
    case work_done:
      return on_work_done(e, index);
    case answer_ok:
    case answer_failed:
    case answer_refused:
    case attempt_timeout:
    case answer_fatal:
    case answer_do_not_retry:
      return on_answer(e, ev.payload, ev.kind);
    case hedge_send:
      return on_hedge_send(e, ev.payload);
    case hedge_timer:
      return on_hedge_timer(e, ev.payload);
    default:
      return;
  }
}

// ---- callers --------------------------------------------------------------------------------

namespace {

// An operation's key (a user id, for a per-key outage, taken mod 1000): its id mixed
// (splitmix64), so that keys spread as random ids do, without a draw that would move every other
// random number.
std::uint64_t operation_key(std::uint64_t operation) {
  return splitmix64(operation);  // what `backoff load --send-key` sends for its operations
}

}  // namespace

std::uint32_t system_runner::take_call() {
  std::uint32_t c;
  if (!free_calls_.empty()) {
    c = free_calls_.back();
    free_calls_.pop_back();
  } else {
    c = static_cast<std::uint32_t>(calls_.size());
    calls_.emplace_back();
  }
  call_record& rec = calls_[c];
  const std::uint32_t generation = rec.generation;
  rec = call_record{};
  rec.generation = generation;
  rec.in_use = true;
  return c;
}

std::uint32_t system_runner::take_request() {
  std::uint32_t r;
  if (!free_requests_.empty()) {
    r = free_requests_.back();
    free_requests_.pop_back();
  } else {
    r = static_cast<std::uint32_t>(requests_.size());
    requests_.emplace_back();
  }
  requests_[r] = request_record{};
  requests_[r].in_use = true;
  return r;
}

// The next arrival of an open group: a Poisson process (for a ramp, thinned from its highest
// rate so that the rate follows the ramp exactly), or evenly spaced.
void system_runner::on_group_arrival(engine& e, std::uint32_t g) {
  const client_group& group = spec_.clients[g];
  if (e.now() >= spec_.duration) return;
  if (group.operations > 0 && group_started_[g] >= group.operations) return;
  const auto rate_at = [&](time_ns t) {
    if (group.arrivals != arrival_kind::ramp) return group.rate;
    const double f = std::min(1.0, static_cast<double>(t) / static_cast<double>(group.ramp_over));
    return group.rate + (group.rate_to - group.rate) * f;
  };
  const bool accepted =
      group.arrivals != arrival_kind::ramp ||
      uniform01(arrivals_rng_) * std::max(group.rate, group.rate_to) < rate_at(e.now());
  if (accepted && (e.now() > 0 || group.arrivals != arrival_kind::ramp || group.rate > 0)) {
    start_operation(e, g, 0);
  }
  const double top =
      group.arrivals == arrival_kind::ramp ? std::max(group.rate, group.rate_to) : group.rate;
  if (top <= 0) return;
  const double gap = group.arrivals == arrival_kind::constant
                         ? 1e9 / top
                         : exponential_variate(arrivals_rng_, 1e9 / top);
  e.schedule_after(std::max<time_ns>(1, static_cast<time_ns>(gap + 0.5)), self_, group_arrival, g);
}

// A closed group's user thinks, then starts an operation; the think time travels with the
// event (the group in its low 16 bits), for backoff_from_think.
void system_runner::user_thinks(engine& e, std::uint32_t g) {
  const time_ns think = spec_.clients[g].think.sample(arrivals_rng_, 0);
  if (think == 0) return start_operation(e, g, 0);
  e.schedule_after(think, self_, user_wakes, static_cast<std::uint64_t>(think) << 16 | g);
}

void system_runner::start_operation(engine& e, std::uint32_t g, time_ns thought) {
  const client_group& group = spec_.clients[g];
  ++group_started_[g];
  const std::uint32_t instance =
      group.instances == 1
          ? 0
          : std::min(group.instances - 1,
                     static_cast<std::uint32_t>(uniform01(arrivals_rng_) * group.instances));
  const std::uint32_t c = open_call(e, group.edge, group.to, group_base_[g] + instance);
  call_record& rec = calls_[c];
  rec.group = g;
  rec.operation = operations_++;
  rec.root = c;
  if (group.backoff_from_think) rec.control->continue_from(duration{thought});
  out_->operation_started(e.now());
  attempt(e, c, false);
}

std::uint32_t system_runner::open_call(engine& e, std::uint32_t edge, std::uint32_t service,
                                       std::uint32_t slot) {
  const std::uint32_t c = take_call();
  call_record& rec = calls_[c];
  rec.edge = edge;
  rec.service = service;
  rec.slot = slot;
  rec.started = e.now();
  if ((*guards_now_)[edge].hedge) {
    rec.hedged = true;  // its controller starts with the first copy (start_hedged)
  } else {
    retry_gates gates = lives_[slot].gates();
    if ((*options_now_)[edge].breaker_first_tries) gates.breaker = nullptr;  // asked in attempt()
    rec.control.emplace(policies_[edge], duration{e.now()}, gates);
  }
  return c;
}

void system_runner::attempt(engine& e, std::uint32_t c, bool paced) {
  call_record& rec = calls_[c];
  if (rec.hedged) return start_hedged(e, c);
  if (rec.deadline > 0 && e.now() >= rec.deadline)
    return call_over(e, c, outcome::deadline_exceeded);
  if (!paced && lives_[rec.slot].window) return enqueue_in_window(e, c);
  if (!paced) {
    const auto g = rec.control->before_attempt(duration{e.now()}, client_rng_);
    if (!g.send) return call_over(e, c, g.stop);
    if (g.wait.count() > 0) return e.schedule_after(g.wait.count(), self_, send_now, c);
  }
  if ((*options_now_)[rec.edge].breaker_first_tries) {
    // Isaev's client.py: the breaker is asked before a call's first try, which it may refuse; a
    // retry always goes, recorded when the breaker allows it (jirfag's breaker clears its window
    // at every transition, so results while it is open never count).
    const bool first = rec.attempts == 0;
    rec.permit = lives_[rec.slot].breaker->try_acquire(duration{e.now()}, first);
    if (first && !rec.permit) return call_over(e, c, outcome::breaker_open);
    rec.permit_pending = rec.permit.allowed;
  }
  ++rec.attempts;
  const std::uint32_t generation = ++rec.generation;
  rec.waiting = true;
  if (rec.parent == no_index) out_->attempt(e.now());
  const std::uint32_t replica_index = choose_replica(rec, e.now());
  rec.last_replica = replica_index;
  // The deadline the request carries: the one this call received, and its own when its edge
  // propagates one (the operation's total, or this attempt's timeout).
  const backoff::strategy& guards = (*guards_now_)[rec.edge];
  time_ns limit = 0;  // this attempt's timeout
  time_ns carried = rec.deadline;
  if (guards.deadline) {
    const time_ns per = guards.deadline->per_attempt.count();
    if (per > 0) {
      limit = per;
      if (rec.control->has_deadline() && !rec.control->at_deadline()) {
        limit = std::clamp<time_ns>(rec.control->deadline().count() - e.now(), 1, per);
      }
    }
    if (guards.deadline->propagate) {
      time_ns own = limit > 0 ? e.now() + limit : 0;
      if (rec.control->has_deadline() && rec.control->deadline() != duration::max()) {
        own = own > 0 ? std::min(own, rec.control->deadline().count())
                      : rec.control->deadline().count();
      }
      if (own > 0) carried = carried > 0 ? std::min(carried, own) : own;
    }
  }
  if (limit > 0) e.schedule_after(limit, self_, attempt_timeout, pack(c, generation));
  send_request(e, c, generation, replica_index, carried);
}

// The request of one attempt (or hedged copy) of call `c` leaves for its replica: it carries its
// call's deadline, its operation's key and how long ago the call's first attempt left.
void system_runner::send_request(engine& e, std::uint32_t c, std::uint32_t generation,
                                 std::uint32_t replica_index, time_ns carried) {
  call_record& rec = calls_[c];
  if (rec.attempts == 1) rec.first_sent = e.now();
  const std::uint32_t r = take_request();
  request_record& req = requests_[r];
  req.call = c;
  req.generation = generation;
  req.service = rec.service;
  req.replica = replica_index;
  req.deadline = carried;
  req.depth = rec.parent == no_index ? 1 : requests_[rec.parent].depth + 1;
  req.first = rec.attempts == 1;
  req.since_first = e.now() - rec.first_sent;
  req.key =
      rec.parent == no_index ? operation_key(rec.operation) % 1000 : requests_[rec.parent].key;
  e.schedule_after(hop(rec).sample(network_rng_, 0), self_, arrive, r);
}

// The edge's balancer over the replicas not ejected; a retry avoids the replica of the attempt
// before when there is another, and a hedged copy every replica its call has sent a copy to.
std::uint32_t system_runner::choose_replica(const call_record& c, time_ns now_ns,
                                            const hedge_state* copies, std::uint32_t sent) {
  const service_spec& s = spec_.services[c.service];
  const std::uint32_t n = s.replicas;
  if (n == 1) return 0;
  const auto usable = [&](std::uint32_t r) {
    if (copies != nullptr && std::find(copies->replicas.begin(), copies->replicas.begin() + sent,
                                       r) != copies->replicas.begin() + sent) {
      return false;
    }
    return (c.attempts <= 1 || r != c.last_replica) &&
           replica(c.service, r).ejected_until <= now_ns;
  };
  std::uint32_t choice = 0;
  switch (s.balance) {
    case balance_kind::round_robin:
      choice = round_robin_[c.service]++ % n;
      break;
    case balance_kind::random:
      choice = static_cast<std::uint32_t>(uniform01(client_rng_) * n);
      break;
    case balance_kind::least_request: {
      // Two choices (Mitzenmacher 2001; Envoy's LEAST_REQUEST): the less loaded of two at random.
      const auto a = static_cast<std::uint32_t>(uniform01(client_rng_) * n);
      auto b = static_cast<std::uint32_t>(uniform01(client_rng_) * (n - 1));
      if (b >= a) ++b;
      choice = replica(c.service, b).gate.held() < replica(c.service, a).gate.held() ? b : a;
      break;
    }
  }
  for (std::uint32_t step = 0; step < n; ++step) {
    const std::uint32_t r = (choice + step) % n;
    if (usable(r)) return r;
  }
  return choice;  // every replica ejected or the one before: the balancer's own pick
}

void system_runner::on_answer(engine& e, std::uint64_t payload, std::uint32_t how) {
  const auto c = static_cast<std::uint32_t>(payload);
  const auto generation = static_cast<std::uint32_t>(payload >> 32);
  call_record& rec = calls_[c];
  if (rec.in_use && rec.hedged) return on_hedged_answer(e, c, generation, how);
  if (!rec.in_use || !rec.waiting || rec.generation != generation) return;  // stale
  rec.waiting = false;
  verdict v = verdict::success();
  if (how != answer_ok) {
    // A service that gave up says so: the caller's controller takes it as permanent and stops.
    v = how == answer_do_not_retry ? verdict::permanent() : verdict::retryable();
    v.timeout = how == attempt_timeout;
    v.not_sent = how == answer_refused;
    if (rec.parent == no_index) {
      if (v.timeout) {
        out_->timeout(e.now());
      } else {
        out_->error(e.now());
      }
    }
  }
  if (rec.permit_pending) {
    lives_[rec.slot].breaker->record(duration{e.now()}, rec.permit,
                                     v.kind == verdict_kind::retryable);
    rec.permit_pending = false;
  }
  const auto d = rec.control->after(v, duration{e.now()}, client_rng_);
  if (lives_[rec.slot].window) return window_answer(e, c, v.kind, d);
  if (v.kind == verdict_kind::success) return call_over(e, c, outcome::succeeded);
  if (!d.retry) return call_over(e, c, d.stop);
  e.schedule_after(d.delay.count(), self_, retry_wake, c);
}

void system_runner::call_over(engine& e, std::uint32_t c, outcome why) {
  call_record& rec = calls_[c];
  leave_window(c);
  if (rec.permit_pending) {
    lives_[rec.slot].breaker->release(rec.permit);  // its answer will not be read
    rec.permit_pending = false;
  }
  rec.control.reset();
  if (rec.hedged) hedges_[c].control.reset();  // its breaker permits are back
  rec.in_use = false;
  rec.waiting = false;
  free_calls_.push_back(c);
  const bool ok = why == outcome::succeeded;
  if (rec.parent != no_index) {
    return downstream_over(e, rec.parent, ok,
                           !ok && (*options_now_)[rec.edge].do_not_retry_on_give_up);
  }
  const std::uint32_t g = rec.group;
  out_->operation_done(
      {rec.operation, rec.started, e.now(), rec.attempts, report::status_of(why), why});
  if (ok) out_->success(e.now());
  if (tally_) tally_->ended(e.now(), ok);
  ++finished_;
  const client_group& group = spec_.clients[g];
  if (group.arrivals == arrival_kind::closed && e.now() < spec_.duration &&
      (group.operations == 0 || group_started_[g] < group.operations)) {
    user_thinks(e, g);  // then starts the next operation
  }
}

// ---- hedged callers (gRPC A6) ---------------------------------------------------------------
// The library's hedge_controller decides every copy (as the dedicated hedging model drives it);
// these only carry its steps out. The losers are not cancelled at the server: their requests run
// to the end and their answers are ignored, as an attempt cut at its timeout is (docs/SYSTEMS.md).

void system_runner::start_hedged(engine& e, std::uint32_t c) {
  if (hedges_.size() < calls_.size()) hedges_.resize(calls_.size());
  call_record& rec = calls_[c];
  const time_ns now = e.now();
  if (rec.deadline > 0 && now >= rec.deadline) return call_over(e, c, outcome::deadline_exceeded);
  // The call ends at its own total (the edge's deadline) or at the deadline it received,
  // whichever comes first, whatever is in flight then.
  duration limit = policies_[rec.edge].max_elapsed;
  if (rec.deadline > 0) {
    const duration left{rec.deadline - now};
    limit = limit.count() > 0 ? std::min(limit, left) : left;
  }
  hedge_state& h = hedges_[c];
  h.control.emplace(*(*guards_now_)[rec.edge].hedge, lives_[rec.slot].gates(), limit);
  h.timer_at = -1;
  rec.first_generation = rec.generation + 1;
  carry_out(e, c, h.control->start(duration{now}, client_rng_));
}

// Does what the controller says until it waits for an answer or for its timer.
void system_runner::carry_out(engine& e, std::uint32_t c, hedge_controller::step s) {
  const duration now{e.now()};
  for (;;) {
    switch (s.what) {
      case hedge_controller::action::done:
        return call_over(e, c, s.why);
      case hedge_controller::action::send: {
        const std::uint32_t generation = calls_[c].first_generation + s.attempt - 1;
        calls_[c].generation = generation;  // the newest copy's: copies come in order
        if (s.wait.count() > 0) {
          e.schedule_after(s.wait.count(), self_, hedge_send, pack(c, generation));
        } else {
          send_copy(e, c, s.attempt);
        }
        break;
      }
      case hedge_controller::action::none:
        break;
    }
    if (!hedges_[c].control->timer_due(now)) break;
    s = hedges_[c].control->on_timer(now, client_rng_);
  }
  hedge_state& h = hedges_[c];
  const duration wake = h.control->wake_at();
  if (wake != duration::max() && wake.count() != h.timer_at) {
    h.timer_at = wake.count();
    e.schedule_at(wake.count(), self_, hedge_timer, pack(c, calls_[c].first_generation));
  }
}

// Copy `copy` (from 1) leaves: a request to a replica that holds none of this call's copies.
void system_runner::send_copy(engine& e, std::uint32_t c, std::uint32_t copy) {
  call_record& rec = calls_[c];
  hedge_state& h = hedges_[c];
  ++rec.attempts;
  if (rec.parent == no_index) out_->attempt(e.now());
  const std::uint32_t replica_index = choose_replica(rec, e.now(), &h, copy - 1);
  h.replicas[copy - 1] = replica_index;
  rec.last_replica = replica_index;
  // A copy has no timeout of its own (strategy::validate); with propagate it carries the call's
  // deadline.
  const backoff::strategy& guards = (*guards_now_)[rec.edge];
  time_ns carried = rec.deadline;
  if (guards.deadline && guards.deadline->propagate && h.control->deadline() != duration::max()) {
    const time_ns own = h.control->deadline().count();
    carried = carried > 0 ? std::min(carried, own) : own;
  }
  send_request(e, c, rec.first_generation + copy - 1, replica_index, carried);
}

void system_runner::on_hedge_send(engine& e, std::uint64_t payload) {
  const auto c = static_cast<std::uint32_t>(payload);
  const auto generation = static_cast<std::uint32_t>(payload >> 32);
  const call_record& rec = calls_[c];
  // Paced past the call's end (or its slot's reuse): not sent.
  if (!rec.in_use || !rec.hedged ||
      generation - rec.first_generation > rec.generation - rec.first_generation) {
    return;
  }
  send_copy(e, c, generation - rec.first_generation + 1);
}

void system_runner::on_hedge_timer(engine& e, std::uint64_t payload) {
  const auto c = static_cast<std::uint32_t>(payload);
  const call_record& rec = calls_[c];
  if (!rec.in_use || !rec.hedged ||
      rec.first_generation != static_cast<std::uint32_t>(payload >> 32))
    return;
  hedge_state& h = hedges_[c];
  if (h.timer_at != e.now()) return;  // a timer since replaced
  h.timer_at = -1;
  carry_out(e, c, h.control->on_timer(duration{e.now()}, client_rng_));
}

void system_runner::on_hedged_answer(engine& e, std::uint32_t c, std::uint32_t generation,
                                     std::uint32_t how) {
  const call_record& rec = calls_[c];
  const std::uint32_t copy = generation - rec.first_generation + 1;
  if (copy == 0 || copy > hedges_[c].control->sent()) return;  // an earlier use of the slot
  verdict v = verdict::success();
  if (how == answer_fatal) {
    v = verdict::permanent();
  } else if (how != answer_ok) {
    v = verdict::retryable();
    v.not_sent = how == answer_refused;
  }
  if (rec.parent == no_index && how != answer_ok) out_->error(e.now());
  carry_out(e, c, hedges_[c].control->on_answer(copy, v, duration{e.now()}, client_rng_));
}

namespace {

const model_registration system_registration{
    "system",
    [](config_reader& keys) { return std::unique_ptr<model_runner>(new system_runner(keys)); }};

}  // namespace
}  // namespace backoff::sim::system_model
