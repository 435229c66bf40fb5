// SPDX-License-Identifier: Apache-2.0
// The schedulers' side of `backoff sweep` (sweep_jobs.hpp): `--shard auto` from a job array's
// environment, and `--emit slurm|condor|k8s` job files whose tasks run the shards. Sources for
// the variables and retry rules: Slurm's job_array.html (SLURM_ARRAY_TASK_{ID,MIN,MAX,STEP,COUNT};
// `--array=1-7:2` is 1, 3, 5, 7), the Kubernetes Job docs (Indexed completion mode,
// JOB_COMPLETION_INDEX, backoffLimitPerIndex, podFailurePolicy with FailIndex), AWS Batch's
// job_env_vars.html (AWS_BATCH_JOB_ARRAY_INDEX from 0, AWS_BATCH_JOB_ARRAY_SIZE) and
// condor_submit(1) (max_retries, retry_until, success_exit_code, $(Process) from 0).
#include "sweep_jobs.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "backoff/error.hpp"
#include "report/output_files.hpp"
#include "sweep_job_folder.hpp"
#include "typed_options.hpp"

namespace backoff::cli {
namespace sweep_jobs_detail {

// An environment value in a message: escaped, and cut, since it may be anything of any length.
std::string shown(std::string_view value) {
  constexpr std::size_t most = 40;
  return quote_for_message(value.substr(0, most)) + (value.size() > most ? "..." : "");
}

// Reads the scheduler's variables, each a whole number written with digits only (no sign, no
// space, no 0x), at most 4294967295; the first problem becomes `error`.
class env_numbers {
 public:
  env_numbers(const env_lookup& env, std::string& error) : env_(env), error_(error) {}

  bool set(const char* name) const { return env_(name).has_value(); }

  // nullopt when unset (no error) or bad (error set; check failed()).
  std::optional<std::uint64_t> optional(const char* name) {
    const std::optional<std::string> text = env_(name);
    if (!text) return std::nullopt;
    std::string why;
    const std::optional<std::uint64_t> value = parse_whole_number(*text, 0, max_value, why);
    if (!value) {
      fail(std::string(name) + "=" + shown(*text) + " is not a whole number from 0 to " +
           std::to_string(max_value));
    }
    return value;
  }

  std::optional<std::uint64_t> required(const char* name, const char* with) {
    if (!set(name)) {
      fail(std::string(name) + " is not set (needed with " + with + ")");
      return std::nullopt;
    }
    return optional(name);
  }

  void fail(const std::string& message) {
    if (error_.empty()) error_ = "--shard auto: " + message;
  }
  bool failed() const { return !error_.empty(); }

  static constexpr std::uint64_t max_value = 4294967295ULL;

