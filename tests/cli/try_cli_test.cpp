// SPDX-License-Identifier: Apache-2.0
// `backoff try`, `forany` and `forall` as a user runs them: real processes through `sh -c`, their
// statuses passed through, attempts stopped with their whole process group, deadlines kept,
// signals to the tool forwarded, and every misuse one line with exit status 125.
//
// Every command under test sleeps at most a fraction of a second (or is stopped by the tool);
// waits between attempts are 10 ms; time bounds are generous upper bounds, lower bounds only
// where the tool guarantees them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using backoff::test::cli_result;
using backoff::test::kill_if_alive;
using backoff::test::probe_result;
using backoff::test::process_probe;
using backoff::test::read_pids;
using backoff::test::shell_quote;
using backoff::test::slurp;
using backoff::test::wait_for_file;
using backoff::test::wait_for_text;
using backoff::test::wait_until_gone;
using nlohmann::json;

// Waits between attempts short enough that retries cost nothing.
const std::vector<std::string> fast{"--policy", "constant(initial=10ms)"};

// The scratch folder of the running test, created empty and removed at the end.
class try_scratch : public backoff::test::test_scratch {
 public:
  try_scratch() : test_scratch("try") {}
};

std::vector<std::string> concat_args(std::vector<std::string> a,
                                     const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct timed_result : cli_result {
  double elapsed_s = 0;
};

timed_result run_timed(const std::vector<std::string>& args) {
  const auto start = std::chrono::steady_clock::now();
  timed_result r;
  static_cast<cli_result&>(r) = backoff::test::run_cli(args);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

json read_report(const fs::path& file) {
  const std::string text = slurp(file);
  if (text.empty()) {
    ADD_FAILURE() << "no report at " << file;
    return json::object();
  }
  return json::parse(text);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Kills whatever pids a test's commands recorded, if a failing test left them running.
void kill_recorded(const fs::path& file) {
  for (const pid_t p : read_pids(file)) kill_if_alive(p);
}

// --- Success, retries and the exit status ------------------------------------------------------

TEST(Try, SucceedsAtOnceAndRunsTheCommandOnce) {
  const try_scratch s;
  const auto r = run_timed(concat_args(concat_args({"try", "--times", "3"}, fast),
                                       concat_args({"--"}, s.sh("echo run >> log"))));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "run\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

TEST(Try, RetriesUntilTheCommandSucceeds) {
  const try_scratch s;
  const auto r = run_timed(concat_args(concat_args({"try", "--times", "5"}, fast),
                                       concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> log; "
                                                                "[ $BACKOFF_ATTEMPT = 3 ]"))));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "1\n2\n3\n");
  EXPECT_LT(r.elapsed_s, 5);
}

TEST(Try, PassesTheLastExitStatusThrough) {
  const try_scratch s;
  const auto r =
      run_timed(concat_args(concat_args({"try", "--times", "3"}, fast),
                            concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> log; "
                                                     "exit $((BACKOFF_ATTEMPT + 10))"))));
  EXPECT_EQ(r.status, 13) << r.err;
  EXPECT_EQ(s.read("log"), "1\n2\n3\n");
}

TEST(Try, MakesFiveAttemptsByDefault) {
  const try_scratch s;
  const auto r = run_timed(concat_args(concat_args({"try"}, fast),
                                       concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT/"
                                                                "$BACKOFF_MAX_ATTEMPTS >> log; "
                                                                "exit 1"))));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(s.read("log"), "1/5\n2/5\n3/5\n4/5\n5/5\n");
}

TEST(Try, TimesZeroMeansNoLimitAndNoMaxAttemptsVariable) {
  const try_scratch s;
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "0"}, fast),
                  concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT/${BACKOFF_MAX_ATTEMPTS-unset} "
                                           ">> log; [ $BACKOFF_ATTEMPT = 7 ]"))));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "1/unset\n2/unset\n3/unset\n4/unset\n5/unset\n6/unset\n7/unset\n");
}

TEST(Try, CommandStartsAtTheFirstNonOptionWordWithoutDoubleDash) {
  const try_scratch s;
  // The "--times 9" after the command belongs to the command, not to backoff.
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "2"}, fast),
                  {"sh", "-c", "echo \"$@\" >> " + shell_quote((s / "log").string()) + "; exit 3",
                   "x", "--times", "9"}));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(s.read("log"), "--times 9\n--times 9\n");
}

TEST(Try, ADoubleDashInsideTheCommandIsPassedOn) {
  const auto r =
      run_timed({"try", "--times", "1", "--", "sh", "-c", "printf '%s\\n' \"$@\"", "x", "--", "y"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "--\ny\n");
}

// Without a leading "--", the command starts at its first word, so a "--" among its own arguments
// (`backoff try git checkout -- file`) must reach it as well.
TEST(Try, ADoubleDashInsideTheCommandIsPassedOnWithoutALeadingDoubleDash) {
  const auto r =
      run_timed({"try", "--times", "1", "sh", "-c", "printf '%s\\n' \"$@\"", "x", "--", "y"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "--\ny\n");
}

// --- Commands that cannot run, signals, statuses 126/127 ----------------------------------------

TEST(Try, ProgramNotFoundIs127OneLineAndNeverRetried) {
  const try_scratch s;
  for (const std::string program :
       {"/nonexistent-backoff-dir/no-such-program", "backoff-no-such-program-on-path"}) {
    SCOPED_TRACE(program);
    const auto r = run_timed(
        concat_args(concat_args({"try", "--times", "3", "--report", (s / "r.json").string()}, fast),
                    {"--", program, "arg"}));
    EXPECT_EQ(r.status, 127);
    const auto lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 1U) << r.err;
    EXPECT_EQ(lines[0].rfind("backoff try: cannot run '" + program + "': ", 0), 0U) << r.err;
    const json report = read_report(s / "r.json");
    ASSERT_EQ(report["attempts"].size(), 1U) << report.dump(2);
    EXPECT_EQ(report["attempts"][0]["ended"], "not_found");
    EXPECT_EQ(report["attempts"][0]["status"], 127);
    EXPECT_EQ(report["outcome"], "not_retryable");
    EXPECT_EQ(report["status"], 127);
  }
}

TEST(Try, NotExecutableIs126OneLineAndNeverRetried) {
  const try_scratch s;
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "3", "--report", (s / "r.json").string()}, fast),
                  {"--", "/etc/passwd"}));
  EXPECT_EQ(r.status, 126);
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  EXPECT_EQ(lines[0].rfind("backoff try: cannot run '/etc/passwd': ", 0), 0U) << r.err;
  const json report = read_report(s / "r.json");
  ASSERT_EQ(report["attempts"].size(), 1U);
  EXPECT_EQ(report["attempts"][0]["ended"], "not_executable");
  EXPECT_EQ(report["outcome"], "not_retryable");
}

TEST(Try, ShellStatuses126And127AreNotRetried) {
  const try_scratch s;
  for (const int status : {126, 127}) {
    SCOPED_TRACE(status);
    const std::string log = "log" + std::to_string(status);
    const auto r = run_timed(concat_args(
        concat_args({"try", "--times", "4"}, fast),
        concat_args({"--"}, s.sh("echo x >> " + log + "; exit " + std::to_string(status)))));
    EXPECT_EQ(r.status, status) << r.err;
    EXPECT_EQ(s.read(log), "x\n");
  }
}

TEST(Try, DeathBySignalIs128PlusTheSignalAndIsRetried) {
  const try_scratch s;
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "2", "--report", (s / "r.json").string()}, fast),
                  concat_args({"--"}, s.sh("echo x >> log; kill -9 $$"))));
  EXPECT_EQ(r.status, 137) << r.err;
  EXPECT_EQ(s.read("log"), "x\nx\n");
  const json report = read_report(s / "r.json");
  ASSERT_EQ(report["attempts"].size(), 2U);
  for (const json& a : report["attempts"]) {
    EXPECT_EQ(a["ended"], "signaled");
    EXPECT_EQ(a["status"], 137);
    EXPECT_EQ(a["signal"], 9);
    EXPECT_TRUE(a["exit_code"].is_null());
  }
  EXPECT_EQ(report["status"], 137);
}

// --- Timeouts and process groups ---------------------------------------------------------------

TEST(Try, TimeoutStopsAnAttemptWith124AndRetriesIt) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args(
          {"try", "--times", "2", "--timeout", "200ms", "--report", (s / "r.json").string()}, fast),
      concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> log; sleep 30"))));
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_EQ(s.read("log"), "1\n2\n");
  EXPECT_LT(r.elapsed_s, 5);
  const json report = read_report(s / "r.json");
  ASSERT_EQ(report["attempts"].size(), 2U);
  for (const json& a : report["attempts"]) {
    EXPECT_EQ(a["ended"], "timed_out");
    EXPECT_EQ(a["status"], 124);
    EXPECT_GE(a["duration_s"].get<double>(), 0.15);  // not stopped before its time
  }
  EXPECT_EQ(report["outcome"], "attempts_exhausted");
  EXPECT_EQ(report["status"], 124);
}

TEST(Try, AnAttemptThatTimedOutIsFollowedByOneThatSucceeds) {
  const try_scratch s;
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "3", "--timeout", "200ms"}, fast),
                  concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> log; "
                                           "if [ $BACKOFF_ATTEMPT = 1 ]; then sleep 30; fi"))));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "1\n2\n");
  EXPECT_LT(r.elapsed_s, 5);
}

TEST(Try, TimeoutStopsTheAttemptsWholeProcessGroup) {
  const try_scratch s;
  const auto r = run_timed(concat_args({"try", "--times", "1", "--timeout", "300ms", "--"},
                                       s.sh("sleep 30 & echo $! > grandchild; wait")));
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  const auto pids = read_pids(s / "grandchild");
  ASSERT_EQ(pids.size(), 1U);
  EXPECT_TRUE(wait_until_gone(pids[0], 2s)) << "the backgrounded sleep survived the timeout";
  kill_recorded(s / "grandchild");
}

