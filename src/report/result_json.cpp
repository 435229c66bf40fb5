// SPDX-License-Identifier: Apache-2.0
#include "result_json.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <csignal>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "boundary.hpp"
#include "replication_stats.hpp"

namespace backoff::report {
namespace {

using ordered = nlohmann::ordered_json;

ordered number_or_null(const std::optional<double>& v) {
  return v ? ordered(*v) : ordered(nullptr);
}

// The latency percentiles by name, in output order.
struct latency_field {
  const char* name;
  double latency_summary::*value;
};
constexpr std::array<latency_field, 8> latency_fields{{
    {"p50", &latency_summary::p50},
    {"p75", &latency_summary::p75},
    {"p90", &latency_summary::p90},
    {"p95", &latency_summary::p95},
    {"p99", &latency_summary::p99},
    {"p999", &latency_summary::p999},
    {"p9999", &latency_summary::p9999},
    {"max", &latency_summary::max},
}};

// Every percentile, null when nothing completed (never a 0 that reads as "instant").
ordered latency_or_nulls(const std::optional<latency_summary>& l) {
  if (l) return *l;
  ordered j;
  for (const auto& f : latency_fields) j[f.name] = nullptr;
  return j;
}

// Sets j["a.b"] as j["a"]["b"].
void put(ordered& j, const std::string& path, ordered value) {
  // Each dot one level down: "services.db.latency_s.p99" is services -> db -> latency_s -> p99.
  ordered* at = &j;
  std::size_t start = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    at = &(*at)[path.substr(start, dot - start)];
    start = dot + 1;
  }
  (*at)[path.substr(start)] = std::move(value);
}

// A cell of more than one replication: each metric's mean, and its 95 % half-width in `ci95`.
ordered replications_json(const sweep_cell& cell) {
  ordered j, ci;
  j["name"] = cell.name;
  j["replications"] = cell.runs.size();
  for (const auto& m : replication_metrics()) {
    const std::optional<mean_ci> v = metric_of(cell, m);
    put(j, m.name, v ? ordered(v->mean) : nullptr);
    put(ci, m.name, v ? ordered(v->ci95) : nullptr);
  }
  j["latency_runs"] = latency_runs(cell);
  const auto [recovery, recovered] = recovery_of(cell);
  j["recovery_s"] = recovery ? ordered(recovery->mean) : nullptr;
  j["recovered_runs"] = recovered;
  ci["recovery_s"] = recovery ? ordered(recovery->ci95) : nullptr;
  for (const std::string& name : field_names({&cell})) {
    const std::optional<mean_ci> v = field_of(cell, name);
    put(j, name, v ? ordered(v->mean) : nullptr);
    put(ci, name, v ? ordered(v->ci95) : nullptr);
  }
  j["ci95"] = std::move(ci);
  return j;
}

ordered whole_cell_json(const sweep_cell& cell) {
  if (cell.runs.size() == 1) return cell.runs.front();
  return replications_json(cell);
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

// Only a stopped run has these keys: a whole run's summary.json is as it always was.
void put_stop(const scenario_result& r, ordered& doc) {
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
    doc["stopped_at_s"] = stop.strategy.empty() ? ordered(nullptr) : ordered(stop.at_s);
    doc["stopped_in"] = stop.strategy.empty() ? ordered(nullptr) : ordered(stop.strategy);
    doc["not_run"] = stop.not_run;
  }
}

const char* type_name(sweep_value::kind k) {
  switch (k) {
    case sweep_value::kind::integer:
      return "integer";
    case sweep_value::kind::number:
      return "number";
    case sweep_value::kind::string:
      return "string";
    case sweep_value::kind::boolean:
      return "boolean";
  }
  return "string";
}

sweep_value::kind type_of(const std::string& name) {
  if (name == "integer") return sweep_value::kind::integer;
  if (name == "number") return sweep_value::kind::number;
  if (name == "boolean") return sweep_value::kind::boolean;
  if (name == "string") return sweep_value::kind::string;
  throw std::invalid_argument("unknown parameter type '" + name + "'");
}

// `text` is one whole value of `type` (what summary.json converts it to).
bool whole_text(const std::string& text, sweep_value::kind type) {
  const char* first = text.data();
  const char* last = first + text.size();
  switch (type) {
    case sweep_value::kind::integer: {
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(first, last, v);
      return ec == std::errc() && end == last && !text.empty();
    }
    case sweep_value::kind::number: {
      double v = 0;
      const auto [end, ec] = std::from_chars(first, last, v);
      return ec == std::errc() && end == last && !text.empty() && std::isfinite(v);
    }
    case sweep_value::kind::boolean:
      return text == "true" || text == "false";
    case sweep_value::kind::string:
      return true;
  }
  return false;
}

// A count that must fit a signed type of the result (peak_load, bucket_width).
std::int64_t signed_count_at(const nlohmann::json& j, const char* key) {
  const std::uint64_t v = checked::count_at(j, key);
  if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw std::invalid_argument(std::string(key) + ": out of range");
  }
  return static_cast<std::int64_t>(v);
}

