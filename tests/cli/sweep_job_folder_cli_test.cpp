// SPDX-License-Identifier: Apache-2.0
// What a Slurm user hit with `backoff sweep --emit`, with no scheduler at hand: a
// folder holding another sweep's shards is refused at emit, a merge refuses shards of another
// sweep than the one the folder's job runs, an array larger than the cluster's MaxArraySize (read
// from a stand-in `scontrol` on PATH) is refused, and Kubernetes' mount path and name are checked.
// tests/cluster/slurm_sweep.sh runs the same job on a real one-node Slurm.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

// Eight runs of a minute each: shards in a blink.
std::vector<std::string> folder_sweep(int replications, std::vector<std::string> more) {
  std::vector<std::string> args{
      "sweep", "outage-tipping",       "--set", "replications=" + std::to_string(replications),
      "--set", "run.duration=\"60s\"", "--set", "sweep.outage.duration=[\"2s\", \"5s\"]"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Runs backoff with `path` alone as PATH (a stand-in scontrol or none: never the machine's own).
cli_result run_with_only_path(const fs::path& path, const std::vector<std::string>& args) {
  std::string command = "exec env -u SLURM_CONF PATH=" + shell_quote(path.string()) + " " +
                        shell_quote(BACKOFF_CLI_PATH);
  for (const auto& a : args) command += " " + shell_quote(a);
  return run_captured(command);
}

// Runs every shard of an emitted job as its tasks would (the job's own command line).
void run_every_job_shard(const fs::path& dir, int replications, int shards) {
  for (int i = 1; i <= shards; ++i) {
    const auto r = run_cli(
        folder_sweep(replications, {"--shard", std::to_string(i) + "/" + std::to_string(shards),
                                    "--out", (dir / "shards").string(), "--no-progress"}));
    ASSERT_EQ(r.status, 0) << r.err;
  }
}

void write_test_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

TEST(SweepJobFolder, EmitRefusesAnotherSweepsShardsAndLeavesTheFolderAsItWas) {
  const backoff::test::test_scratch scratch("sweep-job-folder");
  const fs::path dir = scratch / "job";
  const auto emit = [&](int replications, int shards) {
    return run_cli(folder_sweep(replications, {"--emit", "slurm", "--shards",
                                               std::to_string(shards), "--out", dir.string()}));
  };
  ASSERT_EQ(emit(2, 2).status, 0);
  run_every_job_shard(dir, 2, 2);
  const std::string job = slurp(dir / "backoff-sweep.sbatch");
  const std::string record = slurp(dir / "backoff-sweep.json");
  EXPECT_NE(record.find("\"format\": \"backoff-sweep-job/1\""), std::string::npos) << record;
  // The same sweep again (a resubmission): its finished shards stay, to be skipped.
  const auto same = emit(2, 2);
  EXPECT_EQ(same.status, 0) << same.err;
  // Another sweep, and the same one split otherwise: refused, one line, nothing rewritten.
  const struct {
    int replications, shards;
    std::string expected;
  } refused[] = {
      {3, 2, "shard-1-of-2.json is a shard of another sweep (fingerprint "},
      {2, 4, "shard-1-of-2.json is a shard of this sweep split into 2, not 4"},
  };
  for (const auto& c : refused) {
    const auto r = emit(c.replications, c.shards);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1U) << r.err;
    EXPECT_NE(r.err.find("holds 2 of 2 shard files that this job's tasks would not write"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "no merge command for a job not written";
    EXPECT_EQ(slurp(dir / "backoff-sweep.sbatch"), job);
    EXPECT_EQ(slurp(dir / "backoff-sweep.json"), record);
  }
  // A file that is not a shard at all cannot be vouched for either.
  write_test_file(dir / "shards" / "shard-9-of-9.json", "{\"format\": \"something else\"}");
  const auto junk = emit(2, 2);
  EXPECT_EQ(junk.status, 2) << junk.err;
  EXPECT_NE(junk.err.find("shard-9-of-9.json cannot be read as a shard"), std::string::npos)
      << junk.err;
  // Emptied, the folder takes another sweep.
  fs::remove_all(dir / "shards");
  EXPECT_EQ(emit(3, 2).status, 0);
}

// The reported bug: shards of an earlier sweep merged silently into that sweep's outputs. Here
// the later sweep's job files were copied over the folder by hand (the emit itself refuses).
TEST(SweepJobFolder, MergeRefusesShardsOfAnotherSweepThanTheFolderRuns) {
  const backoff::test::test_scratch scratch("sweep-job-folder");
  const fs::path first = scratch / "first";
  const fs::path second = scratch / "second";
  ASSERT_EQ(run_cli(folder_sweep(2, {"--emit", "slurm", "--shards", "2", "--out", first.string()}))
                .status,
            0);
  run_every_job_shard(first, 2, 2);
  const auto clean = run_cli(
      {"sweep", "--merge", (first / "shards").string(), "--out", (first / "merged").string()});
  ASSERT_EQ(clean.status, 0) << clean.err;
  ASSERT_EQ(run_cli(folder_sweep(3, {"--emit", "slurm", "--shards", "2", "--out", second.string()}))
                .status,
            0);
  for (const char* file : {"scenario.toml", "backoff-sweep.json"}) {
    fs::copy_file(second / file, first / file, fs::copy_options::overwrite_existing);
  }
  const std::vector<std::vector<std::string>> inputs{
      {(first / "shards").string()},
      {(first / "shards" / "shard-1-of-2.json").string(),
       (first / "shards" / "shard-2-of-2.json").string()}};
  for (const auto& input : inputs) {
    std::vector<std::string> args{"sweep", "--merge"};
    args.insert(args.end(), input.begin(), input.end());
    args.insert(args.end(), {"--out", (first / "stale").string()});
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1U) << r.err;
    EXPECT_NE(r.err.find("holds shards of another sweep"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("scenario.toml with its overrides and seed"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(first / "stale")) << "nothing written for a refused merge";
  }
  // Shards gathered by hand, with no job folder around them, merge as before.
  fs::create_directories(scratch / "gathered");
  for (const auto& entry : fs::directory_iterator(first / "shards")) {
    fs::copy_file(entry.path(), scratch / "gathered" / entry.path().filename());
  }
  const auto gathered = run_cli({"sweep", "--merge", (scratch / "gathered").string()});
  EXPECT_EQ(gathered.status, 0) << gathered.err;
  EXPECT_EQ(gathered.out, clean.out);
}

// MaxArraySize from `scontrol show config` (a stand-in script prints the line Slurm prints):
// tasks 0 to N-1 need N <= MaxArraySize. No answer: Slurm's default 1001, with a note above it.
TEST(SweepJobFolder, SlurmArraysFitTheClustersMaxArraySize) {
  const backoff::test::test_scratch scratch("sweep-job-folder");
  const fs::path bin = scratch / "bin";
  const auto scontrol = [&](const std::string& body) {
    write_test_file(bin / "scontrol", "#!/bin/sh\n" + body + "\n");
    fs::permissions(bin / "scontrol", fs::perms::owner_all);
  };
  const auto emit = [&](int shards, const std::string& folder) {
    return run_with_only_path(
        bin, folder_sweep(2, {"--emit", "slurm", "--shards", std::to_string(shards), "--out",
                              (scratch / folder).string()}));
  };
  scontrol(
      "[ \"$1 $2\" = 'show config' ] || exit 1\n"
      "printf 'Configuration data as of 2026-11-29T10:00:00\\nMaxArraySize            = 9\\n"
      "MaxJobCount             = 10000\\n'");
  const auto fits = emit(9, "nine");
  EXPECT_EQ(fits.status, 0) << fits.err;
  EXPECT_NE(slurp(scratch / "nine" / "backoff-sweep.sbatch").find("#SBATCH --array=0-8\n"),
            std::string::npos);
  const auto over = emit(10, "ten");
  EXPECT_EQ(over.status, 2) << over.err;
  EXPECT_EQ(over.err_lines().size(), 1U) << over.err;
  EXPECT_NE(over.err.find("--shards 10 needs array tasks 0 to 9, but this cluster's MaxArraySize "
                          "is 9 (scontrol show config: tasks 0 to 8); give --shards 9 or fewer"),
            std::string::npos)
      << over.err;
  EXPECT_FALSE(fs::exists(scratch / "ten")) << "nothing written for a refused job";

  // scontrol fails (no controller): Slurm's default, a note above it, the job still written.
  scontrol("echo 'slurm_load_ctl_conf error: Unable to contact slurm controller' >&2; exit 1");
  const auto quiet = emit(1001, "default");
  EXPECT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("note:"), std::string::npos) << quiet.err;
  const auto noted = emit(1500, "noted");
  EXPECT_EQ(noted.status, 0) << noted.err;
  EXPECT_NE(noted.err.find("past Slurm's default MaxArraySize of 1001 (the cluster's own could "
                           "not be read: scontrol show config exited 1)"),
            std::string::npos)
      << noted.err;
  EXPECT_TRUE(fs::exists(scratch / "noted" / "backoff-sweep.sbatch"));
  // No scontrol at all (PATH without it).
  fs::remove(bin / "scontrol");
  const auto absent = emit(1500, "absent");
  EXPECT_EQ(absent.status, 0) << absent.err;
  EXPECT_NE(absent.err.find("scontrol is not on PATH"), std::string::npos) << absent.err;
}

TEST(SweepJobFolder, KubernetesMountPathsAndNamesAreChecked) {
  const backoff::test::test_scratch scratch("sweep-job-folder");
  struct refused {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::string long_name(48, 'a');
  const std::vector<refused> refused_k8s{
      {{"--emit", "k8s", "--image", "i", "--mount-path", "relative"}, "--mount-path \"relative\""},
      {{"--emit", "k8s", "--image", "i", "--mount-path", "/data/../etc"}, "without '..'"},
      {{"--emit", "k8s", "--image", "i", "--mount-path", "/"}, "not /,"},
      {{"--emit", "k8s", "--image", "i", "--mount-path", "/etc/backoff-sweep"},
       "not /etc/backoff-sweep"},
      {{"--emit", "k8s", "--image", "i", "--job-name", long_name}, "at most 47 characters"},
      {{"--emit", "slurm", "--mount-path", "/data"}, "--mount-path goes with --emit k8s"},
      {{"--emit", "condor", "--volume-claim", "v"}, "--volume-claim goes with --emit k8s"},
  };
  for (const auto& c : refused_k8s) {
    std::vector<std::string> more = c.args;
    more.insert(more.end(), {"--shards", "2", "--out", (scratch / "k").string()});
    const auto r = run_cli(folder_sweep(2, more));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1U) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(scratch / "k")) << "nothing written for a refused job";
  const auto longest =
      run_cli(folder_sweep(2, {"--emit", "k8s", "--image", "i", "--job-name", std::string(47, 'a'),
                               "--shards", "2", "--out", (scratch / "ok").string()}));
  EXPECT_EQ(longest.status, 0) << longest.err;
}

}  // namespace
