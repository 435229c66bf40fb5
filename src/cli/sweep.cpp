// SPDX-License-Identifier: Apache-2.0
// `backoff sweep`: runs a sweep scenario's grid (every point x strategy x replication) on all
// cores and writes summary.json and sweep.csv (SPEC 2.4); `--shard I/N` runs one slice of it and
// writes shard-I-of-N.json, and `--merge DIR...` joins the slices into the outputs the whole
// sweep gives. `--shard auto` takes the shard from a job array's environment, and `--emit
// slurm|condor|k8s` writes the job file that runs the shards (sweep_jobs.hpp); a shard already
// written for the same scenario is skipped, so a requeued or resubmitted array only runs what is
// missing. docs/SIMULATOR.md shows the shards on Slurm, HTCondor, Kubernetes, AWS Batch and GNU
// parallel.
// --memory-limit and Ctrl-C work as for `backoff sim`: an interrupted sweep writes its finished
// cells and marks the others (an interrupted shard writes nothing: it cannot be merged).
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
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
#include "sim/run/shards.hpp"
#include "sim/scenario/scenario.hpp"
#include "sweep_job_folder.hpp"
#include "sweep_jobs.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace {

struct sweep_options {
  std::string scenario;
  std::string out;
  std::optional<std::uint64_t> seed;  // nullopt: the scenario's own
  std::string seed_text;              // as given, for a job file's command line
  std::vector<std::string> sets;
  std::string shard;
  std::uint32_t shard_count = 0;  // --shard-count, with --shard auto; 0: not given
  std::vector<std::string> merge;
  std::string emit;  // slurm, condor, k8s; empty: run
  std::uint32_t shards = 0;
  unsigned retries = 3;
  std::string image;
  std::string volume_claim = "backoff-results";
  std::string mount_path = "/backoff";
  std::string executable;
  std::string job_name = "backoff-sweep";
  std::vector<std::string> emit_only;  // the --emit flags given, for the message without --emit
  std::string format = "table";
  unsigned threads = 0;
  bool progress = true;
  bool plot = false;
  std::optional<std::uint64_t> memory_limit;  // nullopt: the default; 0: none
  std::string memory_limit_text;              // as given, for a job file's command line
};

