// SPDX-License-Identifier: Apache-2.0
// `backoff sweep` as a cluster user runs it: shards on separate machines, merged into exactly the
// outputs of one unsharded run; and every misuse is one line with exit status 2.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
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

// Each --set takes one key=value, so the scenario may come after them (before, the first --set
// swallowed it).
TEST(SweepCli, EachSetTakesOneAssignmentAndTheScenarioFollows) {
  const backoff::test::test_scratch scratch("sweep");
  const auto r = run_cli(
      with({"sweep", "--set", "sweep.outage.duration=[\"2s\"]", "--set", "replications=1", "--set",
            "run.duration=\"60s\"", "outage-tipping", "--out", (scratch / "out").string()},
           {"--no-progress"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(scratch / "out" / "summary.json"));
  EXPECT_EQ(doc["scenario"], "outage-tipping");
}

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

// Every field of a shard is checked against the scenario it carries before anything is drawn
// or written: before, a last point with `params: []` crashed `--merge --plot` (SIGSEGV), and a
// number whose text was not one aborted in std::stod with a temporary file left behind.
TEST(SweepCli, HostileShardsAreRefusedBeforeAnyOutput) {
  const backoff::test::test_scratch scratch("sweep");
  const auto dirs = run_shards(scratch.dir(), "one", 1, "1");
  const auto doc = nlohmann::json::parse(slurp(dirs[0] / "shard-1-of-1.json"));
  struct forgery {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<forgery> forgeries{
      {"a last point without params",
       [](nlohmann::json& d) { d["points"].back()["params"] = nlohmann::json::array(); },
       "point 3 does not give one value of each of sweep_keys"},
      {"a number that is not one",
       [](nlohmann::json& d) {
         d["points"][1]["params"][0]["type"] = "number";
         d["points"][1]["params"][0]["text"] = "five";
       },
       "outage.duration = \"five\" is not a number"},
      {"an integer with a fraction",
       [](nlohmann::json& d) {
         d["points"][0]["params"][0]["type"] = "integer";
         d["points"][0]["params"][0]["text"] = "2.5";
       },
       "is not a integer"},
      {"a value the scenario does not give",
       [](nlohmann::json& d) {
         d["points"][0]["params"][0]["text"] = "3s";
         d["points"][0]["params"][0]["toml"] = "\"3s\"";
       },
       "gives other values (point 1)"},
      {"another axis", [](nlohmann::json& d) { d["sweep_keys"][0] = "clients"; },
       "does not give one value of each of sweep_keys"},
      {"a strategy twice", [](nlohmann::json& d) { d["strategies"][1] = d["strategies"][0]; },
       "strategies: expected distinct names"},
      {"a negative count", [](nlohmann::json& d) { d["runs"][0]["summary"]["operations"] = -1; },
       "operations: expected a count"},
      {"a latency that is text",
       [](nlohmann::json& d) { d["runs"][0]["summary"]["latency_s"][3] = "fast"; },
       "latency_s: expected a number"},
      {"a run given twice", [](nlohmann::json& d) { d["runs"][1] = d["runs"][0]; },
       "a run given twice"},
      {"other overrides", [](nlohmann::json& d) { d["inputs"]["sets"] = nlohmann::json::array(); },
       "the scenario it carries has fingerprint"},
      {"a scenario that does not load",
       [](nlohmann::json& d) { d["inputs"]["scenario_toml"] = "model = 3"; },
       "the scenario it carries does not load"},
  };
  for (const auto& f : forgeries) {
    const fs::path dir = scratch / "forged";
    const fs::path out = scratch / "merged";
    fs::remove_all(dir);
    fs::remove_all(out);
    fs::create_directories(dir);
    auto forged = doc;
    f.edit(forged);
    std::ofstream(dir / "shard-1-of-1.json") << forged.dump();
    const auto r = run_cli({"sweep", "--merge", dir.string(), "--out", out.string(), "--plot"});
    EXPECT_EQ(r.status, 2) << f.what << ": " << r.err;
    EXPECT_NE(r.err.find(f.expected), std::string::npos) << f.what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << f.what << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << f.what << ": an output was written";
  }
}

// A shard's runs are converted one by one as they are parsed, so what the merge allocates
// follows what the file holds: before, 3,000,000 empty run entries behind a claim of 3,000,000
// replications made it parse them all and lay out a slot of ~344 bytes for each (over 1 GiB)
// before it read the first.
TEST(SweepCli, TinyRunEntriesAreRefusedAtTheFirstWithoutAllocatingForTheRest) {
  const backoff::test::test_scratch scratch("sweep");
  const auto dirs = run_shards(scratch.dir(), "one", 1, "1");
  auto doc = nlohmann::json::parse(slurp(dirs[0] / "shard-1-of-1.json"));
  constexpr std::size_t entries = 3'000'000;
  doc["points"] = nlohmann::json::array({doc["points"][0]});
  doc["strategies"] = nlohmann::json::array({doc["strategies"][0]});
  doc["replications"] = entries;
  doc["runs"] = nlohmann::json::array();
  std::string text = doc.dump();
  std::string runs = "[";
  for (std::size_t i = 0; i < entries; ++i) runs += i == 0 ? "{}" : ",{}";
  runs += "]";
  text.replace(text.find("\"runs\":[]"), 9, "\"runs\":" + runs);
  const fs::path dir = scratch / "tiny";
  fs::create_directories(dir);
  { std::ofstream(dir / "shard-1-of-1.json") << text; }
  const auto r = run_cli({"sweep", "--merge", dir.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("malformed shard file"), std::string::npos) << r.err;
  struct rusage usage {};
  ASSERT_EQ(::getrusage(RUSAGE_CHILDREN, &usage), 0);
  // ru_maxrss (KiB) is the largest child's: the merge, or the small sweep before it.
  EXPECT_LT(usage.ru_maxrss, 256 * 1024) << "the merge grew to " << usage.ru_maxrss << " KiB";
}

// The memory guard runs while shards are merged: a merge over --memory-limit stops there with
// one line (before, the limit was not looked at by --merge) and writes nothing.
TEST(SweepCli, TheMemoryLimitHoldsWhileMerging) {
  const backoff::test::test_scratch scratch("sweep");
  const auto dirs = run_shards(scratch.dir(), "part", 2, "1");
  const fs::path out = scratch / "merged";
  auto args = merge_args(dirs, out);
  args.insert(args.end(), {"--memory-limit", "1MiB"});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("merging 2 shard files: the process uses"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after 1 of them, over the limit of 1 MiB"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
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
