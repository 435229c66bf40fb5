// SPDX-License-Identifier: Apache-2.0
// One prefix per command: every line a subcommand writes to stderr starts with "backoff
// <command>: ", its usage errors and the lines of its run alike (forany and forall items go on
// with "[ITEM] "; a script's lines with "FILE:LINE: "), and `backoff-try` is `backoff try`. Each
// command is run twice or so, about 20 processes in all, each well under a second: a usage error
// and a run that writes lines of its own. The handler's "backoff sim: interrupted" is tested where
// it is chosen (tests/tool/message_prefix_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using backoff::test::cli_result;
using backoff::test::shell_quote;

// `env` (NAME=value words, already quoted) before the program, stdin from /dev/null.
cli_result prefix_run(const std::string& program, const std::vector<std::string>& args,
                      const std::string& env = "") {
  std::string command = env.empty() ? std::string() : "env " + env + " ";
  command += shell_quote(program);
  for (const std::string& a : args) command += " " + shell_quote(a);
  return backoff::test::run_captured(command);
}

cli_result prefix_backoff(const std::vector<std::string>& args, const std::string& env = "") {
  return prefix_run(BACKOFF_CLI_PATH, args, env);
}

// Every line of stderr starts with `prefix`, there is at least one, and each of `said` is in it.
void prefix_expect_every_line(const cli_result& r, const std::string& prefix,
                              const std::vector<std::string>& said) {
  const std::vector<std::string> lines = r.err_lines();
  EXPECT_FALSE(lines.empty()) << "nothing on stderr";
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << "not from '" << prefix << "': " << line;
  }
  for (const std::string& s : said) {
    EXPECT_NE(r.err.find(s), std::string::npos) << "no '" << s << "' in:\n" << r.err;
  }
}

const std::vector<std::string> prefix_fast = {"--every", "0.001"};

