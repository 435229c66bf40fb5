// SPDX-License-Identifier: Apache-2.0
// The load client's loops: the clients (closed loop) or connections (open loop) that run
// operations one after another, the open loop's arrivals, the run's clock, and run_load, which
// owns the run's state (load_state.hpp). An attempt is attempt.cpp's, the answer's parsing
// reply.cpp's, the rates and histogram lines intervals.cpp's.
#include "load.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <chrono>
#include <sstream>
#include <stdexcept>

#include "backoff/async_hedge.hpp"
#include "backoff/async_retry.hpp"
#include "backoff/error.hpp"
#include "backoff/random.hpp"
#include "net/client/intervals.hpp"
#include "net/client/load_state.hpp"
#include "net/client/operation.hpp"
#include "report/hdr_log.hpp"

namespace backoff::net {
// The client's internals, in a namespace of their own: backoff_net may be built as one unity
// source, where every file's anonymous namespace is the same one (the server's has a
// socket_type, a parse_buffered of its own).
namespace load_detail {

report::recorder_options load_state::make_recorder_options(const load_options& o) {
  report::recorder_options r;
  r.strategy = o.name;
  r.bucket = o.bucket.count();
  r.seconds_per_unit = 1e-9;
  r.outage = o.outage;
  r.phase_goodput = o.phase_goodput;
  if (o.strategy.fallback) r.fallback = o.strategy.fallback->on;
  // The latencies come from the intervals (load_state.hpp), in their unit and precision, and are
  // read as HdrHistogram's tools read the log.
  r.latency.precision = latency_precision;
  r.latency.highest = latency_highest_us;
  r.latency.seconds_per_unit = 1e-6;
  r.latency.rule = report::quantile_rule::highest_equivalent;
  r.latency.from_operations = false;
  return r;
}

namespace {

// An operation ended, completed or failed: its row in the recorder, and a completed one's latency
// (microseconds, from its first attempt or intended send time) in the interval's histogram.
void operation_ended(load_state& s, const in_flight_op& flight, outcome why,
                     std::uint32_t attempts) {
  report::op_record record{};
  record.id = flight.id;
  record.first_attempt = flight.first_attempt;
  record.done = s.now();
  record.attempts = std::max(flight.attempts, attempts);
  record.status = report::status_of(why);
  record.why = why;
  s.recorder.operation_done(record);
  if (why == outcome::succeeded) {
    ++s.counts.succeeded;
  } else {
    ++s.counts.failed;
    const auto& fallback = s.options.strategy.fallback;
    if (fallback && fallback->on.contains(why)) ++s.counts.fell_back;
  }
  if (why == outcome::succeeded)
    s.interval_latency.record((record.done - record.first_attempt + 500) / 1000);
}

// One of the run's clients, and the operations it runs one after another on its connection.
//
// Closed loop (`closed_index`): a virtual client that thinks for an exponential time and then
// runs an operation from now, on its own kept-alive connection.
// Open loop: one of the `connections`, taking the sends due in order. A send is late when it
// starts more than late_after after its intended time (the generator fell behind, or every
// connection was busy), and dropped when its deadline passed before it could start; its
// operation counts from its intended time.
//
// Each operation runs in this coroutine's frame (its retries through async_retry, or its copies
// through async_hedge) rather than in a coroutine of its own: a frame per operation was a
// memory allocation per request, most of them past Asio's two-frame cache.
asio::awaitable<void> client_loop(load_state& s, std::optional<std::uint32_t> closed_index) {
  sender w(s.context->get_executor());  // in the frame: it lives as long as the loop
  connection& c = w.c;
  const bool closed = closed_index.has_value();
  random_generator rng(closed ? derive_seed(s.options.seed, *closed_index) : 0);
  const double mean_ns = static_cast<double>(s.options.think_mean.count());
  for (;;) {
    duration think{0};
    report::time_units start = 0;  // open loop: the intended send time; closed loop: now
    if (closed) {
      think = duration{static_cast<std::int64_t>(exponential_variate(rng, mean_ns))};
      if (think.count() > 0) {  // --lambda 0: back to back, without a trip through the timers
        w.wake.expires_after(think);
        co_await w.wake.async_wait(as_tuple_awaitable);
      }
      if (s.stopping) break;
      start = s.now();
    } else {
      while (s.queued.empty()) {
        if (s.stopping) co_return;
        s.idle_senders.push_back(&w);
        w.wake.expires_at(asio::steady_timer::time_point::max());
        co_await w.wake.async_wait(as_tuple_awaitable);
        if (s.stopping) co_return;
      }
      const queued_send next = s.queued.front();
      s.queued.pop_front();
      const report::time_units behind = s.now() - next.intended;
      if (s.options.request_deadline.count() > 0 && behind >= s.options.request_deadline.count()) {
        ++s.counts.dropped_sends;
        continue;
      }
      if (behind > s.options.late_after.count()) ++s.counts.late_sends;
      rng = random_generator(next.seed);
      start = next.intended;
    }

    const std::uint64_t id = s.next_op++;
    s.recorder.operation_started(start);
    ++s.counts.operations;
    const report::time_units deadline_at =
        s.options.request_deadline.count() > 0 ? start + s.options.request_deadline.count() : 0;
    in_flight_op flight(s.in_flight, id, start, deadline_at);
    // The library keeps the deadline between attempts (no wait runs into it, no attempt starts
    // after it); attempt_time() cuts the attempt in flight. The library measures max_elapsed from
    // its first reading of env.now, which is made to be the reading `left` comes from: read
    // again, the clock would have moved on (far, on a loaded machine), the library's deadline
    // would fall after the operation's, and an attempt timed out at the operation's deadline
    // would be followed by one more, sent with no time left.
    const duration read_at = load_state::steady_now();
    const duration left{
        deadline_at ? std::max<report::time_units>(deadline_at - (read_at - s.start).count(), 1)
                    : 0};
    retry_policy policy{s.options.strategy.policy, s.options.strategy.max_attempts, left};
    async_retry_env env;
    env.now = [read_at, first = true]() mutable {
      if (!first) return load_state::steady_now();
      first = false;
      return read_at;
    };
    env.random = rng;
    if (s.options.grow_from_think) env.continue_from = think;
    const retry_gates gates = s.guards.gates();
    const operation_ref ref{&s, &c, &flight};
    const attempt_op op{&ref};
    retry_result<reply> result;
    if (const auto& hedge = s.options.strategy.hedge) {
      hedge_options<classify_hedged_reply> options{*hedge, classify_hedged_reply{&*hedge}, gates,
                                                   left};
      const auto hedged = co_await async_hedge(hedged_copy_op{&ref}, std::move(options), env);
      result.why = hedged.why;
      result.attempts = hedged.attempts;
    } else if (s.window) {
      result =
          co_await async_retry(*s.window, op, policy, classify_reply, env, no_retry_hook{}, gates);
    } else {
      result = co_await async_retry(op, policy, classify_reply, env, no_retry_hook{}, gates);
    }
    flight.unlink();
    operation_ended(s, flight, result.why, result.attempts);
    if (closed && s.stopping) break;
  }
  c.close();
}

// The rate's points: the ramp, or one point for a fixed rate.
std::vector<rate_point> rate_points(const load_options& o) {
  if (!o.ramp.empty()) return o.ramp;
  return {rate_point{duration{0}, o.rate_per_s}};
}

// Sends at the schedule's times, each waited for on the absolute clock (a late wake-up does not
// push the later sends back): behind schedule, the sends due go at once, in order, each with its
// own intended time. The generator wakes on a grid of send_tick: a wake-up (a timerfd update and a
// trip through the kernel) per tick rather than per send, which at 50,000 sends per second was a
// fifth of the generator's time. A send goes at most send_tick after its time, and its latency
// counts from its time all the same.
constexpr duration send_tick = std::chrono::microseconds(100);

asio::awaitable<void> open_loop_arrivals(load_state& s) {
  arrival_schedule schedule(s.options.arrival, rate_points(s.options),
                            derive_seed(s.options.seed, 0xA11));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto origin = s.origin();
  // The clock as last read: a send due by then is due now, without reading it again (behind
  // schedule, the sends due go out in bursts, and a reading each was a clock call per send).
  auto last_read = std::chrono::steady_clock::time_point::min();
  for (std::uint64_t n = 0;; ++n) {
    const std::optional<duration> at = schedule.next();
    if (!at || *at >= s.options.duration_total) break;
    const auto due = origin + *at;
    if (due > last_read) last_read = std::chrono::steady_clock::now();
    if (due > last_read) {
      const duration wake = (*at + send_tick - duration{1}) / send_tick * send_tick;
      timer.expires_at(origin + wake);
      co_await timer.async_wait(as_tuple_awaitable);
    }
    if (s.stopping) break;
    if (s.in_flight.size() + s.queued.size() >= s.options.max_in_flight) {
      ++s.counts.dropped_sends;
      continue;
    }
    s.queued.push_back({at->count(), derive_seed(s.options.seed, n + 1)});
    if (!s.idle_senders.empty()) {
      s.idle_senders.back()->wake.cancel();  // the most recently used: its connection is warm
      s.idle_senders.pop_back();
    }
  }
}

// The server's concurrency once per bucket (when the caller can see it), and the end of the run.
asio::awaitable<void> clock(load_state& s, const std::function<bool()>& stop) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const duration poll = std::chrono::milliseconds(100);
  duration next_sample = duration{0};
  for (;;) {
    const duration elapsed{s.now()};
    if (elapsed >= s.options.duration_total || (stop && stop())) break;
    if (s.options.server_concurrency && elapsed >= next_sample) {
      s.recorder.load(s.now(), s.options.server_concurrency(), 0);
      next_sample += s.options.bucket;
    }
    timer.expires_after(std::min(poll, s.options.duration_total - elapsed));
    co_await timer.async_wait(as_tuple_awaitable);
  }
  s.stopping = true;
  s.context->stop();
}

// The server's address; throws std::runtime_error when the host does not resolve.
tcp::endpoint resolve_target(asio::io_context& context, const http_target& target) {
  tcp::resolver resolver(context);
  boost::system::error_code ec;
  const auto results = resolver.resolve(target.host, std::to_string(target.port), ec);
  // The error_code overload: Boost's exception text carries its own source location.
  if (ec || results.empty()) {
    throw std::runtime_error("cannot resolve " + quote_for_message(target.host) + ": " +
                             (ec ? ec.message() : std::string("no address")));
  }
  return *results.begin();
}

// "GET /api HTTP/1.1" with Host and keep-alive, serialized once for every request.
std::string request_text_of(const http_target& target) {
  http::request<http::empty_body> req{http::verb::get, target.path, 11};
  req.set(http::field::host, target.host);
  req.keep_alive(true);
  std::ostringstream text;
  text << req;
  return text.str();
}

// The run's coroutines: the histogram log (its header now), the clients or the open loop's
// connections and arrivals, the reporter and the clock.
void spawn_run(load_state& s, const std::function<void(const interval_report&)>& report,
               const std::function<bool()>& stop) {
  const load_options& options = s.options;
  if (options.histogram_log) {
    *options.histogram_log << report::hdr_log_header(
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
        "Values in microseconds from the intended send time; Interval_Max in seconds");
    asio::co_spawn(*s.context, histogram_logger(s), asio::detached);
  }
  if (options.rate_per_s > 0 || !options.ramp.empty()) {
    for (std::uint32_t i = 0; i < options.connections; ++i) {
      asio::co_spawn(*s.context, client_loop(s, std::nullopt), asio::detached);
    }
    asio::co_spawn(*s.context, open_loop_arrivals(s), asio::detached);
  } else {
    for (std::uint32_t i = 0; i < options.clients; ++i) {
      asio::co_spawn(*s.context, client_loop(s, i), asio::detached);
    }
  }
  asio::co_spawn(*s.context, reporter(s, report), asio::detached);
  asio::co_spawn(*s.context, clock(s, stop), asio::detached);
}

// The operations still in flight at `end`, and the sends still waiting for a connection (meant
// to go, never sent): unfinished.
void record_unfinished(load_state& s, report::time_units end) {
  for (const in_flight_op* op = s.in_flight.head; op != nullptr; op = op->next) {
    s.recorder.operation_done(
        {op->id, op->first_attempt, end, op->attempts, report::op_status::unfinished});
    ++s.counts.unfinished;
  }
  for (const queued_send& q : s.queued) {
    s.recorder.operation_started(q.intended);
    ++s.counts.operations;
    ++s.counts.unfinished;
    s.recorder.operation_done({s.next_op++, q.intended, end, 0, report::op_status::unfinished});
  }
}

// What the run measured, once its coroutines have ended at `end`.
load_run finish_run(load_state& s, report::time_units end) {
  // The last, partial second of latencies (its line too, with a log).
  const double end_s = static_cast<double>(end) * 1e-9;
  if (end_s > s.histogram_logged_s || s.interval_latency.count() > 0) {
    end_latency_interval(s, end_s);
  }
  load_run run;
  static_cast<load_counts&>(run) = s.counts;
  run.summary = s.recorder.finish(end, s.counts.requests);
  run.latency = s.recorder.latencies();
  const load_counts& c = s.counts;
  for (const auto& [name, value] :
       {std::pair{"late_sends", c.late_sends}, std::pair{"dropped_sends", c.dropped_sends},
        std::pair{"local_errors", c.local_errors}, std::pair{"requests_ok", c.ok},
        std::pair{"requests_errors", c.errors}, std::pair{"requests_timeouts", c.timeouts},
        std::pair{"requests_cancelled", c.cancelled},
        std::pair{"requests_unanswered", c.unanswered()}}) {
    run.summary.fields.push_back({name, static_cast<double>(value)});
  }
  return run;
}

}  // namespace
}  // namespace load_detail