 private:
  const env_lookup& env_;
  std::string& error_;
};

// The variable whose presence says which scheduler started the task.
struct scheduler_marker {
  const char* variable;
  const char* scheduler;
};
constexpr scheduler_marker markers[] = {
    {"SLURM_ARRAY_TASK_ID", "Slurm job array"},
    {"JOB_COMPLETION_INDEX", "Kubernetes Indexed Job"},
    {"AWS_BATCH_JOB_ARRAY_INDEX", "AWS Batch array job"},
    {"BACKOFF_SHARD_INDEX", "HTCondor (or another launcher)"},
};

// The count from the environment (`variable`, may be unset) or --shard-count; both: they agree.
std::optional<std::uint64_t> shard_count(env_numbers& numbers, const char* variable,
                                         const char* index_variable,
                                         const auto_shard_options& options) {
  const std::optional<std::uint64_t> from_env =
      variable ? numbers.optional(variable) : std::nullopt;
  if (numbers.failed()) return std::nullopt;
  if (!from_env && options.count == 0) {
    numbers.fail(std::string(index_variable) + " is set but not the number of shards: " +
                 (variable ? "set " + std::string(variable) + " or add" : std::string("add")) +
                 " --shard-count N");
    return std::nullopt;
  }
  if (from_env && options.count != 0 && *from_env != options.count) {
    numbers.fail(std::string(variable) + "=" + std::to_string(*from_env) + " but --shard-count " +
                 std::to_string(options.count) + ": the job does not have the sweep's shards");
    return std::nullopt;
  }
  const std::uint64_t count = from_env ? *from_env : options.count;
  if (count == 0) {
    numbers.fail(std::string(variable) + "=0: a sweep has at least one shard");
    return std::nullopt;
  }
  return count;
}

std::optional<auto_shard> zero_based(env_numbers& numbers, const char* index_variable,
                                     std::uint64_t index, std::uint64_t count,
                                     const std::string& from) {
  if (index >= count) {
    numbers.fail(std::string(index_variable) + "=" + std::to_string(index) +
                 " is past the last shard (" + std::to_string(count) + " shards, from 0)");
    return std::nullopt;
  }
  return auto_shard{{static_cast<std::uint32_t>(index + 1), static_cast<std::uint32_t>(count)},
                    from};
}

std::optional<auto_shard> from_slurm(env_numbers& numbers, const auto_shard_options& options) {
  const char* id_name = "SLURM_ARRAY_TASK_ID";
  const auto id = numbers.required(id_name, id_name);
  const auto min = numbers.required("SLURM_ARRAY_TASK_MIN", id_name);
  const auto count = numbers.required("SLURM_ARRAY_TASK_COUNT", id_name);
  const auto step = numbers.optional("SLURM_ARRAY_TASK_STEP");
  const auto max = numbers.optional("SLURM_ARRAY_TASK_MAX");
  if (numbers.failed()) return std::nullopt;
  const std::uint64_t stride = step.value_or(1);
  const std::string array = "MIN " + std::to_string(*min) + ", STEP " + std::to_string(stride) +
                            ", COUNT " + std::to_string(*count) +
                            (max ? ", MAX " + std::to_string(*max) : std::string());
  if (*count == 0 || stride == 0) {
    numbers.fail("SLURM_ARRAY_TASK_COUNT and SLURM_ARRAY_TASK_STEP must be at least 1 (" + array +
                 ")");
    return std::nullopt;
  }
  // Tasks MIN, MIN + STEP, ..., MAX map to shards 1, 2, ..., COUNT. A list such as --array=0,5,7
  // is no such range: refused rather than guessed.
  if (max && (*max < *min || (*max - *min) % stride != 0 || (*max - *min) / stride != *count - 1)) {
    numbers.fail("the array is not one evenly stepped range (" + array +
                 "): submit it as --array=A-B or --array=A-B:S");
    return std::nullopt;
  }
  if (*id < *min || (*id - *min) % stride != 0 || (*id - *min) / stride >= *count) {
    numbers.fail("SLURM_ARRAY_TASK_ID=" + std::to_string(*id) + " is not a task of the array (" +
                 array + ")");
    return std::nullopt;
  }
  if (options.count != 0 && *count != options.count) {
    numbers.fail("SLURM_ARRAY_TASK_COUNT=" + std::to_string(*count) + " but --shard-count " +
                 std::to_string(options.count) +
                 ": the array is not the job's (to rerun failed shards, submit the whole array "
                 "again: finished shards are skipped)");
    return std::nullopt;
  }
  return auto_shard{
      {static_cast<std::uint32_t>((*id - *min) / stride + 1), static_cast<std::uint32_t>(*count)},
      "Slurm job array task " + std::to_string(*id) + " (" + array + ")"};
}

std::optional<auto_shard> from_zero_based(env_numbers& numbers, const char* index_variable,
                                          const char* count_variable, const char* scheduler,
                                          const auto_shard_options& options) {
  const auto index = numbers.required(index_variable, index_variable);
  if (numbers.failed()) return std::nullopt;
  const auto count = shard_count(numbers, count_variable, index_variable, options);
  if (!count) return std::nullopt;
  return zero_based(numbers, index_variable, *index, *count,
                    std::string(scheduler) + " index " + std::to_string(*index) + " of " +
                        std::to_string(*count));
}

// One UTF-8 sequence at `text[i]`: its length, or 0 when it is not well formed (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF). `code` gets the code point.
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::uint32_t& code) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t least = 0;
  if (lead < 0x80) {
    code = lead;
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code = lead & 0x1F, least = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code = lead & 0x0F, least = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code = lead & 0x07, least = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

// "text" with each " and \ after a backslash: a YAML double-quoted scalar and an #SBATCH
// argument alike (both languages read that much the same way).
std::string backslash_quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The file's lines, joined: every job file is text with LF line ends.
std::string lines(const std::vector<std::string>& all) {
  std::string out;
  for (const auto& line : all) out += line + '\n';
  return out;
}

// A word the shell reads as it is (no quoting needed): letters, digits and _ @ % + = : , . / -.
// The first word of a command may not hold '=' (NAME=VALUE would be an assignment).
bool plain_shell_word(std::string_view word, bool first) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [first](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+:,./-").find(c) != std::string_view::npos || (c == '=' && !first);
  });
}

