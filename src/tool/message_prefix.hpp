// SPDX-License-Identifier: Apache-2.0
// What every line a `backoff` subcommand writes to stderr starts with, built in one place from
// the subcommand's name: "backoff try: ", "backoff forall: ", "backoff sim: ". Usage errors and
// the lines of a run alike, so that a user (or a grep) can tell which command said what, and a
// line of ours from the lines the commands it runs print themselves. The `backoff-try` executable
// is `backoff try` and says so. Source: GNU Coding Standards, section 4.4 "Formatting Error
// Messages" ("program: message"; a script's lines follow its "program:sourcefile:lineno:
// message" as "backoff script: FILE:LINE: message").
//
// The CLI names the command once and passes the prefix down: to the retry tool in
// command_options::message_prefix, to a script in script_options::message_prefix, to the lines
// of a signal handler in a signal_safe_line filled before the handler is installed.
//
//   options.message_prefix = message_prefix("forall");   // "backoff forall: "
//   static signal_safe_line interrupted;                 // a static: the handler reads it
//   interrupted.set("sim", "interrupted");               // before sigaction()
//   extern "C" void on_signal(int) { interrupted.write_to(STDERR_FILENO); _exit(130); }
//
// Threads: message_prefix is a pure function. signal_safe_line::set must not run while a handler
// may write the line (set it, then install the handler); write_to is async-signal-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

namespace backoff::tool {

// "backoff " + command + ": ".
std::string message_prefix(std::string_view command);

// One line, message_prefix(command) + text + "\n", held in a fixed buffer so that a signal
// handler can write it without allocating or locking.
class signal_safe_line {
 public:
  static constexpr std::size_t capacity = 128;

  // Cut at `capacity` bytes (the newline kept) when longer: commands and texts are ours, short.
  // Allocates: call it before the handler that writes the line is installed.
  void set(std::string_view command, std::string_view text);
  // Empty until set.
  std::string_view text() const noexcept;
  // The line in one write(); nothing when not set. Async-signal-safe; errno is kept.
  void write_to(int fd) const noexcept;

 private:
  std::array<char, capacity> bytes_{};
  std::atomic<std::size_t> size_{0};
};

}  // namespace backoff::tool
