// SPDX-License-Identifier: Apache-2.0
// Runs scenarios: checks every key, runs each strategy on its own engine, and with `out` writes
// the outputs of SPEC 2.3 / 6.2 (summary.json, timeseries.csv, clients.csv; a sweep's sweep.csv)
// through the report layer (src/report), atomically, with summary.json last.
//
//   sim::scenario sc = sim::scenario::load(source, sets);
//   report::scenario_result r = sim::run_scenario(sc, {.out = "results/tick-burst"});
//   std::cout << report::comparison_table(r);
//
// A plain run's strategies run side by side on up to `threads` threads, each on its own engine
// and model with the scenario's seed, and are gathered in strategy order (clients.csv's rows
// too), so the outputs are those of running them in turn; a stop is taken where the runs in turn
// would meet it.
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
// `stopped` set, and writes the outputs marked partial. A run stuck at one simulated time (more
// than run.max_events_per_instant events there) is stopped the same way, its outputs written
// marked partial, and instant_limit_error thrown.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "memory.hpp"
#include "report/recorder.hpp"
#include "report/result.hpp"
#include "sim/engine/guard.hpp"
#include "sim/models/model.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::sim {

// A run that went over run.max_events_per_instant (engine.hpp): its partial outputs are written,
// then this is thrown with one line naming the strategy (and sweep point) and the time.
class instant_limit_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct run_options {
  std::optional<std::filesystem::path> out;  // where to write the files; none: no files
  bool progress = false;                     // draw a progress bar on stderr
  // Worker threads (0: one per core): a sweep's runs, or a plain run's strategies side by side.
  // The outputs do not depend on it.
  unsigned threads = 0;
  // sweeps: run only this slice, writing no file (the caller writes shard-I-of-N.json with
  // shards.hpp's write_shard_file once the slice is complete)
  std::optional<report::shard_spec> shard;
  std::uint64_t memory_limit = 0;  // bytes of resident set (memory.hpp); 0: no limit
  // Sweeps (not shards): hand each point to a report::sweep_spool as soon as its runs are done
  // and drop it, so memory does not grow with the points (scenario_result::spool holds them);
  // false keeps every run in scenario_result::points (the charts read them there).
  bool spool_points = false;
  // false: skip the up-front estimate, leaving only the guard during the run (for tests).
  bool preflight = true;
  // Called as each strategy of a plain run starts, on the thread that runs it (tests use it to
  // see strategies run side by side); none by default.
  std::function<void(std::size_t strategy)> on_strategy_start;
};

// The seed of replication r: r = 0 keeps the scenario's seed, so a one-replication run of a
// point is the plain run of that point.
std::uint64_t replication_seed(std::uint64_t seed, std::uint32_t replication);

// Checks the model's keys and the strategies without running anything (scenario_error on the
// first bad one); a metastable map's maps against the built-in suite (map.hpp check_map).
void check_scenario(scenario& sc);

// Checks the model's keys (scenario_error on the first bad one), then runs every strategy. A
// metastable map is refused with one line: `backoff sim` runs it through map.hpp.
report::scenario_result run_scenario(scenario& sc, const run_options& options);

// What one run of one strategy left: its figures (whole, or up to where the guard stopped it;
// none when it stopped before its first event) and, when the guard stopped it, why and where.
struct strategy_run {
  std::optional<report::strategy_summary> summary;
  std::optional<run_stopped> stopped;
};

struct strategy_run_options {
  std::ostream* clients = nullptr;   // where its clients.csv rows go; none: no rows
  progress_fn progress{};            // the model's progress, for a bar; none: not shown
  std::function<void()> on_start{};  // once the guard lets it start, before its engine is made
  bool keep_series = true;           // false: the summary drops its time series (sweeps, probes)
};

// One run of `strategy` on `model` (made by make_model) with `seed`: the guard's check between
// runs, a recorder, a fresh engine under `guard`, the model's run, and the summary with its felt
// outage (add_felt_outage). Every run goes through here: a plain run's strategies (in turn or
// side by side), a sweep's tasks, a metastable map's probes (map.hpp). A run the guard stops is
// returned (`stopped`) with its figures up to the stop, the operations in flight counted
// unfinished; the caller rethrows it where a stop ends its loop.
strategy_run run_strategy(model_runner& model, const client_strategy& strategy, std::uint64_t seed,
                          run_guard& guard, const strategy_run_options& options = {});

// The stop of a run of many runs (a sweep's tasks, a map's loads): why, and how many were done.
report::run_stop stop_after_runs(const run_stopped& stop, std::size_t runs_done, std::size_t runs);

// The model's felt outage (report/boundary.hpp, felt_outage_s) added to `summary` as a model
// field, when the model has an outage; called on every run's summary before its series goes.
void add_felt_outage(const model_runner& model, time_ns end, report::strategy_summary& summary);

// A result naming its scenario: name, model, [about] and seed; no runs yet.
report::scenario_result result_header(const scenario& sc);

// A shard's runs, every number exact, for merge_shards (`shard-I-of-N.json`).
void write_shard_json(const report::scenario_result& r, std::ostream& out);
std::string shard_file_name(const report::shard_spec& shard);
// Joins the shards of one sweep (files, or folders holding shard-*-of-*.json) into the result
// the unsharded run gives; scenario_error when one is missing, repeated, or of another sweep.
report::scenario_result merge_shards(const std::vector<std::filesystem::path>& inputs);

}  // namespace backoff::sim