TEST(Try, AChildThatIgnoresTermIsKilledAfterTheGrace) {
  const try_scratch s;
  const auto r =
      run_timed(concat_args({"try", "--times", "1", "--timeout", "200ms", "--grace", "200ms", "--"},
                            s.sh("trap '' TERM; echo $$ > pid; sleep 30")));
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  const auto pids = read_pids(s / "pid");
  ASSERT_EQ(pids.size(), 1U);
  EXPECT_TRUE(wait_until_gone(pids[0], 2s));
  kill_recorded(s / "pid");
}

TEST(Try, AFailedAttemptLeavesNoGrandchildBehind) {
  const try_scratch s;
  // The second attempt looks whether the first one's grandchild is still there: it must not be.
  const std::string look =
      "if [ $BACKOFF_ATTEMPT = 2 ]; then p=$(head -n 1 grandchildren); "
      "st=$(sed 's/.*) \\(.\\).*/\\1/' /proc/$p/stat 2>/dev/null); "
      "echo \"first:${st:-gone}\" > seen; fi; ";
  const auto r =
      run_timed(concat_args(concat_args({"try", "--times", "2"}, fast),
                            concat_args({"--"}, s.sh(look + "sleep 30 & echo $! >> grandchildren; "
                                                            "exit 1"))));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  const std::string seen = s.read("seen");
  EXPECT_TRUE(seen == "first:gone\n" || seen == "first:Z\n") << seen;
  const auto pids = read_pids(s / "grandchildren");
  ASSERT_EQ(pids.size(), 2U);
  for (const pid_t p : pids) EXPECT_TRUE(wait_until_gone(p, 2s)) << p;
  kill_recorded(s / "grandchildren");
}

TEST(Try, ASuccessfulAttemptLeavesItsBackgroundJobRunning) {
  const try_scratch s;
  const auto r = run_timed(concat_args({"try", "--times", "1", "--"},
                                       s.sh("(sleep 0.3; echo finished > background) & exit 0")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(wait_for_file(s / "background", 5s)) << "the background job was stopped";
}

// Under --until 3, an attempt that exits 0 has failed: its leftovers must be stopped like any
// failed attempt's.
TEST(Try, AnAttemptThatFailedUnderUntilAlsoLeavesNoGrandchild) {
  const try_scratch s;
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "2", "--until", "3"}, fast),
                  concat_args({"--"}, s.sh("sleep 30 & echo $! >> grandchildren; exit 0"))));
  EXPECT_EQ(r.status, 0) << r.err;  // the last status, passed through
  const auto pids = read_pids(s / "grandchildren");
  ASSERT_EQ(pids.size(), 2U);
  for (const pid_t p : pids) EXPECT_TRUE(wait_until_gone(p, 1s)) << "grandchild " << p;
  kill_recorded(s / "grandchildren");
}

TEST(Try, ForegroundRunsTheCommandInTheToolsProcessGroup) {
  const try_scratch s;
  const std::string script =
      "read -r pid comm state ppid pgrp rest < /proc/$$/stat; "
      "echo \"$$ $pgrp\" > groups";
  {
    process_probe p(concat_args({"try", "--times", "1", "--"}, s.sh(script)));
    const probe_result r = p.wait();
    EXPECT_EQ(r.status, 0) << r.err;
    std::istringstream in(s.read("groups"));
    long self = 0;
    long group = 0;
    in >> self >> group;
    EXPECT_EQ(self, group) << "an attempt leads its own process group";
  }
  {
    process_probe p(concat_args({"try", "--times", "1", "--foreground", "--"}, s.sh(script)));
    const probe_result r = p.wait();
    EXPECT_EQ(r.status, 0) << r.err;
    std::istringstream in(s.read("groups"));
    long self = 0;
    long group = 0;
    in >> self >> group;
    EXPECT_EQ(group, p.pid()) << "--foreground: in backoff's group (the probe made it a leader)";
  }
}

// --- The command's environment -----------------------------------------------------------------

TEST(Try, TellsTheCommandItsAttemptNumberAndTheLimit) {
  const try_scratch s;
  process_probe p(
      concat_args(concat_args({"try", "--times", "3"}, fast),
                  concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT/$BACKOFF_MAX_ATTEMPTS/"
                                           "${BACKOFF_DEADLINE-none} >> log; exit 1"))));
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(s.read("log"), "1/3/none\n2/3/none\n3/3/none\n");
}

TEST(Try, ForSetsADeadlineVariableAndNoAttemptLimit) {
  const try_scratch s;
  const double before = unix_now();
  process_probe p(concat_args(concat_args({"try", "--for", "60s"}, fast),
                              concat_args({"--"}, s.sh("echo ${BACKOFF_MAX_ATTEMPTS-unset} "
                                                       "$BACKOFF_DEADLINE >> log; "
                                                       "[ $BACKOFF_ATTEMPT = 7 ]"))));
  const probe_result r = p.wait();
  const double after = unix_now();
  EXPECT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(s.read("log"));
  ASSERT_EQ(lines.size(), 7U) << "--for alone: more than the default 5 attempts";
  for (const std::string& line : lines) {
    std::istringstream in(line);
    std::string max;
    std::string deadline;
    in >> max >> deadline;
    EXPECT_EQ(max, "unset");
    ASSERT_TRUE(std::regex_match(deadline, std::regex("[0-9]+"))) << "whole seconds: " << line;
    const double at = std::stod(deadline);
    EXPECT_GE(at, std::floor(before) + 60 - 2) << line;
    EXPECT_LE(at, after + 60 + 1) << line;
  }
}

TEST(Try, AnInheritedDeadlineThatHasPassedRunsNoAttempt) {
  const try_scratch s;
  const auto past = static_cast<long long>(unix_now()) - 10;
  process_probe p(
      concat_args({"try", "--report", (s / "r.json").string(), "--"}, s.sh("echo ran > log")),
      std::nullopt, {"BACKOFF_DEADLINE=" + std::to_string(past)});
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_FALSE(s.has("log"));
  EXPECT_NE(r.err.find("no attempt made: the inherited deadline (BACKOFF_DEADLINE) has passed"),
            std::string::npos)
      << "a run that does nothing must say why: " << r.err;
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["outcome"], "deadline_exceeded");
  EXPECT_EQ(report["status"], 124);
  EXPECT_TRUE(report["attempts"].empty());
}

// A daemon started by a successful `try --for 2s` runs `backoff try` later: the deadline it
// inherited ended with the run that set it, so it is ignored (with a note) and the command runs.
TEST(Try, ADeadlineWhoseOwnerHasEndedIsIgnored) {
  const try_scratch s;
  process_probe p(concat_args({"try", "--"}, s.sh("echo ran > log")), std::nullopt,
                  {"BACKOFF_DEADLINE=0", "BACKOFF_DEADLINE_OWNER=999999999:5"});
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "ran\n");
  EXPECT_NE(r.err.find("BACKOFF_DEADLINE ignored: the backoff run that set it"), std::string::npos)
      << r.err;
}

// The owner a run hands its commands is itself, while it runs.
TEST(Try, ACommandLearnsWhoOwnsItsDeadline) {
  const try_scratch s;
  process_probe p(concat_args({"try", "--for", "60s", "--"},
                              s.sh("echo $PPID $BACKOFF_DEADLINE_OWNER > owner")));
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream words(s.read("owner"));
  std::string parent, owner;
  words >> parent >> owner;
  EXPECT_EQ(owner.rfind(parent + ":", 0), 0u) << parent << " " << owner;
}

TEST(Try, AnInheritedDeadlineTighterThanForWins) {
  const try_scratch s;
  const auto soon = static_cast<long long>(std::ceil(unix_now())) + 2;
  process_probe p(concat_args({"try", "--for", "60s", "--"},
                              s.sh("echo $BACKOFF_DEADLINE > deadline; sleep 30")),
                  std::nullopt, {"BACKOFF_DEADLINE=" + std::to_string(soon)});
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  // Passed on in whole seconds, rounded down: the same second, or one earlier after the round
  // trip through the steady clock.
  const std::string passed = s.read("deadline");
  EXPECT_TRUE(passed == std::to_string(soon) + "\n" || passed == std::to_string(soon - 1) + "\n")
      << passed << " for " << soon;
}

// An inner `backoff try --times 0` inside an outer `backoff try --times 2`: the inner command
// has no attempt limit, so BACKOFF_MAX_ATTEMPTS must not be there (not the outer's 2).
TEST(Try, NestedTryWithoutALimitDoesNotPassTheOuterLimitOn) {
  const try_scratch s;
  process_probe p(
      concat_args({"try", "--times", "2", "--", BACKOFF_CLI_PATH, "try", "--times", "0", "--"},
                  s.sh("echo $BACKOFF_ATTEMPT/${BACKOFF_MAX_ATTEMPTS-unset} >> log")));
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "1/unset\n");
}

// --- Standard input and output -----------------------------------------------------------------

TEST(Try, ReplayStdinGivesEveryAttemptTheWholeInput) {
  const try_scratch s;
  process_probe p(concat_args(concat_args({"try", "--times", "3", "--replay-stdin"}, fast),
                              concat_args({"--"}, s.sh("cat > in.$BACKOFF_ATTEMPT; exit 1"))),
                  "hello\n");
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 1) << r.err;
  for (const std::string f : {"in.1", "in.2", "in.3"}) EXPECT_EQ(s.read(f), "hello\n") << f;
}

TEST(Try, ReplayStdinGivesEveryAttemptALargeInputWhole) {
  const try_scratch s;
  std::string big;
  for (int i = 0; i < 40000; ++i) big += "line " + std::to_string(i) + "\n";  // ~400 KB
  process_probe p(concat_args(concat_args({"try", "--times", "2", "--replay-stdin"}, fast),
                              concat_args({"--"}, s.sh("cat > in.$BACKOFF_ATTEMPT; exit 1"))),
                  big);
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(s.read("in.1") == big);
  EXPECT_TRUE(s.read("in.2") == big);
}

