// SPDX-License-Identifier: Apache-2.0
#include "map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "memory.hpp"
#include "report/output_files.hpp"
#include "report/summary.hpp"
#include "sim/models/model.hpp"
#include "task_pool.hpp"

namespace backoff::sim::map_runner_detail {

// A map's scenario found among the candidates, and its strategy's index.
struct mapped {
  scenario_source source;
  std::string model;
  std::size_t strategy = 0;
};

mapped resolve(const map_spec& m, const std::vector<scenario_source>& candidates) {
  std::string known;
  for (const auto& c : candidates) {
    const scenario sc = scenario::load(c);
    if (sc.name() != m.scenario) {
      known += (known.empty() ? "" : ", ") + sc.name();
      continue;
    }
    if (sc.is_map()) {
      throw scenario_error(m.where + ": map.scenario '" + m.scenario +
                           "' is itself a metastable map: map a plain scenario");
    }
    if (sc.is_sweep()) {
      throw scenario_error(m.where + ": map.scenario '" + m.scenario +
                           "' is a sweep ([sweep] or replications): map a plain scenario (the "
                           "map chooses the loads and replications)");
    }
    const auto& all = sc.strategies();
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].name() == m.strategy) return {c, sc.model(), i};
    }
    std::string names;
    for (const auto& s : all) names += (names.empty() ? "" : ", ") + s.name();
    throw scenario_error(m.where + ": map.strategy '" + m.strategy + "': scenario '" + m.scenario +
                         "' has no such strategy (it has: " + names + ")");
  }
  throw scenario_error(m.where + ": map.scenario '" + m.scenario +
                       "': no built-in scenario, nor file given on the command line, has that "
                       "name (known: " +
                       known + ")");
}

// The mapped scenario at one load and trigger: the map's overrides, then the two axes.
scenario probe_scenario(const mapped& target, const map_spec& m, std::size_t load, double trigger) {
  std::vector<std::string> sets = m.sets;
  sets.push_back(m.load_key + "=" + m.loads[load].toml);
  sets.push_back(m.trigger_key + "=" + m.trigger_toml(trigger));
  try {
    return scenario::load(target.source, sets);
  } catch (const scenario_error& e) {
    throw scenario_error(m.where + ": map of '" + m.scenario + "' at " + m.load_key + " = " +
                         m.loads[load].text + ", " + m.trigger_key + " = " +
                         m.trigger_toml(trigger) + ": " + e.what());
  }
}

// The model of a probe's scenario; refuses one without the outage window recovery_s needs.
std::unique_ptr<model_runner> probe_model(scenario& sc, const map_spec& m, std::size_t load,
                                          double trigger) {
  std::unique_ptr<model_runner> model;
  try {
    model = make_model(sc);
  } catch (const scenario_error& e) {
    throw scenario_error(m.where + ": map of '" + m.scenario + "' at " + m.load_key + " = " +
                         m.loads[load].text + ", " + m.trigger_key + " = " +
                         m.trigger_toml(trigger) + ": " + e.what());
  }
  if (!model->outage()) {
    throw scenario_error(m.where + ": map of '" + m.scenario + "' at " + m.trigger_key + " = " +
                         m.trigger_toml(trigger) +
                         ": the model has no outage or trigger window "
                         "there, so no run can be seen to recover (recovery_s)");
  }
  return model;
}

struct probe {
  double trigger = 0;
  std::uint32_t recovered = 0, runs = 0;
  bool recovers() const { return 2 * recovered > runs; }
  bool unanimous() const { return recovered == 0 || recovered == runs; }
};

struct load_task {
  std::size_t map = 0, load = 0;
};

struct load_outcome {
  report::boundary_point point;
  std::uint64_t events = 0;
  std::uint32_t runs = 0;
  bool done = false;
};

class searcher {
 public:
  searcher(scenario& map, std::vector<mapped> targets, const run_options& options)
      : map_(map), targets_(std::move(targets)) {
    guard_.memory_limit = options.memory_limit;
    for (std::size_t i = 0; i < map.maps().size(); ++i) {
      for (std::size_t l = 0; l < map.maps()[i].loads.size(); ++l) tasks_.push_back({i, l});
    }
    outcomes_.resize(tasks_.size());
  }

  // Each load on its own task (task_pool.hpp); the first stop is the one reported.
  void run(unsigned threads) {
    run_tasks(
        tasks_.size(), std::min<unsigned>(threads, static_cast<unsigned>(tasks_.size())),
        [this] { return [this](std::size_t i) { outcomes_[i] = search(tasks_[i]); }; },
        [this](std::size_t, const run_stopped& stopped) {
          if (!stop_) stop_ = stopped;
        },
        [](std::size_t) {});
  }

  const std::vector<load_outcome>& outcomes() const { return outcomes_; }
  const std::optional<run_stopped>& stop() const { return stop_; }
  std::size_t runs_done() const {
    std::size_t n = 0;
    for (const auto& o : outcomes_) n += o.done ? 1 : 0;
    return n;
  }
  std::size_t size() const { return tasks_.size(); }

 private:
  probe run_probe(const load_task& t, double trigger, load_outcome& out) {
    const map_spec& m = map_.maps()[t.map];
    const mapped& target = targets_[t.map];
    scenario sc = probe_scenario(target, m, t.load, trigger);
    std::unique_ptr<model_runner> model = probe_model(sc, m, t.load, trigger);
    probe p;
    p.trigger = trigger;
    for (std::uint32_t r = 0; r < m.replications; ++r) {
      const strategy_run run =
          run_strategy(*model, sc.strategies().at(target.strategy),
                       replication_seed(map_.seed(), r), guard_, {.keep_series = false});
      if (run.stopped) throw *run.stopped;  // the search keeps it (stop())
      const report::strategy_summary& s = *run.summary;
      p.recovered += s.recovery_s ? 1 : 0;
      ++p.runs;
      out.events += s.events;
      ++out.runs;
    }
    return p;
  }

