// SPDX-License-Identifier: Apache-2.0
// From argv to a subcommand's status, for both executables: `backoff` (every subcommand) and
// `backoff-try` (the retry tool alone, without the simulator, for start-up time: docs/
// PERFORMANCE.md, "Start-up"). Only the subcommand named on the command line has its options
// built; `backoff --help`, an unknown command or a bare option builds them all, to list them.
// Command-line mistakes are one line on stderr and exit status 2 (125 for the retry commands,
// docs/EXIT_CODES.md).
#pragma once

#include <CLI/CLI.hpp>
#include <span>
#include <string_view>

#include "retry_flags.hpp"

namespace backoff::cli {

struct subcommand {
  std::string_view name;
  void (*setup)(CLI::App& app, int& status, const command_tail& tail);
};

// Prints what `backoff --man` or `backoff --completion SHELL` asks for, from the app with every
// subcommand set up; returns the exit status.
using reference_printer = int (*)(const CLI::App& app, int argc, char** argv);

// `argv[1]` names the subcommand. `reference` (may be null) answers --man and --completion.
int run_subcommands(int argc, char** argv, std::span<const subcommand> all,
                    reference_printer reference = nullptr);

}  // namespace backoff::cli
