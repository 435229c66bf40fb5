// SPDX-License-Identifier: Apache-2.0
// The options `backoff try`, `forany` and `forall` share (the try options, applied per item for
// the fan-out forms), declared once on each subcommand and turned into tool::command_options, and
// the run that the three subcommands have in common: watch signals, run, report, exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backoff/duration.hpp"
#include "config/exit_status.hpp"
#include "tool/retry_command.hpp"

namespace backoff::cli {

// The retry tool's own errors (bad flags, bad spec) exit 125, as GNU timeout's do, so that they
// cannot be mistaken for the command's statuses.
inline constexpr int exit_tool_error = config::exit_tool_error;

// Typed as CLI11 parses them (typed_options.hpp): a bad value is refused there, in one line
// naming the flag. std::optional for the flags whose absence means a default, so that an empty
// value (--timeout '') is a mistake to report, not the flag left out.
struct retry_flags {
  std::optional<std::uint32_t> times;
  std::optional<duration> within;  // --for
  std::optional<duration> every;
  std::optional<duration> timeout;
  std::optional<std::string> policy;
  std::optional<duration> grace;
  std::optional<std::string> until;
  std::optional<std::string> while_;
  std::optional<std::string> report;
  std::optional<std::uint64_t> seed;  // nullopt: a fresh one
  bool replay_stdin = false;
  std::optional<std::uint64_t> replay_stdin_limit;
  std::string replay_stdin_limit_text;  // as given, for the message when stdin is larger
  bool stdout_on_success = false;
  bool foreground = false;
  bool verbose = false;
  bool quiet = false;
  std::vector<std::string> command;  // after "--"
};

void add_retry_flags(CLI::App& sub, retry_flags& flags);

// Validates the flags into options, or prints one line "backoff NAME: ..." and returns false.
// NAME is the subcommand ("try", "forany", "forall"): options.message_prefix, "backoff NAME: ",
// starts every line the command writes to stderr from here on.
bool to_command_options(const std::string& name, const retry_flags& flags,
                        tool::command_options& options);

// Spools stdin when asked, watches signals, calls `run`, writes the report; returns the exit
// status. `options` as to_command_options made them (its lines start with their prefix).
int run_retry_command(
    const retry_flags& flags, tool::command_options options,
    const std::function<tool::run_summary(const tool::command_options&, const tool::cancel_scope&,
                                          random_ref)>& run);

// The command of a retry subcommand (argv[1] try, forany or forall): the words after a "--" that
// stands where an option or item could, or for try without "--", from the first word that is
// neither an option nor an option's value. main.cpp removes them before CLI11 parses the rest, so
// that no word of the command is taken for an option.
struct command_tail {
  bool present = false;
  std::vector<std::string> words;
};
command_tail split_command_tail(int& argc, char** argv);

void setup_try(CLI::App& app, int& status, const command_tail& tail);
void setup_forany(CLI::App& app, int& status, const command_tail& tail);
void setup_forall(CLI::App& app, int& status, const command_tail& tail);
void setup_script(CLI::App& app, int& status);

}  // namespace backoff::cli
