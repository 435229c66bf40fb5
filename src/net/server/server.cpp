// SPDX-License-Identifier: Apache-2.0
#include "server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "backoff/deadline_headers.hpp"
#include "backoff/duration.hpp"
#include "backoff/http.hpp"
#include "backoff/random.hpp"
#include "backoff/spec.hpp"
#include "dated_answers.hpp"
#include "handler.hpp"
#include "net/common/connections.hpp"
#include "net/common/loop.hpp"
#include "net/common/sockets.hpp"
#include "request_io.hpp"
#include "tier.hpp"

namespace backoff::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

// Request headers larger than this get 400: a client cannot make a connection hold more memory.
constexpr std::uint32_t header_limit = request_header_limit;

// The seed's per-second line: "Jun 21 13:31:18.708: concurrency:    0, last delay: 100ms"
// (Go's log with time.StampMilli; durations as Go prints them, which format_duration matches),
// after the prefix every line of `backoff serve` on stderr starts with (only serve logs it).
void log_line(std::int64_t concurrency, duration last_delay) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&t, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%b %d %H:%M:%S", &local);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::string delay = last_delay.count() == 0 ? "0" : format_duration(last_delay);
  std::cerr << fmt::format("backoff serve: {}.{:03d}: concurrency: {:4d}, last delay: {}\n", stamp,
                           ms, concurrency, delay)
            << std::flush;
}

// One thread's share of the server: its own io_context, acceptor, connections and pause gate; it
// touches the other threads only through the atomic metrics.
struct worker final : connection_owner {
  worker(const server_options& o, server_metrics& m, unsigned index)
      : options(o), metrics(m), fault_rng(derive_seed(o.fault_seed, index)) {}

