// SPDX-License-Identifier: Apache-2.0
#include "downstream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "backoff/deadline_headers.hpp"
#include "backoff/duration.hpp"
#include "backoff/hedge.hpp"
#include "backoff/http.hpp"
#include "backoff/retry.hpp"
#include "net/client/load.hpp"

namespace backoff::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock = std::chrono::steady_clock;

duration now_d() {
  return std::chrono::duration_cast<duration>(clock::now().time_since_epoch());
}

// The largest answer a tier reads: its services answer a few bytes.
constexpr std::uint64_t answer_limit = 64 * 1024;

// A call's result once it ends for `why`: a failure on an edge that says so tells its caller not
// to retry.
downstream::result ended(downstream::result r, outcome why, const systems::edge_options& edge) {
  r.why = why;
  r.ok = why == outcome::succeeded;
  if (!r.ok) r.do_not_retry = edge.do_not_retry_on_give_up;
  return r;
}

}  // namespace

struct downstream::connection {
  explicit connection(loop_executor executor) : socket(executor) {}
  socket_type socket;
  beast::flat_buffer buffer;
};

// One call's edge at this tier: its guards (its own, as each real caller process has), its
// policy, and its kept-alive connections per replica.
struct downstream::edge_state {
  explicit edge_state(downstream_spec s)
      : spec(std::move(s)),
        policy(spec.guards.retry()),
        live(spec.guards.instantiate()),
        idle(spec.replicas.size()),
        in_flight(spec.replicas.size(), 0),
        ejection(spec.replicas.size()) {}
  downstream_spec spec;
  retry_policy policy;
  backoff::strategy::live live;
  std::vector<std::vector<std::unique_ptr<connection>>> idle;
  std::vector<std::uint32_t> in_flight;  // this tier's attempts in flight, per replica
  // Outlier ejection (the called service's outlier_ejection), per replica, from this caller's
  // own answers: each caller decides alone, as each Envoy does.
  struct replica_health {
    std::uint32_t failures_in_a_row = 0, times_ejected = 0;
    clock::time_point ejected_until{};
  };
  std::vector<replica_health> ejection;
  std::vector<connection*> busy;  // connections an attempt uses now (closed at stop)
  std::uint64_t round_robin = 0;
};

// How an attempt ended.
struct downstream::answer {
  enum class kind : std::uint8_t { ok, failed, do_not_retry, refused, timeout, gone } what;
  int status = 0;  // the answer's HTTP status, when there was one
};

// A copy of a hedged call while it is on the wire: the connection it uses, so that the call can
// close it when another copy won; once abandoned, the copy sends nothing more.
struct downstream::copy_handle {
  socket_type* socket = nullptr;
  bool abandoned = false;
};

std::optional<guard_refusal> caller_refusal(const backoff::strategy& guards) {
  const guard_support can{.breaker = true, .hedge = true, .deadline = true};
  std::optional<guard_refusal> refused = guards.refusal(can);
  if (!refused && guards.window) refused = guard_refusal{"window", "not in real callers yet"};
  return refused;
}

downstream::downstream(std::vector<downstream_spec> calls, loop_executor executor,
                       std::uint64_t seed)
    : executor_(executor), rng_(derive_seed(seed, 3)) {
  for (downstream_spec& c : calls) edges_.push_back(std::make_unique<edge_state>(std::move(c)));
}

downstream::~downstream() = default;

std::size_t downstream::size() const noexcept {
  return edges_.size();
}

bool downstream::drawn(std::size_t i) {
  return uniform01(rng_) < edges_[i]->spec.call.probability;
}

void downstream::stop() {
  stopping_ = true;
  for (auto& e : edges_) {
    for (auto& pool : e->idle) pool.clear();
    for (connection* c : e->busy) {
      beast::error_code ignored;
      c->socket.close(ignored);
    }
  }
}

