// `backoff try [OPTIONS] -- COMMAND [ARGS...]`: runs COMMAND until it succeeds, with the library's
// backoff between attempts, a deadline that is kept (no attempt starts after it, no wait runs into
// it, the running attempt is stopped at it), per-attempt timeouts that stop the whole process
// group, and the child's status passed through (docs/TRY.md).
#include <iostream>
#include <memory>

#include "retry_flags.hpp"

namespace backoff::cli {

void setup_try(CLI::App& app, int& status, const command_tail& tail) {
  auto flags = std::make_shared<retry_flags>();
  CLI::App* sub = app.add_subcommand(
      "try", "Run a command until it succeeds, backing off between attempts (-- COMMAND ARGS...)");
  add_retry_flags(*sub, *flags);
  // Without "--", the command starts at the first word that is not an option of ours.
  sub->prefix_command();
  sub->callback([sub, flags, &status, &tail] {
    const std::vector<std::string> rest = sub->remaining();
    if (tail.present && !rest.empty()) {
      std::cerr << "backoff try: unexpected '" << rest.front()
                << "' before '--' (options go before it, the command after it)\n";
      status = exit_tool_error;
      return;
    }
    flags->command = tail.present ? tail.words : rest;
    tool::command_options options;
    if (!to_command_options("try", *flags, options)) {
      status = exit_tool_error;
      return;
    }
    status = run_retry_command(
        "try", *flags, options,
        [&](const tool::command_options& o, const tool::cancel_scope& scope, random_ref rng) {
          return tool::run_try(o, flags->command, scope, rng);
        });
  });
}

}  // namespace backoff::cli