  const server_options& options;
  server_metrics& metrics;
  // Single-threaded, and sockets are only touched from this thread (stop is posted to it), so the
  // reactor needs no per-descriptor lock; posting from other threads stays safe.
  asio::io_context context{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  acceptor_type acceptor{context.get_executor()};
  timer_type gate{context.get_executor()};  // expires at "never" while paused; cancelled to resume
  // A client too slow to send a request or to take an answer is done with: its deadline closes it.
  connection_table connections{context.get_executor(), {.deadline_closes = true}, *this};
  listener accept{acceptor, connections, *this, metrics.connections, options.max_connections};
  server* owner = nullptr;              // set before start: /admin/pause and resume act on it
  const admin_access* admin = nullptr;  // set before start
  bool paused = false;
  bool stopping = false;
  random_generator fault_rng;          // this thread's draws for the fault plan
  steady::time_point started{};        // the time 0 of the fault plan's windows
  dated_answers dates;                 // Date, and the usual answer with it
  std::unique_ptr<tier> service_tier;  // serve --system: a system's service (tier.hpp)

  // `res` with this second's Date.
  response& dated(response& res) {
    dates.refresh();
    res.set(http::field::date, dates.date());
    return res;
  }

  void refused() noexcept override { metrics.closed(server_metrics::close_reason::refused); }

  void closed(const connection_entry& e, connection_entry::ending why) noexcept override {
    metrics.closed(why == connection_entry::ending::evicted ? server_metrics::close_reason::evicted
                                                            : timeout_reason(e.now));
  }

  static server_metrics::close_reason timeout_reason(connection_entry::phase p) {
    switch (p) {
      case connection_entry::phase::idle:
        return server_metrics::close_reason::idle_timeout;
      case connection_entry::phase::writing:
        return server_metrics::close_reason::write_timeout;
      default:
        return server_metrics::close_reason::header_timeout;
    }
  }

  void set_paused(bool on) {
    if (service_tier) return service_tier->set_paused(on);  // its work stops; arrivals queue
    paused = on;
    if (on) {
      gate.expires_at(timer_type::time_point::max());
    } else {
      gate.cancel();
    }
  }

  task<> wait_while_paused() {
    while (paused && !stopping) {
      co_await gate.async_wait(on_loop);
    }
  }

  // The time its caller gives a request, from the deadline headers it carries (the tighter of
  // grpc-timeout and x-envoy-expected-rq-timeout-ms); none when it carries neither, or a
  // malformed one (deadline_headers.hpp: a header that does not parse is ignored).
  static std::optional<duration> propagated_timeout(const http::request<http::string_body>& req) {
    return read_deadline_headers([&](std::string_view name) {
             const auto it = req.find(name);
             return it == req.end() ? std::string_view{} : std::string_view(it->value());
           })
        .timeout;
  }

  // Now + left, saturating (grpc-timeout allows 99999999 hours).
  static steady::time_point clamped_deadline(duration left) {
    return saturating_add(steady::now(), left);
  }

  // How an /api request's service ended.
  enum class service_end {
    answered,  // served its time: 200
    expired,   // its propagated deadline passed: 504 (metrics say when)
    gone,      // the client left (--cancel-on-disconnect) or the server stops: no answer
  };

  // The seed's service: checks every tick with the current concurrency until the request has been
  // served long enough. With a propagated deadline (deadline_headers.hpp), work whose caller has
  // given up is not done: a request whose deadline passed before its service started (held by a
  // pause, or sent with none left) is served only --expired-cost of its time, the cost of noticing
  // (Isaev, "Good Retry, Bad Retry", 2024: the server drops expired requests at a fraction of the
  // cost); one whose deadline passes in service stops at the next check.
  task<service_end> serve_api(socket_type& stream, std::optional<steady::time_point> deadline) {
    if (paused) co_await wait_while_paused();  // no coroutine frame when running
    if (stopping) co_return service_end::gone;
    const service_params& p = options.service;
    const auto start = steady::now();
    const bool expired_at_start = deadline && start >= *deadline;
    metrics.concurrency.fetch_add(1);
    timer_type tick(context.get_executor());
    service_end end = service_end::gone;
    for (;;) {
      duration d = service_time(p, metrics.concurrency.load());
      metrics.last_delay_ns.store(d.count(), std::memory_order_relaxed);
      if (expired_at_start) d = scaled(d, options.expired_cost);
      const auto now = steady::now();
      if (now - start >= d) {
        end = expired_at_start ? service_end::expired : service_end::answered;
        break;
      }
      if (!expired_at_start && deadline && now >= *deadline) {
        metrics.expired(server_metrics::expiry::in_service);
        end = service_end::expired;
        break;
      }
      tick.expires_after(p.tick);
      co_await tick.async_wait(on_loop);
      if (paused) co_await wait_while_paused();
      if (stopping) break;
      if (options.cancel_on_disconnect && peer_closed(stream)) {
        metrics.abandoned();
        break;
      }
    }
    metrics.concurrency.fetch_sub(1);
    if (end == service_end::answered) metrics.observe_service(steady::now() - start);
    if (end == service_end::expired && expired_at_start) {
      metrics.expired(server_metrics::expiry::before_service);
    }
    co_return end;
  }

  // d x fraction, in whole nanoseconds (a saturated d stays saturated).
  static duration scaled(duration d, double fraction) {
    if (fraction >= 1.0 || d == duration::max()) return d;
    return duration(static_cast<std::int64_t>(static_cast<double>(d.count()) * fraction));
  }

  // Answers that need no waiting: everything but an /api request to serve. Pause and resume act
  // here, before their answer is written.
  std::optional<response> answer_at_once(const route& r, unsigned version, bool keep_alive) {
    switch (r.kind) {
      case route_kind::api:
        if (options.max_busy > 0 && metrics.concurrency.load() >= options.max_busy) {
          return make_rejection(static_cast<http::status>(options.reject_status),
                                options.retry_after, version, keep_alive);
        }
        return std::nullopt;
      case route_kind::metrics: {
        response res = make_response(http::status::ok, prometheus_text(metrics.snapshot()), version,
                                     keep_alive);
        res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        return res;
      }
      case route_kind::pause:
        owner->pause(r.pause_for);
        return make_response(http::status::ok,
                             r.pause_for ? "paused for " + format_duration(*r.pause_for) + "\n"
                                         : std::string("paused\n"),
                             version, keep_alive);
      case route_kind::resume:
        owner->resume();
        return make_response(http::status::ok, "resumed\n", version, keep_alive);
      case route_kind::not_found:
        return make_response(http::status::not_found, "not found\n", version, keep_alive);
      case route_kind::method_not_allowed: {
        response res = make_response(http::status::method_not_allowed, "method not allowed\n",
                                     version, keep_alive);
        res.set(http::field::allow, r.allow);
        return res;
      }
      case route_kind::bad_request:
        return make_response(http::status::bad_request, r.error + "\n", version, keep_alive);
      case route_kind::forbidden:
        return make_response(http::status::forbidden, r.error + "\n", version, keep_alive);
      case route_kind::unauthorized: {
        response res =
            make_response(http::status::unauthorized, r.error + "\n", version, keep_alive);
        res.set(http::field::www_authenticate, "Bearer realm=\"backoff admin\"");
        return res;
      }
    }
    return response{};
  }

  // What the fault plan does to this /api request (counted in backoff_faults_total).
  faults::fault_decision decide_faults(const http::request<http::string_body>& req) {
    const std::string_view target = req.target();
    const faults::request_view view{target.substr(0, target.find('?')), [&](std::string_view name) {
                                      const auto it = req.find(name);
                                      return it == req.end() ? std::string_view{}
                                                             : std::string_view(it->value());
                                    }};
    faults::fault_decision d =
        faults::decide(options.faults, steady::now() - started, view, fault_rng);
    if (d.any()) metrics.faults_fired(d.fired);
    return d;
  }

  // Waits until `until` (time_point::max(): until the server stops), in slices of at most 100 ms
  // so that a stop, or a client that left, ends a long wait. False when it ended that way.
  task<bool> wait_for_fault(socket_type& stream, steady::time_point until) {
    timer_type timer(context.get_executor());
    for (;;) {
      if (stopping) co_return false;
      const auto now = steady::now();
      if (now >= until) co_return true;
      const auto slice = std::chrono::milliseconds(100);
      timer.expires_at(until - now > slice ? now + slice : until);
      co_await timer.async_wait(on_loop);
      if (peer_closed(stream)) co_return false;
    }
  }

  // slow_body: the header, then `plan.size` bytes of padding at `plan.bytes_per_s`, on an
  // absolute schedule (byte n leaves at n / speed), in pieces of a twentieth of a second. Each
  // piece must be taken within the header timeout, like any answer. False after an error.
  task<bool> write_slow_body(socket_type& stream, connection_entry& entry, unsigned version,
                             bool keep_alive, bool head, faults::slow_body_plan plan) {
    static const std::string padding(64 * 1024, 'x');
    response res = make_response(http::status::ok, "", version, keep_alive);
    res.content_length(plan.size);
    dated(res);
    http::response_serializer<http::string_body> header{res};
    entry.enter(connection_entry::phase::writing, options.header_timeout);
    const auto [header_error, unused] = co_await http::async_write_header(stream, header, on_loop);
    if (header_error || entry.closing) co_return false;
    if (head) co_return true;
    const std::uint64_t piece = std::clamp<std::uint64_t>(
        static_cast<std::uint64_t>(plan.bytes_per_s / 20), 1, padding.size());
    const auto begin = steady::now();
    timer_type timer(context.get_executor());
    std::uint64_t sent = 0;
    while (sent < plan.size) {
      // In double seconds first: a rate near zero puts the next byte past what nanoseconds hold.
      const double at = static_cast<double>(sent) / plan.bytes_per_s;
      const auto due = at >= 9e9 ? steady::time_point::max()
                                 : saturating_add(begin, std::chrono::duration_cast<duration>(
                                                             std::chrono::duration<double>(at)));
      if (due > steady::now()) {
        entry.enter_busy();  // waiting on our own schedule, not on the client
        if (!co_await wait_for_fault(stream, due)) co_return false;
      }
      const std::uint64_t n = std::min(piece, plan.size - sent);
      entry.enter(connection_entry::phase::writing, options.header_timeout);
      const auto [error, written] = co_await asio::async_write(
          stream, asio::buffer(padding.data(), static_cast<std::size_t>(n)), on_loop);
      if (error || entry.closing) co_return false;
      sent += n;
    }
    co_return true;
  }

  // 400 for a request that does not parse, 408 for one whose header came too slowly; then the
  // connection is closed.
  task<> answer_and_close(socket_type& stream, connection_entry& entry, http::status status,
                          std::string body) {
    auto res = make_response(status, std::move(body), 11, false);
    dated(res);
    metrics.answered(static_cast<int>(status));
    entry.enter(connection_entry::phase::writing, options.header_timeout);
    const auto [write_error, written] = co_await http::async_write(stream, res, on_loop);
    entry.enter_busy();  // close_gently has its own limit
    if (!write_error) co_await close_gently(stream);
  }

  // An /api request is served and answered here rather than in coroutines of its own: each would
  // cost a coroutine frame per request, and the server's CPU per request is tuned
  // (docs/PERFORMANCE.md). The helpers it calls on that path do not suspend.
  task<> session(socket_type& stream, connection_entry& entry) override {
    beast::flat_buffer buffer(header_limit);
    beast::error_code ignored;
    stream.non_blocking(true, ignored);  // read_request reads without blocking the thread
    entry.enter(connection_entry::phase::idle, options.header_timeout);  // its first request
    for (;;) {
      request_parser parser;
      limit_request_parser(parser);
      const beast::error_code read_error =
          co_await read_request(stream, buffer, parser, entry, options.header_timeout);
      if (stopping) break;
      if (read_error) {
        co_await answer_read_error(stream, entry, read_error);
        break;
      }
      const auto& req = parser.get();
      if (const auto refused = refuse_framing(req)) {
        // Its body's bytes may be in the buffer still, read as the next request if it went on.
        co_await answer_and_close(stream, entry, refused->status, refused->why + "\n");
        break;
      }
      const bool keep_alive = req.keep_alive();
      const unsigned version = req.version();
      // A HEAD answer has the GET answer's header, Content-Length included, and no body: a body
      // would be read as the start of the next answer on a keep-alive connection.
      const bool head = req.method() == http::verb::head;
      std::optional<response> res = answer_at_once(route_request(req, *admin), version, keep_alive);
      if (!res && service_tier) {
        res = co_await answer_in_tier(stream, req, version, keep_alive);
        if (!res) break;  // reset, or the server stops
      }
      std::optional<faults::slow_body_plan> slow;
      if (!res && !options.faults.empty()) {
        const faults::fault_decision fault = decide_faults(req);
        if (fault.reset) {
          reset_connection(stream);
          break;
        }
        if ((fault.hold_until || fault.delay.count() > 0) &&
            !co_await hold_for_fault(stream, entry, fault)) {
          break;
        }
        if (fault.abort_status) res = injected_answer(*fault.abort_status, version, keep_alive);
        slow = fault.slow;
      }
      if (!res) {
        std::optional<steady::time_point> deadline;
        if (const auto left = propagated_timeout(req)) deadline = clamped_deadline(*left);
        const service_end end = co_await serve_api(stream, deadline);
        if (end == service_end::gone) break;  // the client left or the server stops: no answer
        if (end == service_end::expired) {
          res = make_response(http::status::gateway_timeout, "deadline exceeded\n", version,
                              keep_alive);
        } else if (slow) {
          metrics.answered(200);
          if (!co_await write_slow_body(stream, entry, version, keep_alive, head, *slow) ||
              !keep_alive) {
            break;
          }
          entry.enter(connection_entry::phase::idle, options.idle_timeout);
          continue;
        } else if (version == 11 && keep_alive && !head) {
          const auto rest = send_usual_answer(stream);
          if (!rest) break;
          // A client that does not read its answers holds the connection no longer than this.
          if (rest->size() > 0 && !co_await write_rest(stream, entry, *rest)) break;
          entry.enter(connection_entry::phase::idle, options.idle_timeout);
          continue;
        } else {
          res = make_response(http::status::ok, "OK", version, keep_alive);
        }
      }
      metrics.answered(static_cast<int>(res->result_int()));
      dated(*res);
      beast::error_code write_error;
      entry.enter(connection_entry::phase::writing, options.header_timeout);
      if (head) {
        http::serializer<false, http::string_body> header_only{*res};
        std::tie(write_error, std::ignore) =
            co_await http::async_write_header(stream, header_only, on_loop);
      } else {
        std::tie(write_error, std::ignore) = co_await http::async_write(stream, *res, on_loop);
      }
      if (write_error || entry.closing || !res->keep_alive()) break;
      entry.enter(connection_entry::phase::idle, options.idle_timeout);
    }
  }

  // A request that does not parse gets 400 and the connection is closed, one too slow 408; a
  // client that went away, or an idle connection closed, needs no answer.
  task<> answer_read_error(socket_type& stream, connection_entry& entry,
                           const beast::error_code& read_error) {
    if (entry.closing) {
      if (entry.closing == connection_entry::ending::timeout &&
          timeout_reason(entry.now) == server_metrics::close_reason::header_timeout) {
        co_await answer_and_close(stream, entry, http::status::request_timeout,
                                  "request header timeout\n");
      }
    } else if (is_malformed_request(read_error)) {
      co_await answer_and_close(stream, entry, http::status::bad_request,
                                "bad request: " + read_error.message() + "\n");
    }
  }

  // A request to a system's service (tier.hpp), in a coroutine of its own (the tuned path is
  // plain serve's); nullopt when its connection closes unanswered (reset, or the server stops).
  task<std::optional<response>> answer_in_tier(socket_type& stream,
                                               const http::request<http::string_body>& req,
                                               unsigned version, bool keep_alive) {
    const tier::answer a = co_await service_tier->serve(tier::request_of(req));
    switch (a.kind) {
      case tier::answer_kind::ok:
        co_return make_response(http::status::ok, "OK", version, keep_alive);
      case tier::answer_kind::status:
        if (a.do_not_retry) {
          response res = make_response(static_cast<http::status>(a.status), "do not retry\n",
                                       version, keep_alive);
          res.set("grpc-retry-pushback-ms", "-1");
          co_return res;
        }
        if (a.status == 502) {
          co_return make_response(http::status::bad_gateway, "a call downstream failed\n", version,
                                  keep_alive);
        }
        if (a.status == 504) {
          co_return make_response(http::status::gateway_timeout, "deadline exceeded\n", version,
                                  keep_alive);
        }
        co_return injected_answer(a.status, version, keep_alive);
      case tier::answer_kind::reset:
        reset_connection(stream);
        co_return std::nullopt;
      case tier::answer_kind::gone:
        break;
    }
    co_return std::nullopt;
  }

  // A fault's delay or hold: waits on purpose (no timeout applies); false when the client left
  // or the server stops meanwhile.
  task<bool> hold_for_fault(socket_type& stream, connection_entry& entry,
                            const faults::fault_decision& fault) {
    entry.enter_busy();
    auto until = saturating_add(steady::now(), fault.delay);
    if (fault.hold_until) until = std::max(until, saturating_add(started, *fault.hold_until));
    co_return co_await wait_for_fault(stream, until);
  }

  // An injected status; 204 and 304 have no body (RFC 9110 sections 15.3.5 and 15.4.5).
  static response injected_answer(int status, unsigned version, bool keep_alive) {
    return make_response(static_cast<http::status>(status),
                         status == 204 || status == 304 ? "" : "injected fault\n", version,
                         keep_alive);
  }

  // The answer nearly every request gets, as bytes prepared once: serializing it with Beast each
  // time was most of the server's own CPU per request. Written at once when the socket takes it
  // all (it nearly always does), saving a trip through the scheduler: what it did not take is
  // returned (empty when it took everything), nullopt after an error.
  std::optional<asio::const_buffer> send_usual_answer(socket_type& stream) {
    metrics.answered(200);
    dates.refresh();
    return send_at_once(stream, asio::buffer(dates.ok_keep_alive()));
  }

  // What send_usual_answer left, within the header timeout; false when the connection ends.
  task<bool> write_rest(socket_type& stream, connection_entry& entry, asio::const_buffer rest) {
    entry.enter(connection_entry::phase::writing, options.header_timeout);
    const auto [rest_error, written] = co_await asio::async_write(stream, rest, on_loop);
    co_return !rest_error && !entry.closing;
  }

  void shut_down() {
    stopping = true;
    if (service_tier) service_tier->stop();
    accept.stop();
    gate.cancel();
    connections.stop();
  }
};

// The seed's once-a-second line, until the server stops.
task<> log_each_second(timer_type& timer, const worker& w, const server_metrics& metrics) {
  for (;;) {
    timer.expires_after(std::chrono::seconds(1));
    const auto [ec] = co_await timer.async_wait(on_loop);
    if (ec || w.stopping) co_return;
    log_line(metrics.concurrency.load(), duration(metrics.last_delay_ns.load()));
  }
}

// Pause faults (outage(action=pause)) stop the server through the gate /admin/pause uses, when
// their windows say: work under way waits and new requests are held, as under SIGSTOP.
task<> pause_on_schedule(timer_type& timer, const worker& w, server& s,
                         std::vector<faults::fault_window> windows) {
  std::sort(windows.begin(), windows.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const faults::fault_window& window : windows) {
    timer.expires_at(saturating_add(w.started, window.start));
    const auto [ec] = co_await timer.async_wait(on_loop);
    if (ec || w.stopping) co_return;
    s.pause(window.end == duration::max() ? std::nullopt
                                          : std::optional<duration>(window.end - window.start));
  }
}

}  // namespace

