// SPDX-License-Identifier: Apache-2.0
#include "summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "boundary.hpp"
#include "csv.hpp"
#include "replication_stats.hpp"
#include "result_json.hpp"
#include "sweep_spool.hpp"
#include "text_table.hpp"

namespace backoff::report {

std::string describe(const run_stop& stop) {
  if (stop.reason == stop_reason::memory) return "over the memory limit";
  if (stop.reason == stop_reason::instant_limit) {
    return "stuck at one simulated time (over run.max_events_per_instant)";
  }
  const char* name = stop.signal == SIGINT    ? "SIGINT"
                     : stop.signal == SIGTERM ? "SIGTERM"
                                              : nullptr;
  return name != nullptr ? fmt::format("interrupted ({})", name)
                         : fmt::format("interrupted (signal {})", stop.signal);
}

nlohmann::ordered_json sweep_point_json(const point_result& p) {
  return p;
}

bool sweep_cell_complete(const sweep_cell& cell) {
  return cell_complete(cell);
}

std::vector<std::string> sweep_cell_fields(const sweep_cell& cell) {
  return field_names({&cell});
}

std::string sweep_csv_core(const point_result& p, const sweep_cell& cell) {
  std::string row;
  for (const auto& [key, value] : p.params) row += csv_field(value.text) + ",";
  row += csv_field(cell.name) + "," + std::to_string(cell.runs.size());
  for (const auto& m : replication_metrics()) {
    if (const std::optional<mean_ci> v = metric_of(cell, m)) {
      fmt::format_to(std::back_inserter(row), ",{},{}", v->mean, v->ci95);
    } else {
      row += ",,";  // no run has it: empty, not 0
    }
  }
  const auto [recovery, recovered] = recovery_of(cell);
  if (recovery) {
    fmt::format_to(std::back_inserter(row), ",{},{},{}", recovery->mean, recovery->ci95, recovered);
  } else {
    row += ",,,0";
  }
  fmt::format_to(std::back_inserter(row), ",{}", latency_runs(cell));
  return row;
}

std::string sweep_csv_field(const sweep_cell& cell, const std::string& name) {
  if (const std::optional<mean_ci> v = field_of(cell, name)) {
    return fmt::format(",{},{}", v->mean, v->ci95);
  }
  return ",,";
}

std::string sweep_csv_header(const std::vector<std::string>& sweep_keys,
                             const std::vector<std::string>& fields) {
  std::string header;
  for (const auto& key : sweep_keys) header += csv_field(key) + ",";
  header += "strategy,replications";
  for (const auto& m : replication_metrics()) {
    std::string name = m.name;
    std::replace(name.begin(), name.end(), '.', '_');
    header += "," + name + "," + name + "_ci95";
  }
  header += ",recovery_s,recovery_s_ci95,recovered_runs,latency_runs";
  // The model's own fields last, so that the common columns keep their places.
  for (std::string name : fields) {
    std::replace(name.begin(), name.end(), '.', '_');
    header += "," + csv_field(name) + "," + csv_field(name + "_ci95");
  }
  return header;
}

void write_summary_json(const scenario_result& r, std::ostream& out) {
  const nlohmann::ordered_json doc = r;
  if (r.spool) {
    // The points come from the spool, in place of the empty list that ends the document.
    const std::string text = json_text(doc);
    const std::string empty = "\"points\": []";
    const std::size_t at = text.rfind(empty);
    out << std::string_view(text).substr(0, at + empty.size() - 1);
    if (r.spool->points() != 0) {
      out << '\n';
      r.spool->write_points_json(out);
      out << "\n  ";
    }
    out << std::string_view(text).substr(at + empty.size() - 1) << '\n';
    return;
  }
  out << json_text(doc) << '\n';
}

void write_sweep_csv(const scenario_result& r, std::ostream& out) {
  if (r.spool) {
    out << sweep_csv_header(r.sweep_keys, r.spool->field_names()) << '\n';
    r.spool->write_csv_rows(out);
    return;
  }
  std::vector<const sweep_cell*> all;
  for (const auto& p : r.points) {
    for (const auto& cell : p.strategies) all.push_back(&cell);
  }
  const std::vector<std::string> fields = field_names(all);
  out << sweep_csv_header(r.sweep_keys, fields) << '\n';
  std::string row;
  for (const auto& p : r.points) {
    for (const auto& cell : p.strategies) {
      if (!cell_complete(cell)) continue;  // an interrupted sweep: summary.json marks these
      row = sweep_csv_core(p, cell);
      for (const std::string& name : fields) row += sweep_csv_field(cell, name);
      row += '\n';
      out << row;
    }
  }
}

namespace {

// The start of bucket i in seconds (ticks in tick models). Divides by whole units per second
// where there are (1e9 ns): 58 s, not 58.00000000000001.
double bucket_start_s(const strategy_summary& s, std::size_t i) {
  const double start = static_cast<double>(static_cast<time_units>(i) * s.bucket_width);
  return s.seconds_per_unit < 1 ? start / std::round(1 / s.seconds_per_unit)
                                : start * s.seconds_per_unit;
}

bool has_services(const scenario_result& r) {
  return std::any_of(r.strategies.begin(), r.strategies.end(),
                     [](const strategy_summary& s) { return !s.services.empty(); });
}

}  // namespace

void write_services_csv(const scenario_result& r, std::ostream& out) {
  out << services_csv_header << '\n';
  std::string row;
  for (const auto& s : r.strategies) {
    for (const service_series& series : s.services) {
      for (std::size_t i = 0; i < series.buckets.size(); ++i) {
        const service_counts_bucket& b = series.buckets[i];
        row.clear();
        csv_append(row, s.name);
        row += ',';
        csv_append(row, series.service);
        fmt::format_to(std::back_inserter(row), ",{},{},{},{},{},{},{},{}\n", bucket_start_s(s, i),
                       b.arrivals, b.attempts, b.completed, b.rejected, b.failed, b.peak_in_flight,
                       b.peak_queue);
        out << row;
      }
    }
  }
}

void write_timeseries_csv(const scenario_result& r, std::ostream& out) {
  // A model that reports server work (recorder::work) gets its column; others keep their header.
  const bool work = std::any_of(r.strategies.begin(), r.strategies.end(),
                                [](const strategy_summary& s) { return !s.work_label.empty(); });
  out << "strategy,t_s,new,attempts,successes,errors,timeouts,in_service,queued,cwnd,ssthresh"
      << (work ? ",work\n" : "\n");
  std::string row;
  for (const auto& s : r.strategies) {
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const series_bucket& b = s.buckets[i];
      const double t = bucket_start_s(s, i);
      row.clear();
      csv_append(row, s.name);
      fmt::format_to(std::back_inserter(row), ",{},{},{},{},{},{},{},{},", t, b.new_operations,
                     b.attempts, b.successes, b.errors, b.timeouts, b.in_service, b.queued);
      if (s.has_window) {
        fmt::format_to(std::back_inserter(row), "{},{}", b.cwnd, b.ssthresh);
      } else {
        row += ",";
      }
      if (work) fmt::format_to(std::back_inserter(row), ",{}", b.work);
      row += '\n';
      out << row;
    }
  }
}

