// SPDX-License-Identifier: Apache-2.0
// Issue 17's outputs as a user (or an attacker) meets them: every write error, stdout included,
// is status 1 with one line naming the file and the reason; a full disk leaves no summary.json
// vouching for half-written files; a symlink in --out is refused; files of an earlier run go;
// CSV fields are RFC 4180-quoted; bytes that are not UTF-8 never lose the work done.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::run_cli;
using backoff::test::shell_quote;
using backoff::test::slurp;
using backoff::test::test_scratch;

struct shell_result {
  int status = -1;
  std::string err;
};

// Runs `prefix; exec backoff ARGS` in sh with stdout to `out` (e.g. /dev/full).
shell_result run_shell(const std::string& prefix, const std::vector<std::string>& args,
                       const std::string& out, const fs::path& scratch) {
  std::string command = prefix + "; exec " + shell_quote(BACKOFF_CLI_PATH);
  for (const auto& a : args) command += " " + shell_quote(a);
  const fs::path err = scratch / "stderr";
  command += " </dev/null >" + out + " 2>" + shell_quote(err.string());
  const int raw = std::system(("sh -c " + shell_quote(command)).c_str());
  shell_result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.err = slurp(err);
  fs::remove(err);
  return r;
}

std::size_t line_count(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// A small_sim tick-burst run, quick in any build.
const std::vector<std::string> small_sim = {"sim", "tick-burst", "--no-progress", "--set",
                                            "workload.clients=50"};

std::vector<std::string> with_args(std::vector<std::string> args,
                                   const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(Outputs, AFullStdoutIsStatusOneWithTheReason) {
  const test_scratch scratch("outputs");
  const std::vector<std::vector<std::string>> commands = {
      with_args(small_sim, {"--format", "json"}),
      small_sim,
      {"delays", "-p", "exponential"},
      {"delays", "-p", "exponential", "-f", "json"},
      {"delays", "-p", "exponential", "-f", "csv"},
      {"presets"}};
  for (const auto& args : commands) {
    const auto r = run_shell("true", args, "/dev/full", scratch.dir());
    EXPECT_EQ(r.status, 1) << args[0] << " " << args.back() << ": " << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("cannot write to standard output: No space left on device"),
              std::string::npos)
        << r.err;
  }
}

TEST(Outputs, TheRetryToolsReportOnAFullStdoutIs125AndKeepsTheCommandsStatus) {
  const test_scratch scratch("outputs");
  const auto r =
      run_shell("true", {"try", "-q", "--times", "1", "--report", "-", "--", "sh", "-c", "exit 3"},
                "/dev/full", scratch.dir());
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("(the command's status was 3)"), std::string::npos) << r.err;
}

TEST(Outputs, AFullDiskNamesTheFileExitsOneAndLeavesNoSummaryVouchingForIt) {
  const test_scratch scratch("outputs");
  const fs::path out = scratch.dir() / "o";
  ASSERT_EQ(run_cli(with_args(small_sim, {"--out", out.string()})).status, 0);
  ASSERT_TRUE(fs::exists(out / "summary.json"));
  const std::string old_clients = slurp(out / "clients.csv");
  // A file-size limit stands in for a full disk: writes past 1 KiB fail with EFBIG (SIGXFSZ
  // ignored, as the shell passes it on).
  const auto r =
      run_shell("trap '' XFSZ; ulimit -f 1", with_args(small_sim, {"--out", out.string()}),
                "/dev/null", scratch.dir());
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("clients.csv: File too large"), std::string::npos) << r.err;
  // The earlier run's summary.json is gone (it would vouch for files of this run), and what
  // the failed run could not write whole is not there at all: the old clients.csv stands.
  EXPECT_FALSE(fs::exists(out / "summary.json"));
  EXPECT_EQ(slurp(out / "clients.csv"), old_clients);
  for (const auto& e : fs::directory_iterator(out)) {
    EXPECT_EQ(e.path().filename().string().find(".backoff-tmp"), std::string::npos)
        << "left behind: " << e.path();
  }
}