TEST(Try, ReplayStdinWithAnEmptyInput) {
  const try_scratch s;
  process_probe p(concat_args(concat_args({"try", "--times", "2", "--replay-stdin"}, fast),
                              concat_args({"--"}, s.sh("cat > in.$BACKOFF_ATTEMPT; exit 1"))),
                  "");
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(s.has("in.1"));
  EXPECT_TRUE(s.has("in.2"));
  EXPECT_EQ(s.read("in.1"), "");
  EXPECT_EQ(s.read("in.2"), "");
}

// Issue 40: stdin that never ends was spooled until SIGXFSZ killed the tool (status 153, no
// message) or the disk was full. The spool is bounded: one line, 125, nothing run.
TEST(Try, ReplayStdinLargerThanItsLimitIsOneLineAnd125AndRunsNothing) {
  const try_scratch s;
  const std::string input(300 * 1024, 'x');
  process_probe p(concat_args({"try", "--replay-stdin", "--replay-stdin-limit", "256KiB", "--"},
                              s.sh("echo ran > log")),
                  input);
  const probe_result r = p.wait();
  EXPECT_TRUE(r.exited) << "died of signal " << r.status - 128;
  EXPECT_EQ(r.status, 125) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  EXPECT_TRUE(contains(lines[0], "--replay-stdin-limit (256KiB)")) << lines[0];
  EXPECT_FALSE(s.has("log")) << "the command ran";

  // At the limit exactly: spooled and replayed.
  process_probe at(concat_args({"try", "--replay-stdin", "--replay-stdin-limit", "300KiB", "--"},
                               s.sh("wc -c < /dev/stdin > size")),
                   input);
  const probe_result ok = at.wait();
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(s.read("size"), std::to_string(input.size()) + "\n");
}

// Runs the shell script `text` (in the scratch folder; @BACKOFF@ is the tool) and times it.
timed_result run_shell(const try_scratch& s, std::string text) {
  for (std::size_t at; (at = text.find("@BACKOFF@")) != std::string::npos;) {
    text.replace(at, 9, shell_quote(BACKOFF_CLI_PATH));
  }
  std::ofstream(s / "run.sh") << "cd " << shell_quote(s.dir().string()) << " || exit 99\n"
                              << text << '\n';
  const auto start = std::chrono::steady_clock::now();
  timed_result r;
  static_cast<cli_result&>(r) = backoff::test::run_captured("sh " + shell_quote((s / "run.sh")));
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

TEST(Try, ReplayStdinThatNeverEndsStopsAtTheLimit) {
  const try_scratch s;
  const auto r = run_shell(
      s, "yes | @BACKOFF@ try --replay-stdin --replay-stdin-limit 1MiB -- sh -c 'echo ran > log'");
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1U) << r.err;
  EXPECT_TRUE(contains(r.err, "standard input is larger than --replay-stdin-limit (1MiB)"))
      << r.err;
  EXPECT_FALSE(s.has("log"));
  EXPECT_LT(r.elapsed_s, 10);
}

// The file-size limit (`ulimit -f`, 512-byte blocks) ends the spool with EFBIG, not the tool with
// SIGXFSZ.
TEST(Try, ReplayStdinPastTheFileSizeLimitIsOneLineAnd125) {
  const try_scratch s;
  const auto r = run_shell(s,
                           "yes | (ulimit -f 64 && exec @BACKOFF@ try --replay-stdin -- sh -c "
                           "'echo ran > log')");
  EXPECT_EQ(r.status, 125) << "153 is death by SIGXFSZ: " << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  EXPECT_EQ(lines[0].rfind("backoff try: --replay-stdin: ", 0), 0U) << lines[0];
  EXPECT_TRUE(contains(lines[0], "ulimit -f")) << lines[0];
  EXPECT_FALSE(s.has("log"));
}

// The tool ignores SIGPIPE and SIGXFSZ (a closed output, the file-size limit are errors it
// handles); its commands get them back as the tool found them, so that `cmd | head -1` in an
// attempt still ends `cmd`.
TEST(Try, TheCommandGetsSigpipeAndSigxfszAtTheirDefaults) {
  const try_scratch s;
  process_probe p(
      concat_args({"try", "--times", "1", "--"}, s.sh("grep SigIgn /proc/$$/status > ignored")));
  const probe_result r = p.wait();
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string line = s.read("ignored");
  ASSERT_EQ(line.rfind("SigIgn:", 0), 0U) << line;
  const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
  EXPECT_EQ(mask >> (SIGPIPE - 1) & 1U, 0U) << "SIGPIPE ignored in the command: " << line;
  struct sigaction ours {};
  ::sigaction(SIGXFSZ, nullptr, &ours);  // the tool gets this one as the test has it
  if (ours.sa_handler != SIG_IGN) {
    EXPECT_EQ(mask >> (SIGXFSZ - 1) & 1U, 0U) << "SIGXFSZ ignored in the command: " << line;
  }
}

TEST(Try, WithoutReplayOnlyTheFirstAttemptReadsStdin) {
  const try_scratch s;
  process_probe p(concat_args(concat_args({"try", "--times", "3"}, fast),
                              concat_args({"--"}, s.sh("cat > in.$BACKOFF_ATTEMPT; exit 1"))),
                  "hello\n");
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(s.read("in.1"), "hello\n");
  EXPECT_EQ(s.read("in.2"), "");
  EXPECT_EQ(s.read("in.3"), "");
}

TEST(Try, StdoutOnSuccessPassesOnOnlyTheSuccessfulAttemptsOutput) {
  const std::vector<std::string> command{"sh", "-c",
                                         "echo out$BACKOFF_ATTEMPT; [ $BACKOFF_ATTEMPT = 3 ]"};
  const auto held = run_timed(
      concat_args(concat_args({"try", "--stdout-on-success"}, fast), concat_args({"--"}, command)));
  EXPECT_EQ(held.status, 0) << held.err;
  EXPECT_EQ(held.out, "out3\n");
  EXPECT_TRUE(contains(held.err, "out1\n")) << held.err;
  EXPECT_TRUE(contains(held.err, "out2\n")) << held.err;
  EXPECT_FALSE(contains(held.err, "out3")) << held.err;

  const auto plain =
      run_timed(concat_args(concat_args({"try"}, fast), concat_args({"--"}, command)));
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out, "out1\nout2\nout3\n") << "without the flag, every attempt's stdout";
}

TEST(Try, StdoutOnSuccessSendsEveryOutputToStderrWhenAllFail) {
  const auto r =
      run_timed(concat_args(concat_args({"try", "-q", "--times", "2", "--stdout-on-success"}, fast),
                            {"--", "sh", "-c", "echo out$BACKOFF_ATTEMPT; exit 1"}));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "out1\nout2\n");
}

// --- Verbose and the report --------------------------------------------------------------------

TEST(Try, VerboseLogsEachAttemptAndTheNextDelay) {
  const auto r = run_timed(concat_args(concat_args({"try", "-v"}, fast),
                                       {"--", "sh", "-c", "[ $BACKOFF_ATTEMPT = 2 ]"}));
  EXPECT_EQ(r.status, 0);
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 2U) << r.err;
  EXPECT_TRUE(std::regex_match(
      lines[0], std::regex(R"(backoff try: attempt 1/5: exit status 1 after [0-9]+\.[0-9]{3}s; )"
                           R"(next attempt in 0\.010s)")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1],
      std::regex(R"(backoff try: attempt 2/5: exit status 0 after [0-9]+\.[0-9]{3}s: done)")))
      << lines[1];
}

TEST(Try, VerboseSaysWhenItGivesUp) {
  const auto r = run_timed(concat_args(concat_args({"try", "--verbose", "--times", "2"}, fast),
                                       {"--", "sh", "-c", "exit 4"}));
  EXPECT_EQ(r.status, 4);
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 3U) << r.err;
  EXPECT_TRUE(std::regex_match(
      lines[0],
      std::regex(R"(backoff try: attempt 1/2: exit status 4 after [0-9.]+s; next attempt in )"
                 R"(0\.010s)")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1], std::regex(R"(backoff try: attempt 2/2: exit status 4 after [0-9.]+s)")))
      << lines[1];
  EXPECT_EQ(lines[2], "backoff try: giving up: no attempts left");
}

TEST(Try, ReportDescribesEveryAttempt) {
  const try_scratch s;
  const double before = unix_now();
  const std::vector<std::string> command{"sh", "-c", "[ $BACKOFF_ATTEMPT = 2 ] || exit 5"};
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "3", "--report", (s / "r.json").string()}, fast),
                  concat_args({"--"}, command)));
  const double after = unix_now();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["mode"], "try");
  EXPECT_EQ(report["command"], json(command));
  EXPECT_EQ(report["outcome"], "succeeded");
  EXPECT_EQ(report["status"], 0);
  EXPECT_TRUE(report["interrupted_by_signal"].is_null());
  const json& attempts = report["attempts"];
  ASSERT_EQ(attempts.size(), 2U) << report.dump(2);
  EXPECT_EQ(attempts[0]["attempt"], 1);
  EXPECT_EQ(attempts[0]["ended"], "exited");
  EXPECT_EQ(attempts[0]["status"], 5);
  EXPECT_EQ(attempts[0]["exit_code"], 5);
  EXPECT_TRUE(attempts[0]["signal"].is_null());
  EXPECT_NEAR(attempts[0]["delay_s"].get<double>(), 0.010, 1e-6);
  EXPECT_EQ(attempts[1]["attempt"], 2);
  EXPECT_EQ(attempts[1]["status"], 0);
  EXPECT_EQ(attempts[1]["exit_code"], 0);
  EXPECT_TRUE(attempts[1]["delay_s"].is_null());
  for (const json& a : attempts) {
    EXPECT_GE(a["start"].get<double>(), before - 1);
    EXPECT_LE(a["start"].get<double>(), after + 1);
    EXPECT_GE(a["duration_s"].get<double>(), 0);
    EXPECT_LT(a["duration_s"].get<double>(), 5);
  }
  // The second starts after the first ended and its wait passed.
  EXPECT_GE(attempts[1]["start"].get<double>() + 0.002,
            attempts[0]["start"].get<double>() + attempts[0]["duration_s"].get<double>() + 0.010);
}

