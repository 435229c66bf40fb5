// SPDX-License-Identifier: Apache-2.0
// `backoff script`: the Fault Tolerant Shell's language run for real, one script per case: the
// statuses scripts end with, what ran and what did not (stdout), and parse errors that stop a
// script before anything runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

namespace fs = std::filesystem;
using backoff::test::cli_result;
using backoff::test::run_cli;
using backoff::test::slurp;

// Runs `text` as a script with fast waits between attempts; `@DIR@` in it becomes a scratch folder.
struct script_run {
  cli_result result;
  double seconds = 0;
  backoff::test::test_scratch scratch;
  fs::path dir;
};

script_run run_script(const std::string& name, std::string text,
                      std::vector<std::string> extra = {}) {
  script_run run{{}, 0, backoff::test::test_scratch("script", name), {}};
  run.dir = run.scratch.dir();
  for (std::size_t at; (at = text.find("@DIR@")) != std::string::npos;) {
    text.replace(at, 5, run.dir.string());
  }
  const fs::path file = run.dir / (name + ".ftsh");
  std::ofstream(file) << text;
  std::vector<std::string> args{"script"};
  if (std::find(extra.begin(), extra.end(), "--policy") == extra.end()) {
    args.insert(args.end(), {"--policy", "constant(initial=10ms)"});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(file.string());
  const auto start = std::chrono::steady_clock::now();
  run.result = run_cli(args);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

struct script_case {
  const char* name;
  const char* text;
  int status;
  const char* out;
};

class ScriptCase : public ::testing::TestWithParam<script_case> {};

TEST_P(ScriptCase, EndsWithTheExpectedStatusAndOutput) {
  const script_case& c = GetParam();
  const script_run run = run_script(c.name, c.text);
  EXPECT_EQ(run.result.status, c.status) << run.result.err;
  EXPECT_EQ(run.result.out, c.out) << run.result.err;
}

// Each case asserts what ran (stdout) and the status the script ends with.
const script_case cases[] = {
    {"simple_command", "echo hello world\n", 0, "hello world\n"},
    {"failure_stops_the_group", "echo one\nfalse\necho never\n", 1, "one\n"},
    {"status_passes_through", "sh -c 'exit 7'\necho never\n", 7, ""},
    {"signal_death_is_128_plus_n", "sh -c 'kill -9 $$'\n", 137, ""},
    {"comments_and_blank_lines", "# a comment\n\n   \necho a # trailing\n# end\n", 0, "a\n"},
    {"quoting", "x='a b'\necho \"[${x}]\" '[${x}]' [$x]\n", 0, "[a b] [${x}] [a b]\n"},
    {"try_makes_n_attempts",
     "try 3 times\n  sh -c 'echo $BACKOFF_ATTEMPT; exit 4'\nend\necho never\n", 4, "1\n2\n3\n"},
    {"try_stops_at_the_first_success",
     "try 5 times\n  sh -c 'echo $BACKOFF_ATTEMPT; test $BACKOFF_ATTEMPT -ge 2'\nend\necho after\n",
     0, "1\n2\nafter\n"},
    {"bare_try_is_one_attempt", "try\n  sh -c 'echo $BACKOFF_ATTEMPT; exit 1'\nend\n", 1, "1\n"},
    {"catch_runs_when_every_attempt_failed",
     "try 2 times\n  false\ncatch\n  echo caught\nend\necho after\n", 0, "caught\nafter\n"},
    {"catch_does_not_run_after_a_success", "try 2 times\n  true\ncatch\n  echo caught\nend\n", 0,
     ""},
    {"failure_in_catch_reraises", "try 1 time\n  false\ncatch\n  failure\nend\necho never\n", 1,
     ""},
    {"group_in_try_is_brittle",
     "try 2 times\n  echo a$BACKOFF_ATTEMPT\n  false\n  echo never\nend\n", 1, "a1\na2\n"},
    {"success_and_failure_builtins", "success\necho yes\nfailure\necho no\n", 1, "yes\n"},
    {"forany_stops_at_the_first_success_and_keeps_it",
     "forany h in a b c\n  sh -c \"echo try ${h}; test ${h} = b\"\nend\necho \"got ${h}\"\n", 0,
     "try a\ntry b\ngot b\n"},
    {"forany_fails_when_every_item_fails",
     "forany h in 3 4 5\n  sh -c \"exit ${h}\"\nend\necho never\n", 5, ""},
    {"forany_splits_an_unquoted_variable",
     "hosts='x  y z'\nforany h in ${hosts}\n  sh -c \"echo ${h}; exit 1\"\nend\n", 1, "x\ny\nz\n"},
    {"quoted_variable_is_one_item", "v='x y'\nfor i in \"${v}\"\n  echo \"<${i}>\"\nend\n", 0,
     "<x y>\n"},
    {"for_runs_in_order_and_is_brittle",
     "for i in 1 2 3\n  echo ${i}\n  sh -c \"test ${i} != 2\"\nend\n", 1, "1\n2\n"},
    {"forall_variables_stay_in_their_branch",
     "v=outer\nforall i in 1 2\n  v=inner\n  true\nend\necho ${v}\n", 0, "outer\n"},
    {"unset_variable_fails_the_statement", "echo ${nope}\necho never\n", 1, ""},
    {"try_within_forany",
     "forany h in a b\n  try 2 times\n    sh -c \"test ${h} = b\"\n  end\nend\n"
     "echo ${h}\n",
     0, "b\n"},
    {"nested_try_counts_attempts_separately",
     "try 2 times\n  echo outer\n  try 2 times\n    sh -c 'echo inner; exit 1'\n  end\nend\n", 1,
     "outer\ninner\ninner\nouter\ninner\ninner\n"},
    {"not_found_is_127_and_stops", "no-such-program-here\necho never\n", 127, ""},
};

INSTANTIATE_TEST_SUITE_P(Scripts, ScriptCase, ::testing::ValuesIn(cases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(Script, RedirectionsWriteAppendAndRead) {
  const script_run run = run_script("redirect",
                                    "echo one > @DIR@/f\n"
                                    "echo two >> @DIR@/f\n"
                                    "sh -c 'echo err >&2' 2>> @DIR@/f\n"
                                    "cat < @DIR@/f\n"
                                    "sh -c 'echo both; echo bad >&2' > @DIR@/g 2>&1\n");
  EXPECT_EQ(run.result.status, 0) << run.result.err;
  EXPECT_EQ(run.result.out, "one\ntwo\nerr\n");
  EXPECT_EQ(slurp(run.dir / "g"), "both\nbad\n");
}

TEST(Script, AFileThatCannotBeOpenedFailsTheCommandWithItsLine) {
  const script_run run = run_script("badredirect", "echo a\ncat < @DIR@/missing\necho never\n");
  EXPECT_EQ(run.result.status, 1);
  EXPECT_EQ(run.result.out, "a\n");
  EXPECT_NE(run.result.err.find("badredirect.ftsh:2: cannot open"), std::string::npos)
      << run.result.err;
}

TEST(Script, TryForStopsTheRunningCommandAtTheDeadline) {
  const script_run run = run_script("deadline", "try for 300ms\n  sleep 30\nend\necho never\n");
  EXPECT_EQ(run.result.status, 124) << run.result.err;
  EXPECT_EQ(run.result.out, "");
  EXPECT_LT(run.seconds, 10.0);
}

TEST(Script, TheTighterOfNestedDeadlinesWins) {
  const script_run run = run_script("nested_deadline",
                                    "try for 5 seconds\n"
                                    "  try for 300ms\n"
                                    "    sleep 30\n"
                                    "  end\n"
                                    "catch\n"
                                    "  echo inner expired\n"
                                    "end\n",
                                    {"--policy", "constant(initial=1h)"});
  // The inner deadline stops the sleep at 0.3 s; the outer try's next wait (1 h) would pass its
  // own deadline, so the outer try gives up at once (a hard cap: no last attempt at the deadline
  // with no time left) and its catch runs.
  EXPECT_EQ(run.result.status, 0) << run.result.err;
  EXPECT_EQ(run.result.out, "inner expired\n");
  EXPECT_GE(run.seconds, 0.3);
  // Below the outer deadline (5 s) with room for a sanitizer's start-up.
  EXPECT_LT(run.seconds, 4.0) << "waited for the outer deadline";
}

// Thirty doublings of a variable reached 16.7 GB (and SIGTERM waited 58 s): a value is bounded.
TEST(Script, AValueThatGrowsWithoutBoundIsStoppedAtOneMiB) {
  std::string text = "X=abcdefgh\n";
  for (int i = 0; i < 30; ++i) text += "X=${X}${X}\n";
  text += "echo never\n";
  const script_run run = run_script("doubling", text);
  EXPECT_EQ(run.result.status, 1) << run.result.err;
  EXPECT_EQ(run.result.out, "");
  // 8 bytes doubled 17 times is 1 MiB; the 18th doubling, on line 19, would pass it.
  EXPECT_NE(run.result.err.find(":19: a value longer than 1 MiB"), std::string::npos)
      << run.result.err;
  EXPECT_LT(run.seconds, 10.0);
}

TEST(Script, EveryPacesAttemptsStartToStart) {
  const script_run run = run_script("every",
                                    "try for 1 second every 200ms\n"
                                    "  sh -c 'echo $BACKOFF_ATTEMPT; exit 1'\n"
                                    "end\n");
  EXPECT_EQ(run.result.status, 1);
  const auto attempts = std::count(run.result.out.begin(), run.result.out.end(), '\n');
  // Starts at 0, 0.2, ..., 0.8 s (0.2 s left, at least the 0.1 s a retry needs); none at the
  // deadline, with no time left: five; a slow machine may fit fewer, never more.
  EXPECT_GE(attempts, 2);
  EXPECT_LE(attempts, 5);
}

TEST(Script, TheDeadlineReachesCommandsInTheEnvironment) {
  const auto before = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const script_run run =
      run_script("deadline_env", "try for 1 hour\n  sh -c 'echo $BACKOFF_DEADLINE'\nend\n");
  ASSERT_EQ(run.result.status, 0) << run.result.err;
  const long long deadline = std::stoll(run.result.out);
  EXPECT_GE(deadline, before + 3600 - 2);
  EXPECT_LE(deadline, before + 3600 + 5);
}

TEST(Script, ForallFailureStopsTheOtherBranches) {
  const script_run run = run_script("forall_fail",
                                    "forall x in fast slow\n"
                                    "  sh -c \"if [ ${x} = fast ]; then sleep 0.2; exit 3; fi; "
                                    "exec sleep 30\"\n"
                                    "end\n"
                                    "echo never\n");
  EXPECT_EQ(run.result.status, 3) << run.result.err;
  EXPECT_EQ(run.result.out, "");
  EXPECT_LT(run.seconds, 10.0);
}

TEST(Script, ForallRunsBranchesAtTheSameTime) {
  const script_run run =
      run_script("forall_parallel", "forall x in 1 2 3 4\n  sleep 0.4\nend\necho done\n");
  EXPECT_EQ(run.result.status, 0) << run.result.err;
  EXPECT_EQ(run.result.out, "done\n");
  EXPECT_LT(run.seconds, 1.5);  // one after another would take 1.6 s at least
}

// A `try for` is a hard cap for whatever runs inside it, a command after a wait included: the
// whole script ends within the deadline plus the grace.
TEST(Script, TryForStopsTheAttemptAfterAWaitAtTheDeadline) {
  const script_run run = run_script("hard_cap",
                                    "try for 1 second\n"
                                    "  sh -c '[ $BACKOFF_ATTEMPT = 2 ] && exec sleep 30; exit 1'\n"
                                    "end\n",
                                    {"--policy", "constant(initial=300ms)", "--grace", "200ms"});
  EXPECT_EQ(run.result.status, 124) << run.result.err;
  EXPECT_GE(run.seconds, 0.9);
  // The deadline and the grace, with room for a sanitizer's start-up (the attempt sleeps 30 s).
  EXPECT_LT(run.seconds, 1.0 + 0.2 + 2.0);
}

// Tasks (processes and threads) of the user `uid` now.
long tasks_of(uid_t uid) {
  long tasks = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '1' || name[0] > '9') continue;
    std::ifstream in(entry.path() / "status");
    long real = -1;
    long threads = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Uid:", 0) == 0) real = std::stol(line.substr(4));
      if (line.rfind("Threads:", 0) == 0) threads = std::stol(line.substr(8));
    }
    if (real == static_cast<long>(uid)) tasks += threads;
  }
  return tasks;
}

// Runs `backoff ARGS` (words already quoted for the shell) as nobody with at most `spare` more
// tasks than nobody has now (RLIMIT_NPROC binds no process with CAP_SYS_RESOURCE, so not root's).
cli_result run_as_nobody(const fs::path& backoff, const std::string& args, long spare) {
  const long limit = tasks_of(65534) + spare;
  return backoff::test::run_captured(
      "setpriv --reuid=65534 --regid=65534 --clear-groups -- prlimit --nproc=" +
      std::to_string(limit) + " " + backoff::test::shell_quote(backoff.string()) + " " + args);
}

// A folder under /tmp that nobody can reach, holding the tool (a hard link, or a copy) and the
// test's scripts: the build, like the clone it is in, may sit under a folder closed to others
// (CI clones into a `mktemp -d` folder, mode 0700). Removed with everything in it.
class nobody_folder {
 public:
  nobody_folder() {
    std::string name = "/tmp/backoff-nobody-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp: /tmp");
    dir_ = name;
    fs::permissions(dir_, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
    std::error_code linked;
    fs::create_hard_link(BACKOFF_CLI_PATH, backoff(), linked);
    if (linked) fs::copy_file(BACKOFF_CLI_PATH, backoff());
    fs::permissions(backoff(), fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::add);
  }
  nobody_folder(const nobody_folder&) = delete;
  nobody_folder& operator=(const nobody_folder&) = delete;
  ~nobody_folder() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  fs::path operator/(const std::string& name) const { return dir_ / name; }
  fs::path backoff() const { return dir_ / "backoff"; }

 private:
  fs::path dir_;
};

// Whether the test can lower nobody's process limit: root, with setpriv and prlimit.
std::string cannot_run_as_nobody() {
  if (::geteuid() != 0) return "needs root, to run the tool as nobody under ulimit -u";
  if (std::system("command -v setpriv >/dev/null && command -v prlimit >/dev/null") != 0) {
    return "needs setpriv and prlimit (util-linux)";
  }
  return "";
}

// Issue 40: a forall that could not start all its threads waited for the branches that had
// started (an hour with `sleep 3600`), then failed with "Resource temporarily unavailable" and no
// FILE:LINE. Now it runs fewer branches at once (as `backoff forall` does), says so once with
// FILE:LINE, and the other items wait their turn; `backoff forall` the same. One test case, so
// that no other run as nobody changes the count the limit is set from. In the plain build only
// (suite "Exhausted"): the sanitizers' runtimes start threads of their own (TSan's background
// thread, LSan's tracer at exit), which a process limit this low refuses.
TEST(ForallProcessesExhausted, AForallThatCannotStartAllItsThreadsRunsFewerAtOnce) {
  if (const std::string why = cannot_run_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  const nobody_folder scratch;
  const fs::path file = scratch / "threads.ftsh";
  std::string items;
  for (int i = 1; i <= 20; ++i) items += " " + std::to_string(i);
  std::ofstream(file) << "forall x in" << items << "\n  sleep 0.2\nend\necho done\n";
  fs::permissions(file, fs::perms::others_read, fs::perm_options::add);
  const std::string nobody_reads =
      "setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r " +
      backoff::test::shell_quote(file.string()) + " -a -x " +
      backoff::test::shell_quote(scratch.backoff().string());
  ASSERT_EQ(std::system(nobody_reads.c_str()), 0) << "nobody cannot reach " << file;
  // The tool's own two tasks (its thread and the signal watcher) and room for eight more: the
  // forall gets a few threads, and keeps half of them, so that each branch's command can start.
  const auto start = std::chrono::steady_clock::now();
  const std::string script_args = "script --policy 'constant(initial=10ms)' ";
  const cli_result r =
      run_as_nobody(scratch.backoff(), script_args + backoff::test::shell_quote(file.string()), 10);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done\n") << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  const std::regex said(
      "backoff script: " +
      std::regex_replace(file.string(), std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
      R"(:1: forall: (\d+) branches at once, not 20: no thread left for more )"
      R"(\(Resource temporarily unavailable\); the other items wait their turn)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, said)) << lines[0];
  EXPECT_GE(std::stoi(m[1]), 1);
  EXPECT_LT(std::stoi(m[1]), 20);
  EXPECT_LT(seconds, 15.0);

  // No task left for even one command, and none running to free one: the statement's FILE:LINE,
  // status 125, at once.
  const fs::path one = scratch / "one.ftsh";
  std::ofstream(one) << "sleep 0.1\n";
  fs::permissions(one, fs::perms::others_read, fs::perm_options::add);
  const cli_result none =
      run_as_nobody(scratch.backoff(), script_args + backoff::test::shell_quote(one.string()), 2);
  EXPECT_EQ(none.status, 125) << none.err;
  ASSERT_EQ(none.err_lines().size(), 1u) << none.err;
  EXPECT_EQ(none.err_lines()[0].rfind(
                "backoff script: " + one.string() + ":1: cannot start 'sleep': ", 0),
            0u)
      << none.err;

  // `backoff forall`: the same rule.
  const cli_result command =
      run_as_nobody(scratch.backoff(), "forall --times 1" + items + " -- sleep 0.2", 10);
  EXPECT_EQ(command.status, 0) << command.err;
  ASSERT_EQ(command.err_lines().size(), 1u) << command.err;
  const std::regex command_said(
      R"(backoff forall: (\d+) items at once, not 20: no thread left for more )"
      R"(\(Resource temporarily unavailable\); the other items wait their turn)");
  ASSERT_TRUE(std::regex_match(command.err_lines()[0], m, command_said)) << command.err;
  EXPECT_LT(std::stoi(m[1]), 20);
}

TEST(Script, EnvironmentVariablesAreReadable) {
  const script_run run = run_script("environment", "echo ${PATH}\n");
  EXPECT_EQ(run.result.status, 0) << run.result.err;
  EXPECT_EQ(run.result.out, std::string(std::getenv("PATH")) + "\n");
}

TEST(Script, TermStopsTheScriptAndReachesEveryRunningBranch) {
  const backoff::test::test_scratch scratch("script");
  const fs::path& dir = scratch.dir();
  const fs::path file = dir / "term.ftsh";
  // $$ is literal in a script (no such variable name): the shell sees it.
  std::ofstream(file) << "forall b in 1 2\n  sh -c \"trap 'echo $$ >> " << dir.string()
                      << "/got; exit 3' TERM; echo $$ >> " << dir.string()
                      << "/started; sleep 30 & wait\"\nend\necho never\n";
  backoff::test::process_probe p({"script", "--grace", "2s", file.string()});
  // Both branches running: two lines in `started`.
  for (int i = 0; i < 400; ++i) {
    if (std::count(std::istreambuf_iterator<char>(std::ifstream(dir / "started").rdbuf()), {},
                   '\n') == 2) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  p.signal(SIGTERM);
  const backoff::test::probe_result r = p.wait();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("stopped by signal 15"), std::string::npos) << r.err;
  const std::string got = slurp(dir / "got");
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 2) << "each branch was sent TERM: " << got;
}

TEST(Script, CheckParsesWithoutRunning) {
  const script_run run = run_script("check", "echo ran > @DIR@/ran\n", {"--check"});
  EXPECT_EQ(run.result.status, 0) << run.result.err;
  EXPECT_FALSE(fs::exists(run.dir / "ran"));
}

struct parse_error_case {
  const char* name;
  const char* text;
  int line;
  const char* message;  // part of the message after "FILE:LINE: "
};

class ScriptParseError : public ::testing::TestWithParam<parse_error_case> {};

TEST_P(ScriptParseError, StopsBeforeAnythingRunsWithFileAndLine) {
  const parse_error_case& c = GetParam();
  // The first line would show that something ran.
  const script_run run = run_script(c.name, std::string("echo ran\n") + c.text);
  EXPECT_EQ(run.result.status, 125);
  EXPECT_EQ(run.result.out, "");
  const auto lines = run.result.err_lines();
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  const std::string where =
      "backoff script: " + (run.dir / (std::string(c.name) + ".ftsh")).string() + ":" +
      std::to_string(c.line) + ": ";
  EXPECT_EQ(lines[0].rfind(where, 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(c.message), std::string::npos) << lines[0];
}

// Lines count the "echo ran" line the test puts first.
const parse_error_case parse_errors[] = {
    {"unclosed_try", "try 3 times\n  true\n", 2, "never closed"},
    {"catch_without_try", "true\ncatch\n", 3, "catch"},
    {"end_without_block", "end\n", 2, "end"},
    {"pipe", "echo a | cat\n", 2, "pipes are not supported"},
    {"zero_times", "try 0 times\n  true\nend\n", 2, "0"},
    {"missing_in", "forany h a b\n  true\nend\n", 2, "in"},
    {"unterminated_quote", "echo 'abc\n\n", 2, "quote"},
    {"bare_number", "try 5\n  true\nend\n", 2, "needs a unit"},
    {"empty_try", "try 2 times\nend\n", 2, "empty"},
};

INSTANTIATE_TEST_SUITE_P(Scripts, ScriptParseError, ::testing::ValuesIn(parse_errors),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(Script, MissingFileIsAToolError) {
  const cli_result r = run_cli({"script", "/nonexistent/x.ftsh"});
  EXPECT_EQ(r.status, 125);
  ASSERT_EQ(r.err_lines().size(), 1u);
  EXPECT_NE(r.err.find("cannot read '/nonexistent/x.ftsh'"), std::string::npos);
}

TEST(Script, BadPolicyIsAToolError) {
  const script_run run = run_script("badpolicy", "true\n", {"--policy", "exponential(factor=x)"});
  EXPECT_EQ(run.result.status, 125);
  ASSERT_EQ(run.result.err_lines().size(), 1u) << run.result.err;
  EXPECT_NE(run.result.err.find("factor"), std::string::npos);
}

TEST(Script, ExamplesParse) {
  const fs::path examples = fs::path(BACKOFF_SOURCE_DIR) / "examples" / "scripts";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(examples)) {
    if (entry.path().extension() != ".ftsh") continue;
    ++count;
    const cli_result r = run_cli({"script", "--check", entry.path().string()});
    EXPECT_EQ(r.status, 0) << entry.path() << ": " << r.err;
  }
  EXPECT_GE(count, 3);
}

}  // namespace
