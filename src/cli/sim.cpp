// SPDX-License-Identifier: Apache-2.0
// `backoff sim`: runs scenarios (files, built-in names, or the whole built-in suite) and prints
// the strategies side by side; with --out, writes summary.json, timeseries.csv and clients.csv
// (SPEC 6.2), or for a sweep summary.json and sweep.csv; with --plot, charts and report.html.
// A scenario estimated over --memory-limit is refused before anything runs; Ctrl-C stops the
// run and writes what it did, marked partial (docs/SIMULATOR.md, "Limits").
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "report/plots.hpp"
#include "report/result_json.hpp"
#include "report/summary.hpp"
#include "scenario_files.hpp"
#include "sim/run/map.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

// With several scenarios, each one's outputs go to --out/NAME: the name must be one path
// component (no '/', no "." or "..", no control character) so that nothing is written outside
// --out (report::is_file_name, the rule output_folder holds every name to, checked here before
// anything runs), and no two scenarios may share one. (scenario_error shows control characters
// escaped.)
void check_folder_names(const std::vector<sim::scenario>& loaded) {
  std::map<std::string, std::string> seen;  // name -> the file that gave it
  for (const auto& sc : loaded) {
    const std::string& name = sc.name();
    if (!report::is_file_name(name)) {
      throw sim::scenario_error(
          sc.source().path + ": scenario '" + name +
          "' cannot name its output folder under --out: a name there must be one path "
          "component, without '/', '..' or control characters");
    }
    const auto [at, fresh] = seen.emplace(name, sc.source().path);
    if (!fresh) {
      throw sim::scenario_error(sc.source().path + ": scenario '" + name +
                                "' has the same name as " + at->second +
                                ": their outputs would share one folder under --out");
    }
  }
}

struct sim_options {
  std::vector<std::string> scenarios;
  std::string out;
  std::optional<std::uint64_t> seed;  // nullopt: each scenario's own
  std::vector<std::string> sets;
  std::string format = "table";
  bool progress = true;
  bool plot = false;
  unsigned threads = 0;                       // 0: one per core
  std::optional<std::uint64_t> memory_limit;  // nullopt: the default; 0: none
};

// What a metastable map may name: the files given on the command line, then the built-in suite
// (sim/run/map.hpp; by scenario name, never by path).
std::vector<sim::scenario_source> map_candidates(const std::vector<sim::scenario_source>& given) {
  std::vector<sim::scenario_source> all;
  for (const auto& s : given) {
    if (!s.path.starts_with("builtin/")) all.push_back(s);
  }
  for (const auto& s : sim::builtin_scenarios()) all.push_back(s);
  return all;
}

// Loads and checks every scenario before running any, so a typo in the last fails at once.
std::vector<sim::scenario> load_all(const sim_options& o, std::uint64_t memory_limit,
                                    std::vector<sim::scenario_source>& candidates) {
  std::vector<sim::scenario_source> sources;
  if (o.scenarios.empty()) {
    sources = sim::builtin_scenarios();
  } else {
    for (const auto& s : o.scenarios) sources.push_back(resolve_scenario(s));
  }
  candidates = map_candidates(sources);
  std::vector<sim::scenario> loaded;
  for (const auto& source : sources) {
    loaded.push_back(sim::scenario::load(source, o.sets));
    if (o.seed) loaded.back().set_seed(*o.seed);
  }
  for (auto& sc : loaded) {
    // A map's probes are plain runs of small scenarios; each is checked (and its models built)
    // here, and guarded by the memory limit as it runs.
    if (sc.is_map()) {
      sim::check_map(sc, candidates);
    } else if (memory_limit != 0) {
      // The memory estimate builds (and so checks) every point's model.
      sim::check_memory(sc, o.threads, memory_limit);
    } else {
      sim::check_scenario(sc);
    }
  }
  if (!o.out.empty() && loaded.size() > 1) check_folder_names(loaded);
  return loaded;
}

// What the scenarios run so far printed or wrote, for the end of the command.
struct sim_outputs {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  std::vector<std::string> reports;
};

// Prints what an interrupted run did (a memory stop throws instead); its outputs are written.
int report_stopped_sim(const sim_options& o, const sim::run_options& run,
                       const report::scenario_result& r) {
  if (o.format == "json") {
    report::write_summary_json(r, std::cout);
  } else {
    std::cout << report::comparison_table(r);
  }
  if (!flush_stdout("backoff sim")) return exit_failure;
  std::cerr << "backoff sim: " << report::describe(*r.stopped) << "; "
            << (run.out ? "partial outputs written to " + escape_controls(run.out->string())
                        : std::string("partial results above"))
            << '\n';
  return status_of_signal(r.stopped->signal);
}