// "I/N" with 1 <= I <= N.
std::optional<report::shard_spec> parse_shard(const std::string& text, std::string& error) {
  const auto slash = text.find('/');
  const auto number = [](std::string_view digits, std::uint32_t& v) {
    std::string why;
    const auto n = parse_whole_number(digits, 0, std::numeric_limits<std::uint32_t>::max(), why);
    if (n) v = static_cast<std::uint32_t>(*n);
    return n.has_value();
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
    report::write_comparison_table(r, std::cout);
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

// Shards in a folder that `--emit` wrote must be of the sweep its job runs: the folder's
// scenario.toml with the job's overrides and seed (an earlier sweep's shards left there are not).
void check_against_job_folder(const std::filesystem::path& input, const std::string& merged) {
  const std::optional<std::filesystem::path> folder = emitted_folder_of(input);
  if (!folder) return;
  const job_record record = read_job_record(*folder);
  const std::filesystem::path scenario = *folder / "scenario.toml";
  sim::scenario sc = sim::scenario::load(resolve_scenario(scenario.string()), record.sets);
  if (!record.seed.empty()) {
    std::string why;
    const auto seed =
        parse_whole_number(record.seed, 0, std::numeric_limits<std::uint64_t>::max(), why);
    if (!seed) {
      throw job_folder_error(escape_controls((*folder / job_record_file).string()) + ": seed " +
                             quote_for_message(record.seed) + ": " + why);
    }
    sc.set_seed(*seed);
  }
  if (sc.fingerprint() == merged) return;
  throw job_folder_error(escape_controls(input.string()) + " holds shards of another sweep " +
                         "(fingerprint " + escape_controls(merged) +
                         ") than the job emitted into " + escape_controls(folder->string()) +
                         " runs (" + escape_controls(scenario.string()) +
                         " with its overrides and seed: " + sc.fingerprint() +
                         "); remove the stale shards and run the job again");
}

// `--merge DIR...`: joins a sweep's shards into the outputs of the whole sweep.
int merge_command(const sweep_options& o) {
  if (!o.scenario.empty() || !o.shard.empty() || !o.sets.empty() || o.seed) {
    std::cerr << "backoff sweep: --merge takes shard folders only (no scenario, --shard, "
                 "--set or --seed)\n";
    return exit_usage;
  }
  std::vector<std::filesystem::path> inputs(o.merge.begin(), o.merge.end());
  const sim::merged_sweep merged =
      sim::merge_sweep(inputs, memory_limit_or_default(o.memory_limit));
  const report::scenario_result& r = merged.result;
  try {
    for (const auto& input : inputs) check_against_job_folder(input, r.fingerprint);
  } catch (const job_folder_error& e) {
    std::cerr << "backoff sweep: --merge: " << e.what() << '\n';
    return exit_usage;
  }
  if (!o.out.empty()) {
    report::output_folder folder(o.out);
    report::write_run_files(r, folder);
  }
  if (!print(r, o.format)) return exit_failure;
  if (!o.out.empty()) {
    std::cerr << "backoff sweep: merged outputs written to " << escape_controls(o.out) << '\n';
  }
  if (o.plot) plot(r, o.out, merged.inputs);
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
  return status_of_signal(r.stopped->signal);
}

// Runs the sweep, or one shard of it.
// The scenario of a sweep, --seed applied; nullopt once it has said why it is not a sweep.
std::optional<sim::scenario> load_sweep(const sweep_options& o,
                                        const sim::scenario_source& source) {
  sim::scenario sc = sim::scenario::load(source, o.sets);
  if (o.seed) sc.set_seed(*o.seed);
  if (!sc.is_sweep()) {
    std::cerr << "backoff sweep: " << sc.path()
              << ": not a sweep (no [sweep] table and replications = 1); run it with "
                 "'backoff sim'\n";
    return std::nullopt;
  }
  return sc;
}

int sweep_command(const sweep_options& o) {
  if (o.scenario.empty()) {
    std::cerr << "backoff sweep: give a scenario (a file or a built-in name), or --merge DIR...\n";
    return exit_usage;
  }
  std::optional<report::shard_spec> shard;
  if (o.shard_count != 0 && o.shard != "auto") {
    std::cerr << "backoff sweep: --shard-count goes with --shard auto (--shard I/N names the "
                 "count itself)\n";
    return exit_usage;
  }
  if (!o.shard.empty()) {
    std::string error;
    if (o.shard == "auto") {
      // Every value in the environment is checked; a bad one is permanent (exit 2).
      const auto found = shard_from_environment(process_environment(), {o.shard_count}, error);
      if (found) {
        shard = found->shard;
        std::cerr << "backoff sweep: shard " << shard->index << "/" << shard->count << " from the "
                  << found->from << '\n';
      }
    } else {
      shard = parse_shard(o.shard, error);
    }
    if (!shard) {
      std::cerr << "backoff sweep: " << error << '\n';
      return exit_usage;
    }
    if (o.out.empty()) {
      std::cerr << "backoff sweep: --shard needs --out DIR, where shard-I-of-N.json goes\n";
      return exit_usage;
    }
  }
  std::optional<sim::scenario> loaded = load_sweep(o, resolve_scenario(o.scenario));
  if (!loaded) return exit_usage;
  sim::scenario& sc = *loaded;
  const std::uint64_t limit = memory_limit_or_default(o.memory_limit);
  if (shard) {
    // A rerun (a retry, a requeue, the whole array submitted again) skips a shard written whole
    // for this very scenario, overrides and seed.
    const auto found = sim::find_complete_shard(o.out, *shard, sc.fingerprint());
    if (found.complete) {
      std::cerr << "backoff sweep: shard " << shard->index << "/" << shard->count
                << " skipped: already complete in " << escape_controls(found.file.string())
                << " (scenario fingerprint " << sc.fingerprint() << ")\n";
      return exit_ok;
    }
    if (!found.why_not.empty()) {
      std::cerr << "backoff sweep: " << escape_controls(found.file.string())
                << " is not this shard's complete output (" << found.why_not
                << "): running the shard\n";
    }
  }
  sim::run_options run;
  // A shard's file is written here, with what report.html shows of the scenario.
  if (!o.out.empty() && !shard) run.out = std::filesystem::path(o.out);
  run.progress = o.progress;
  run.threads = o.threads;
  run.shard = shard;
  run.memory_limit = limit;
  // The charts read every point; without them the points go to disk as they finish, and memory
  // does not grow with the sweep.
  run.spool_points = !o.plot;
  const stop_signals signals("sweep");
  const report::scenario_result r = sim::run_scenario(sc, run);
  if (r.stopped) return report_stopped_sweep(o, shard, r);
  if (shard) sim::write_shard_file(o.out, r, {sc.source().path, sc.source().text, sc.sets()});
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

// Whether an array of tasks 0 to shards-1 fits the cluster's MaxArraySize, read from `scontrol
// show config` when it answers (else Slurm's default is assumed, with a note above it). False
// after one line saying so.
bool slurm_array_fits(std::uint32_t shards) {
  const slurm_array_limit limit = query_slurm_array_limit();
  const std::uint64_t most = limit.max_array_size.value_or(slurm_default_max_array_size);
  if (shards <= most) return true;
  const std::string advice = "give --shards " + std::to_string(most) +
                             " or fewer (each shard then runs more of the sweep), or ask for a "
                             "larger MaxArraySize in slurm.conf";
  if (limit.max_array_size) {
    std::cerr << "backoff sweep: --emit slurm: --shards " << shards << " needs array tasks 0 to "
              << shards - 1 << ", but this cluster's MaxArraySize is " << most
              << " (scontrol show config: tasks 0 to " << most - 1 << "); " << advice << '\n';
    return false;
  }
  std::cerr << "backoff sweep: note: --shards " << shards << " needs array tasks 0 to "
            << shards - 1 << ", past Slurm's default MaxArraySize of " << most
            << " (the cluster's own could not be read: " << limit.why_unknown
            << "); sbatch refuses the array unless MaxArraySize is above " << shards - 1 << ": "
            << advice << '\n';
  return true;
}

// Eight hex digits, fresh per emit: the Kubernetes Job's name and its folder on the volume.
std::string fresh_suffix() {
  std::random_device entropy;
  const std::uint32_t value = entropy();
  char text[9];
  std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(value));
  return text;
}

// `--emit slurm|condor|k8s --shards N --out DIR`: the job file whose tasks run the shards.
int emit_command(const sweep_options& o) {
  if (o.scenario.empty() || o.out.empty() || o.shards == 0) {
    std::cerr << "backoff sweep: --emit needs a scenario, --shards N and --out DIR\n";
    return exit_usage;
  }
  if (!o.shard.empty() || o.shard_count != 0 || !o.merge.empty() || o.plot) {
    std::cerr << "backoff sweep: --emit writes a job file; it takes no --shard, --shard-count, "
                 "--merge or --plot (its tasks run --shard auto)\n";
    return exit_usage;
  }
  job_spec spec;
  spec.kind = o.emit == "slurm"    ? job_kind::slurm
              : o.emit == "condor" ? job_kind::condor
                                   : job_kind::k8s;
  for (const std::string& given : o.emit_only) {
    if (spec.kind != job_kind::k8s &&
        (given == "--image" || given == "--volume-claim" || given == "--mount-path")) {
      std::cerr << "backoff sweep: " << given << " goes with --emit k8s\n";
      return exit_usage;
    }
  }
  // The scenario is checked now, point by point, so a mistake fails here and not in N tasks.
  const sim::scenario_source source = resolve_scenario(o.scenario);
  std::optional<sim::scenario> loaded = load_sweep(o, source);
  if (!loaded) return exit_usage;
  sim::scenario& sc = *loaded;
  sim::check_scenario(sc);
  namespace fs = std::filesystem;
  fs::path out = fs::absolute(fs::path(o.out)).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "DIR/" -> "DIR"
  spec.shards = o.shards;
  spec.out = out;
  spec.scenario_text = source.text;
  spec.sets = o.sets;
  spec.seed = o.seed_text;
  spec.threads = o.threads != 0 ? o.threads : 1;
  spec.memory_limit = o.memory_limit_text;
  spec.image = o.image;
  spec.volume_claim = o.volume_claim;
  spec.mount_path = o.mount_path;
  spec.fingerprint = sc.fingerprint();
  if (spec.kind == job_kind::k8s) spec.unique_suffix = fresh_suffix();
  spec.name = o.job_name;
  spec.retries = o.retries;
  spec.executable = o.executable;
  if (spec.executable.empty()) {
    // On a cluster's shared file system, this very backoff; in a container, the image's.
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    spec.executable = spec.kind == job_kind::k8s || ec ? "backoff" : self.string();
  }
  emitted_job job;
  try {
    check_job_spec(spec);  // before scontrol is asked anything
    if (spec.kind == job_kind::slurm && !slurm_array_fits(spec.shards)) return exit_usage;
    // Shards already there must be this sweep's, of this split: the tasks skip those.
    if (spec.kind != job_kind::k8s)
      refuse_foreign_shards(out / "shards", sc.fingerprint(), o.shards);
    job = emit_job(spec);
  } catch (const job_text_error& e) {
    std::cerr << "backoff sweep: --emit " << o.emit << ": " << e.what() << '\n';
    return exit_usage;
  } catch (const job_folder_error& e) {
    std::cerr << "backoff sweep: --emit " << o.emit << ": " << e.what() << '\n';
    return exit_usage;
  }
  std::cout << job.merge << '\n';
  if (!flush_stdout("backoff sweep")) return exit_failure;
  std::cerr << "backoff sweep: wrote " << escape_controls(job.files.front().string()) << " ("
            << spec.shards << " shards of "
            << sc.point_count() * sc.strategies().size() * sc.replications() << " runs, up to "
            << spec.retries << " retries each); submit it with: " << escape_controls(job.submit)
            << "; once every task has succeeded, merge with the command on stdout"
            << (job.merge_where.empty() ? "" : ", " + escape_controls(job.merge_where)) << '\n';
  return exit_ok;
}

int run_sweep(const sweep_options& o) {
  if (!o.emit_only.empty() && o.emit.empty()) {
    std::cerr << "backoff sweep: " << o.emit_only.front() << " goes with --emit\n";
    return exit_usage;
  }
  if (o.emit.empty() && o.plot && (o.out.empty() || !o.shard.empty())) {
    std::cerr << "backoff sweep: --plot needs --out DIR and a whole sweep (not --shard)\n";
    return exit_usage;
  }
  return simulation_status("backoff sweep", [&] {
    return !o.emit.empty()   ? emit_command(o)
           : o.merge.empty() ? sweep_command(o)
                             : merge_command(o);
  });
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
  add_count_option<unsigned>(*cmd, "-j,--threads", options->threads,
                             "Worker threads: the sweep's runs at once (default: one per core); "
                             "the results do not depend on it. (For forall, -j is jobs)",
                             1, 4096);
  cmd->add_option("--shard", options->shard,
                  "Run only the I-th of N slices of the runs (I from 1), e.g. 3/8; 'auto': the "
                  "slice a Slurm, Kubernetes, AWS Batch or HTCondor array task is");
  add_count_option<std::uint32_t>(
      *cmd, "--shard-count", options->shard_count,
      "With --shard auto: the number of shards (required on Kubernetes; elsewhere checked "
      "against the scheduler's count)",
      1, std::numeric_limits<std::uint32_t>::max());
  cmd->add_option("--emit", options->emit,
                  "Write a job file into --out that runs the sweep's shards as an array job, and "
                  "print the merge command")
      ->check(CLI::IsMember({"slurm", "condor", "k8s"}));
  std::vector<CLI::Option*> emit_only{
      add_count_option<std::uint32_t>(*cmd, "--shards", options->shards,
                                      "With --emit: the number of shards (tasks)", 1, 100000),
      add_count_option<unsigned>(*cmd, "--retries", options->retries,
                                 "With --emit: retries per shard after a retryable exit status", 0,
                                 10)
          ->capture_default_str(),
      cmd->add_option("--image", options->image,
                      "With --emit k8s: the container image the pods run (backoff on its PATH)"),
      cmd->add_option("--volume-claim", options->volume_claim,
                      "With --emit k8s: the PersistentVolumeClaim every pod mounts, where the "
                      "shards go")
          ->capture_default_str(),
      cmd->add_option("--mount-path", options->mount_path,
                      "With --emit k8s: where the pods mount the claim; the shards go to "
                      "MOUNT/NAME/shards, NAME the Job's fresh name")
          ->capture_default_str(),
      cmd->add_option("--executable", options->executable,
                      "With --emit: the backoff the tasks run, by a path that exists on every node "
                      "(default: this one's; k8s: backoff on the image's PATH)"),
      cmd->add_option("--job-name", options->job_name,
                      "With --emit: the job's name (a-z, 0-9, '-')")
          ->capture_default_str(),
  };
  cmd->add_option("--merge", options->merge,
                  "Join shard outputs (folders with shard-*-of-*.json, or the files) into the "
                  "whole sweep's outputs")
      ->expected(1, -1);
  add_seed_option(*cmd, "-s,--seed", options->seed, "Override the scenario's seed")
      ->each([options](const std::string& text) { options->seed_text = text; });
  cmd->add_option("--set", options->sets,
                  "Override a scenario key by its dotted path, e.g. --set replications=10 or "
                  "--set 'sweep.clients=[50, 100]' (repeatable)");
  cmd->add_option("-f,--format", options->format, "Output on stdout")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  add_size_option(*cmd, "--memory-limit", options->memory_limit,
                  "Refuse a sweep estimated to need more memory than SIZE, and stop one (or a "
                  "--merge) that grows past it (512MiB, 4GiB, none; default: half the memory, at "
                  "most 8GiB)",
                  {.none = true})
      ->each([options](const std::string& text) { options->memory_limit_text = text; });
  cmd->add_flag("--plot", options->plot,
                "Also draw charts of each metric against the swept key and report.html into --out");
  cmd->add_flag("!--no-progress", options->progress,
                "Do not draw the progress bar (drawn only on a terminal, after 1 s, with an ETA)");
  cmd->callback([options, emit_only, &status] {
    options->emit_only.clear();
    for (const CLI::Option* given : emit_only) {
      if (given->count() != 0) options->emit_only.push_back(given->get_name());
    }
    status = run_sweep(*options);
  });
}

}  // namespace backoff::cli
