// The subcommands of the `backoff` executable. Each lives in its own file with an options
// struct, a setup function that declares its flags on a CLI11 app, and a run function that does
// the work and returns the exit status; main.cpp only wires them together.
#pragma once

#include <CLI/CLI.hpp>

namespace backoff::cli {

// Exit statuses shared by the subcommands (docs/EXIT_CODES.md).
inline constexpr int exit_ok = 0;
inline constexpr int exit_usage = 2;  // bad flags, bad policy spec, bad duration

// Each setup_* adds its subcommand to `app` and arranges for `status` to receive its result.
void setup_delays(CLI::App& app, int& status);
void setup_presets(CLI::App& app, int& status);

}  // namespace backoff::cli