std::vector<std::string> prefix_args(std::vector<std::string> head,
                                     const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(MessagePrefixCli, TryUsageErrorsAndRunLines) {
  const cli_result usage = prefix_backoff({"try", "--bogus", "--", "true"});
  EXPECT_EQ(usage.status, 125) << usage.err;
  prefix_expect_every_line(usage, "backoff try: ", {"unknown option '--bogus'"});

  // The inherited deadline's note, each retried attempt and why it gave up.
  const cli_result run = prefix_backoff(
      prefix_args({"try", "--times", "2"}, prefix_args(prefix_fast, {"--", "sh", "-c", "exit 3"})),
      "BACKOFF_DEADLINE=soon");
  EXPECT_EQ(run.status, 3) << run.err;
  prefix_expect_every_line(run, "backoff try: ",
                           {"BACKOFF_DEADLINE='soon' ignored", "attempt 1/2: exit status 3 after ",
                            "giving up: no attempts left"});
  EXPECT_EQ(run.err_lines().size(), 3u) << run.err;

  const cli_result missing =
      prefix_backoff({"try", "--times", "1", "--", "/nonexistent-backoff-dir/program"});
  EXPECT_EQ(missing.status, 127) << missing.err;
  prefix_expect_every_line(missing,
                           "backoff try: ", {"cannot run '/nonexistent-backoff-dir/program'"});
}

TEST(MessagePrefixCli, BackoffTryIsBackoffTry) {
  const cli_result usage = prefix_run(BACKOFF_TRY_PATH, {"--bogus", "--", "true"});
  EXPECT_EQ(usage.status, 125) << usage.err;
  prefix_expect_every_line(usage, "backoff try: ", {"unknown option '--bogus'"});

  const cli_result run =
      prefix_run(BACKOFF_TRY_PATH,
                 prefix_args({"-v", "--times", "2"}, prefix_args(prefix_fast, {"--", "false"})));
  EXPECT_EQ(run.status, 1) << run.err;
  prefix_expect_every_line(
      run, "backoff try: ", {"attempt 1/2: exit status 1", "giving up: no attempts left"});
}

TEST(MessagePrefixCli, ForanyUsageErrorsAndItemLines) {
  const cli_result usage = prefix_backoff({"forany", "a", "b"});
  EXPECT_EQ(usage.status, 125) << usage.err;
  prefix_expect_every_line(usage, "backoff forany: ", {"put '--' between the items"});

  // b succeeds in the second round: the items' lines, the wait, the winner.
  const cli_result run = prefix_backoff(prefix_args(
      {"forany", "-v", "--times", "2"},
      prefix_args(prefix_fast,
                  {"a", "b", "--", "sh", "-c", "[ {} = b ] && [ \"$BACKOFF_ATTEMPT\" = 2 ]"})));
  EXPECT_EQ(run.status, 0) << run.err;
  prefix_expect_every_line(
      run, "backoff forany: ",
      {"backoff forany: [a] attempt 1/2: exit status 1 after ", "; next: [b] at once",
       "backoff forany: [b] attempt 1/2: exit status 1 after ", "; next round (2/2) in ",
       "backoff forany: [b] attempt 2/2: exit status 0 after ", "backoff forany: b succeeded"});
}

TEST(MessagePrefixCli, ForallUsageErrorsAndItemLines) {
  const cli_result usage = prefix_backoff({"forall", "-q", "-v", "a", "--", "true"});
  EXPECT_EQ(usage.status, 125) << usage.err;
  prefix_expect_every_line(usage, "backoff forall: ", {"give -q or -v, not both"});

  const cli_result run = prefix_backoff(
      prefix_args({"forall", "-v", "-j", "1", "--times", "2"},
                  prefix_args(prefix_fast, {"a", "b", "--", "sh", "-c", "[ {} = a ]"})));
  EXPECT_EQ(run.status, 1) << run.err;
  prefix_expect_every_line(run, "backoff forall: ",
                           {"backoff forall: [a] attempt 1/2: exit status 0 after ",
                            "backoff forall: [b] attempt 2/2: exit status 1 after ",
                            "backoff forall: [b] giving up: no attempts left",
                            "backoff forall: b failed; the others were stopped"});
}

TEST(MessagePrefixCli, ScriptUsageParseAndRunLines) {
  const backoff::test::test_scratch scratch("prefix");
  const cli_result usage = prefix_backoff({"script", "--bogus", "x.ftsh"});
  EXPECT_EQ(usage.status, 125) << usage.err;
  prefix_expect_every_line(usage, "backoff script: ", {"unknown option '--bogus'"});

  const std::string piped = (scratch / "piped.ftsh").string();
  std::ofstream(piped) << "echo a | cat\n";
  const cli_result parse = prefix_backoff({"script", piped});
  EXPECT_EQ(parse.status, 125) << parse.err;
  prefix_expect_every_line(
      parse, "backoff script: ", {"backoff script: " + piped + ":1: pipes are not supported"});

  // -v: every command and attempt; then a variable that is not set stops the script.
  const std::string retried = (scratch / "retried.ftsh").string();
  std::ofstream(retried) << "try 2 times\n  sh -c \"exit 4\"\ncatch\n  echo ${UNSET_X}\nend\n";
  const cli_result run =
      prefix_backoff({"script", "-v", "--policy", "constant(initial=1ms)", retried});
  EXPECT_NE(run.status, 0) << run.err;
  prefix_expect_every_line(
      run,
      "backoff script: ", {"backoff script: " + retried + ":2: ", "variable 'UNSET_X' is not set"});
}

TEST(MessagePrefixCli, SimUsageErrorsAndRunLines) {
  const backoff::test::test_scratch scratch("prefix");
  const cli_result usage = prefix_backoff({"sim", "--bogus"});
  EXPECT_EQ(usage.status, 2) << usage.err;
  prefix_expect_every_line(usage, "backoff sim: ", {"unknown option '--bogus'"});

  const std::string out = (scratch / "sim").string();
  const cli_result run =
      prefix_backoff({"sim", "mm1", "--set", "replications=1", "--no-progress", "--out", out});
  EXPECT_EQ(run.status, 0) << run.err;
  prefix_expect_every_line(run, "backoff sim: ", {"outputs written to " + out});
}

TEST(MessagePrefixCli, SweepUsageErrorsAndRunLines) {
  const cli_result usage = prefix_backoff({"sweep", "--bogus"});
  EXPECT_EQ(usage.status, 2) << usage.err;
  prefix_expect_every_line(usage, "backoff sweep: ", {"unknown option '--bogus'"});

  const cli_result run = prefix_backoff({"sweep", "no-such-scenario-x"});
  EXPECT_EQ(run.status, 2) << run.err;
  prefix_expect_every_line(run, "backoff sweep: ", {"no-such-scenario-x: no such file"});
}

// serve, load and proxy: a value refused after the command line was parsed, by the command.
TEST(MessagePrefixCli, ServeLoadAndProxyRefuseValuesInTheirOwnName) {
  const cli_result serve = prefix_backoff({"serve", "--port", "0", "--factor", "0.5"});
  EXPECT_EQ(serve.status, 2) << serve.err;
  prefix_expect_every_line(serve, "backoff serve: ", {"--factor"});

  const cli_result load = prefix_backoff({"load", "--rate", "abc"});
  EXPECT_EQ(load.status, 2) << load.err;
  prefix_expect_every_line(load, "backoff load: ", {"--rate"});

  const cli_result proxy = prefix_backoff({"proxy", "--upstream", "127.0.0.1:0"});
  EXPECT_EQ(proxy.status, 2) << proxy.err;
  prefix_expect_every_line(proxy, "backoff proxy: ", {"port 0 is not a server's port"});
}

}  // namespace
