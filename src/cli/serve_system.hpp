// SPDX-License-Identifier: Apache-2.0
// `backoff serve` as one replica of a system's service (docs/NETWORK.md, "A service of a system
// file"): from a system file (--system FILE --service NAME [--replica I] [--set K=V]), or from
// flags (--workers, --queue, --discipline, --service-time, --admission, --accept-limit and the
// fault flags), which are written as a [service.serve] table and read by the reader of system
// files, so that flags and files cannot mean different things.
//
//   service_flags f;  add_service_flags(sub, f);          // at setup
//   if (wants_a_service(f, *sub)) return serve_a_service(f, faults, *sub, options, host);
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fault_flags.hpp"
#include "net/server/server.hpp"

namespace backoff::cli {

struct service_flags {
  std::optional<std::string> system;
  std::optional<std::string> service;
  std::uint32_t replica = 0;
  std::vector<std::string> sets;
  std::vector<std::string> upstreams;  // NAME=HOST:PORT[,...]: where a called service listens
  std::optional<std::string> strategy;
  // The keys of [service.NAME] as flags (no --system).
  std::optional<std::uint32_t> workers, queue, accept_limit;
  std::optional<std::string> discipline, service_time, admission;
};

void add_service_flags(CLI::App* sub, service_flags& flags);

// True when any of these flags was given.
bool wants_a_service(const service_flags& flags, const CLI::App& serve);

// Reads the service (one line on stderr and exit_usage when something is wrong: a flag of plain
// serve that does not apply, an unknown service), then serves it until SIGINT or SIGTERM.
int serve_a_service(const service_flags& flags, const fault_flag_values& faults,
                    const CLI::App& serve, net::server_options options, const std::string& host);

}  // namespace backoff::cli
