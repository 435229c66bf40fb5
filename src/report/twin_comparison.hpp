// SPDX-License-Identifier: Apache-2.0
// A system run for real beside its simulation (`backoff load --system --compare`; docs/NETWORK.md,
// "A system for real"): the same figures of both, per strategy and per service, with their ratio
// (comparison.csv: strategy,service,metric,simulated,real,ratio; `service` empty for totals), and
// the agreement the twins are held to: success rate, load (attempts per operation) and goodput
// within 15 %, each service's amplification within 25 %, and the same verdict on recovery.
//
//   const auto rows = report::compare_twins(simulated, real);
//   report::write_comparison_csv(rows, out);
//   std::cout << report::agreement_table(rows);    // the bounded metrics, each within or not
//   report::write_plots(real, dir, {.simulated = &simulated});  // curves overlaid (plots.hpp)
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "result.hpp"

namespace backoff::report {

struct twin_row {
  std::string strategy, service, metric;  // service: "" for the strategy's totals
  std::optional<double> simulated, real;  // none: the run had nothing to measure it on
  // The bound the twins are held to on this metric, as a share (0.15: within 15 %), or none.
  std::optional<double> bound;
  // real / simulated; none when either is missing or simulated is 0 (then equal only if real is).
  std::optional<double> ratio() const;
  // Within the bound: the ratio within 1 +- bound, or both 0, or both missing; recovered's
  // verdicts equal.
  bool agrees() const;
};

// Strategies matched by name (the real run's order; one missing in either is skipped). Totals:
// operations, success_rate, load, goodput_per_s, latency_s.p50 and .p99, recovery_s and
// recovered (1 or 0) when the scenario has an outage; per service (the model's fields
// services.NAME.*): arrivals, attempts, completed, rejected, failed, amplification,
// peak_in_flight, latency_s.p50 and .p99.
std::vector<twin_row> compare_twins(const scenario_result& simulated, const scenario_result& real);

void write_comparison_csv(const std::vector<twin_row>& rows, std::ostream& out);

// The bounded rows as a table: strategy, service, metric, simulated, real, ratio, bound and
// "yes"/"NO"; then one line saying how many are within bounds.
std::string agreement_table(const std::vector<twin_row>& rows);

// True when every bounded row agrees.
bool twins_agree(const std::vector<twin_row>& rows);

}  // namespace backoff::report