// A command line for a POSIX shell: each word as it is when nothing in it is special, else in
// single quotes.
std::string shell_words(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) {
    const bool first = out.empty();
    out += (first ? "" : " ") + (plain_shell_word(a, first) ? a : shell_single_quote(a));
  }
  return out;
}

std::string json_words(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : ", ") + yaml_double_quote(a);
  return "[" + out + "]";
}

std::string status_list(const char* separator) {
  std::string out;
  for (const int s : permanent_exit_statuses) {
    out += (out.empty() ? "" : separator) + std::to_string(s);
  }
  return out;
}

// A Kubernetes object name and Slurm/HTCondor job name: a DNS-1123 label, so it needs no quoting
// anywhere.
bool is_job_name(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

constexpr const char* scenario_copy = "scenario.toml";
constexpr const char* shards_folder = "shards";
constexpr const char* merged_folder = "merged";

// The scenario copy as the tasks see it: in the folder, or in the pods' ConfigMap.
std::string tasks_scenario(const job_spec& spec) {
  return spec.kind == job_kind::k8s
             ? (std::filesystem::path(k8s_scenario_mount) / scenario_copy).string()
             : (spec.out / scenario_copy).string();
}

// What every task runs: the shard that --shard auto finds, of the scenario copy, into shards/.
std::vector<std::string> task_command(const job_spec& spec) {
  std::vector<std::string> args{spec.executable, "sweep", tasks_scenario(spec)};
  for (const auto& s : spec.sets) args.insert(args.end(), {"--set", s});
  if (!spec.seed.empty()) args.insert(args.end(), {"--seed", spec.seed});
  args.insert(args.end(), {"--threads", std::to_string(spec.threads)});
  if (!spec.memory_limit.empty()) args.insert(args.end(), {"--memory-limit", spec.memory_limit});
  args.insert(args.end(), {"--shard", "auto", "--shard-count", std::to_string(spec.shards), "--out",
                           (tasks_folder(spec) / shards_folder).string(), "--no-progress"});
  return args;
}

// `#SBATCH --output` (or --error) for DIR/logs/NAME-JOBID_TASK.SUFFIX, quoted as sbatch_argument
// does. Slurm expands the patterns in the whole path, so a % of DIR is written %%; a backslash
// would turn the patterns off, and check_texts refuses it.
std::string sbatch_log_pattern(const std::filesystem::path& dir, const char* suffix) {
  std::string literal;
  for (const char c : dir.string()) literal += c == '%' ? std::string("%%") : std::string(1, c);
  return sbatch_argument(literal + "/logs/%x-%A_%a" + suffix);
}

// Retries with growing waits inside the task: Slurm's --requeue does not look at exit statuses.
constexpr const char* slurm_retry_policy =
    "exponential(initial=30s, factor=2, max=10m, jitter=full)";

std::string slurm_script(const job_spec& spec) {
  const std::string n = std::to_string(spec.shards);
  const std::vector<std::string> task = task_command(spec);
  const std::vector<std::string> rest(task.begin() + 1, task.end());
  return lines({
      "#!/bin/bash",
      "# One backoff sweep as a Slurm job array, written by `backoff sweep --emit slurm`: array",
      "# task I runs shard I + 1 of " + n +
          " (`--shard auto` reads SLURM_ARRAY_TASK_ID, _MIN and _COUNT).",
      "# Submit with sbatch from anywhere; merge with `backoff sweep --merge SHARDS` once every",
      "# task succeeded. The tasks run in this folder (--chdir), each logging to logs/ here. The",
      "# task index is 0 to " + std::to_string(spec.shards - 1) +
          ": Slurm's MaxArraySize (default 1001) must be above it.",
      "#SBATCH --job-name=" + spec.name,
      "#SBATCH --array=0-" + std::to_string(spec.shards - 1),
      "#SBATCH --chdir=" + sbatch_argument(spec.out.string()),
      "#SBATCH --output=" + sbatch_log_pattern(spec.out, ".out"),
      "#SBATCH --error=" + sbatch_log_pattern(spec.out, ".err"),
      "#SBATCH --cpus-per-task=" + std::to_string(spec.threads),
      "#SBATCH --requeue",
      "#SBATCH --open-mode=append",
      "set -u",
      "# Exit statuses (docs/EXIT_CODES.md): 0 done, or already done (a finished shard is",
      "# skipped); " + status_list(", ") +
          " permanent (the scenario, a flag or the executable is wrong): not retried; any",
      "# other (1: an output not written or a limit hit; 128+n: a signal) is retried here up to " +
          std::to_string(spec.retries) + " times",
      "# with growing waits (Slurm's --requeue ignores exit statuses: it requeues after a node",
      "# failure or a preemption, and the rerun skips the shards already written).",
      "backoff=" + shell_single_quote(spec.executable),  // "$backoff": never an assignment
      "exec \"$backoff\" try --times " + std::to_string(spec.retries + 1) + " --until success," +
          status_list(",") + " --policy " + shell_single_quote(slurm_retry_policy) + " -- \\",
      "  \"$backoff\" " + shell_words(rest),
  });
}

std::string condor_task_script(const job_spec& spec) {
  return lines({
      "#!/bin/sh",
      "# One shard of a backoff sweep, for HTCondor (backoff-sweep.sub sets BACKOFF_SHARD_INDEX",
      "# from $(Process), 0-based, and BACKOFF_SHARD_COUNT). Written by `backoff sweep --emit "
      "condor`.",
      "exec " + shell_words(task_command(spec)),
  });
}

// No text of the user's is in the submit file (paths are relative to the folder it is submitted
// from), so HTCondor's own quoting and $(...) macros never meet one.
std::string condor_submit_file(const job_spec& spec) {
  const std::string n = std::to_string(spec.shards);
  std::string permanent;
  for (const int s : permanent_exit_statuses) {
    permanent += (permanent.empty() ? "" : " || ") + ("ExitCode == " + std::to_string(s));
  }
  return lines({
      "# One backoff sweep as an HTCondor cluster, written by `backoff sweep --emit condor`: job",
      "# $(Process) (0 to " + std::to_string(spec.shards - 1) + ") runs shard $(Process) + 1 of " +
          n + ". Submit from this folder:",
      "#   condor_submit backoff-sweep.sub",
      "# Results go to this folder on a shared file system (should_transfer_files = NO).",
      "universe              = vanilla",
      "executable            = backoff-sweep-task.sh",
      "environment           = \"BACKOFF_SHARD_INDEX=$(Process) BACKOFF_SHARD_COUNT=" + n + "\"",
      "request_cpus          = " + std::to_string(spec.threads),
      "should_transfer_files = NO",
      "output                = logs/shard-$(Process).out",
      "error                 = logs/shard-$(Process).err",
      "log                   = logs/backoff-sweep.log",
      "batch_name            = " + spec.name,
      "# Exit statuses (docs/EXIT_CODES.md): 0 done, or already done (a finished shard is "
      "skipped);",
      "# " + status_list(", ") + " permanent: retries stop; any other status is retried up to " +
          std::to_string(spec.retries) + " times.",
      "success_exit_code     = 0",
      "max_retries           = " + std::to_string(spec.retries),
      "retry_until           = (ExitBySignal =?= false) && (" + permanent + ")",
      "queue " + n,
  });
}

// The pods' volumes: the claim at the mount path, and (for the shards' Job) the scenario's
// ConfigMap, read-only.
std::vector<std::string> k8s_pod_volumes(const job_spec& spec, bool with_scenario) {
  std::vector<std::string> out{
      "          volumeMounts:",
      "            - name: results",
      "              mountPath: " + yaml_double_quote(spec.mount_path),
  };
  if (with_scenario) {
    out.insert(out.end(), {"            - name: scenario",
                           "              mountPath: " + yaml_double_quote(k8s_scenario_mount),
                           "              readOnly: true"});
  }
  out.insert(out.end(),
             {"      volumes:", "        - name: results", "          persistentVolumeClaim:",
              "            claimName: " + yaml_double_quote(spec.volume_claim)});
  if (with_scenario) {
    out.insert(out.end(), {"        - name: scenario", "          configMap:",
                           "            name: " + yaml_double_quote(job_name(spec) + "-scenario")});
  }
  return out;
}

std::vector<std::string> k8s_scenario_map(const job_spec& spec) {
  return {
      "apiVersion: v1",
      "kind: ConfigMap",
      "metadata:",
      "  name: " + yaml_double_quote(job_name(spec) + "-scenario"),
      "data:",
      // A JSON string is a YAML double-quoted scalar: every line end and tab escaped, exactly.
      "  scenario.toml: " + nlohmann::json(spec.scenario_text).dump(),
  };
}

std::string k8s_job(const job_spec& spec) {
  const std::string n = std::to_string(spec.shards);
  const std::string folder = tasks_folder(spec).string();
  std::vector<std::string> out{
      "# One backoff sweep as a Kubernetes Indexed Job, written by `backoff sweep --emit k8s`: the",
      "# pod with completion index I (0 to " + std::to_string(spec.shards - 1) +
          ") runs shard I + 1 of " + n + ". Create both documents with",
      "# `kubectl create -f` (the name is fresh per emit; `apply` would not make it so). The",
      "# scenario travels in the ConfigMap, mounted in every pod at " +
          std::string(k8s_scenario_mount) + "; the shards go",
      "# to the claim " + spec.volume_claim + " at " + spec.mount_path + ", in " + folder +
          "/shards, where backoff-sweep-merge.yaml joins them.",
      "# Needs Kubernetes 1.29 or later (backoffLimitPerIndex, podFailurePolicy FailIndex).",
  };
  const std::vector<std::string> map = k8s_scenario_map(spec);
  out.insert(out.end(), map.begin(), map.end());
  const std::vector<std::string> job{
      "---",
      "apiVersion: batch/v1",
      "kind: Job",
      "metadata:",
      "  name: " + yaml_double_quote(job_name(spec)),
      "spec:",
      "  completionMode: Indexed",
      "  completions: " + n,
      "  parallelism: " + n,
      "  backoffLimitPerIndex: " + std::to_string(spec.retries),
      "  podFailurePolicy:",
      "    rules:",
      "      # Exit statuses (docs/EXIT_CODES.md): " + status_list(", ") +
          " are permanent (the scenario, a flag or",
      "      # the executable is wrong): the index fails at once. Any other counts against",
      "      # backoffLimitPerIndex; an evicted or preempted pod does not count.",
      "      - action: FailIndex",
      "        onExitCodes:",
      "          containerName: sweep",
      "          operator: In",
      "          values: [" + status_list(", ") + "]",
      "      - action: Ignore",
      "        onPodConditions:",
      "          - type: DisruptionTarget",
      "  template:",
      "    spec:",
      "      restartPolicy: Never",
      "      containers:",
      "        - name: sweep",
      "          image: " + yaml_double_quote(spec.image),
      "          command: " + json_words(task_command(spec)),
      "          resources:",
      "            requests:",
      "              cpu: \"" + std::to_string(spec.threads) + "\"",
  };
  out.insert(out.end(), job.begin(), job.end());
  const std::vector<std::string> volumes = k8s_pod_volumes(spec, true);
  out.insert(out.end(), volumes.begin(), volumes.end());
  return lines(out);
}

// The command that joins the shards, as it runs where the claim is mounted at the mount path.
std::vector<std::string> k8s_merge_command(const job_spec& spec) {
  const std::filesystem::path folder = tasks_folder(spec);
  return {spec.executable, "sweep",
          "--merge",       (folder / shards_folder).string(),
          "--out",         (folder / merged_folder).string()};
}

std::string k8s_merge_job(const job_spec& spec) {
  std::vector<std::string> out{
      "# Joins the shards of " + job_name(spec) +
          " once every index has succeeded, written by `backoff sweep --emit",
      "# k8s`: `kubectl create -f` this file; the merged outputs go to the claim, in " +
          (tasks_folder(spec) / merged_folder).string() + ", and",
      "# the table to the pod's log (`kubectl logs job/" + job_name(spec) + "-merge`).",
      "apiVersion: batch/v1",
      "kind: Job",
      "metadata:",
      "  name: " + yaml_double_quote(job_name(spec) + "-merge"),
      "spec:",
      "  backoffLimit: 2",
      "  template:",
      "    spec:",
      "      restartPolicy: Never",
      "      containers:",
      "        - name: merge",
      "          image: " + yaml_double_quote(spec.image),
      "          command: " + json_words(k8s_merge_command(spec)),
  };
  const std::vector<std::string> volumes = k8s_pod_volumes(spec, false);
  out.insert(out.end(), volumes.begin(), volumes.end());
  return lines(out);
}

// A ConfigMap holds at most 1 MiB; an Indexed Job's pod hostname NAME-INDEX at most 63 bytes.
constexpr std::size_t k8s_scenario_most = 1000000;
constexpr std::size_t k8s_name_most = 63 - 7 - 9;  // "-" + 6 digits of index, "-" + 8 of suffix

void check_k8s_texts(const job_spec& spec) {
  if (spec.name.size() > k8s_name_most) {
    throw job_text_error("--job-name " + quote_for_message(spec.name) + ": at most " +
                         std::to_string(k8s_name_most) +
                         " characters with --emit k8s (a fresh 8-character suffix and the pods' "
                         "index follow it in a 63-character host name)");
  }
  const std::filesystem::path mount(spec.mount_path);
  const bool climbs = std::any_of(mount.begin(), mount.end(),
                                  [](const std::filesystem::path& part) { return part == ".."; });
  if (!mount.is_absolute() || climbs || mount == "/" ||
      mount.lexically_normal() == std::filesystem::path(k8s_scenario_mount)) {
    throw job_text_error("--mount-path " + quote_for_message(spec.mount_path) +
                         ": expected an absolute path inside the pods, not /, without '..', not " +
                         k8s_scenario_mount);
  }
  if (spec.scenario_text.size() > k8s_scenario_most) {
    throw job_text_error("the scenario is " + std::to_string(spec.scenario_text.size()) +
                         " bytes, more than a Kubernetes ConfigMap holds (1 MiB)");
  }
}

void check_texts(const job_spec& spec) {
  std::vector<std::pair<std::string, std::string>> texts{{"the output folder", spec.out.string()},
                                                         {"the executable", spec.executable},
                                                         {"--seed", spec.seed},
                                                         {"--memory-limit", spec.memory_limit}};
  for (const auto& s : spec.sets) texts.emplace_back("--set", s);
  if (spec.kind == job_kind::k8s) {
    texts.emplace_back("--image", spec.image);
    texts.emplace_back("--volume-claim", spec.volume_claim);
    texts.emplace_back("--mount-path", spec.mount_path);
    // The ConfigMap carries the scenario's line ends and tabs escaped; nothing else unprintable.
    std::string scenario = spec.scenario_text;
    std::replace_if(
        scenario.begin(), scenario.end(),
        [](char c) { return c == '\n' || c == '\t' || c == '\r'; }, ' ');
    texts.emplace_back("the scenario", scenario);
  }
  for (const auto& [what, text] : texts) {
    if (const std::string why = unrepresentable(what, text); !why.empty()) {
      throw job_text_error(why);
    }
  }
  if (!is_job_name(spec.name)) {
    throw job_text_error("--job-name " + quote_for_message(spec.name) +
                         ": expected a DNS-1123 label (a-z, 0-9 and '-', at most 63, no '-' at "
                         "either end), as Kubernetes requires");
  }
  if (spec.kind == job_kind::k8s) check_k8s_texts(spec);
  if (spec.kind == job_kind::slurm && spec.out.string().find('\\') != std::string::npos) {
    throw job_text_error("the output folder " + quote_for_message(spec.out.string()) +
                         " contains a backslash, which turns off every %A and %a of a Slurm log "
                         "file name (#SBATCH --output), so that all tasks would write one log: "
                         "emit into a folder without one");
  }
  if (spec.executable.empty()) throw job_text_error("--executable: empty");
  if (spec.kind == job_kind::k8s && (spec.image.empty() || spec.volume_claim.empty())) {
    throw job_text_error(
        "--emit k8s needs --image (a container image with backoff in it) and a "
        "non-empty --volume-claim");
  }
}

}  // namespace sweep_jobs_detail