TEST(Try, ReportOfARunThatGaveUp) {
  const auto r = run_timed(concat_args(concat_args({"try", "--times", "3", "--report", "-"}, fast),
                                       {"--", "sh", "-c", "exit 2"}));
  EXPECT_EQ(r.status, 2);
  const json report = json::parse(r.out);  // --report -: stdout
  EXPECT_EQ(report["outcome"], "attempts_exhausted");
  EXPECT_EQ(report["status"], 2);
  ASSERT_EQ(report["attempts"].size(), 3U);
  EXPECT_FALSE(report["attempts"][0]["delay_s"].is_null());
  EXPECT_FALSE(report["attempts"][1]["delay_s"].is_null());
  EXPECT_TRUE(report["attempts"][2]["delay_s"].is_null());
}

std::vector<double> jittered_delays(const std::string& seed) {
  const auto r =
      run_timed({"try", "--times", "5", "--seed", seed, "--policy",
                 "exponential(initial=10ms,jitter=full)", "--report", "-", "--", "false"});
  EXPECT_EQ(r.status, 1) << r.err;
  const json report = json::parse(r.out);
  std::vector<double> delays;
  const json& attempts = report["attempts"];
  EXPECT_EQ(attempts.size(), 5U);
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    if (i + 1 == attempts.size()) {
      EXPECT_TRUE(attempts[i]["delay_s"].is_null()) << "the last attempt has no delay after it";
    } else {
      delays.push_back(attempts[i]["delay_s"].get<double>());
    }
  }
  return delays;
}

TEST(Try, TheSameSeedGivesTheSameJitteredDelays) {
  const auto first = jittered_delays("7");
  const auto second = jittered_delays("7");
  ASSERT_EQ(first.size(), 4U);
  EXPECT_EQ(first, second);
  for (const double d : first) {
    EXPECT_GE(d, 0);
    EXPECT_LE(d, 0.2);
  }
  EXPECT_NE(jittered_delays("8"), first) << "another seed, other delays";
}

// --- Deadlines ---------------------------------------------------------------------------------

// --for is a hard cap (issue 40): a wait that would reach the deadline ends the run at once, with
// the last status; before, the wait was cut to end at the deadline and one last attempt was made
// there, which nothing stopped.
TEST(Try, ForEndsTheRunWhenTheNextWaitWouldReachTheDeadline) {
  const try_scratch s;
  const auto r = run_timed({"try", "--for", "5s", "--policy", "constant(initial=1h)", "-v",
                            "--report", (s / "r.json").string(), "--", "false"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "giving up: the next wait would reach the deadline, 4.")) << r.err;
  EXPECT_FALSE(contains(r.err, "next attempt in")) << r.err;
  // Well before the deadline (5 s), with room for a sanitizer's start-up.
  EXPECT_LT(r.elapsed_s, 3.0) << "waited for nothing";
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["outcome"], "deadline_exceeded");
  EXPECT_EQ(report["status"], 1);
  ASSERT_EQ(report["attempts"].size(), 1U);
  EXPECT_TRUE(report["attempts"][0]["delay_s"].is_null());
}

// Every attempt is stopped at the deadline, the one after a wait too, and knows the deadline;
// the run ends within it plus the grace.
TEST(Try, EveryAttemptIsStoppedAtTheDeadline) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      {"try", "--for", "1s", "--grace", "200ms", "--policy", "constant(initial=300ms)", "--report",
       (s / "r.json").string(), "--"},
      s.sh("echo ${BACKOFF_DEADLINE-none} >> log; [ $BACKOFF_ATTEMPT = 2 ] && exec sleep 30; "
           "exit 3")));
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_GE(r.elapsed_s, 0.9);
  // The deadline and the grace, with room for a sanitizer's start-up (the attempt sleeps 30 s).
  EXPECT_LT(r.elapsed_s, 1.0 + 0.2 + 2.0) << "ran past the deadline and the grace";
  const json report = read_report(s / "r.json");
  ASSERT_EQ(report["attempts"].size(), 2U) << report.dump(1);
  EXPECT_EQ(report["attempts"][1]["ended"], "timed_out");
  for (const std::string& line : lines_of(s.read("log"))) {
    EXPECT_TRUE(std::regex_match(line, std::regex("[0-9]+"))) << "no deadline given: " << line;
  }
}

// The issue's case, scaled down: `backoff try --for 4s -- sh -c 'backoff try --for 1h -- ...'`
// ran 601 s. The nested try sees the time left (never an empty BACKOFF_DEADLINE) and the whole
// run ends within the outer deadline plus the grace.
TEST(Try, ANestedTryKeepsTheOuterDeadline) {
  const try_scratch s;
  const double before = unix_now();
  const auto r = run_timed(concat_args(
      {"try", "--for", "2s", "--grace", "200ms", "--"},
      s.sh("echo $BACKOFF_DEADLINE >> outer; exec " + shell_quote(BACKOFF_CLI_PATH) +
           " try --for 1h --grace 200ms -- sh -c 'echo $BACKOFF_DEADLINE >> inner; exec sleep "
           "30'")));
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(r.elapsed_s, 2.0 + 0.2 + 2.0) << r.err;  // room for a sanitizer's start-up
  const auto outer = lines_of(s.read("outer"));
  const auto inner = lines_of(s.read("inner"));
  ASSERT_FALSE(outer.empty());
  ASSERT_FALSE(inner.empty()) << "the nested command never ran: " << r.err;
  for (const std::string& line : inner) {
    ASSERT_TRUE(std::regex_match(line, std::regex("[0-9]+"))) << "inner deadline: " << line;
    EXPECT_LE(std::stoll(line), std::stoll(outer[0])) << "the nested run's deadline is later";
    EXPECT_LE(std::stod(line), before + 2 + 1);
  }
}

TEST(Try, ForStopsTheRunningAttemptAtTheDeadline) {
  const try_scratch s;
  const auto r =
      run_timed({"try", "--for", "300ms", "--report", (s / "r.json").string(), "--", "sleep", "5"});
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(r.elapsed_s, 3);
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["outcome"], "deadline_exceeded");
  ASSERT_EQ(report["attempts"].size(), 1U);
  EXPECT_EQ(report["attempts"][0]["ended"], "timed_out");
  EXPECT_GE(report["attempts"][0]["duration_s"].get<double>(), 0.25);
}

TEST(Try, ForStartsNoAttemptAfterTheDeadline) {
  const try_scratch s;
  const auto r = run_timed({"try", "--for", "500ms", "--policy", "constant(initial=50ms)",
                            "--report", (s / "r.json").string(), "--", "false"});
  EXPECT_LT(r.elapsed_s, 3);
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["outcome"], "deadline_exceeded");
  const json& attempts = report["attempts"];
  ASSERT_GE(attempts.size(), 2U) << "retried within the deadline";
  const double first = attempts[0]["start"].get<double>();
  // 0.1 s for the start of the loop before the first attempt and the clocks' reading.
  for (const json& a : attempts) {
    EXPECT_LE(a["start"].get<double>() - first, 0.5 + 0.1) << report.dump(1);
  }
  // No wait after the last attempt, unless it was planned to end before the deadline and the
  // wake-up came late (a loaded machine, a sanitizer): then the deadline, checked again after the
  // wait, ended the run without another attempt.
  const json& last = attempts.back();
  if (!last["delay_s"].is_null()) {
    const double planned_wake = last["start"].get<double>() - first +
                                last["duration_s"].get<double>() + last["delay_s"].get<double>();
    EXPECT_LT(planned_wake, 0.5 + 0.1) << report.dump(1);
  }
  // The status of `false`; or, on a loaded machine, 124 if the last attempt started just before
  // the deadline and was stopped at it.
  if (attempts.back()["ended"] == "timed_out") {
    EXPECT_EQ(r.status, 124) << r.err;
  } else {
    EXPECT_EQ(r.status, 1) << r.err;
  }
}

// The deadline is checked again after the wait: a wait planned to end before it that overran it
// (here: the tool stopped with SIGSTOP during the wait, as Ctrl-Z does, and continued after the
// deadline; on a loaded machine a late wake-up can overrun it too) starts no further attempt.
TEST(Try, AWaitThatOverranTheDeadlineStartsNoFurtherAttempt) {
  const try_scratch s;
  process_probe p(concat_args({"try", "--for", "1s", "--policy", "constant(initial=200ms)", "-v",
                               "--report", (s / "r.json").string(), "--"},
                              s.sh("echo x >> log; exit 1")));
  ASSERT_TRUE(wait_for_text(p.err_path(), "next attempt in"));
  p.signal(SIGSTOP);
  std::this_thread::sleep_for(1300ms);
  p.signal(SIGCONT);
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 1) << r.err;
  const json report = read_report(s / "r.json");
  const json& attempts = report["attempts"];
  ASSERT_GE(attempts.size(), 1U);
  EXPECT_EQ(attempts.size(), 1U) << report.dump(1);
  for (const json& a : attempts) {
    EXPECT_LE(a["start"].get<double>() - attempts[0]["start"].get<double>(), 1.0) << a.dump();
  }
  EXPECT_EQ(report["outcome"], "deadline_exceeded");
}

