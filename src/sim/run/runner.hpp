// Runs scenarios: checks every key, runs each strategy on its own engine, and writes the outputs
// of SPEC 2.3 / 6.2 (summary.json, timeseries.csv, clients.csv, the comparison table).
//
//   sim::scenario sc = sim::scenario::load(source, sets);
//   sim::scenario_result r = sim::run_scenario(sc, {.out = "results/tick-burst"});
//   std::cout << sim::comparison_table(r);
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "report/recorder.hpp"
#include "scenario/scenario.hpp"

namespace backoff::sim {

struct run_options {
  std::optional<std::filesystem::path> out;  // where to write the files; none: no files
  bool progress = false;                     // draw a progress bar on stderr
};

struct scenario_result {
  std::string scenario;
  std::string model;
  std::uint64_t seed = 0;
  std::vector<strategy_summary> strategies;
  std::uint64_t events = 0;
  double wall_s = 0;
};

// Checks the model's keys and the strategies without running anything (scenario_error on the
// first bad one).
void check_scenario(scenario& sc);

// Checks the model's keys (scenario_error on the first bad one), then runs every strategy.
scenario_result run_scenario(scenario& sc, const run_options& options);

// summary.json exactly as SPEC 6.2 shows it (plus added fields).
void write_summary_json(const scenario_result& r, std::ostream& out);
void write_timeseries_csv(const scenario_result& r, std::ostream& out);
std::string comparison_table(const scenario_result& r);

}  // namespace backoff::sim