bool is_local_error(const boost::system::error_code& ec) {
  namespace errc = boost::system::errc;
  return ec == errc::too_many_files_open || ec == errc::too_many_files_open_in_system ||
         ec == errc::no_buffer_space || ec == errc::not_enough_memory ||
         ec == errc::address_not_available;
}

http_target parse_target(std::string_view url) {
  const auto fail = [&](std::string_view why) {
    throw parse_error("bad --url " + quote_for_message(url) + ": " + std::string(why));
  };
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, 8) == "https://") fail("https is not supported (the harness is loopback HTTP)");
  if (url.substr(0, scheme.size()) != scheme) fail("expected http://HOST[:PORT][/PATH]");
  std::string_view rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  http_target t;
  t.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const std::size_t colon = authority.rfind(':');
  const std::string_view host = authority.substr(0, colon);
  if (host.empty()) fail("no host");
  t.host = std::string(host);
  if (colon != std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
      fail("bad port " + quote_for_message(port));
    }
    t.port = static_cast<std::uint16_t>(value);
  } else {
    t.port = 80;
  }
  return t;
}

std::string format_report(const interval_report& r) {
  return fmt::format("OK: {:.2f} req/sec, errors: {:.2f} req/sec, timedout: {:.2f} req/sec",
                     r.ok_per_s, r.errors_per_s, r.timeouts_per_s);
}

