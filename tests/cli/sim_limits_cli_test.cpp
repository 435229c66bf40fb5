// SPDX-License-Identifier: Apache-2.0
// `backoff sim` and `backoff sweep` at their limits, as users meet them: a scenario too big for
// --memory-limit is refused in one line before it runs; Ctrl-C (SIGINT) or SIGTERM stops a long
// run, which writes its outputs marked partial and exits 130 or 143; whole runs are unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::process_probe;
using backoff::test::run_cli;
using backoff::test::slurp;

using backoff::test::catches;
using backoff::test::cpu_ticks;

// Waits (bounded) until `p` handles SIGINT and SIGTERM and has computed for a while since: a
// signal sent before the handlers are set would simply kill it (under ASan, loading a scenario
// can take longer than any fixed wait).
bool wait_until_busy(const process_probe& p) {
  for (int i = 0; i < 4000 && !(catches(p.pid(), SIGINT) && catches(p.pid(), SIGTERM)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!catches(p.pid(), SIGTERM)) return false;
  const long start = cpu_ticks(p.pid());
  for (int i = 0; i < 2000; ++i) {
    if (cpu_ticks(p.pid()) >= start + 20) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// A plain run that takes minutes: 10^5 operations against one slot, never giving up.
const std::vector<std::string> long_sim{"sim",
                                        "one-client-burst",
                                        "--no-progress",
                                        "--set",
                                        "workload.operations=100000",
                                        "--set",
                                        "workload.rate_per_s=1000000",
                                        "--set",
                                        "server.max_busy=1"};

TEST(SimLimitsCli, RefusesAScenarioOverTheLimitBeforeRunningIt) {
  const backoff::test::test_scratch scratch("limits");
  const fs::path out = scratch / "refuse";
  const auto r = run_cli({"sim", "one-client-burst", "--set", "workload.operations=100000000",
                          "--memory-limit", "2GiB", "--out", out.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("backoff sim: scenario 'one-client-burst' would need about"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(workload.operations = 100000000 in flight at once); the limit is 2.0 GiB "
                       "(--memory-limit)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));  // refused before anything was written
  EXPECT_TRUE(r.out.empty());
}

TEST(SimLimitsCli, RefusesASweepOverTheLimit) {
  const auto r = run_cli({"sweep", "aws-occ", "--set", "sweep.clients=[10, 5000000]", "--threads",
                          "2", "--memory-limit", "512MiB"});
  EXPECT_EQ(r.status, 1) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("clients = 5000000 clients in flight at once, on 2 worker threads"),
            std::string::npos)
      << r.err;
}

TEST(SimLimitsCli, ABadLimitIsAUsageError) {
  for (const char* bad : {"lots", "4XB", "-1G"}) {
    const auto r = run_cli({"sim", "mm1", "--memory-limit", bad});
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("backoff sim: --memory-limit: "), std::string::npos) << r.err;
  }
}

TEST(SimLimitsCli, SigintWritesAPartialSummaryAndExits130) {
  const backoff::test::test_scratch scratch("limits");
  const fs::path out = scratch / "sigint";
  auto args = long_sim;
  args.insert(args.end(), {"--out", out.string()});
  process_probe p(args);
  // The run has started once its clients.csv is begun (written from the first strategy on).
  for (int i = 0; i < 2000 && !backoff::test::clients_csv_begun(out); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(backoff::test::clients_csv_begun(out));
  p.signal(SIGINT);
  const auto r = p.wait(std::chrono::seconds(60));
  ASSERT_TRUE(r.finished);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("backoff sim: interrupted (SIGINT); partial outputs written to"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("partial: interrupted (SIGINT)"), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["reason"], "interrupted");
  EXPECT_EQ(doc["signal"], "SIGINT");
  EXPECT_TRUE(doc.contains("stopped_at_s"));
  EXPECT_TRUE(fs::exists(out / "timeseries.csv"));
  EXPECT_TRUE(fs::exists(out / "clients.csv"));
}

TEST(SimLimitsCli, SigtermStopsASweepWhichKeepsItsFinishedCells) {
  const backoff::test::test_scratch scratch("limits");
  const fs::path out = scratch / "sigterm";
  process_probe p({"sweep", "aws-occ", "--set", "replications=2000", "--set", "sweep.clients=[190]",
                   "--threads", "1", "--no-progress", "--out", out.string()});
  ASSERT_TRUE(wait_until_busy(p));
  p.signal(SIGTERM);
  const auto r = p.wait(std::chrono::seconds(60));
  ASSERT_TRUE(r.finished);
  EXPECT_TRUE(r.exited) << "killed by the signal: " << r.err;
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_NE(r.err.find("backoff sweep: interrupted (SIGTERM) after"), std::string::npos) << r.err;
  const auto doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["signal"], "SIGTERM");
  EXPECT_LT(doc["runs_done"].get<std::size_t>(), doc["runs"].get<std::size_t>());
  // The first cell is unfinished (2000 replications of 190 clients): marked, and not in sweep.csv.
  EXPECT_EQ(doc["points"][0]["strategies"][0]["partial"], true);
  const std::string csv = slurp(out / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1);
}

TEST(SimLimitsCli, WholeRunsAreTheSameWhateverTheLimit) {
  const backoff::test::test_scratch scratch("limits");
  const fs::path base = scratch / "same";
  for (const char* limit : {"none", "4GiB", ""}) {
    std::vector<std::string> args{"sim", "tick-burst", "--out", (base / limit).string()};
    if (*limit != '\0') args.insert(args.end(), {"--memory-limit", limit});
    const auto r = run_cli(args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("partial"), std::string::npos);
  }
  const auto summary = [&](const fs::path& p) {
    auto doc = nlohmann::json::parse(slurp(p / "summary.json"));
    doc["run"].erase("wall_s");
    doc["run"].erase("events_per_s");
    return doc;
  };
  for (const char* other : {"4GiB", ""}) {
    EXPECT_EQ(slurp(base / "none" / "clients.csv"), slurp(base / other / "clients.csv"));
    EXPECT_EQ(slurp(base / "none" / "timeseries.csv"), slurp(base / other / "timeseries.csv"));
    EXPECT_EQ(summary(base / "none"), summary(base / other));
    EXPECT_FALSE(summary(base / other).contains("partial"));
  }
}

TEST(SimLimitsCli, ARunStuckAtOneInstantExits1WithPartialOutputs) {
  // The case, with attempts bounded (so that validation lets it through) but by a
  // billion: 38.8 M attempts at t = 1 ms in 3 s before; the engine's limit stops it now.
  const backoff::test::test_scratch scratch("limits");
  const fs::path file = scratch / "spin.toml";
  std::ofstream(file) << "scenario = \"spin\"\nmodel = \"one-client-burst\"\n"
                         "[server]\nconnect = \"0s\"\nerror = \"0s\"\nmax_busy = 1\n"
                         "[[strategy]]\nname = \"none\"\npolicy = \"none\"\n"
                         "max_attempts = 1000000000\n";
  const fs::path out = scratch / "out";
  const auto r = run_cli(
      {"sim", file.string(), "--set", "run.max_events_per_instant=500000", "--out", out.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("backoff sim: scenario 'spin': strategy 'none' ran more events at 0.001 s "
                       "of simulated time than run.max_events_per_instant = 500000"),
            std::string::npos)
      << r.err;
  const auto doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["reason"], "events-per-instant-limit");
}

}  // namespace