  load_outcome search(const load_task& t) {
    const map_spec& m = map_.maps()[t.map];
    load_outcome out;
    report::boundary_point& b = out.point;
    b.model = targets_[t.map].model;
    b.mapped = m.scenario;
    b.strategy = m.strategy;
    b.load = m.load_values[t.load];
    b.replications = m.replications;
    std::vector<probe> probes;
    probes.push_back(run_probe(t, m.low, out));
    if (!probes.back().recovers()) {
      b.always_down = true;
      b.trigger = b.trigger_lo = b.trigger_hi = m.low;
      b.probes = 1;
      out.done = true;
      return out;
    }
    probes.push_back(run_probe(t, m.high, out));
    if (probes.back().recovers()) {
      b.never_down = true;
      b.trigger = b.trigger_lo = b.trigger_hi = m.high;
      b.probes = 2;
      out.done = true;
      return out;
    }
    double lo = m.low, hi = m.high;
    while (hi - lo > m.resolution && probes.size() < m.max_probes) {
      double mid = (lo + hi) / 2;
      if (m.trigger_is_integer) mid = std::floor(mid);
      if (m.trigger_is_duration) mid = std::round(mid * 1e9) / 1e9;  // whole nanoseconds
      if (mid <= lo || mid >= hi) break;
      probes.push_back(run_probe(t, mid, out));
      (probes.back().recovers() ? lo : hi) = mid;
    }
    // Widen over the probes whose runs disagreed.
    b.trigger_lo = m.low;
    b.trigger_hi = m.high;
    for (const probe& p : probes) {
      if (!p.unanimous()) continue;
      if (p.recovered == p.runs && p.trigger <= lo)
        b.trigger_lo = std::max(b.trigger_lo, p.trigger);
      if (p.recovered == 0 && p.trigger >= hi) b.trigger_hi = std::min(b.trigger_hi, p.trigger);
    }
    b.trigger = (b.trigger_lo + b.trigger_hi) / 2;
    b.probes = static_cast<std::uint32_t>(probes.size());
    out.done = true;
    return out;
  }

  scenario& map_;
  const std::vector<mapped> targets_;
  std::vector<load_task> tasks_;
  std::vector<load_outcome> outcomes_;
  run_guard guard_;
  std::optional<run_stopped> stop_;
};

std::vector<mapped> resolve_all(scenario& map, const std::vector<scenario_source>& candidates) {
  std::vector<mapped> targets;
  for (const map_spec& m : map.maps()) {
    targets.push_back(resolve(m, candidates));
    // Both ends of the range at every load: a key the model refuses fails now.
    for (std::size_t l = 0; l < m.loads.size(); ++l) {
      for (const double trigger : {m.low, m.high}) {
        scenario sc = probe_scenario(targets.back(), m, l, trigger);
        (void)probe_model(sc, m, l, trigger);
      }
    }
  }
  return targets;
}

}  // namespace backoff::sim::map_runner_detail

namespace backoff::sim {

void check_map(scenario& map, const std::vector<scenario_source>& candidates) {
  (void)map_runner_detail::resolve_all(map, candidates);
}

report::scenario_result run_map(scenario& map, const std::vector<scenario_source>& candidates,
                                const run_options& options) {
  namespace d = map_runner_detail;
  if (options.shard) {
    throw scenario_error(map.path() +
                         ": a metastable map cannot be split into shards: its "
                         "probes depend on each other");
  }
  std::vector<d::mapped> targets = d::resolve_all(map, candidates);
  report::scenario_result result = result_header(map);
  result.fingerprint = map.fingerprint();
  for (std::size_t i = 0; i < map.maps().size(); ++i) {
    const map_spec& m = map.maps()[i];
    result.maps.push_back({targets[i].model, m.scenario, m.strategy, m.load_key, m.load_unit,
                           m.trigger_key, m.trigger_unit});
  }
  const auto wall_start = std::chrono::steady_clock::now();
  std::optional<interrupt_deferral> deferred;
  deferred.emplace();
  d::searcher search(map, std::move(targets), options);
  search.run(options.threads != 0 ? options.threads : std::thread::hardware_concurrency());
  // Every load done, in map and load order (a stopped map: the loads done before the stop).
  for (const auto& o : search.outcomes()) {
    result.events += o.events;
    if (o.done) result.boundary.push_back(o.point);
  }
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (const auto& stop = search.stop()) {
    result.stopped = stop_after_runs(*stop, search.runs_done(), search.size());
  }
  if (options.out) {
    report::output_folder folder(*options.out);
    report::write_run_files(result, folder);
  }
  deferred.reset();
  if (result.stopped && result.stopped->reason == report::stop_reason::memory) {
    throw memory_limit_error(
        fmt::format("scenario '{}': over the limit of {} (--memory-limit) "
                    "after {} of {} loads",
                    map.name(), format_size(options.memory_limit), result.stopped->runs_done,
                    result.stopped->runs));
  }
  if (result.stopped && result.stopped->reason == report::stop_reason::instant_limit) {
    throw instant_limit_error(
        fmt::format("scenario '{}': a probe ran more events at one simulated time than "
                    "run.max_events_per_instant allows: a loop that feeds itself at zero delay",
                    map.name()));
  }
  return result;
}

}  // namespace backoff::sim