namespace {

// "95.00%" of n / of, or "-" when `of` is 0 (a ratio of nothing).
std::string percent_of(std::uint64_t n, std::uint64_t of) {
  if (of == 0) return "-";
  return fmt::format("{:.2f}%", 100.0 * static_cast<double>(n) / static_cast<double>(of));
}

// "3.00" requests per operation, or "-" when there was none.
std::string per_operation(std::uint64_t requests, std::uint64_t operations) {
  if (operations == 0) return "-";
  return fmt::format("{:.2f}", static_cast<double>(requests) / static_cast<double>(operations));
}

}  // namespace

std::string format_operations_report(const interval_report& r) {
  const load_counts& c = r.counts;
  const std::uint64_t ended = c.succeeded + c.failed;
  return fmt::format(
      "operations: {} started, {} succeeded, {} failed, {} in flight ({} of those ended "
      "succeeded); requests: {} sent, {} per operation started: {} OK, {} errors, {} timed out{}",
      c.operations, c.succeeded, c.failed, r.in_flight, percent_of(c.succeeded, ended), c.requests,
      per_operation(c.requests, c.operations), c.ok, c.errors, c.timeouts,
      c.local_errors ? fmt::format(", {} local errors", c.local_errors) : std::string());
}

std::string format_operations_totals(const load_counts& run, bool with_fallback) {
  std::string line = fmt::format(
      "{} operations: {} succeeded ({}), {} failed (gave up), {} unfinished; {} requests per "
      "operation",
      run.operations, run.succeeded, percent_of(run.succeeded, run.operations), run.failed,
      run.unfinished, per_operation(run.requests, run.operations));
  if (with_fallback) {
    line += fmt::format("; the fallback answered {} of the {} failed ({} answered)", run.fell_back,
                        run.failed, percent_of(run.succeeded + run.fell_back, run.operations));
  }
  return line;
}