struct server::impl {
  server_options options;
  server_metrics metrics;
  std::vector<std::unique_ptr<worker>> workers;
  std::vector<std::thread> threads;
  std::uint16_t port = 0;
  std::mutex control;  // pause/resume/stop from any thread
  std::uint64_t pause_generation = 0;
  std::optional<std::string> failure;  // guarded by `control`: why a thread's loop ended
  bool stopped = false;
  std::unique_ptr<asio::steady_timer> auto_resume;  // on worker 0
  std::unique_ptr<timer_type> ticker;               // the per-second line, on worker 0
  std::unique_ptr<timer_type> pause_faults;         // the next pause fault, on worker 0
  admin_access admin;                               // who may use /admin/*

  void for_each_worker(auto f) {
    for (auto& w : workers) asio::post(w->context, [w = w.get(), f] { f(*w); });
  }
};

std::int64_t default_max_connections(unsigned threads) {
  rlimit limit{};
  std::int64_t soft = 1024;  // Linux's usual soft limit, if it cannot be read
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    soft = limit.rlim_cur == RLIM_INFINITY
               ? 1'000'000
               : static_cast<std::int64_t>(std::min<rlim_t>(limit.rlim_cur, 1'000'000));
  }
  const std::int64_t reserve = std::min<std::int64_t>(64 + 4 * std::int64_t{threads}, soft / 2);
  return std::max<std::int64_t>(1, soft - reserve);
}

