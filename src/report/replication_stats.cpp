// SPDX-License-Identifier: Apache-2.0
#include "replication_stats.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace backoff::report {

mean_ci mean_and_ci95(const std::vector<double>& values) {
  mean_ci out;
  if (values.empty()) return out;
  double sum = 0;
  for (const double v : values) sum += v;
  const auto n = static_cast<double>(values.size());
  out.mean = sum / n;
  if (values.size() < 2) return out;
  if (std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); })) {
    out.mean = values.front();  // exactly, without the rounding of the sum
    return out;
  }
  double squares = 0;
  for (const double v : values) squares += (v - out.mean) * (v - out.mean);
  const double sd = std::sqrt(squares / (n - 1));
  const boost::math::students_t t(n - 1);
  out.ci95 = boost::math::quantile(t, 0.975) * sd / std::sqrt(n);
  return out;
}

const std::vector<summary_metric>& replication_metrics() {
  using S = const strategy_summary&;
  using value = std::optional<double>;
  static const std::vector<summary_metric> all{
      {"operations", [](S s) -> value { return static_cast<double>(s.operations); }},
      {"completed", [](S s) -> value { return static_cast<double>(s.completed); }},
      {"failed", [](S s) -> value { return static_cast<double>(s.operations - s.completed); }},
      {"gave_up", [](S s) -> value { return static_cast<double>(s.gave_up); }},
      {"unfinished", [](S s) -> value { return static_cast<double>(s.unfinished); }},
      {"attempts", [](S s) -> value { return static_cast<double>(s.attempts); }},
      {"attempts_per_operation", [](S s) -> value { return s.attempts_per_operation; }},
      {"success_rate", [](S s) -> value { return s.success_rate(); }},
      {"load", [](S s) -> value { return s.attempts_per_operation; }},
      {"makespan_s", [](S s) -> value { return s.makespan_s; }},
      {"latency_s.p50",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p50) : value(); }},
      {"latency_s.p75",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p75) : value(); }},
      {"latency_s.p90",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p90) : value(); }},
      {"latency_s.p95",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p95) : value(); }},
      {"latency_s.p99",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p99) : value(); }},
      {"latency_s.p999",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p999) : value(); }},
      {"latency_s.p9999",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->p9999) : value(); }},
      {"latency_s.max",
       [](S s) -> value { return s.latency_s ? value(s.latency_s->max) : value(); }},
      {"goodput_per_s", [](S s) -> value { return s.goodput_per_s; }},
      {"peak_load", [](S s) -> value { return static_cast<double>(s.peak_load); }},
      {"mean_load", [](S s) -> value { return s.mean_load; }},
      {"events", [](S s) -> value { return static_cast<double>(s.events); }},
  };
  return all;
}

// The mean over the runs that have the metric; none when no run has it.
std::optional<mean_ci> metric_of(const sweep_cell& cell, const summary_metric& m) {
  std::vector<double> v;
  v.reserve(cell.runs.size());
  for (const auto& run : cell.runs) {
    if (const auto x = m.get(run)) v.push_back(*x);
  }
  if (v.empty()) return std::nullopt;
  return mean_and_ci95(v);
}

// The model's own fields of the cells given, in the order they first appear.
std::vector<std::string> field_names(const std::vector<const sweep_cell*>& cells) {
  std::vector<std::string> names;
  for (const sweep_cell* cell : cells) {
    for (const auto& run : cell->runs) {
      for (const auto& f : run.fields) {
        if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
      }
    }
  }
  return names;
}

// A model field's mean over the runs where it has a value.
std::optional<mean_ci> field_of(const sweep_cell& cell, const std::string& name) {
  std::vector<double> v;
  for (const auto& run : cell.runs) {
    for (const auto& f : run.fields) {
      if (f.name == name && f.value) v.push_back(*f.value);
    }
  }
  if (v.empty()) return std::nullopt;
  return mean_and_ci95(v);
}

// The runs whose latency the latency means are over (those where something completed).
std::size_t latency_runs(const sweep_cell& cell) {
  return static_cast<std::size_t>(
      std::count_if(cell.runs.begin(), cell.runs.end(),
                    [](const strategy_summary& s) { return s.latency_s.has_value(); }));
}

// recovery_s over the runs that recovered; their count beside it.
std::pair<std::optional<mean_ci>, std::size_t> recovery_of(const sweep_cell& cell) {
  std::vector<double> v;
  for (const auto& run : cell.runs) {
    if (run.recovery_s) v.push_back(*run.recovery_s);
  }
  if (v.empty()) return {std::nullopt, 0};
  return {mean_and_ci95(v), v.size()};
}

// A cell of an interrupted sweep: only the replications that ran.
sweep_cell ran_runs(const sweep_cell& cell) {
  sweep_cell out{cell.name, {}, {}};
  for (std::size_t r = 0; r < cell.runs.size(); ++r) {
    if (cell.ran[r] != 0) {
      out.runs.push_back(cell.runs[r]);
      out.ran.push_back(1);
    }
  }
  return out;
}

bool cell_complete(const sweep_cell& cell) {
  return std::find(cell.ran.begin(), cell.ran.end(), 0) == cell.ran.end();
}

}  // namespace backoff::report
