// SPDX-License-Identifier: Apache-2.0
#include "overrides.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "config_reader.hpp"
#include "toml_shape.hpp"

namespace backoff::config {

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

std::map<std::string, std::string, std::less<>> set_labels(const std::vector<std::string>& sets) {
  std::map<std::string, std::string, std::less<>> labels;
  for (const auto& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    labels[key] = "--set " + key;
  }
  return labels;
}

namespace {

// The key paths a [knobs] entry names: `NAME = "a.b"` or `NAME = ["a.b", "c.d"]` (NAME quoted
// when it holds dots, or written as nested tables); none when `key` is no knob.
std::optional<std::vector<std::string>> knob_targets(const toml::table& root,
                                                     const std::string& key) {
  const toml::table* knobs = root.get_as<toml::table>("knobs");
  if (knobs == nullptr) return std::nullopt;
  const toml::node* knob = knobs->get(key);
  if (knob == nullptr) {
    knob = knobs;
    for (const auto& part : split_path(key)) {
      knob = knob != nullptr && knob->is_table() ? knob->as_table()->get(part) : nullptr;
    }
  }
  if (knob == nullptr || knob->is_table()) return std::nullopt;
  std::vector<std::string> targets;
  if (const auto one = knob->value_exact<std::string>()) targets.push_back(*one);
  if (const toml::array* list = knob->as_array()) {
    for (const toml::node& item : *list) {
      const auto path = item.value_exact<std::string>();
      if (!path) break;
      targets.push_back(*path);
    }
    if (targets.size() != list->size()) targets.clear();
  }
  if (targets.empty()) {
    throw config_error("--set " + key + ": knobs." + key +
                       " must name a key path, or a list of them, such as \"service.db.workers\"");
  }
  return targets;
}

// Puts `value` at the dotted `key` of `root`, making tables on the way; a part that is a number
// indexes an array of tables ("clients.0.arrivals").
void put_value(toml::table& root, const std::string& key, const std::string& named,
               const toml::node& value) {
  const auto parts = split_path(key);
  toml::table* at = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* next = at->get(parts[i]);
    if (next == nullptr) {
      at->insert(parts[i], toml::table{});
      next = at->get(parts[i]);
    }
    if (toml::array* list = next->as_array(); list != nullptr && i + 2 < parts.size()) {
      // "clients.0.arrivals": a position in an array of tables.
      std::size_t index = 0;
      const std::string& part = parts[i + 1];
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec == std::errc{} && end == part.data() + part.size()) {
        if (index >= list->size() || !list->get(index)->is_table()) {
          throw config_error(named + ": " + parts[i] + " has no table " + part + " (" +
                             std::to_string(list->size()) + " of them, from 0)");
        }
        at = list->get(index)->as_table();
        ++i;
        continue;
      }
    }
    if (!next->is_table()) {
      throw config_error(named + ": " + parts[i] + " is not a table");
    }
    at = next->as_table();
  }
  toml::table holder;
  holder.insert("value", value);
  at->insert_or_assign(parts.back(), std::move(*holder.get("value")));
}

}  // namespace

std::vector<std::string> apply_override(toml::table& root, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw config_error("--set " + assignment + ": expected key=value, e.g. server.max_busy=100");
  }
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (text.find_first_of("\n\r") != std::string::npos) {
    throw config_error("--set " + key + ": the value must be on one line");
  }
  if (std::count(key.begin(), key.end(), '.') >= config::max_toml_key_parts) {
    throw config_error("--set " + key.substr(0, 40) + "...: a key of more than " +
                       std::to_string(config::max_toml_key_parts) + " parts");
  }
  for (const auto& part : split_path(key)) {
    if (part.empty()) throw config_error("--set " + assignment + ": empty part in key");
  }
  if (auto problem = config::toml_shape_problem(text, [&](int, int) { return "--set " + key; })) {
    throw config_error(*problem);
  }
  toml::table parsed;
  try {
    parsed = toml::parse("value = " + text, "--set " + key);
  } catch (const toml::parse_error&) {
    // An integer TOML cannot hold would otherwise become a string, and be reported as one.
    const std::string_view digits = std::string_view(text).substr(
        !text.empty() && (text.front() == '-' || text.front() == '+') ? 1 : 0);
    if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
      throw config_error("--set " + key + ": " + text +
                         " is out of range for an integer (at most 9223372036854775807)");
    }
    parsed = toml::table{};
    parsed.insert("value", text);  // a bare word: a string
  }
  const toml::node& value = *parsed.get("value");
  if (auto targets = knob_targets(root, key)) {
    for (const std::string& target : *targets) put_value(root, target, "--set " + key, value);
    return *targets;
  }
  put_value(root, key, "--set " + key, value);
  return {key};
}

}  // namespace backoff::config