bool is_loopback_address(std::string_view host) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(std::string(host), ec);
  return !ec && address.is_loopback();
}

server::server(const server_options& options) : impl_(std::make_unique<impl>()) {
  impl_->options = options;
  // A tier's gate is single-threaded (tier.hpp): one replica, one thread.
  const unsigned threads = options.tier ? 1U : std::max(1U, options.threads);
  if (impl_->options.max_connections <= 0) {
    impl_->options.max_connections = default_max_connections(threads);
  }
  impl_->metrics.reject_status = options.reject_status;
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) {
    throw std::system_error(ec, "bad --host '" + options.host + "'");
  }
  // One listening socket, and one acceptor per thread over a duplicate of its descriptor: each
  // thread's io_context waits on it, the kernel hands each connection to one of them. Binding
  // once is what makes a busy port an error (SO_REUSEPORT on every thread's socket let a second
  // server bind it too and take half the connections). --reuse-port asks for that sharing.
  auto first = std::make_unique<worker>(impl_->options, impl_->metrics, 0);
  listen_on(first->acceptor, tcp::endpoint(address, options.port), options.reuse_port);
  const tcp::endpoint bound = first->acceptor.local_endpoint(ec);
  if (ec) throw std::system_error(ec, "cannot read the listening address");
  impl_->workers.push_back(std::move(first));
  for (unsigned i = 1; i < threads; ++i) {
    auto w = std::make_unique<worker>(impl_->options, impl_->metrics, i);
    if (options.reuse_port) {
      listen_on(w->acceptor, bound, true);
    } else {
      const int fd = ::fcntl(impl_->workers[0]->acceptor.native_handle(), F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        throw std::system_error(errno, std::system_category(),
                                "cannot share the listening socket among threads");
      }
      w->acceptor.assign(bound.protocol(), fd, ec);
      if (ec) {
        ::close(fd);
        throw std::system_error(ec, "cannot share the listening socket among threads");
      }
    }
    impl_->workers.push_back(std::move(w));
  }
  const std::uint16_t port = bound.port();
  impl_->port = port;
  impl_->admin.loopback = address.is_loopback();
  impl_->admin.port = port;
  impl_->admin.token = options.admin_token;
  for (auto& w : impl_->workers) {
    w->admin = &impl_->admin;
    w->owner = this;
  }
  if (impl_->options.tier) {
    worker& w = *impl_->workers[0];
    w.service_tier = std::make_unique<tier>(*impl_->options.tier, options.fault_seed,
                                            w.context.get_executor(), impl_->metrics,
                                            impl_->options.tier_calls, impl_->options.tier_bucket);
  }
  impl_->auto_resume = std::make_unique<asio::steady_timer>(impl_->workers[0]->context);
  impl_->ticker = std::make_unique<timer_type>(impl_->workers[0]->context.get_executor());
  impl_->pause_faults = std::make_unique<timer_type>(impl_->workers[0]->context.get_executor());
}

