// SPDX-License-Identifier: Apache-2.0
#include "intervals.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>

#include "report/hdr_log.hpp"

namespace backoff::net::load_detail {

namespace {

// The counts a report interval reports (unfinished is known at the end only).
constexpr std::uint64_t load_counts::*interval_counted[] = {
    &load_counts::operations, &load_counts::succeeded,     &load_counts::failed,
    &load_counts::fell_back,  &load_counts::requests,      &load_counts::ok,
    &load_counts::errors,     &load_counts::timeouts,      &load_counts::cancelled,
    &load_counts::late_sends, &load_counts::dropped_sends, &load_counts::local_errors};

// What happened between `base` and `now` (both running counts).
load_counts counts_since(const load_counts& base, const load_counts& now) {
  load_counts d;
  for (const auto member : interval_counted) d.*member = now.*member - base.*member;
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
