// SPDX-License-Identifier: Apache-2.0
// A scenario's [[strategy]] tables, read into client_strategy (strategy.hpp): each key set and
// validated by the library's backoff::strategy, so that a strategy means the same in a scenario,
// on the command line and in the library.
#include <toml++/toml.h>

#include <algorithm>
#include <limits>
#include <set>

#include "backoff/error.hpp"
#include "backoff/spelling.hpp"
#include "backoff/strategy.hpp"
#include "config/toml_text.hpp"
#include "scenario.hpp"
#include "systems/system_spec.hpp"

namespace backoff::sim {

using config::position;
using config::type_name;

namespace {

// The text strategy::set reads for `key` from a TOML value: max_attempts a TOML integer,
// idempotent a TOML boolean, the others spec strings. `at` starts the message of a bad one.
std::string strategy_value_text(std::string_view key, const toml::node& n, const std::string& at) {
  if (key == "max_attempts") {
    const auto v = n.value_exact<std::int64_t>();
    if (!v || *v < 0 || *v > std::numeric_limits<std::uint32_t>::max()) {
      throw scenario_error(at + "expected an integer >= 0 (0 = unlimited)");
    }
    return std::to_string(*v);
  }
  if (key == "idempotent") {
    const auto v = n.value_exact<bool>();
    if (!v) throw scenario_error(at + "expected true or false, found " + type_name(n));
    return *v ? "true" : "false";
  }
  const auto v = n.value_exact<std::string>();
  if (!v) throw scenario_error(at + "expected a string, found " + type_name(n));
  return *v;
}

// `edge = { NAME = { KEY = VALUE } }` of a system scenario's strategy: each key checked against
// strategy::keys() and the edge's own keys here; its value is checked when the model lays it
// over the edge's defaults.
std::vector<edge_setting> read_edge_settings(const toml::node& edges, const std::string& path) {
  const toml::table* t = edges.as_table();
  if (t == nullptr) {
    throw scenario_error(position(edges.source(), path) +
                         ": strategy.edge: expected a table of edges (edge.NAME.KEY = VALUE)");
  }
  // An edge's own keys beside a strategy's (on_give_up, breaker_asks: docs/SYSTEMS.md).
  std::vector<std::string_view> keys(backoff::strategy::keys().begin(),
                                     backoff::strategy::keys().end());
  keys.insert(keys.end(), std::begin(systems::edge_option_keys),
              std::end(systems::edge_option_keys));
  std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, edge_setting>> found;
  for (const auto& [edge, settings] : *t) {
    const toml::table* s = settings.as_table();
    if (s == nullptr) {
      throw scenario_error(position(settings.source(), path) + ": strategy.edge." +
                           std::string(edge.str()) + ": expected a table of strategy keys");
    }
    for (const auto& [k, node] : *s) {
      const std::string name =
          "strategy.edge." + std::string(edge.str()) + "." + std::string(k.str());
      if (std::find(keys.begin(), keys.end(), k.str()) == keys.end()) {
        throw scenario_error(position(k.source(), path) + ": unknown key '" + name + "'" +
                             did_you_mean(k.str(), {keys.begin(), keys.end()}));
      }
      const std::string where = position(node.source(), path);
      found.push_back({{node.source().begin.line, node.source().begin.column},
                       {std::string(edge.str()), std::string(k.str()),
                        strategy_value_text(k.str(), node, where + ": " + name + ": "), where}});
    }
  }
  // toml++ keeps a table's keys by name: file order is what a reader of messages expects.
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<edge_setting> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

// Every key of strategy::keys() (and `name`), each read by the library's strategy::set; a key
// that is not one gets the library's did-you-mean. max_attempts is a TOML integer, idempotent a
// TOML boolean, the others are spec strings.
// `names`: the names taken by the strategies before this one.
client_strategy read_strategy(const toml::table& t, const std::string& path,
                              std::set<std::string>& names) {
  const auto keys = backoff::strategy::keys();
  for (const auto& [k, node] : t) {
    (void)node;
    if (k.str() == "name" || k.str() == "edge" ||
        std::find(keys.begin(), keys.end(), k.str()) != keys.end()) {
      continue;
    }
    std::vector<std::string_view> known{"name"};
    known.insert(known.end(), keys.begin(), keys.end());
    std::string list;
    for (const std::string_view key : known) list += (list.empty() ? "" : ", ") + std::string(key);
    // `edge` (a system scenario's edge.NAME.KEY) is a candidate for the did-you-mean, not a
    // guard to list.
    known.push_back("edge");
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
    const std::string text = strategy_value_text(key, *n, at);
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
  client_strategy read(std::move(name), where, std::move(guards));
  if (const toml::node* edges = t.get("edge"))
    read.set_edge_settings(read_edge_settings(*edges, path));
  return read;
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

}  // namespace backoff::sim
