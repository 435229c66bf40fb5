// SPDX-License-Identifier: Apache-2.0
// Scenario files: the TOML that describes one simulated experiment (SPEC 6.2-6.4). This layer
// reads and checks them; it knows the common keys (scenario, model, seed, [[strategy]]) and hands
// the rest to the model through a config_reader, which marks each key it reads. Whatever no one
// read is an unknown key. Every error is one line, `file:line:col: message`.
//
//   auto sc = sim::scenario::load({"scenarios/tick-burst.toml", text}, {"server.slots=10"});
//   sim::config_reader& r = sc.config();
//   auto clients = r.integer("workload.clients", 800, 1, 10'000'000);
//   r.finish();                                  // throws on the first key nobody read
//
// --set overrides (`key=value`) replace or add keys before anything is read; the value is read as
// TOML (`100`, `"100ms"`, `[10, 20]`, `true`), and a bare word that is not TOML as a string.
// Errors about them name the override instead of a file position.
//
// Sweeps (SPEC 2.4): a `[sweep]` table names keys and the values each takes, as a list or as a
// range `{ start = .., stop = .., step = .. }` (integers, numbers, or duration strings), and a
// top-level `replications = N` repeats every point with N seeds. Nested tables name dotted keys:
//
//   replications = 10
//   [sweep]
//   clients = [25, 50, 100]                                  # sets the top-level key `clients`
//   outage.duration = { start = "2s", stop = "20s", step = "2s" }    # sets outage.duration
//
// The grid is the product of the axes in file order (the first axis varies slowest). A --set of
// a swept key pins it: that axis is dropped. points() lists the grid; at(point) gives the
// scenario of one point, whose errors name the sweep entry that set the bad value.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "config/config_reader.hpp"  // also declares toml::table, which a scenario holds
#include "report/result.hpp"
#include "strategy.hpp"

namespace backoff::sim {

// A scenario that cannot run: the reader's error (one line, control characters escaped).
using scenario_error = config::config_error;
// A scenario's keys, read as every file of the project is (config/config_reader.hpp).
using config_reader = config::config_reader;

struct scenario_source {
  std::string path;  // shown in errors; "builtin/NAME.toml" for the built-in suite
  std::string text;
};

// What a scenario is about, for the report (all optional, plain text, shown escaped):
//   [about]
//   description = "1000 closed-loop clients against a server that pauses for 10 s"
//   source = "smira, \"Exponential Backoff or how not to crash a server\" (2016)"
//   claim = "fixed backoff never recovers; exponential does"
struct scenario_about {
  std::string description, source, claim;
};

struct sweep_axis {
  std::string key;    // dotted scenario key, e.g. "clients" or "outage.duration"
  std::string where;  // "file:line:col" of its declaration
  std::vector<report::sweep_value> values;
};

// One [[map]] of a metastable map (issue 23; docs/models/metastable-map.md): where the mapped
// scenario tips from "recovers" to "stays down", by adaptive bisection of a trigger range at each
// base load. Durations are held in seconds here (the probes write them back as durations).
//
//   [[map]]
//   scenario = "outage-recovery"         # a built-in scenario's name, or one given to the CLI
//   strategy = "fixed"                   # the strategy whose clients sustain the loop
//   set = ["workload.think_mean=5s"]     # --set overrides for the mapped scenario
//   load = { key = "workload.clients", values = [100, 200, 300], unit = "clients" }
//   trigger = { key = "outage.duration", low = "1s", high = "60s", resolution = "1s" }
//   replications = 3                     # runs per probe (common seeds across probes)
//   max_probes = 12                      # per load, the two range ends included
struct map_spec {
  std::string where;     // "file:line:col" of its [[map]] table
  std::string scenario;  // the mapped scenario's name
  std::string strategy;
  std::vector<std::string> sets;
  std::string load_key, load_unit;
  std::vector<report::sweep_value> loads;
  std::vector<double> load_values;  // the same, as numbers (durations in seconds)
  std::string trigger_key, trigger_unit;
  bool trigger_is_duration = false;
  bool trigger_is_integer = false;           // low, high and resolution were all integers
  double low = 0, high = 0, resolution = 0;  // seconds when trigger_is_duration
  std::uint32_t replications = 3;
  std::uint32_t max_probes = 12;
  // The TOML text that sets the trigger to `value` (a quoted duration, or a number).
  std::string trigger_toml(double value) const;
};

// One point of the grid: a value for each axis, in axis order.
struct sweep_point {
  std::size_t index = 0;  // position in points()
  std::vector<std::pair<const sweep_axis*, const report::sweep_value*>> params;
};

class scenario {
 public:
  // Parses and checks the common part; the model's keys are checked by the model (config()).
  static scenario load(const scenario_source& source, const std::vector<std::string>& sets = {});