TEST(Try, ForWithTimesStopsAtWhicheverComesFirst) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args({"try", "--for", "30s", "--times", "2", "--report", (s / "r.json").string()},
                  fast),
      concat_args({"--"}, s.sh("echo $BACKOFF_MAX_ATTEMPTS >> log; exit 1"))));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(s.read("log"), "2\n2\n");
  EXPECT_EQ(read_report(s / "r.json")["outcome"], "attempts_exhausted");
}

// The duration parser takes up to about 292 years; a --for that long is a deadline too far to
// matter, so the command must run (or the value be refused as a tool error), never be "out of
// time" before it starts.
TEST(Try, AVeryLongForStillRunsTheCommand) {
  const try_scratch s;
  const auto r =
      run_timed(concat_args({"try", "--for", "9223372036s", "--"}, s.sh("echo ran > log")));
  if (r.status == 125) {
    EXPECT_EQ(lines_of(r.err).size(), 1U) << r.err;
    EXPECT_TRUE(contains(r.err, "--for")) << r.err;
  } else {
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(s.read("log"), "ran\n") << "no attempt ran";
  }
}

// Likewise a very long --every: the second attempt must not start at once.
TEST(Try, AVeryLongEveryStillWaitsBetweenAttempts) {
  const try_scratch s;
  process_probe p(concat_args({"try", "--times", "2", "--every", "9223372036s", "--"},
                              s.sh("echo x >> log; exit 1")));
  ASSERT_TRUE(wait_for_file(s / "log"));
  std::this_thread::sleep_for(500ms);
  p.signal(SIGTERM);
  const probe_result r = p.wait();
  if (r.status == 125) {
    EXPECT_EQ(lines_of(r.err).size(), 1U) << r.err;
  } else {
    EXPECT_EQ(r.status, 143) << r.err;
    EXPECT_EQ(s.read("log"), "x\n") << "the second attempt did not wait";
  }
}

// --- --until and --while -----------------------------------------------------------------------

TEST(Try, UntilStopsOnAnyItemOfTheList) {
  const try_scratch s;
  for (const std::string list : {"3,4", "4,3"}) {
    SCOPED_TRACE(list);
    const std::string log = "log" + list;
    const auto r =
        run_timed(concat_args(concat_args({"try", "--times", "3", "--until", list}, fast),
                              concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> '" + log +
                                                       "'; exit $((BACKOFF_ATTEMPT + 1))"))));
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(s.read(log), "1\n2\n");
  }
}

TEST(Try, UntilPassesTheMatchedStatusThroughAndStops) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args({"try", "--times", "5", "--until", "3", "--report", (s / "r.json").string()},
                  fast),
      concat_args({"--"}, s.sh("echo x >> log; exit 3"))));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(s.read("log"), "x\n");
  EXPECT_EQ(read_report(s / "r.json")["outcome"], "succeeded");
}

TEST(Try, UntilFailStopsAtTheFirstFailure) {
  const try_scratch s;
  const auto r = run_timed(
      concat_args(concat_args({"try", "--times", "5", "--until", "fail"}, fast),
                  concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> log; "
                                           "[ $BACKOFF_ATTEMPT = 3 ] && exit 6; exit 0"))));
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_EQ(s.read("log"), "1\n2\n3\n");
}

TEST(Try, WhileRetriesOnlyTheListedStatuses) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args({"try", "--times", "5", "--while", "1-2", "--report", (s / "r.json").string()},
                  fast),
      concat_args({"--"}, s.sh("echo $BACKOFF_ATTEMPT >> log; "
                               "exit $BACKOFF_ATTEMPT"))));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(s.read("log"), "1\n2\n3\n");
  EXPECT_EQ(read_report(s / "r.json")["outcome"], "not_retryable");
}

TEST(Try, WhileStopsAtOnceOnAnUnlistedStatus) {
  const try_scratch s;
  const auto r = run_timed(concat_args(concat_args({"try", "--times", "5", "--while", "1,7"}, fast),
                                       concat_args({"--"}, s.sh("echo x >> log; exit 2"))));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(s.read("log"), "x\n");
}

// --- --every -----------------------------------------------------------------------------------

