// SPDX-License-Identifier: Apache-2.0
// Names an attacker controls (a scenario's or a strategy's name in a scenario file, a shard file
// handed to `sweep --merge`, the prefix of `delays --plot`) never become gnuplot code: each case
// carries a payload that would create a marker file if gnuplot ran it, and the marker must not
// appear. gnuplot accepts a string left open at the end of a line, so a newline in a name used to
// end the quoted string and start a command (issue 17).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::run_cli;
using backoff::test::slurp;
using backoff::test::test_scratch;

// A gnuplot command that creates `marker`, wrapped to escape a quoted string: a newline ends the
// name's line, the command runs, and `#` comments out whatever the script had after the name.
std::string payload(const fs::path& marker, char quote) {
  // Built by appending: GCC 12 misreads a chain of + here as an out-of-bounds copy.
  std::string text = "x";
  text += quote;
  text += "\nsystem(\"touch ";
  text += marker.string();
  text += "\")\n#";
  return text;
}

// TOML basic string: backslash and quote escaped, control characters as \n, \uXXXX.
std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
}

std::string tick_burst_scenario(const std::string& name, const std::string& strategy) {
  return "scenario = " + toml_string(name) + "\nmodel = \"tick-burst\"\nseed = 1\n" +
         "[workload]\nclients = 40\nsend_window = 100\n[run]\nticks = 200\nbucket = 10\n" +
         "[[strategy]]\nname = " + toml_string(strategy) + "\npolicy = \"exponential\"\n" +
         "[[strategy]]\nname = \"plain\"\npolicy = \"none\"\n";
}

TEST(HostileNames, ASimScenarioOrStrategyNameNeverRunsAsGnuplot) {
  const test_scratch scratch("hostile");
  for (const char quote : {'\'', '"'}) {
    const fs::path marker = scratch / (quote == '\'' ? "ran-single" : "ran-double");
    const fs::path file = scratch / "evil.toml";
    write(file, tick_burst_scenario(payload(marker, quote), payload(marker, quote)));
    const fs::path out = scratch / "out";
    const auto r =
        run_cli({"sim", file.string(), "--out", out.string(), "--plot", "--no-progress"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(fs::exists(marker)) << "gnuplot ran a command from a name; quote " << quote;
    EXPECT_TRUE(fs::exists(out / "report.html"));
    EXPECT_TRUE(fs::exists(out / "latency.svg") || fs::exists(out / "rate.svg"));
    fs::remove_all(out);
  }
}

TEST(HostileNames, TheDelaysPlotPrefixIsAFileNameNotGnuplotCode) {
  const test_scratch scratch("hostile");
  const fs::path marker = scratch / "ran";
  const fs::path prefix = scratch / payload(marker, '\'');
  const auto r = run_cli({"delays", "--policy", "exponential(initial=1s)", "--attempts", "4",
                          "--plot", prefix.string()});
  EXPECT_FALSE(fs::exists(marker)) << "gnuplot ran a command from the prefix";
  ASSERT_EQ(r.status, 0) << r.err;
  // The charts carry the prefix's name exactly, whatever its bytes.
  EXPECT_TRUE(fs::exists(prefix.string() + ".png"));
  EXPECT_TRUE(fs::exists(prefix.string() + "-log.svg"));
}

TEST(HostileNames, AShardFileCannotMakeTheMergingMachineRunGnuplotCode) {
  const test_scratch scratch("hostile");
  const fs::path marker = scratch / "ran";
  const std::vector<std::string> small{"--set",        "replications=1",
                                       "--set",        "run.duration=\"120s\"",
                                       "--set",        "sweep.outage.duration=[\"2s\", \"5s\"]",
                                       "--no-progress"};
  std::vector<std::string> args{
      "sweep", "outage-tipping", "--out", (scratch / "shard").string(), "--shard", "1/1"};
  args.insert(args.end(), small.begin(), small.end());
  const auto s = run_cli(args);
  ASSERT_EQ(s.status, 0) << s.err;
  // A worker rewrites the strategy names its shard reports (JSON escapes the newline).
  const fs::path shard = scratch / "shard" / "shard-1-of-1.json";
  std::string json = slurp(shard);
  std::string evil = payload(marker, '\'');
  std::string escaped;
  for (const char c : evil) {
    if (c == '\n')
      escaped += "\\n";
    else if (c == '"')
      escaped += "\\\"";
    else
      escaped += c;
  }
  std::size_t replaced = 0;
  for (const char* name : {"\"fixed\"", "\"exponential\""}) {
    for (std::size_t at = json.find(name); at != std::string::npos;
         at = json.find(name, at + escaped.size())) {
      json.replace(at, std::string(name).size(), "\"" + escaped + "\"");
      ++replaced;
    }
  }
  ASSERT_GT(replaced, 0u) << json.substr(0, 2000);
  write(shard, json);
  const auto m = run_cli({"sweep", "--merge", (scratch / "shard").string(), "--out",
                          (scratch / "merged").string(), "--plot"});
  EXPECT_FALSE(fs::exists(marker)) << "gnuplot ran a command from a shard file";
  (void)m;  // the merge may refuse the doctored shard; what matters is that nothing ran
}

// With several scenarios each writes to --out/NAME: a name that is not one plain path component
// is refused before anything runs, with one line naming the file and the scenario.
TEST(HostileNames, AScenarioNameThatIsNotOneFolderNameIsRefused) {
  const test_scratch scratch("hostile");
  const fs::path good = scratch / "good.toml";
  write(good, tick_burst_scenario("good", "eb"));
  const std::string absolute = (scratch / "abs").string();
  const std::vector<std::string> names{"../../outside", absolute, "a/b", "..", ".", "two\nlines"};
  for (const std::string& name : names) {
    const fs::path evil = scratch / "evil.toml";
    write(evil, tick_burst_scenario(name, "eb"));
    const fs::path out = scratch / "deep" / "er" / "out";
    const auto r =
        run_cli({"sim", good.string(), evil.string(), "--out", out.string(), "--no-progress"});
    EXPECT_EQ(r.status, 2) << name;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("evil.toml"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("one path component"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << "nothing runs when a name is refused: " << name;
    EXPECT_FALSE(fs::exists(scratch / "deep" / "outside")) << name;
    EXPECT_FALSE(fs::exists(absolute)) << name;
  }
}

TEST(HostileNames, TwoScenariosWithOneNameAreRefusedBeforeAnythingRuns) {
  const test_scratch scratch("hostile");
  write(scratch / "a.toml", tick_burst_scenario("same", "eb"));
  write(scratch / "b.toml", tick_burst_scenario("same", "eb"));
  const fs::path out = scratch / "out";
  const auto r = run_cli({"sim", (scratch / "a.toml").string(), (scratch / "b.toml").string(),
                          "--out", out.string(), "--no-progress"});
  EXPECT_EQ(r.status, 2);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("b.toml: scenario 'same' has the same name as"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a.toml"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
