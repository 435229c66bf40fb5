// SPDX-License-Identifier: Apache-2.0
// `backoff load` reports operations (a user's call, with its retries) and requests (the attempts
// on the wire) apart: every operation started ends succeeded, failed or unfinished; every request
// ends OK, an error, a timeout, a local error, cancelled or unanswered; the report lines add up to
// the run's totals, and the totals are summary.json's.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/fallback.hpp"
#include "faults/faults.hpp"
#include "net/client/load.hpp"
#include "net/server/server.hpp"
#include "report/recorder.hpp"

namespace {

using namespace std::chrono_literals;

std::optional<double> load_ops_field(const backoff::report::strategy_summary& s,
                                     std::string_view name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

std::uint64_t load_ops_count(const backoff::report::strategy_summary& s, std::string_view name) {
  const std::optional<double> v = load_ops_field(s, name);
  EXPECT_TRUE(v.has_value()) << name;
  return v ? static_cast<std::uint64_t>(*v) : 0;
}

// An in-process server on a free port where half the /api answers are 500s.
backoff::net::server_options load_ops_half_failing_server() {
  backoff::net::server_options so;
  so.port = 0;
  so.threads = 1;
  so.service.base_delay = 0ms;
  so.max_busy = 0;
  so.faults.faults.push_back({{}, backoff::faults::parse_fault("errors(rate=50%, status=500)")});
  return so;
}

// Four clients, three attempts per operation 1 ms apart: about one operation in eight fails.
backoff::net::load_options load_ops_retrying_load(std::uint16_t port) {
  backoff::net::load_options o;
  o.target.port = port;
  o.clients = 4;
  o.think_mean = 2ms;
  o.timeout = 1s;
  o.duration_total = 500ms;
  o.report_every = 200ms;  // lines at 0.2 and 0.4 s, then the last 0.1 s
  o.strategy.max_attempts = 3;
  o.strategy.policy = backoff::backoff_policy::constant(1ms);
  o.grow_from_think = false;
  return o;
}

TEST(LoadOperations, EveryOperationAndEveryRequestIsCountedOnceAndTheSummaryAgrees) {
  backoff::net::server s(load_ops_half_failing_server());
  s.start();
  const backoff::net::load_options o = load_ops_retrying_load(s.port());
  std::vector<backoff::net::interval_report> lines;
  const auto run = backoff::net::run_load(
      o, [&](const backoff::net::interval_report& r) { lines.push_back(r); });
  s.stop();
  s.wait();
  const auto server = s.metrics().snapshot();

  // Operations: some succeeded, some gave up after their three attempts, each ended once.
  EXPECT_GT(run.succeeded, 0u);
  EXPECT_GT(run.failed, 0u);
  EXPECT_EQ(run.succeeded + run.failed + run.unfinished, run.operations);
  EXPECT_LE(run.unfinished, o.clients);  // closed loop: one operation per client at most
  EXPECT_EQ(run.fell_back, 0u);          // no fallback

  // Requests: each has one verdict; a 200 ends its operation, every failed one spent all three
  // attempts on 500s, and at most one request per unfinished operation is still unanswered.
  EXPECT_EQ(run.cancelled, 0u);  // no hedge
  EXPECT_EQ(run.local_errors, 0u);
  EXPECT_EQ(run.timeouts, 0u);
  EXPECT_EQ(run.ok + run.errors + run.unanswered(), run.requests);
  EXPECT_LE(run.unanswered(), run.unfinished);
  EXPECT_EQ(run.ok, run.succeeded);
  EXPECT_GE(run.errors, 3 * run.failed);
  EXPECT_GT(run.requests, run.operations);  // retries: the load is amplified
  EXPECT_LE(run.requests, 3 * run.operations);
  // The server saw every request answered, and perhaps some of the unanswered ones.
  EXPECT_GE(server.ok, run.ok);
  EXPECT_GE(server.other_statuses[400], run.errors);
  EXPECT_LE(server.ok + server.other_statuses[400], run.requests);

  // summary.json: the same operations, and the requests by verdict in its fields.
  const auto& sum = run.summary;
  EXPECT_EQ(sum.operations, run.operations);
  EXPECT_EQ(sum.completed, run.succeeded);
  EXPECT_EQ(sum.gave_up, run.failed);
  EXPECT_EQ(sum.unfinished, run.unfinished);
  EXPECT_EQ(sum.attempts, run.requests);
  EXPECT_EQ(sum.events, run.requests);
  EXPECT_DOUBLE_EQ(sum.attempts_per_operation,
                   static_cast<double>(run.requests) / static_cast<double>(run.operations));
  EXPECT_EQ(load_ops_count(sum, "requests_ok"), run.ok);
  EXPECT_EQ(load_ops_count(sum, "requests_errors"), run.errors);
  EXPECT_EQ(load_ops_count(sum, "requests_timeouts"), run.timeouts);
  EXPECT_EQ(load_ops_count(sum, "requests_cancelled"), 0u);
  EXPECT_EQ(load_ops_count(sum, "requests_unanswered"), run.unanswered());
  EXPECT_EQ(load_ops_count(sum, "local_errors") + load_ops_count(sum, "requests_ok") +
                load_ops_count(sum, "requests_errors") + load_ops_count(sum, "requests_timeouts") +
                load_ops_count(sum, "requests_cancelled") +
                load_ops_count(sum, "requests_unanswered"),
            sum.attempts);
  // The fields that were there before keep their names and order.
  ASSERT_GE(sum.fields.size(), 3u);
  EXPECT_EQ(sum.fields[0].name, "late_sends");
  EXPECT_EQ(sum.fields[1].name, "dropped_sends");
  EXPECT_EQ(sum.fields[2].name, "local_errors");

  // The lines: each interval's counts, which add up to the run's (the last line ends the run,
  // unless it was a sliver under a tenth of the period left after a line at ~0.5 s).
  ASSERT_GE(lines.size(), 2u);
  backoff::net::load_counts added;
  for (const auto& line : lines) {
    EXPECT_LE(line.counts.succeeded + line.counts.failed, run.operations);
    EXPECT_EQ(line.counts.ok, line.counts.succeeded);
    EXPECT_GT(line.span_s, 0.0);
    EXPECT_DOUBLE_EQ(line.ok_per_s, static_cast<double>(line.counts.ok) / line.span_s);
    EXPECT_DOUBLE_EQ(line.errors_per_s, static_cast<double>(line.counts.errors) / line.span_s);
    added.operations += line.counts.operations;
    added.succeeded += line.counts.succeeded;
    added.failed += line.counts.failed;
    added.requests += line.counts.requests;
    added.ok += line.counts.ok;
    added.errors += line.counts.errors;
  }
  const bool last_line_ends_the_run = lines.back().at_s >= 0.5;
  for (const auto& [sum_of_lines, total] :
       {std::pair{added.operations, run.operations}, std::pair{added.succeeded, run.succeeded},
        std::pair{added.failed, run.failed}, std::pair{added.requests, run.requests},
        std::pair{added.ok, run.ok}, std::pair{added.errors, run.errors}}) {
    if (last_line_ends_the_run) {
      EXPECT_EQ(sum_of_lines, total);
    } else {
      EXPECT_LE(sum_of_lines, total);
    }
  }
}

// The fallback answers the operations a breaker refused (tests/net/load_fallback_test.cpp's
// setup): the run counts them, as summary.json's fell_back_rate does.
TEST(LoadOperations, TheOperationsAFallbackAnswersAreCountedAsTheSummarysRate) {
  backoff::net::server_options so;
  so.port = 0;
  so.threads = 1;
  so.service.base_delay = 0ms;
  backoff::net::server s(so);
  s.start();
  backoff::net::load_options o;
  o.target.port = s.port();
  o.target.path = "/nowhere";  // 404: a permanent failure, never retried
  o.clients = 4;
  o.think_mean = 5ms;
  o.timeout = 1s;
  o.duration_total = 400ms;
  o.report_every = 10s;
  o.strategy.max_attempts = 1;
  o.strategy.breaker = backoff::parse_breaker("breaker(kind=consecutive, failures=3, open=1h)");
  o.strategy.fallback = backoff::parse_fallback("fallback(on=[breaker_open])");
  const auto run = backoff::net::run_load(o, {});
  s.stop();
  s.wait();
  EXPECT_EQ(run.succeeded, 0u);
  EXPECT_GT(run.fell_back, 0u);
  EXPECT_LT(run.fell_back, run.failed);  // the 404s are not the fallback's
  EXPECT_EQ(run.succeeded + run.failed + run.unfinished, run.operations);
  // A refused attempt never reaches the wire: fewer requests than operations.
  EXPECT_LT(run.requests, run.operations);
  EXPECT_DOUBLE_EQ(
      *load_ops_field(run.summary, backoff::report::fell_back_rate_field),
      static_cast<double>(run.fell_back) / static_cast<double>(run.summary.operations));
  const std::string line = backoff::net::format_operations_totals(run, true);
  EXPECT_NE(line.find(" 0 succeeded (0.00%), " + std::to_string(run.failed) + " failed (gave up)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("; the fallback answered " + std::to_string(run.fell_back) + " of the " +
                      std::to_string(run.failed) + " failed"),
            std::string::npos)
      << line;
}

TEST(LoadOperations, TheLinesSayOperationsAndRequestsApart) {
  backoff::net::interval_report r;
  r.in_flight = 12;
  r.counts.operations = 40;
  r.counts.succeeded = 35;
  r.counts.failed = 3;
  r.counts.requests = 120;
  r.counts.ok = 100;
  r.counts.errors = 15;
  r.counts.timeouts = 5;
  EXPECT_EQ(backoff::net::format_operations_report(r),
            "operations: 40 started, 35 succeeded, 3 failed, 12 in flight (92.11% of those ended "
            "succeeded); requests: 120 sent, 3.00 per operation started: 100 OK, 15 errors, "
            "5 timed out");
  r.counts.local_errors = 2;
  EXPECT_EQ(backoff::net::format_operations_report(r).substr(174), ", 2 local errors");
  // The seed's line is unchanged.
  r.span_s = 5;
  r.ok_per_s = 20;
  EXPECT_EQ(backoff::net::format_report(r),
            "OK: 20.00 req/sec, errors: 0.00 req/sec, timedout: 0.00 req/sec");

  backoff::net::load_counts run;
  run.operations = 2100;
  run.succeeded = 2089;
  run.failed = 8;
  run.unfinished = 3;
  run.fell_back = 5;
  run.requests = 8169;
  EXPECT_EQ(backoff::net::format_operations_totals(run, false),
            "2100 operations: 2089 succeeded (99.48%), 8 failed (gave up), 3 unfinished; "
            "3.89 requests per operation");
  EXPECT_EQ(backoff::net::format_operations_totals(run, true),
            "2100 operations: 2089 succeeded (99.48%), 8 failed (gave up), 3 unfinished; "
            "3.89 requests per operation; the fallback answered 5 of the 8 failed "
            "(99.71% answered)");
}

TEST(LoadOperations, ARatioOfNothingIsADash) {
  const backoff::net::interval_report quiet;
  EXPECT_EQ(backoff::net::format_operations_report(quiet),
            "operations: 0 started, 0 succeeded, 0 failed, 0 in flight (- of those ended "
            "succeeded); requests: 0 sent, - per operation started: 0 OK, 0 errors, 0 timed out");
  EXPECT_EQ(backoff::net::format_operations_totals(backoff::net::load_counts{}, false),
            "0 operations: 0 succeeded (-), 0 failed (gave up), 0 unfinished; - requests per "
            "operation");
}

}  // namespace
