// SPDX-License-Identifier: Apache-2.0
// Process hygiene (issue 9): runs of the retry tool that time out, are signalled, or lose a
// forall sibling leave no process behind. Every command under test starts a "family": a shell
// with grandchildren (a plain background sleep, one that ignores SIGTERM, and a nested shell with
// its own background sleep), all carrying a unique HYGIENE_MARK in their environment. A process
// counts as left behind when /proc shows it with that mark and it is neither gone nor a zombie
// (PID 1 here does not reap orphans).
//
// What docs/RETRY_TOOL.md promises and these tests hold it to: a stopped attempt's whole process
// group gets TERM, then KILL after --grace, until none is left; a failed attempt's leftovers are
// stopped the same way; a signal to backoff (INT, TERM, HUP, QUIT) is passed to the running
// groups, which are cleaned up, and backoff exits 128+n; a process that calls setsid() leaves the
// group and escapes (the documented limit, asserted as such). Scripts (docs/SCRIPTS.md) run every
// command as such an attempt, stopped at `try for` deadlines.
//
// Already covered in try_cli_test.cpp (not repeated here): one timed-out attempt with one
// background sleep; a child that ignores TERM killed after the grace (timeout path); a failed
// attempt's plain background sleep gone before the next attempt; INT and TERM during an attempt
// with one background grandchild; TERM during the wait; forall INT with one grandchild per item;
// forall -j 1 INT; forany TERM. script_cli_test.cpp: TERM reaches every forall branch.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "process_probe.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using backoff::test::probe_result;
using backoff::test::process_probe;
using backoff::test::shell_quote;
using backoff::test::slurp;

// --- Finding marked processes ---------------------------------------------------------------

