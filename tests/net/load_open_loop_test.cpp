// SPDX-License-Identifier: Apache-2.0
// `backoff load`'s open loop against an in-process server: sends that cannot go are dropped and
// counted, a per-request deadline bounds what the histogram holds, the HdrHistogram interval log
// holds every completed operation, and (WallClock: plain build only, about 11 s) latency measured
// from the intended send time shows a server's stalls that a closed loop hides.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "net/client/load.hpp"
#include "net/server/server.hpp"
#include "report/hdr_log.hpp"

namespace {

using namespace std::chrono_literals;

// A server answering /api after `service` (checked every millisecond).
struct test_server {
  explicit test_server(backoff::duration service) : s(options(service)) { s.start(); }
  ~test_server() {
    s.stop();
    s.wait();
  }
  static backoff::net::server_options options(backoff::duration service) {
    backoff::net::server_options so;
    so.port = 0;
    so.threads = 1;
    so.service.base_delay = service;
    so.service.tick = 1ms;
    return so;
  }
  backoff::net::load_options load() const {
    backoff::net::load_options o;
    o.target.port = s.port();
    o.report_every = 10s;
    o.strategy.max_attempts = 1;
    return o;
  }
  backoff::net::server s;
};

double field(const backoff::report::strategy_summary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value.value_or(-1);
  }
  ADD_FAILURE() << "no field " << name;
  return -1;
}

TEST(LoadOpenLoop, SendsBeyondTheInFlightCapAreDroppedAndCounted) {
  test_server server(300ms);
  auto o = server.load();
  o.rate_per_s = 200;
  o.arrival = backoff::net::arrival_kind::constant;
  o.max_in_flight = 3;
  o.duration_total = 500ms;
  const auto run = backoff::net::run_load(o, {});
  // 100 sends are due; at most 3 are in flight for the first 300 ms, so most are dropped.
  EXPECT_LE(run.summary.operations, 9u);
  EXPECT_GE(run.dropped_sends, 80u);
  EXPECT_EQ(run.summary.operations + run.dropped_sends, 100u);
  EXPECT_EQ(field(run.summary, "dropped_sends"), static_cast<double>(run.dropped_sends));
  EXPECT_EQ(field(run.summary, "late_sends"), static_cast<double>(run.late_sends));
  EXPECT_EQ(field(run.summary, "local_errors"), 0.0);
}

// Sends due while every connection is busy wait for one: they start late (counted), and their
// latency counts from their intended time, the wait included, as wrk2's does.
TEST(LoadOpenLoop, SendsWaitingForAConnectionAreLateAndTheWaitIsInTheirLatency) {
  test_server server(100ms);
  auto o = server.load();
  o.rate_per_s = 40;  // one every 25 ms; two connections serve one every 50 ms
  o.arrival = backoff::net::arrival_kind::constant;
  o.connections = 2;
  o.duration_total = 1s;
  o.timeout = 5s;
  const auto run = backoff::net::run_load(o, {});
  EXPECT_EQ(run.dropped_sends, 0u);
  EXPECT_GE(run.late_sends, 10u);
  ASSERT_TRUE(run.summary.latency_s);
  EXPECT_LE(run.summary.completed, 21u);  // two at a time, 100 ms each
  // The last ones completed waited hundreds of milliseconds for a connection.
  EXPECT_GE(run.summary.latency_s->max, 0.3);
  EXPECT_EQ(run.summary.operations, 40u);  // every send due is an operation, sent or waiting
}

// With a deadline, an operation gives up when it passes (its attempt's timeout cut to fit): a
// rate the server cannot keep up with shows as failures, not as seconds of queueing.
TEST(LoadOpenLoop, ADeadlineEndsOperationsAndBoundsTheLatencyKept) {
  test_server server(250ms);
  auto o = server.load();
  o.rate_per_s = 100;
  o.timeout = 5s;
  o.request_deadline = 80ms;
  o.strategy.max_attempts = 0;  // retried until the deadline
  o.strategy.policy = backoff::backoff_policy::constant(10ms);
  o.duration_total = 400ms;
  const auto run = backoff::net::run_load(o, {});
  EXPECT_GT(run.summary.operations, 20u);
  EXPECT_EQ(run.summary.completed, 0u);
  EXPECT_FALSE(run.summary.latency_s.has_value());
  // Each operation's one attempt was cut at the deadline, 80 ms after its intended time, not at
  // the 5 s timeout, and not retried after it: only those of the last 80 ms are unfinished.
  EXPECT_LE(run.summary.unfinished, 10u);
  EXPECT_EQ(run.timeouts, run.summary.operations - run.summary.unfinished);
  // One request per operation at most, never a retry: each that timed out sent one; one still
  // queued when the run ended (a slow machine, a sanitizer) may have sent none.
  EXPECT_LE(run.requests, run.summary.operations);
  EXPECT_GE(run.requests, run.timeouts);
}

