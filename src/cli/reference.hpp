// SPDX-License-Identifier: Apache-2.0
// The man page backoff(1) and the bash and zsh completions, generated from the very CLI11 app
// that parses the command line and prints --help, so that none of them can disagree with it:
// `backoff --man` and `backoff --completion bash|zsh` print them, and the build writes them for
// `cmake --install` (share/man/man1/backoff.1, share/bash-completion/completions/backoff,
// share/zsh/site-functions/_backoff).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace backoff::cli {

// `app` with every subcommand set up; `scenarios`: the built-in scenario names (sim, sweep).
std::string man_page(const CLI::App& app, const std::string& version);
std::string bash_completion(const CLI::App& app, const std::vector<std::string>& scenarios);
std::string zsh_completion(const CLI::App& app, const std::vector<std::string>& scenarios);

}  // namespace backoff::cli
