// SPDX-License-Identifier: Apache-2.0
// Every number the built-in suite prints with seed 1 stays what it was when the outputs moved
// into the report layer (issue 17): the comparison tables byte for byte, and summary.json
// (`--format json`) value for value, leaving out the two fields that measure this machine
// (run.wall_s, run.events_per_s). The references in tests/data/builtin-suite-seed1/ were written
// by the code before the move; a change to a model that moves a number on purpose rewrites them
// (`backoff sim -s 1 --no-progress > table.txt`, and the JSON without those two fields).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_cli;
using backoff::test::slurp;

const std::string reference_dir =
    std::string(BACKOFF_SOURCE_DIR) + "/tests/data/builtin-suite-seed1/";

// One run: the tables from stdout, each scenario's summary.json from --out. 5 s in the plain build,
// two minutes under a sanitizer: `FullSize` keeps it out of the sanitizer presets (label fullsize).
TEST(BuiltinSuiteFullSize, TablesAndSummaryNumbersAreUnchangedWithSeedOne) {
  const backoff::test::test_scratch scratch("suite");
  const auto r = run_cli({"sim", "-s", "1", "--no-progress", "--out", scratch.dir().string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string expected_tables = slurp(reference_dir + "table.txt");
  ASSERT_FALSE(expected_tables.empty());
  EXPECT_EQ(r.out, expected_tables);

  const auto expected = nlohmann::json::parse(slurp(reference_dir + "summary.json"));
  ASSERT_TRUE(expected.is_array());
  ASSERT_EQ(expected.size(), 9u);
  for (const auto& want : expected) {
    const std::string name = want.at("scenario");
    auto got = nlohmann::json::parse(slurp(scratch.dir() / name / "summary.json"));
    ASSERT_TRUE(got["run"].contains("wall_s")) << name;
    got["run"].erase("wall_s");
    got["run"].erase("events_per_s");
    // One scenario at a time, so a failure names it; the diff is a JSON patch of what moved.
    EXPECT_EQ(got, want) << name << " changed:\n" << nlohmann::json::diff(want, got).dump(1);
  }
}

}  // namespace
