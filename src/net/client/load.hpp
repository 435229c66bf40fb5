// SPDX-License-Identifier: Apache-2.0
// `backoff load` as a library: N virtual clients as Asio coroutines that call an HTTP server and
// retry with the library's policies through async_retry, as seed 004's Go client does
// (smira/exponential-backoff, client.go): each client thinks for an exponentially distributed
// time, sends one request and waits for it up to a timeout; a timeout or an error is retried after
// the strategy's backoff, or after the server's grpc-retry-pushback-ms, and not at all when that
// is negative (gRFC A6). Each retry tells the server how long ago its operation's first attempt
// left, as the simulator's callers do (x-backoff-since-first-attempt; send_key adds the key).
//
// Open loop (`rate` or `ramp`) sends operations at intended times computed ahead of the clock
// (arrivals.hpp: Poisson or evenly spaced, at a fixed or ramping rate), whatever the answers do,
// and measures each operation's latency from its intended send time, not from when the generator
// got round to sending it: wrk2's correction of coordinated omission, so a server that stalls
// shows its stall in the percentiles. A send more than `late_after` behind its time is counted
// late; one that cannot go (max_in_flight operations already, or its deadline passed before it
// could be sent) is dropped and counted (k6's dropped_iterations). With `request_deadline` an
// operation gives up that long after its intended time, so a rate above capacity shows as
// failures rather than as a histogram of queueing.
//
//   load_options o;
//   o.target = parse_target("http://127.0.0.1:8070/api");
//   o.clients = 1000;  o.think_mean = 10s;  o.timeout = 2s;  o.duration = 60s;
//   o.strategy = parse_strategy("policy=smira-go, max_attempts=5");
//   load_run run = run_load(o, [](const interval_report& r) { print(r); });
//   // run.summary: the simulator's strategy_summary (SPEC 6.2), time series included
//
// Everything runs on one thread (one io_context), which a thousand clients do not saturate; the
// recorder is the report layer's, as the simulator's, so a real run writes the same summary.json
// and timeseries.csv.
#pragma once

#include <boost/system/error_code.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/strategy.hpp"
#include "net/client/arrivals.hpp"
#include "report/hdr_histogram.hpp"
#include "report/recorder.hpp"
#include "report/result.hpp"

