// SPDX-License-Identifier: Apache-2.0
// Typed access to a TOML file's keys by dotted path, with defaults, bounds and one-line messages
// that name the key's place: what the simulator's scenarios and the system files (src/systems)
// are read through, below every driver that reads them. Each key read is marked; whatever no one
// read is an unknown key (finish()). Errors are config_error, one line, `file:line:col: message`.
//
//   config_reader keys{root, "mine.toml", set_labels(sets)};   // root: a parsed toml::table
//   auto workers = keys.integer("service.api.workers", 8, 0, 100'000'000);
//   keys.finish();                                   // throws on the first key nobody read
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"

namespace toml {
inline namespace v3 {
class table;
class node;
}  // namespace v3
}  // namespace toml

namespace backoff::config {

// A file (or a scenario) that cannot be read. The message is one line: control characters from the
// file (a TOML key or string may hold "\n"), from --set or from a model are escaped here, whoever
// throws.
class config_error : public std::runtime_error {
 public:
  explicit config_error(const std::string& message)
      : std::runtime_error(escape_controls(message)) {}
  explicit config_error(const char* message) : config_error(std::string(message)) {}
};

// Typed access to a file's keys by dotted path, with defaults and bounds.
class config_reader {
 public:
  // `overridden`: keys set from outside the file, each with how to name it in messages.
  config_reader(std::shared_ptr<toml::table> root, std::string path,
                std::map<std::string, std::string, std::less<>> overridden);
  ~config_reader();
  config_reader(config_reader&&) noexcept;
  config_reader& operator=(config_reader&&) noexcept;

  bool has(std::string_view key) const;
  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max);
  double number(std::string_view key, double fallback, double min, double max);
  duration duration_value(std::string_view key, duration fallback, duration min = duration{0});
  bool boolean(std::string_view key, bool fallback);
  std::string string(std::string_view key, std::string_view fallback);
  // An array of strings.
  std::vector<std::string> strings(std::string_view key, const std::vector<std::string>& fallback);

  // The keys of a table, in file order (none when it is absent); the table itself is not marked
  // read, its keys are, as the caller reads them. Array elements are named by position:
  // array_size("clients") tables, read as "clients.0.name", "clients.1.name", ...
  std::vector<std::string> table_keys(std::string_view key);
  bool is_table(std::string_view key) const;
  bool is_tables(std::string_view key) const;  // an array of tables
  // A string, number or boolean as text ("4ms", "0.5", "true"); scalar_toml quotes a string as
  // TOML would ("\"4ms\""). Both mark the key read.
  std::string scalar_text(std::string_view key);
  std::string scalar_toml(std::string_view key);
  // How many tables an array of tables holds (0 when absent; fails when it is something else).
  std::size_t array_size(std::string_view key);

  // Marks a whole sub-table as handled (e.g. [[strategy]], read separately).
  void consume(std::string_view key);
  // Throws config_error at the first key (in file order) that nobody read.
  void finish() const;

  // "file:line:col" (or "--set key") of a key, for messages of the caller's own.
  std::string where(std::string_view key) const;
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  const std::string& path() const noexcept { return path_; }

 private:
  const toml::node* find(std::string_view key) const;
  std::string where(const toml::node* node, std::string_view key) const;

  std::shared_ptr<toml::table> root_;
  std::string path_;
  std::map<std::string, std::string, std::less<>> overridden_;
  std::set<std::string, std::less<>> used_;
};

}  // namespace backoff::config