TEST(LoadOpenLoop, TheHistogramLogHoldsEveryCompletedOperation) {
  test_server server(0ms);
  auto o = server.load();
  o.rate_per_s = 150;
  o.duration_total = 1500ms;
  std::ostringstream log;
  o.histogram_log = &log;
  const auto run = backoff::net::run_load(o, {});
  ASSERT_GT(run.summary.completed, 100u);
  const auto parsed = backoff::report::parse_hdr_log(log.str());
  ASSERT_EQ(parsed.intervals.size(), 2u);  // [0, 1) and the last half second
  EXPECT_DOUBLE_EQ(parsed.intervals[0].start_s, 0);
  EXPECT_DOUBLE_EQ(parsed.intervals[0].length_s, 1);
  EXPECT_DOUBLE_EQ(parsed.intervals[1].start_s, 1);
  EXPECT_NEAR(parsed.intervals[1].length_s, 0.5, 0.05);
  const auto all = backoff::report::merge_logs({parsed});
  EXPECT_EQ(all.count(), run.summary.completed);
  // The same latencies as the summary's (microseconds there, seconds here; 0.1 % resolution).
  EXPECT_NEAR(static_cast<double>(all.max()) * 1e-6, run.summary.latency_s->max,
              run.summary.latency_s->max * 0.002 + 1e-6);
}

// The summary's percentiles are read from the log's counts, by construction: the log's
// intervals, merged, are the run's histogram count for count, and give the summary's figures.
TEST(LoadOpenLoop, TheSummaryIsReadFromTheHistogramLogsCounts) {
  test_server server(0ms);
  auto o = server.load();
  o.rate_per_s = 300;
  o.duration_total = 1500ms;
  std::ostringstream log;
  o.histogram_log = &log;
  const auto run = backoff::net::run_load(o, {});
  ASSERT_GT(run.summary.completed, 100u);
  ASSERT_TRUE(run.summary.latency_s);
  const auto merged = backoff::report::merge_logs({backoff::report::parse_hdr_log(log.str())});
  EXPECT_EQ(merged.count(), run.summary.completed);
  ASSERT_EQ(merged.count(), run.latency.count());
  ASSERT_EQ(merged.indices_used(), run.latency.indices_used());
  for (std::size_t i = 0; i < merged.indices_used(); ++i) {
    EXPECT_EQ(merged.count_at_index(i), run.latency.count_at_index(i)) << i;
  }
  const auto& l = *run.summary.latency_s;
  const auto seconds = [](std::int64_t us) { return static_cast<double>(us) * 1e-6; };
  const double summary_figures[] = {l.p50, l.p75, l.p90, l.p95, l.p99, l.p999, l.p9999};
  const double qs[] = {0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 0.9999};
  for (std::size_t i = 0; i < std::size(qs); ++i) {
    EXPECT_EQ(summary_figures[i], seconds(merged.value_at_quantile(qs[i]))) << qs[i];
  }
  EXPECT_EQ(l.max, seconds(merged.max()));
}

// The server stalls 250 ms every 2.5 s (1 s every 10 s, scaled by 4). Measured from the intended
// send time, the sends that fell in a stall waited up to its end: 10 % of them, so p99 is most of
// the stall. A closed loop sends nothing while its clients wait, so only one request per client
// sees each stall, and p99 stays at the service time.
TEST(LoadOpenLoopWallClock, CorrectedLatencyShowsAStallThatAClosedLoopHides) {
  const auto stall = 250ms;
  const auto run_with_stalls = [&](bool open_loop) {
    test_server server(0ms);
    auto o = server.load();
    o.duration_total = 5s;
    o.timeout = 5s;
    if (open_loop) {
      o.rate_per_s = 400;
    } else {
      o.clients = 4;
      o.think_mean = 0ms;
    }
    const auto start = std::chrono::steady_clock::now();
    std::thread staller([&] {
      for (const auto at : {1250ms, 3750ms}) {
        std::this_thread::sleep_until(start + at);
        server.s.pause(stall);
      }
    });
    const auto run = backoff::net::run_load(o, {});
    staller.join();
    return run;
  };
  const auto open = run_with_stalls(true);
  const auto closed = run_with_stalls(false);
  ASSERT_TRUE(open.summary.latency_s && closed.summary.latency_s);
  const double stall_s = std::chrono::duration<double>(stall).count();
  std::cout << "open loop p99 " << open.summary.latency_s->p99 << " s, closed loop p99 "
            << closed.summary.latency_s->p99 << " s\n";
  EXPECT_GE(open.summary.latency_s->p99, 0.5 * stall_s);
  EXPECT_LE(closed.summary.latency_s->p99, 0.2 * stall_s);
  EXPECT_GE(closed.summary.latency_s->max, 0.8 * stall_s);  // the stall happened to both
}

}  // namespace
