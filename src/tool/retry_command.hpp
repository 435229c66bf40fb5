// SPDX-License-Identifier: Apache-2.0
// `backoff try`, `forany` and `forall` without the command line: run a command (once per item, for
// the fan-out forms) under the retry loop, with the tool's I/O modes, logging and report.
//
//   command_options options;                     // --times, --for, --timeout, --until, ...
//   cancel_scope run;                            // cancelled by the signal watcher on Ctrl-C
//   run_summary s = run_try(options, {"curl", "-fsS", url}, run, rng);
//   return s.status;                             // 0, the last status, 124, 126, 127, 128+n,
//                                                // 141 when our output was closed under us
//
// forany fails over first, as ftsh's forany inside a `try`: a round is one attempt of each item in
// turn (from a random start with `shuffle`), the first success ends the run, and the options'
// attempts, waits and deadline apply to rounds (the wait comes between rounds). forall runs the
// items in parallel, at most `jobs` at once, and on the first failure cancels the others (TERM,
// grace, KILL) and starts no more. In the command, `{}` stands for the item; the child also finds
// it in BACKOFF_ITEM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attempt_loop.hpp"
#include "backoff/random.hpp"
#include "cancel_scope.hpp"
#include "spool.hpp"
#include "status_list.hpp"

namespace backoff::tool {

// --replay-stdin's bound on what it spools when --replay-stdin-limit is not given: stdin that
// never ends (`yes | backoff try --replay-stdin ...`) must not fill the disk.
inline constexpr std::uint64_t default_stdin_replay_limit = std::uint64_t{1} << 30;  // 1 GiB

struct command_options {
  // What each line the run writes to stderr starts with: message_prefix("try"), "backoff try: "
  // (message_prefix.hpp). A forany or forall item's lines go on with "[ITEM] ".
  std::string message_prefix;
  loop_options loop;                // policy (with --times and --for), --every, inherited deadline
  std::optional<duration> timeout;  // per attempt
  duration grace = std::chrono::seconds(5);
  std::optional<status_list> until;
  std::optional<status_list> while_;
  // --replay-stdin: stdin, spooled once before the first attempt (spool::fill_from), given from
  // its start to every attempt. Null: attempts inherit stdin.
  std::shared_ptr<const spool> stdin_replay;
  std::uint64_t stdin_replay_limit = default_stdin_replay_limit;  // what it may spool (0: no bound)
  bool stdout_on_success = false;  // an attempt's stdout to stdout if it succeeded, else stderr
  // Where the commands' stdout goes: the tool's stdout, or its stderr when stdout carries the
  // JSON report (--report -), so that the report is never mixed with the commands' output.
  int command_stdout_fd = 1;
  bool own_group = true;  // false: --foreground
  // On stderr: by default (retries) a line per failed attempt that is retried (its status, the
  // next delay) and why the tool gave up, as Debian's retry does; -q only what must be said
  // (a command that cannot run, no attempt made); -v also the successful attempt and the waits.
  enum class log_level { quiet, retries, verbose };
  log_level log = log_level::retries;
  bool verbose = false;  // log == verbose
};

struct item_summary {
  std::optional<std::string> item;  // none for `try`
  bool started = false;             // forall: false when a failure elsewhere came first
  loop_result result;
  std::vector<attempt_record> attempts;
  // forany: it failed, and another item succeeded before a round it could still have had.
  bool another_succeeded = false;
};

struct run_summary {
  std::string mode;  // "try", "forany", "forall"
  std::vector<std::string> command;
  std::vector<item_summary> items;
  std::optional<std::size_t> decisive;  // forany: the winner; forall: the first failure
  std::uint32_t rounds = 0;             // forany: the rounds begun (one attempt of each item)
  outcome why = outcome::succeeded;
  int status = 0;       // the tool's exit status
  int interrupted = 0;  // the signal that stopped the run, if one did
  // A write to the tool's stderr or stdout found its reader gone (EPIPE): the run was stopped
  // and its status is 141 (run_output.hpp).
  bool output_closed = false;
};

// Throws std::system_error when the tool itself
// cannot work (no temporary file for the spools); a command that cannot start is a result.
run_summary run_try(const command_options& options, const std::vector<std::string>& command,
                    const cancel_scope& scope, random_ref rng);
run_summary run_forany(const command_options& options, const std::vector<std::string>& items,
                       const std::vector<std::string>& command, bool shuffle,
                       const cancel_scope& scope, random_ref rng);
run_summary run_forall(const command_options& options, const std::vector<std::string>& items,
                       const std::vector<std::string>& command, std::size_t jobs,
                       const cancel_scope& scope, random_ref rng);

// The `--report` document: every attempt (start, duration, status, how it ended, the delay after
// it) per item, the outcome and the exit status.
nlohmann::json to_json(const run_summary& summary);

// `command` with every "{}" inside its words replaced by `item`.
std::vector<std::string> substitute_item(const std::vector<std::string>& command,
                                         const std::string& item);

}  // namespace backoff::tool