server::~server() {
  stop();
  wait();
}

std::uint16_t server::port() const noexcept {
  return impl_->port;
}
const server_metrics& server::metrics() const noexcept {
  return impl_->metrics;
}
std::optional<tier_figures> server::service_figures() const {
  const auto& t = impl_->workers[0]->service_tier;
  if (!t) return std::nullopt;
  return t->figures();
}

void server::start(std::optional<steady::time_point> origin) {
  const duration period =
      sweep_period(std::min(impl_->options.header_timeout, impl_->options.idle_timeout));
  const auto started = origin.value_or(steady::now());
  for (auto& w : impl_->workers) {
    w->started = started;
    if (w->service_tier) w->service_tier->start(started);
    asio::co_spawn(w->context, w->accept.run(), asio::detached);
    asio::co_spawn(w->context, w->connections.sweep(period), asio::detached);
  }
  if (impl_->options.log_every_second) {
    asio::co_spawn(impl_->workers[0]->context,
                   log_each_second(*impl_->ticker, *impl_->workers[0], impl_->metrics),
                   asio::detached);
  }
  std::vector<faults::fault_window> pauses;
  const faults::fault_plan& plan =
      impl_->options.tier ? impl_->options.tier->faults : impl_->options.faults;
  for (const faults::scheduled_fault& f : plan.faults) {
    if (f.what.kind == faults::fault_kind::outage &&
        f.what.action == faults::outage_action::pause) {
      pauses.push_back(f.when);
    }
  }
  if (!pauses.empty()) {
    asio::co_spawn(
        impl_->workers[0]->context,
        pause_on_schedule(*impl_->pause_faults, *impl_->workers[0], *this, std::move(pauses)),
        asio::detached);
  }
  for (auto& w : impl_->workers) {
    impl_->threads.emplace_back([this, ctx = &w->context] {
      try {
        ctx->run();
      } catch (const std::exception& e) {
        // Not expected (network outcomes are values): the loop died, and says why to failure().
        const std::lock_guard lock(impl_->control);
        if (!impl_->failure) impl_->failure = e.what();
      }
    });
  }
}

