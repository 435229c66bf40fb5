// SPDX-License-Identifier: Apache-2.0
// Runs a parsed Fault Tolerant Shell script (ast.hpp) with the retry tool's machinery: every
// command is an attempt in its own process group (process.hpp), every `try` is the tool's retry
// loop (attempt_loop.hpp) driven by the library's retry_controller, and deadlines nest (the
// tighter of an outer and an inner `try for` wins, and a command running at the deadline is
// stopped: TERM, grace, KILL).
//
//   script s = parse(text, "deploy.ftsh");
//   script_options options;                    // policy for every try (ftsh's), grace, logging
//   options.message_prefix = message_prefix("script");  // "backoff script: deploy.ftsh:4: ..."
//   cancel_scope run;
//   script_result r = run_script(s, options, run, rng);
//   return r.status;                           // 0, the failing command's status, 128+n
//
// Semantics kept from ftsh: a group fails at its first failing statement and runs nothing after
// it; `try` without limits makes one attempt; `catch` runs only when every attempt failed and its
// result is the try's; forany leaves its variable set to the item that succeeded; forall runs every
// item at once, in its own copy of the variables, and the first failure stops the others.
// Decided here where ftsh differs or is silent: forany goes in order (ftsh starts at a random item:
// `shuffle`), a variable that is not set fails its statement instead of expanding to nothing, and
// commands see the environment plus BACKOFF_ATTEMPT and BACKOFF_DEADLINE inside a `try`.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ast.hpp"
#include "backoff/policy.hpp"
#include "backoff/random.hpp"
#include "tool/cancel_scope.hpp"

namespace backoff::tool::script {

struct script_options {
  // What each line the run writes to stderr starts with (message_prefix("script"), then
  // "FILE:LINE: message").
  std::string message_prefix;
  backoff_policy policy;                     // the wait between attempts of every `try`
  duration grace = std::chrono::seconds(5);  // between TERM and KILL
  std::vector<std::string> environment;      // the commands' environment; variables fall back to it
  bool shuffle = false;                      // forany starts at a random item (ftsh)
  bool verbose = false;                      // log commands, their statuses and try decisions
  // Where commands' stdout goes unless they redirect it: the tool's stdout, or its stderr when
  // stdout carries the JSON report (--report -).
  int command_stdout_fd = 1;
};

// What a run did, for --report: a command that ran, or an attempt of a `try` that ended.
struct script_event {
  enum class kind { command, attempt };
  kind what = kind::command;
  int line = 0;
  std::vector<std::string> argv;  // command
  std::uint32_t attempt = 0;      // attempt: its number
  int status = 0;
  duration start{0};  // from the start of the script
  duration elapsed{0};
  std::optional<duration> delay;  // attempt: the wait before the next one, if any
};

struct script_result {
  bool ok = true;
  int status = 0;  // 0; the failing command's status (124 timed out, 128+n signal); 1 `failure`
  // The tool's stderr (its -v lines, a command that cannot run) or its stdout was closed by its
  // reader (EPIPE): everything running was stopped, and the status is 141 (run_output.hpp).
  bool output_closed = false;
};

// The tool's own failure while the script ran (no process or descriptor left to start a command
// while nothing else runs to free one, ...): what() is one line, "FILE:LINE: message", naming the
// statement (the caller puts the command's prefix before it). Whatever else was running has been
// stopped.
class script_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `events` (may be null) receives every command and attempt, in the order they ended. Throws
// script_error.
script_result run_script(const script& s, const script_options& options, const cancel_scope& scope,
                         random_ref rng, std::vector<script_event>* events = nullptr);

}  // namespace backoff::tool::script
