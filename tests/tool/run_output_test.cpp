// SPDX-License-Identifier: Apache-2.0
// The retry tool's own output and input bounds (issue 40): a reader that has gone away stops the
// run instead of killing the tool (run_output.hpp), forall's threads when the system refuses some
// (workers.hpp), and the stdin spool's bound (spool.hpp).
#include "tool/run_output.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <string>
#include <system_error>

#include "tool/message_prefix.hpp"
#include "tool/process.hpp"
#include "tool/spool.hpp"
#include "tool/workers.hpp"

namespace {

using namespace backoff::tool;

// A pipe whose reader has gone: every write to its other end fails with EPIPE (SIGPIPE is
// ignored in this test process, as the tool ignores it).
struct reader_gone {
  int fd = -1;
  reader_gone() {
    ignore_write_signals();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category());
    ::close(fds[0]);
    fd = fds[1];
  }
  ~reader_gone() { ::close(fd); }
};

// Points stderr at `fd` while it lives.
struct stderr_to {
  int saved;
  explicit stderr_to(int fd) : saved(::dup(STDERR_FILENO)) { ::dup2(fd, STDERR_FILENO); }
  ~stderr_to() {
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
  }
};

TEST(RunOutput, ALineToAStderrWithoutReaderStopsTheRun) {
  const cancel_scope run;
  run_output out(run, message_prefix("try"));
  const reader_gone pipe;
  {
    const stderr_to redirected(pipe.fd);
    out.line("attempt 1/3: exit status 1 after 0.010s; next attempt in 5.000s");
  }
  EXPECT_TRUE(out.closed());
  EXPECT_TRUE(out.scope().cancelled());
  EXPECT_EQ(out.scope().signal(), SIGTERM) << "the attempts' groups get TERM, as on a stop";
  EXPECT_FALSE(run.cancelled()) << "the parent is not a signal to the tool";
  EXPECT_EQ(status_output_closed, 141);
}

TEST(RunOutput, ALineToAClosedStderrIsLostAndNothingElse) {
  const cancel_scope run;
  run_output out(run, message_prefix("try"));
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // writes fail with EBADF
  {
    const stderr_to redirected(devnull);
    out.line("lost");
  }
  ::close(devnull);
  EXPECT_FALSE(out.closed());
  EXPECT_FALSE(out.scope().cancelled());
}

TEST(RunOutput, PassingOnHeldOutputToAStdoutWithoutReaderStopsTheRun) {
  const cancel_scope run;
  run_output out(run, message_prefix("try"));
  spool held = spool::create();
  ASSERT_EQ(::write(held.fd(), "done\n", 5), 5);
  const reader_gone pipe;
  EXPECT_FALSE(out.pass_on(held, pipe.fd));
  EXPECT_TRUE(out.closed());
  EXPECT_TRUE(out.scope().cancelled());
}

TEST(RunOutput, TheParentsSignalStillReachesTheRun) {
  cancel_scope run;
  const run_output out(run, message_prefix("try"));
  run.cancel(SIGINT);
  EXPECT_TRUE(out.scope().cancelled());
  EXPECT_EQ(out.scope().signal(), SIGINT);
  EXPECT_FALSE(out.closed());
}

TEST(Workers, RunTheWorkOnAsManyWorkersAsWanted) {
  std::atomic<int> calls{0};
  bool fewer = false;
  const std::size_t n = run_workers(
      5, [&] { ++calls; }, [&](std::size_t, const std::system_error&) { fewer = true; });
  EXPECT_EQ(n, 5U);
  EXPECT_EQ(calls.load(), 5);
  EXPECT_FALSE(fewer);
  EXPECT_EQ(run_workers(
                0, [&] { ++calls; }, [](std::size_t, const std::system_error&) {}),
            1U)
      << "this thread always works";
}

// A spool bounded by a limit takes up to the limit and refuses more, keeping nothing.
TEST(Spool, FillStopsAtItsLimit) {
  for (const std::size_t size : {std::size_t{4096}, std::size_t{4097}}) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const std::string data(size, 'x');
    ASSERT_EQ(::write(fds[1], data.data(), data.size()), static_cast<ssize_t>(size));
    ::close(fds[1]);
    spool s = spool::create();
    if (size <= 4096) {
      EXPECT_EQ(s.fill_from(fds[0], 4096), size);
    } else {
      try {
        s.fill_from(fds[0], 4096);
        ADD_FAILURE() << "took more than the limit";
      } catch (const spool_full& e) {
        EXPECT_EQ(e.why(), spool_full::reason::limit);
        EXPECT_EQ(::lseek(s.fd(), 0, SEEK_END), 0) << "what was spooled is not kept";
      }
    }
    ::close(fds[0]);
  }
}

}  // namespace
