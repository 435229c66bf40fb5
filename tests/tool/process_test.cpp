// SPDX-License-Identifier: Apache-2.0
// One attempt with real processes (sh -c): statuses, start failures, the process group stopped on
// timeout, cancellation and failure, and the disk spools. Commands sleep a fraction of a second at
// most; time bounds are generous upper bounds for a loaded machine.
#include "tool/process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "scratch.hpp"
#include "tool/spool.hpp"

namespace {

using namespace std::chrono_literals;
using namespace backoff::tool;
namespace fs = std::filesystem;
using backoff::test::slurp;

launch_spec shell(const std::string& script) {
  launch_spec spec;
  spec.argv = {"sh", "-c", script};
  spec.environment = current_environment();
  return spec;
}

attempt_result run(const launch_spec& spec, std::optional<backoff::duration> timeout = {},
                   backoff::duration grace = 2s) {
  attempt_limits limits;
  if (timeout) limits.kill_at = steady_now() + *timeout;
  limits.grace = grace;
  const cancel_scope scope;
  return run_attempt(spec, limits, scope);
}

// A process is gone when /proc has no live entry for it (a zombie waits only for its reaper).
bool gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

pid_t read_pid(const fs::path& file) {
  for (int i = 0; i < 200 && fs::file_size(file) == 0; ++i) std::this_thread::sleep_for(5ms);
  return static_cast<pid_t>(std::stol(slurp(file)));
}

TEST(RunAttempt, ReportsTheExitCode) {
  const attempt_result r = run(shell("exit 3"));
  EXPECT_EQ(r.ended, attempt_end::exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.status(), 3);
}

TEST(RunAttempt, ReportsDeathBySignalAs128PlusN) {
  const attempt_result r = run(shell("kill -SEGV $$"));
  EXPECT_EQ(r.ended, attempt_end::signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.status(), 128 + SIGSEGV);
}

TEST(RunAttempt, NotFoundAndNotExecutableAreResultsNotExceptions) {
  launch_spec missing;
  missing.argv = {"backoff-no-such-program"};
  const attempt_result a = run(missing);
  EXPECT_EQ(a.ended, attempt_end::not_found);
  EXPECT_EQ(a.status(), 127);
  EXPECT_NE(a.error.find("backoff-no-such-program"), std::string::npos);

  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  const fs::path file = dir / "script";
  std::ofstream(file) << "#!/bin/sh\nexit 0\n";
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  launch_spec plain;
  plain.argv = {file.string()};
  const attempt_result b = run(plain);
  EXPECT_EQ(b.ended, attempt_end::not_executable);
  EXPECT_EQ(b.status(), 126);
}

TEST(RunAttempt, PassesTheEnvironmentAndDescriptors) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  launch_spec spec = shell("echo \"$GREETING\"; echo oops >&2");
  set_variable(spec.environment, "GREETING", "first");
  set_variable(spec.environment, "GREETING", "hello");  // replaces, does not duplicate
  const int out = ::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  spec.descriptors = {{1, out}, {2, 1}};  // 2>&1 after 1>out
  EXPECT_EQ(run(spec).status(), 0);
  ::close(out);
  EXPECT_EQ(slurp(dir / "out"), "hello\noops\n");
}

TEST(RunAttempt, TimeoutStopsTheWholeGroupIncludingGrandchildren) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  const auto start = std::chrono::steady_clock::now();
  const attempt_result r =
      run(shell("sleep 30 & echo $! > " + (dir / "pid").string() + "; wait"), 200ms);
  EXPECT_EQ(r.ended, attempt_end::timed_out);
  EXPECT_EQ(r.status(), 124);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_TRUE(gone(read_pid(dir / "pid")));
}

TEST(RunAttempt, AGroupThatIgnoresTermIsKilledAfterTheGrace) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  const auto start = std::chrono::steady_clock::now();
  const attempt_result r = run(shell("trap '' TERM; sh -c 'trap \"\" TERM; sleep 30' & echo $! > " +
                                     (dir / "pid").string() + "; sleep 30"),
                               100ms, 200ms);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.ended, attempt_end::timed_out);
  EXPECT_GE(took, 300ms);  // the timeout, then the full grace: TERM alone did nothing
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(gone(read_pid(dir / "pid")));
}

