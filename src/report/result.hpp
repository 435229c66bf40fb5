// SPDX-License-Identifier: Apache-2.0
// The result of a run, as every output shows it: one strategy's totals, latency percentiles and
// time series (strategy_summary), and a whole run of a scenario (scenario_result: plain, a sweep,
// or a shard of a sweep, possibly stopped early). The simulator and the network harness both
// produce these; summary.hpp writes them, plots.hpp draws them. Nothing here runs anything.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backoff/policy.hpp"

namespace backoff::report {

class sweep_spool;

// A time in the producer's units: nanoseconds, or ticks in tick models (seconds_per_unit says).
using time_units = std::int64_t;

struct series_bucket {
  std::uint64_t new_operations = 0, attempts = 0, successes = 0, errors = 0, timeouts = 0;
  std::int64_t in_service = 0, queued = 0;  // at the end of the bucket
  double cwnd = 0, ssthresh = 0;            // at the end of the bucket (when has_window)
  double work = 0;  // the server work the model reported in the bucket (recorder::work)
};

struct latency_summary {
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0;
};

// A figure of the model's own (SPEC 7.3: load_amplification.peak, deepest_calls_per_request):
// a name whose dots group it in summary.json ({"load_amplification":
// {"peak": ..}}), and its value, or none (null) when the run had nothing to measure it on.
struct model_field {
  std::string name;
  std::optional<double> value;
};

// One bucket of one service's time series, in a model with several services (model = "system"):
// what reached the service in the bucket, and the most requests it held and queued at once.
struct service_counts_bucket {
  std::uint64_t arrivals = 0;   // first attempts of the calls to it
  std::uint64_t attempts = 0;   // every request that reached it
  std::uint64_t completed = 0;  // answered with success
  std::uint64_t rejected = 0;   // refused, shed or dropped without service
  std::uint64_t failed = 0;     // served, but the answer was a failure
  std::int64_t peak_in_flight = 0, peak_queue = 0;
};

// One service's time series (services.csv, the report's per-service charts); its buckets have
// the strategy's bucket_width and start at 0.
struct service_series {
  std::string service;
  std::vector<service_counts_bucket> buckets;
};

// Goodput (successes per second) in the three phases of a run with an outage.
struct phase_goodput {
  double before_per_s = 0, during_per_s = 0, after_per_s = 0;
};

struct strategy_summary {
  std::string name;
  std::uint64_t operations = 0, completed = 0, gave_up = 0, unfinished = 0, attempts = 0;
  double attempts_per_operation = 0;
  double makespan_s = 0;  // time of the last completion (the run starts at 0)
  // Over the completed operations; none when no operation completed (shown as null, an empty CSV
  // field, `-`), never a 0 that reads as "instant".
  std::optional<latency_summary> latency_s;
  double goodput_per_s = 0;  // completed / makespan
  std::int64_t peak_load = 0;
  double mean_load = 0;  // time-weighted over the makespan
  std::optional<double> recovery_s;
  std::uint64_t events = 0;
  bool has_window = false;
  double seconds_per_unit = 1e-9;
  time_units bucket_width = 0;
  std::vector<series_bucket> buckets;
  // A model with several services: each one's time series, in the model's order, as long as
  // `buckets` (empty for other models, and in sweeps, which keep no time series).
  std::vector<service_series> services;
  // Runs with a known outage that ask for it (`backoff load --experiment`): goodput over the
  // time before the outage, during it, and from its end to the end of the run.
  std::optional<phase_goodput> phases;
  // The model's own figures, in the order it reported them.
  std::vector<model_field> fields;
  // What series_bucket::work measures, per second (the work chart's axis); empty when the
  // model reports no work.
  std::string work_label;

