// SPDX-License-Identifier: Apache-2.0
// `backoff-try`, the retry tool's own executable (linked statically, without the simulator, for
// start-up time), behaves as `backoff try`; and the conventions every subcommand follows:
// --version, and "did you mean" for a mistyped command.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using backoff::test::run_captured;
using backoff::test::run_cli;
using backoff::test::shell_quote;

backoff::test::cli_result run_try_tool(const std::vector<std::string>& args) {
  std::string command = shell_quote(BACKOFF_TRY_PATH);
  for (const auto& a : args) command += " " + shell_quote(a);
  return run_captured(command);
}

TEST(BackoffTry, RunsACommandAsBackoffTryDoes) {
  const auto ok = run_try_tool({"--times", "3", "--every", "1ms", "--", "true"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  const std::vector<std::string> failing{"--times", "2",  "--every", "1ms", "--seed",
                                         "7",       "--", "sh",      "-c",  "echo out; exit 3"};
  const auto mine = run_try_tool(failing);
  std::vector<std::string> with_try{"try"};
  with_try.insert(with_try.end(), failing.begin(), failing.end());
  const auto theirs = run_cli(with_try);
  EXPECT_EQ(mine.status, 3);
  EXPECT_EQ(mine.status, theirs.status);
  EXPECT_EQ(mine.out, theirs.out);
  EXPECT_EQ(mine.out, "out\nout\n");
}

TEST(BackoffTry, ItsOwnMistakesAreOneLineWithStatus125) {
  const auto r = run_try_tool({"--times", "x", "--", "true"});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--times"), std::string::npos) << r.err;
}

TEST(BackoffTry, PrintsTheVersionAndItsUsage) {
  const auto v = run_try_tool({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("backoff ", 0), 0u) << v.out;
  const auto h = run_try_tool({"--help"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--times"), std::string::npos) << h.out;
}

TEST(Conventions, EverySubcommandAnswersVersion) {
  const auto top = run_cli({"--version"});
  ASSERT_EQ(top.status, 0);
  for (const char* sub : {"delays", "presets", "sim", "sweep", "try", "forany", "forall", "script",
                          "serve", "load", "proxy"}) {
    const auto r = run_cli({sub, "--version"});
    EXPECT_EQ(r.status, 0) << sub << ": " << r.err;
    EXPECT_EQ(r.out, top.out) << sub;
  }
}

TEST(Conventions, AMistypedCommandGetsTheLikelyOne) {
  const auto r = run_cli({"simm"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("backoff: unknown command 'simm' (did you mean 'sim'?)", 0), 0u) << r.err;
  const auto far = run_cli({"simulate-everything"});
  EXPECT_EQ(far.status, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  EXPECT_NE(run_cli({"forny"}).err.find("did you mean 'forany'?"), std::string::npos);
  EXPECT_NE(run_cli({"tyr"}).err.find("did you mean 'try'?"), std::string::npos);
  EXPECT_EQ(run_cli({"xy"}).err.find("did you mean"), std::string::npos);
}

TEST(Conventions, AMistypedFlagGetsTheLikelyOne) {
  const auto r = run_cli({"try", "--time", "3", "--", "true"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("(did you mean '--times'?)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const auto sim = run_cli({"sim", "--seeed", "3"});
  EXPECT_EQ(sim.status, 2);
  EXPECT_NE(sim.err.find("(did you mean '--seed'?)"), std::string::npos) << sim.err;
  const auto none = run_cli({"sim", "--zzzzzzzz"});
  EXPECT_EQ(none.err.find("did you mean"), std::string::npos) << none.err;
}

}  // namespace

namespace {

// Duration flags take bare seconds, as GNU timeout does; specs keep requiring units.
TEST(Conventions, DurationFlagsTakeBareSeconds) {
  const auto timed_out =
      backoff::test::run_cli({"try", "--times", "1", "--timeout", "0.2", "--", "sleep", "5"});
  EXPECT_EQ(timed_out.status, 124) << timed_out.err;  // GNU timeout's status: 0.2 s, not 0.2 ns
  const auto every = backoff::test::run_cli(
      {"try", "--times", "2", "--every", "0.01", "--for", "3", "--", "false"});
  EXPECT_EQ(every.status, 1) << every.err;
  const auto bad = backoff::test::run_cli({"try", "--timeout", "1.2.3", "--", "true"});
  EXPECT_EQ(bad.status, 125);
  EXPECT_NE(bad.err.find("--timeout"), std::string::npos) << bad.err;
  const auto spec = backoff::test::run_cli({"delays", "--policy", "constant(initial=5)"});
  EXPECT_EQ(spec.status, 2) << spec.out;  // a spec's durations need their unit
}

}  // namespace

namespace {

// A line per retried attempt on stderr by default, as Debian's retry; -q silences it, -v adds the
// attempt that succeeded.
TEST(Conventions, TryTellsEachRetryUnlessQuiet) {
  const std::vector<std::string> failing{"--times", "3",  "--every", "0.001",
                                         "--",      "sh", "-c",      "exit 3"};
  std::vector<std::string> args{"try"};
  args.insert(args.end(), failing.begin(), failing.end());
  const auto plain = backoff::test::run_cli(args);
  EXPECT_EQ(plain.status, 3);
  EXPECT_NE(plain.err.find("backoff try: attempt 1/3: exit status 3 after "), std::string::npos)
      << plain.err;
  EXPECT_NE(plain.err.find("; next attempt in 0.0"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("s\nbackoff try: attempt 2/3: exit status 3 after "), std::string::npos)
      << plain.err;
  EXPECT_NE(plain.err.find("backoff try: giving up: no attempts left\n"), std::string::npos)
      << plain.err;
  EXPECT_EQ(std::count(plain.err.begin(), plain.err.end(), '\n'), 3) << plain.err;

  args.insert(args.begin() + 1, "-q");
  const auto quiet = backoff::test::run_cli(args);
  EXPECT_EQ(quiet.status, 3);
  EXPECT_EQ(quiet.err, "");

  const auto ok = backoff::test::run_cli({"try", "--", "true"});
  EXPECT_EQ(ok.err, "");
  const auto verbose = backoff::test::run_cli({"try", "-v", "--", "true"});
  EXPECT_NE(verbose.err.find("attempt 1/5: exit status 0 after "), std::string::npos)
      << verbose.err;
  const auto both = backoff::test::run_cli({"try", "-q", "-v", "--", "true"});
  EXPECT_EQ(both.status, 125);
  EXPECT_EQ(both.err, "backoff try: give -q or -v, not both\n");
}

}  // namespace

namespace {

// --report -: stdout is the JSON report alone, the command's output goes to stderr.
TEST(Conventions, AReportOnStdoutIsNeverMixedWithTheCommandsOutput) {
  for (const bool held : {false, true}) {
    std::vector<std::string> args{"try", "--report", "-"};
    if (held) args.push_back("--stdout-on-success");
    // Prints "xyzzy", a word its command line does not hold (the report quotes the command).
    args.insert(args.end(), {"--", "printf", "%s%s\\n", "xy", "zzy"});
    const auto r = backoff::test::run_cli(args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.front(), '{') << r.out;
    EXPECT_EQ(r.out.find("xyzzy"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("xyzzy\n"), std::string::npos) << r.err;
  }
  const auto plain = backoff::test::run_cli({"try", "--", "printf", "%s%s\\n", "xy", "zzy"});
  EXPECT_EQ(plain.out, "xyzzy\n");
}

// Help shows the command's place and no CLI11 internals.
TEST(Conventions, HelpShowsTheCommandAndNoParserInternals) {
  const auto t = backoff::test::run_cli({"try", "--help"});
  EXPECT_NE(t.out.find("Usage: backoff try [OPTIONS] -- COMMAND [ARGS...]\n"), std::string::npos)
      << t.out;
  for (const char* sub : {"delays", "presets", "sim", "sweep", "try", "forany", "forall", "script",
                          "serve", "load", "proxy"}) {
    const auto h = backoff::test::run_cli({sub, "--help"});
    EXPECT_EQ(h.status, 0) << sub;
    for (const char* internal : {"TEXT", "UINT", "FLOAT", "{false}", "{true}", "./"}) {
      EXPECT_EQ(h.out.find(internal), std::string::npos) << sub << " shows " << internal;
    }
  }
}

}  // namespace
