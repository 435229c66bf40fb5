// SPDX-License-Identifier: Apache-2.0
// Seed 004's experiment for real, end to end (`backoff load --experiment outage`): a server on a
// free loopback port in this process, the clients run once with fixed retries and once with
// exponential backoff, the server paused for a while in each run and then resumed. The result has
// the simulator's shape (one strategy per run, recovery_s, the time series with the server's
// concurrency), so it plots beside `backoff sim outage-recovery`. It sits above both drivers
// (src/experiments): the network harness runs it, the report layer writes it, and the simulator
// stays out of the network harness.
//
//   outage_experiment e;                        // the seed's defaults
//   e.load.clients = 1000;  e.pause_after = 10s;  e.pause_for = 10s;
//   report::scenario_result r = run_outage_experiment(e, print_line);
//   report::write_run_files(r, folder);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "net/client/load.hpp"
#include "net/server/server.hpp"
#include "report/result.hpp"

namespace backoff::net {

struct outage_experiment {
  server_options server;  // host and port are ignored: 127.0.0.1, a free port
  load_options load;      // target, policy and strategy are set per run
  duration pause_after = std::chrono::seconds(10);
  duration pause_for = std::chrono::seconds(10);
  // The strategies, in order: name and policy spec.
  std::vector<std::pair<std::string, std::string>> strategies = {
      {"fixed", "constant(initial=100ms)"}, {"exponential", "smira-go"}};
};

// `progress` receives one line per report interval, prefixed with the strategy's name.
report::scenario_result run_outage_experiment(
    const outage_experiment& e, const std::function<void(const std::string&)>& progress,
    const std::function<bool()>& stop = {});

}  // namespace backoff::net
