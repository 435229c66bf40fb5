// SPDX-License-Identifier: Apache-2.0
// `backoff forany [--shuffle] [OPTIONS] ITEM... -- COMMAND ... {} ...`: the Fault Tolerant Shell's
// forany inside a `try`, as a command. A round tries each item once, in turn, and the first that
// succeeds ends the run; --times counts rounds, the policy waits between rounds and --for bounds
// the whole. `{}` in the command and BACKOFF_ITEM carry the item.
#include <iostream>
#include <memory>

#include "retry_flags.hpp"
#include "tool/message_prefix.hpp"

namespace backoff::cli {

void setup_forany(CLI::App& app, int& status, const command_tail& tail) {
  auto flags = std::make_shared<retry_flags>();
  auto items = std::make_shared<std::vector<std::string>>();
  auto shuffle = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("forany",
                                     "Run a command for one item after another until one "
                                     "succeeds, in rounds (ITEM... -- COMMAND ... {} ...)");
  add_retry_flags(*sub, *flags);
  // The try options, with rounds for attempts: one round tries every item once.
  sub->get_option("--times")->description(
      "Rounds at most, each trying every item once (0: no limit). Default: 5, or no limit when "
      "--for is given");
  sub->get_option("--for")->description(
      "Deadline for the whole run (e.g. 10m), a hard cap: the running attempt is stopped at it "
      "(status 124), and no item or round starts with less than 100ms left");
  sub->get_option("--every")->description(
      "Start rounds this far apart (start to start, as ftsh's `every`) instead of backing off");
  sub->get_option("--policy")
      ->description(
          "Backoff policy spec or preset (see `backoff presets`) for the wait between rounds; the "
          "items of a round follow each other at once. Default: ftsh, 1 s doubling to 1 h, times "
          "U(1, 2)");
  sub->add_flag("--shuffle", *shuffle, "Start at a random item, then go round in order (ftsh)");
  sub->add_option("items", *items, "The alternatives, e.g. mirror host names")->required();
  sub->callback([sub, flags, items, shuffle, &status, &tail] {
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
    status = run_retry_command(
        *flags, options,
        [&](const tool::command_options& o, const tool::cancel_scope& scope, random_ref rng) {
          return tool::run_forany(o, *items, flags->command, *shuffle, scope, rng);
        });
  });
}

}  // namespace backoff::cli
