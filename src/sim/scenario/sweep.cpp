// SPDX-License-Identifier: Apache-2.0
// A scenario's [sweep] table and `replications` (scenario.hpp): the axes, each a list of values or
// a range, in file order, and the bounds that keep a grid within memory before it is walked.
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "config/toml_text.hpp"
#include "scenario.hpp"
#include "sweep_values.hpp"

namespace backoff::sim {

using config::number_text;
using config::position;
using config::toml_quote;
using config::type_name;

namespace scenario_detail {

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

bool is_identity_key(std::string_view key) {
  return key == "seed" || key == "scenario" || key == "model" || key.starts_with("about.") ||
         key == "replications" || key.starts_with("strategy") || key.starts_with("sweep");
}

}  // namespace scenario_detail

namespace {

constexpr std::size_t max_axis_values = 100'000;
// The points of a whole grid: points() lists them all, and the runner keeps a result for each.
constexpr std::size_t max_sweep_points = 1'000'000;

// Where a sweep entry stands, for its messages: "AT: sweep.KEY: why".
struct sweep_entry_place {
  const std::string& at;
  const std::string& key;

  [[noreturn]] void fail(const std::string& why) const {
    throw scenario_error(at + ": sweep." + key + ": " + why);
  }
};

// Integers and durations: exact, so that the last value never steps past stop (and int64).
std::size_t exact_range_count(const sweep_entry_place& place, std::int64_t first, std::int64_t last,
                              std::int64_t by) {
  if (by <= 0) place.fail("step must be greater than 0");
  if (last < first) place.fail("stop must not be less than start");
  __extension__ typedef __int128 i128;
  const i128 n = (i128{last} - i128{first}) / by + 1;
  if (n > static_cast<i128>(max_axis_values)) {
    place.fail("more than " + std::to_string(max_axis_values) + " values");
  }
  return static_cast<std::size_t>(n);
}

// Numbers: stop is included when rounding leaves it a hair past the last step.
std::size_t number_range_count(const sweep_entry_place& place, long double first, long double last,
                               long double by) {
  if (!(by > 0)) place.fail("step must be greater than 0");
  if (last < first) place.fail("stop must not be less than start");
  const long double n = std::floor((last - first) / by * (1 + 1e-12L)) + 1;
  if (n > static_cast<long double>(max_axis_values)) {
    place.fail("more than " + std::to_string(max_axis_values) + " values");
  }
  return static_cast<std::size_t>(n);
}

constexpr const char* mixed_range_ends =
    "start, stop and step must all be durations (strings) or all numbers";

std::vector<report::sweep_value> duration_range(const sweep_entry_place& place,
                                                const std::string& start, const toml::node& stop,
                                                const toml::node& step) {
  const auto stop_text = stop.value_exact<std::string>();
  const auto step_text = step.value_exact<std::string>();
  if (!stop_text || !step_text) place.fail(mixed_range_ends);
  duration first{}, last{}, by{};
  try {
    first = parse_duration(start);
    last = parse_duration(*stop_text);
    by = parse_duration(*step_text);
  } catch (const parse_error& e) {
    place.fail(e.what());
  }
  const std::size_t n = exact_range_count(place, first.count(), last.count(), by.count());
  std::vector<report::sweep_value> out;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string text = format_duration(first + by * static_cast<std::int64_t>(i));
    out.push_back({toml_quote(text), text, report::sweep_value::kind::string});
  }
  return out;
}

std::vector<report::sweep_value> integer_range(const sweep_entry_place& place, std::int64_t first,
                                               std::int64_t last, std::int64_t by) {
  const std::size_t n = exact_range_count(place, first, last, by);
  std::vector<report::sweep_value> out;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string text = std::to_string(first + by * static_cast<std::int64_t>(i));
    out.push_back({text, text, report::sweep_value::kind::integer});
  }
  return out;
}

// An end of a number range: an integer, or a finite number.
double range_number(const sweep_entry_place& place, const toml::node& n) {
  if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
  if (n.is_floating_point() && std::isfinite(n.as_floating_point()->get())) {
    return n.as_floating_point()->get();
  }
  place.fail(mixed_range_ends);
}

std::vector<report::sweep_value> number_range(const sweep_entry_place& place,
                                              const toml::node& start, const toml::node& stop,
                                              const toml::node& step) {
  const double first = range_number(place, start), last = range_number(place, stop),
               by = range_number(place, step);
  const std::size_t n = number_range_count(place, first, last, by);
  std::vector<report::sweep_value> out;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string text = number_text(first + by * static_cast<double>(i));
    out.push_back({text, text, report::sweep_value::kind::number});
  }
  return out;
}

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
  const sweep_entry_place place{at, key};
  const toml::node* start = t.get("start");
  const toml::node* stop = t.get("stop");
  const toml::node* step = t.get("step");
  if (start == nullptr || stop == nullptr || step == nullptr) {
    place.fail("a range needs start, stop and step");
  }
  if (const auto text = start->value_exact<std::string>()) {
    return duration_range(place, *text, *stop, *step);
  }
  const auto first = start->value_exact<std::int64_t>();
  const auto last = stop->value_exact<std::int64_t>();
  const auto by = step->value_exact<std::int64_t>();
  if (first && last && by) return integer_range(place, *first, *last, *by);
  return number_range(place, *start, *stop, *step);
}