  // A sweep: at least one axis, or more than one replication.
  bool is_sweep() const noexcept { return !axes_.empty() || replications_ > 1; }
  // A metastable map: [[map]] tables, run by sim/run/map.hpp instead of a model. Its model is
  // "metastable-map"; it has no [[strategy]] of its own and cannot be a sweep.
  bool is_map() const noexcept { return !maps_.empty(); }
  const std::vector<map_spec>& maps() const noexcept { return maps_; }
  const std::vector<sweep_axis>& axes() const noexcept { return axes_; }
  std::uint32_t replications() const noexcept { return replications_; }
  // The grid (one empty point when there are no axes). Points refer into axes(); the last axis
  // varies fastest. point(i) is the i-th of points(), made on demand, so that a runner can walk
  // a grid of a million points without holding it.
  std::size_t point_count() const;
  sweep_point point(std::size_t index) const;
  std::vector<sweep_point> points() const;
  // The scenario of one point: the same file and --set overrides, plus the point's values; it
  // keeps this scenario's seed and is not itself a sweep.
  scenario at(const sweep_point& point) const;

  const std::string& name() const noexcept { return name_; }
  const std::string& model() const noexcept { return model_; }
  const scenario_about& about() const noexcept { return about_; }
  std::uint64_t seed() const noexcept { return seed_; }
  void set_seed(std::uint64_t seed) noexcept { seed_ = seed; }
  // Identifies what a run computes: the file's text, the --set overrides and the seed (not the
  // file's path), as 16 hex digits. Shards of one sweep must share it to be merged.
  std::string fingerprint() const;
  // The [[strategy]] tables, typed and checked: the one parse of their specs.
  const std::vector<client_strategy>& strategies() const noexcept { return strategies_; }
  config_reader& config() noexcept { return config_; }
  const std::string& path() const noexcept { return config_.path(); }
  const scenario_source& source() const noexcept { return source_; }
  const std::vector<std::string>& sets() const noexcept { return sets_; }

 private:
  explicit scenario(config_reader reader) : config_(std::move(reader)) {}
  // `root`: the file parsed, its overrides applied (`overridden` names them). `point_of`: the
  // scenario whose sweep point this is; its strategies are taken as they are (strategies cannot
  // be swept), not parsed again.
  static scenario load(const scenario_source& source, const std::vector<std::string>& sets,
                       std::shared_ptr<toml::table> root,
                       std::map<std::string, std::string, std::less<>> overridden,
                       const scenario* point_of);
  void read_strategies(const toml::table& root);
  void read_sweep(const toml::table& root);
  void read_maps(const toml::table& root);

  scenario_source source_;
  std::vector<std::string> sets_;
  std::vector<sweep_axis> axes_;
  std::uint32_t replications_ = 1;
  config_reader config_;
  std::string name_;
  std::string model_;
  scenario_about about_;
  std::uint64_t seed_ = 1;
  std::vector<client_strategy> strategies_;
  std::vector<map_spec> maps_;
  std::shared_ptr<const toml::table> base_;  // a sweep's tree without [sweep], for at()
};

// The built-in suite (scenarios/*.toml compiled into the binary), in a fixed order.
const std::vector<scenario_source>& builtin_scenarios();

}  // namespace backoff::sim
