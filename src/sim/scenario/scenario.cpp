// SPDX-License-Identifier: Apache-2.0
#include "scenario.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

#include "backoff/aimd_window.hpp"
#include "backoff/error.hpp"
#include "backoff/presets.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/spelling.hpp"
#include "backoff/strategy.hpp"
#include "backoff/throttle.hpp"
#include "config/toml_shape.hpp"

namespace backoff::sim {
namespace {

std::string position(const toml::source_region& region, const std::string& fallback_path) {
  const std::string path = region.path ? *region.path : fallback_path;
  return path + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

// Splits "a.b.c" into its parts.
std::vector<std::string> split_path(std::string_view key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = key.find('.', start);
    parts.emplace_back(key.substr(start, dot == std::string_view::npos ? key.npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

// How messages name the keys the --set overrides gave: "--set KEY".
std::map<std::string, std::string, std::less<>> set_labels(const std::vector<std::string>& sets) {
  std::map<std::string, std::string, std::less<>> labels;
  for (const auto& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    labels[key] = "--set " + key;
  }
  return labels;
}

// Applies one --set key=value to the document.
void apply_override(toml::table& root, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw scenario_error("--set " + assignment + ": expected key=value, e.g. server.max_busy=100");
  }
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (text.find_first_of("\n\r") != std::string::npos) {
    throw scenario_error("--set " + key + ": the value must be on one line");
  }
  if (std::count(key.begin(), key.end(), '.') >= config::max_toml_key_parts) {
    throw scenario_error("--set " + key.substr(0, 40) + "...: a key of more than " +
                         std::to_string(config::max_toml_key_parts) + " parts");
  }
  for (const auto& part : split_path(key)) {
    if (part.empty()) throw scenario_error("--set " + assignment + ": empty part in key");
  }
  if (auto problem = config::toml_shape_problem(text, [&](int, int) { return "--set " + key; })) {
    throw scenario_error(*problem);
  }
  toml::table parsed;
  try {
    parsed = toml::parse("value = " + text, "--set " + key);
  } catch (const toml::parse_error&) {
    // An integer TOML cannot hold would otherwise become a string, and be reported as one.
    const std::string_view digits = std::string_view(text).substr(
        !text.empty() && (text.front() == '-' || text.front() == '+') ? 1 : 0);
    if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
      throw scenario_error("--set " + key + ": " + text +
                           " is out of range for an integer (at most 9223372036854775807)");
    }
    parsed = toml::table{};
    parsed.insert("value", text);  // a bare word: a string
  }
  toml::node* value = parsed.get("value");
  const auto parts = split_path(key);
  toml::table* at = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* next = at->get(parts[i]);
    if (next == nullptr) {
      at->insert(parts[i], toml::table{});
      next = at->get(parts[i]);
    }
    if (!next->is_table()) {
      throw scenario_error("--set " + key + ": " + parts[i] + " is not a table");
    }
    at = next->as_table();
  }
  at->insert_or_assign(parts.back(), std::move(*value));
}

std::string number_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

config_reader::config_reader(std::shared_ptr<toml::table> root, std::string path,
                             std::map<std::string, std::string, std::less<>> overridden)
    : root_(std::move(root)), path_(std::move(path)), overridden_(std::move(overridden)) {}
config_reader::~config_reader() = default;
config_reader::config_reader(config_reader&&) noexcept = default;
config_reader& config_reader::operator=(config_reader&&) noexcept = default;

const toml::node* config_reader::find(std::string_view key) const {
  const toml::node* at = root_.get();
  for (const auto& part : split_path(key)) {
    if (at == nullptr || !at->is_table()) return nullptr;
    at = at->as_table()->get(part);
  }
  return at;
}

bool config_reader::has(std::string_view key) const {
  return find(key) != nullptr;
}

std::string config_reader::where(const toml::node* node, std::string_view key) const {
  if (const auto it = overridden_.find(key); it != overridden_.end()) return it->second;
  if (node != nullptr) return position(node->source(), path_);
  return path_;
}

std::string config_reader::where(std::string_view key) const {
  return where(find(key), key);
}

void config_reader::fail(std::string_view key, const std::string& message) const {
  throw scenario_error(where(key) + ": " + std::string(key) + ": " + message);
}

std::int64_t config_reader::integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                                    std::int64_t max) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return fallback;
  const auto v = n->value_exact<std::int64_t>();
  if (!v) fail(key, "expected an integer, found " + type_name(*n));
  if (*v < min || *v > max) {
    fail(key, std::to_string(*v) + " is out of range [" + std::to_string(min) + ", " +
                  std::to_string(max) + "]");
  }
  return *v;
}

double config_reader::number(std::string_view key, double fallback, double min, double max) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return fallback;
  std::optional<double> v;
  if (n->is_floating_point()) v = n->as_floating_point()->get();
  if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
  if (!v) fail(key, "expected a number, found " + type_name(*n));
  if (!std::isfinite(*v) || *v < min || *v > max) {
    fail(key,
         number_text(*v) + " is out of range [" + number_text(min) + ", " + number_text(max) + "]");
  }
  return *v;
}