std::optional<std::string> server::failure() const {
  const std::lock_guard lock(impl_->control);
  return impl_->failure;
}

void server::pause(std::optional<duration> for_duration) {
  const std::lock_guard lock(impl_->control);
  if (impl_->stopped) return;
  const std::uint64_t generation = ++impl_->pause_generation;
  impl_->metrics.paused(true);
  impl_->for_each_worker([](worker& w) { w.set_paused(true); });
  asio::post(impl_->workers[0]->context, [this, generation, for_duration] {
    impl_->auto_resume->cancel();
    if (!for_duration) return;
    impl_->auto_resume->expires_after(*for_duration);
    impl_->auto_resume->async_wait([this, generation](const beast::error_code& ec) {
      if (ec) return;
      bool current = false;
      {
        const std::lock_guard guard(impl_->control);
        current = generation == impl_->pause_generation;
      }
      if (current) resume();  // not a later pause's
    });
  });
}

void server::resume() {
  const std::lock_guard lock(impl_->control);
  ++impl_->pause_generation;
  impl_->metrics.paused(false);
  impl_->for_each_worker([](worker& w) { w.set_paused(false); });
}

void server::stop() {
  const std::lock_guard lock(impl_->control);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->metrics.paused(false);
  asio::post(impl_->workers[0]->context, [this] {
    impl_->auto_resume->cancel();
    impl_->ticker->cancel();
    impl_->pause_faults->cancel();
  });
  impl_->for_each_worker([](worker& w) { w.shut_down(); });
}

void server::wait() {
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

std::string authority(std::string_view host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

std::string api_url(std::string_view host, std::uint16_t port) {
  return "http://" + authority(host, port) + "/api";
}

}  // namespace backoff::net
