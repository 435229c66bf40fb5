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

#include "tool/retry_command.hpp"

namespace backoff::cli {

// The retry tool's own errors (bad flags, bad spec) exit 125, as GNU timeout's do, so that they
// cannot be mistaken for the command's statuses.
inline constexpr int exit_tool_error = tool::status_tool_error;

// A flag given with an empty value (--timeout '') is a mistake to report, not the flag left out:
// hence std::optional for the flags whose absence means a default.
struct retry_flags {
  std::string times;
  std::optional<std::string> within;  // --for
  std::optional<std::string> every;
  std::optional<std::string> timeout;
  std::optional<std::string> policy;
  std::optional<std::string> grace;
  std::optional<std::string> until;
  std::optional<std::string> while_;
  std::optional<std::string> report;
  std::string seed;
  bool replay_stdin = false;
  std::optional<std::string> replay_stdin_limit;
  bool stdout_on_success = false;
  bool foreground = false;
  bool verbose = false;
  bool quiet = false;
  std::vector<std::string> command;  // after "--"
};

void add_retry_flags(CLI::App& sub, retry_flags& flags);

// Validates the flags into options, or prints one line "backoff NAME: ..." and returns false.
bool to_command_options(const std::string& name, const retry_flags& flags,
                        tool::command_options& options);

// Spools stdin when asked, watches signals, calls `run`, writes the report; returns the exit
// status.
int run_retry_command(
    const std::string& name, const retry_flags& flags, tool::command_options options,
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
