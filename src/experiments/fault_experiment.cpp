// SPDX-License-Identifier: Apache-2.0
#include "experiments/fault_experiment.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "net/server/server.hpp"

namespace backoff::net {

load_options fault_experiment_load(const fault_experiment& e) {
  load_options o = e.load;
  duration last_end{0};
  for (const auto& f : e.faults.faults) {
    if (f.when.end == duration::max()) continue;  // never ends: no recovery to measure
    last_end = std::max(last_end, f.when.end);
    if (!o.outage || f.when.end.count() < o.outage->end) {
      report::outage_window window;
      window.start = f.when.start.count();
      window.end = f.when.end.count();
      o.outage = window;
    }
  }
  o.phase_goodput = o.outage.has_value();
  if (!e.duration_given) {
    o.duration_total = last_end.count() > 0 ? last_end + std::chrono::seconds(30)
                                            : duration(std::chrono::seconds(60));
  }
  return o;
}

load_run run_fault_experiment(const fault_experiment& e,
                              const std::function<void(std::uint16_t port)>& started,
                              const std::function<void(const interval_report&)>& report,
                              const std::function<bool()>& stop) {
  server_options so;
  so.faults = e.faults;
  so.host = "127.0.0.1";
  so.port = 0;
  so.log_every_second = false;
  server local(so);
  local.start();
  load_options o = fault_experiment_load(e);
  o.target.host = "127.0.0.1";
  o.target.port = local.port();
  o.target.path = "/api";
  o.server_concurrency = [&local] { return local.metrics().concurrency.load(); };
  if (started) started(local.port());
  std::optional<load_run> run;
  try {
    run = run_load(o, report, stop);
  } catch (...) {
    local.stop();
    local.wait();
    throw;
  }
  local.stop();
  local.wait();
  return std::move(*run);
}

}  // namespace backoff::net