std::vector<model_field> fields_of(const nlohmann::json& fields) {
  if (!fields.is_array()) throw std::invalid_argument("fields: expected a list");
  std::vector<model_field> out;
  for (const auto& f : fields) {
    if (!f.is_array() || f.size() != 2 || !f[0].is_string() ||
        f[0].get_ref<const std::string&>().empty() ||
        f[0].get_ref<const std::string&>().size() > 200) {
      throw std::invalid_argument("fields: expected [name, value] pairs");
    }
    out.push_back({f[0].get<std::string>(),
                   f[1].is_null() ? std::nullopt
                                  : std::optional<double>(checked::figure(f[1], "fields", true))});
  }
  return out;
}

}  // namespace

// summary.json

void to_json(ordered& j, const latency_summary& l) {
  j = ordered::object();
  for (const auto& f : latency_fields) j[f.name] = l.*f.value;
}

void to_json(ordered& j, const phase_goodput& p) {
  j = {{"before_per_s", p.before_per_s},
       {"during_per_s", p.during_per_s},
       {"after_per_s", p.after_per_s}};
}

void to_json(ordered& j, const strategy_summary& s) {
  j = ordered::object();
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
  j["latency_s"] = latency_or_nulls(s.latency_s);
  j["goodput_per_s"] = s.goodput_per_s;
  // Runs with a known outage that ask for it (`backoff load --experiment`): goodput_per_s is
  // completed / makespan, which shows a run that collapsed at its pre-outage rate.
  if (s.phases) j["goodput_by_phase"] = *s.phases;
  j["recovery_s"] = number_or_null(s.recovery_s);
  j["peak_load"] = s.peak_load;
  j["mean_load"] = s.mean_load;
  j["events"] = s.events;
  for (const auto& f : s.fields) put(j, f.name, number_or_null(f.value));
}

void to_json(ordered& j, const sweep_value& v) {
  switch (v.type) {
    case sweep_value::kind::integer:
      j = std::stoll(v.text);
      return;
    case sweep_value::kind::number:
      j = std::stod(v.text);
      return;
    case sweep_value::kind::boolean:
      j = v.text == "true";
      return;
    case sweep_value::kind::string:
      break;
  }
  j = v.text;
}

void to_json(ordered& j, const sweep_cell& c) {
  if (cell_complete(c)) {
    j = whole_cell_json(c);
    return;
  }
  // An interrupted sweep: only the replications that ran, and how many of them.
  const sweep_cell done = ran_runs(c);
  if (done.runs.empty()) {
    j = {{"name", c.name}};
  } else {
    j = whole_cell_json(done);
  }
  j["partial"] = true;
  j["replications_done"] = done.runs.size();
}

void to_json(ordered& j, const point_result& p) {
  j = ordered::object();
  auto& params = j["params"] = ordered::object();
  for (const auto& [key, value] : p.params) params[key] = value;
  j["strategies"] = p.strategies;
}

void to_json(ordered& j, const map_axes& m) {
  j = {{"model", m.model},
       {"mapped", m.mapped},
       {"strategy", m.strategy},
       {"load_key", m.load_key},
       {"load_unit", m.load_unit},
       {"trigger_key", m.trigger_key},
       {"trigger_unit", m.trigger_unit}};
}

void to_json(ordered& j, const boundary_point& p) {
  j = {{"load", p.load},
       {"trigger", p.trigger},
       {"trigger_lo", p.trigger_lo},
       {"trigger_hi", p.trigger_hi},
       {"replications", p.replications},
       {"probes", p.probes},
       {"always_down", p.always_down},
       {"never_down", p.never_down}};
}

void to_json(ordered& j, const scenario_result& r) {
  j = ordered::object();
  j["schema"] = summary_schema;
  j["scenario"] = r.scenario;
  j["model"] = r.model;
  j["seed"] = r.seed;
  j["run"] = {{"events", r.events},
              {"wall_s", r.wall_s},
              {"events_per_s", r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0}};
  if (r.stopped) put_stop(r, j);
  if (!r.maps.empty()) {
    // A metastable map: its boundaries instead of strategies (report/boundary.hpp).
    j["map"] = map_json(r);
  } else if (r.sweep) {
    j["replications"] = r.replications;
    j["points"] = r.points;
  } else {
    auto& list = j["strategies"] = ordered::array();
    for (const auto& s : r.strategies) {
      list.push_back(s);
      if (r.stopped && s.name == r.stopped->strategy) list.back()["partial"] = true;
    }
  }
}