namespace {

std::string table_number(double v) {
  return fmt::format("{:.4g}", v);
}

// A figure no run has (the latency where nothing completed): `-`, not 0.
std::string number_or_dash(std::optional<double> v) {
  return v ? table_number(*v) : std::string("-");
}

std::optional<double> latency_of(const strategy_summary& s, double latency_summary::*field) {
  return s.latency_s ? std::optional<double>((*s.latency_s).*field) : std::nullopt;
}

void add_summary_row(std::vector<std::string> row, const strategy_summary& s, bool outage,
                     std::vector<std::vector<std::string>>& rows) {
  for (auto v : {std::to_string(s.operations), std::to_string(s.completed),
                 std::to_string(s.operations - s.completed), std::to_string(s.attempts),
                 fmt::format("{:.2f}", s.attempts_per_operation), table_number(s.makespan_s),
                 number_or_dash(latency_of(s, &latency_summary::p50)),
                 number_or_dash(latency_of(s, &latency_summary::p75)),
                 number_or_dash(latency_of(s, &latency_summary::p95)),
                 number_or_dash(latency_of(s, &latency_summary::p99)),
                 number_or_dash(latency_of(s, &latency_summary::max)),
                 table_number(s.goodput_per_s), std::to_string(s.peak_load)}) {
    row.push_back(std::move(v));
  }
  if (outage) row.push_back(s.recovery_s ? table_number(*s.recovery_s) : "never");
  rows.push_back(std::move(row));
}

std::string comparison_title(const scenario_result& r) {
  std::string out = fmt::format("{} (model {}, seed {}", escape_controls(r.scenario),
                                escape_controls(r.model), r.seed);
  if (r.sweep && r.replications > 1) {
    out += fmt::format(", means over {} replications", r.replications);
  }
  return out + ")\n";
}

std::string comparison_notes(const scenario_result& r) {
  if (!r.stopped) return {};
  const run_stop& stop = *r.stopped;
  std::string out = "partial: " + describe(stop);
  if (r.sweep) {
    out += fmt::format(" after {} of {} runs; a strategy marked (k/n runs) has only k",
                       stop.runs_done, stop.runs);
  } else if (!stop.strategy.empty()) {
    out += fmt::format(" at {:.6g} s of simulated time in {} (its row stops there)", stop.at_s,
                       escape_controls(stop.strategy));
  }
  if (!stop.not_run.empty()) {
    std::string names;
    for (const auto& n : stop.not_run) names += (names.empty() ? "" : ", ") + escape_controls(n);
    out += "; not run: " + names;
  }
  return out + '\n';
}

}  // namespace