// The environment of `pid`, NUL-separated; empty when it cannot be read (gone, a zombie).
std::string environment_of(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/environ", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Live (not gone, not zombie) processes whose environment holds HYGIENE_MARK=<prefix>...
std::vector<pid_t> marked_alive(const std::string& prefix) {
  std::vector<pid_t> found;
  const std::string needle = std::string("HYGIENE_MARK=") + prefix;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string env = environment_of(entry->d_name);
    // As a whole entry: at the start, or after a NUL.
    bool match = env.compare(0, needle.size(), needle) == 0 ||
                 env.find(std::string(1, '\0') + needle) != std::string::npos;
    if (!match) continue;
    const auto pid = static_cast<pid_t>(std::atol(entry->d_name));
    if (!backoff::test::process_gone(pid)) found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

// Waits (bounded) until no marked process is left; returns those still alive at the end.
std::vector<pid_t> strays_after(const std::string& prefix, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = marked_alive(prefix);
    if (left.empty() || std::chrono::steady_clock::now() > until) return left;
    std::this_thread::sleep_for(10ms);
  }
}

void kill_all(const std::vector<pid_t>& pids) {
  for (const pid_t p : pids) backoff::test::kill_if_alive(p);
}

// The mark prefix of this test process: no other run of the suite shares it.
std::string mark_prefix(const std::string& test) {
  return "bh-" + std::to_string(::getpid()) + "-" + test + "-";
}

// --- The family --------------------------------------------------------------------------------

// `env HYGIENE_MARK=<mark> sh -c SCRIPT`: the shell records its grandchildren's pids in
// pids.<its pid> (the nested shell adds its sleep's pid when it gets to it), writes `ready` (one
// line per attempt), then runs `then` (default: wait).
//  - a background sleep (TERM kills it);
//  - a background sleep that ignores TERM (only KILL ends it);
//  - a nested shell with its own background sleep, waiting for it.
std::vector<std::string> family(const std::string& mark, const fs::path& dir,
                                const std::string& then = "wait") {
  const std::string d = shell_quote(dir.string());
  const std::string script = "cd " + d +
                             " || exit 99; f=pids.$$; "
                             "sleep 1000 & echo $! >> $f; "
                             "(trap '' TERM; exec sleep 1000) & echo $! >> $f; "
                             "sh -c 'sleep 1000 & echo $! >> \"$1\"; wait' x $f & echo $! >> $f; "
                             "echo $$ >> ready; " +
                             then;
  return {"env", "HYGIENE_MARK=" + mark, "sh", "-c", script};
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::size_t line_count(const fs::path& file) {
  const std::string text = slurp(file);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The pids the families in `dir` recorded (pids.<shell pid>, one file per attempt).
std::size_t pid_lines(const fs::path& dir) {
  std::size_t lines = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("pids.", 0) == 0) lines += line_count(entry.path());
  }
  return lines;
}

// Waits (bounded) until `file` has at least `lines` lines.
bool wait_for_lines(const fs::path& file, std::size_t lines,
                    std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (line_count(file) < lines) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A scratch folder for the running test.
class hygiene_scratch : public backoff::test::test_scratch {
 public:
  hygiene_scratch() : test_scratch("hygiene") {}
};

std::unique_ptr<process_probe> start(const std::vector<std::string>& args) {
  return std::make_unique<process_probe>(args);
}

// Runs fn(0..count-1) on `jobs` threads.
void in_parallel(int count, int jobs, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) {
    threads.emplace_back([&] {
      for (int i = next++; i < count; i = next++) fn(i);
    });
  }
  for (auto& t : threads) t.join();
}

// --- 100 timed-out runs ------------------------------------------------------------------------

struct run_record {
  bool finished = false;
  bool exited = false;
  int status = -1;
  std::size_t attempts_started = 0;  // families that got as far as `ready`
  std::size_t grandchildren = 0;     // pids the families recorded
  std::vector<pid_t> strays;         // marked processes alive 2 s after backoff ended
  std::string err;
};

TEST(HygieneWallClock, HundredTimedOutRunsWithGrandchildrenLeaveNoProcess) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("timeouts");
  constexpr int runs = 100;
  std::vector<run_record> records(runs);
  const auto started = std::chrono::steady_clock::now();
  in_parallel(runs, 8, [&](int i) {
    const fs::path dir = s.sub("run" + std::to_string(i));
    const std::string mark = prefix + std::to_string(i) + "-";
    // Even runs: two attempts, each stopped by its --timeout. Odd runs: one attempt, stopped at
    // the --for deadline. Long enough for a family to start on a loaded 2-core machine.
    const std::vector<std::string> options =
        i % 2 == 0 ? std::vector<std::string>{"try",       "--times",  "2",
                                              "--timeout", "400ms",    "--grace",
                                              "100ms",     "--policy", "constant(initial=10ms)",
                                              "--"}
                   : std::vector<std::string>{"try", "--for", "500ms", "--grace", "100ms", "--"};
    auto probe = start(cat(options, family(mark, dir)));
    const probe_result r = probe->wait(20s);
    run_record& rec = records[static_cast<std::size_t>(i)];
    rec.finished = r.finished;
    rec.exited = r.exited;
    rec.status = r.status;
    rec.err = r.err;
    rec.attempts_started = line_count(dir / "ready");
    rec.grandchildren = pid_lines(dir);
    rec.strays = strays_after(mark, 2s);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::size_t strays = 0;
  std::size_t grandchildren = 0;
  std::size_t attempts = 0;
  for (int i = 0; i < runs; ++i) {
    const run_record& rec = records[static_cast<std::size_t>(i)];
    SCOPED_TRACE("run " + std::to_string(i));
    EXPECT_TRUE(rec.finished) << "backoff hung: " << rec.err;
    EXPECT_TRUE(rec.exited) << "backoff died of signal " << rec.status - 128;
    EXPECT_EQ(rec.status, 124) << rec.err;
    EXPECT_TRUE(rec.strays.empty())
        << rec.strays.size() << " processes left, first pid " << rec.strays.front();
    strays += rec.strays.size();
    grandchildren += rec.grandchildren;
    attempts += rec.attempts_started;
    kill_all(rec.strays);
  }
  // 150 attempts (50 runs of 2, 50 of 1), each with up to 4 grandchildren. The families must
  // really have been running when the tool stopped them, or the test shows nothing; on a loaded
  // machine some are stopped before they got going (what they did start is still checked).
  EXPECT_GE(attempts, 75U) << "families that got going";
  EXPECT_GE(grandchildren, 3U * 75U);
  EXPECT_EQ(strays, 0U);
  EXPECT_EQ(marked_alive(prefix).size(), 0U) << "processes of this test still alive";
  kill_all(marked_alive(prefix));
  std::cout << "[ hygiene  ] " << runs << " timed-out runs, " << attempts << " attempts, "
            << grandchildren << " grandchildren, " << strays << " left behind, " << seconds
            << " s\n";
}

// --- Signals to backoff ------------------------------------------------------------------------

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "INT";
    case SIGTERM:
      return "TERM";
    case SIGHUP:
      return "HUP";
    case SIGQUIT:
      return "QUIT";
    default:
      return "?";
  }
}

