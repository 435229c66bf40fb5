// SPDX-License-Identifier: Apache-2.0
#include "summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
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
#include "sweep_spool.hpp"
#include "text_table.hpp"

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

namespace {

nlohmann::ordered_json number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// The latency percentiles by name, in output order.
struct latency_field {
  const char* name;
  double (*get)(const latency_summary&);
};
const std::vector<latency_field>& latency_fields() {
  static const std::vector<latency_field> all{
      {"p50", [](const latency_summary& l) { return l.p50; }},
      {"p75", [](const latency_summary& l) { return l.p75; }},
      {"p90", [](const latency_summary& l) { return l.p90; }},
      {"p95", [](const latency_summary& l) { return l.p95; }},
      {"p99", [](const latency_summary& l) { return l.p99; }},
      {"p999", [](const latency_summary& l) { return l.p999; }},
      {"p9999", [](const latency_summary& l) { return l.p9999; }},
      {"max", [](const latency_summary& l) { return l.max; }},
  };
  return all;
}

// Sets j["a.b"] as j["a"]["b"].
void put(nlohmann::ordered_json& j, const std::string& path, nlohmann::ordered_json value) {
  const auto dot = path.find('.');
  if (dot == std::string::npos) {
    j[path] = value;
  } else {
    j[path.substr(0, dot)][path.substr(dot + 1)] = value;
  }
}

nlohmann::ordered_json strategy_json(const strategy_summary& s) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["operations"] = s.operations;
  j["completed"] = s.completed;
  j["failed"] = s.operations - s.completed;
  j["gave_up"] = s.gave_up;
  j["unfinished"] = s.unfinished;
  j["attempts"] = s.attempts;
  j["attempts_per_operation"] = s.attempts_per_operation;
  // SPEC 7.3's names for the two ratios every model has.
  j["success_rate"] = s.success_rate();
  j["load"] = s.attempts_per_operation;
  j["makespan_s"] = s.makespan_s;
  auto& latency = j["latency_s"];
  for (const auto& [name, get] : latency_fields()) {
    latency[name] = s.latency_s ? nlohmann::ordered_json(get(*s.latency_s)) : nullptr;
  }
  j["goodput_per_s"] = s.goodput_per_s;
  if (s.phases) {
    // Runs with a known outage that ask for it (`backoff load --experiment`): goodput_per_s is
    // completed / makespan, which shows a run that collapsed at its pre-outage rate.
    j["goodput_by_phase"] = {{"before_per_s", s.phases->before_per_s},
                             {"during_per_s", s.phases->during_per_s},
                             {"after_per_s", s.phases->after_per_s}};
  }
  j["recovery_s"] = number_or_null(s.recovery_s);
  j["peak_load"] = s.peak_load;
  j["mean_load"] = s.mean_load;
  j["events"] = s.events;
  for (const auto& f : s.fields) put(j, f.name, number_or_null(f.value));
  return j;
}