namespace backoff::net {

struct http_target {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8070;
  std::string path = "/api";
};

// "http://HOST[:PORT][/PATH]"; throws backoff::parse_error naming the bad part (https, no host,
// a bad port).
http_target parse_target(std::string_view url);

struct load_options {
  http_target target;
  std::string name = "load";                       // the name in summary.json and timeseries.csv
  std::uint32_t clients = 1000;                    // closed loop: virtual clients
  duration think_mean = std::chrono::seconds(10);  // closed loop: mean of the exponential think
  double rate_per_s = 0;                           // > 0: open loop at this rate instead
  std::vector<rate_point> ramp;  // open loop at this rate over time instead (rate_per_s ignored)
  arrival_kind arrival = arrival_kind::poisson;
  // Open loop: connections to send on, each one operation at a time (wrk's -c); a send due while
  // all are busy waits for one, its latency still counted from its intended time.
  std::uint32_t connections = 100;
  std::uint32_t max_in_flight = 10000;  // open loop: sent or waiting; beyond, dropped (counted)
  duration late_after = std::chrono::milliseconds(1);  // open loop: a send this late is counted
  // > 0: an operation ends (failed) this long after its intended send time (closed loop: its
  // start), its attempts' timeouts cut to fit; open loop: a send already past it is dropped.
  duration request_deadline{0};
  // When set: an HdrHistogram interval log (hdr_log.hpp) of the completed operations' latency,
  // in microseconds, one interval per second; the summary's percentiles are read from the same
  // counts (load_run::latency).
  std::ostream* histogram_log = nullptr;
  duration timeout = std::chrono::seconds(2);
  // Each attempt tells the server the time it may take (`timeout`, cut to what is left before
  // `request_deadline`) and its number: grpc-timeout, x-envoy-expected-rq-timeout-ms,
  // x-envoy-attempt-count, grpc-previous-rpc-attempts.
  bool propagate_deadline = false;
  // Each attempt says its operation's key, x-backoff-key: splitmix64 of the operation's number
  // (from 0, in the order they start), the simulator's callers' key, which a per-key outage
  // (`outage(keys=...)`) takes mod 1000. Every attempt after an operation's first says how long
  // ago its first left (x-backoff-since-first-attempt, ms) whatever this says.
  bool send_key = false;
  duration duration_total = std::chrono::seconds(60);
  duration report_every = std::chrono::seconds(5);
  duration bucket = std::chrono::seconds(1);
  // The guards every operation runs through: the wait before a retry, max_attempts, and one AIMD
  // window, retry budget, circuit breaker and throttle shared by all clients (the throttle is
  // the SRE book's adaptive throttling, or a CUBIC rate limiter that paces attempts). With a
  // hedge, copies of each operation (gRPC A6) instead of retries; the budget is charged for every
  // copy after the first, the first copy uses the client's connection and the others their own.
  // The deadline key is not used: `timeout` and `request_deadline` bound each attempt and each
  // operation (a driver refuses it, strategy::refusal).
  backoff::strategy strategy;
  bool grow_from_think = true;  // seed 004's client quirk (docs/models/outage-recovery.md)
  std::uint64_t seed = 1;
  // When set, the run's outage for recovery_s (times from the start of the run).
  std::optional<report::outage_window> outage;
  // With `outage`: report goodput before, during and after it (strategy_summary::phases).
  bool phase_goodput = false;
  // Called at each report interval with the rates over it, and once per bucket with the
  // server's concurrency if the caller knows it (the in-process experiment does).
  std::function<std::int64_t()> server_concurrency;
  // Called once, at the first local error (below), with what the system said.
  std::function<void(const std::string&)> on_first_local_error;
};

// Errors of this machine rather than of the server: out of descriptors (EMFILE, ENFILE), of
// socket buffers or memory (ENOBUFS, ENOMEM), of local ports (EADDRNOTAVAIL). The attempt never
// reached the server: it is retried like any failure but counted apart (load_run::local_errors),
// not as a server error.
bool is_local_error(const boost::system::error_code& ec);

// What a run counted besides its summary: its operations (a user's call, with its retries or
// hedged copies) and its requests (the attempts on the wire). requests / operations is the load
// the strategy put on the server per call (summary.json's `load`).
struct load_counts {
  // Started: every operation that took its first step (open loop: taken from the queue of
  // sends, or still waiting in it at the end; a dropped send is not one). Each ends succeeded,
  // failed (gave up: attempts or deadline spent, a permanent answer, a guard's refusal) or
  // unfinished (in flight or waiting when the run ended; set at the end only).
  std::uint64_t operations = 0, succeeded = 0, failed = 0, unfinished = 0;
  std::uint64_t fell_back = 0;  // of the failed, those the strategy's fallback answers for
  std::uint64_t requests = 0, ok = 0, errors = 0, timeouts = 0;
  std::uint64_t cancelled = 0;      // hedged copies cancelled when another copy won
  std::uint64_t late_sends = 0;     // open loop: sent more than late_after after their time
  std::uint64_t dropped_sends = 0;  // open loop: never sent (in-flight cap, or past deadline)
  std::uint64_t local_errors = 0;   // attempts that failed here (is_local_error), not counted in
                                    // errors, nor in the summary's time series
  // Requests that got no verdict: in flight when the run ended.
  std::uint64_t unanswered() const noexcept {
    return requests - ok - errors - timeouts - local_errors - cancelled;
  }
};

struct interval_report {
  double at_s = 0;  // seconds since the start
  double ok_per_s = 0, errors_per_s = 0, timeouts_per_s = 0;
  std::uint64_t in_flight = 0;
  double span_s = 0;  // the time since the line before
  // What happened over the span: operations started and ended, requests sent and answered
  // (unfinished and unanswered are not set).
  load_counts counts;
};

struct load_run : load_counts {
  // Its fields (model_field) add late_sends, dropped_sends, local_errors and the requests by
  // verdict: requests_ok, requests_errors, requests_timeouts, requests_cancelled and
  // requests_unanswered (with local_errors, they add up to the summary's attempts).
  report::strategy_summary summary;
  // The completed operations' latencies in microseconds at 3 significant digits: the counts
  // behind summary.latency_s, and the sum of histogram_log's intervals.
  report::hdr_histogram latency;
  double wall_s = 0;
};

// The seed client's line: "OK: 98.00 req/sec, errors: 0.00 req/sec, timedout: 0.00 req/sec".
std::string format_report(const interval_report& r);

// The line after it, in counts over the interval: "operations: 40 started, 35 succeeded,
// 3 failed, 12 in flight (92.11% of those ended succeeded); requests: 120 sent, 3.00 per
// operation started: 100 OK, 15 errors, 5 timed out" (", N local errors" when there were some).
std::string format_operations_report(const interval_report& r);

// The run's operations, for the closing lines: "2100 operations: 2089 succeeded (99.48%),
// 8 failed (gave up), 3 unfinished; 3.89 requests per operation", and with a fallback
// "; the fallback answered 5 of the 8 failed (99.71% answered)". The percentages are
// summary.json's success_rate and answered_rate.
std::string format_operations_totals(const load_counts& run, bool with_fallback);

// Runs for options.duration_total and returns what was measured. `report` (may be empty) is
// called on the run's thread every report_every. `stop` (may be empty) is polled every 100 ms;
// when it returns true the run ends early (Ctrl-C).
load_run run_load(const load_options& options,
                  const std::function<void(const interval_report&)>& report,
                  const std::function<bool()>& stop = {});

}  // namespace backoff::net
