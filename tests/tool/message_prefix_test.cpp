// SPDX-License-Identifier: Apache-2.0
// One prefix per command (message_prefix.hpp): every line the tool writes starts with
// "backoff <command>: ", run_output's lines included, and the line a signal handler writes is
// chosen, whole, before the handler runs (sim and sweep's "backoff sim: interrupted").
#include "tool/message_prefix.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>
#include <system_error>

#include "tool/cancel_scope.hpp"
#include "tool/run_output.hpp"

namespace {

using namespace backoff::tool;

// A pipe to read back what was written to its other end (a line is far below its buffer).
struct prefix_pipe {
  int read_end = -1;
  int write_end = -1;
  prefix_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category());
    read_end = fds[0];
    write_end = fds[1];
  }
  ~prefix_pipe() {
    ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
  // Everything written, once the write end is closed.
  std::string drain() {
    ::close(write_end);
    write_end = -1;
    std::string got;
    std::array<char, 512> buffer{};
    for (ssize_t n; (n = ::read(read_end, buffer.data(), buffer.size())) > 0;) {
      got.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return got;
  }
};

TEST(MessagePrefix, IsTheProgramAndTheCommand) {
  EXPECT_EQ(message_prefix("try"), "backoff try: ");
  EXPECT_EQ(message_prefix("forall"), "backoff forall: ");
  EXPECT_EQ(message_prefix("script"), "backoff script: ");
}

TEST(MessagePrefix, StartsEveryLineOfARun) {
  const cancel_scope run;
  run_output out(run, message_prefix("forany"));
  prefix_pipe pipe;
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(pipe.write_end, STDERR_FILENO);
  out.line("[a] attempt 1/3: exit status 1 after 0.010s; next: [b] at once");
  out.line("giving up: no rounds left");
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  EXPECT_EQ(pipe.drain(),
            "backoff forany: [a] attempt 1/3: exit status 1 after 0.010s; next: [b] at once\n"
            "backoff forany: giving up: no rounds left\n");
}

TEST(SignalSafeLine, IsEmptyUntilSetAndWritesNothing) {
  const signal_safe_line line;
  EXPECT_EQ(line.text(), "");
  prefix_pipe pipe;
  line.write_to(pipe.write_end);
  EXPECT_EQ(pipe.drain(), "");
}

TEST(SignalSafeLine, HoldsTheCommandsLineAndWritesItWhole) {
  signal_safe_line line;
  line.set("sim", "interrupted");
  EXPECT_EQ(line.text(), "backoff sim: interrupted\n");
  line.set("sweep", "interrupted");  // a later command's replaces it
  EXPECT_EQ(line.text(), "backoff sweep: interrupted\n");
  prefix_pipe pipe;
  errno = EAGAIN;
  line.write_to(pipe.write_end);
  EXPECT_EQ(errno, EAGAIN) << "a handler must leave errno as it found it";
  EXPECT_EQ(pipe.drain(), "backoff sweep: interrupted\n");
}

TEST(SignalSafeLine, CutsATooLongLineAndKeepsItsNewline) {
  signal_safe_line line;
  line.set("sim", std::string(300, 'x'));
  const std::string_view text = line.text();
  ASSERT_EQ(text.size(), signal_safe_line::capacity);
  EXPECT_TRUE(text.starts_with("backoff sim: xxx"));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

}  // namespace
