// SPDX-License-Identifier: Apache-2.0
// One attempt of a command: run it in its own process group, wait for it, and stop it when its
// time is up or its scope is cancelled (TERM to the whole group, a grace period, then KILL, until
// no process of the group is left). This is where `backoff try` keeps its promise that no
// grandchild survives a timed-out or failed attempt.
//
//   launch_spec spec;
//   spec.argv = {"sh", "-c", "make test"};
//   spec.environment = current_environment();
//   attempt_limits limits;
//   limits.kill_at = steady_now() + 30s;            // per-attempt timeout or the overall deadline
//   attempt_result r = run_attempt(spec, limits, scope);
//   if (r.ended == attempt_end::timed_out) ...      // r.status() == 124
//
// Linux only: pidfd_open and /proc. A failure to start (no such program, not executable) is a
// result, not an exception, since the tool reports it as 127 or 126; a shortage of descriptors or
// processes is neither (run_attempt).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/duration.hpp"
#include "cancel_scope.hpp"
#include "config/exit_status.hpp"

namespace backoff::tool {

// Exit statuses the tool gives for what happened to an attempt (GNU timeout's conventions),
// defined with the CLI's in config/exit_status.hpp.
inline constexpr int status_timed_out = config::exit_timed_out;
inline constexpr int status_tool_error = config::exit_tool_error;
inline constexpr int status_not_executable = config::exit_not_executable;
inline constexpr int status_not_found = config::exit_not_found;
inline constexpr int status_signal_base = config::exit_signal_base;  // 128 + n: signal n
using config::status_of_signal;

struct launch_spec {
  std::vector<std::string> argv;         // argv[0] is looked up in PATH unless it has a '/'
  std::vector<std::string> environment;  // "NAME=value" entries: the child's whole environment
  // Descriptors set up in the child before it starts, in order: {child_fd, source_fd}. The source
  // is a descriptor of this process, or a child_fd set up by an earlier entry ({2, 1} is 2>&1).
  std::vector<std::pair<int, int>> descriptors;
  // Run in a new process group (the default). Off: the child stays in ours and only it is
  // signalled.
  bool own_group = true;
};

struct attempt_limits {
  std::optional<duration> kill_at;  // steady time (steady_now()) at which the attempt is stopped
  duration grace = std::chrono::seconds(5);  // between TERM and KILL
};

enum class attempt_end : std::uint8_t {
  exited,          // exited by itself; status = its exit code
  signaled,        // died of a signal it was not sent by us; status = 128 + n
  timed_out,       // stopped at kill_at; status = 124
  cancelled,       // stopped because its scope was cancelled; status = 128 + the scope's signal
  not_found,       // could not be started: no such program; status = 127
  not_executable,  // could not be started: permission, not a program; status = 126
};

std::string_view to_string(attempt_end e) noexcept;

struct attempt_result {
  attempt_end ended = attempt_end::exited;
  int exit_code = -1;     // when it exited (also when it exited after our TERM)
  int signal = 0;         // when it died of a signal
  int cancel_signal = 0;  // when cancelled: the signal its scope was cancelled with
  duration elapsed{0};    // from start to the end of its group's cleanup
  std::string error;      // when it could not be started: why, one line

  // The status the tool reports for it, from how it ended (see attempt_end). A result with no
  // attempt behind it (a loop that started none) reads as exited with status 0.
  int status() const noexcept {
    switch (ended) {
      case attempt_end::exited:
        return exit_code >= 0 ? exit_code : 0;
      case attempt_end::signaled:
        return status_of_signal(signal);
      case attempt_end::timed_out:
        return status_timed_out;
      case attempt_end::cancelled:
        return status_of_signal(cancel_signal);
      case attempt_end::not_found:
        return status_not_found;
      case attempt_end::not_executable:
        return status_not_executable;
    }
    return status_tool_error;
  }
};

// SIGPIPE and SIGXFSZ made harmless to the tool: a write to a reader that has gone away then
// fails with EPIPE, and one past the file-size limit (`ulimit -f`) with EFBIG, which the tool
// handles (own_output.hpp, spool.hpp), instead of killing it while its attempts run on with PPID 1.
// Every command it starts gets back the disposition the tool found (the default, as a rule), so
// that `cmd | head -1` inside an attempt still ends `cmd`. Call once, before the first thread.
void ignore_write_signals();

// The steady clock as the tool reads it (the same as backoff's retry loops).
duration steady_now();

// The wall clock, in seconds since the epoch: the start times in reports.
double unix_now_s();

// This process's environment, as launch_spec wants it.
std::vector<std::string> current_environment();

// Sets NAME=value in `environment`, replacing an earlier NAME.
void set_variable(std::vector<std::string>& environment, std::string_view name,
                  std::string_view value);
// Removes NAME from `environment` (an outer run's value must not reach an inner one).
void unset_variable(std::vector<std::string>& environment, std::string_view name);

// Whether an attempt that ended by itself succeeded (the caller's --until/--while rule).
using success_test = std::function<bool(const attempt_result&)>;
inline bool exited_zero(const attempt_result& r) {
  return r.status() == 0;
}

// Runs one attempt to the end (see the header comment). When it cannot start for want of a
// descriptor or a process (EMFILE, ENFILE, EAGAIN, ENOMEM; descriptors.hpp), it waits until
// another attempt of this process ends and tries again; when none is running, it throws
// start_shortage with a message that says so. The wait ends at limits.kill_at (status 124, nothing
// run) or when the scope is cancelled. A child that started but got no pidfd is watched by polling
// rather than killed. After an attempt that ended by itself and
// that `succeeded` judges a failure, the rest of its group is stopped too (TERM, grace, KILL), so
// that a failed attempt's leftovers never overlap the next attempt; after a success the group is
// left alone (a command may start a daemon on purpose).
attempt_result run_attempt(const launch_spec& spec, const attempt_limits& limits,
                           const cancel_scope& scope, const success_test& succeeded = exited_zero);

// Whether a process of group `pgid` other than a zombie is alive. `unknown` when that could not be
// found out (no descriptor left to read /proc, /proc not mounted): an error is not a fact, and the
// caller decides what is safe for both answers.
enum class group_state : std::uint8_t { gone, alive, unknown };
group_state inspect_group(pid_t pgid);

}  // namespace backoff::tool
