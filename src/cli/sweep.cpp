// SPDX-License-Identifier: Apache-2.0
// `backoff sweep`: runs a sweep scenario's grid (every point x strategy x replication) on all
// cores and writes summary.json and sweep.csv (SPEC 2.4); `--shard I/N` runs one slice of it and
// writes shard-I-of-N.json, and `--merge DIR...` joins the slices into the outputs the whole
// sweep gives. docs/SIMULATOR.md shows the shards as a Slurm job array and under GNU parallel.
// --memory-limit and Ctrl-C work as for `backoff sim`: an interrupted sweep writes its finished
// cells and marks the others (an interrupted shard writes nothing: it cannot be merged).
#include <charconv>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backoff/error.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "report/output_files.hpp"
#include "report/plots.hpp"
#include "report/summary.hpp"
#include "scenario_files.hpp"
#include "sim/run/runner.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::cli {
namespace {

struct sweep_options {
  std::string scenario;
  std::string out;
  std::string seed;
  std::vector<std::string> sets;
  std::string shard;
  std::vector<std::string> merge;
  std::string format = "table";
  unsigned threads = 0;
  bool progress = true;
  bool plot = false;
  std::string memory_limit;  // empty: the default
};

// "I/N" with 1 <= I <= N.
std::optional<report::shard_spec> parse_shard(const std::string& text, std::string& error) {
  const auto slash = text.find('/');
  const auto number = [](std::string_view digits, std::uint32_t& v) {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return ec == std::errc{} && end == digits.data() + digits.size();
  };
  report::shard_spec s;
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), s.index) ||
      !number(std::string_view(text).substr(slash + 1), s.count)) {
    error = "--shard: expected I/N such as 2/8, got '" + text + "'";
    return std::nullopt;
  }
  if (s.count == 0 || s.index == 0 || s.index > s.count) {
    error = "--shard " + text + ": I must be between 1 and N";
    return std::nullopt;
  }
  return s;
}

// False (after one line on stderr) when stdout cannot be written.
bool print(const report::scenario_result& r, const std::string& format) {
  if (format == "json") {
    report::write_summary_json(r, std::cout);
  } else {
    std::cout << report::comparison_table(r);
  }
  return flush_stdout("backoff sweep");
}

// Charts and report.html of a whole sweep (not of a shard: it has only some of the runs).
void plot(const report::scenario_result& r, const std::string& out,
          const report::report_inputs& from) {
  (void)report::write_plots(r, out, from);
  std::cerr << "backoff sweep: report: "
            << escape_controls((std::filesystem::path(out) / "report.html").string()) << '\n';
}

// `--merge DIR...`: joins a sweep's shards into the outputs of the whole sweep.
int merge_command(const sweep_options& o) {
  if (!o.scenario.empty() || !o.shard.empty() || !o.sets.empty() || !o.seed.empty()) {
    std::cerr << "backoff sweep: --merge takes shard folders only (no scenario, --shard, "
                 "--set or --seed)\n";
    return exit_usage;
  }
  std::vector<std::filesystem::path> inputs(o.merge.begin(), o.merge.end());
  const report::scenario_result r = sim::merge_shards(inputs);
  if (!o.out.empty()) {
    report::output_folder folder(o.out);
    report::write_run_files(r, folder);
  }
  if (!print(r, o.format)) return exit_failure;
  if (!o.out.empty()) {
    std::cerr << "backoff sweep: merged outputs written to " << escape_controls(o.out) << '\n';
  }
  if (o.plot) plot(r, o.out, {});
  return exit_ok;
}

// What the command says when a sweep (or a shard) was stopped by a signal.
int report_stopped_sweep(const sweep_options& o, const std::optional<report::shard_spec>& shard,
                         const report::scenario_result& r) {
  if (!print(r, o.format)) return exit_failure;
  std::cerr << "backoff sweep: " << report::describe(*r.stopped) << " after "
            << r.stopped->runs_done << " of " << r.stopped->runs << " runs; "
            << (shard            ? std::string("the shard is not written (run it again)")
                : !o.out.empty() ? "partial outputs written to " + escape_controls(o.out)
                                 : std::string("partial results above"))
            << '\n';
  return 128 + r.stopped->signal;
}

