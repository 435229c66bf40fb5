// SPDX-License-Identifier: Apache-2.0
#include "intervals.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>

#include "report/hdr_log.hpp"

namespace backoff::net::load_detail {

namespace {

// What happened between `base` and `now` (both running counts).
load_counts counts_since(const load_counts& base, const load_counts& now) {
  load_counts d;
  d.operations = now.operations - base.operations;
  d.succeeded = now.succeeded - base.succeeded;
  d.failed = now.failed - base.failed;
  d.fell_back = now.fell_back - base.fell_back;
  d.requests = now.requests - base.requests;
  d.ok = now.ok - base.ok;
  d.errors = now.errors - base.errors;
  d.timeouts = now.timeouts - base.timeouts;
  d.cancelled = now.cancelled - base.cancelled;
  d.late_sends = now.late_sends - base.late_sends;
  d.dropped_sends = now.dropped_sends - base.dropped_sends;
  d.local_errors = now.local_errors - base.local_errors;
  return d;
}

}  // namespace

interval_report take_interval(load_state& s) {
  const report::time_units now = s.now();
  const double span = static_cast<double>(now - s.interval_start) * 1e-9;
  s.interval_start = now;
  interval_report r;
  r.at_s = static_cast<double>(now) * 1e-9;
  r.span_s = span;
  r.counts = counts_since(s.interval_base, s.counts);
  s.interval_base = s.counts;
  if (span > 0) {
    r.ok_per_s = static_cast<double>(r.counts.ok) / span;
    r.errors_per_s = static_cast<double>(r.counts.errors) / span;
    r.timeouts_per_s = static_cast<double>(r.counts.timeouts) / span;
  }
  r.in_flight = s.in_flight.size();
  return r;
}

asio::awaitable<void> reporter(load_state& s,
                               const std::function<void(const interval_report&)>& report) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto period = s.options.report_every;
  auto next = s.origin() + period;
  for (;;) {
    timer.expires_at(next);
    co_await timer.async_wait(as_tuple_awaitable);
    if (s.stopping) break;
    const interval_report r = take_interval(s);
    if (report) report(r);
    const auto now = std::chrono::steady_clock::now();
    while (next <= now) next += period;
  }
}

void end_latency_interval(load_state& s, double end_s) {
  if (s.options.histogram_log) {
    *s.options.histogram_log << report::hdr_log_line(
        s.histogram_logged_s, end_s - s.histogram_logged_s, s.interval_latency, 1e6);
  }
  s.histogram_logged_s = end_s;
  s.recorder.add_latencies(s.interval_latency);
  s.interval_latency.reset();
}

asio::awaitable<void> histogram_logger(load_state& s) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (std::int64_t k = 1;; ++k) {
    timer.expires_at(s.origin() + std::chrono::seconds(k));
    co_await timer.async_wait(as_tuple_awaitable);
    if (s.stopping) break;
    end_latency_interval(s, static_cast<double>(k));
  }
}

}  // namespace backoff::net::load_detail
