// SPDX-License-Identifier: Apache-2.0
// What the retry tool itself writes while commands run: its lines on stderr, and the attempts'
// held stdout that it passes on (--stdout-on-success). Each line is one write(), so that parallel
// items do not interleave. A reader that has gone away (EPIPE: `backoff forall ... 2>&1 | head
// -n1`) stops the run as a signal does: the running attempts' process groups get TERM, grace,
// KILL, no attempt starts after it, and the tool exits 141 (128 + SIGPIPE, what a shell reports
// for a writer that SIGPIPE ended). The tool ignores SIGPIPE (process.hpp, ignore_write_signals),
// so it lives to do this instead of dying with its attempts left running with PPID 1. Any other
// write error (stderr closed, or on a full disk) loses the line and nothing else. Every line starts
// with the command's prefix (message_prefix.hpp), given once.
//
//   run_output out(scope, message_prefix("try"));  // below the run's scope (Ctrl-C)
//   out.line("attempt 1/5: exit status 1 after 0.010s; next attempt in 1.226s");
//   // stderr: "backoff try: attempt 1/5: exit status 1 after 0.010s; next attempt in 1.226s"
//   run_attempt(spec, limits, out.scope());      // stopped when the output is closed
//   if (out.closed()) return status_output_closed;
#pragma once

#include <atomic>
#include <csignal>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "cancel_scope.hpp"
#include "process.hpp"
#include "spool.hpp"

namespace backoff::tool {

// The exit status of a run whose output was closed under it.
inline constexpr int status_output_closed = status_of_signal(SIGPIPE);  // 141

class run_output {
 public:
  // `prefix` starts every line (message_prefix(command)).
  run_output(const cancel_scope& parent, std::string prefix)
      : scope_(parent), prefix_(std::move(prefix)) {}
  run_output(const run_output&) = delete;
  run_output& operator=(const run_output&) = delete;

  // The scope to run the attempts under: cancelled with its parent, and (with SIGTERM, the signal
  // the attempts' groups get) when the output is closed.
  const cancel_scope& scope() const noexcept { return scope_; }
  // Whether a write found its reader gone (EPIPE) during the run.
  bool closed() const noexcept { return closed_.load(); }

  // The prefix, `text` and a newline to stderr, in one write().
  void line(std::string_view text);
  // The spool's whole content to `fd` (stdout or stderr), under a lock, so that the outputs of
  // parallel items do not interleave. False when the reader has gone (the run is then stopped);
  // std::system_error for another write error.
  bool pass_on(const spool& held, int fd);

 private:
  void close_run() noexcept;

  cancel_scope scope_;
  const std::string prefix_;
  std::atomic<bool> closed_{false};
  std::mutex line_mutex_;
  std::mutex output_mutex_;
};

}  // namespace backoff::tool
