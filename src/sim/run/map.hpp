// SPDX-License-Identifier: Apache-2.0
// Metastable maps (issue 23, SPEC 7.3 `metastable-map`; docs/models/metastable-map.md): for a
// scenario with [[map]] tables, where each mapped scenario tips from "recovers" to "stays down",
// found by adaptive bisection of the trigger at each base load instead of a full grid.
//
//   sim::scenario map = sim::scenario::load(source);            // map.is_map()
//   report::scenario_result r = sim::run_map(map, candidates, {.out = "results/metastable-map"});
//   std::cout << report::comparison_table(r);                  // the boundary table
//
// A map names its scenario by name: one of `candidates` (the files given on the command line,
// then the built-in suite; the first with that name wins), never by path, so a map file cannot
// reach outside what the user named. Every probe is a plain run of the mapped scenario with the
// map's overrides plus `load_key = load` and `trigger_key = trigger`, through the runner's own
// per-run machinery (run_strategy: recorder, engine with the guard), one strategy,
// `replications` runs with replication_seed(map seed, r) (the same seeds at every probe and load:
// common random numbers). A run recovers when it has a recovery_s; a probe recovers when a
// strict majority of its runs do.
//
// At each load: probe the range's low and high ends; if the low end stays down the point is
// always_down (lo = hi = low), if the high end recovers never_down (lo = hi = high); else bisect
// (lo recovers, hi stays down) until hi - lo <= resolution or max_probes probes. Then the
// interval is widened over the probes whose runs disagreed: trigger_lo is the largest probe at
// or below lo where every run recovered (the range's low end if none), trigger_hi the smallest
// at or above hi where every run stayed down (the high end if none); trigger is their midpoint.
// Loads run as independent tasks on `threads` threads, results kept by index: the outputs are
// the same for any thread count.
//
// Outputs (with run_options::out): boundary.csv, then summary.json (its "map" section), through
// report::write_run_files. A SIGINT stops the map after the runs in progress; the loads done are
// written, marked partial.
#pragma once

#include <vector>

#include "report/result.hpp"
#include "runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::sim {

// Resolves every map's scenario and strategy and builds the model of each load at both ends of
// its trigger range, so that a bad key fails before anything runs (scenario_error).
void check_map(scenario& map, const std::vector<scenario_source>& candidates);

// Runs the map: checks it (check_map), searches every boundary, writes the outputs.
report::scenario_result run_map(scenario& map, const std::vector<scenario_source>& candidates,
                                const run_options& options);

}  // namespace backoff::sim
