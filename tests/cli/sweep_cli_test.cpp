// SPDX-License-Identifier: Apache-2.0
// `backoff sweep` as a cluster user runs it: shards on separate machines, merged into exactly the
// outputs of one unsharded run; and every misuse is one line with exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::run_cli;
using backoff::test::slurp;

// A small_sweep sweep: 3 pause lengths x 2 strategies x 2 replications = 12 runs.
const std::vector<std::string> small_sweep{
    "--set",        "replications=2",
    "--set",        "run.duration=\"120s\"",
    "--set",        "sweep.outage.duration=[\"2s\", \"5s\", \"12s\"]",
    "--no-progress"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

nlohmann::json without_wall_time(const fs::path& summary) {
  auto doc = nlohmann::json::parse(slurp(summary));
  doc["run"].erase("wall_s");
  doc["run"].erase("events_per_s");
  return doc;
}

// Runs the sweep in `count` shards, each in its own folder under `base` (as on separate machines).
std::vector<fs::path> run_shards(const fs::path& base, const std::string& name, int count,
                                 const std::string& threads) {
  std::vector<fs::path> dirs;
  for (int i = 1; i <= count; ++i) {
    const fs::path dir = base / (name + "-" + std::to_string(i));
    const auto r =
        run_cli(with({"sweep", "outage-tipping", "--out", dir.string(), "--shard",
                      std::to_string(i) + "/" + std::to_string(count), "--threads", threads},
                     small_sweep));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::exists(
        dir / ("shard-" + std::to_string(i) + "-of-" + std::to_string(count) + ".json")));
    dirs.push_back(dir);
  }
  return dirs;
}

std::vector<std::string> merge_args(const std::vector<fs::path>& dirs, const fs::path& out) {
  std::vector<std::string> args{"sweep", "--merge"};
  for (const auto& d : dirs) args.push_back(d.string());
  args.insert(args.end(), {"--out", out.string()});
  return args;
}

TEST(SweepCli, MergedShardsGiveExactlyTheUnshardedOutputs) {
  const backoff::test::test_scratch scratch("sweep");
  const fs::path whole = scratch / "whole";
  const auto w = run_cli(with({"sweep", "outage-tipping", "--out", whole.string()}, small_sweep));
  ASSERT_EQ(w.status, 0) << w.err;

  for (const int count : {3, 20}) {  // 20 shards for 12 runs: some shards are empty
    auto dirs =
        run_shards(scratch.dir(), "s" + std::to_string(count), count, count == 3 ? "1" : "2");
    std::reverse(dirs.begin(), dirs.end());  // the order of the folders does not matter
    const fs::path merged = scratch / ("merged" + std::to_string(count));
    const auto m = run_cli(merge_args(dirs, merged));
    ASSERT_EQ(m.status, 0) << m.err;
    EXPECT_EQ(slurp(merged / "sweep.csv"), slurp(whole / "sweep.csv")) << count;
    EXPECT_EQ(without_wall_time(merged / "summary.json"), without_wall_time(whole / "summary.json"))
        << count;
    EXPECT_EQ(m.out, w.out) << "the table on stdout";
  }
}

TEST(SweepCli, RefusesAnIncompleteRepeatedOrForeignSetOfShards) {
  const backoff::test::test_scratch scratch("sweep");
  const auto dirs = run_shards(scratch.dir(), "bad", 3, "2");
  const fs::path out = scratch / "bad-out";

  const auto missing = run_cli(merge_args({dirs[0], dirs[2]}, out));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("shard(s) 2 of 3 missing"), std::string::npos) << missing.err;

  const auto twice = run_cli(merge_args({dirs[0], dirs[1], dirs[1], dirs[2]}, out));
  EXPECT_EQ(twice.status, 2);
  EXPECT_NE(twice.err.find("shard 2/3 is also in"), std::string::npos) << twice.err;

  // The same slice of another sweep (another seed): not mixed in.
  const fs::path other = scratch / "other";
  ASSERT_EQ(run_cli(with({"sweep", "outage-tipping", "--out", other.string(), "--shard", "2/3",
                          "--seed", "9"},
                         small_sweep))
                .status,
            0);
  const auto foreign = run_cli(merge_args({dirs[0], other, dirs[2]}, out));
  EXPECT_EQ(foreign.status, 2);
  EXPECT_NE(foreign.err.find("a shard of another sweep"), std::string::npos) << foreign.err;
  for (const auto* r : {&missing, &twice, &foreign}) {
    EXPECT_EQ(std::count(r->err.begin(), r->err.end(), '\n'), 1) << r->err;
  }
  EXPECT_FALSE(fs::exists(out / "sweep.csv"));
}

struct sweep_misuse {
  std::vector<std::string> args;
  std::string expected;
};

class SweepCliRejects : public testing::TestWithParam<sweep_misuse> {};