duration config_reader::duration_value(std::string_view key, duration fallback, duration min) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return fallback;
  const auto text = n->value_exact<std::string>();
  if (!text) {
    fail(key, "expected a duration string such as \"100ms\", found " + type_name(*n));
  }
  duration d{};
  try {
    d = parse_duration(*text);
  } catch (const parse_error& e) {
    fail(key, e.what());
  }
  if (d < min) fail(key, "must be at least " + format_duration(min));
  return d;
}

bool config_reader::boolean(std::string_view key, bool fallback) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return fallback;
  const auto v = n->value_exact<bool>();
  if (!v) fail(key, "expected true or false, found " + type_name(*n));
  return *v;
}

std::string config_reader::string(std::string_view key, std::string_view fallback) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return std::string(fallback);
  const auto v = n->value_exact<std::string>();
  if (!v) fail(key, "expected a string, found " + type_name(*n));
  return *v;
}

std::vector<std::string> config_reader::strings(std::string_view key,
                                                const std::vector<std::string>& fallback) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return fallback;
  const toml::array* list = n->as_array();
  if (list == nullptr) fail(key, "expected an array of strings, found " + type_name(*n));
  std::vector<std::string> out;
  for (const toml::node& item : *list) {
    const auto v = item.value_exact<std::string>();
    if (!v) fail(key, "expected an array of strings, found " + type_name(item) + " in it");
    out.push_back(*v);
  }
  return out;
}

void config_reader::consume(std::string_view key) {
  used_.emplace(key);
}

void config_reader::finish() const {
  // Depth-first in file order; a key is known when it, or a table above it, was read.
  std::function<void(const toml::table&, const std::string&)> walk =
      [&](const toml::table& t, const std::string& prefix) {
        for (const auto& [k, node] : t) {
          const std::string key =
              prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
          if (used_.contains(key)) continue;
          if (node.is_table() && !node.as_table()->empty()) {
            walk(*node.as_table(), key);
            continue;
          }
          // An empty table is known when a key below it was read (an empty [workload] leaves
          // the model's defaults); any other, [bogus] or [workload.extra], is a mistake.
          const auto below = used_.lower_bound(key + ".");
          if (node.is_table() && below != used_.end() && below->starts_with(key + ".")) continue;
          const auto it = overridden_.find(key);
          const std::string at = it != overridden_.end() ? it->second : position(k.source(), path_);
          // The keys the model asked for (present or not) are what a misspelt one meant.
          const std::vector<std::string_view> known(used_.begin(), used_.end());
          throw scenario_error(at + (node.is_table() ? ": unknown table '" : ": unknown key '") +
                               key + "'" + did_you_mean(key, known));
        }
      };
  walk(*root_, "");
}

