// SPDX-License-Identifier: Apache-2.0
// JSON from every command that prints data: `presets --format json`, and `script --report`
// (a file, or stdout kept for the report alone).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_cli;
using backoff::test::slurp;
using nlohmann::json;

TEST(JsonOutputs, PresetsAsJsonHoldTheTablesDraws) {
  const auto r = run_cli({"presets", "--format", "json", "-n", "4", "-s", "9"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["seed"], 9);
  ASSERT_GE(doc["presets"].size(), 5u);
  bool found_smira = false;
  for (const auto& p : doc["presets"]) {
    EXPECT_EQ(p["delays_s"].size(), 4u) << p["name"];
    EXPECT_FALSE(p["spec"].get<std::string>().empty());
    if (p["name"] == "constant") {
      EXPECT_EQ(p["delays_s"][0], 5.0);  // seed 001's CB: 5 units
    }
    found_smira = found_smira || p["name"] == "smira";
  }
  EXPECT_TRUE(found_smira);
  // The table's draws are the same ones: constant's first column reads 5s.
  const auto table = run_cli({"presets", "-n", "4", "-s", "9"});
  EXPECT_NE(table.out.find("5s"), std::string::npos);
}

TEST(JsonOutputs, AScriptReportsEveryCommandAndAttempt) {
  const backoff::test::test_scratch scratch("json");
  const auto script = scratch.dir() / "t.ftsh";
  {
    std::ofstream(script) << "try 3 times every 1ms\n"
                             "  sh -c \"echo run$BACKOFF_ATTEMPT; test $BACKOFF_ATTEMPT = 2\"\n"
                             "end\n"
                             "printf %s%s\\\\n xy zzy\n";
  }
  const auto to_stdout = run_cli({"script", "--report", "-", script.string()});
  ASSERT_EQ(to_stdout.status, 0) << to_stdout.err;
  const json doc = json::parse(to_stdout.out);  // stdout: the report alone
  EXPECT_EQ(doc["status"], 0);
  EXPECT_EQ(doc["ok"], true);
  const auto& events = doc["events"];
  ASSERT_EQ(events.size(), 5u) << doc.dump(2);  // 2 commands + 2 attempts, then printf
  EXPECT_EQ(events[0]["kind"], "command");
  EXPECT_EQ(events[0]["line"], 2);
  EXPECT_EQ(events[0]["status"], 1);
  EXPECT_EQ(events[1]["kind"], "attempt");
  EXPECT_EQ(events[1]["attempt"], 1);
  EXPECT_TRUE(events[1]["delay_s"].is_number());
  EXPECT_EQ(events[3]["attempt"], 2);
  EXPECT_EQ(events[3]["status"], 0);
  EXPECT_TRUE(events[3]["delay_s"].is_null());
  EXPECT_EQ(events[4]["argv"][0], "printf");
  EXPECT_NE(to_stdout.err.find("run1\nrun2\nxyzzy\n"), std::string::npos) << to_stdout.err;

  const auto file = scratch.dir() / "report.json";
  const auto to_file = run_cli({"script", "--report", file.string(), script.string()});
  EXPECT_EQ(to_file.status, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "run1\nrun2\nxyzzy\n");  // without -, the commands keep stdout
  EXPECT_EQ(json::parse(slurp(file))["events"].size(), 5u);

  const auto unwritable = run_cli(
      {"script", "--report", (scratch.dir() / "no" / "such.json").string(), script.string()});
  EXPECT_EQ(unwritable.status, 125);
  EXPECT_EQ(unwritable.out, "");  // nothing ran
}

}  // namespace