TEST(Try, EveryStartsAttemptsAPeriodApart) {
  const try_scratch s;
  const auto r = run_timed({"try", "--every", "150ms", "--times", "3", "--report",
                            (s / "r.json").string(), "--", "false"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  const json report = read_report(s / "r.json");
  const json& attempts = report["attempts"];
  ASSERT_EQ(attempts.size(), 3U);
  for (std::size_t i = 1; i < attempts.size(); ++i) {
    EXPECT_GE(attempts[i]["start"].get<double>() - attempts[i - 1]["start"].get<double>(), 0.12)
        << "attempt " << i + 1;
  }
  EXPECT_LE(attempts[0]["delay_s"].get<double>(), 0.15 + 1e-9);
}

TEST(Try, EveryStartsAtOnceAfterAnAttemptLongerThanThePeriod) {
  const auto r = run_timed({"try", "--every", "100ms", "--times", "2", "--report", "-", "--", "sh",
                            "-c", "sleep 0.2; exit 1"});
  EXPECT_EQ(r.status, 1) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report["attempts"].size(), 2U);
  EXPECT_EQ(report["attempts"][0]["delay_s"].get<double>(), 0.0);
}

TEST(Try, EveryWithASuccessAtOnceRunsOnce) {
  const auto r =
      run_timed({"try", "--every", "200ms", "--times", "3", "--report", "-", "--", "true"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.elapsed_s, 2);
  EXPECT_EQ(json::parse(r.out)["attempts"].size(), 1U);
}

// --- Signals to the tool -----------------------------------------------------------------------

// The commands below start their `sleep 30` in the background and `wait` for it: a signal that
// reaches dash between its fork and the exec of a foreground command is lost by that command
// (the child still has dash's handler), and the tool then rightly waits out the whole grace
// before its KILL. A backgrounded job ignores SIGINT anyway, so these tests also set a short
// --grace and check that the KILL after it reaches the group.
void expect_stopped_by(const probe_result& r, int sig) {
  EXPECT_TRUE(r.finished) << "the tool hung";
  EXPECT_TRUE(r.exited) << "the tool died of the signal instead of exiting 128+n";
  EXPECT_EQ(r.status, 128 + sig) << r.err;
  EXPECT_TRUE(contains(r.err, "backoff try: stopped by signal " + std::to_string(sig))) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
}

TEST(TrySignals, IntDuringAnAttemptReachesTheCommandAndTheToolExits130) {
  const try_scratch s;
  process_probe p(concat_args(
      concat_args({"try", "--times", "3", "--grace", "300ms", "--report", (s / "r.json").string()},
                  fast),
      concat_args({"--"},
                  s.sh("trap 'echo INT > got; exit 3' INT; sleep 30 & echo $! > grandchild; "
                       "echo $$ >> started; wait"))));
  ASSERT_TRUE(wait_for_file(s / "started"));
  p.signal(SIGINT);
  const probe_result r = p.wait();
  expect_stopped_by(r, SIGINT);
  EXPECT_EQ(s.read("got"), "INT\n") << "the command was sent SIGINT";
  const auto pids = read_pids(s / "started");
  EXPECT_EQ(pids.size(), 1U) << "no attempt after the signal";
  for (const pid_t pid : pids) EXPECT_TRUE(wait_until_gone(pid, 2s));
  for (const pid_t pid : read_pids(s / "grandchild")) EXPECT_TRUE(wait_until_gone(pid, 2s));
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["outcome"], "cancelled");
  EXPECT_EQ(report["interrupted_by_signal"], 2);
  EXPECT_EQ(report["status"], 130);
  ASSERT_EQ(report["attempts"].size(), 1U);
  EXPECT_EQ(report["attempts"][0]["ended"], "cancelled");
  kill_recorded(s / "started");
  kill_recorded(s / "grandchild");
}

TEST(TrySignals, TermDuringAnAttemptReachesTheCommandAndTheToolExits143) {
  const try_scratch s;
  process_probe p(
      concat_args(concat_args({"try", "--times", "3", "--grace", "300ms"}, fast),
                  concat_args({"--"}, s.sh("trap 'echo TERM > got; exit 3' TERM; sleep 30 & "
                                           "echo $! > grandchild; echo $$ >> started; wait"))));
  ASSERT_TRUE(wait_for_file(s / "started"));
  p.signal(SIGTERM);
  const probe_result r = p.wait();
  expect_stopped_by(r, SIGTERM);
  EXPECT_EQ(s.read("got"), "TERM\n");
  EXPECT_EQ(read_pids(s / "started").size(), 1U);
  for (const pid_t pid : read_pids(s / "grandchild")) EXPECT_TRUE(wait_until_gone(pid, 2s));
  kill_recorded(s / "started");
  kill_recorded(s / "grandchild");
}

TEST(TrySignals, TermDuringTheWaitBetweenAttemptsExitsAtOnce) {
  const try_scratch s;
  process_probe p(
      concat_args({"try", "--times", "3", "-v", "--policy", "constant(initial=30s)", "--"},
                  s.sh("echo x >> started; exit 1")));
  ASSERT_TRUE(wait_for_text(p.err_path(), "next attempt in 30.000s"));
  p.signal(SIGTERM);
  const probe_result r = p.wait();
  expect_stopped_by(r, SIGTERM);
  EXPECT_EQ(s.read("started"), "x\n");
}

TEST(TrySignals, ACommandThatIgnoresTheSignalIsKilledAfterTheGrace) {
  const try_scratch s;
  process_probe p(concat_args({"try", "--times", "3", "--grace", "200ms", "--"},
                              s.sh("trap '' INT TERM; echo $$ >> started; sleep 30")));
  ASSERT_TRUE(wait_for_file(s / "started"));
  p.signal(SIGINT);
  const probe_result r = p.wait();
  expect_stopped_by(r, SIGINT);
  for (const pid_t pid : read_pids(s / "started")) EXPECT_TRUE(wait_until_gone(pid, 2s));
  kill_recorded(s / "started");
}

// A backgrounded job of a non-interactive shell ignores SIGINT: the tool's KILL after the grace
// must still reach it through the process group.
TEST(TrySignals, IntDuringAnAttemptStopsTheWholeProcessGroup) {
  const try_scratch s;
  process_probe p(concat_args({"try", "--times", "3", "--grace", "300ms", "--"},
                              s.sh("sleep 30 & echo $! > grandchild; wait")));
  ASSERT_TRUE(wait_for_file(s / "grandchild"));
  p.signal(SIGINT);
  const probe_result r = p.wait();
  expect_stopped_by(r, SIGINT);
  const auto pids = read_pids(s / "grandchild");
  ASSERT_EQ(pids.size(), 1U);
  EXPECT_TRUE(wait_until_gone(pids[0], 2s));
  kill_recorded(s / "grandchild");
}

// --- The tool's own errors: 125 and one line ---------------------------------------------------

struct retry_misuse {
  std::string name;
  std::vector<std::string> args;  // the subcommand and its options (and items)
  bool with_command;              // append "-- sh -c 'echo ran >> MARK'"
  std::string mentions;
};

std::string misuse_name(const ::testing::TestParamInfo<retry_misuse>& p) {
  return p.param.name;
}

class BadRetryFlags : public ::testing::TestWithParam<retry_misuse> {};

TEST_P(BadRetryFlags, AreOneLineWithStatus125AndRunNothing) {
  const retry_misuse& m = GetParam();
  const try_scratch s;
  std::vector<std::string> args = m.args;
  if (m.with_command) {
    args =
        concat_args(args, {"--", "sh", "-c", "echo ran >> " + shell_quote((s / "mark").string())});
  }
  const auto r = run_timed(args);
  EXPECT_EQ(r.status, 125) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  EXPECT_EQ(lines[0].rfind("backoff " + m.args[0], 0), 0U) << lines[0];
  EXPECT_TRUE(contains(lines[0], m.mentions)) << lines[0];
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(s.has("mark")) << "the command ran";
}

INSTANTIATE_TEST_SUITE_P(
    Try, BadRetryFlags,
    ::testing::Values(
        retry_misuse{"TimesNegative", {"try", "--times", "-1"}, true, "--times"},
        retry_misuse{"TimesNotANumber", {"try", "--times", "abc"}, true, "--times"},
        retry_misuse{"TimesTooLarge", {"try", "--times", "99999999999"}, true, "--times"},
        retry_misuse{"UnknownOption", {"try", "--bogus"}, true, "--bogus"},
        retry_misuse{"ForBadUnit", {"try", "--for", "10x"}, true, "10x"},
        retry_misuse{"ForZero", {"try", "--for", "0"}, true, "--for"},
        retry_misuse{"TimeoutBad", {"try", "--timeout", "5q"}, true, "5q"},
        retry_misuse{"GraceBad", {"try", "--grace", "soon"}, true, "soon"},
        retry_misuse{"BadPolicy", {"try", "--policy", "exponential(factor=x)"}, true, "factor"},
        retry_misuse{"UntilEmptyRange", {"try", "--until", "3-1"}, true, "3-1"},
        retry_misuse{"UntilWord", {"try", "--until", "foo"}, true, "foo"},
        retry_misuse{"WhileOutOfRange", {"try", "--while", "256"}, true, "256"},
        retry_misuse{"EveryWithPolicy",
                     {"try", "--every", "1s", "--policy", "constant(initial=1s)"},
                     true,
                     "--every"},
        retry_misuse{"UntilWithWhile", {"try", "--until", "0", "--while", "1"}, true, "--until"},
        retry_misuse{"SeedNotANumber", {"try", "--seed", "x"}, true, "--seed"},
        retry_misuse{"ReplayLimitNotASize",
                     {"try", "--replay-stdin", "--replay-stdin-limit", "lots"},
                     true,
                     "lots"},
        retry_misuse{"ReplayLimitBadUnit",
                     {"try", "--replay-stdin", "--replay-stdin-limit", "5 parsecs"},
                     true,
                     "parsecs"},
        retry_misuse{"ReplayLimitWithoutReplay",
                     {"try", "--replay-stdin-limit", "1MiB"},
                     true,
                     "--replay-stdin"},
        retry_misuse{"NoCommand", {"try"}, false, "command"},
        retry_misuse{"NoCommandAfterOptions", {"try", "--times", "2"}, false, "command"},
        retry_misuse{"NothingAfterDoubleDash", {"try", "--times", "2", "--"}, false, "command"},
        retry_misuse{"ReportCannotBeWritten",
                     {"try", "--report", "/nonexistent-backoff-dir/r.json"},
                     true,
                     "--report"}),
    misuse_name);

// Without "--", an unknown option before the command is still ours to reject, not a program.
TEST(Try, AnUnknownOptionWithoutDoubleDashIsAToolError) {
  const auto r = run_timed({"try", "--bogus", "true"});
  EXPECT_EQ(r.status, 125) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  EXPECT_EQ(lines[0].rfind("backoff try", 0), 0U) << lines[0];
  EXPECT_TRUE(contains(lines[0], "--bogus")) << lines[0];
}

INSTANTIATE_TEST_SUITE_P(
    Forany, BadRetryFlags,
    ::testing::Values(retry_misuse{"NoDoubleDash", {"forany", "a", "b", "true"}, false, "'--'"},
                      retry_misuse{"NoItems", {"forany"}, true, "items"},
                      retry_misuse{"BadUntil", {"forany", "--until", "x", "a"}, true, "x"},
                      retry_misuse{"BadTimes", {"forany", "--times", "-3", "a"}, true, "--times"}),
    misuse_name);

INSTANTIATE_TEST_SUITE_P(
    Forall, BadRetryFlags,
    ::testing::Values(retry_misuse{"NoDoubleDash", {"forall", "a", "b", "true"}, false, "'--'"},
                      retry_misuse{"NoItems", {"forall"}, true, "items"},
                      retry_misuse{"JobsNotANumber", {"forall", "-j", "x", "a"}, true, "-j"},
                      retry_misuse{"BadFor", {"forall", "--for", "10x", "a"}, true, "10x"}),
    misuse_name);

// --- forany ------------------------------------------------------------------------------------

TEST(Forany, StopsAtTheFirstItemThatSucceeds) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      {"forany", "--times", "1", "--report", (s / "r.json").string(), "a", "b", "c", "--"},
      s.sh("echo {} >> log; [ {} = b ]")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "a\nb\n");
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["mode"], "forany");
  EXPECT_EQ(report["winner"], "b");
  EXPECT_EQ(report["outcome"], "succeeded");
  EXPECT_EQ(report["status"], 0);
  const json& items = report["items"];
  ASSERT_GE(items.size(), 2U);
  EXPECT_EQ(items[0]["item"], "a");
  EXPECT_EQ(items[0]["started"], true);
  EXPECT_EQ(items[0]["outcome"], "attempts_exhausted");
  EXPECT_EQ(items[0]["status"], 1);
  EXPECT_EQ(items[1]["item"], "b");
  EXPECT_EQ(items[1]["outcome"], "succeeded");
  ASSERT_EQ(items[1]["attempts"].size(), 1U);
  for (std::size_t i = 2; i < items.size(); ++i) EXPECT_EQ(items[i]["started"], false);
}

// The try options apply to rounds: a round tries each item once, --times counts rounds (ftsh's
// forany inside a `try`), and BACKOFF_ATTEMPT is the round.
TEST(Forany, TheTryOptionsCountRoundsOfAllTheItems) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args({"forany", "--times", "2"}, fast),
      concat_args({"a", "b", "c", "--"}, s.sh("echo {}$BACKOFF_ATTEMPT >> log; "
                                              "[ {} = b ] && [ $BACKOFF_ATTEMPT = 2 ]"))));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log"), "a1\nb1\nc1\na2\nb2\n");
}

TEST(Forany, WhenEveryItemFailsExitsWithTheLastItemsStatus) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args({"forany", "--times", "2", "--report", (s / "r.json").string()}, fast),
      concat_args({"a", "b", "c", "--"}, s.sh("echo {} >> log; case {} in a) exit 3;; b) exit 4;; "
                                              "*) exit 5;; esac"))));
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_EQ(s.read("log"), "a\nb\nc\na\nb\nc\n");  // two rounds
  const json report = read_report(s / "r.json");
  EXPECT_TRUE(report["winner"].is_null());
  EXPECT_EQ(report["status"], 5);
  EXPECT_EQ(report["outcome"], "attempts_exhausted");
  ASSERT_EQ(report["items"].size(), 3U);
  EXPECT_EQ(report["items"][0]["status"], 3);
  EXPECT_EQ(report["items"][1]["status"], 4);
}

