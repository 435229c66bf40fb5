// SPDX-License-Identifier: Apache-2.0
// Every number the built-in suite prints with seed 1 stays what it was when the outputs moved
// into the report layer (issue 17): each reference scenario's comparison table byte for byte, and
// its summary.json (`--format json`) value for value, leaving out the two fields that measure this
// machine (run.wall_s, run.events_per_s). Fields are added, never renamed (SPEC 7.3): a field the
// reference lacks is not a change, and scenarios added to the suite since are not in it. The
// references in tests/data/builtin-suite-seed1/ were written by the code before the move (the
// tables again when they gained p95, issue 22); a change to a model that moves a number on purpose
// rewrites them (`backoff sim -s 1 --no-progress > table.txt`, keeping the reference scenarios'
// tables, and the JSON without those two fields).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_cli;
using backoff::test::slurp;

// Where `got` differs from `want` in what `want` has (keys `got` adds are not differences).
void expect_has(const nlohmann::json& want, const nlohmann::json& got, const std::string& path,
                std::vector<std::string>& differences) {
  if (want.is_object() && got.is_object()) {
    for (const auto& [key, value] : want.items()) {
      if (!got.contains(key)) {
        differences.push_back(path + "/" + key + ": missing");
      } else {
        expect_has(value, got.at(key), path + "/" + key, differences);
      }
    }
  } else if (want.is_array() && got.is_array() && want.size() == got.size()) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      expect_has(want[i], got[i], path + "/" + std::to_string(i), differences);
    }
  } else if (want != got) {
    differences.push_back(path + ": " + want.dump() + " became " + got.dump());
  }
}

// The tables of a run's stdout, by their first line (scenario, model and seed).
std::map<std::string, std::string> tables_of(const std::string& out) {
  std::map<std::string, std::string> tables;
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t end = out.find("\n\n", at);
    end = end == std::string::npos ? out.size() : end + 1;
    const std::string table = out.substr(at, end - at);
    tables[table.substr(0, table.find('\n'))] = table;
    at = end + 1;
  }
  return tables;
}

const std::string reference_dir =
    std::string(BACKOFF_SOURCE_DIR) + "/tests/data/builtin-suite-seed1/";

// One run: the tables from stdout, each scenario's summary.json from --out. 5 s in the plain build,
// two minutes under a sanitizer: `FullSize` keeps it out of the sanitizer presets (label fullsize).
TEST(BuiltinSuiteFullSize, TablesAndSummaryNumbersAreUnchangedWithSeedOne) {
  const backoff::test::test_scratch scratch("suite");
  const auto r = run_cli({"sim", "-s", "1", "--no-progress", "--out", scratch.dir().string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto expected_tables = tables_of(slurp(reference_dir + "table.txt"));
  ASSERT_EQ(expected_tables.size(), 9u);
  const auto tables = tables_of(r.out);
  for (const auto& [title, table] : expected_tables) {
    ASSERT_TRUE(tables.contains(title)) << title;
    EXPECT_EQ(tables.at(title), table);
  }

  const auto expected = nlohmann::json::parse(slurp(reference_dir + "summary.json"));
  ASSERT_TRUE(expected.is_array());
  ASSERT_EQ(expected.size(), 9u);
  for (const auto& want : expected) {
    const std::string name = want.at("scenario");
    auto got = nlohmann::json::parse(slurp(scratch.dir() / name / "summary.json"));
    ASSERT_TRUE(got["run"].contains("wall_s")) << name;
    got["run"].erase("wall_s");
    got["run"].erase("events_per_s");
    // One scenario at a time, so a failure names it, with the paths of what moved.
    std::vector<std::string> differences;
    expect_has(want, got, "", differences);
    std::string listed;
    for (const auto& d : differences) listed += "  " + d + "\n";
    EXPECT_TRUE(differences.empty()) << name << " changed:\n" << listed;
  }
}

}  // namespace