TEST_P(SweepCliRejects, WithOneLineAndExitTwo) {
  const auto r = run_cli(GetParam().args);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(GetParam().expected), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Misuse, SweepCliRejects,
    testing::Values(
        sweep_misuse{{"sweep"}, "give a scenario"},
        sweep_misuse{{"sweep", "outage-recovery"}, "not a sweep"},
        sweep_misuse{{"sweep", "outage-tipping", "--shard", "1/3"}, "--shard needs --out"},
        sweep_misuse{{"sweep", "outage-tipping", "--shard", "0/3", "--out", "x"},
                     "between 1 and N"},
        sweep_misuse{{"sweep", "outage-tipping", "--shard", "4/3", "--out", "x"},
                     "between 1 and N"},
        sweep_misuse{{"sweep", "outage-tipping", "--shard", "3", "--out", "x"}, "expected I/N"},
        sweep_misuse{{"sweep", "outage-tipping", "--shard", "-1/3", "--out", "x"}, "expected I/N"},
        sweep_misuse{{"sweep", "outage-tipping", "--threads", "0"}, "--threads"},
        sweep_misuse{{"sweep", "outage-tipping", "--merge", "x"},
                     "--merge takes shard folders only"},
        sweep_misuse{{"sweep", "--merge", "/no/such/folder"},
                     "/no/such/folder: no such file or folder"},
        sweep_misuse{{"sweep", "no-such-scenario"}, "not a built-in scenario"},
        sweep_misuse{{"sweep", "outage-tipping", "--set", "replications=0"},
                     "replications: 0 is out of range"}));

TEST(SweepCli, AMalformedShardFileIsNamed) {
  const backoff::test::test_scratch scratch("sweep");
  const fs::path& dir = scratch.dir();
  { std::ofstream(dir / "shard-1-of-1.json") << R"({"format": "backoff-sweep-shard/2"})"; }
  const auto r = run_cli({"sweep", "--merge", dir.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("shard-1-of-1.json: malformed shard file"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A shard's claims are checked against the runs it holds before anything is allocated from them:
// before, `replications: 10^12` aborted with std::bad_alloc.
TEST(SweepCli, AShardClaimingAHugeGridIsRefusedBeforeAllocating) {
  const backoff::test::test_scratch scratch("sweep");
  const auto dirs = run_shards(scratch.dir(), "one", 1, "1");
  const fs::path real = dirs[0] / "shard-1-of-1.json";
  const auto doc = nlohmann::json::parse(backoff::test::slurp(real));
  struct lie {
    const char* key;
    nlohmann::json value;
    std::string expected;
  };
  const std::vector<lie> lies{
      {"replications", 1'000'000'000'000ULL,
       "malformed shard file: replications: expected a whole number from 1 to 4294967295"},
      {"replications", 4'000'000'000ULL,
       "3 points x 2 strategies x 4000000000 replications in 1 shards would give shard 1 "
       "24000000000 runs; it holds 12"},
      {"replications", -1, "replications: expected a whole number"},
      {"replications", 2.5, "replications: expected a whole number"},
  };
  for (const auto& l : lies) {
    const fs::path dir = scratch / "lie";
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto forged = doc;
    forged[l.key] = l.value;
    std::ofstream(dir / "shard-1-of-1.json") << forged.dump();
    const auto r = run_cli({"sweep", "--merge", dir.string()});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(l.expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // A split into four billion shards, one of them given: missing, not allocated.
  const fs::path dir = scratch / "count";
  fs::create_directories(dir);
  auto forged = doc;
  forged["shard"]["count"] = 4'000'000'000ULL;
  forged["runs"] = nlohmann::json::array({forged["runs"][0]});
  std::ofstream(dir / "shard-1-of-4000000000.json") << forged.dump();
  const auto r = run_cli({"sweep", "--merge", dir.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("shard(s) 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ... of 4000000000 missing"),
            std::string::npos)
      << r.err;
}

// A shard file is read only when it is a regular file of bounded size: before, a
// shard-1-of-1.json linked to /dev/zero hung the merge.
TEST(SweepCli, MergeReadsOnlyRegularShardFiles) {
  const backoff::test::test_scratch scratch("sweep");
  const fs::path dir = scratch / "devices";
  fs::create_directories(dir);
  fs::create_symlink("/dev/zero", dir / "shard-1-of-1.json");
  const auto r = run_cli({"sweep", "--merge", dir.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("shard-1-of-1.json: not a regular file: not a shard"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A file past the bound is refused by its size, unread (a sparse file: no disk used).
  const fs::path big = scratch / "big";
  fs::create_directories(big);
  { std::ofstream(big / "shard-1-of-1.json") << "{}"; }
  fs::resize_file(big / "shard-1-of-1.json", 300ULL << 20);
  const auto b = run_cli({"sweep", "--merge", big.string()});
  EXPECT_EQ(b.status, 2) << b.err;
  EXPECT_NE(b.err.find("larger than 256 MiB: not a shard"), std::string::npos) << b.err;
}

}  // namespace