TEST(Forany, ReplacesBracesInEveryWordAndSetsBackoffItem) {
  const try_scratch s;
  const auto r = run_timed({"forany", "--times", "1", "p", "q r", "--", "sh", "-c",
                            "printf '%s|%s|%s\\n' \"$0\" \"$1\" \"$BACKOFF_ITEM\" >> " +
                                shell_quote((s / "log").string()) + "; exit 1",
                            "x{}y", "{}-{}"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(s.read("log"), "xpy|p-p|p\nxq ry|q r-q r|q r\n");
}

std::vector<std::string> shuffled_order(const try_scratch& s, const std::string& seed) {
  const std::string log = "order" + seed;
  fs::remove(s / log);
  const auto r = run_timed(concat_args(
      {"forany", "--times", "1", "--shuffle", "--seed", seed, "a", "b", "c", "d", "e", "--"},
      s.sh("echo {} >> " + log + "; exit 1")));
  EXPECT_EQ(r.status, 1) << r.err;
  return lines_of(s.read(log));
}

TEST(Forany, ShuffleStartsAtSomeItemThenGoesRoundOnce) {
  const try_scratch s;
  const std::vector<std::string> items{"a", "b", "c", "d", "e"};
  std::set<std::string> firsts;
  for (int seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    const auto order = shuffled_order(s, std::to_string(seed));
    ASSERT_EQ(order.size(), items.size()) << "every item exactly once";
    const auto start = std::find(items.begin(), items.end(), order[0]);
    ASSERT_NE(start, items.end());
    const auto offset = static_cast<std::size_t>(start - items.begin());
    for (std::size_t k = 0; k < items.size(); ++k) {
      EXPECT_EQ(order[k], items[(offset + k) % items.size()]) << "round in order from the start";
    }
    EXPECT_EQ(shuffled_order(s, std::to_string(seed)), order) << "the same seed, the same order";
    firsts.insert(order[0]);
  }
  EXPECT_GE(firsts.size(), 2U) << "eight seeds, always the same first item";
}

TEST(Forany, VerboseNamesTheItemOfEachAttemptAndTheWinner) {
  const auto r =
      run_timed({"forany", "-v", "--times", "1", "a", "b", "--", "sh", "-c", "[ {} = b ]"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "backoff forany: [a] attempt 1/1: exit status 1 after ")) << r.err;
  EXPECT_TRUE(contains(r.err, "backoff forany: [b] attempt 1/1: exit status 0 after ")) << r.err;
  EXPECT_TRUE(contains(r.err, "backoff forany: b succeeded")) << r.err;
}

TEST(Forany, TermStopsTheRunAndTriesNoFurtherItem) {
  const try_scratch s;
  process_probe p(concat_args({"forany", "--times", "1", "--grace", "300ms", "a", "b", "c", "--"},
                              s.sh("echo $$ >> started; echo {} >> items; sleep 30")));
  ASSERT_TRUE(wait_for_file(s / "items"));
  p.signal(SIGTERM);
  const probe_result r = p.wait();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_TRUE(contains(r.err, "backoff forany: stopped by signal 15")) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  EXPECT_EQ(s.read("items"), "a\n");
  kill_recorded(s / "started");
}

// --- forall ------------------------------------------------------------------------------------

struct span {
  double start;
  double end;
};

std::vector<span> attempt_spans(const json& report) {
  std::vector<span> spans;
  for (const json& item : report["items"]) {
    for (const json& a : item["attempts"]) {
      const double start = a["start"].get<double>();
      spans.push_back({start, start + a["duration_s"].get<double>()});
    }
  }
  return spans;
}

TEST(Forall, RunsEveryItemAtOnceByDefault) {
  const try_scratch s;
  const auto r = run_timed(
      {"forall", "--report", (s / "r.json").string(), "a", "b", "c", "--", "sleep", "0.3"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  const auto spans = attempt_spans(read_report(s / "r.json"));
  ASSERT_EQ(spans.size(), 3U);
  double first_start = spans[0].start;
  double last_start = spans[0].start;
  double first_end = spans[0].end;
  double last_end = spans[0].end;
  for (const span& sp : spans) {
    first_start = std::min(first_start, sp.start);
    last_start = std::max(last_start, sp.start);
    first_end = std::min(first_end, sp.end);
    last_end = std::max(last_end, sp.end);
  }
  EXPECT_LT(last_start, first_end) << "the three sleeps overlap";
  EXPECT_LT(last_end - first_start, 0.8) << "three 0.3 s sleeps side by side";
}

TEST(Forall, JobsOneRunsOneItemAtATime) {
  const try_scratch s;
  const auto r =
      run_timed(concat_args({"forall", "-j", "1", "--times", "1", "--report",
                             (s / "r.json").string(), "a", "b", "c", "--"},
                            s.sh("mkdir lock || exit 9; echo {} >> log; sleep 0.3; rmdir lock")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GE(r.elapsed_s, 0.85);
  EXPECT_EQ(s.read("log"), "a\nb\nc\n");
  auto spans = attempt_spans(read_report(s / "r.json"));
  ASSERT_EQ(spans.size(), 3U);
  std::sort(spans.begin(), spans.end(),
            [](const span& x, const span& y) { return x.start < y.start; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    EXPECT_GE(spans[i].start + 0.002, spans[i - 1].end) << "item " << i + 1 << " overlapped";
  }
}

TEST(Forall, JobsTwoRunsAtMostTwoAtOnce) {
  const try_scratch s;
  const auto r =
      run_timed(concat_args({"forall", "--jobs", "2", "--times", "1", "a", "b", "c", "d", "--"},
                            s.sh("mkdir running.{}; ls -d running.* | wc -l >> counts; "
                                 "sleep 0.2; rmdir running.{}")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GE(r.elapsed_s, 0.35) << "four 0.2 s items, two at a time";
  const auto counts = read_pids(s / "counts");
  ASSERT_EQ(counts.size(), 4U);
  for (const pid_t c : counts) EXPECT_LE(c, 2);
}

TEST(Forall, SucceedsWhenEveryItemSucceeds) {
  const try_scratch s;
  const auto r =
      run_timed(concat_args({"forall", "--report", (s / "r.json").string(), "a", "b", "c", "--"},
                            s.sh("echo $BACKOFF_ITEM > item.{}")));
  EXPECT_EQ(r.status, 0) << r.err;
  for (const std::string item : {"a", "b", "c"}) EXPECT_EQ(s.read("item." + item), item + "\n");
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["mode"], "forall");
  EXPECT_EQ(report["outcome"], "succeeded");
  EXPECT_TRUE(report["first_failure"].is_null());
  ASSERT_EQ(report["items"].size(), 3U);
  for (const json& item : report["items"]) {
    EXPECT_EQ(item["started"], true);
    EXPECT_EQ(item["outcome"], "succeeded");
    EXPECT_EQ(item["status"], 0);
  }
}

TEST(Forall, RetriesEachItemOnItsOwn) {
  const try_scratch s;
  const auto r = run_timed(concat_args(
      concat_args({"forall", "--times", "3"}, fast),
      concat_args({"a", "b", "c", "--"}, s.sh("echo $BACKOFF_ATTEMPT >> log.{}; "
                                              "[ {} = a ] || [ $BACKOFF_ATTEMPT = 2 ]"))));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(s.read("log.a"), "1\n");
  EXPECT_EQ(s.read("log.b"), "1\n2\n");
  EXPECT_EQ(s.read("log.c"), "1\n2\n");
}

TEST(Forall, TheFirstFailureStopsTheOthersAndGivesTheStatus) {
  const try_scratch s;
  const auto r = run_timed(concat_args({"forall", "--times", "1", "--report",
                                        (s / "r.json").string(), "slow1", "bad", "slow2", "--"},
                                       s.sh("if [ {} = bad ]; then sleep 0.2; exit 4; fi; "
                                            "echo $$ >> pids; sleep 30")));
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  for (const pid_t p : read_pids(s / "pids")) EXPECT_TRUE(wait_until_gone(p, 2s)) << p;
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["first_failure"], "bad");
  EXPECT_EQ(report["status"], 4);
  ASSERT_EQ(report["items"].size(), 3U);
  EXPECT_EQ(report["items"][1]["item"], "bad");
  EXPECT_EQ(report["items"][1]["status"], 4);
  for (const std::size_t i : {0U, 2U}) {
    const json& item = report["items"][i];
    if (item["started"] == true) {
      EXPECT_EQ(item["outcome"], "cancelled") << item.dump();
      ASSERT_EQ(item["attempts"].size(), 1U);
      EXPECT_EQ(item["attempts"][0]["ended"], "cancelled");
    }
  }
  kill_recorded(s / "pids");
}

TEST(Forall, ItemsNeverStartedAreMarkedSo) {
  const try_scratch s;
  const auto r = run_timed(concat_args({"forall", "-j", "1", "--times", "1", "--report",
                                        (s / "r.json").string(), "bad", "a", "b", "--"},
                                       s.sh("echo {} >> log; [ {} != bad ] || exit 6")));
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_EQ(s.read("log"), "bad\n");
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["first_failure"], "bad");
  ASSERT_EQ(report["items"].size(), 3U);
  EXPECT_EQ(report["items"][0]["started"], true);
  for (const std::size_t i : {1U, 2U}) {
    EXPECT_EQ(report["items"][i]["started"], false);
    EXPECT_TRUE(report["items"][i]["attempts"].empty());
  }
}

TEST(Forall, TheSameSeedGivesEachItemTheSameDelays) {
  // Every item succeeds at its third attempt: no failure cuts a run short.
  const auto delays = [] {
    const auto r = run_timed({"forall", "--times", "3", "--seed", "7", "--policy",
                              "exponential(initial=10ms,jitter=full)", "--report", "-", "a", "b",
                              "--", "sh", "-c", "[ $BACKOFF_ATTEMPT = 3 ]"});
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<std::vector<double>> out;
    const json report = json::parse(r.out);
    for (const json& item : report["items"]) {
      std::vector<double> item_delays;
      for (const json& a : item["attempts"]) {
        if (!a["delay_s"].is_null()) item_delays.push_back(a["delay_s"].get<double>());
      }
      out.push_back(item_delays);
    }
    return out;
  };
  const auto first = delays();
  ASSERT_EQ(first.size(), 2U);
  EXPECT_EQ(first[0].size(), 2U);
  EXPECT_EQ(first[1].size(), 2U);
  EXPECT_EQ(delays(), first);
  EXPECT_NE(first[0], first[1]) << "each item draws from its own stream";
}

TEST(Forall, IntStopsEveryRunningItem) {
  const try_scratch s;
  process_probe p(concat_args({"forall", "--times", "1", "--grace", "300ms", "a", "b", "--"},
                              s.sh("trap 'echo INT > got.{}; exit 0' INT; sleep 30 & "
                                   "echo $! >> grandchildren; echo $$ >> started; wait")));
  ASSERT_TRUE(wait_for_text(s / "started", "\n"));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (read_pids(s / "started").size() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(read_pids(s / "started").size(), 2U);
  p.signal(SIGINT);
  const probe_result r = p.wait();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "backoff forall: stopped by signal 2")) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  EXPECT_EQ(s.read("got.a"), "INT\n");
  EXPECT_EQ(s.read("got.b"), "INT\n");
  for (const pid_t pid : read_pids(s / "grandchildren")) EXPECT_TRUE(wait_until_gone(pid, 2s));
  kill_recorded(s / "started");
  kill_recorded(s / "grandchildren");
}

// A tool error (here: no temporary file for the held stdout) in a parallel item is the tool's
// error like in `try` (125, one line), not a crash.
TEST(Forall, AToolErrorInAParallelItemIsStatus125NotACrash) {
  // Should the tool abort anyway, leave no core file behind.
  rlimit core{};
  ::getrlimit(RLIMIT_CORE, &core);
  core.rlim_cur = 0;
  ::setrlimit(RLIMIT_CORE, &core);
  process_probe p({"forall", "--stdout-on-success", "--times", "1", "a", "b", "c", "--", "true"},
                  std::nullopt, {"TMPDIR=/nonexistent-backoff-tmp"});
  const probe_result r = p.wait();
  EXPECT_TRUE(r.exited) << "died of signal " << r.status - 128 << ": " << r.err;
  EXPECT_EQ(r.status, 125) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  EXPECT_EQ(lines[0].rfind("backoff forall: ", 0), 0U) << lines[0];
}

TEST(Forall, StdoutOnSuccessKeepsEachItemsOutputTogether) {
  const auto r = run_timed({"forall", "--stdout-on-success", "--times", "1", "a", "b", "c", "--",
                            "sh", "-c", "echo {}1; sleep 0.1; echo {}2; sleep 0.1; echo {}3"});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 9U) << r.out;
  for (std::size_t i = 0; i < lines.size(); i += 3) {
    const std::string item = lines[i].substr(0, 1);
    EXPECT_EQ(lines[i], item + "1") << r.out;
    EXPECT_EQ(lines[i + 1], item + "2") << r.out;
    EXPECT_EQ(lines[i + 2], item + "3") << r.out;
  }
}

TEST(Forall, ReplayStdinGivesEveryItemTheWholeInput) {
  const try_scratch s;
  process_probe p(concat_args({"forall", "--replay-stdin", "--times", "1", "a", "b", "c", "--"},
                              s.sh("cat > in.{}")),
                  "hello\nworld\n");
  const probe_result r = p.wait();
  EXPECT_EQ(r.status, 0) << r.err;
  for (const std::string item : {"a", "b", "c"}) {
    EXPECT_EQ(s.read("in." + item), "hello\nworld\n") << item;
  }
}

TEST(Forall, IntWithJobsOneLeavesTheLaterItemsUnstarted) {
  const try_scratch s;
  process_probe p(concat_args({"forall", "-j", "1", "--times", "1", "--grace", "300ms", "--report",
                               (s / "r.json").string(), "a", "b", "c", "--"},
                              s.sh("echo $$ >> started; sleep 30")));
  ASSERT_TRUE(wait_for_file(s / "started"));
  p.signal(SIGINT);
  const probe_result r = p.wait();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_LT(r.elapsed_s, 5);
  EXPECT_EQ(read_pids(s / "started").size(), 1U);
  const json report = read_report(s / "r.json");
  EXPECT_EQ(report["outcome"], "cancelled");
  EXPECT_EQ(report["interrupted_by_signal"], 2);
  ASSERT_EQ(report["items"].size(), 3U);
  EXPECT_EQ(report["items"][0]["started"], true);
  EXPECT_EQ(report["items"][0]["outcome"], "cancelled");
  EXPECT_EQ(report["items"][1]["started"], false);
  EXPECT_EQ(report["items"][2]["started"], false);
  kill_recorded(s / "started");
}

// --- Descriptor limits -------------------------------------------------------------------------
// Before round 6, forall started every item at once whatever `ulimit -n` allowed: at 1024, 550
// items failed with 125 ("pidfd_open: Too many open files") after starting and killing ~500
// commands; at 64 the same after a 65 s stall (a /proc that could not be opened was taken for a
// live process group).

// `backoff ARGS...` started with a soft limit of `limit` descriptors, as under `ulimit -n`.
std::unique_ptr<process_probe> start_with_descriptor_limit(rlim_t limit,
                                                           const std::vector<std::string>& args) {
  return std::make_unique<process_probe>(args, std::nullopt, std::vector<std::string>{}, limit);
}

std::vector<std::string> numbered_items(int count) {
  std::vector<std::string> items;
  for (int i = 1; i <= count; ++i) items.push_back(std::to_string(i));
  return items;
}

std::size_t files_starting_with(const fs::path& dir, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

TEST(ForallDescriptors, AllAtOnceStaysWithinALowDescriptorLimitAndRunsEveryItem) {
  const try_scratch s;
  const auto args = concat_args(concat_args({"forall", "--times", "1"}, numbered_items(100)),
                                concat_args({"--"}, s.sh("sleep 0.2; touch ran.{}")));
  auto probe = start_with_descriptor_limit(64, args);
  const probe_result r = probe->wait(120s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "") << "-j 0 without -v: the cap is not worth a line";
  EXPECT_EQ(files_starting_with(s.dir(), "ran."), 100U);
  EXPECT_LT(r.elapsed_s, 60) << "100 items of 0.2 s; before, 65 s and status 125";
}

TEST(ForallDescriptors, JobsAboveTheDescriptorLimitAreCappedAndSaidOnce) {
  const try_scratch s;
  const auto args = concat_args(
      concat_args({"forall", "-j", "60", "--times", "1"}, numbered_items(60)),
      concat_args(
          {"--"},
          s.sh("mkdir running.{}; ls -d running.* 2>/dev/null | wc -l >> counts; sleep 0.2; "
               "rmdir running.{}")));
  auto probe = start_with_descriptor_limit(64, args);
  const probe_result r = probe->wait(120s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1U) << r.err;
  const std::regex said(R"(backoff forall: (\d+) items at once, not 60: the descriptor limit )"
                        R"(\(ulimit -n 64, \d+ open\) allows \d+ commands of 2 descriptors each; )"
                        R"(the other items wait their turn)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, said)) << lines[0];
  const std::size_t at_once = std::stoul(m[1].str());
  EXPECT_LT(at_once, 32U);
  EXPECT_GE(at_once, 1U);
  const auto counts = read_pids(s / "counts");
  ASSERT_EQ(counts.size(), 60U);
  for (const pid_t c : counts) EXPECT_LE(static_cast<std::size_t>(c), at_once);
}

TEST(ForallDescriptors, VerboseSaysWhenAllAtOnceIsCapped) {
  auto probe = start_with_descriptor_limit(
      64, concat_args(concat_args({"forall", "-v", "--times", "1"}, numbered_items(40)),
                      {"--", "true"}));
  const probe_result r = probe->wait(120s);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "items at once, not 40: the descriptor limit (ulimit -n 64"))
      << r.err;
}

TEST(ForallDescriptors, StdoutOnSuccessUnderALowDescriptorLimitPassesEveryItemsOutput) {
  auto probe = start_with_descriptor_limit(
      64, concat_args(
              concat_args({"forall", "--stdout-on-success", "--times", "1"}, numbered_items(100)),
              {"--", "sh", "-c", "sleep 0.1; echo {}"}));
  const probe_result r = probe->wait(120s);
  EXPECT_EQ(r.status, 0) << r.err;
  auto out = lines_of(r.out);
  ASSERT_EQ(out.size(), 100U) << r.err;
  std::set<std::string> seen(out.begin(), out.end());
  EXPECT_EQ(seen.size(), 100U);
}

// A failing item under a low limit stops its running siblings at once and gives its status
// (before: 125 after a 65 s stall).
TEST(ForallDescriptors, AFailureUnderALowDescriptorLimitStopsTheOthersQuickly) {
  const try_scratch s;
  const auto args = concat_args(
      concat_args({"forall", "--times", "1", "--grace", "200ms", "bad"}, numbered_items(60)),
      concat_args({"--"}, s.sh("if [ {} = bad ]; then sleep 0.3; exit 4; fi; "
                               "echo $$ >> started; exec sleep 30")));
  auto probe = start_with_descriptor_limit(64, args);
  const probe_result r = probe->wait(120s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_LT(r.elapsed_s, 20) << r.err;
  for (const pid_t p : read_pids(s / "started")) EXPECT_TRUE(wait_until_gone(p)) << p;
  kill_recorded(s / "started");
}

// At a limit that leaves the tool its own descriptors but none for a command, with nothing else
// running to free one: one line that says so, status 125, and the command never starts (before:
// it was started, then killed when its pidfd could not be had).
TEST(ForallDescriptorsExhausted, NoDescriptorLeftForACommandIsOneLineAnd125AndStartsNothing) {
  bool seen = false;
  for (rlim_t limit = 4; limit <= 32 && !seen; ++limit) {
    const try_scratch s;
    auto probe = start_with_descriptor_limit(
        limit, concat_args({"try", "--times", "3", "--"}, s.sh("touch ran")));
    const probe_result r = probe->wait(60s);
    if (!contains(r.err, "cannot start")) continue;
    seen = true;
    EXPECT_EQ(r.status, 125) << r.err;
    const auto lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 1U) << r.err;
    EXPECT_EQ(lines[0].rfind("backoff try: cannot start 'sh': ", 0), 0U) << lines[0];
    EXPECT_TRUE(contains(lines[0], "ulimit -n " + std::to_string(limit))) << lines[0];
    EXPECT_TRUE(contains(lines[0], "no other command was running to free one")) << lines[0];
    EXPECT_FALSE(s.has("ran")) << "the command ran at ulimit -n " << limit;
  }
  EXPECT_TRUE(seen) << "no limit from 4 to 32 left the tool running but the command unstarted";
}

}  // namespace
