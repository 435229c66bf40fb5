// SPDX-License-Identifier: Apache-2.0
// `backoff forall [-j N] [OPTIONS] ITEM... -- COMMAND ... {} ...`: the Fault Tolerant Shell's
// forall as a command. Runs the command for every item in parallel (at most N at once, each under
// the try options; never more than the descriptor limit, `ulimit -n`, allows: the rest wait their
// turn); the first item that fails for good stops the others (TERM, grace, KILL to their process
// groups) and its status is the exit status.
#include <iostream>
#include <limits>
#include <memory>

#include "commands.hpp"
#include "retry_flags.hpp"
#include "tool/message_prefix.hpp"
#include "typed_options.hpp"

namespace backoff::cli {

void setup_forall(CLI::App& app, int& status, const command_tail& tail) {
  auto flags = std::make_shared<retry_flags>();
  auto items = std::make_shared<std::vector<std::string>>();
  auto jobs = std::make_shared<std::size_t>(0);
  CLI::App* sub = app.add_subcommand(
      "forall",
      "Run a command for every item in parallel; the first failure stops the rest "
      "(ITEM... -- COMMAND ... {} ...)");
  add_retry_flags(*sub, *flags);
  add_count_option<std::size_t>(
      *sub, "-j,--jobs", *jobs,
      "Jobs: items running at once, as make -j and xargs -P (0: all); never more than the "
      "descriptor limit allows. (For sim and sweep, -j is worker threads)",
      0, std::numeric_limits<std::size_t>::max())
      ->capture_default_str();
  sub->add_option("items", *items, "The items, e.g. host names")->required();
  sub->callback([sub, flags, items, jobs, &status, &tail] {
    if (!tail.present) {
      std::cerr << tool::message_prefix(sub->get_name())
                << "put '--' between the items and the command\n";
      status = exit_tool_error;
      return;
    }
    flags->command = tail.words;
    tool::command_options options;
    if (!to_command_options(sub->get_name(), *flags, options)) {
      status = exit_tool_error;
      return;
    }
    const std::size_t parallel = *jobs;
    status = run_retry_command(
        *flags, options,
        [&](const tool::command_options& o, const tool::cancel_scope& scope, random_ref rng) {
          return tool::run_forall(o, *items, flags->command, parallel, scope, rng);
        });
  });
}

}  // namespace backoff::cli