// The balancer over the replicas given; a retry avoids the replica of the attempt before when
// there is another (the simulator's choose_replica, without ejection: least-request compares
// this tier's own attempts in flight, which is all a real caller knows).
std::uint32_t downstream::choose_replica(edge_state& e, std::uint32_t attempt, std::uint32_t last) {
  const auto n = static_cast<std::uint32_t>(e.spec.replicas.size());
  if (n == 1) return 0;
  std::uint32_t choice = 0;
  switch (e.spec.balance) {
    case systems::balance_kind::round_robin:
      choice = static_cast<std::uint32_t>(e.round_robin++ % n);
      break;
    case systems::balance_kind::random:
      choice = static_cast<std::uint32_t>(uniform01(rng_) * n);
      break;
    case systems::balance_kind::least_request: {
      const auto a = static_cast<std::uint32_t>(uniform01(rng_) * n);
      auto b = static_cast<std::uint32_t>(uniform01(rng_) * (n - 1));
      if (b >= a) ++b;
      choice = e.in_flight[b] < e.in_flight[a] ? b : a;
      break;
    }
  }
  // The first usable from the balancer's pick on: not ejected, and not the replica of the
  // attempt before for a retry; the pick itself when none is.
  const auto now = clock::now();
  for (std::uint32_t step = 0; step < n; ++step) {
    const std::uint32_t r = (choice + step) % n;
    if ((attempt <= 1 || r != last) && e.ejection[r].ejected_until <= now) return r;
  }
  return choice;
}

// Envoy's consecutive_5xx, as the simulator ejects: a replica that answered `failures` failures
// in a row is left out of balancing for base times the times it was, while no more than
// max_share of the replicas are out (one may always be). Refusals and timeouts are not answers.
void downstream::note_answer(edge_state& e, std::uint32_t replica, const answer& a) {
  const systems::ejection_spec& rule = e.spec.ejection;
  using kind = answer::kind;
  if (!rule.on || (a.what != kind::ok && a.what != kind::failed && a.what != kind::do_not_retry))
    return;
  const bool ok = a.what == kind::ok;
  auto& health = e.ejection[replica];
  const auto now = clock::now();
  health.failures_in_a_row = ok ? 0 : health.failures_in_a_row + 1;
  if (health.failures_in_a_row < rule.failures || health.ejected_until > now) return;
  const auto n = static_cast<std::uint32_t>(e.ejection.size());
  std::uint32_t out = 0;
  for (const auto& h : e.ejection) out += h.ejected_until > now ? 1 : 0;
  if (static_cast<double>(out + 1) <= rule.max_share * n || out == 0) {
    health.ejected_until = now + std::chrono::nanoseconds(
                                     rule.base * static_cast<std::int64_t>(++health.times_ejected));
    health.failures_in_a_row = 0;
  }
}

task<bool> downstream::sleep_for(duration d) {
  if (d.count() <= 0) co_return !stopping_;
  co_return co_await wait_until_or_stop(executor_, saturating_add(clock::now(), d), stopping_);
}

