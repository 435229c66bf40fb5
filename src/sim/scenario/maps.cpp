// SPDX-License-Identifier: Apache-2.0
// A metastable map's [[map]] tables (scenario.hpp's map_spec): the mapped scenario and strategy,
// its overrides, the loads and the trigger range, each key checked with a message of its own.
#include <toml++/toml.h>

#include <cmath>
#include <set>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "config/overrides.hpp"
#include "config/toml_text.hpp"
#include "scenario.hpp"
#include "sweep_values.hpp"

namespace backoff::sim {

using config::number_text;
using config::position;
using config::toml_quote;
using config::type_name;

namespace {

constexpr std::size_t max_map_loads = 1000;
constexpr std::int64_t max_map_probes = 1000;
constexpr std::int64_t max_map_replications = 1000;

// A [[map]]'s number or duration (seconds); `is_duration` says which it was, `is_integer` whether
// it was a TOML integer.
struct map_number {
  double value = 0;
  bool is_duration = false, is_integer = false;
};

map_number map_number_of(const toml::node& n, const std::string& at, const std::string& what) {
  if (const auto i = n.value_exact<std::int64_t>()) {
    return {static_cast<double>(*i), false, true};
  }
  if (n.is_floating_point()) {
    const double d = n.as_floating_point()->get();
    if (!std::isfinite(d)) throw scenario_error(at + ": " + what + ": must be finite");
    return {d, false, false};
  }
  if (const auto text = n.value_exact<std::string>()) {
    try {
      return {static_cast<double>(parse_duration(*text).count()) * 1e-9, true, false};
    } catch (const parse_error& e) {
      throw scenario_error(at + ": " + what + ": " + e.what());
    }
  }
  throw scenario_error(at + ": " + what + ": expected a number or a duration string, found " +
                       type_name(n));
}

void refuse_unknown(const toml::table& t, const std::string& path, const std::string& what,
                    const std::set<std::string, std::less<>>& known, const std::string& list) {
  for (const auto& [k, node] : t) {
    (void)node;
    if (!known.contains(k.str())) {
      throw scenario_error(position(k.source(), path) + ": unknown " + what + " key '" +
                           std::string(k.str()) + "' (known: " + list + ")");
    }
  }
}

std::string map_string(const toml::table& t, std::string_view key, const std::string& path,
                       const std::string& where, const std::string& what) {
  const toml::node* n = t.get(key);
  if (n == nullptr) throw scenario_error(where + ": " + what + ": missing");
  const auto v = n->value_exact<std::string>();
  if (!v) {
    throw scenario_error(position(n->source(), path) + ": " + what + ": expected a string, found " +
                         type_name(*n));
  }
  if (v->empty()) throw scenario_error(position(n->source(), path) + ": " + what + ": empty");
  return *v;
}

// A key a map may set on the mapped scenario: a plain dotted key, not one of the keys that say
// what the scenario is.
void check_map_key(const std::string& key, const std::string& at, const std::string& what) {
  if (key.empty() || key.find_first_of(" =\"'[]{}\n\r\t") != std::string::npos) {
    throw scenario_error(at + ": " + what + ": '" + key + "' is not a dotted scenario key");
  }
  for (const auto& part : config::split_path(key)) {
    if (part.empty()) throw scenario_error(at + ": " + what + ": empty part in key '" + key + "'");
  }
  if (scenario_detail::is_identity_key(key) || key.starts_with("map")) {
    throw scenario_error(at + ": " + what + ": '" + key + "' cannot be mapped");
  }
}

// set = ["key=value", ...]: the mapped scenario's overrides.
std::vector<std::string> read_map_sets(const toml::table& t, const std::string& path) {
  std::vector<std::string> out;
  const toml::node* n = t.get("set");
  if (n == nullptr) return out;
  const toml::array* sets = n->as_array();
  if (sets == nullptr) {
    throw scenario_error(position(n->source(), path) +
                         ": map.set: expected a list of \"key=value\" strings");
  }
  for (const toml::node& s : *sets) {
    const auto v = s.value_exact<std::string>();
    if (!v || v->find('=') == std::string::npos || v->front() == '=') {
      throw scenario_error(position(s.source(), path) +
                           ": map.set: each entry is a \"key=value\" string, as --set takes");
    }
    check_map_key(v->substr(0, v->find('=')), position(s.source(), path), "map.set");
    out.push_back(*v);
  }
  return out;
}

// load = { key, values, unit }
void read_map_load(const toml::table& t, const std::string& path, const std::string& where,
                   map_spec& m) {
  const toml::node* load = t.get("load");
  if (load == nullptr || !load->is_table()) {
    throw scenario_error(where + ": map.load: expected { key = \"...\", values = [...] }");
  }
  const toml::table& lt = *load->as_table();
  const std::string load_at = position(lt.source(), path);
  refuse_unknown(lt, path, "map.load", {"key", "values", "unit"}, "key, values, unit");
  m.load_key = map_string(lt, "key", path, load_at, "map.load.key");
  check_map_key(m.load_key, load_at, "map.load.key");
  const toml::node* values = lt.get("values");
  if (values == nullptr || !values->is_array() || values->as_array()->empty()) {
    throw scenario_error(load_at + ": map.load.values: expected a non-empty list");
  }
  if (values->as_array()->size() > max_map_loads) {
    throw scenario_error(load_at + ": map.load.values: more than " + std::to_string(max_map_loads) +
                         " loads");
  }
  bool load_durations = false;
  for (const toml::node& v : *values->as_array()) {
    const std::string at = position(v.source(), path);
    const map_number x = map_number_of(v, at, "map.load.values");
    if (!m.loads.empty() && x.is_duration != load_durations) {
      throw scenario_error(at + ": map.load.values: all durations or all numbers");
    }
    load_durations = x.is_duration;
    m.loads.push_back(scenario_detail::value_of(v, at, "map.load"));
    m.load_values.push_back(x.value);
  }
  m.load_unit = load_durations ? "s" : "";
  if (lt.contains("unit")) m.load_unit = map_string(lt, "unit", path, load_at, "map.load.unit");
}

// trigger = { key, low, high, resolution, unit }
void read_map_trigger(const toml::table& t, const std::string& path, const std::string& where,
                      map_spec& m) {
  const toml::node* trigger = t.get("trigger");
  if (trigger == nullptr || !trigger->is_table()) {
    throw scenario_error(where +
                         ": map.trigger: expected { key = \"...\", low = .., high = .., "
                         "resolution = .. }");
  }
  const toml::table& tt = *trigger->as_table();
  const std::string trigger_at = position(tt.source(), path);
  refuse_unknown(tt, path, "map.trigger", {"key", "low", "high", "resolution", "unit"},
                 "key, low, high, resolution, unit");
  m.trigger_key = map_string(tt, "key", path, trigger_at, "map.trigger.key");
  check_map_key(m.trigger_key, trigger_at, "map.trigger.key");
  if (m.trigger_key == m.load_key) {
    throw scenario_error(trigger_at + ": map.trigger.key: the same key as map.load.key");
  }
  map_number ends[3];
  const char* names[3] = {"low", "high", "resolution"};
  for (int i = 0; i < 3; ++i) {
    const toml::node* n = tt.get(names[i]);
    if (n == nullptr) {
      throw scenario_error(trigger_at + ": map.trigger." + names[i] + ": missing");
    }
    ends[i] =
        map_number_of(*n, position(n->source(), path), std::string("map.trigger.") + names[i]);
    if (ends[i].is_duration != ends[0].is_duration) {
      throw scenario_error(position(n->source(), path) +
                           ": map.trigger: low, high and resolution must all be durations "
                           "(strings) or all numbers");
    }
  }
  m.trigger_is_duration = ends[0].is_duration;
  m.trigger_is_integer = ends[0].is_integer && ends[1].is_integer && ends[2].is_integer;
  m.low = ends[0].value;
  m.high = ends[1].value;
  m.resolution = ends[2].value;
  if (!(m.low >= 0) || !(m.high > m.low)) {
    throw scenario_error(trigger_at + ": map.trigger: needs 0 <= low < high");
  }
  if (!(m.resolution > 0)) {
    throw scenario_error(trigger_at + ": map.trigger.resolution: must be greater than 0");
  }
  m.trigger_unit = m.trigger_is_duration ? "s" : "";
  if (tt.contains("unit")) {
    m.trigger_unit = map_string(tt, "unit", path, trigger_at, "map.trigger.unit");
  }
}

// replications and max_probes: integers in [min, max], `fallback` when absent.
std::uint32_t map_count(const toml::table& t, const std::string& path, const char* key,
                        std::int64_t fallback, std::int64_t min, std::int64_t max) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return static_cast<std::uint32_t>(fallback);
  const auto v = n->value_exact<std::int64_t>();
  if (!v || *v < min || *v > max) {
    throw scenario_error(position(n->source(), path) + ": map." + key +
                         ": expected an integer in [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]");
  }
  return static_cast<std::uint32_t>(*v);
}

map_spec read_map(const toml::table& t, const std::string& path) {
  const std::string where = position(t.source(), path);
  refuse_unknown(t, path, "map",
                 {"scenario", "strategy", "set", "load", "trigger", "replications", "max_probes"},
                 "scenario, strategy, set, load, trigger, replications, max_probes");
  map_spec m;
  m.where = where;
  m.scenario = map_string(t, "scenario", path, where, "map.scenario");
  m.strategy = map_string(t, "strategy", path, where, "map.strategy");
  m.sets = read_map_sets(t, path);
  read_map_load(t, path, where, m);
  read_map_trigger(t, path, where, m);
  m.replications = map_count(t, path, "replications", 3, 1, max_map_replications);
  m.max_probes = map_count(t, path, "max_probes", 12, 2, max_map_probes);
  return m;
}

}  // namespace

std::string map_spec::trigger_toml(double value) const {
  if (trigger_is_duration) {
    return toml_quote(
        format_duration(duration{static_cast<std::int64_t>(std::llround(value * 1e9))}));
  }
  if (trigger_is_integer) return std::to_string(std::llround(value));
  return number_text(value);
}

void scenario::read_maps(const toml::table& root) {
  const toml::node* list = root.get("map");
  if (!list->is_array_of_tables()) {
    throw scenario_error(position(list->source(), source_.path) + ": map: expected [[map]] tables");
  }
  for (const toml::node& item : *list->as_array()) {
    maps_.push_back(read_map(*item.as_table(), source_.path));
  }
}

}  // namespace backoff::sim
