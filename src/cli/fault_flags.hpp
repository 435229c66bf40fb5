// SPDX-License-Identifier: Apache-2.0
// The fault flags that `backoff serve` and `backoff proxy` share (docs/NETWORK.md, "Faults on
// demand"), declared once so that the two programs take the same faults the same way:
//
//   fault_flag_values faults;
//   add_fault_flags(sub, faults);                       // at setup
//   auto plan = build_fault_plan(faults, "serve");      // at run: nullopt after one error line
//   if (!plan) return exit_usage;
//
// --errors 5%:503, --latency 100ms | exponential(mean=50ms), --partial-outage 'header=x-shard,
// value=3', --outage 10s+5s[:503|reset|hang|pause], --slow-body 16KiB@4KiB/s, --fault SPEC (any
// kind), each repeatable; --faults FILE (a TOML schedule); --envoy-fault-headers; --fault-seed N.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faults/faults.hpp"

namespace backoff::cli {

struct fault_flag_values {
  std::vector<std::string> errors;
  std::vector<std::string> latency;
  std::vector<std::string> partial;
  std::vector<std::string> outage;
  std::vector<std::string> slow_body;
  std::vector<std::string> fault;
  std::optional<std::string> schedule;
  bool envoy_headers = false;
  std::uint64_t seed = 1;
};

void add_fault_flags(CLI::App* sub, fault_flag_values& values);

// The plan the flags ask for (schedule entries first, then the flags in the order above); one
// line on stderr naming the flag and nullopt when one is wrong.
std::optional<faults::fault_plan> build_fault_plan(const fault_flag_values& values,
                                                   std::string_view command);

// The same, for a system's service (serve --service-time ...), which also takes the faults that
// take its capacity away or slow its start (faults::network_refusal is not asked).
std::optional<faults::fault_plan> read_fault_flags(const fault_flag_values& values,
                                                   std::string_view command);

// The start-up lines of a program with faults: "backoff serve: fault errors(...) from 0s".
void print_fault_plan(const faults::fault_plan& plan, std::string_view command);

}  // namespace backoff::cli