std::vector<std::string> comparison_header(const scenario_result& r) {
  std::vector<std::string> header = r.sweep_keys;
  for (const char* h : {"strategy", "ops", "done", "failed", "attempts", "att/op", "makespan_s",
                        "p50", "p75", "p95", "p99", "max", "goodput/s", "peak"}) {
    header.emplace_back(h);
  }
  if (r.outage) header.emplace_back("recovery_s");
  return header;
}

void comparison_point_rows(const point_result& p, bool outage,
                           std::vector<std::vector<std::string>>& rows) {
  for (const auto& full : p.strategies) {
    const bool whole = cell_complete(full);
    const sweep_cell cell = whole ? full : ran_runs(full);
    if (cell.runs.empty()) continue;
    std::vector<std::string> row;
    for (const auto& [key, value] : p.params) row.push_back(value.text);
    row.push_back(
        whole ? cell.name
              : fmt::format("{} ({}/{} runs)", cell.name, cell.runs.size(), full.runs.size()));
    if (cell.runs.size() == 1) {
      add_summary_row(std::move(row), cell.runs.front(), outage, rows);
      continue;
    }
    // Means over the replications (counts rounded for display).
    const auto mean = [&](const char* name) -> std::optional<double> {
      for (const auto& m : replication_metrics()) {
        if (std::string_view(m.name) != name) continue;
        const auto v = metric_of(cell, m);
        return v ? std::optional<double>(v->mean) : std::nullopt;
      }
      return std::nullopt;
    };
    for (const char* name : {"operations", "completed", "failed", "attempts"}) {
      row.push_back(fmt::format("{:.1f}", mean(name).value_or(0)));
    }
    row.push_back(fmt::format("{:.2f}", mean("attempts_per_operation").value_or(0)));
    row.push_back(number_or_dash(mean("makespan_s")));
    // The latency means are over the runs where something completed: say so when not all.
    const std::size_t timed = latency_runs(cell);
    const std::string of = timed != 0 && timed < cell.runs.size()
                               ? fmt::format(" ({}/{})", timed, cell.runs.size())
                               : std::string();
    row.push_back(number_or_dash(mean("latency_s.p50")) + of);
    for (const char* name : {"latency_s.p75", "latency_s.p95", "latency_s.p99", "latency_s.max",
                             "goodput_per_s", "peak_load"}) {
      row.push_back(number_or_dash(mean(name)));
    }
    if (outage) {
      const auto [recovery, recovered] = recovery_of(cell);
      row.push_back(recovery ? fmt::format("{} ({}/{})", table_number(recovery->mean), recovered,
                                           cell.runs.size())
                             : "never");
    }
    rows.push_back(std::move(row));
  }
}

void write_comparison_table(const scenario_result& r, std::ostream& out) {
  if (!r.maps.empty()) {
    out << map_table(r);
    return;
  }
  out << comparison_title(r);
  if (r.spool) {
    // The swept values and the strategy's name are left-aligned, the numbers right-aligned.
    r.spool->write_table(out, comparison_header(r));
  } else {
    std::vector<std::vector<std::string>> rows{comparison_header(r)};
    for (const auto& s : r.strategies) add_summary_row({s.name}, s, r.outage, rows);
    for (const auto& p : r.points) comparison_point_rows(p, r.outage, rows);
    out << text_table{std::move(rows), r.sweep_keys.size() + 1}.render();
  }
  out << comparison_notes(r);
}

std::string comparison_table(const scenario_result& r) {
  std::ostringstream out;
  write_comparison_table(r, out);
  return out.str();
}

std::string json_text(const nlohmann::ordered_json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void write_run_files(const scenario_result& r, output_folder& out) {
  if (!r.maps.empty()) {
    atomic_file boundary = out.create("boundary.csv");
    write_boundary_csv(r, boundary.stream());
    boundary.commit();
  } else {
    atomic_file table = out.create(r.sweep ? "sweep.csv" : "timeseries.csv");
    if (r.sweep) {
      write_sweep_csv(r, table.stream());
    } else {
      write_timeseries_csv(r, table.stream());
    }
    table.commit();
  }
  if (!r.sweep && has_services(r)) {
    atomic_file services = out.create("services.csv");
    write_services_csv(r, services.stream());
    services.commit();
  }
  // Last: its presence says the run ended (its `partial` field, whether it finished).
  atomic_file summary = out.create("summary.json");
  write_summary_json(r, summary.stream());
  summary.commit();
  out.finish();
}

}  // namespace backoff::report
