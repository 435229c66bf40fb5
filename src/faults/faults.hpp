// SPDX-License-Identifier: Apache-2.0
// Faults on demand: what `backoff serve` and `backoff proxy` do to an HTTP request besides
// answering it, decided here without I/O or a clock, so that a test drives it on virtual time
// and both programs inject exactly the same faults (docs/NETWORK.md, "Faults on demand"). A layer
// of its own below the drivers (backoff_faults), so that `load --experiment` and the simulator
// read the same schedules and make the same decisions.
//
//   fault_plan plan = parse_fault_schedule(text, "faults.toml");      // or from flags:
//   plan.faults.push_back({{}, parse_errors_flag("5%:503")});
//   plan.envoy_headers = true;                                        // --envoy-fault-headers
//   random_generator rng{derive_seed(seed, thread)};
//   const fault_decision d = decide(plan, since_start, {path, header_of}, rng);
//   if (d.reset) ... close with RST;  wait d.hold_until (hang) and d.delay;
//   if (d.abort_status) ... answer it;  else serve, and with d.slow write the body slowly.
//
// A fault is a spec in the library's call grammar (spec.hpp), one kind per name:
//   errors(rate=5%, status=503)                      a share of requests answered with status
//   errors(rate=90%, fade=2s)                        transient: a retry fails less, rate * (1 -
//                                                      t / fade), t being the caller's time since
//                                                      its first attempt (header
//                                                      x-backoff-since-first-attempt, ms)
//   latency(delay=100ms)                             added before the answer: fixed, or
//   latency(distribution=exponential, mean=50ms)       exponential(mean), uniform(lo, hi),
//   latency(distribution=lognormal, median=20ms, sigma=1)  lognormal(median, sigma),
//   latency(distribution=pareto, scale=10ms, shape=1.5)    pareto(scale, shape); rate= a share
//   partial(header=x-shard, value=[3, 7], status=503)  requests whose header has one of the
//   partial(path=/api/users/42, status=503)             values, or whose path starts so, fail
//   outage(status=503)                               every request, while its window lasts;
//   outage(action=reset) | outage(action=hang)         reset: the connection is reset (RST);
//                                                      hang: held until the window ends
//   outage(action=pause)                             the server is stopped (smira's SIGSTOP):
//                                                      new requests are held as by hang; serve
//                                                      also stops work under way (its pause gate),
//                                                      proxy holds answers until the end
//   outage(keys=50%, key_header=x-user)              only requests whose key is among the
//                                                      first half of 1000 (header x-backoff-key
//                                                      by default): a per-user outage
//   slow_body(size=16KiB, speed=4KiB/s)              the body padded to size, sent at speed
//   capacity(share=50%)                              the service runs on that share of its
//                                                      workers while the window lasts (a node
//                                                      lost, CPU throttled); the simulator's
//                                                      system model honours it
//   cold_start(factor=5, half_life=10s)              a restart: the service time is multiplied
//                                                      by 1 + (factor - 1) * 2^(-t / half_life),
//                                                      t from the window's start (caches and
//                                                      JITs warming); the system model's too
// Every kind takes rate= (default 100%): the share of the requests it applies to that it hits.
// A window says when a fault is on, from the start of the server (or proxy, or experiment).
//
// Order within one request, as Envoy's fault filter (delay, then abort): an outage or a partial
// outage that applies decides at once (reset, hang, or its status, with no added latency: the
// service is down, not slow); otherwise the latencies that fire add up, then the first error that
// fires (Envoy's abort header before the errors faults) answers, else the request is served, its
// body slowed by the first slow_body that fires.
//
// Envoy's fault headers (on only with --envoy-fault-headers, since any client could then fail the
// server): x-envoy-fault-abort-request (status 200..599), x-envoy-fault-abort-request-percentage
// (0..100, default 100), x-envoy-fault-delay-request (milliseconds), and
// x-envoy-fault-delay-request-percentage. A malformed value is ignored, as Envoy does.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/random.hpp"