// Runs one scenario; a status when the command must end now.
std::optional<int> run_one(const sim_options& o, sim::scenario& sc, std::uint64_t memory_limit,
                           report::output_folder* top, sim_outputs& outputs,
                           const std::vector<sim::scenario_source>& candidates) {
  sim::run_options run;
  if (!o.out.empty()) run.out = top ? top->subfolder(sc.name()) : std::filesystem::path(o.out);
  run.progress = o.progress;
  run.threads = o.threads;
  run.memory_limit = memory_limit;
  run.preflight = false;  // estimated by load_all, every scenario before the first runs
  const report::scenario_result r =
      sc.is_map() ? sim::run_map(sc, candidates, run) : sim::run_scenario(sc, run);
  // Interrupted: what was done is written; the rest is not run.
  if (r.stopped) return report_stopped_sim(o, run, r);
  if (const int signo = sim::interrupt_signal(); signo != 0)
    return interrupted_after_writing(signo);
  if (o.plot) {
    (void)report::write_plots(r, *run.out, {sc.source().path, sc.source().text, sc.sets()});
    outputs.reports.push_back((*run.out / "report.html").string());
  }
  if (o.format == "json") {
    outputs.json.push_back(r);  // held whole: `sim` never spools a sweep's points
  } else {
    std::cout << report::comparison_table(r) << '\n';
    if (!flush_stdout("backoff sim")) return exit_failure;
  }
  return std::nullopt;
}

// The reports index of several scenarios, the folder's manifest, and where things went.
void finish_outputs(const sim_options& o, const std::vector<sim::scenario>& loaded,
                    report::output_folder* top, const sim_outputs& outputs) {
  if (top) {
    if (o.plot) {
      std::vector<report::report_link> links;
      for (const auto& sc : loaded) {
        links.push_back({sc.name(), sc.model(), sc.seed(), sc.name() + "/report.html"});
      }
      report::write_report_index(*top, links);
    }
    top->finish();
  }
  if (!o.out.empty() && o.format != "json") {
    std::cerr << "backoff sim: outputs written to " << escape_controls(o.out) << '\n';
  }
  if (o.plot && top) {
    std::cerr << "backoff sim: reports: "
              << escape_controls((std::filesystem::path(o.out) / "index.html").string()) << '\n';
  } else {
    for (const auto& report : outputs.reports) {
      std::cerr << "backoff sim: report: " << escape_controls(report) << '\n';
    }
  }
}

int run_sim(const sim_options& o) {
  if (o.plot && o.out.empty()) {
    std::cerr << "backoff sim: --plot needs --out DIR, where the charts and report.html go\n";
    return exit_usage;
  }
  const std::uint64_t limit = memory_limit_or_default(o.memory_limit);
  const stop_signals signals("sim");
  return simulation_status("backoff sim", [&] {
    std::vector<sim::scenario_source> candidates;
    std::vector<sim::scenario> loaded = load_all(o, limit, candidates);
    // With several scenarios, --out holds one sub-folder each (and index.html with --plot); its
    // manifest lists them, so a later run removes what this one wrote and that one does not.
    std::optional<report::output_folder> top;
    if (!o.out.empty() && loaded.size() > 1) top.emplace(o.out);
    sim_outputs outputs;
    for (auto& sc : loaded) {
      if (const auto status = run_one(o, sc, limit, top ? &*top : nullptr, outputs, candidates)) {
        return *status;
      }
    }
    if (o.format == "json") {
      std::cout << report::json_text(outputs.json.size() == 1 ? outputs.json[0] : outputs.json)
                << '\n';
    }
    if (!flush_stdout("backoff sim")) return exit_failure;
    finish_outputs(o, loaded, top ? &*top : nullptr, outputs);
    return exit_ok;
  });
}

}  // namespace

void setup_sim(CLI::App& app, int& status) {
  auto options = std::make_shared<sim_options>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Simulate retry strategies (no scenario: the whole built-in suite)");
  cmd->add_option("scenarios", options->scenarios,
                  "Scenario files (TOML), or built-in names such as tick-burst");
  cmd->add_option("-o,--out", options->out,
                  "Write summary.json, timeseries.csv and clients.csv here (one sub-folder per "
                  "scenario when there are several)")
      ->check(not_empty("a folder"));
  add_seed_option(*cmd, "-s,--seed", options->seed, "Override every scenario's seed");
  cmd->add_option("--set", options->sets,
                  "Override a scenario key by its dotted path, e.g. --set server.max_busy=100 "
                  "(repeatable)");
  cmd->add_option("-f,--format", options->format, "Output on stdout")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  add_count_option<unsigned>(*cmd, "-j,--threads", options->threads,
                             "Worker threads: a sweep's runs, or a scenario's strategies side by "
                             "side (default: one per core); the results do not depend on it",
                             1, 4096);
  add_size_option(*cmd, "--memory-limit", options->memory_limit,
                  "Refuse a scenario estimated to need more memory than SIZE, and stop a run that "
                  "grows past it (512MiB, 4GiB, none; default: half the memory, at most 8GiB)",
                  {.none = true});
  cmd->add_flag("--plot", options->plot,
                "Also draw PNG and SVG charts (gnuplot) and a self-contained report.html into "
                "--out");
  cmd->add_flag("!--no-progress", options->progress,
                "Do not draw a progress bar (it is drawn only on a terminal, after 1 s)");
  cmd->callback([options, &status] { status = run_sim(*options); });
}

}  // namespace backoff::cli