// The metrics averaged over replications, by their summary.json path. A metric a run may lack
// (the latency of a run where nothing completed) is averaged over the runs that have it.
struct summary_metric {
  const char* name;
  std::optional<double> (*get)(const strategy_summary&);
};
const std::vector<summary_metric>& metrics() {
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

nlohmann::ordered_json cell_json(const sweep_cell& cell) {
  if (cell.runs.size() == 1) return strategy_json(cell.runs.front());
  nlohmann::ordered_json j, ci;
  j["name"] = cell.name;
  j["replications"] = cell.runs.size();
  for (const auto& m : metrics()) {
    const std::optional<mean_ci> v = metric_of(cell, m);
    put(j, m.name, v ? nlohmann::ordered_json(v->mean) : nullptr);
    put(ci, m.name, v ? nlohmann::ordered_json(v->ci95) : nullptr);
  }
  j["latency_runs"] = latency_runs(cell);
  const auto [recovery, recovered] = recovery_of(cell);
  j["recovery_s"] = recovery ? nlohmann::ordered_json(recovery->mean) : nullptr;
  j["recovered_runs"] = recovered;
  ci["recovery_s"] = recovery ? nlohmann::ordered_json(recovery->ci95) : nullptr;
  for (const std::string& name : field_names({&cell})) {
    const std::optional<mean_ci> v = field_of(cell, name);
    put(j, name, v ? nlohmann::ordered_json(v->mean) : nullptr);
    put(ci, name, v ? nlohmann::ordered_json(v->ci95) : nullptr);
  }
  j["ci95"] = std::move(ci);
  return j;
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

bool complete(const sweep_cell& cell) {
  return std::find(cell.ran.begin(), cell.ran.end(), 0) == cell.ran.end();
}

nlohmann::ordered_json partial_cell_json(const sweep_cell& cell) {
  const sweep_cell done = ran_runs(cell);
  nlohmann::ordered_json j;
  if (done.runs.empty()) {
    j["name"] = cell.name;
  } else {
    j = cell_json(done);
  }
  j["partial"] = true;
  j["replications_done"] = done.runs.size();
  return j;
}

const char* reason_key(stop_reason r) {
  switch (r) {
    case stop_reason::memory:
      return "memory-limit";
    case stop_reason::instant_limit:
      return "events-per-instant-limit";
    case stop_reason::interrupted:
      break;
  }
  return "interrupted";
}

nlohmann::ordered_json param_json(const sweep_value& v) {
  switch (v.type) {
    case sweep_value::kind::integer:
      return std::stoll(v.text);
    case sweep_value::kind::number:
      return std::stod(v.text);
    case sweep_value::kind::boolean:
      return v.text == "true";
    case sweep_value::kind::string:
      break;
  }
  return v.text;
}

}  // namespace

nlohmann::ordered_json sweep_point_json(const point_result& p) {
  nlohmann::ordered_json point;
  point["params"] = nlohmann::ordered_json::object();
  for (const auto& [key, value] : p.params) point["params"][key] = param_json(value);
  auto& list = point["strategies"] = nlohmann::ordered_json::array();
  for (const auto& cell : p.strategies) {
    list.push_back(complete(cell) ? cell_json(cell) : partial_cell_json(cell));
  }
  return point;
}

bool sweep_cell_complete(const sweep_cell& cell) {
  return complete(cell);
}

std::vector<std::string> sweep_cell_fields(const sweep_cell& cell) {
  return field_names({&cell});
}

std::string sweep_csv_core(const point_result& p, const sweep_cell& cell) {
  std::string row;
  for (const auto& [key, value] : p.params) row += csv_field(value.text) + ",";
  row += csv_field(cell.name) + "," + std::to_string(cell.runs.size());
  for (const auto& m : metrics()) {
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
  for (const auto& m : metrics()) {
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
  nlohmann::ordered_json doc;
  doc["scenario"] = r.scenario;
  doc["model"] = r.model;
  doc["seed"] = r.seed;
  doc["run"] = {{"events", r.events},
                {"wall_s", r.wall_s},
                {"events_per_s", r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0}};
  // Only a stopped run has these keys: a whole run's summary.json is as it always was.
  if (r.stopped) {
    const run_stop& stop = *r.stopped;
    doc["partial"] = true;
    doc["reason"] = reason_key(stop.reason);
    if (stop.reason == stop_reason::interrupted) {
      doc["signal"] = stop.signal == SIGINT    ? "SIGINT"
                      : stop.signal == SIGTERM ? "SIGTERM"
                                               : std::to_string(stop.signal);
    }
    if (r.sweep || !r.maps.empty()) {  // a map counts its loads as runs
      doc["runs_done"] = stop.runs_done;
      doc["runs"] = stop.runs;
    } else {
      doc["stopped_at_s"] = stop.strategy.empty() ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(stop.at_s);
      doc["stopped_in"] = stop.strategy.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(stop.strategy);
      doc["not_run"] = stop.not_run;
    }
  }
  if (!r.maps.empty()) {
    // A metastable map: its boundaries instead of strategies (report/boundary.hpp).
    doc["map"] = map_json(r);
  } else if (r.sweep) {
    doc["replications"] = r.replications;
    auto& points = doc["points"] = nlohmann::ordered_json::array();
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
    for (const auto& p : r.points) points.push_back(sweep_point_json(p));
  } else {
    auto& list = doc["strategies"] = nlohmann::ordered_json::array();
    for (const auto& s : r.strategies) {
      list.push_back(strategy_json(s));
      if (r.stopped && s.name == r.stopped->strategy) list.back()["partial"] = true;
    }
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
      if (!complete(cell)) continue;  // an interrupted sweep: summary.json marks these
      row = sweep_csv_core(p, cell);
      for (const std::string& name : fields) row += sweep_csv_field(cell, name);
      row += '\n';
      out << row;
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
      // Divide by whole units per second where there are (1e9 ns): 58 s, not 58.00000000000001.
      const double start = static_cast<double>(static_cast<time_units>(i) * s.bucket_width);
      const double t = s.seconds_per_unit < 1 ? start / std::round(1 / s.seconds_per_unit)
                                              : start * s.seconds_per_unit;
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
    const bool whole = complete(full);
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
      for (const auto& m : metrics()) {
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
  // Last: its presence says the run ended (its `partial` field, whether it finished).
  atomic_file summary = out.create("summary.json");
  write_summary_json(r, summary.stream());
  summary.commit();
  out.finish();
}

}  // namespace backoff::report
