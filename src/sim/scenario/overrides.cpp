// SPDX-License-Identifier: Apache-2.0
#include "overrides.hpp"

#include <algorithm>

#include "config/toml_shape.hpp"
#include "scenario.hpp"

namespace backoff::sim::scenario_detail {

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

}  // namespace backoff::sim::scenario_detail