// Each handled signal, three times each, while an attempt runs a family whose grandchildren
// ignore TERM (and, being background jobs of a shell, INT and QUIT): 128+n, the line, one attempt,
// and nothing left once backoff has exited.
TEST(HygieneSignals, EachSignalDuringAnAttemptCleansUpTheGroup) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("attempt-signals");
  const std::vector<int> signals{SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  constexpr int repeats = 3;
  const int count = static_cast<int>(signals.size()) * repeats;
  struct outcome {
    int sig = 0;
    bool ready = false;
    probe_result r;
    std::size_t attempts = 0;
    std::vector<pid_t> strays;
  };
  std::vector<outcome> out(static_cast<std::size_t>(count));
  in_parallel(count, 4, [&](int i) {
    outcome& o = out[static_cast<std::size_t>(i)];
    o.sig = signals[static_cast<std::size_t>(i % static_cast<int>(signals.size()))];
    const fs::path dir = s.sub("run" + std::to_string(i));
    const std::string mark = prefix + std::to_string(i) + "-";
    auto probe = start(
        cat({"try", "--times", "3", "--grace", "200ms", "--policy", "constant(initial=10ms)", "--"},
            family(mark, dir)));
    o.ready = backoff::test::wait_for_file(dir / "ready");
    probe->signal(o.sig);
    o.r = probe->wait(20s);
    o.attempts = line_count(dir / "ready");
    o.strays = strays_after(mark, 2s);
  });
  for (const outcome& o : out) {
    SCOPED_TRACE(std::string("SIG") + signal_name(o.sig));
    EXPECT_TRUE(o.ready) << "the family never started";
    EXPECT_TRUE(o.r.finished) << "backoff hung";
    EXPECT_TRUE(o.r.exited) << "died of the signal instead of exiting 128+n";
    EXPECT_EQ(o.r.status, 128 + o.sig) << o.r.err;
    EXPECT_NE(o.r.err.find("backoff try: stopped by signal " + std::to_string(o.sig)),
              std::string::npos)
        << o.r.err;
    EXPECT_EQ(o.attempts, 1U) << "an attempt started after the signal";
    EXPECT_TRUE(o.strays.empty()) << o.strays.size() << " left";
    kill_all(o.strays);
  }
  kill_all(marked_alive(prefix));
}

// A failed attempt that leaves its family behind (the shell exits 1 at once): the leftovers,
// TERM-ignoring one included, are gone before the wait is over; then INT, HUP or QUIT during the
// wait ends backoff at once with 128+n (TERM during the wait: try_cli_test).
TEST(HygieneSignals, SignalDuringTheWaitAfterAFailedAttemptWithLeftovers) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("wait-signals");
  int n = 0;
  for (const int sig : {SIGINT, SIGHUP, SIGQUIT}) {
    SCOPED_TRACE(std::string("SIG") + signal_name(sig));
    const fs::path dir = s.sub("run" + std::to_string(n));
    const std::string mark = prefix + std::to_string(n++) + "-";
    auto probe =
        start(cat({"try", "--times", "3", "-v", "--grace", "200ms", "--policy",
                   "constant(initial=30s)", "--"},
                  family(mark, dir, "while [ $(wc -l < $f) -lt 4 ]; do sleep 0.01; done; exit 1")));
    ASSERT_TRUE(backoff::test::wait_for_text(probe->err_path(), "next attempt in 30.000s"))
        << slurp(probe->err_path());
    // The wait has begun: the failed attempt's group must be gone (within the grace and a KILL).
    const auto leftovers = strays_after(mark, 3s);
    EXPECT_TRUE(leftovers.empty()) << leftovers.size() << " of the failed attempt's processes "
                                   << "still alive during the wait";
    probe->signal(sig);
    const probe_result r = probe->wait(10s);
    EXPECT_TRUE(r.finished && r.exited) << r.err;
    EXPECT_EQ(r.status, 128 + sig) << r.err;
    EXPECT_LT(r.elapsed_s, 10.0);
    EXPECT_EQ(line_count(dir / "ready"), 1U);
    EXPECT_EQ(pid_lines(dir), 4U) << "the family started in full";
    kill_all(leftovers);
  }
  kill_all(marked_alive(prefix));
}

