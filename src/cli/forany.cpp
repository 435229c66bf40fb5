// SPDX-License-Identifier: Apache-2.0
// `backoff forany [--shuffle] [OPTIONS] ITEM... -- COMMAND ... {} ...`: the Fault Tolerant Shell's
// forany as a command. Tries the items one after another (each under the try options) and stops at
// the first that succeeds; `{}` in the command and BACKOFF_ITEM carry the item.
#include <iostream>
#include <memory>

#include "retry_flags.hpp"

namespace backoff::cli {

void setup_forany(CLI::App& app, int& status, const command_tail& tail) {
  auto flags = std::make_shared<retry_flags>();
  auto items = std::make_shared<std::vector<std::string>>();
  auto shuffle = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("forany",
                                     "Run a command for one item after another until one succeeds "
                                     "(ITEM... -- COMMAND ... {} ...)");
  add_retry_flags(*sub, *flags);
  sub->add_flag("--shuffle", *shuffle, "Start at a random item, then go round in order (ftsh)");
  sub->add_option("items", *items, "The alternatives, e.g. mirror host names")->required();
  sub->callback([flags, items, shuffle, &status, &tail] {
    if (!tail.present) {
      std::cerr << "backoff forany: put '--' between the items and the command\n";
      status = exit_tool_error;
      return;
    }
    flags->command = tail.words;
    tool::command_options options;
    if (!to_command_options("forany", *flags, options)) {
      status = exit_tool_error;
      return;
    }
    status = run_retry_command(
        "forany", *flags, options,
        [&](const tool::command_options& o, const tool::cancel_scope& scope, random_ref rng) {
          return tool::run_forany(o, *items, flags->command, *shuffle, scope, rng);
        });
  });
}

}  // namespace backoff::cli