TEST(RunAttempt, CancellationSendsTheScopesSignalToTheGroup) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  cancel_scope scope;
  std::jthread canceller([&] {
    while (!fs::exists(dir / "ready")) std::this_thread::sleep_for(5ms);
    scope.cancel(SIGINT);
  });
  attempt_limits limits;
  limits.grace = 2s;
  const attempt_result r =
      run_attempt(shell("trap 'echo INT > " + (dir / "got").string() + "; exit 0' INT; touch " +
                        (dir / "ready").string() + "; while :; do sleep 0.05; done"),
                  limits, scope);
  EXPECT_EQ(r.ended, attempt_end::cancelled);
  EXPECT_EQ(r.status(), 128 + SIGINT);
  EXPECT_EQ(slurp(dir / "got"), "INT\n");
}

TEST(RunAttempt, AFailedAttemptLeavesNoProcessBehind) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  const attempt_result r =
      run(shell("sleep 30 & echo $! > " + (dir / "pid").string() + "; exit 2"));
  EXPECT_EQ(r.status(), 2);
  EXPECT_TRUE(gone(read_pid(dir / "pid")));
}

TEST(RunAttempt, ACancelledScopeStartsNothing) {
  cancel_scope scope;
  scope.cancel(SIGTERM);
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  const attempt_result r = run_attempt(shell("touch " + (dir / "ran").string()), {}, scope);
  EXPECT_EQ(r.ended, attempt_end::cancelled);
  EXPECT_EQ(r.status(), 143);
  EXPECT_FALSE(fs::exists(dir / "ran"));
}

TEST(CancelScope, ChildScopesInheritTheSignal) {
  cancel_scope root;
  cancel_scope child(root);
  cancel_scope grandchild(child);
  EXPECT_FALSE(grandchild.cancelled());
  root.cancel(SIGHUP);
  EXPECT_TRUE(grandchild.cancelled());
  EXPECT_EQ(grandchild.signal(), SIGHUP);
  cancel_scope sibling(root);
  EXPECT_TRUE(sibling.cancelled());  // made after the cancel: cancelled from the start
}

TEST(CancelScope, CancellingAChildLeavesTheParentRunning) {
  cancel_scope root;
  cancel_scope child(root);
  child.cancel();
  EXPECT_TRUE(child.cancelled());
  EXPECT_EQ(child.signal(), SIGTERM);
  EXPECT_FALSE(root.cancelled());
}

TEST(Spool, EveryReaderStartsAtTheBeginning) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  std::ofstream(dir / "in") << "line one\nline two\n";
  const int in = ::open((dir / "in").c_str(), O_RDONLY | O_CLOEXEC);
  spool s = spool::create();
  EXPECT_EQ(s.fill_from(in), 18u);
  ::close(in);
  for (int k = 0; k < 3; ++k) {
    const int reader = s.open_reader();
    char buf[64] = {};
    EXPECT_EQ(::read(reader, buf, 4), 4);  // a partial read must not move the next reader
    EXPECT_EQ(std::string(buf, 4), "line");
    ::close(reader);
  }
  const int out = ::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  EXPECT_EQ(s.copy_to(out), 18u);
  ::close(out);
  EXPECT_EQ(slurp(dir / "out"), "line one\nline two\n");
  s.clear();
  const int again = ::open((dir / "again").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  EXPECT_EQ(s.copy_to(again), 0u);
  ::close(again);
}

TEST(Spool, LeavesNoFileInTheTemporaryDirectory) {
  const backoff::test::test_scratch scratch("process");
  const fs::path& dir = scratch.dir();
  ::setenv("TMPDIR", dir.c_str(), 1);
  {
    spool s = spool::create();
    EXPECT_GE(s.fd(), 0);
    EXPECT_TRUE(fs::is_empty(dir));
  }
  ::unsetenv("TMPDIR");
}

}  // namespace