scenario scenario::load(const scenario_source& source, const std::vector<std::string>& sets) {
  if (auto problem = config::toml_shape_problem(source.text, [&](int line, int column) {
        return source.path + ":" + std::to_string(line) + ":" + std::to_string(column);
      })) {
    throw scenario_error(*problem);
  }
  auto root = std::make_shared<toml::table>();
  try {
    *root = toml::parse(source.text, source.path);
  } catch (const toml::parse_error& e) {
    std::string message(e.description());
    throw scenario_error(position(e.source(), source.path) + ": " + message);
  }
  for (const auto& s : sets) apply_override(*root, s);
  auto overridden = set_labels(sets);
  // What every point starts from, kept before the reader marks anything: the tree without its
  // [sweep] table, so that a point neither parses the file again nor expands the axes again
  // (which made checking a sweep quadratic in its number of points).
  std::shared_ptr<const toml::table> base;
  if (root->contains("sweep") || root->contains("replications")) {
    auto copy = std::make_shared<toml::table>(*root);
    copy->erase("sweep");
    base = std::move(copy);
  }
  scenario sc = load(source, sets, std::move(root), std::move(overridden), nullptr);
  sc.base_ = std::move(base);
  return sc;
}

scenario scenario::load(const scenario_source& source, const std::vector<std::string>& sets,
                        std::shared_ptr<toml::table> root,
                        std::map<std::string, std::string, std::less<>> overridden,
                        const scenario* point_of) {
  scenario sc{config_reader(root, source.path, std::move(overridden))};
  sc.source_ = source;
  sc.sets_ = sets;
  config_reader& r = sc.config_;
  if (point_of == nullptr && root->contains("map")) {
    // A metastable map: its own keys only, every one read here (no model reads the rest).
    r.consume("map");
    sc.read_maps(*root);
    for (const char* key : {"sweep", "strategy"}) {
      if (root->contains(key)) {
        r.fail(key, std::string("a metastable map ([[map]]) has no ") + key +
                        " of its own: each [[map]] names its loads and the mapped scenario's "
                        "strategy");
      }
    }
    // A top-level `replications` (e.g. --set replications=1 given to the whole suite) sets the
    // runs per probe of every map.
    if (r.has("replications")) {
      const auto n = static_cast<std::uint32_t>(r.integer("replications", 1, 1, 1000));
      for (map_spec& m : sc.maps_) m.replications = n;
    }
    sc.name_ = r.string("scenario", "");
    if (sc.name_.empty()) r.fail("scenario", "missing: every scenario needs a name");
    sc.model_ = r.string("model", "metastable-map");
    if (sc.model_ != "metastable-map") {
      r.fail("model",
             "a scenario with [[map]] tables is a metastable map: leave `model` out or "
             "set it to \"metastable-map\"");
    }
    sc.seed_ = static_cast<std::uint64_t>(
        r.integer("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
    sc.about_.description = r.string("about.description", "");
    sc.about_.source = r.string("about.source", "");
    sc.about_.claim = r.string("about.claim", "");
    r.finish();
    return sc;
  }
  if (point_of != nullptr) {
    r.consume("replications");  // checked by the sweep; a point is one run
  } else {
    sc.read_sweep(*root);
  }
  sc.name_ = r.string("scenario", "");
  if (sc.name_.empty()) r.fail("scenario", "missing: every scenario needs a name");
  sc.model_ = r.string("model", sc.name_);
  if (sc.model_.empty()) {
    r.fail("model", "empty: name a model, or leave the key out to use the scenario's name");
  }
  sc.seed_ =
      static_cast<std::uint64_t>(r.integer("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  sc.about_.description = r.string("about.description", "");
  sc.about_.source = r.string("about.source", "");
  sc.about_.claim = r.string("about.claim", "");

  r.consume("strategy");
  if (point_of != nullptr) {
    sc.strategies_ = point_of->strategies_;
  } else {
    sc.read_strategies(*root);
  }
  return sc;
}

namespace {

// Every key of strategy::keys() (and `name`), each read by the library's strategy::set; a key
// that is not one gets the library's did-you-mean. max_attempts is a TOML integer, the others are
// spec strings.
// `names`: the names taken by the strategies before this one.
client_strategy read_strategy(const toml::table& t, const std::string& path,
                              std::set<std::string>& names) {
  const auto keys = backoff::strategy::keys();
  for (const auto& [k, node] : t) {
    (void)node;
    if (k.str() == "name" || std::find(keys.begin(), keys.end(), k.str()) != keys.end()) continue;
    std::vector<std::string_view> known{"name"};
    known.insert(known.end(), keys.begin(), keys.end());
    std::string list;
    for (const std::string_view key : known) list += (list.empty() ? "" : ", ") + std::string(key);
    throw scenario_error(position(k.source(), path) + ": unknown strategy key '" +
                         std::string(k.str()) + "'" + did_you_mean(k.str(), known) +
                         " (known: " + list + ")");
  }
  const std::string where = position(t.source(), path);
  std::string name;
  if (const toml::node* n = t.get("name")) {
    const auto v = n->value_exact<std::string>();
    if (!v) {
      throw scenario_error(position(n->source(), path) +
                           ": strategy.name: expected a string, found " + type_name(*n));
    }
    name = *v;
  }
  if (name.empty()) throw scenario_error(where + ": strategy: missing name");
  if (!names.insert(name).second) {
    throw scenario_error(where + ": strategy: name '" + name + "' used twice");
  }
  backoff::strategy guards;
  for (const std::string_view key : keys) {
    const toml::node* n = t.get(key);
    if (n == nullptr) continue;
    const std::string at = position(n->source(), path) + ": strategy." + std::string(key) + ": ";
    std::string text;
    if (key == "max_attempts") {
      const auto v = n->value_exact<std::int64_t>();
      if (!v || *v < 0 || *v > std::numeric_limits<std::uint32_t>::max()) {
        throw scenario_error(at + "expected an integer >= 0 (0 = unlimited)");
      }
      text = std::to_string(*v);
    } else {
      const auto v = n->value_exact<std::string>();
      if (!v) throw scenario_error(at + "expected a string, found " + type_name(*n));
      text = *v;
    }
    try {
      guards.set(key, text);
    } catch (const parse_error& e) {
      throw scenario_error(at + e.what());
    }
  }
  try {
    guards.validate();
  } catch (const parse_error& e) {
    throw scenario_error(where + ": strategy " + name + ": " + e.what());
  }
  return client_strategy(std::move(name), where, std::move(guards));
}

}  // namespace

void scenario::read_strategies(const toml::table& root) {
  const std::string& path = source_.path;
  const toml::node* list = root.get("strategy");
  if (list == nullptr) {
    throw scenario_error(path + ":1:1: no [[strategy]]: a scenario needs at least one");
  }
  if (!list->is_array_of_tables()) {
    throw scenario_error(position(list->source(), path) +
                         ": strategy: expected [[strategy]] tables");
  }
  std::set<std::string> names;
  for (const toml::node& item : *list->as_array()) {
    strategies_.push_back(read_strategy(*item.as_table(), path, names));
  }
}

namespace {

// A TOML basic string holding `text`.
std::string toml_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

report::sweep_value value_of(const toml::node& n, const std::string& at, const std::string& key) {
  report::sweep_value v;
  if (const auto i = n.value_exact<std::int64_t>()) {
    v.type = report::sweep_value::kind::integer;
    v.text = v.toml = std::to_string(*i);
  } else if (n.is_floating_point()) {
    const double d = n.as_floating_point()->get();
    if (!std::isfinite(d)) throw scenario_error(at + ": sweep." + key + ": values must be finite");
    v.type = report::sweep_value::kind::number;
    v.text = v.toml = number_text(d);
  } else if (const auto b = n.value_exact<bool>()) {
    v.type = report::sweep_value::kind::boolean;
    v.text = v.toml = *b ? "true" : "false";
  } else if (const auto t = n.value_exact<std::string>()) {
    v.type = report::sweep_value::kind::string;
    v.text = *t;
    v.toml = toml_quote(*t);
  } else {
    throw scenario_error(at + ": sweep." + key + ": values must be integers, numbers, strings or " +
                         "booleans, found " + type_name(n));
  }
  return v;
}

constexpr std::size_t max_axis_values = 100'000;
// The points of a whole grid: points() lists them all, and the runner keeps a result for each.
constexpr std::size_t max_sweep_points = 1'000'000;

// { start, stop, step }: integers, numbers, or duration strings; stop included when on the grid.
std::vector<report::sweep_value> range_values(const toml::table& t, const std::string& at,
                                              const std::string& key) {
  for (const auto& [k, node] : t) {
    if (k.str() != "start" && k.str() != "stop" && k.str() != "step") {
      throw scenario_error(position(k.source(), at) + ": sweep." + key + ": unknown range key '" +
                           std::string(k.str()) + "' (known: start, stop, step)");
    }
    (void)node;
  }
  const toml::node* start = t.get("start");
  const toml::node* stop = t.get("stop");
  const toml::node* step = t.get("step");
  if (start == nullptr || stop == nullptr || step == nullptr) {
    throw scenario_error(at + ": sweep." + key + ": a range needs start, stop and step");
  }
  const auto fail = [&](const std::string& why) -> void {
    throw scenario_error(at + ": sweep." + key + ": " + why);
  };
  std::vector<report::sweep_value> out;
  // Integers and durations: exact, so that the last value never steps past stop (and int64).
  const auto exact_count_of = [&](std::int64_t first, std::int64_t last, std::int64_t by) {
    if (by <= 0) fail("step must be greater than 0");
    if (last < first) fail("stop must not be less than start");
    __extension__ typedef __int128 i128;
    const i128 n = (i128{last} - i128{first}) / by + 1;
    if (n > static_cast<i128>(max_axis_values)) {
      fail("more than " + std::to_string(max_axis_values) + " values");
    }
    return static_cast<std::size_t>(n);
  };
  const auto count_of = [&](long double first, long double last, long double by) {
    if (!(by > 0)) fail("step must be greater than 0");
    if (last < first) fail("stop must not be less than start");
    const long double n = std::floor((last - first) / by * (1 + 1e-12L)) + 1;
    if (n > static_cast<long double>(max_axis_values)) {
      fail("more than " + std::to_string(max_axis_values) + " values");
    }
    return static_cast<std::size_t>(n);
  };
  const auto s0 = start->value_exact<std::string>();
  if (s0) {
    const auto s1 = stop->value_exact<std::string>();
    const auto s2 = step->value_exact<std::string>();
    if (!s1 || !s2) fail("start, stop and step must all be durations (strings) or all numbers");
    duration a{}, b{}, c{};
    try {
      a = parse_duration(*s0);
      b = parse_duration(*s1);
      c = parse_duration(*s2);
    } catch (const parse_error& e) {
      fail(e.what());
    }
    const std::size_t n = exact_count_of(a.count(), b.count(), c.count());
    for (std::size_t i = 0; i < n; ++i) {
      const std::string text = format_duration(a + c * static_cast<std::int64_t>(i));
      out.push_back({toml_quote(text), text, report::sweep_value::kind::string});
    }
    return out;
  }
  const auto i0 = start->value_exact<std::int64_t>();
  const auto i1 = stop->value_exact<std::int64_t>();
  const auto i2 = step->value_exact<std::int64_t>();
  if (i0 && i1 && i2) {
    const std::size_t n = exact_count_of(*i0, *i1, *i2);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string text = std::to_string(*i0 + *i2 * static_cast<std::int64_t>(i));
      out.push_back({text, text, report::sweep_value::kind::integer});
    }
    return out;
  }
  const auto num = [&](const toml::node* n) -> double {
    if (n->is_integer()) return static_cast<double>(n->as_integer()->get());
    if (n->is_floating_point() && std::isfinite(n->as_floating_point()->get())) {
      return n->as_floating_point()->get();
    }
    fail("start, stop and step must all be durations (strings) or all numbers");
    return 0;
  };
  const double a = num(start), b = num(stop), c = num(step);
  const std::size_t n = count_of(a, b, c);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string text = number_text(a + c * static_cast<double>(i));
    out.push_back({text, text, report::sweep_value::kind::number});
  }
  return out;
}

}  // namespace

void scenario::read_sweep(const toml::table& root) {
  replications_ = static_cast<std::uint32_t>(config_.integer("replications", 1, 1, 1'000'000));
  const toml::node* sweep = root.get("sweep");
  if (sweep == nullptr) return;
  config_.consume("sweep");
  if (!sweep->is_table()) config_.fail("sweep", "expected a table of keys and their values");
  struct found {
    sweep_axis axis;
    toml::source_position at;
  };
  std::vector<found> all;
  std::size_t listed = 0;
  // A key a --set gave or replaced (itself or a table above it) is named by that --set: its
  // place in the file, if it has one, holds something else.
  const auto place = [&](const toml::key& k, const std::string& key) {
    const std::string full = "sweep." + key;
    for (const auto& s : sets_) {
      const std::string set = s.substr(0, s.find('='));
      if (full == set || full.starts_with(set + ".")) return "--set " + set;
    }
    return position(k.source(), source_.path);
  };
  std::function<void(const toml::table&, const std::string&)> walk =
      [&](const toml::table& t, const std::string& prefix) {
        for (const auto& [k, node] : t) {
          const std::string key =
              prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
          const std::string at = place(k, key);
          sweep_axis axis{key, at, {}};
          if (const toml::array* list = node.as_array()) {
            if (list->empty()) throw scenario_error(at + ": sweep." + key + ": the list is empty");
            if (list->size() > max_axis_values) {
              throw scenario_error(at + ": sweep." + key + ": more than " +
                                   std::to_string(max_axis_values) + " values");
            }
            for (const toml::node& item : *list) axis.values.push_back(value_of(item, at, key));
          } else if (const toml::table* sub = node.as_table()) {
            if (sub->contains("start") || sub->contains("stop") || sub->contains("step")) {
              axis.values = range_values(*sub, at, key);
            } else {
              walk(*sub, key);
              continue;
            }
          } else {
            throw scenario_error(at + ": sweep." + key +
                                 ": expected a list of values or { start, stop, step }, found " +
                                 type_name(node));
          }
          // Bounds the memory before the grid is checked: any grid within max_sweep_points lists
          // fewer values than this (pinned axes aside, each at most max_axis_values).
          listed += axis.values.size();
          if (listed > max_sweep_points + (sets_.size() + 1) * max_axis_values + all.size()) {
            throw scenario_error(at + ": sweep." + key + ": the grid would have more than " +
                                 std::to_string(max_sweep_points) + " points");
          }
          all.push_back({std::move(axis), k.source().begin});
        }
      };
  walk(*sweep->as_table(), "");
  std::stable_sort(all.begin(), all.end(), [](const found& a, const found& b) {
    return a.at.line != b.at.line ? a.at.line < b.at.line : a.at.column < b.at.column;
  });
  std::size_t grid = 1;
  for (auto& f : all) {
    // A --set of the swept key itself pins it: the axis goes.
    const bool pinned = std::any_of(sets_.begin(), sets_.end(), [&](const std::string& s) {
      return s.substr(0, s.find('=')) == f.axis.key;
    });
    if (pinned) continue;
    if (grid > max_sweep_points / f.axis.values.size()) {
      throw scenario_error(f.axis.where + ": sweep." + f.axis.key + ": the grid would have more " +
                           "than " + std::to_string(max_sweep_points) + " points");
    }
    grid *= f.axis.values.size();
    if (f.axis.key == "seed" || f.axis.key == "scenario" || f.axis.key == "model" ||
        f.axis.key.starts_with("about.") || f.axis.key == "replications" ||
        f.axis.key.starts_with("strategy") || f.axis.key.starts_with("sweep")) {
      throw scenario_error(f.axis.where + ": sweep." + f.axis.key +
                           ": cannot be swept (use replications for seeds)");
    }
    axes_.push_back(std::move(f.axis));
  }
}

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
  for (const auto& part : split_path(key)) {
    if (part.empty()) throw scenario_error(at + ": " + what + ": empty part in key '" + key + "'");
  }
  if (key == "seed" || key == "scenario" || key == "model" || key == "replications" ||
      key.starts_with("about.") || key.starts_with("strategy") || key.starts_with("sweep") ||
      key.starts_with("map")) {
    throw scenario_error(at + ": " + what + ": '" + key + "' cannot be mapped");
  }
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
  const std::string& path = source_.path;
  const toml::node* list = root.get("map");
  if (!list->is_array_of_tables()) {
    throw scenario_error(position(list->source(), path) + ": map: expected [[map]] tables");
  }
  for (const toml::node& item : *list->as_array()) {
    const toml::table& t = *item.as_table();
    const std::string where = position(t.source(), path);
    refuse_unknown(t, path, "map",
                   {"scenario", "strategy", "set", "load", "trigger", "replications", "max_probes"},
                   "scenario, strategy, set, load, trigger, replications, max_probes");
    map_spec m;
    m.where = where;
    m.scenario = map_string(t, "scenario", path, where, "map.scenario");
    m.strategy = map_string(t, "strategy", path, where, "map.strategy");
    if (const toml::node* n = t.get("set")) {
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
        m.sets.push_back(*v);
      }
    }
    // load = { key, values, unit }
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
      throw scenario_error(load_at + ": map.load.values: more than " +
                           std::to_string(max_map_loads) + " loads");
    }
    bool load_durations = false;
    for (const toml::node& v : *values->as_array()) {
      const std::string at = position(v.source(), path);
      const map_number x = map_number_of(v, at, "map.load.values");
      if (!m.loads.empty() && x.is_duration != load_durations) {
        throw scenario_error(at + ": map.load.values: all durations or all numbers");
      }
      load_durations = x.is_duration;
      m.loads.push_back(value_of(v, at, "map.load"));
      m.load_values.push_back(x.value);
    }
    m.load_unit = load_durations ? "s" : "";
    if (lt.contains("unit")) m.load_unit = map_string(lt, "unit", path, load_at, "map.load.unit");
    // trigger = { key, low, high, resolution, unit }
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
    const auto count = [&](const char* key, std::int64_t fallback, std::int64_t min,
                           std::int64_t max) -> std::uint32_t {
      const toml::node* n = t.get(key);
      if (n == nullptr) return static_cast<std::uint32_t>(fallback);
      const auto v = n->value_exact<std::int64_t>();
      if (!v || *v < min || *v > max) {
        throw scenario_error(position(n->source(), path) + ": map." + key +
                             ": expected an integer in [" + std::to_string(min) + ", " +
                             std::to_string(max) + "]");
      }
      return static_cast<std::uint32_t>(*v);
    };
    m.replications = count("replications", 3, 1, max_map_replications);
    m.max_probes = count("max_probes", 12, 2, max_map_probes);
    maps_.push_back(std::move(m));
  }
}