  // completed / operations: 0 when there were no operations (nothing succeeded).
  double success_rate() const noexcept {
    return operations == 0 ? 0.0 : static_cast<double>(completed) / static_cast<double>(operations);
  }
};

// A server outage, in model units: [start, end).
struct outage_window {
  time_units start = 0, end = 0;
};

// Why a run stopped before its end (its outputs are then partial). instant_limit: more events
// than run.max_events_per_instant at one simulated time (a loop at zero delay).
enum class stop_reason : std::uint8_t { interrupted, memory, instant_limit };

// The index-th of `count` slices of a sweep's runs (index from 1), for splitting a sweep across
// machines: run i gets every count-th run from i - 1.
struct shard_spec {
  std::uint32_t index = 1, count = 1;
};

// One value of a swept key.
struct sweep_value {
  enum class kind : std::uint8_t { integer, number, string, boolean };
  std::string toml;
  std::string text;  // `25`, `10s`: the value without TOML quoting
  kind type = kind::integer;
};

// One strategy at one sweep point: every replication's summary (without time series).
struct sweep_cell {
  std::string name;
  std::vector<strategy_summary> runs;
  std::vector<std::uint8_t> ran;  // 1 where runs[r] was run (a shard runs some of them)
};

struct point_result {
  std::vector<std::pair<std::string, sweep_value>> params;  // key and value, in axis order
  std::vector<sweep_cell> strategies;
};

// Why and where a run stopped before its end.
struct run_stop {
  stop_reason reason = stop_reason::interrupted;
  int signal = 0;        // interrupted: SIGINT or SIGTERM
  std::string strategy;  // a plain run: the strategy cut short ("" if between strategies)
  double at_s = 0;       // ... and the simulated time it reached (ticks in tick models)
  std::vector<std::string> not_run;     // a plain run: the strategies that did not start
  std::size_t runs_done = 0, runs = 0;  // a sweep (or its shard): runs finished, of how many
  std::string point;  // a sweep stuck at one instant: the run's point ("load = 2, replication 1")
  std::uint64_t resident = 0;  // memory: the resident set found over the limit
};

// One boundary point of a metastable map (issue 23, SPEC 7.3 `metastable-map`): at base load
// `load` (in the mapped scenario's own units, named by map_axes::load_key), the trigger (outage
// length or load spike, map_axes::trigger_key) above which the system stays down. Adaptive
// bisection brackets it: the largest trigger seen to recover is trigger_lo, the smallest seen to
// stay down trigger_hi; `trigger` is their midpoint. A load where even the smallest trigger of the
// range stays down has trigger_lo = trigger_hi = the range's low end (and `always_down`); one
// where the largest still recovers, trigger_lo = trigger_hi = the high end (`never_down`).
struct boundary_point {
  std::string model;     // the mapped scenario's model ("outage-recovery", "metastable-queue")
  std::string mapped;    // the mapped scenario (a built-in name or file)
  std::string strategy;  // the strategy whose clients sustain the loop
  double load = 0;
  double trigger = 0, trigger_lo = 0, trigger_hi = 0;
  std::uint32_t replications = 0;  // runs per probe
  std::uint32_t probes = 0;        // probes the bisection spent at this load
  bool always_down = false, never_down = false;
};

// The axes of one map, for the chart and the CSV's readers.
struct map_axes {
  std::string model, mapped, strategy;
  std::string load_key, load_unit;        // e.g. "workload.rate_per_s", "1/s"
  std::string trigger_key, trigger_unit;  // e.g. "outage.duration", "s"
};

struct scenario_result {
  std::string scenario;
  std::string model;
  // The scenario's [about] table: what it models, its source, and the source's claim (the report
  // shows them beside our result); empty when the file has none.
  std::string description, source, claim;
  std::uint64_t seed = 0;
  std::vector<strategy_summary> strategies;  // a plain run
  // Each strategy's backoff policy, by name (the delay chart draws it).
  std::vector<std::pair<std::string, backoff_policy>> policies;
  bool outage = false;  // the model has an outage: recovery_s is meaningful
  std::optional<std::pair<double, double>> outage_s;  // ... from, to (s or ticks), for the charts
  bool sweep = false;
  std::uint32_t replications = 1;
  std::vector<std::string> sweep_keys;  // the swept keys, in axis order
  std::vector<point_result> points;     // a sweep held in memory
  // A sweep written point by point (sweep_spool.hpp): its points are there, not in `points`.
  std::shared_ptr<const sweep_spool> spool;
  std::optional<shard_spec> shard;  // a slice of the sweep only
  // A metastable map (scenario with [[map]]): its boundary points, map by map, and each map's
  // axes (boundary[i] belongs to the map whose model, mapped scenario and strategy it names).
  std::vector<map_axes> maps;
  std::vector<boundary_point> boundary;
  std::string fingerprint;  // the scenario's (shards of one sweep share it)
  std::uint64_t events = 0;
  double wall_s = 0;
  std::optional<run_stop> stopped;  // set when the outputs are partial
};

// Mean and 95 % confidence half-width (Student's t; 0 for fewer than two values).
struct mean_ci {
  double mean = 0, ci95 = 0;
};
mean_ci mean_and_ci95(const std::vector<double>& values);

// "interrupted (SIGINT)", "over the memory limit": for messages and the comparison table.
std::string describe(const run_stop& stop);

}  // namespace backoff::report
