// SPDX-License-Identifier: Apache-2.0
#include "intervals.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>

#include "report/hdr_log.hpp"

namespace backoff::net::load_detail {

interval_report take_interval(load_state& s) {
  const report::time_units now = s.now();
  const double span = static_cast<double>(now - s.interval_start) * 1e-9;
  s.interval_start = now;
  interval_report r;
  r.at_s = static_cast<double>(now) * 1e-9;
  if (span > 0) {
    r.ok_per_s = static_cast<double>(s.interval_ok) / span;
    r.errors_per_s = static_cast<double>(s.interval_errors) / span;
    r.timeouts_per_s = static_cast<double>(s.interval_timeouts) / span;
  }
  r.in_flight = s.in_flight.size();
  s.interval_ok = s.interval_errors = s.interval_timeouts = 0;
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