load_run run_load(const load_options& options,
                  const std::function<void(const interval_report&)>& report,
                  const std::function<bool()>& stop) {
  using namespace load_detail;
  load_state s(options);
  // Everything runs on this thread, and nothing posts to the context from another: the scheduler
  // and the reactor need no locks.
  s.context.emplace(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE);
  s.endpoint = resolve_target(*s.context, options.target);
  s.request_text = request_text_of(options.target);
  // The budget, breaker and throttle are the strategy's own (the gates); the window is the Asio
  // one, which suspends a coroutine rather than a thread.
  s.guards = options.strategy.instantiate();
  s.guards.window.reset();
  if (const auto& window = options.strategy.window) {
    s.window = std::make_unique<async_window>(s.context->get_executor(), *window);
  }
  const auto wall_start = std::chrono::steady_clock::now();
  s.start = load_state::steady_now();
  spawn_run(s, report, stop);
  s.context->run();
  // The last, partial window (a run rarely ends on a line's deadline) gets its line too, unless it
  // is a sliver left by a line printed just before the end (its rates would be noise).
  const report::time_units sliver =
      std::min<report::time_units>(options.report_every.count() / 10, 100'000'000);
  if (report && s.now() - s.interval_start >= sliver) report(take_interval(s));
  const report::time_units end = s.now();
  record_unfinished(s, end);
  s.context.reset();  // ends the coroutines while what they refer to still lives
  load_run run = finish_run(s, end);
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace backoff::net
