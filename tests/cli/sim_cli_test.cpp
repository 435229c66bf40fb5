// SPDX-License-Identifier: Apache-2.0
// `backoff sim` as scripts use it (SPEC 6.2): outputs, determinism, and one-line errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::run_cli;
using backoff::test::slurp;

const std::vector<std::string> small_run{"sim", "one-client-burst", "--set",
                                         "workload.operations=200"};

TEST(SimCli, WritesTheThreeFilesWithTheDocumentedSchema) {
  const backoff::test::test_scratch scratch("sim");
  const fs::path out = scratch / "schema";
  auto args = small_run;
  args.insert(args.end(), {"--out", out.string()});
  const auto r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(out / "summary.json"));
  ASSERT_TRUE(fs::exists(out / "timeseries.csv"));
  ASSERT_TRUE(fs::exists(out / "clients.csv"));
  const auto doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(doc["scenario"], "one-client-burst");
  EXPECT_EQ(doc["seed"], 1);
  for (const char* key : {"events", "wall_s", "events_per_s"})
    EXPECT_TRUE(doc["run"].contains(key));
  ASSERT_EQ(doc["strategies"].size(), 8u);
  const auto& s = doc["strategies"][0];
  for (const char* key :
       {"name", "operations", "completed", "failed", "attempts", "attempts_per_operation",
        "makespan_s", "latency_s", "goodput_per_s", "recovery_s"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  for (const char* key : {"p50", "p75", "p90", "p95", "p99", "p999", "p9999", "max"}) {
    EXPECT_TRUE(s["latency_s"].contains(key)) << key;
  }
  EXPECT_TRUE(s["recovery_s"].is_null());
  EXPECT_EQ(s["operations"], 200);
  EXPECT_EQ(slurp(out / "timeseries.csv").substr(0, 20), "strategy,t_s,new,att");
  // One clients.csv row per operation and strategy, after the header.
  const std::string clients = slurp(out / "clients.csv");
  EXPECT_EQ(std::count(clients.begin(), clients.end(), '\n'), 1 + 8 * 200);
}

TEST(SimCli, SameSeedGivesByteIdenticalOutputsButTheWallClock) {
  const backoff::test::test_scratch scratch("sim");
  const auto run_to = [&](const std::string& name, const char* seed) {
    const fs::path out = scratch / name;
    auto args = small_run;
    args.insert(args.end(), {"--out", out.string(), "--seed", seed});
    EXPECT_EQ(run_cli(args).status, 0);
    return out;
  };
  const fs::path a = run_to("a", "9"), b = run_to("b", "9"), c = run_to("c", "10");
  for (const char* file : {"timeseries.csv", "clients.csv"}) {
    EXPECT_EQ(slurp(a / file), slurp(b / file)) << file;
  }
  EXPECT_NE(slurp(a / "clients.csv"), slurp(c / "clients.csv"));
  auto ja = nlohmann::json::parse(slurp(a / "summary.json"));
  auto jb = nlohmann::json::parse(slurp(b / "summary.json"));
  for (auto* j : {&ja, &jb}) {
    (*j)["run"].erase("wall_s");
    (*j)["run"].erase("events_per_s");
  }
  EXPECT_EQ(ja, jb);
}

// What `make demo` runs: every built-in scenario, one sub-folder each (the sweeps at one
// replication; `replications` is a key of every scenario). 2 s in the plain build, 45-55 s of CPU
// under each sanitizer, where it was the longest test by far and adds nothing: every model runs
// there at test sizes, and the CLI's folders and outputs in the shorter SimCli tests. `FullSize`
// keeps it out of the sanitizer presets (label fullsize), like BuiltinSuiteFullSize.
TEST(SimCliFullSize, RunsTheWholeBuiltInSuiteIntoOneFolderPerScenario) {
  const backoff::test::test_scratch scratch("sim");
  const fs::path out = scratch / "suite";
  const auto r =
      run_cli({"sim", "--out", out.string(), "--no-progress", "--set", "replications=1"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"tick-burst", "one-client-burst", "mm1", "mmc", "outage-recovery",
                           "ethernet-clients", "aws-occ", "outage-tipping"}) {
    EXPECT_TRUE(fs::exists(out / name / "summary.json")) << name;
    EXPECT_NE(r.out.find(std::string(name) + " (model"), std::string::npos) << name;
  }
  for (const char* sweep : {"ethernet-clients", "aws-occ", "outage-tipping"}) {
    EXPECT_TRUE(fs::exists(out / sweep / "sweep.csv")) << sweep;
    const auto doc = nlohmann::json::parse(slurp(out / sweep / "summary.json"));
    EXPECT_GT(doc["points"].size(), 1U) << sweep;
  }
}

// Sweeps run on all cores; the thread count changes the wall time, not one byte of the results.
TEST(SimCli, SweepOutputsDoNotDependOnTheThreadCount) {
  const backoff::test::test_scratch scratch("sim");
  const auto run_to = [&](const std::string& name, const std::string& threads) {
    const fs::path out = scratch / name;
    const auto r = run_cli({"sim", "outage-tipping", "--out", out.string(), "--threads", threads,
                            "--set", "replications=2", "--set", "run.duration=\"150s\"", "--set",
                            "sweep.outage.duration=[\"3s\", \"6s\", \"20s\"]"});
    EXPECT_EQ(r.status, 0) << r.err;
    return out;
  };
  const fs::path one = run_to("t1", "1"), three = run_to("t3", "3");
  EXPECT_EQ(slurp(one / "sweep.csv"), slurp(three / "sweep.csv"));
  auto a = nlohmann::json::parse(slurp(one / "summary.json"));
  auto b = nlohmann::json::parse(slurp(three / "summary.json"));
  for (auto* j : {&a, &b}) {
    (*j)["run"].erase("wall_s");
    (*j)["run"].erase("events_per_s");
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(a["points"].size(), 3U);
  EXPECT_EQ(a["points"][1]["params"]["outage.duration"], "6s");
}

TEST(SimCli, ABadSweepValueIsOneLineNamingTheSweepEntry) {
  const auto r = run_cli({"sim", "outage-tipping", "--set", "sweep.outage.duration=[\"2s\", 5]"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("(sweep outage.duration=5): outage.duration: expected a duration string"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(SimCli, ThreadsMustBeAPositiveCount) {
  for (const char* bad : {"0", "-1", "two"}) {
    const auto r = run_cli({"sim", "outage-tipping", "--threads", bad});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
  }
}

TEST(SimCli, FormatJsonPrintsTheSummary) {
  auto args = small_run;
  args.insert(args.end(), {"--format", "json"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["scenario"], "one-client-burst");
}

// Each --set takes one key=value: before, `--set k=v SCENARIO` read the scenario as a second
// assignment and then asked for a scenario.
TEST(SimCli, EachSetTakesOneAssignmentAndTheScenarioFollows) {
  const auto r = run_cli({"sim", "--set", "workload.operations=200", "--set", "replications=1",
                          "one-client-burst", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["scenario"], "one-client-burst");
  // Two values after one --set: the second is a scenario name, not an assignment.
  const auto two = run_cli({"sim", "--set", "workload.operations=200", "replications=1"});
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("replications=1"), std::string::npos) << two.err;
  EXPECT_EQ(std::count(two.err.begin(), two.err.end(), '\n'), 1) << two.err;
}

TEST(SimCli, TablePrintsEveryStrategy) {
  const auto r = run_cli(small_run);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"exponential-full", "aimd-reno-0.9"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
}

struct bad_sim {
  std::vector<std::string> args;
  std::string file_text;  // written to a file whose path is appended when not empty
  std::string fragment;
};

class SimCliRejects : public testing::TestWithParam<bad_sim> {};

TEST_P(SimCliRejects, WithOneLineAndExitTwo) {
  const backoff::test::test_scratch scratch("sim");
  auto args = GetParam().args;
  fs::path file;
  if (!GetParam().file_text.empty()) {
    file = (scratch / "bad") += ".toml";
    std::ofstream(file) << GetParam().file_text;
    args.push_back(file.string());
  }
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(GetParam().fragment), std::string::npos) << r.err;
  if (!file.empty()) {
    EXPECT_NE(r.err.find(file.string() + ":"), std::string::npos) << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, SimCliRejects,
    testing::Values(
        bad_sim{{"sim", "no-such-scenario"}, "", "not a built-in scenario"},
        bad_sim{{"sim", "one-client-burst", "--set", "server.max_bsy=3"}, "", "unknown key"},
        bad_sim{{"sim", "one-client-burst", "--set", "workload.operations=0"}, "", "out of range"},
        bad_sim{{"sim", "one-client-burst", "--seed", "x"}, "", "--seed"},
        bad_sim{{"sim", "one-client-burst", "--format", "xml"}, "", "--format"},
        bad_sim{{"sim"},
                "scenario = \"x\"\nmodel = \"one-client-burst\"\n[server]\nmax_busy = "
                "\"lots\"\n[[strategy]]\nname = \"a\"\n",
                ":4:12: server.max_busy: expected an integer"},
        bad_sim{{"sim"},
                "scenario = \"x\"\nmodel = \"one-client-burst\"\n[[strategy]]\nname = "
                "\"a\"\npolicy = \"expo\"\n",
                ":5:10: strategy.policy: bad policy"},
        bad_sim{
            {"sim"}, "scenario = \"x\"\nmodel = \"one-client-burst\"\n", ":1:1: no [[strategy]]"},
        bad_sim{{"sim"},
                "scenario = \"x\"\nmodel = \"one-client-burst\"\n[[strategy]]\nname = "
                "\"w\"\nwindow = \"aimd()\"\npolicy = \"constant\"\n",
                ":3:1: strategy w: a window resends"},
        bad_sim{{"sim"}, "this is not toml\n", ":1:"}));

}  // namespace

namespace {

// --plot: charts and report.html per scenario, and an index linking them when there are several.
TEST(SimCliPlot, WritesAReportPerScenarioAndAnIndex) {
  const backoff::test::test_scratch scratch("sim");
  const fs::path out = scratch / "plot";
  const auto r = run_cli({"sim", "tick-burst", "one-client-burst", "--out", out.string(), "--plot",
                          "--no-progress", "--set", "replications=1"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"tick-burst", "one-client-burst"}) {
    EXPECT_TRUE(fs::exists(out / name / "report.html")) << name;
    EXPECT_TRUE(fs::exists(out / name / "rate.png")) << name;
    EXPECT_TRUE(fs::exists(out / name / "rate.svg")) << name;
  }
  EXPECT_TRUE(fs::exists(out / "one-client-burst" / "window.svg")) << "cwnd and ssthresh";
  const std::string index = slurp(out / "index.html");
  EXPECT_NE(index.find("href=\"tick-burst/report.html\""), std::string::npos) << index;
  EXPECT_NE(index.find("href=\"one-client-burst/report.html\""), std::string::npos) << index;
  // Styled like the reports: their style sheet, and a table with each report's headline, read
  // back from it.
  const std::string report = slurp(out / "tick-burst" / "report.html");
  const std::string style =
      report.substr(report.find("<style>"), report.find("</style>") - report.find("<style>"));
  EXPECT_NE(index.find(style), std::string::npos) << index;
  EXPECT_NE(index.find("<table class=\"ranking\" id=\"index\">"), std::string::npos) << index;
  const std::string meta = "<meta name=\"backoff-verdict\" content=\"";
  const std::size_t verdict_at = report.find(meta) + meta.size();
  const std::string verdict = report.substr(verdict_at, report.find('"', verdict_at) - verdict_at);
  EXPECT_FALSE(verdict.empty());
  EXPECT_NE(index.find("<td class=\"headline\">" + verdict + "</td>"), std::string::npos) << index;
  EXPECT_NE(r.err.find("reports: " + (out / "index.html").string()), std::string::npos) << r.err;
}

TEST(SimCliPlot, NeedsAnOutputFolder) {
  const auto r = run_cli({"sim", "tick-burst", "--plot"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--plot needs --out"), std::string::npos) << r.err;
}

// A scenario from a pipe: `-` (stdin), /dev/stdin or a FIFO is read, not reported as "no such
// file"; something endless (/dev/zero) is refused after 16 MiB instead of filling memory.
TEST(SimCliSources, ReadsAScenarioFromStdinAPipeOrAFifo) {
  // stdin is /dev/null here: an empty scenario, read and found wanting.
  const auto dash = run_cli({"sim", "-", "--no-progress"});
  EXPECT_EQ(dash.status, 2);
  EXPECT_NE(dash.err.find("backoff sim: stdin: scenario: missing"), std::string::npos) << dash.err;
  const auto dev = run_cli({"sim", "/dev/stdin", "--no-progress"});
  EXPECT_EQ(dev.status, 2);
  EXPECT_NE(dev.err.find("backoff sim: /dev/stdin: scenario: missing"), std::string::npos)
      << dev.err;

  const backoff::test::test_scratch scratch("sim");
  const fs::path fifo = scratch / "scenario.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string text =
      "scenario = \"piped\"\nmodel = \"one-client-burst\"\n[workload]\noperations = 5\n"
      "[[strategy]]\nname = \"none\"\n";
  // The writer waits (at most 20 s) for the reader without blocking in open(), so that the test
  // cannot hang if backoff never opens the FIFO; a reader that leaves early gives EPIPE, not a
  // signal.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  std::thread writer([&] {
    for (int tries = 0; tries < 2000; ++tries) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        (void)!::write(fd, text.data(), text.size());
        ::close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const auto piped = run_cli({"sim", fifo.string(), "--no-progress"});
  writer.join();
  ::sigaction(SIGPIPE, &previous, nullptr);
  EXPECT_EQ(piped.status, 0) << piped.err;
  EXPECT_NE(piped.out.find("none"), std::string::npos) << piped.out;

  const auto endless = run_cli({"sim", "/dev/zero"});
  EXPECT_EQ(endless.status, 2);
  EXPECT_NE(endless.err.find("/dev/zero: larger than 16 MiB: not a scenario file"),
            std::string::npos)
      << endless.err;
}

}  // namespace
