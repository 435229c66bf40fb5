// SPDX-License-Identifier: Apache-2.0
// `backoff sweep` on the batch schedulers people already run (issue 23, SPEC 7.4): which shard a
// task is, read from its scheduler's environment (`--shard auto`), and the job files that run a
// sweep's shards as one array job (`--emit slurm|condor|k8s`). sweep.cpp is the subcommand's
// face; this file knows the schedulers.
//
//   std::string error;
//   const auto shard = shard_from_environment(process_environment(), {.count = 16}, error);
//   // Slurm task 3 of --array=1-16: shard 3/16 (1-based, as --shard I/N)
//
//   const emitted_job job = emit_job(spec);    // writes DIR/backoff-sweep.sbatch (or ...)
//   std::cout << job.merge << '\n';            // backoff sweep --merge 'DIR/shards' --out ...
//
// Every environment value and every text that goes into a job file is hostile input: values are
// whole numbers written with digits only, range-checked, and a text that a job file cannot carry
// as it is (a control character, bytes that are not UTF-8) is refused with one line, never
// mangled; what is carried is quoted for its file's language (shell single quotes, JSON-style
// double-quoted YAML), and the HTCondor submit file carries no user text at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "report/result.hpp"

namespace backoff::cli {

// The value of an environment variable, or none when it is not set (set but empty is "").
using env_lookup = std::function<std::optional<std::string>(const char* name)>;
env_lookup process_environment();

// The exit statuses after which running the task again cannot help (docs/EXIT_CODES.md): 2 (a
// bad scenario, flag or environment), 126 and 127 (the executable cannot run). Every other
// non-zero status (1: an output not written or a limit hit; 128+n and 130/143: a signal) is worth
// a bounded number of retries, and each job file wires this rule into its scheduler's own.
inline constexpr int permanent_exit_statuses[] = {2, 126, 127};

struct auto_shard_options {
  std::uint32_t count = 0;  // --shard-count; 0: not given
};

struct auto_shard {
  report::shard_spec shard;  // 1-based, as --shard I/N
  std::string from;          // "Slurm job array (SLURM_ARRAY_TASK_ID=3, ...)", for the log
};

// `--shard auto`: the shard this task runs, from exactly one scheduler's variables:
// - Slurm: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT (and, when set,
//   SLURM_ARRAY_TASK_STEP and SLURM_ARRAY_TASK_MAX: `--array=1-99:2` is task (ID - MIN) / STEP);
// - Kubernetes Indexed Job: JOB_COMPLETION_INDEX (0-based), the count from --shard-count;
// - AWS Batch array job: AWS_BATCH_JOB_ARRAY_INDEX (0-based), AWS_BATCH_JOB_ARRAY_SIZE;
// - HTCondor, or any launcher: BACKOFF_SHARD_INDEX (0-based; the submit file sets it from
//   $(Process)) and BACKOFF_SHARD_COUNT (or --shard-count).
// nullopt and a one-line `error` when none is set, more than one is, a value is not a whole
// number or out of range, or a count disagrees with --shard-count.
std::optional<auto_shard> shard_from_environment(const env_lookup& env,
                                                 const auto_shard_options& options,
                                                 std::string& error);

enum class job_kind : std::uint8_t { slurm, condor, k8s };

struct job_spec {
  job_kind kind = job_kind::slurm;
  std::uint32_t shards = 1;
  std::filesystem::path out;  // absolute: the job files, the scenario copy, shards/
  // The scenario's text (a file's or a built-in's), copied to out/scenario.toml, which the tasks
  // run: a snapshot that later edits cannot change, with the same fingerprint as the original.
  std::string scenario_text;
  std::vector<std::string> sets;        // --set overrides, as given
  std::string seed;                     // --seed, "" when not given
  unsigned threads = 1;                 // per task
  std::string memory_limit;             // --memory-limit, "" when not given
  std::string executable;               // the backoff the tasks run
  std::string image;                    // k8s: the container image
  std::string volume_claim;             // k8s: the PersistentVolumeClaim the pods mount
  std::string mount_path = "/backoff";  // k8s: where the pods mount it (absolute)
  std::string name = "backoff-sweep";   // the job's name (a DNS-1123 label)
  // k8s: appended to the name ("NAME-SUFFIX"), fresh per emit, so that a second emit never meets
  // the first's Job (Kubernetes refuses a Job name in use) nor its folder on the volume.
  std::string unique_suffix;
  unsigned retries = 3;     // retries per shard after a retryable status
  std::string fingerprint;  // the scenario's with the overrides and seed (the record)
};

// The job's name as the scheduler knows it (k8s: with its unique suffix).
std::string job_name(const job_spec& spec);
// Where the tasks read and write: `out`, or on Kubernetes MOUNT/NAME on the claim the pods mount.
std::filesystem::path tasks_folder(const job_spec& spec);
// On Kubernetes the scenario reaches each pod in a ConfigMap mounted read-only here.
inline constexpr const char* k8s_scenario_mount = "/etc/backoff-sweep";

struct emitted_job {
  std::vector<std::filesystem::path> files;  // what was written, the job file first
  std::string submit;                        // the command that submits it
  std::string merge;                         // the command that joins the shards afterwards
  std::string merge_where;                   // k8s: where to run it ("" when anywhere here)
};

// A text a job file cannot carry (thrown before anything is written); sweep.cpp reports it as a
// usage error (exit 2).
class job_text_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Writes the job file and its companions into spec.out, atomically, and says how to submit and
// merge it: the scenario copy, the job record (sweep_job_folder.hpp), the log folder (Slurm,
// HTCondor), HTCondor's task script, Kubernetes' merge Job. The scenario copy and the record come
// first and the job file last, so a job file on disk always has them.
emitted_job emit_job(const job_spec& spec);
// What emit_job checks before it writes anything (job_text_error), for a caller with slower
// checks of its own to make after it.
void check_job_spec(const job_spec& spec);

// 'text' for a POSIX shell: single quotes, each ' written as '\''. Nothing is special inside.
std::string shell_single_quote(std::string_view text);
// "text" as a JSON string, which YAML reads as a double-quoted scalar with the same value.
std::string yaml_double_quote(std::string_view text);
// An argument of an `#SBATCH` line, as sbatch 22.05 reads it back: in double quotes (which group
// blanks, and keep a # from ending the line), each " and \ after a backslash. A backslash cannot
// escape a blank outside quotes. Not for --output or --error, whose patterns read % and \.
std::string sbatch_argument(std::string_view text);
// Why `text` (named `what` in the message) cannot go into a job file: "" when it can. Refused:
// control characters (a newline would end a line of the file) and bytes that are not UTF-8.
std::string unrepresentable(std::string_view what, std::string_view text);

}  // namespace backoff::cli
