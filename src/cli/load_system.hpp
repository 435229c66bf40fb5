// SPDX-License-Identifier: Apache-2.0
// `backoff load --system SCENARIO [--set K=V] [--seed N] [--compare] [--out DIR] [--plot]`
// (docs/NETWORK.md,
// "A system for real"): a system file's services as real servers on loopback and its client
// groups as real callers, each strategy against fresh servers; the simulator's outputs with real
// figures (experiments/system_load.hpp). The file says everything: load's own flags of clients,
// rates and strategies are refused beside it, in one line.
//
//   system_flags f;  add_system_flags(sub, f);          // at setup
//   if (f.system) return load_a_system(f, *sub, seed, out);
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace backoff::cli {

struct system_flags {
  std::optional<std::string> system;
  std::vector<std::string> sets;
  bool plot = false;
  bool compare = false;
};

void add_system_flags(CLI::App* sub, system_flags& flags);

// Runs the system (one line on stderr and exit_usage when the file or a flag is wrong); SIGINT
// and SIGTERM stop it, its outputs written and marked partial.
int load_a_system(const system_flags& flags, const CLI::App& load,
                  std::optional<std::uint64_t> seed, const std::optional<std::string>& out);

}  // namespace backoff::cli