env_lookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<auto_shard> shard_from_environment(const env_lookup& env,
                                                 const auto_shard_options& options,
                                                 std::string& error) {
  namespace detail = sweep_jobs_detail;
  error.clear();
  detail::env_numbers numbers(env, error);
  std::vector<const detail::scheduler_marker*> present;
  for (const auto& m : detail::markers) {
    if (numbers.set(m.variable)) present.push_back(&m);
  }
  if (present.empty()) {
    std::string names;
    for (const auto& m : detail::markers)
      names += (names.empty() ? "" : ", ") + std::string(m.variable);
    numbers.fail("no shard index in the environment (none of " + names +
                 " is set): run it as a job array task, or give --shard I/N");
    return std::nullopt;
  }
  if (present.size() > 1) {
    std::string which;
    for (const auto* m : present) {
      which += (which.empty() ? "" : ", ") + std::string(m->variable) + "=" +
               detail::shown(env(m->variable).value_or("")) + " (" + m->scheduler + ")";
    }
    numbers.fail("more than one scheduler's shard index is set: " + which +
                 "; unset the stray ones, or give --shard I/N");
    return std::nullopt;
  }
  const std::string_view variable = present.front()->variable;
  std::optional<auto_shard> shard;
  if (variable == "SLURM_ARRAY_TASK_ID") {
    shard = detail::from_slurm(numbers, options);
  } else if (variable == "JOB_COMPLETION_INDEX") {
    shard = detail::from_zero_based(numbers, "JOB_COMPLETION_INDEX", nullptr,
                                    "Kubernetes Indexed Job", options);
  } else if (variable == "AWS_BATCH_JOB_ARRAY_INDEX") {
    shard = detail::from_zero_based(numbers, "AWS_BATCH_JOB_ARRAY_INDEX",
                                    "AWS_BATCH_JOB_ARRAY_SIZE", "AWS Batch array job", options);
  } else {
    shard = detail::from_zero_based(numbers, "BACKOFF_SHARD_INDEX", "BACKOFF_SHARD_COUNT",
                                    "BACKOFF_SHARD_INDEX (HTCondor's $(Process))", options);
  }
  if (numbers.failed()) return std::nullopt;
  return shard;
}

