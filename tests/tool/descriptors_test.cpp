// SPDX-License-Identifier: Apache-2.0
// The tool under a shortage of descriptors: the budget that caps forall, an attempt that cannot
// start (it waits for another to end, or says why and starts nothing), a child without a pidfd
// (watched, not killed), and a process group that cannot be inspected (unknown, not alive). Each
// test lowers this process's soft RLIMIT_NOFILE and fills the table so that exactly `spare`
// descriptors are free, and restores both at the end.
#include "tool/descriptors.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "scratch.hpp"
#include "tool/process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace backoff::tool;
namespace fs = std::filesystem;

// While it lives, exactly `spare` descriptors can be opened: the soft limit is lowered to
// `limit` and every free number below it is taken by a copy of stdin.
class descriptor_squeeze {
 public:
  explicit descriptor_squeeze(std::size_t spare, rlim_t limit = 128) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = limit;
    if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) throw std::runtime_error("setrlimit");
    for (;;) {
      const int fd = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) break;
      filler_.push_back(fd);
    }
    for (std::size_t i = 0; i < spare && !filler_.empty(); ++i) {
      ::close(filler_.back());
      filler_.pop_back();
    }
  }
  descriptor_squeeze(const descriptor_squeeze&) = delete;
  descriptor_squeeze& operator=(const descriptor_squeeze&) = delete;
  ~descriptor_squeeze() {
    for (const int fd : filler_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  rlimit saved_{};
  std::vector<int> filler_;
};

launch_spec sh_script(const std::string& script) {
  launch_spec spec;
  spec.argv = {"sh", "-c", script};
  spec.environment = current_environment();
  return spec;
}

attempt_result run_briefly(const launch_spec& spec, std::optional<backoff::duration> timeout = {}) {
  attempt_limits limits;
  if (timeout) limits.kill_at = steady_now() + *timeout;
  limits.grace = 200ms;
  const cancel_scope scope;
  return run_attempt(spec, limits, scope);
}

double seconds_from(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(DescriptorBudget, CountsTheSoftLimitAndTheOpenDescriptors) {
  const descriptor_squeeze squeeze(40);
  const descriptor_budget b = current_descriptor_budget();
  EXPECT_EQ(b.limit, 128U);
  EXPECT_EQ(b.limit - b.open, 40U);
  EXPECT_EQ(b.reserve, 10U) << "a quarter of what is free when less than 64 are";
  EXPECT_EQ(b.commands_at_once(2), 15U);
  EXPECT_EQ(b.commands_at_once(3), 10U);
}

TEST(DescriptorBudget, AtLeastOneCommandWhateverIsLeft) {
  const descriptor_squeeze squeeze(0);
  const descriptor_budget b = current_descriptor_budget();
  EXPECT_EQ(b.available(), 0U);
  EXPECT_EQ(b.commands_at_once(2), 1U);
}

TEST(DescriptorBudget, EachAttemptNeedsItsPidfdAndEventfdAndItsSpools) {
  EXPECT_EQ(descriptors_per_attempt(false, false), 2U);
  EXPECT_EQ(descriptors_per_attempt(true, false), 3U);
  EXPECT_EQ(descriptors_per_attempt(true, true), 4U);
}

// Before: the child was started, then killed when pidfd_open failed, and the error was
// "pidfd_open: Too many open files". Now nothing starts, and the message says why.
TEST(DescriptorShortageExhausted, NothingRunningToWaitForIsAClearErrorAndStartsNothing) {
  const backoff::test::test_scratch s("descriptors");
  const fs::path marker = s / "ran";
  std::string message;
  {
    const descriptor_squeeze squeeze(0);
    try {
      run_briefly(sh_script("touch '" + marker.string() + "'"));
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
  }
  EXPECT_NE(message.find("cannot start 'sh'"), std::string::npos) << message;
  EXPECT_NE(message.find("ulimit -n 128"), std::string::npos) << message;
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(fs::exists(marker)) << "the command ran: " << message;
}

// One descriptor left: the eventfd takes it, the pidfd cannot be had. Before: the child was
// killed. Now it is watched by polling and its status is its own.
TEST(DescriptorShortageExhausted, AChildWithoutAPidfdIsWatchedNotKilled) {
  const descriptor_squeeze squeeze(1);
  const auto start = std::chrono::steady_clock::now();
  const attempt_result r = run_briefly(sh_script("sleep 0.2; exit 3"));
  EXPECT_EQ(r.ended, attempt_end::exited);
  EXPECT_EQ(r.status(), 3);
  EXPECT_GE(seconds_from(start), 0.19);
}

TEST(DescriptorShortageExhausted, AChildWithoutAPidfdIsStillStoppedAtItsTimeout) {
  const descriptor_squeeze squeeze(1);
  const auto start = std::chrono::steady_clock::now();
  const attempt_result r = run_briefly(sh_script("sleep 30"), 300ms);
  EXPECT_EQ(r.ended, attempt_end::timed_out);
  EXPECT_EQ(r.status(), status_timed_out);
  EXPECT_LT(seconds_from(start), 10.0);
}

// Two descriptors left: one attempt runs; a second cannot get its eventfd and waits for the first
// to end, then runs. Before: the second attempt failed.
TEST(DescriptorShortageExhausted, AnAttemptWaitsForAnotherToEndAndThenRuns) {
  const backoff::test::test_scratch s("descriptors");
  const fs::path started = s / "started";
  const descriptor_squeeze squeeze(2);
  attempt_result first;
  std::thread other([&] {
    first = run_briefly(sh_script("touch '" + started.string() + "'; sleep 0.4; exit 5"));
  });
  for (int i = 0; i < 1000 && !fs::exists(started); ++i) std::this_thread::sleep_for(5ms);
  const auto start = std::chrono::steady_clock::now();
  attempt_result second;
  try {
    second = run_briefly(sh_script("exit 7"));
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  const double waited = seconds_from(start);
  other.join();
  EXPECT_EQ(first.status(), 5);
  EXPECT_EQ(second.status(), 7);
  EXPECT_GE(waited, 0.1) << "the second attempt should have waited for the first";
}

// A group whose leader is an unreaped zombie: kill(-pgid, 0) finds it, /proc says it is a zombie.
// Without a descriptor to read /proc that cannot be told: unknown, never alive (before: alive,
// which kept the tool sending KILL for 60 s).
TEST(InspectGroup, AGroupThatCannotBeInspectedIsUnknownNotAlive) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::_exit(0);
  }
  ::setpgid(pid, pid);  // either side may win the race; both make the same group
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(inspect_group(pid), group_state::gone) << "a zombie is not alive";
  {
    const descriptor_squeeze squeeze(0);
    EXPECT_EQ(inspect_group(pid), group_state::unknown);
  }
  EXPECT_EQ(inspect_group(pid), group_state::gone);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(inspect_group(pid), group_state::gone);
}

TEST(InspectGroup, ALiveGroupIsAliveAndAnEmptyOneGoneWithoutDescriptors) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::pause();
    ::_exit(0);
  }
  ::setpgid(pid, pid);
  EXPECT_EQ(inspect_group(pid), group_state::alive);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const descriptor_squeeze squeeze(0);
  EXPECT_EQ(inspect_group(pid), group_state::gone) << "kill(-pgid, 0) needs no descriptor";
}

}  // namespace