// An axis with the place of its key, to put the axes in file order: toml++ walks a table's keys
// in its own order.
struct placed_axis {
  sweep_axis axis;
  toml::source_position at;
};

// Finds the axes of a [sweep] table: each list of values or range is one; a table that is neither
// names deeper keys ([sweep.outage], or outage = { duration = [...] }).
class axis_finder {
 public:
  // `sets`: the scenario's --set overrides, which name the entries they gave.
  axis_finder(const std::vector<std::string>& sets, const std::string& path)
      : sets_(sets), path_(path) {}

  void walk(const toml::table& t, const std::string& prefix) {
    for (const auto& [k, node] : t) {
      const std::string key =
          prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      const std::string at = place(k, key);
      sweep_axis axis{key, at, {}};
      if (const toml::array* list = node.as_array()) {
        axis.values = list_values(*list, at, key);
      } else if (const toml::table* sub = node.as_table()) {
        if (!sub->contains("start") && !sub->contains("stop") && !sub->contains("step")) {
          walk(*sub, key);
          continue;
        }
        axis.values = range_values(*sub, at, key);
      } else {
        throw scenario_error(at + ": sweep." + key +
                             ": expected a list of values or { start, stop, step }, found " +
                             type_name(node));
      }
      count(axis);
      found_.push_back({std::move(axis), k.source().begin});
    }
  }

  std::vector<placed_axis> in_file_order() && {
    std::stable_sort(found_.begin(), found_.end(), [](const placed_axis& a, const placed_axis& b) {
      return a.at.line != b.at.line ? a.at.line < b.at.line : a.at.column < b.at.column;
    });
    return std::move(found_);
  }

 private:
  // A key a --set gave or replaced (itself or a table above it) is named by that --set: its
  // place in the file, if it has one, holds something else.
  std::string place(const toml::key& k, const std::string& key) const {
    const std::string full = "sweep." + key;
    for (const auto& s : sets_) {
      const std::string set = s.substr(0, s.find('='));
      if (full == set || full.starts_with(set + ".")) return "--set " + set;
    }
    return position(k.source(), path_);
  }

  static std::vector<report::sweep_value> list_values(const toml::array& list,
                                                      const std::string& at,
                                                      const std::string& key) {
    if (list.empty()) throw scenario_error(at + ": sweep." + key + ": the list is empty");
    if (list.size() > max_axis_values) {
      throw scenario_error(at + ": sweep." + key + ": more than " +
                           std::to_string(max_axis_values) + " values");
    }
    std::vector<report::sweep_value> values;
    for (const toml::node& item : list) values.push_back(scenario_detail::value_of(item, at, key));
    return values;
  }

  // Bounds the memory before the grid is checked: any grid within max_sweep_points lists fewer
  // values than this (pinned axes aside, each at most max_axis_values).
  void count(const sweep_axis& axis) {
    listed_ += axis.values.size();
    if (listed_ > max_sweep_points + (sets_.size() + 1) * max_axis_values + found_.size()) {
      throw scenario_error(axis.where + ": sweep." + axis.key + ": the grid would have more than " +
                           std::to_string(max_sweep_points) + " points");
    }
  }

  const std::vector<std::string>& sets_;
  const std::string& path_;
  std::vector<placed_axis> found_;
  std::size_t listed_ = 0;
};

// A --set of the swept key itself pins it: the axis goes.
bool pinned_by_a_set(const std::vector<std::string>& sets, const std::string& key) {
  return std::any_of(sets.begin(), sets.end(),
                     [&](const std::string& s) { return s.substr(0, s.find('=')) == key; });
}

}  // namespace

void scenario::read_sweep(const toml::table& root) {
  replications_ = static_cast<std::uint32_t>(config_.integer("replications", 1, 1, 1'000'000));
  const toml::node* sweep = root.get("sweep");
  if (sweep == nullptr) return;
  config_.consume("sweep");
  if (!sweep->is_table()) config_.fail("sweep", "expected a table of keys and their values");
  axis_finder finder(sets_, source_.path);
  finder.walk(*sweep->as_table(), "");
  std::size_t grid = 1;
  for (placed_axis& found : std::move(finder).in_file_order()) {
    sweep_axis& axis = found.axis;
    if (pinned_by_a_set(sets_, axis.key)) continue;
    if (grid > max_sweep_points / axis.values.size()) {
      throw scenario_error(axis.where + ": sweep." + axis.key + ": the grid would have more " +
                           "than " + std::to_string(max_sweep_points) + " points");
    }
    grid *= axis.values.size();
    if (scenario_detail::is_identity_key(axis.key)) {
      throw scenario_error(axis.where + ": sweep." + axis.key +
                           ": cannot be swept (use replications for seeds)");
    }
    axes_.push_back(std::move(axis));
  }
}

}  // namespace backoff::sim