// Shard files

void to_json(nlohmann::json& j, const strategy_summary& s) {
  j = nlohmann::json::object();
  j["operations"] = s.operations;
  j["completed"] = s.completed;
  j["gave_up"] = s.gave_up;
  j["unfinished"] = s.unfinished;
  j["attempts"] = s.attempts;
  j["attempts_per_operation"] = s.attempts_per_operation;
  j["makespan_s"] = s.makespan_s;
  if (s.latency_s) {
    const latency_summary& l = *s.latency_s;
    j["latency_s"] = {l.p50, l.p75, l.p90, l.p95, l.p99, l.p999, l.p9999, l.max};
  } else {
    j["latency_s"] = nullptr;  // nothing completed
  }
  j["goodput_per_s"] = s.goodput_per_s;
  j["peak_load"] = s.peak_load;
  j["mean_load"] = s.mean_load;
  j["recovery_s"] = s.recovery_s ? nlohmann::json(*s.recovery_s) : nlohmann::json(nullptr);
  j["events"] = s.events;
  j["has_window"] = s.has_window;
  j["seconds_per_unit"] = s.seconds_per_unit;
  j["bucket_width"] = s.bucket_width;
  auto& fields = j["fields"] = nlohmann::json::array();
  for (const auto& f : s.fields) {
    fields.push_back({f.name, f.value ? nlohmann::json(*f.value) : nlohmann::json(nullptr)});
  }
}

void from_json(const nlohmann::json& j, strategy_summary& s) {
  using checked::count_at;
  using checked::figure_at;
  if (!j.is_object()) throw std::invalid_argument("summary: expected an object");
  s.operations = count_at(j, "operations");
  s.completed = count_at(j, "completed");
  s.gave_up = count_at(j, "gave_up");
  s.unfinished = count_at(j, "unfinished");
  s.attempts = count_at(j, "attempts");
  s.attempts_per_operation = figure_at(j, "attempts_per_operation");
  s.makespan_s = figure_at(j, "makespan_s");
  s.latency_s.reset();
  if (const auto& l = j.at("latency_s"); !l.is_null()) {
    if (!l.is_array() || l.size() != latency_fields.size()) {
      throw std::invalid_argument("latency_s: expected 8 numbers or null");
    }
    latency_summary read;
    for (std::size_t i = 0; i < latency_fields.size(); ++i) {
      read.*latency_fields[i].value = checked::figure(l[i], "latency_s");
    }
    s.latency_s = read;
  }
  s.goodput_per_s = figure_at(j, "goodput_per_s");
  s.peak_load = signed_count_at(j, "peak_load");
  s.mean_load = figure_at(j, "mean_load");
  s.recovery_s.reset();
  if (!j.at("recovery_s").is_null()) s.recovery_s = figure_at(j, "recovery_s");
  s.events = count_at(j, "events");
  s.has_window = checked::boolean_at(j, "has_window");
  s.seconds_per_unit = figure_at(j, "seconds_per_unit");
  if (s.seconds_per_unit <= 0) throw std::invalid_argument("seconds_per_unit: expected > 0");
  s.bucket_width = signed_count_at(j, "bucket_width");
  s.fields = fields_of(j.at("fields"));
}

void to_json(nlohmann::json& j, const sweep_value& v) {
  j = {{"toml", v.toml}, {"text", v.text}, {"type", type_name(v.type)}};
}

void from_json(const nlohmann::json& j, sweep_value& v) {
  v.toml = checked::string_at(j, "toml");
  v.text = checked::string_at(j, "text");
  v.type = type_of(checked::string_at(j, "type"));
  if (!whole_text(v.text, v.type)) {
    throw std::invalid_argument("\"" + escape_controls(v.text.substr(0, 40)) + "\" is not a " +
                                type_name(v.type));
  }
}

namespace checked {

std::uint64_t count_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_unsigned()) throw std::invalid_argument(std::string(key) + ": expected a count");
  return v.get<std::uint64_t>();
}

double figure(const nlohmann::json& v, const std::string& key, bool signed_ok) {
  if (!v.is_number()) throw std::invalid_argument(key + ": expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || (!signed_ok && x < 0)) {
    throw std::invalid_argument(key + ": expected a finite number" +
                                (signed_ok ? std::string() : std::string(" >= 0")));
  }
  return x;
}

double figure_at(const nlohmann::json& j, const char* key) {
  return figure(j.at(key), key);
}

std::string string_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_string()) throw std::invalid_argument(std::string(key) + ": expected a string");
  return v.get<std::string>();
}

bool boolean_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_boolean()) throw std::invalid_argument(std::string(key) + ": expected a boolean");
  return v.get<bool>();
}

}  // namespace checked

}  // namespace backoff::report
