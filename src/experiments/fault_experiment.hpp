// SPDX-License-Identifier: Apache-2.0
// `backoff load --experiment FILE`: a server in this process that follows a fault schedule (the
// file `serve --faults` reads), with the seed's service, and the load's strategy run against it.
// The run's time 0 is the schedule's, so the report's outage is the schedule's first window that
// ends: recovery_s and the goodput before, during and after it come out as for the simulator.
//
//   net::fault_experiment e;
//   e.faults = faults::read_fault_schedule("outage.toml");  // throws fault_schedule_error
//   e.load = options;                                     // the strategy, clients, ...
//   net::load_run run = net::run_fault_experiment(e, on_started, print_report, stop);
#pragma once

#include <cstdint>
#include <functional>

#include "faults/faults.hpp"
#include "net/client/load.hpp"

namespace backoff::net {

struct fault_experiment {
  faults::fault_plan faults;
  load_options load;  // its target is replaced by the local server
  // Without it, the run lasts until 30 s after the last window ends (60 s when none ends).
  bool duration_given = false;
};

// The load's options as the experiment runs them: the outage (the first window to end), goodput
// per phase, and the duration when it was not given. Pure: the CLI reports them before starting.
load_options fault_experiment_load(const fault_experiment& e);

// Starts the server on a free loopback port, calls `started(port)`, runs the load
// (fault_experiment_load) against it, stops the server. Throws what the server's start throws
// (a port, a thread) and what run_load throws.
load_run run_fault_experiment(const fault_experiment& e,
                              const std::function<void(std::uint16_t port)>& started,
                              const std::function<void(const interval_report&)>& report,
                              const std::function<bool()>& stop = {});

}  // namespace backoff::net