// Runs the sweep, or one shard of it.
int sweep_command(const sweep_options& o) {
  if (o.scenario.empty()) {
    std::cerr << "backoff sweep: give a scenario (a file or a built-in name), or --merge DIR...\n";
    return exit_usage;
  }
  std::optional<report::shard_spec> shard;
  if (!o.shard.empty()) {
    std::string error;
    shard = parse_shard(o.shard, error);
    if (!shard) {
      std::cerr << "backoff sweep: " << error << '\n';
      return exit_usage;
    }
    if (o.out.empty()) {
      std::cerr << "backoff sweep: --shard needs --out DIR, where shard-I-of-N.json goes\n";
      return exit_usage;
    }
  }
  sim::scenario sc = sim::scenario::load(resolve_scenario(o.scenario), o.sets);
  if (!o.seed.empty()) sc.set_seed(std::stoull(o.seed));
  if (!sc.is_sweep()) {
    std::cerr << "backoff sweep: " << sc.path()
              << ": not a sweep (no [sweep] table and replications = 1); run it with "
                 "'backoff sim'\n";
    return exit_usage;
  }
  std::string error;
  const auto limit = memory_limit_option(o.memory_limit, error);
  if (!limit) {
    std::cerr << "backoff sweep: " << error << '\n';
    return exit_usage;
  }
  sim::run_options run;
  if (!o.out.empty()) run.out = std::filesystem::path(o.out);
  run.progress = o.progress;
  run.threads = o.threads;
  run.shard = shard;
  run.memory_limit = *limit;
  const stop_signals signals;
  const report::scenario_result r = sim::run_scenario(sc, run);
  if (r.stopped) return report_stopped_sweep(o, shard, r);
  if (const int signo = sim::interrupt_signal(); signo != 0)
    return interrupted_after_writing(signo);
  if (shard) {
    std::cerr << "backoff sweep: shard " << shard->index << "/" << shard->count << " written to "
              << escape_controls(
                     (std::filesystem::path(o.out) / sim::shard_file_name(*shard)).string())
              << "; join the shards with 'backoff sweep --merge'\n";
    return exit_ok;
  }
  if (!print(r, o.format)) return exit_failure;
  if (!o.out.empty()) {
    std::cerr << "backoff sweep: outputs written to " << escape_controls(o.out) << '\n';
  }
  if (o.plot) plot(r, o.out, {sc.source().path, sc.source().text, sc.sets()});
  return exit_ok;
}

int run_sweep(const sweep_options& o) {
  if (o.plot && (o.out.empty() || !o.shard.empty())) {
    std::cerr << "backoff sweep: --plot needs --out DIR and a whole sweep (not --shard)\n";
    return exit_usage;
  }
  return simulation_status("backoff sweep",
                           [&] { return o.merge.empty() ? sweep_command(o) : merge_command(o); });
}

}  // namespace

void setup_sweep(CLI::App& app, int& status) {
  auto options = std::make_shared<sweep_options>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a sweep scenario's grid on all cores, or one shard of it, or merge shards");
  cmd->add_option("scenario", options->scenario,
                  "A sweep scenario: a TOML file with [sweep] and/or replications, or a built-in "
                  "name such as aws-occ");
  cmd->add_option("-o,--out", options->out,
                  "Write summary.json and sweep.csv here (with --shard: shard-I-of-N.json)")
      ->check(not_empty("a folder"));
  cmd->add_option("-j,--threads", options->threads,
                  "Worker threads (default: one per core); the results do not depend on it")
      ->check(CLI::Range(1U, 4096U));
  cmd->add_option("--shard", options->shard,
                  "Run only the I-th of N slices of the runs (I from 1), e.g. 3/8");
  cmd->add_option("--merge", options->merge,
                  "Join shard outputs (folders with shard-*-of-*.json, or the files) into the "
                  "whole sweep's outputs")
      ->expected(1, -1);
  cmd->add_option("-s,--seed", options->seed, "Override the scenario's seed")
      ->check(whole_number());
  cmd->add_option("--set", options->sets,
                  "Override a scenario key by its dotted path, e.g. --set replications=10 or "
                  "--set 'sweep.clients=[50, 100]' (repeatable)");
  cmd->add_option("-f,--format", options->format, "Output on stdout")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--memory-limit", options->memory_limit,
                  "Refuse a sweep estimated to need more memory than SIZE, and stop one that "
                  "grows past it (512MiB, 4GiB, none; default: half the memory, at most 8GiB)");
  cmd->add_flag("--plot", options->plot,
                "Also draw charts of each metric against the swept key and report.html into --out");
  cmd->add_flag("!--no-progress", options->progress,
                "Do not draw the progress bar (drawn only on a terminal, after 1 s, with an ETA)");
  cmd->callback([options, &status] { status = run_sweep(*options); });
}

}  // namespace backoff::cli
