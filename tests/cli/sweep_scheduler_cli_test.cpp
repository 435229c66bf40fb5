// SPDX-License-Identifier: Apache-2.0
// `backoff sweep` on batch schedulers (issue 23 part 3), with no scheduler at hand: the job files
// that `--emit slurm|condor|k8s` writes are read as each scheduler would read them (the sbatch
// script run by bash per array task, the HTCondor submit file's executable and environment with
// $(Process) put in, the Kubernetes Job's command per completion index), their tasks run with the
// scheduler's variables set, and the merged shards must be the unsharded sweep byte for byte.
// Also: every bad environment is one line and exit 2, a finished shard is skipped on rerun, and
// hostile names reach the job files quoted (or are refused) without running anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::cli_result;
using backoff::test::run_captured;
using backoff::test::run_cli;
using backoff::test::shell_quote;
using backoff::test::slurp;

// Every variable --shard auto reads: unset in each run, so that a CI job that itself runs in a
// Slurm array (or a Kubernetes Indexed Job) cannot leak its own index into these tests.
const std::vector<std::string> scheduler_variables{
    "SLURM_ARRAY_TASK_ID",       "SLURM_ARRAY_TASK_MIN",     "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",     "SLURM_ARRAY_TASK_COUNT",   "JOB_COMPLETION_INDEX",
    "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE", "BACKOFF_SHARD_INDEX",
    "BACKOFF_SHARD_COUNT"};

using env_vars = std::map<std::string, std::string>;

// Runs `argv` (argv[0] a path or a name on PATH) in `cwd` with exactly these scheduler variables.
cli_result run_scheduled(const std::vector<std::string>& argv, const env_vars& env,
                         const fs::path& cwd = fs::temp_directory_path()) {
  std::string command = "cd " + shell_quote(cwd.string()) + " && exec env";
  for (const auto& v : scheduler_variables) command += " -u " + v;
  for (const auto& [k, v] : env) command += " " + shell_quote(k + "=" + v);
  for (const auto& a : argv) command += " " + shell_quote(a);
  return run_captured(command);
}

