// SPDX-License-Identifier: Apache-2.0
// `backoff try [OPTIONS] -- COMMAND [ARGS...]`: runs COMMAND until it succeeds, with the library's
// backoff between attempts, a deadline that is kept (no attempt starts after it, no wait runs into
// it, the running attempt is stopped at it), per-attempt timeouts that stop the whole process
// group, and the child's status passed through (docs/RETRY_TOOL.md).
#include <iostream>
#include <memory>

#include "retry_flags.hpp"

namespace backoff::cli {

void setup_try(CLI::App& app, int& status, const command_tail& tail) {
  auto flags = std::make_shared<retry_flags>();
  CLI::App* sub = app.add_subcommand(
      "try", "Run a command until it succeeds, backing off between attempts (-- COMMAND ARGS...)");
  add_retry_flags(*sub, *flags);
  // main.cpp took the command off the command line (after "--", or from the first word that is
  // not an option), so CLI11 sees only our options and rejects unknown ones.
  sub->callback([sub, flags, &status, &tail] {
    flags->command = tail.words;
    tool::command_options options;
    if (!to_command_options(sub->get_name(), *flags, options)) {
      status = exit_tool_error;
      return;
    }
    status = run_retry_command(
        *flags, options,
        [&](const tool::command_options& o, const tool::cancel_scope& scope, random_ref rng) {
          return tool::run_try(o, flags->command, scope, rng);
        });
  });
}

}  // namespace backoff::cli
