// SPDX-License-Identifier: Apache-2.0
// Charts and the HTML report of a finished run (SPEC 2.3, issue 6): gnuplot draws every chart
// that the run's data supports as PNG and SVG into the output folder, and report.html shows them
// with the comparison table, the scenario's facts and its source, as one self-contained file
// (charts embedded as data: URIs), so it opens from disk, with no network, anywhere it is copied.
//
//   sim::scenario_result r = sim::run_scenario(sc, {.out = dir});
//   std::vector<std::string> charts = report::write_plots(
//       r, dir, {.scenario_path = "scenarios/tick-burst.toml", .scenario_toml = text,
//                .sets = {"server.max_busy=100"}});
//   // dir/rate.png, dir/rate.svg, ..., dir/report.html
//
// Which charts exist depends on the data, not on the model's name: time series (request rate,
// the server's view, the client window when a strategy has one, goodput and concurrency when the
// model has an outage), latency and totals per strategy, per-operation charts from clients.csv,
// and for sweeps each metric against the first swept key with 95 % confidence intervals.
//
// gnuplot runs as a child process (one per call, gnuplot.hpp); when it is missing or fails,
// plot_error says so in one line, and a file that cannot be written, write_error. Charts and
// report.html join the folder's manifest (output_files.hpp), so a later run without --plot
// removes them. The SVGs and report.html do not depend on the time or the machine: the same run
// with the same gnuplot gives the same bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gnuplot.hpp"
#include "output_files.hpp"
#include "result.hpp"

namespace backoff::report {

// What the report shows about where the run came from; all optional.
struct report_inputs {
  std::string scenario_path;      // e.g. "scenarios/tick-burst.toml" or "builtin/tick-burst.toml"
  std::string scenario_toml;      // the scenario's source text, shown verbatim
  std::vector<std::string> sets;  // --set overrides as given ("server.max_busy=100")
  // The simulation of a run made for real (`backoff load --system --compare`): the report adds
  // the real and simulated curves overlaid, and how far apart their figures are.
  const scenario_result* simulated = nullptr;
};

// Draws the charts of `r` into `dir` (which already holds the run's outputs: clients.csv is read
// from there when present) and writes dir/report.html. Returns the charts' base names, in report
// order (each has NAME.png and NAME.svg).
std::vector<std::string> write_plots(const scenario_result& r, const std::filesystem::path& dir,
                                     const report_inputs& inputs = {},
                                     const plot_options& options = {});

// An index page linking several scenarios' reports (`backoff sim --plot` with several scenarios).
struct report_link {
  std::string scenario, model;
  std::uint64_t seed = 0;
  std::string href;  // relative to the index, e.g. "tick-burst/report.html"
};
// index.html into `folder`.
void write_report_index(output_folder& folder, const std::vector<report_link>& links);

// `backoff delays --plot PREFIX`: delay against retry number, one line per run, linear
// (PREFIX.png, PREFIX.svg) and log y (PREFIX-log.png, PREFIX-log.svg). delays[run][n] is the wait
// in seconds after failure n + 1.
void write_delay_plots(const std::vector<std::vector<double>>& delays, const std::string& policy,
                       const std::filesystem::path& prefix, const plot_options& options = {});

}  // namespace backoff::report