// forall -j 2 over four items, each a family: TERM when the first two run. Both groups are
// cleaned up, the last two items never start, and nothing is left.
TEST(HygieneSignals, ForallWithSeveralGroupsCleansUpEveryGroup) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("forall-term");
  const fs::path dir = s.sub("items");
  // {} is the item: each family writes its own files.
  const std::string d = shell_quote(dir.string());
  const std::string script = "cd " + d +
                             " || exit 99; "
                             "sleep 1000 & echo $! >> pids.{}; "
                             "(trap '' TERM; exec sleep 1000) & echo $! >> pids.{}; "
                             "sh -c 'sleep 1000 & echo $! >> pids.{}; wait' & echo $! >> pids.{}; "
                             "echo {} >> ready; wait";
  auto probe = start({"forall", "-j", "2", "--times", "1", "--grace", "200ms", "a", "b", "c", "d",
                      "--", "env", "HYGIENE_MARK=" + prefix + "{}", "sh", "-c", script});
  ASSERT_TRUE(wait_for_lines(dir / "ready", 2));
  probe->signal(SIGTERM);
  const probe_result r = probe->wait(20s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_NE(r.err.find("backoff forall: stopped by signal 15"), std::string::npos) << r.err;
  EXPECT_EQ(line_count(dir / "ready"), 2U) << "an item started after the signal";
  const auto left = strays_after(prefix, 2s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes left";
  kill_all(left);
}

// A failing forall item stops its running siblings: their families, TERM-ignoring grandchildren
// included, are gone once backoff has exited.
TEST(HygieneSignals, AFailingForallItemLeavesNoSiblingProcess) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("forall-fail");
  const fs::path dir = s.sub("items");
  const std::string d = shell_quote(dir.string());
  const std::string script =
      "cd " + d +
      " || exit 99; "
      "if [ {} = bad ]; then while [ $(cat ready 2>/dev/null | wc -l) -lt 3 ]; do sleep 0.01; "
      "done; exit 4; fi; "
      "sleep 1000 & (trap '' TERM; exec sleep 1000) & sh -c 'sleep 1000 & wait' & "
      "echo {} >> ready; wait";
  auto probe = start({"forall", "--times", "1", "--grace", "200ms", "x", "y", "z", "bad", "--",
                      "env", "HYGIENE_MARK=" + prefix + "{}", "sh", "-c", script});
  const probe_result r = probe->wait(20s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(line_count(dir / "ready"), 3U) << "the three siblings were running";
  const auto left = strays_after(prefix, 2s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes left";
  kill_all(left);
}

// The same under `ulimit -n 64`, with more families than the limit lets run at once: forall caps
// how many run (the rest wait their turn), a failure stops those running, and their groups are
// inspected and cleaned up with the descriptors the tool keeps in reserve. Before: status 125
// ("pidfd_open: Too many open files") after a 65 s stall, since a /proc that could not be opened
// was taken for a live group.
TEST(HygieneSignals, AFailingForallItemUnderALowDescriptorLimitLeavesNoProcess) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("forall-fds");
  const fs::path dir = s.sub("items");
  const std::string d = shell_quote(dir.string());
  const std::string script =
      "cd " + d +
      " || exit 99; "
      "if [ {} = bad ]; then while [ $(cat ready 2>/dev/null | wc -l) -lt 5 ]; do sleep 0.01; "
      "done; exit 4; fi; "
      "sleep 1000 & (trap '' TERM; exec sleep 1000) & sh -c 'sleep 1000 & wait' & "
      "echo {} >> ready; wait";
  std::vector<std::string> args{"forall", "--times", "1", "--grace", "200ms", "bad"};
  for (int i = 1; i <= 40; ++i) args.push_back(std::to_string(i));
  args = cat(args, {"--", "env", "HYGIENE_MARK=" + prefix + "{}", "sh", "-c", script});
  process_probe probe(args, std::nullopt, {}, rlim_t{64});  // `ulimit -n 64` for the tool only
  const probe_result r = probe.wait(60s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_LT(r.elapsed_s, 30) << r.err;
  EXPECT_GE(line_count(dir / "ready"), 5U);
  EXPECT_LT(line_count(dir / "ready"), 40U) << "the limit let every item run at once";
  const auto left = strays_after(prefix, 2s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes left";
  kill_all(left);
}

// --- Output closed under backoff (issue 40) ------------------------------------------------------

fs::path write_script(const fs::path& dir, const std::string& text);  // below, with the scripts

// `backoff ARGS` with stderr, or stdout, or both, on a pipe whose reader has already gone, as
// after `backoff forall ... 2>&1 | head -n1` once head has exited: every write there fails (EPIPE;
// SIGPIPE at its default action, as a shell leaves it). Waits up to `limit`; a hung tool is
// killed with its process group.
struct closed_run {
  bool finished = false;
  bool exited = false;
  int status = -1;
  double elapsed_s = 0;
};

closed_run run_with_closed_output(const std::vector<std::string>& args, bool close_stdout,
                                  bool close_stderr, const fs::path& dir,
                                  std::chrono::milliseconds limit = 20s) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
  ::close(pipe_fds[0]);  // the reader is gone before the tool writes anything
  const std::string kept = (dir / "kept-output").string();
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 3, kept.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::posix_spawn_file_actions_adddup2(&actions, close_stdout ? pipe_fds[1] : 3, 1);
  ::posix_spawn_file_actions_adddup2(&actions, close_stderr ? pipe_fds[1] : 3, 2);
  ::posix_spawn_file_actions_addclose(&actions, 3);
  posix_spawnattr_t attributes;
  backoff::test::own_group_attributes(attributes,
                                      {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ});
  std::vector<std::string> argv{BACKOFF_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> argv_p;
  for (auto& a : argv) argv_p.push_back(a.data());
  argv_p.push_back(nullptr);
  pid_t pid = -1;
  const auto started = std::chrono::steady_clock::now();
  const int error = ::posix_spawn(&pid, argv_p[0], &actions, &attributes, argv_p.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  ::close(pipe_fds[1]);
  if (error != 0) throw std::runtime_error("cannot start backoff");
  closed_run r;
  int raw = 0;
  for (;;) {
    const pid_t got = ::waitpid(pid, &raw, WNOHANG);
    if (got == pid) {
      r.finished = true;
      break;
    }
    if (std::chrono::steady_clock::now() - started > limit) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &raw, 0);
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  r.exited = WIFEXITED(raw);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return r;
}

// The attempt that was running when the output closed: `sh -c 'echo $$ > running; exec sleep
// 30'`. Gone soon after backoff has exited (before: it ran on with PPID 1, backoff dead of
// SIGPIPE at its next log line).
void expect_running_attempt_gone(const closed_run& r, const fs::path& pid_file) {
  EXPECT_TRUE(r.finished) << "backoff hung";
  EXPECT_TRUE(r.exited) << "backoff died of signal " << r.status - 128;
  EXPECT_EQ(r.status, 141);
  ASSERT_TRUE(backoff::test::wait_for_file(pid_file, 1s)) << "the long attempt never started";
  const pid_t pid = backoff::test::read_pids(pid_file).at(0);
  EXPECT_TRUE(backoff::test::wait_until_gone(pid, 3s)) << "the running attempt was left running";
  backoff::test::kill_if_alive(pid);
}

// The long item is running when the other item's retry line meets the closed stderr.
TEST(HygieneOutputClosed, ForallStderrClosedStopsTheRunningItems) {
  const hygiene_scratch s;
  const std::string d = shell_quote(s.dir().string());
  const closed_run r = run_with_closed_output(
      {"forall", "--times", "3", "--grace", "200ms", "--policy", "constant(initial=5s)", "long",
       "short", "--", "sh", "-c",
       "cd " + d +
           " || exit 99; if [ {} = long ]; then echo $$ > running; exec sleep 30; fi; "
           "while [ ! -s running ]; do sleep 0.01; done; echo x >> short; exit 1"},
      false, true, s.dir());
  expect_running_attempt_gone(r, s / "running");
  EXPECT_LT(r.elapsed_s, 4.0) << "waited for the retry after the closed output";
  EXPECT_EQ(line_count(s / "short"), 1U) << "an attempt started after the output was closed";
}

// The same through stdout: --stdout-on-success passes the short item's output on.
TEST(HygieneOutputClosed, ForallStdoutClosedStopsTheRunningItems) {
  const hygiene_scratch s;
  const std::string d = shell_quote(s.dir().string());
  const closed_run r = run_with_closed_output(
      {"forall", "--times", "1", "--grace", "200ms", "--stdout-on-success", "long", "short", "--",
       "sh", "-c",
       "cd " + d +
           " || exit 99; if [ {} = long ]; then echo $$ > running; exec sleep 30; fi; "
           "while [ ! -s running ]; do sleep 0.01; done; echo done"},
      true, false, s.dir());
  expect_running_attempt_gone(r, s / "running");
  EXPECT_NE(slurp(s / "kept-output").find("its output was closed"), std::string::npos)
      << slurp(s / "kept-output");
}

// A script's -v line for the short branch's command meets the closed stderr.
TEST(HygieneOutputClosed, ScriptStderrClosedStopsTheRunningBranches) {
  const hygiene_scratch s;
  const fs::path file =
      write_script(s.dir(),
                   "forall b in long short\n"
                   "  sh -c 'cd " +
                       s.dir().string() +
                       " || exit 99; if [ $1 = long ]; then echo $$ > running; exec sleep 30; fi; "
                       "while [ ! -s running ]; do sleep 0.01; done' x ${b}\n"
                       "end\n");
  const closed_run r = run_with_closed_output({"script", "-v", "--grace", "200ms", file.string()},
                                              false, true, s.dir());
  expect_running_attempt_gone(r, s / "running");
}

// try and forany: the retry line meets the closed stderr; no attempt starts after it, and the
// tool does not wait out the delay.
TEST(HygieneOutputClosed, TryAndForanyStopRetryingWhenStderrIsClosed) {
  const hygiene_scratch s;
  for (const std::string mode : {"try", "forany"}) {
    SCOPED_TRACE(mode);
    const fs::path log = s / ("attempts-" + mode);
    std::vector<std::string> args{mode, "--times", "3", "--policy", "constant(initial=5s)"};
    if (mode == "forany") args.insert(args.end(), {"a", "b"});
    args = cat(args, {"--", "sh", "-c", "echo x >> " + shell_quote(log.string()) + "; exit 1"});
    const closed_run r = run_with_closed_output(args, false, true, s.dir());
    EXPECT_TRUE(r.finished && r.exited) << r.status;
    EXPECT_EQ(r.status, 141);
    EXPECT_LT(r.elapsed_s, 4.0);
    EXPECT_EQ(line_count(log), 1U);
  }
}

// --- The documented limit: setsid ---------------------------------------------------------------

// A process that calls setsid() leaves the attempt's group and escapes the cleanup (RETRY_TOOL.md:
// "as in ftsh"); everything else of the group is gone. If this ever starts failing because the
// escaped process is stopped too, the documentation should change with it.
TEST(Hygiene, ASetsidGrandchildEscapesAsDocumentedAndNothingElseDoes) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("setsid");
  const fs::path dir = s.sub("run");
  const std::string d = shell_quote(dir.string());
  const std::string script = "cd " + d +
                             " || exit 99; "
                             "HYGIENE_MARK=" +
                             prefix +
                             "escaped setsid sleep 1000 & echo $! > escaped; "
                             "sleep 1000 & (trap '' TERM; exec sleep 1000) & echo $$ > ready; wait";
  auto probe = start({"try", "--times", "1", "--timeout", "300ms", "--grace", "100ms", "--", "env",
                      "HYGIENE_MARK=" + prefix + "group", "sh", "-c", script});
  const probe_result r = probe->wait(20s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 124) << r.err;
  ASSERT_TRUE(backoff::test::wait_for_file(dir / "ready", 1s)) << "the family did not start";
  const auto group_left = strays_after(prefix + "group", 2s);
  EXPECT_TRUE(group_left.empty()) << group_left.size() << " of the group left";
  const auto escaped = marked_alive(prefix + "escaped");
  EXPECT_EQ(escaped.size(), 1U) << "the setsid process was expected to survive";
  kill_all(group_left);
  kill_all(escaped);
  EXPECT_TRUE(strays_after(prefix, 2s).empty());
}

// --- Scripts -----------------------------------------------------------------------------------

fs::path write_script(const fs::path& dir, const std::string& text) {
  const fs::path file = dir / "hygiene.ftsh";
  std::ofstream(file) << text;
  return file;
}

// The family as an ftsh command line: single quotes are literal in ftsh, so the shell text uses
// double quotes inside.
std::string ftsh_family(const std::string& mark, const fs::path& dir) {
  return "env HYGIENE_MARK=" + mark + " sh -c 'cd " + dir.string() +
         " || exit 99; sleep 1000 & echo $! >> pids; "
         "(trap \"\" TERM; exec sleep 1000) & echo $! >> pids; "
         "sh -c \"sleep 1000 & echo \\$! >> pids; wait\" & echo $! >> pids; "
         "echo $$ >> ready; wait'";
}

// `try for 300ms` around a family, ten times over in parallel: 124, and nothing left.
TEST(HygieneScript, TryForDeadlineStopsEveryGrandchild) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("script-deadline");
  constexpr int runs = 10;
  struct outcome {
    probe_result r;
    std::size_t ready = 0;
    std::vector<pid_t> strays;
  };
  std::vector<outcome> out(runs);
  in_parallel(runs, 4, [&](int i) {
    const fs::path dir = s.sub("run" + std::to_string(i));
    const std::string mark = prefix + std::to_string(i) + "-";
    const fs::path file =
        write_script(dir, "try for 300ms\n  " + ftsh_family(mark, dir) + "\nend\necho never\n");
    auto probe = start({"script", "--grace", "100ms", file.string()});
    outcome& o = out[static_cast<std::size_t>(i)];
    o.r = probe->wait(20s);
    o.ready = line_count(dir / "ready");
    o.strays = strays_after(mark, 2s);
  });
  std::size_t started = 0;
  for (const outcome& o : out) {
    EXPECT_TRUE(o.r.finished && o.r.exited) << o.r.err;
    EXPECT_EQ(o.r.status, 124) << o.r.err;
    EXPECT_EQ(o.r.out, "");
    EXPECT_TRUE(o.strays.empty()) << o.strays.size() << " left";
    started += o.ready;
    kill_all(o.strays);
  }
  EXPECT_GE(started, 8U) << "families that got going before the deadline";
  kill_all(marked_alive(prefix));
}

// TERM to a script while a forall runs a family in each branch: 143, nothing left.
TEST(HygieneScript, TermDuringAForallLeavesNoGrandchild) {
  const hygiene_scratch s;
  const std::string prefix = mark_prefix("script-term");
  const fs::path dir = s.sub("run");
  const fs::path file = write_script(
      dir, "forall b in 1 2 3\n  " + ftsh_family(prefix + "${b}-", dir) + "\nend\necho never\n");
  auto probe = start({"script", "--grace", "200ms", file.string()});
  ASSERT_TRUE(wait_for_lines(dir / "ready", 3));
  probe->signal(SIGTERM);
  const probe_result r = probe->wait(20s);
  EXPECT_TRUE(r.finished && r.exited) << r.err;
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("stopped by signal 15"), std::string::npos) << r.err;
  const auto left = strays_after(prefix, 2s);
  EXPECT_TRUE(left.empty()) << left.size() << " processes left";
  kill_all(left);
}

}  // namespace
