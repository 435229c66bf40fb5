// SPDX-License-Identifier: Apache-2.0
// The typed options (src/cli/typed_options.hpp) as a user meets them: a bad duration, size,
// percentage, seed or count is one line that names the flag and quotes the value, with the
// command's usage status (2; 125 for the retry commands); --help names what each flag takes
// (DURATION, SIZE, PERCENT, SEED, N), not VALUE; and the forms documented for each still work.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_cli;

struct refused {
  std::vector<std::string> args;
  int status;
  std::string line;  // the start of the one line, after "backoff COMMAND: "
};

TEST(TypedOptions, EachRefusesABadValueInOneLineNamingTheFlag) {
  const std::vector<refused> refusals{
      {{"delays", "--policy", "grpc", "--seed", "12ab"},
       2,
       "backoff delays: --seed: bad seed \"12ab\" (expected a whole number from 0 to "
       "18446744073709551615)"},
      {{"delays", "--policy", "grpc", "-r", "0"},
       2,
       "backoff delays: --runs: bad number \"0\" (expected a whole number from 1 to 100000)"},
      {{"sim", "mm1", "--memory-limit", "12XB"},
       2,
       "backoff sim: --memory-limit: bad size \"12XB\" (unknown unit 'XB'"},
      {{"sweep", "aws-occ", "--memory-limit", "lots"},
       2,
       "backoff sweep: --memory-limit: bad size \"lots\" (expected a size such as 512MiB, 4GiB "
       "or none)"},
      {{"serve", "--expired-cost", "150%"},
       2,
       "backoff serve: --expired-cost: bad percentage \"150%\" (expected a percentage from 0% to "
       "100%, or a fraction from 0 to 1)"},
      {{"serve", "--tick", "0s"},
       2,
       "backoff serve: --tick: bad duration \"0s\" (must be more than 0)"},
      {{"serve", "--fault-seed", "-1"}, 2, "backoff serve: --fault-seed: bad seed \"-1\""},
      {{"proxy", "--upstream", "127.0.0.1:9", "--idle-timeout", "2x"},
       2,
       "backoff proxy: --idle-timeout: bad duration \"2x\" (unknown unit \"x\""},
      {{"try", "--timeout", "2x", "--", "true"},
       125,
       "backoff try: --timeout: bad duration \"2x\" (unknown unit \"x\""},
      {{"try", "--replay-stdin", "--replay-stdin-limit", "1QB", "--", "true"},
       125,
       "backoff try: --replay-stdin-limit: bad size \"1QB\" (unknown unit 'QB'"},
      {{"forall", "--jobs", "+2", "a", "--", "true"},
       125,
       "backoff forall: --jobs: bad number \"+2\" (expected a whole number from 0 to "},
      {{"script", "--grace", "", "x.ftsh"}, 125, "backoff script: --grace: bad duration \"\" ("},
      {{"script", "--seed", "0x10", "x.ftsh"}, 125, "backoff script: --seed: bad seed \"0x10\""},
  };
  for (const refused& c : refusals) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, c.status) << shown << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1U) << shown << r.err;
    EXPECT_EQ(lines[0].rfind(c.line, 0), 0U) << shown << "\n" << lines[0];
    EXPECT_TRUE(r.out.empty()) << shown << r.out;
  }
}

TEST(TypedOptions, HelpNamesTheTypes) {
  const struct {
    const char* command;
    std::vector<const char*> shown;
  } helps[] = {
      {"try",
       {"--times N", "--for DURATION", "--timeout DURATION", "--replay-stdin-limit SIZE",
        "--seed SEED"}},
      {"forall", {"-j,--jobs N=0"}},
      {"script", {"--grace DURATION=5s", "--seed SEED"}},
      {"delays", {"-n,--attempts N=10", "-r,--runs N=1", "-s,--seed SEED=1"}},
      {"presets", {"-n,--attempts N=12", "-s,--seed SEED=1"}},
      {"sim", {"-s,--seed SEED", "-j,--threads N", "--memory-limit SIZE"}},
      {"sweep", {"-s,--seed SEED", "--memory-limit SIZE", "--shards N", "--retries N=3"}},
      {"serve",
       {"--port N=8070", "--base-delay DURATION=100ms", "--tick DURATION=50ms",
        "--header-timeout DURATION=60s", "--idle-timeout DURATION=75s", "--expired-cost PERCENT=5%",
        "--fault-seed SEED=1", "--max-connections N"}},
      {"proxy", {"--upstream-timeout DURATION=10s", "--header-timeout DURATION=60s"}},
  };
  for (const auto& c : helps) {
    const auto r = run_cli({c.command, "--help"});
    ASSERT_EQ(r.status, 0) << c.command;
    for (const char* s : c.shown) {
      EXPECT_NE(r.out.find(s), std::string::npos) << c.command << " --help lacks " << s << "\n"
                                                  << r.out;
    }
  }
}

// The man page names them as --help does.
TEST(TypedOptions, ManPageNamesTheTypes) {
  const auto r = run_cli({"--man"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s :
       {R"(\fB\-\-memory\-limit\fR \fISIZE\fR)", R"(\fB\-\-timeout\fR \fIDURATION\fR)",
        R"(\fB\-\-expired\-cost\fR \fIPERCENT\fR)", R"(\fB\-\-fault\-seed\fR \fISEED\fR)",
        R"(\fB\-\-times\fR \fIN\fR)"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

// The forms each flag took before it was typed still work: bare seconds for a duration, every
// size form and "none" for a limit, a percentage or a fraction.
TEST(TypedOptions, DocumentedFormsAreAccepted) {
  for (const char* timeout : {"5", "0.25", "1.5s", "250ms", "1h30m"}) {
    const auto r = run_cli({"try", "--times", "1", "--timeout", timeout, "--", "true"});
    EXPECT_EQ(r.status, 0) << timeout << ": " << r.err;
  }
  for (const char* limit : {"512MiB", "4GiB", "1.5G", "2GB", "100000", "64 KiB", "none", "0"}) {
    const auto r = run_cli(
        {"try", "--times", "1", "--replay-stdin", "--replay-stdin-limit", limit, "--", "true"});
    EXPECT_EQ(r.status, 0) << limit << ": " << r.err;
  }
  // A limit smaller than stdin is refused by its size, as given.
  using backoff::test::shell_quote;
  const auto small = backoff::test::run_captured(
      "sh -c " + shell_quote("printf 0123456789 | " + shell_quote(BACKOFF_CLI_PATH) +
                             " try --replay-stdin --replay-stdin-limit 4B -- true"));
  EXPECT_EQ(small.status, 125) << small.err;
  EXPECT_NE(small.err.find("larger than --replay-stdin-limit (4B)"), std::string::npos)
      << small.err;
  for (const char* seed : {"0", "18446744073709551615"}) {
    const auto r = run_cli({"delays", "--policy", "grpc", "--seed", seed, "-n", "1"});
    EXPECT_EQ(r.status, 0) << seed << ": " << r.err;
  }
}

}  // namespace
