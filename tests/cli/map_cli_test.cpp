// SPDX-License-Identifier: Apache-2.0
// `backoff sim` on a metastable map (docs/models/metastable-map.md): the boundary table on stdout,
// boundary.csv and summary.json's "map" section under --out, the same bytes for any thread count,
// and one clear line for a map that names what does not exist.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_cli;
using backoff::test::slurp;

const char* const map_text = R"(scenario = "cli-map"
seed = 2
[[map]]
scenario = "metastable-queue"
strategy = "metafor-retries"
set = ["spike.start=\"40s\"", "run.duration=\"400s\""]
load = { key = "workload.rate_per_s", values = [6, 9.5], unit = "1/s" }
trigger = { key = "spike.duration", low = "0.25s", high = "10s", resolution = "0.5s" }
replications = 2
max_probes = 8
)";

TEST(MapCli, WritesBoundaryCsvAndTheMapSectionTheSameOnAnyThreadCount) {
  const backoff::test::test_scratch scratch("map-cli");
  const auto file = scratch.dir() / "cli-map.toml";
  std::ofstream(file) << map_text;
  const auto one = scratch.dir() / "one";
  const auto two = scratch.dir() / "two";
  const auto a = run_cli({"sim", file.string(), "--no-progress", "-j", "1", "--out", one.string()});
  ASSERT_EQ(a.status, 0) << a.err;
  const auto b = run_cli({"sim", file.string(), "--no-progress", "-j", "2", "--out", two.string()});
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(a.out.find("trigger_lo"), std::string::npos) << a.out;
  const std::string csv = slurp((one / "boundary.csv").string());
  EXPECT_EQ(csv.rfind("model,load,trigger,trigger_lo,trigger_hi,replications,", 0), 0u) << csv;
  EXPECT_EQ(csv, slurp((two / "boundary.csv").string()));
  const auto summary = nlohmann::json::parse(slurp((one / "summary.json").string()));
  ASSERT_TRUE(summary.contains("map"));
  const auto& map = summary["map"]["maps"].at(0);
  EXPECT_EQ(map["model"], "metastable-queue");
  EXPECT_EQ(map["trigger_key"], "spike.duration");
  ASSERT_EQ(map["boundary"].size(), 2u);
  EXPECT_TRUE(map["boundary"][1]["always_down"].get<bool>());
}

TEST(MapCli, AMapOfAnUnknownScenarioFailsWithOneLine) {
  const backoff::test::test_scratch scratch("map-cli-bad");
  const auto file = scratch.dir() / "bad-map.toml";
  std::string text = map_text;
  text.replace(text.find("\"metastable-queue\""), 18, "\"../../etc/passwd\"");
  std::ofstream(file) << text;
  const auto r = run_cli({"sim", file.string(), "--no-progress"});
  EXPECT_NE(r.status, 0);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("no built-in scenario"), std::string::npos) << r.err;
}

}  // namespace
