// SPDX-License-Identifier: Apache-2.0
// A system file run for real (`backoff load --system SCENARIO`; docs/NETWORK.md, "A system for
// real"): every replica of every service a real server on a free loopback port in this process
// (serve --system's tier, with its calls downstream), every client group driven by the
// library's callers (net/client/system_clients.hpp), each compared strategy against fresh
// servers. The result has the simulator's shape, from real figures: the summary and time series
// from the clients, `services` and services.csv from what each replica counted
// (net/server/tier.hpp, tier_figures). It lives above both drivers (SPEC 7.1): the simulator's
// scenario reader and model check the file, and run it beside (--compare).
//
//   system_load_options o{.progress = print_line, .stop = [] { return interrupted.load(); }};
//   system_load_result r = run_system_load(source, sets, std::nullopt, o);
//   report::write_run_files(r.real, folder);   // r.real.stopped set when a stop cut it short
//
// Resources are checked before anything starts (check_system_resources): a system whose
// replicas, connections or threads would not fit this machine's limits is refused with what
// would. One clock: the servers and the clients share the run's origin, so the fault schedules
// hold as the file says.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "systems/system_spec.hpp"

namespace backoff::net {

struct system_load_options {
  std::function<void(const std::string&)> progress;  // one line per second of each run
  std::function<bool()> stop;  // polled every 10 ms; true ends the run (partial outputs)
  int stop_signal = 0;         // what `stop` stands for (SIGINT, SIGTERM), for run_stop
  // Also simulate the same scenario and seed (--compare): system_load_result::simulated.
  bool compare = false;
};

struct system_load_result {
  report::scenario_result real;
  std::optional<report::scenario_result> simulated;  // with compare, unless the real run stopped
};

// What the real run would hold at its peak, and this machine's limits.
struct system_resources {
  std::uint64_t servers = 0;      // replicas: a thread and a listening socket each
  std::uint64_t descriptors = 0;  // at most, both ends of every loopback connection counted
  std::uint64_t descriptor_limit = 0;
  std::uint64_t threads = 0;
  std::uint64_t thread_limit = 0;
  std::uint64_t memory = 0;            // bytes, estimated
  std::uint64_t memory_available = 0;  // MemAvailable (0: unknown, not checked)
};

// The peak the system can reach (its closed users and the open groups' rate over the longest
// attempt, every caller's workers on its calls) against RLIMIT_NOFILE (raised to its hard limit
// first), the threads this process may start, and the memory available (MemAvailable). Throws
// config_error naming what does not fit, and how much would.
system_resources check_system_resources(const systems::system_spec& spec);

// Loads `source` with `sets` (a system scenario, not a sweep nor a map: config_error in one line
// otherwise), checks it as `backoff sim` does, then runs each strategy for real, and with
// options.compare simulates it. `seed` replaces the scenario's. A replica that cannot bind, or
// whose loop dies, ends the run with std::runtime_error naming its service and replica.
system_load_result run_system_load(const sim::scenario_source& source,
                                   const std::vector<std::string>& sets,
                                   std::optional<std::uint64_t> seed,
                                   const system_load_options& options);

}  // namespace backoff::net