std::string shell_single_quote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string yaml_double_quote(std::string_view text) {
  return sweep_jobs_detail::backslash_quoted(text);  // control characters never get here
}

std::string unrepresentable(std::string_view what, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t code = 0;
    const std::size_t length = sweep_jobs_detail::utf8_sequence(text, i, code);
    std::string why;
    if (length == 0) {
      why = "bytes that are not UTF-8";
    } else if (code < 0x20 || code == 0x7F || (code >= 0x80 && code <= 0x9F)) {
      why = "a control character";
    } else if (code == 0x2028 || code == 0x2029) {
      why = "a line separator (U+2028/U+2029)";
    }
    if (!why.empty()) {
      return std::string(what) + " " + sweep_jobs_detail::shown(text) + " contains " + why +
             ": a job file cannot carry it as it is (rename it, or run the shards with --shard "
             "I/N)";
    }
    i += length;
  }
  return {};
}

std::string job_name(const job_spec& spec) {
  return spec.kind == job_kind::k8s && !spec.unique_suffix.empty()
             ? spec.name + "-" + spec.unique_suffix
             : spec.name;
}

std::filesystem::path tasks_folder(const job_spec& spec) {
  return spec.kind == job_kind::k8s ? std::filesystem::path(spec.mount_path) / job_name(spec)
                                    : spec.out;
}