std::string scenario::fingerprint() const {
  // FNV-1a, 64 bits: stable across platforms and runs, unlike std::hash.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::string_view bytes) {
    for (const char c : bytes) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
    h ^= 0xff;  // a separator no text can fake
    h *= 0x100000001b3ULL;
  };
  mix(source_.text);
  for (const auto& s : sets_) mix(s);
  mix(std::to_string(seed_));
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::size_t scenario::point_count() const {
  std::size_t total = 1;
  for (const auto& a : axes_) total *= a.values.size();
  return total;
}

sweep_point scenario::point(std::size_t index) const {
  sweep_point p;
  p.index = index;
  std::size_t rest = index;
  p.params.resize(axes_.size());
  for (std::size_t k = axes_.size(); k-- > 0;) {  // the last axis varies fastest
    const auto n = axes_[k].values.size();
    p.params[k] = {&axes_[k], &axes_[k].values[rest % n]};
    rest /= n;
  }
  return p;
}

std::vector<sweep_point> scenario::points() const {
  std::vector<sweep_point> out;
  const std::size_t total = point_count();
  out.reserve(total);
  for (std::size_t i = 0; i < total; ++i) out.push_back(point(i));
  return out;
}

scenario scenario::at(const sweep_point& point) const {
  auto root = base_ ? std::make_shared<toml::table>(*base_) : std::make_shared<toml::table>();
  auto overridden = set_labels(sets_);
  // A sweep point's values: named in messages by the sweep entry that set them.
  for (const auto& [axis, value] : point.params) {
    apply_override(*root, axis->key + "=" + value->toml);
    overridden[axis->key] = axis->where + " (sweep " + axis->key + "=" + value->text + ")";
  }
  scenario sc = load(source_, sets_, std::move(root), std::move(overridden), this);
  sc.seed_ = seed_;
  return sc;
}

}  // namespace backoff::sim