// One request and its answer on a kept-alive connection to `replica` (a new one when none is
// idle); `limit` > 0 closes the connection when it passes. A kept-alive connection the replica
// closed meanwhile is replaced once, as HTTP clients do.
task<downstream::answer> downstream::exchange(edge_state& e, std::uint32_t replica,
                                              const std::string& request, duration limit,
                                              copy_handle* handle) {
  using kind = answer::kind;
  const auto until =
      limit.count() > 0 ? saturating_add(clock::now(), limit) : clock::time_point::max();
  for (int tries = 0; tries < 2; ++tries) {
    if (stopping_ || (handle != nullptr && handle->abandoned)) co_return answer{kind::gone};
    std::unique_ptr<connection> c;
    const bool pooled = !e.idle[replica].empty();
    if (pooled) {
      c = std::move(e.idle[replica].back());
      e.idle[replica].pop_back();
    } else {
      c = std::make_unique<connection>(executor_);
    }
    e.busy.push_back(c.get());
    if (handle != nullptr) handle->socket = &c->socket;
    // The watchdog: closing the socket ends whatever the attempt waits on.
    auto watch = std::make_shared<bool>(false);  // true once fired, or once the attempt is over
    timer_type watchdog(executor_);
    bool fired = false;
    if (until != clock::time_point::max()) {
      watchdog.expires_at(until);
      watchdog.async_wait([watch, socket = &c->socket, &fired](const beast::error_code& ec) {
        if (ec || *watch) return;
        *watch = true;
        fired = true;
        beast::error_code ignored;
        socket->close(ignored);
      });
    }
    const auto done = [&](answer a) {
      *watch = true;
      watchdog.cancel();
      std::erase(e.busy, c.get());
      if (handle != nullptr) handle->socket = nullptr;
      return a;
    };
    beast::error_code ec;
    if (!pooled) {
      std::tie(ec) = co_await c->socket.async_connect(e.spec.replicas[replica], on_loop);
      if (ec && is_local_error(ec)) ++local_errors_;  // this machine's, not the replica's
      if (ec)
        co_return done(answer{fired ? kind::timeout : stopping_ ? kind::gone : kind::refused});
      c->socket.set_option(asio::ip::tcp::no_delay(true), ec);
    }
    std::tie(ec, std::ignore) =
        co_await asio::async_write(c->socket, asio::buffer(request), on_loop);
    std::optional<http::response_parser<http::string_body>> parser;
    parser.emplace().body_limit(answer_limit);
    if (!ec)
      std::tie(ec, std::ignore) = co_await http::async_read(c->socket, c->buffer, *parser, on_loop);
    // An interim answer (1xx) is not the answer: read on to the final one.
    while (!ec && !fired && parser->get().result_int() / 100 == 1) {
      parser.emplace().body_limit(answer_limit);
      std::tie(ec, std::ignore) = co_await http::async_read(c->socket, c->buffer, *parser, on_loop);
    }
    if (fired) co_return done(answer{kind::timeout});
    if (stopping_ || (handle != nullptr && handle->abandoned)) co_return done(answer{kind::gone});
    if (ec) {
      const bool nothing_read = !parser->got_some() && c->buffer.size() == 0;
      done(answer{kind::failed});
      if (nothing_read && pooled) continue;  // the replica had closed it: once more, anew
      co_return answer{nothing_read ? kind::refused : kind::failed};
    }
    const auto& res = parser->get();
    kind what = res.result_int() == 200 ? kind::ok : kind::failed;
    if (const auto it = res.find("grpc-retry-pushback-ms"); it != res.end() && what != kind::ok) {
      if (!parse_grpc_retry_pushback(std::string_view(it->value()))) what = kind::do_not_retry;
    }
    const answer a = done(answer{what, static_cast<int>(res.result_int())});
    if (res.keep_alive()) e.idle[replica].push_back(std::move(c));
    co_return a;
  }
  co_return answer{kind::refused};
}

// An attempt's request: its number, the deadline it carries, the key the request received and
// how long ago its call's first attempt left.
std::string downstream::request_text(const downstream_spec& s, std::uint32_t attempt,
                                     std::optional<clock::time_point> carried,
                                     const std::string& key, clock::duration since_first) {
  std::string request =
      fmt::format("GET /api HTTP/1.1\r\nHost: {}\r\nx-envoy-attempt-count: {}\r\n", s.to, attempt);
  if (attempt > 1) request += fmt::format("grpc-previous-rpc-attempts: {}\r\n", attempt - 1);
  if (carried) {
    const duration left =
        std::max(duration{1}, std::chrono::duration_cast<duration>(*carried - clock::now()));
    request += "grpc-timeout: " + format_grpc_timeout(left) + "\r\n";
    request += "x-envoy-expected-rq-timeout-ms: " + format_timeout_ms(left) + "\r\n";
  }
  if (!key.empty()) request += "x-backoff-key: " + key + "\r\n";
  request += fmt::format("x-backoff-since-first-attempt: {:.6f}\r\n\r\n",
                         std::chrono::duration<double, std::milli>(since_first).count());
  return request;
}

