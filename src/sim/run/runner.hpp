// Runs scenarios: checks every key, runs each strategy on its own engine, and writes the outputs
// of SPEC 2.3 / 6.2 (summary.json, timeseries.csv, clients.csv, the comparison table).
//
//   sim::scenario sc = sim::scenario::load(source, sets);
//   sim::scenario_result r = sim::run_scenario(sc, {.out = "results/tick-burst"});
//   std::cout << sim::comparison_table(r);
//
// A sweep (scenario::is_sweep) runs every point x strategy x replication as an independent task
// on `threads` threads; replication r runs with replication_seed(seed, r), the same at every
// point (common random numbers), and results are gathered by task index, so the outputs are the
// same whatever the thread count. It writes summary.json (with "points") and sweep.csv: per point
// and strategy, the mean of each metric and the half-width of its 95 % confidence interval
// (Student's t over the replications). Per-run series (timeseries.csv, clients.csv) are not
// written for sweeps: run one point with --set to get them.
//
// Limits (memory.hpp, engine/guard.hpp): with a memory_limit, a scenario whose estimate is over
// it is refused before anything runs (memory_limit_error), and a run that grows past it anyway
// is stopped, its partial outputs written, and memory_limit_error thrown. A SIGINT or SIGTERM
// (request_interrupt) stops the run at the next poll: run_scenario returns what was done with
// `stopped` set, and writes the outputs marked partial.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/guard.hpp"
#include "memory.hpp"
#include "report/recorder.hpp"
#include "scenario/scenario.hpp"

namespace backoff::sim {

// The index-th of `count` slices of a sweep's runs (index from 1), for splitting a sweep across
// machines: run i gets every count-th run from i - 1. merge_shards() puts them back together.
struct shard_spec {
  std::uint32_t index = 1, count = 1;
};

struct run_options {
  std::optional<std::filesystem::path> out;  // where to write the files; none: no files
  bool progress = false;                     // draw a progress bar on stderr
  unsigned threads = 0;                      // sweeps: worker threads (0: one per core)
  std::optional<shard_spec> shard;  // sweeps: run only this slice; writes shard-I-of-N.json
  std::uint64_t memory_limit = 0;   // bytes of resident set (memory.hpp); 0: no limit
  // false: skip the up-front estimate, leaving only the guard during the run (for tests).
  bool preflight = true;
};

// The seed of replication r: r = 0 keeps the scenario's seed, so a one-replication run of a
// point is the plain run of that point.
std::uint64_t replication_seed(std::uint64_t seed, std::uint32_t replication);

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

// Why and where a run stopped before its end (the outputs are then partial).
struct run_stop {
  stop_reason reason = stop_reason::interrupted;
  int signal = 0;        // interrupted: SIGINT or SIGTERM
  std::string strategy;  // a plain run: the strategy cut short ("" if between strategies)
  double at_s = 0;       // ... and the simulated time it reached (ticks in tick models)
  std::vector<std::string> not_run;     // a plain run: the strategies that did not start
  std::size_t runs_done = 0, runs = 0;  // a sweep (or its shard): runs finished, of how many
  std::uint64_t resident = 0;           // memory: the resident set found over the limit
};

struct scenario_result {
  std::string scenario;
  std::string model;
  std::uint64_t seed = 0;
  std::vector<strategy_summary> strategies;  // a plain run
  // Each strategy's backoff policy, canonical text (parse_policy reads it back), by name.
  std::vector<std::pair<std::string, std::string>> policies;
  bool outage = false;  // the model has an outage: recovery_s is meaningful
  bool sweep = false;
  std::uint32_t replications = 1;
  std::vector<std::string> sweep_keys;  // the swept keys, in axis order
  std::vector<point_result> points;     // a sweep
  std::optional<shard_spec> shard;      // a slice of the sweep only
  std::string fingerprint;              // the scenario's (shards of one sweep share it)
  std::uint64_t events = 0;
  double wall_s = 0;
  std::optional<run_stop> stopped;  // set when the outputs are partial
};

// "interrupted (SIGINT)", "over the memory limit": for messages and the comparison table.
std::string describe(const run_stop& stop);

// Mean and 95 % confidence half-width (Student's t; 0 for fewer than two values).
struct mean_ci {
  double mean = 0, ci95 = 0;
};
mean_ci mean_and_ci95(const std::vector<double>& values);

// Checks the model's keys and the strategies without running anything (scenario_error on the
// first bad one).
void check_scenario(scenario& sc);

// Checks the model's keys (scenario_error on the first bad one), then runs every strategy.
scenario_result run_scenario(scenario& sc, const run_options& options);

// summary.json exactly as SPEC 6.2 shows it (plus added fields).
void write_summary_json(const scenario_result& r, std::ostream& out);
void write_timeseries_csv(const scenario_result& r, std::ostream& out);
// Sweeps: one row per point and strategy (SPEC 2.4).
void write_sweep_csv(const scenario_result& r, std::ostream& out);
// summary.json and sweep.csv into `dir`.
void write_sweep_outputs(const scenario_result& r, const std::filesystem::path& dir);

// A shard's runs, every number exact, for merge_shards (`shard-I-of-N.json`).
void write_shard_json(const scenario_result& r, std::ostream& out);
std::string shard_file_name(const shard_spec& shard);
// Joins the shards of one sweep (files, or folders holding shard-*-of-*.json) into the result
// the unsharded run gives; scenario_error when one is missing, repeated, or of another sweep.
scenario_result merge_shards(const std::vector<std::filesystem::path>& inputs);
std::string comparison_table(const scenario_result& r);

}  // namespace backoff::sim