namespace backoff::faults {

// No injected wait is longer than a day: a heavy-tailed draw or a huge header value would
// otherwise overflow the clock, and a day is past any experiment.
inline constexpr duration longest_injected_wait = std::chrono::hours(24);

// The header in which a retrying caller says how long ago its first attempt of this call was
// sent, in milliseconds (a decimal number): what a fading errors fault reads. Absent, or not a
// number: a first attempt.
inline constexpr std::string_view since_first_attempt_header = "x-backoff-since-first-attempt";

enum class fault_kind { errors, latency, partial, outage, slow_body, capacity, cold_start };

enum class latency_distribution { fixed, uniform, exponential, lognormal, pareto };

enum class outage_action { status, reset, hang, pause };

struct fault {
  fault_kind kind = fault_kind::errors;
  double rate = 1.0;  // the share of the requests it applies to that it hits, in [0, 1]
  int status = 503;   // errors, partial, outage with action=status: 200..599
  // latency: fixed uses `a`; uniform [a, b); exponential mean a; lognormal median a and sigma;
  // pareto scale a and shape (mean a * shape / (shape - 1) for shape > 1).
  latency_distribution distribution = latency_distribution::fixed;
  duration a{0};
  duration b{0};
  double sigma = 0;
  double shape = 0;
  // partial: a header name (lower case) and the values that fail, or a path prefix.
  std::string header;
  std::vector<std::string> values;
  std::string path_prefix;
  outage_action action = outage_action::status;  // outage
  // outage: the share of keys that are down (1: every request). A request's key is its
  // key_header's value: a number taken mod 1000, other text hashed to 0..999; it fails when its
  // key is below keys * 1000 (Isaev's per-user failure: the same keys fail every retry). A
  // request without the header is spared.
  double keys = 1.0;
  std::string key_header = "x-backoff-key";
  // errors: transient, fading to nothing `fade` after the caller's first attempt (0: they do
  // not fade). The caller says how long it has been trying in since_first_attempt_header.
  duration fade{0};
  double share = 1.0;           // capacity: the share of the workers left, in (0, 1]
  double factor = 1.0;          // cold_start: the slowdown at the window's start, >= 1
  duration half_life{0};        // cold_start: the time the slowdown takes to halve
  std::uint64_t body_size = 0;  // slow_body: bytes
  double bytes_per_s = 0;       // slow_body: speed
  std::string spec;             // the canonical text, for messages and metrics
};

// When a fault is on: [start, end) from the start of the run; end = duration::max(): to the end.
struct fault_window {
  duration start{0};
  duration end = duration::max();
  bool contains(duration t) const noexcept { return t >= start && t < end; }
};

struct scheduled_fault {
  fault_window when;
  fault what;
};

struct fault_plan {
  std::vector<scheduled_fault> faults;
  bool envoy_headers = false;  // --envoy-fault-headers
  bool empty() const noexcept { return faults.empty() && !envoy_headers; }
};

// What a request looks like to the faults: its path (the target without the query) and its
// headers by name (case-insensitive; an empty view when absent).
struct request_view {
  std::string_view path;
  std::function<std::string_view(std::string_view name)> header;
};

struct slow_body_plan {
  std::uint64_t size = 0;
  double bytes_per_s = 0;
};

// Which kinds fired for one request, for the metrics (backoff_faults_total{fault=...}).
enum fault_counter : unsigned {
  counter_errors,
  counter_latency,
  counter_partial,
  counter_outage,
  counter_slow_body,
  counter_envoy_abort,
  counter_envoy_delay,
  counter_cold_start,
  fault_counter_count,
};
std::string_view fault_counter_name(fault_counter c) noexcept;

struct fault_decision {
  bool reset = false;                  // reset the connection (RST), no answer
  std::optional<duration> hold_until;  // hang: hold until this time from the start, then serve
  duration delay{0};                   // wait this long first
  std::optional<int> abort_status;     // answer this status instead of serving
  std::optional<slow_body_plan> slow;  // serve, then send a body of this size at this speed
  double slowdown = 1.0;               // cold_start: multiply the request's service time
  unsigned fired = 0;                  // bit (1 << fault_counter) per kind that fired
  bool any() const noexcept { return fired != 0; }
};

// The faults for one request `since_start` after the start. Draws from `rng` only for faults
// with rate < 1 or a random latency, in plan order, so the same plan, seed and request order give
// the same decisions.
fault_decision decide(const fault_plan& plan, duration since_start, const request_view& request,
                      random_generator& rng);

// The end of the pause under way `since_start` (outage(action=pause)), if one is: an answer
// ready now leaves then. A pause stops the whole server, so it takes no rate below 100 %.
std::optional<duration> paused_until(const fault_plan& plan, duration since_start);

// The share of its workers a service has `since_start` after the start: the product of the
// capacity faults on then (1 when none is).
double capacity_share(const fault_plan& plan, duration since_start);

// Why a network driver (serve, proxy, load --experiment) cannot run this plan: it holds a fault
// only the simulator's system model honours (capacity, cold_start); none when it can.
std::optional<std::string> network_refusal(const fault_plan& plan);

// "64KiB", "1MB", "512", "100B" as bytes (B, KiB, MiB, GiB, KB, MB, GB); throws parse_error
// naming `text`. The sizes of slow_body and of the proxy's toxics.
std::uint64_t parse_byte_size(std::string_view text);

// One fault from its spec ("errors(rate=5%, status=503)"); throws parse_error with one line
// quoting the spec and naming the bad part.
fault parse_fault(std::string_view spec);

// The markdown table of the fault keys, as docs/NETWORK.md carries it (spec_keys.hpp).
std::string fault_keys_markdown();

// The shorthand flags of serve and proxy, each one fault on from the start to the end (outage:
// in its window). Each throws parse_error naming what is wrong.
fault parse_errors_flag(std::string_view text);   // --errors RATE[:STATUS]: "5%:503"
fault parse_latency_flag(std::string_view text);  // --latency 100ms | DIST(ARGS)
fault parse_partial_flag(std::string_view text);  // --partial-outage ARGS: "header=x, value=1"
scheduled_fault parse_outage_flag(
    std::string_view text);  // --outage START+LENGTH[:STATUS|reset|hang|pause]
fault parse_slow_body_flag(std::string_view text);  // --slow-body SIZE@SPEED: "16KiB@4KiB/s"

// A schedule file (TOML), each entry one fault and when it is on:
//   [[fault]]
//   at = "10s"                                # default 0s
//   for = "20s"                               # default: to the end (or until = "30s")
//   fault = "errors(rate=50%, status=503)"
// Unknown keys, a bad spec or time, and an entry with both `for` and `until` are errors that name
// the file, line and column (fault_schedule_error). `where` names the text in messages.
fault_plan parse_fault_schedule(std::string_view text, const std::string& where);
// The same from a file: at most 1 MiB, a regular file, FIFO or /dev/stdin; throws
// fault_schedule_error naming the file when it cannot be read.
fault_plan read_fault_schedule(const std::string& path);

// Its message is one line: control characters from the file (in toml++'s descriptions, say) are
// escaped.
struct fault_schedule_error : std::runtime_error {
  explicit fault_schedule_error(const std::string& message)
      : std::runtime_error(escape_controls(message)) {}
};

// One line per fault, for a program's start-up message: "errors(rate=5%, status=503) from 0s".
std::string describe(const scheduled_fault& f);

}  // namespace backoff::faults