cli_result backoff_scheduled(const std::vector<std::string>& args, const env_vars& env) {
  std::vector<std::string> argv{BACKOFF_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_scheduled(argv, env);
}

// 3 outage lengths x 2 strategies x 2 replications = 12 runs of two simulated minutes. The
// description override carries a quote, $(...), backticks and a backslash into every job file:
// the scenario must still be the same one (its fingerprint) when the tasks run it.
const std::string hostile_description =
    R"(about.description="it's $(touch pwned) `touch pwned` \\ \"q\" #")";
const std::vector<std::string> scheduler_sweep{"outage-tipping",
                                               "--set",
                                               "replications=2",
                                               "--set",
                                               "run.duration=\"120s\"",
                                               "--set",
                                               "sweep.outage.duration=[\"2s\", \"5s\", \"12s\"]",
                                               "--set",
                                               hostile_description};

std::vector<std::string> sweep_args(std::vector<std::string> more) {
  std::vector<std::string> args{"sweep"};
  args.insert(args.end(), scheduler_sweep.begin(), scheduler_sweep.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

nlohmann::json summary_without_wall_time(const fs::path& summary) {
  auto doc = nlohmann::json::parse(slurp(summary));
  doc["run"].erase("wall_s");
  doc["run"].erase("events_per_s");
  return doc;
}

std::string line_value(const std::string& text, const std::string& key_pattern) {
  std::smatch m;
  const std::regex re("(?:^|\n)" + key_pattern + "([^\n]*)");
  return std::regex_search(text, m, re) ? m[1].str() : std::string();
}

// The folders of these tests: names a shell, HTCondor or YAML would read as code if unquoted.
const std::string hostile_folder = "out 'q' $(touch pwned) `touch pwned` \"d\" \\ #x";
// Slurm's log file names cannot hold a backslash (it turns their patterns off: refused), but a %
// (a pattern character, written %%) they can.
const std::string slurm_hostile_folder = "out 'q' $(touch pwned) `touch pwned` \"d\" #x %a";

// One unsharded run of scheduler_sweep, shared by the tests of the suite.
class SweepSchedulerJobs : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new backoff::test::test_scratch("sweep-scheduler");
    whole_ = *scratch_ / "whole";
    const auto r = run_cli(sweep_args({"--out", whole_.string(), "--no-progress"}));
    ASSERT_EQ(r.status, 0) << r.err;
    whole_table_ = r.out;
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }

  // Emits the job, checks the merge command it printed, and returns the folder.
  static fs::path emit(const std::string& kind, const std::vector<std::string>& more = {}) {
    const fs::path dir =
        *scratch_ / kind / (kind == "slurm" ? slurm_hostile_folder : hostile_folder);
    std::vector<std::string> extra{"--emit", kind, "--shards", "3", "--out", dir.string()};
    extra.insert(extra.end(), more.begin(), more.end());
    const auto r = run_cli(sweep_args(extra));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_NE(r.err.find("submit it with"), std::string::npos) << r.err;
    merge_command_ = r.out;
    return dir;
  }

  // Runs the printed merge command in a shell (it is shell-quoted), then compares.
  static void expect_merge_gives_the_whole_sweep(const fs::path& dir, fs::path merged = {}) {
    const auto m = run_scheduled({"sh", "-c", merge_command_}, {}, dir.parent_path());
    ASSERT_EQ(m.status, 0) << m.err;
    if (merged.empty()) merged = dir / "merged";
    EXPECT_EQ(slurp(merged / "sweep.csv"), slurp(whole_ / "sweep.csv"));
    EXPECT_EQ(summary_without_wall_time(merged / "summary.json"),
              summary_without_wall_time(whole_ / "summary.json"));
    EXPECT_EQ(m.out, whole_table_) << "the table on stdout";
    EXPECT_FALSE(fs::exists(dir / "pwned")) << "a name ran as a command";
    EXPECT_FALSE(fs::exists(dir.parent_path() / "pwned")) << "a name ran as a command";
  }

  static backoff::test::test_scratch* scratch_;
  static fs::path whole_;
  static std::string whole_table_;
  static std::string merge_command_;
};
backoff::test::test_scratch* SweepSchedulerJobs::scratch_ = nullptr;
fs::path SweepSchedulerJobs::whole_;
std::string SweepSchedulerJobs::whole_table_;
std::string SweepSchedulerJobs::merge_command_;

TEST_F(SweepSchedulerJobs, SlurmArrayTasksRunByBashMergeToTheUnshardedSweep) {
  const fs::path dir = emit("slurm");
  const fs::path script = dir / "backoff-sweep.sbatch";
  const std::string text = slurp(script);
  // Tasks 0 to N-1: N tasks fit a MaxArraySize of N.
  ASSERT_EQ(line_value(text, "#SBATCH --array="), "0-2") << text;
  EXPECT_NE(text.find("#SBATCH --requeue"), std::string::npos);
  EXPECT_NE(text.find("--until success,2,126,127"), std::string::npos) << text;
  // The logs go to DIR/logs wherever sbatch ran, and the tasks run in DIR: #SBATCH arguments in
  // double quotes, " and \ after a backslash, as sbatch reads them; in the log's name a % of DIR
  // is %%, since Slurm expands its patterns in the whole path.
  const auto unquoted = [&](const std::string& key) {
    const std::string value = line_value(text, key);
    EXPECT_TRUE(value.size() > 2 && value.front() == '"' && value.back() == '"') << value;
    return std::regex_replace(value.substr(1, value.size() - 2), std::regex(R"(\\(.))"), "$1");
  };
  const std::string pattern_dir = std::regex_replace(dir.string(), std::regex("%"), "%%");
  EXPECT_EQ(unquoted("#SBATCH --output="), pattern_dir + "/logs/%x-%A_%a.out");
  EXPECT_EQ(unquoted("#SBATCH --error="), pattern_dir + "/logs/%x-%A_%a.err");
  EXPECT_EQ(unquoted("#SBATCH --chdir="), dir.string());
  EXPECT_TRUE(fs::is_directory(dir / "logs")) << "Slurm does not make the log folder";
  for (int id = 0; id < 3; ++id) {
    const auto r = run_scheduled({"bash", script.string()},
                                 {{"SLURM_ARRAY_TASK_ID", std::to_string(id)},
                                  {"SLURM_ARRAY_TASK_MIN", "0"},
                                  {"SLURM_ARRAY_TASK_MAX", "2"},
                                  {"SLURM_ARRAY_TASK_STEP", "1"},
                                  {"SLURM_ARRAY_TASK_COUNT", "3"}},
                                 dir.parent_path());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("shard " + std::to_string(id + 1) + "/3 from the Slurm job array task"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(slurp(dir / "scenario.toml").empty(), false);
  // A permanent status passes through the script's retry loop at once: one attempt, status 2.
  const auto stray = run_scheduled({"bash", script.string()},
                                   {{"SLURM_ARRAY_TASK_ID", "3"},
                                    {"SLURM_ARRAY_TASK_MIN", "0"},
                                    {"SLURM_ARRAY_TASK_COUNT", "3"}},
                                   dir.parent_path());
  EXPECT_EQ(stray.status, 2) << stray.err;
  EXPECT_EQ(stray.err_lines().size(), 1U) << stray.err;
  EXPECT_NE(stray.err.find("SLURM_ARRAY_TASK_ID=3 is not a task of the array"), std::string::npos)
      << stray.err;
  expect_merge_gives_the_whole_sweep(dir);
}

TEST_F(SweepSchedulerJobs, CondorProcessesRunFromTheSubmitFileMergeToTheUnshardedSweep) {
  const fs::path dir = emit("condor", {"--retries", "2"});
  const std::string submit = slurp(dir / "backoff-sweep.sub");
  // No text of the user's in the submit file: HTCondor's quoting and $() macros never see one.
  EXPECT_EQ(submit.find("pwned"), std::string::npos) << submit;
  EXPECT_EQ(line_value(submit, R"(max_retries\s*=\s*)"), "2") << submit;
  EXPECT_EQ(line_value(submit, R"(success_exit_code\s*=\s*)"), "0") << submit;
  EXPECT_NE(line_value(submit, R"(retry_until\s*=\s*)").find("ExitCode == 2"), std::string::npos)
      << submit;
  const std::string executable = line_value(submit, R"(executable\s*=\s*)");
  const std::string environment = line_value(submit, R"(environment\s*=\s*)");
  ASSERT_EQ(line_value(submit, "queue "), "3") << submit;
  ASSERT_TRUE(environment.size() > 2 && environment.front() == '"' && environment.back() == '"')
      << environment;
  for (int process = 0; process < 3; ++process) {
    // HTCondor's new-style environment: "NAME=VALUE NAME=VALUE", $(Process) expanded.
    env_vars env;
    std::string words = std::regex_replace(environment.substr(1, environment.size() - 2),
                                           std::regex(R"(\$\(Process\))"), std::to_string(process));
    std::istringstream in(words);
    for (std::string word; in >> word;) {
      const auto eq = word.find('=');
      ASSERT_NE(eq, std::string::npos) << word;
      env[word.substr(0, eq)] = word.substr(eq + 1);
    }
    // The executable is relative to the folder condor_submit runs in, which is the job's.
    const auto r = run_scheduled({"./" + executable}, env, dir);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("shard " + std::to_string(process + 1) + "/3"), std::string::npos)
        << r.err;
  }
  EXPECT_TRUE(fs::is_directory(dir / "logs"));
  expect_merge_gives_the_whole_sweep(dir);
}

// The pods as the kubelet would start them: the claim is a local folder at the mount path, the
// ConfigMap's scenario.toml a file written from the YAML.
TEST_F(SweepSchedulerJobs, KubernetesIndexedPodsRunTheJobsCommandMergeToTheUnshardedSweep) {
  const fs::path volume = *scratch_ / "volume" / hostile_folder;
  const fs::path dir =
      emit("k8s", {"--image", "registry.example/backoff:1", "--executable", BACKOFF_CLI_PATH,
                   "--retries", "4", "--mount-path", volume.string()});
  const std::string yaml = slurp(dir / "backoff-sweep-job.yaml");
  EXPECT_EQ(line_value(yaml, R"(\s*completionMode: )"), "Indexed");
  EXPECT_EQ(line_value(yaml, R"(\s*backoffLimitPerIndex: )"), "4");
  EXPECT_EQ(line_value(yaml, R"(\s*- action: )"), "FailIndex");
  EXPECT_EQ(line_value(yaml, R"(\s*values: )"), "[2, 126, 127]");
  EXPECT_EQ(line_value(yaml, R"(\s*restartPolicy: )"), "Never");
  // One fresh name per emit, for the Job and its ConfigMap (created together by one file).
  std::smatch name;
  ASSERT_TRUE(
      std::regex_search(yaml, name, std::regex(R"re(\n  name: "(backoff-sweep-[0-9a-f]{8})"\n)re")))
      << yaml;
  const std::string job = name[1].str();
  EXPECT_NE(yaml.find("kind: ConfigMap\nmetadata:\n  name: \"" + job + "-scenario\""),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("configMap:\n            name: \"" + job + "-scenario\""), std::string::npos);
  // The scenario travels in the ConfigMap, exactly (a JSON string, which YAML reads back).
  const std::string scenario =
      nlohmann::json::parse(line_value(yaml, R"(\s*scenario.toml: )")).get<std::string>();
  EXPECT_EQ(scenario, slurp(dir / "scenario.toml"));
  EXPECT_EQ(nlohmann::json::parse(line_value(yaml, R"(\s*mountPath: )")).get<std::string>(),
            volume.string());
  const fs::path map_file = *scratch_ / "configmap" / "scenario.toml";
  fs::create_directories(map_file.parent_path());
  { std::ofstream(map_file, std::ios::binary) << scenario; }
  auto command =
      nlohmann::json::parse(line_value(yaml, R"(\s*command: )")).get<std::vector<std::string>>();
  ASSERT_EQ(line_value(yaml, R"(\s*completions: )"), "3");
  ASSERT_GE(command.size(), 3U);
  EXPECT_NE(std::find(command.begin(), command.end(), hostile_description), command.end());
  ASSERT_EQ(command[2], "/etc/backoff-sweep/scenario.toml");
  command[2] = map_file.string();
  for (int index = 0; index < 3; ++index) {
    const auto r = run_scheduled(command, {{"JOB_COMPLETION_INDEX", std::to_string(index)}},
                                 dir.parent_path());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("shard " + std::to_string(index + 1) + "/3 from the Kubernetes"),
              std::string::npos)
        << r.err;
  }
  EXPECT_TRUE(fs::exists(volume / job / "shards" / "shard-3-of-3.json"));
  EXPECT_FALSE(fs::exists(dir / "shards"))
      << "the shards are on the claim, not where it was emitted";
  // The printed merge reads from the claim, as the merge Job's pod runs it.
  const std::string merge_yaml = slurp(dir / "backoff-sweep-merge.yaml");
  const auto merge = nlohmann::json::parse(line_value(merge_yaml, R"(\s*command: )"))
                         .get<std::vector<std::string>>();
  const std::vector<std::string> expected{BACKOFF_CLI_PATH, "sweep",
                                          "--merge",        (volume / job / "shards").string(),
                                          "--out",          (volume / job / "merged").string()};
  EXPECT_EQ(merge, expected);
  expect_merge_gives_the_whole_sweep(dir, volume / job / "merged");
  // A second emit is a second Job: another name, another folder on the claim.
  const fs::path again = emit("k8s", {"--image", "i", "--mount-path", volume.string()});
  std::smatch second;
  const std::string again_yaml = slurp(again / "backoff-sweep-job.yaml");
  ASSERT_TRUE(std::regex_search(again_yaml, second,
                                std::regex(R"re(\n  name: "(backoff-sweep-[0-9a-f]{8})"\n)re")));
  EXPECT_NE(second[1].str(), job);
}

// AWS Batch has no job file of ours (a job definition is JSON the user registers), only the
// variables: three array children, then the merge.
TEST_F(SweepSchedulerJobs, AwsBatchArrayChildrenMergeToTheUnshardedSweep) {
  const fs::path dir = *scratch_ / "aws";
  for (int index = 0; index < 3; ++index) {
    const auto r = backoff_scheduled(
        sweep_args({"--shard", "auto", "--out", (dir / "shards").string(), "--no-progress"}),
        {{"AWS_BATCH_JOB_ARRAY_INDEX", std::to_string(index)}, {"AWS_BATCH_JOB_ARRAY_SIZE", "3"}});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  // A shard carries what the merged result shows beside the figures (report.html: the [about]
  // table, the scenario's text and overrides), as the unsharded run has them.
  const auto shard = nlohmann::json::parse(slurp(dir / "shards" / "shard-2-of-3.json"));
  EXPECT_EQ(shard.at("about").at("description"), R"(it's $(touch pwned) `touch pwned` \ "q" #)");
  const auto sets = shard.at("inputs").at("sets").get<std::vector<std::string>>();
  EXPECT_EQ(sets.back(), hostile_description);
  EXPECT_FALSE(shard.at("inputs").at("scenario_toml").get<std::string>().empty());
  merge_command_ = shell_quote(BACKOFF_CLI_PATH) + " sweep --merge " +
                   shell_quote((dir / "shards").string()) + " --out " +
                   shell_quote((dir / "merged").string());
  expect_merge_gives_the_whole_sweep(dir);
}

// A rerun (a retry, a requeue, the array submitted again) skips a shard written whole for the
// same scenario; a half-written, foreign or temporary file is never taken for one.
TEST(SweepSchedulerRerun, SkipsACompleteShardAndRerunsAnythingElse) {
  const backoff::test::test_scratch scratch("sweep-scheduler");
  const fs::path dir = scratch / "shards";
  const fs::path file = dir / "shard-2-of-3.json";
  const env_vars task{{"BACKOFF_SHARD_INDEX", "1"}, {"BACKOFF_SHARD_COUNT", "3"}};
  const auto shard = [&](std::vector<std::string> more = {}) {
    more.insert(more.end(), {"--shard", "auto", "--out", dir.string(), "--no-progress"});
    return backoff_scheduled(sweep_args(more), task);
  };
  // A temporary left by a killed writer is not the shard.
  fs::create_directories(dir);
  {
    std::ofstream(dir / ".shard-2-of-3.json.backoff-tmp-1")
        << R"({"format": "backoff-sweep-shard/2")";
  }
  const auto first = shard();
  ASSERT_EQ(first.status, 0) << first.err;
  const std::string written = slurp(file);
  ASSERT_FALSE(written.empty());

  const auto again = shard();
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("shard 2/3 skipped: already complete in"), std::string::npos)
      << again.err;
  EXPECT_EQ(slurp(file), written) << "a skipped shard is left as it was";

  // Cut in half (as a copy interrupted on the way would leave it): run again, whole again.
  { std::ofstream(file, std::ios::trunc) << written.substr(0, written.size() / 2); }
  const auto cut = shard();
  EXPECT_EQ(cut.status, 0) << cut.err;
  EXPECT_NE(cut.err.find("is not this shard's complete output"), std::string::npos) << cut.err;
  EXPECT_EQ(cut.err.find("skipped"), std::string::npos) << cut.err;
  auto runs = [](const std::string& text) { return nlohmann::json::parse(text).at("runs"); };
  EXPECT_EQ(runs(slurp(file)), runs(written));

  // Another seed is another sweep: its shard replaces this one, it is not skipped.
  const auto other = shard({"--seed", "9"});
  EXPECT_EQ(other.status, 0) << other.err;
  EXPECT_NE(other.err.find("of another sweep"), std::string::npos) << other.err;
  EXPECT_NE(runs(slurp(file)), runs(written));
}

struct bad_environment {
  env_vars env;
  std::vector<std::string> flags;
  std::string expected;
};

class SweepSchedulerRejects : public testing::TestWithParam<bad_environment> {};

// The scenario does not exist: a run that got past the environment would fail later, on it.
TEST_P(SweepSchedulerRejects, TheEnvironmentWithOneLineAndExitTwo) {
  std::vector<std::string> args{"sweep", "no-such-scenario", "--shard", "auto", "--out", "x"};
  args.insert(args.end(), GetParam().flags.begin(), GetParam().flags.end());
  const auto r = backoff_scheduled(args, GetParam().env);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(GetParam().expected), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find("no-such-scenario"), std::string::npos) << "checked before the scenario";
}