TEST(Outputs, ASymlinkInOutIsRefusedAndItsTargetUntouched) {
  const test_scratch scratch("outputs");
  const fs::path out = scratch.dir() / "o";
  fs::create_directories(out);
  write_text(scratch.dir() / "victim", "precious\n");
  fs::create_symlink(scratch.dir() / "victim", out / "summary.json");
  const auto r = run_cli(with_args(small_sim, {"--out", out.string()}));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("summary.json: is a symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(scratch.dir() / "victim"), "precious\n");

  // --out itself a link: refused too.
  fs::create_directories(scratch.dir() / "real");
  fs::create_directory_symlink(scratch.dir() / "real", scratch.dir() / "link");
  const auto l = run_cli(with_args(small_sim, {"--out", (scratch.dir() / "link").string()}));
  EXPECT_EQ(l.status, 1) << l.err;
  EXPECT_TRUE(fs::is_empty(scratch.dir() / "real"));
}

TEST(Outputs, FilesOfAnEarlierRunAreRemovedAndNothingElse) {
  const test_scratch scratch("outputs");
  const fs::path out = scratch.dir() / "o";
  // Two scenarios: a sub-folder each.
  ASSERT_EQ(run_cli({"sim", "tick-burst", "mm1", "--no-progress", "--out", out.string()}).status,
            0);
  ASSERT_TRUE(fs::exists(out / "tick-burst" / "clients.csv"));
  write_text(out / "notes.txt", "mine\n");
  write_text(out / "mm1" / "notes.txt", "mine too\n");
  // One scenario straight into the folder: the sub-folders' files go; a folder holding a file
  // of the user's stays with that file.
  ASSERT_EQ(run_cli(with_args(small_sim, {"--out", out.string()})).status, 0);
  EXPECT_FALSE(fs::exists(out / "tick-burst"));
  EXPECT_FALSE(fs::exists(out / "mm1" / "summary.json"));
  EXPECT_EQ(slurp(out / "mm1" / "notes.txt"), "mine too\n");
  EXPECT_EQ(slurp(out / "notes.txt"), "mine\n");
  EXPECT_TRUE(fs::exists(out / "clients.csv"));
  // A sweep now: the plain run's per-run files go.
  ASSERT_EQ(run_cli({"sweep", "aws-occ", "--no-progress", "--set", "sweep.clients=[10, 20]",
                     "--set", "replications=2", "--out", out.string()})
                .status,
            0);
  EXPECT_TRUE(fs::exists(out / "sweep.csv"));
  EXPECT_FALSE(fs::exists(out / "clients.csv"));
  EXPECT_FALSE(fs::exists(out / "timeseries.csv"));
  EXPECT_EQ(slurp(out / "notes.txt"), "mine\n");
}

// Fields of one RFC 4180 record per line break outside quotes.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::exchange(field, {}));
    } else if (c == '\n') {
      rows.back().push_back(std::exchange(field, {}));
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(Outputs, CsvNamesWithCommasQuotesAndLineBreaksStayOneField) {
  const test_scratch scratch("outputs");
  const std::string name = "a,b \"q\"\nnext";
  const fs::path file = scratch.dir() / "s.toml";
  write_text(file,
             "scenario = \"csv\"\nmodel = \"tick-burst\"\nseed = 1\n[workload]\nclients = 20\n"
             "[[strategy]]\nname = \"a,b \\\"q\\\"\\nnext\"\npolicy = \"exponential\"\n");
  const fs::path out = scratch.dir() / "o";
  const auto r = run_cli({"sim", file.string(), "--no-progress", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* csv : {"clients.csv", "timeseries.csv"}) {
    const auto rows = parse_csv(slurp(out / csv));
    ASSERT_GT(rows.size(), 1u) << csv;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i].size(), rows[0].size()) << csv << " row " << i;
      EXPECT_EQ(rows[i][0], name) << csv << " row " << i;
    }
  }
  // And the table on the terminal shows the line break escaped, on one row.
  EXPECT_NE(r.out.find("a,b \"q\"\\nnext"), std::string::npos) << r.out;
}

TEST(Outputs, BytesThatAreNotUtf8InTheRetryToolsReportBecomeReplacementCharacters) {
  const test_scratch scratch("outputs");
  const fs::path report = scratch.dir() / "r.json";
  const auto r = run_cli({"try", "--report", report.string(), "--", "sh", "-c", "true", "caf\xe9"});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(report));
  EXPECT_NE(doc.dump().find("caf\xef\xbf\xbd"), std::string::npos) << doc.dump();
}

TEST(Outputs, AnUnwritableReportIs125BeforeTheCommandRuns) {
  const test_scratch scratch("outputs");
  const fs::path marker = scratch.dir() / "ran";
  const auto r = run_cli({"try", "--report", (scratch.dir() / "no" / "such" / "r.json").string(),
                          "--", "touch", marker.string()});
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("r.json: No such file or directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker));
}

}  // namespace