std::string sbatch_argument(std::string_view text) {
  return sweep_jobs_detail::backslash_quoted(text);
}

void check_job_spec(const job_spec& spec) {
  sweep_jobs_detail::check_texts(spec);
}

emitted_job emit_job(const job_spec& spec) {
  namespace detail = sweep_jobs_detail;
  detail::check_texts(spec);
  namespace fs = std::filesystem;
  report::output_folder folder(spec.out, report::output_folder::manifest::none);
  emitted_job job;
  const char* kinds[] = {"slurm", "condor", "k8s"};
  folder.write(detail::scenario_copy, spec.scenario_text);
  folder.write(job_record_file, job_record_text({kinds[static_cast<int>(spec.kind)], job_name(spec),
                                                 spec.shards, spec.sets, spec.seed,
                                                 spec.fingerprint, tasks_folder(spec).string()}));
  const auto created = [&](const std::string& name, const std::string& text) {
    folder.write(name, text);
    job.files.push_back(spec.out / name);
  };
  // The scheduler writes its logs there, and needs the folder to exist when a task starts.
  const auto log_folder = [&] {
    report::output_folder logs(spec.out / "logs", report::output_folder::manifest::none);
    (void)logs;
  };
  switch (spec.kind) {
    case job_kind::slurm:
      log_folder();
      created("backoff-sweep.sbatch", detail::slurm_script(spec));
      job.submit = detail::shell_words({"sbatch", (spec.out / "backoff-sweep.sbatch").string()});
      break;
    case job_kind::condor: {
      log_folder();
      created("backoff-sweep.sub", detail::condor_submit_file(spec));
      created("backoff-sweep-task.sh", detail::condor_task_script(spec));
      const fs::path task = spec.out / "backoff-sweep-task.sh";
      std::error_code ec;
      fs::permissions(task, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
      if (ec) report::throw_write_error(task, ec.value());
      job.submit =
          detail::shell_words({"cd", spec.out.string()}) + " && condor_submit backoff-sweep.sub";
      break;
    }
    case job_kind::k8s:
      created("backoff-sweep-job.yaml", detail::k8s_job(spec));
      created("backoff-sweep-merge.yaml", detail::k8s_merge_job(spec));
      job.submit = detail::shell_words(
          {"kubectl", "create", "-f", (spec.out / "backoff-sweep-job.yaml").string()});
      job.merge = detail::shell_words(detail::k8s_merge_command(spec));
      job.merge_where = "where the claim " + spec.volume_claim + " is mounted at " +
                        spec.mount_path + ", as " +
                        detail::shell_words({"kubectl", "create", "-f",
                                             (spec.out / "backoff-sweep-merge.yaml").string()}) +
                        " does";
      break;
  }
  job.files.push_back(spec.out / detail::scenario_copy);
  job.files.push_back(spec.out / job_record_file);
  if (spec.kind == job_kind::k8s) return job;  // the shards are on the claim, not here
  const fs::path shards = spec.out / detail::shards_folder;
  report::output_folder made(shards, report::output_folder::manifest::none);
  (void)made;  // the tasks write there; an early mkdir shows a read-only place now
  job.merge = detail::shell_words({spec.executable, "sweep", "--merge", shards.string(), "--out",
                                   (spec.out / detail::merged_folder).string()});
  return job;
}

}  // namespace backoff::cli