const env_vars slurm_16{{"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "16"}};
env_vars slurm_task(const std::string& id, env_vars more = slurm_16) {
  more["SLURM_ARRAY_TASK_ID"] = id;
  return more;
}

INSTANTIATE_TEST_SUITE_P(
    BadEnvironment, SweepSchedulerRejects,
    testing::Values(
        bad_environment{{}, {}, "--shard auto: no shard index in the environment"},
        bad_environment{
            slurm_task("abc"), {}, R"(SLURM_ARRAY_TASK_ID="abc" is not a whole number)"},
        bad_environment{slurm_task("-1"), {}, "is not a whole number from 0 to 4294967295"},
        bad_environment{slurm_task(" 3"), {}, "is not a whole number"},
        bad_environment{slurm_task("0x3"), {}, "is not a whole number"},
        bad_environment{slurm_task("3.0"), {}, "is not a whole number"},
        bad_environment{slurm_task(""), {}, R"(SLURM_ARRAY_TASK_ID="" is not a whole number)"},
        bad_environment{slurm_task("1\n2"), {}, R"(SLURM_ARRAY_TASK_ID="1\n2" is not)"},
        bad_environment{slurm_task("99999999999999999999999"), {}, "is not a whole number"},
        bad_environment{slurm_task("4294967296"), {}, "is not a whole number"},
        bad_environment{slurm_task("17"), {}, "SLURM_ARRAY_TASK_ID=17 is not a task of the array"},
        bad_environment{slurm_task("0"), {}, "SLURM_ARRAY_TASK_ID=0 is not a task of the array"},
        bad_environment{slurm_task("3", {{"SLURM_ARRAY_TASK_MIN", "1"}}),
                        {},
                        "SLURM_ARRAY_TASK_COUNT is not set (needed with SLURM_ARRAY_TASK_ID)"},
        bad_environment{
            slurm_task("3", {{"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "0"}}),
            {},
            "must be at least 1"},
        // --array=1-99:2 is tasks 1, 3, ..., 99: 4 is none of them.
        bad_environment{slurm_task("4", {{"SLURM_ARRAY_TASK_MIN", "1"},
                                         {"SLURM_ARRAY_TASK_MAX", "99"},
                                         {"SLURM_ARRAY_TASK_STEP", "2"},
                                         {"SLURM_ARRAY_TASK_COUNT", "50"}}),
                        {},
                        "SLURM_ARRAY_TASK_ID=4 is not a task of the array"},
        // --array=0,5,7: no evenly stepped range.
        bad_environment{slurm_task("5", {{"SLURM_ARRAY_TASK_MIN", "0"},
                                         {"SLURM_ARRAY_TASK_MAX", "7"},
                                         {"SLURM_ARRAY_TASK_STEP", "1"},
                                         {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                        {},
                        "the array is not one evenly stepped range"},
        bad_environment{slurm_task("3"),
                        {"--shard-count", "8"},
                        "SLURM_ARRAY_TASK_COUNT=16 but --shard-count 8"},
        bad_environment{{{"JOB_COMPLETION_INDEX", "0"}}, {}, "add --shard-count N"},
        bad_environment{{{"JOB_COMPLETION_INDEX", "3"}},
                        {"--shard-count", "3"},
                        "JOB_COMPLETION_INDEX=3 is past the last shard (3 shards, from 0)"},
        bad_environment{
            {{"JOB_COMPLETION_INDEX", "+1"}}, {"--shard-count", "3"}, "is not a whole number"},
        bad_environment{{{"AWS_BATCH_JOB_ARRAY_INDEX", "1"}, {"AWS_BATCH_JOB_ARRAY_SIZE", "0"}},
                        {},
                        "AWS_BATCH_JOB_ARRAY_SIZE=0: a sweep has at least one shard"},
        bad_environment{{{"AWS_BATCH_JOB_ARRAY_INDEX", "1"}, {"AWS_BATCH_JOB_ARRAY_SIZE", "4"}},
                        {"--shard-count", "3"},
                        "AWS_BATCH_JOB_ARRAY_SIZE=4 but --shard-count 3"},
        bad_environment{{{"BACKOFF_SHARD_INDEX", "0"}}, {}, "set BACKOFF_SHARD_COUNT or add"},
        bad_environment{{{"SLURM_ARRAY_TASK_ID", "1"}, {"JOB_COMPLETION_INDEX", "0"}},
                        {"--shard-count", "16"},
                        "more than one scheduler's shard index is set: SLURM_ARRAY_TASK_ID"},
        bad_environment{{{"AWS_BATCH_JOB_ARRAY_INDEX", "0"}, {"BACKOFF_SHARD_INDEX", "0"}},
                        {"--shard-count", "2"},
                        "more than one scheduler's shard index is set"}));

// What --shard auto makes of the variables it accepts (the scenario then fails: nothing runs).
TEST(SweepSchedulerAuto, MapsEachSchedulersIndexToAOneBasedShard) {
  struct accepted {
    env_vars env;
    std::vector<std::string> flags;
    std::string shard;
  };
  const std::vector<accepted> accepted_cases{
      {slurm_task("1"), {}, "shard 1/16"},
      {slurm_task("16"), {"--shard-count", "16"}, "shard 16/16"},
      {slurm_task("007"), {}, "shard 7/16"},
      {slurm_task("0", {{"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}),
       {},
       "shard 1/4"},
      // --array=1-99:2: task 5 is the third.
      {slurm_task("5", {{"SLURM_ARRAY_TASK_MIN", "1"},
                        {"SLURM_ARRAY_TASK_MAX", "99"},
                        {"SLURM_ARRAY_TASK_STEP", "2"},
                        {"SLURM_ARRAY_TASK_COUNT", "50"}}),
       {},
       "shard 3/50"},
      {{{"JOB_COMPLETION_INDEX", "0"}}, {"--shard-count", "5"}, "shard 1/5"},
      {{{"AWS_BATCH_JOB_ARRAY_INDEX", "9"}, {"AWS_BATCH_JOB_ARRAY_SIZE", "10"}}, {}, "shard 10/10"},
      {{{"BACKOFF_SHARD_INDEX", "2"}}, {"--shard-count", "3"}, "shard 3/3"},
  };
  for (const auto& c : accepted_cases) {
    std::vector<std::string> args{"sweep", "no-such-scenario", "--shard", "auto", "--out", "x"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto r = backoff_scheduled(args, c.env);
    EXPECT_EQ(r.status, 2) << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 2U) << r.err;
    EXPECT_NE(lines[0].find(c.shard + " from the "), std::string::npos) << r.err;
    EXPECT_NE(lines[1].find("no-such-scenario"), std::string::npos) << r.err;
  }
}

// What a job file cannot carry is refused, in one line, before anything is written.
TEST(SweepSchedulerEmit, RefusesTextsAJobFileCannotCarry) {
  const backoff::test::test_scratch scratch("sweep-scheduler");
  struct refused {
    std::vector<std::string> args;
    std::string expected;
  };
  const fs::path newline = scratch / "a\nb";
  const std::vector<refused> refused_cases{
      {{"--emit", "slurm", "--shards", "2", "--out", newline.string()}, R"(the output folder ")"},
      {{"--emit", "k8s", "--shards", "2", "--image", "i", "--out", (scratch / "bad\xff").string()},
       "contains bytes that are not UTF-8"},
      {{"--emit", "condor", "--shards", "2", "--set", "about.claim=\"a\tb\"", "--out",
        (scratch / "tab").string()},
       R"(--set "about.claim="a\tb"" contains a control character)"},
      {{"--emit", "k8s", "--shards", "2", "--out", (scratch / "k").string()}, "needs --image"},
      {{"--emit", "slurm", "--shards", "2", "--out", (scratch / "back\\slash").string()},
       "contains a backslash, which turns off every %A and %a of a Slurm log file name"},
      {{"--emit", "slurm", "--shards", "2", "--job-name", "Bad_Name", "--out",
        (scratch / "n").string()},
       "expected a DNS-1123 label"},
      {{"--emit", "slurm", "--out", (scratch / "s").string()},
       "--emit needs a scenario, --shards N"},
      {{"--emit", "slurm", "--shards", "2", "--shard", "1/2", "--out", (scratch / "s").string()},
       "takes no --shard"},
      {{"--emit", "slurm", "--shards", "2", "--image", "i", "--out", (scratch / "s").string()},
       "--image goes with --emit k8s"},
      {{"--shards", "2", "--out", (scratch / "s").string()}, "--shards goes with --emit"},
  };
  for (const auto& c : refused_cases) {
    std::vector<std::string> args{"sweep", "outage-tipping"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // Nothing was written: no folder made for a refused job.
  for (const auto& entry : fs::directory_iterator(scratch.dir())) {
    ADD_FAILURE() << "written: " << entry.path();
  }
  // A scenario that is not a sweep fails at emit time, not in N tasks.
  const auto plain = run_cli({"sweep", "outage-recovery", "--emit", "slurm", "--shards", "2",
                              "--out", (scratch / "plain").string()});
  EXPECT_EQ(plain.status, 2);
  EXPECT_NE(plain.err.find("not a sweep"), std::string::npos) << plain.err;
}

}  // namespace