// One attempt: the call's latency on the way there, the exchange, the latency back, all inside
// the attempt's `limit` (0: none).
task<downstream::answer> downstream::attempt(edge_state& e, std::uint32_t replica,
                                             const std::string& request, duration limit,
                                             copy_handle* handle) {
  const auto sent = clock::now();
  const duration there{e.spec.call.latency.sample(rng_, 0)};
  if (limit.count() > 0 && there >= limit) {
    co_return answer{co_await sleep_for(limit) ? answer::kind::timeout : answer::kind::gone};
  }
  if (!co_await sleep_for(there)) co_return answer{answer::kind::gone};
  answer a = co_await exchange(e, replica, request, limit.count() > 0 ? limit - there : duration{0},
                               handle);
  if (a.what == answer::kind::timeout || a.what == answer::kind::gone) co_return a;
  const duration back{e.spec.call.latency.sample(rng_, 0)};
  const auto spent = std::chrono::duration_cast<duration>(clock::now() - sent);
  if (limit.count() > 0 && spent + back > limit) {
    co_return answer{co_await sleep_for(limit - spent) ? answer::kind::timeout
                                                       : answer::kind::gone};
  }
  if (!co_await sleep_for(back)) co_return answer{answer::kind::gone};
  co_return a;
}

task<downstream::result> downstream::call(std::size_t i, const context& from) {
  edge_state& e = *edges_[i];
  if (e.spec.guards.hedge) co_return co_await call_hedged(e, from);
  const downstream_spec& s = e.spec;
  retry_gates gates = e.live.gates();
  if (s.options.breaker_first_tries) gates.breaker = nullptr;  // asked before the first try
  retry_controller control(e.policy, now_d(), gates);
  if (from.thought) control.continue_from(*from.thought);
  result r;
  const auto over = [&](outcome why) { return ended(r, why, s.options); };
  std::uint32_t last = 0;
  clock::time_point first_sent{};
  bool paced = false;
  for (;;) {
    if (stopping_) co_return over(outcome::cancelled);
    if (from.deadline && clock::now() >= *from.deadline) co_return over(outcome::deadline_exceeded);
    if (!paced) {
      const auto g = control.before_attempt(now_d(), rng_);
      if (!g.send) co_return over(g.stop);
      if (g.wait.count() > 0) {
        if (!co_await sleep_for(g.wait)) co_return over(outcome::cancelled);
        paced = true;
        continue;
      }
    }
    paced = false;
    circuit_breaker::permit permit;
    if (s.options.breaker_first_tries) {
      // Isaev's client.py: the breaker is asked before a call's first try, which it may refuse;
      // a retry always goes, recorded when the breaker allows it.
      permit = e.live.breaker->try_acquire(now_d(), r.attempts == 0);
      if (r.attempts == 0 && !permit) co_return over(outcome::breaker_open);
    }
    ++r.attempts;
    if (from.watch != nullptr) from.watch->sent();
    const std::uint32_t replica = choose_replica(e, r.attempts, last);
    last = replica;
    const auto sent = clock::now();
    if (r.attempts == 1) first_sent = sent;
    // This attempt's timeout, and the deadline it carries (the simulator's attempt()).
    duration limit{0};
    std::optional<clock::time_point> carried = from.deadline;
    if (s.guards.deadline) {
      const duration per = s.guards.deadline->per_attempt;
      if (per.count() > 0) {
        limit = per;
        if (control.has_deadline() && !control.at_deadline()) {
          limit = std::clamp(control.deadline() - now_d(), duration{1}, per);
        }
      }
      if (s.guards.deadline->propagate) {
        std::optional<clock::time_point> own;
        if (limit.count() > 0) own = sent + limit;
        if (control.has_deadline() && control.deadline() != duration::max()) {
          const clock::time_point total{
              std::chrono::duration_cast<clock::duration>(control.deadline())};
          own = own ? std::min(*own, total) : total;
        }
        if (own) carried = carried ? std::min(*carried, *own) : *own;
      }
    }
    const std::string request = request_text(s, r.attempts, carried, from.key, sent - first_sent);
    ++e.in_flight[replica];
    const answer a = co_await attempt(e, replica, request, limit);
    --e.in_flight[replica];
    if (a.what == answer::kind::gone) co_return over(outcome::cancelled);
    note_answer(e, replica, a);
    verdict v = verdict::success();
    if (a.what != answer::kind::ok) {
      v = a.what == answer::kind::do_not_retry ? verdict::permanent() : verdict::retryable();
      v.timeout = a.what == answer::kind::timeout;
      v.not_sent = a.what == answer::kind::refused;
      if (from.watch != nullptr) from.watch->failed(v.timeout);
    }
    if (permit.allowed) e.live.breaker->record(now_d(), permit, v.kind == verdict_kind::retryable);
    const auto d = control.after(v, now_d(), rng_);
    if (v.kind == verdict_kind::success) co_return over(outcome::succeeded);
    if (!d.retry) co_return over(d.stop);
    if (!co_await sleep_for(d.delay)) co_return over(outcome::cancelled);
  }
}

