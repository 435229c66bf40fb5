// SPDX-License-Identifier: Apache-2.0
#include "outage_experiment.hpp"

#include <chrono>
#include <stop_token>
#include <thread>

#include "backoff/retry.hpp"
#include "backoff/spec.hpp"

namespace backoff::net {

report::scenario_result run_outage_experiment(
    const outage_experiment& e, const std::function<void(const std::string&)>& progress,
    const std::function<bool()>& stop) {
  report::scenario_result result;
  result.scenario = "outage-experiment";
  result.model = "network";
  result.seed = e.load.seed;
  result.outage = true;
  const auto wall_start = std::chrono::steady_clock::now();
  for (const auto& [name, spec] : e.strategies) {
    if (stop && stop()) break;
    server_options so = e.server;
    so.host = "127.0.0.1";
    so.port = 0;
    so.log_every_second = false;
    server s(so);
    s.start();

    load_options lo = e.load;
    lo.target.host = "127.0.0.1";
    lo.target.port = s.port();
    lo.target.path = "/api";
    lo.name = name;
    lo.strategy.policy = parse_policy(spec);
    report::outage_window window;
    window.start = e.pause_after.count();
    window.end = (e.pause_after + e.pause_for).count();
    lo.outage = window;
    lo.phase_goodput = true;
    lo.server_concurrency = [&s] { return s.metrics().concurrency.load(); };

    // The pause, on its own thread: the load's thread must not block. A jthread, so that a run
    // ended early (Ctrl-C) does not wait for it.
    std::jthread pauser([&s, &e](std::stop_token token) {
      if (detail::interruptible_sleep(e.pause_after, token)) s.pause(e.pause_for);
    });
    const load_run run = run_load(
        lo,
        [&](const interval_report& r) {
          if (!progress) return;
          progress(name + ": " + format_report(r));
          progress(name + ": " + format_operations_report(r));
        },
        stop);
    pauser.request_stop();
    pauser.join();
    s.stop();
    s.wait();
    result.strategies.push_back(run.summary);
    result.policies.emplace_back(name, lo.strategy.policy);
    result.events += run.requests;
  }
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace backoff::net
