// SPDX-License-Identifier: Apache-2.0
// Statistics over the replications of one strategy at one sweep point (a sweep_cell), by the
// metric's path in summary.json: summary.json's means and `ci95`, sweep.csv's columns and the
// comparison table's means are all computed here, so the three show the same numbers.
//
//   for (const auto& m : report::replication_metrics()) {
//     if (const auto v = report::metric_of(cell, m)) use(m.name, v->mean, v->ci95);  // else null
//   }
//
// A metric a run may lack (the latency of a run where nothing completed) is averaged over the
// runs that have it; a cell where no run has it has none (null, an empty CSV field, `-`).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "result.hpp"

namespace backoff::report {

struct summary_metric {
  const char* name;  // its summary.json path ("latency_s.p50")
  std::optional<double> (*get)(const strategy_summary&);
};
// Every metric averaged over replications, in summary.json's order.
const std::vector<summary_metric>& replication_metrics();

// The mean over the runs that have the metric; none when no run has it.
std::optional<mean_ci> metric_of(const sweep_cell& cell, const summary_metric& m);

// The model's own fields of the cells given, in the order they first appear.
std::vector<std::string> field_names(const std::vector<const sweep_cell*>& cells);
// A model field's mean over the runs where it has a value.
std::optional<mean_ci> field_of(const sweep_cell& cell, const std::string& name);

// The runs whose latency the latency means are over (those where something completed).
std::size_t latency_runs(const sweep_cell& cell);
// recovery_s over the runs that recovered; their count beside it.
std::pair<std::optional<mean_ci>, std::size_t> recovery_of(const sweep_cell& cell);

// Every replication of the cell ran (an interrupted sweep leaves some out).
bool cell_complete(const sweep_cell& cell);
// A cell of an interrupted sweep: only the replications that ran.
sweep_cell ran_runs(const sweep_cell& cell);

}  // namespace backoff::report