// ---- hedged calls (gRPC A6) -------------------------------------------------------------------

// One hedged call, shared with its copies' coroutines, which may outlive it: the answers not yet
// handled, the copies on the wire (to close when the call ends), and what each copy carries.
struct downstream::hedged_call {
  explicit hedged_call(loop_executor executor) : wake(executor) {}
  timer_type wake;  // the call waits on it; an answer cancels it
  std::vector<std::pair<std::uint32_t, verdict>> answers;
  std::array<copy_handle, hedge_policy::max_attempts_limit> copies{};
  std::array<std::uint32_t, hedge_policy::max_attempts_limit> replicas{};
  std::uint32_t sent = 0;
  clock::time_point first_sent{};
  std::optional<clock::time_point> carried;  // the deadline the copies carry
  std::string key;
  attempt_watch* watch = nullptr;  // the caller's, while the call lasts
  bool over = false;
};

// The balancer's choice, moved on to a replica that holds none of this call's copies when there
// is one (the simulator's choose_replica for hedged copies).
std::uint32_t downstream::replica_for_copy(edge_state& e, const hedged_call& call,
                                           std::uint32_t copy) {
  const auto n = static_cast<std::uint32_t>(e.spec.replicas.size());
  std::uint32_t choice = choose_replica(e, 1, 0);
  const auto taken = [&](std::uint32_t r) {
    return std::find(call.replicas.begin(), call.replicas.begin() + (copy - 1), r) !=
           call.replicas.begin() + (copy - 1);
  };
  for (std::uint32_t tried = 0; tried < n && taken(choice); ++tried) choice = (choice + 1) % n;
  return choice;
}

