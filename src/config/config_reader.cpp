// SPDX-License-Identifier: Apache-2.0
// config_reader (config_reader.hpp): a file's keys read by dotted path, each marked as read, with
// the one-line messages every reader's keys share.
#include "config_reader.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>

#include "backoff/spelling.hpp"
#include "overrides.hpp"
#include "toml_text.hpp"

namespace backoff::config {

config_reader::config_reader(std::shared_ptr<toml::table> root, std::string path,
                             std::map<std::string, std::string, std::less<>> overridden)
    : root_(std::move(root)), path_(std::move(path)), overridden_(std::move(overridden)) {}
config_reader::~config_reader() = default;
config_reader::config_reader(config_reader&&) noexcept = default;
config_reader& config_reader::operator=(config_reader&&) noexcept = default;

const toml::node* config_reader::find(std::string_view key) const {
  const toml::node* at = root_.get();
  for (const auto& part : split_path(key)) {
    if (at == nullptr) return nullptr;
    if (const toml::array* list = at->as_array()) {
      // "clients.0.name": a position in an array of tables.
      std::size_t index = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec != std::errc{} || end != part.data() + part.size()) return nullptr;
      at = list->get(index);
      continue;
    }
    if (!at->is_table()) return nullptr;
    at = at->as_table()->get(part);
  }
  return at;
}

std::vector<std::string> config_reader::table_keys(std::string_view key) {
  const toml::node* n = find(key);
  if (n == nullptr) return {};
  const toml::table* t = n->as_table();
  if (t == nullptr) fail(key, "expected a table, found " + type_name(*n));
  std::vector<std::pair<toml::source_position, std::string>> keys;
  for (const auto& [k, node] : *t) keys.emplace_back(k.source().begin, std::string(k.str()));
  // toml++ orders a table's keys by name; the file's order is the one its author chose.
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.line, a.first.column) < std::pair(b.first.line, b.first.column);
  });
  std::vector<std::string> out;
  for (auto& k : keys) out.push_back(std::move(k.second));
  return out;
}

bool config_reader::is_table(std::string_view key) const {
  const toml::node* n = find(key);
  return n != nullptr && n->is_table();
}

bool config_reader::is_tables(std::string_view key) const {
  const toml::node* n = find(key);
  return n != nullptr && n->is_array_of_tables();
}

std::string config_reader::scalar_text(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = find(key);
  if (n == nullptr) return "";
  if (const auto s = n->value_exact<std::string>()) return *s;
  if (const auto i = n->value_exact<std::int64_t>()) return std::to_string(*i);
  if (const auto b = n->value_exact<bool>()) return *b ? "true" : "false";
  if (n->is_floating_point()) return number_text(n->as_floating_point()->get());
  fail(key, "expected a string, a number or true/false, found " + type_name(*n));
}

std::string config_reader::scalar_toml(std::string_view key) {
  const std::string text = scalar_text(key);
  const toml::node* n = find(key);
  if (n == nullptr || !n->is_string()) return text;
  std::ostringstream quoted;
  quoted << *n->as_string();  // toml++ writes a string as TOML, quoted and escaped
  return quoted.str();
}

std::size_t config_reader::array_size(std::string_view key) {
  const toml::node* n = find(key);
  if (n == nullptr) return 0;
  if (!n->is_array_of_tables() || n->as_array()->empty()) {
    fail(key, "expected tables ([[" + std::string(key) + "]] or a list of { ... }), found " +
                  type_name(*n));
  }
  return n->as_array()->size();
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
  throw config_error(where(key) + ": " + std::string(key) + ": " + message);
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
          if (node.is_array_of_tables() && !node.as_array()->empty()) {
            std::size_t index = 0;
            for (const toml::node& item : *node.as_array()) {
              walk(*item.as_table(), key + "." + std::to_string(index++));
            }
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
          throw config_error(at + (node.is_table() ? ": unknown table '" : ": unknown key '") +
                             key + "'" + did_you_mean(key, known));
        }
      };
  walk(*root_, "");
}

}  // namespace backoff::config