// Copy `copy` (from 1): after the throttle's pacing, a request to its replica; its answer goes to
// the call, unless the call is over by then.
task<> downstream::send_copy(edge_state& e, std::shared_ptr<hedged_call> call, std::uint32_t copy,
                             duration pacing) {
  if (pacing.count() > 0 && !co_await sleep_for(pacing)) co_return;
  copy_handle& handle = call->copies[copy - 1];
  if (call->over || handle.abandoned) co_return;
  const std::uint32_t replica = replica_for_copy(e, *call, copy);
  call->replicas[copy - 1] = replica;
  const auto sent = clock::now();
  if (call->sent++ == 0) call->first_sent = sent;
  if (call->watch != nullptr) call->watch->sent();
  const std::string request =
      request_text(e.spec, copy, call->carried, call->key, sent - call->first_sent);
  ++e.in_flight[replica];
  const answer a = co_await attempt(e, replica, request, duration{0}, &handle);
  --e.in_flight[replica];
  note_answer(e, replica, a);
  if (call->over || a.what == answer::kind::gone) co_return;
  verdict v = verdict::success();
  if (a.what != answer::kind::ok) {
    // The simulator's rule: a refusal, or an answer without a status, counts as a 503.
    const int status = a.status != 0 ? a.status : 503;
    const bool fatal =
        a.what == answer::kind::do_not_retry || !e.spec.guards.hedge->is_non_fatal(status);
    v = fatal ? verdict::permanent() : verdict::retryable();
    v.not_sent = a.what == answer::kind::refused;
    if (call->watch != nullptr) call->watch->failed(false);
  }
  call->answers.emplace_back(copy, v);
  call->wake.cancel();
}

task<downstream::result> downstream::call_hedged(edge_state& e, const context& from) {
  const downstream_spec& s = e.spec;
  result r;
  const auto over = [&](outcome why) { return ended(r, why, s.options); };
  // The call ends at its own total (the edge's deadline) or at the deadline it received,
  // whichever comes first, whatever is in flight then.
  duration limit = e.policy.max_elapsed;
  if (from.deadline) {
    const auto left = std::chrono::duration_cast<duration>(*from.deadline - clock::now());
    if (left.count() <= 0) co_return over(outcome::deadline_exceeded);
    limit = limit.count() > 0 ? std::min(limit, left) : left;
  }
  auto call = std::make_shared<hedged_call>(executor_);
  call->key = from.key;
  call->watch = from.watch;
  hedge_controller control(*s.guards.hedge, e.live.gates(), limit);
  hedge_controller::step step = control.start(now_d(), rng_);
  if (s.guards.deadline && s.guards.deadline->propagate && control.deadline() != duration::max()) {
    const clock::time_point own{std::chrono::duration_cast<clock::duration>(control.deadline())};
    call->carried = from.deadline ? std::min(*from.deadline, own) : own;
  } else {
    call->carried = from.deadline;
  }
  for (;;) {
    // Do what the controller says until it waits for an answer or for its timer.
    while (step.what != hedge_controller::action::done) {
      if (step.what == hedge_controller::action::send) {
        asio::co_spawn(executor_, send_copy(e, call, step.attempt, step.wait), asio::detached);
      }
      if (!control.timer_due(now_d())) break;
      step = control.on_timer(now_d(), rng_);
    }
    if (step.what == hedge_controller::action::done) break;
    if (call->answers.empty()) {
      // An answer cancels the wait; a stop is seen within 100 ms.
      const duration wake = control.wake_at();
      auto until = clock::now() + std::chrono::milliseconds(100);
      if (wake != duration::max()) {
        until =
            std::min(until, clock::time_point{std::chrono::duration_cast<clock::duration>(wake)});
      }
      call->wake.expires_at(until);
      co_await call->wake.async_wait(on_loop);
    }
    if (stopping_) {
      step = control.cancel();
    } else if (!call->answers.empty()) {
      const auto [copy, v] = call->answers.front();
      call->answers.erase(call->answers.begin());
      step = control.on_answer(copy, v, now_d(), rng_);
    } else {
      step = control.on_timer(now_d(), rng_);
    }
  }
  // The copies still on the wire lost: their connections are closed, their answers not read.
  call->over = true;
  call->watch = nullptr;
  for (copy_handle& h : call->copies) {
    h.abandoned = true;
    if (h.socket != nullptr) {
      beast::error_code ignored;
      h.socket->close(ignored);
    }
  }
  r.attempts = call->sent;
  co_return over(step.why);
}

}  // namespace backoff::net
