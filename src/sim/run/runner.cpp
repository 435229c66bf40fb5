// SPDX-License-Identifier: Apache-2.0
#include "runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "map.hpp"
#include "report/boundary.hpp"
#include "report/output_files.hpp"
#include "report/summary.hpp"
#include "report/sweep_spool.hpp"
#include "sim/models/model.hpp"
#include "task_pool.hpp"

namespace backoff::sim {
namespace {

// A one-line progress bar on stderr, drawn only after the run has taken a second, with the
// time left estimated from the pace so far.
class progress_bar {
 public:
  progress_bar(bool enabled, std::string label)
      : enabled_(enabled),
        label_(escape_controls(label)),  // names from the scenario: no escape sequences
        start_(std::chrono::steady_clock::now()) {}
  ~progress_bar() {
    if (drawn_) std::fputs("\r\033[K", stderr);
  }
  void update(double fraction) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const std::chrono::duration<double> elapsed = now - start_;
    if (elapsed < std::chrono::seconds{1} || now - last_ < std::chrono::milliseconds{100}) return;
    last_ = now;
    fraction = std::clamp(fraction, 0.0, 1.0);
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string eta = "--";
    if (fraction > 0) {
      const double left = elapsed.count() * (1 - fraction) / fraction;
      eta = format_duration(std::chrono::seconds{static_cast<std::int64_t>(std::ceil(left))});
    }
    std::fprintf(stderr, "\r\033[K%s [%s%s] %3d%% ETA %s", label_.c_str(),
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(),
                 static_cast<int>(fraction * 100), eta.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  bool enabled_;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace

std::uint64_t replication_seed(std::uint64_t seed, std::uint32_t replication) {
  return replication == 0 ? seed : derive_seed(seed, 0x7265706cULL + replication);
}

namespace {

report::recorder_options recorder_for(const model_runner& model, const std::string& strategy,
                                      const std::optional<fallback_config>& fallback = {}) {
  report::recorder_options o;
  o.strategy = strategy;
  if (fallback) o.fallback = fallback->on;
  o.bucket = model.bucket();
  o.seconds_per_unit = model.seconds_per_unit();
  o.outage = model.outage();
  o.baseline = static_cast<time_ns>(30.0 / o.seconds_per_unit);
  o.recovery_hold = model.recovery_hold();
  return o;
}

// A metastable map is not run by the runner: `backoff sim` runs it (sim/run/map.hpp).
void refuse_map(const scenario& sc) {
  if (sc.is_map()) {
    throw scenario_error(sc.path() + ": scenario '" + sc.name() +
                         "' is a metastable map ([[map]]): run it with `backoff sim`, which "
                         "searches its boundaries (a map is not a sweep)");
  }
}

// One point's values and, per strategy, a slot for each replication.
report::point_result lay_out_point(const scenario& sc, const sweep_point& point) {
  report::point_result out;
  for (const auto& [axis, value] : point.params) out.params.emplace_back(axis->key, *value);
  for (const auto& s : sc.strategies()) {
    out.strategies.push_back({s.name(), std::vector<report::strategy_summary>(sc.replications()),
                              std::vector<std::uint8_t>(sc.replications(), 0)});
  }
  return out;
}

// The result's shape before any run; with a spool, the points are laid out as they start.
void lay_out_sweep(const scenario& sc, bool spooled, report::scenario_result& result) {
  result.sweep = true;
  result.replications = sc.replications();
  for (const auto& axis : sc.axes()) result.sweep_keys.push_back(axis.key);
  if (spooled) return;
  const std::size_t points = sc.point_count();
  result.points.reserve(points);
  for (std::size_t p = 0; p < points; ++p) result.points.push_back(lay_out_point(sc, sc.point(p)));
}

// A sweep's tasks run on a pool of threads. Tasks are numbered point-major; each worker builds
// its own scenario and model for the point it is on (models keep per-run state) and a fresh
// engine, with the shared guard, for each run.
class sweep_pool {
 public:
  // `spool`: points go there as they finish, in order (every point has all its tasks here: not
  // a shard); none: into result.points.
  // The tasks are this shard's: every part.count-th of the grid's, from part.index - 1.
  sweep_pool(scenario& sc, const report::shard_spec& part, std::size_t tasks,
             const run_options& options, report::scenario_result& result,
             report::sweep_spool* spool)
      : sc_(sc),
        points_(sc.point_count()),
        first_task_(part.index - 1),
        task_step_(part.count),
        tasks_(tasks),
        per_point_(sc.strategies().size() * sc.replications()),
        result_(result),
        spool_(spool),
        bar_(options.progress && ::isatty(STDERR_FILENO) == 1,
             fmt::format("{} ({} runs)", sc.name(), tasks_)) {
    limits_.memory_limit = options.memory_limit;
  }

  // Runs every task on `threads` threads (this one included); rethrows the first task's error
  // (task_pool.hpp). A stop keeps the one with the largest resident set, for its message.
  void run(unsigned threads) {
    run_tasks(
        tasks_, threads,
        [this] {
          // The worker's current point and its model, replaced when a task is of another point.
          return [this, point = points_, model = std::unique_ptr<model_runner>()](
                     std::size_t slot) mutable { run_task(task(slot), point, model); };
        },
        [this](std::size_t slot, const run_stopped& stopped) {
          // Not an error: the runs done so far are kept and the outputs marked partial.
          if (!stop_ || stopped.resident > stop_->resident) {
            stop_ = stopped;
            stop_task_ = task(slot);
          }
        },
        [this](std::size_t finished) {
          done_ = finished;
          bar_.update(static_cast<double>(finished) / static_cast<double>(tasks_));
        });
  }

  std::size_t done() const { return done_; }
  std::uint64_t events() const { return events_; }

  // A stopped sweep: the points not yet spooled, in order, with the runs they have (if any).
  void spool_the_rest() {
    if (spool_ == nullptr) return;
    for (; next_point_ < points_; ++next_point_) {
      const auto it = pending_.find(next_point_);
      spool_->add(it != pending_.end() ? it->second.result
                                       : lay_out_point(sc_, sc_.point(next_point_)));
      if (it != pending_.end()) pending_.erase(it);
    }
  }
  const std::optional<run_stopped>& stop() const { return stop_; }
  // The run that stopped: its strategy, and its point and replication ("load = 0.5, replication
  // 2"), for the message of a run stuck at one instant.
  std::string stopped_strategy() const {
    return sc_.strategies()[(stop_task_ % per_point_) / sc_.replications()].name();
  }
  std::string stopped_point() const {
    std::string text;
    for (const auto& [axis, value] : sc_.point(stop_task_ / per_point_).params) {
      text += (text.empty() ? "" : ", ") + axis->key + " = " + value->text;
    }
    if (sc_.replications() > 1) {
      text += fmt::format("{}replication {}", text.empty() ? "" : ", ",
                          stop_task_ % sc_.replications());
    }
    return text;
  }

 private:
  // `point` and `model`: the worker's current point and its model, replaced when the task is of
  // another point.
  void run_task(std::size_t task, std::size_t& point, std::unique_ptr<model_runner>& model) {
    const std::size_t p = task / per_point_;
    const std::size_t s = (task % per_point_) / sc_.replications();
    const auto rep = static_cast<std::uint32_t>(task % sc_.replications());
    if (p != point) {
      scenario at = sc_.at(sc_.point(p));
      model = make_model(at);
      point = p;
    }
    strategy_run run = run_strategy(*model, sc_.strategies()[s], replication_seed(sc_.seed(), rep),
                                    limits_, {.keep_series = false});
    if (run.stopped) throw *run.stopped;  // the pool keeps it (run())
    report::strategy_summary summary = std::move(*run.summary);
    const std::scoped_lock hold(results_lock_);
    events_ += summary.events;
    if (spool_ == nullptr) {
      result_.points[p].strategies[s].runs[rep] = std::move(summary);
      result_.points[p].strategies[s].ran[rep] = 1;
      return;
    }
    auto it = pending_.find(p);
    if (it == pending_.end()) {
      it = pending_.emplace(p, pending_point{lay_out_point(sc_, sc_.point(p)), per_point_}).first;
    }
    it->second.result.strategies[s].runs[rep] = std::move(summary);
    it->second.result.strategies[s].ran[rep] = 1;
    --it->second.remaining;
    // Points leave in order: a finished point waits for the ones before it.
    while (!pending_.empty() && pending_.begin()->first == next_point_ &&
           pending_.begin()->second.remaining == 0) {
      spool_->add(pending_.begin()->second.result);
      pending_.erase(pending_.begin());
      ++next_point_;
    }
  }

  // A point of a spooled sweep whose runs are not all done.
  struct pending_point {
    report::point_result result;
    std::size_t remaining = 0;  // its runs still to finish
  };

  scenario& sc_;
  std::size_t task(std::size_t slot) const { return first_task_ + slot * task_step_; }

  const std::size_t points_;  // of the grid
  const std::size_t first_task_, task_step_, tasks_;
  const std::size_t per_point_;
  report::scenario_result& result_;
  report::sweep_spool* spool_;
  std::mutex results_lock_;  // result_, events_, pending_ and next_point_
  std::uint64_t events_ = 0;
  std::map<std::size_t, pending_point> pending_;
  std::size_t next_point_ = 0;  // the next point to spool
  run_guard limits_;
  std::size_t done_ = 0;  // tasks finished: written under the pool's lock, read after it joined
  std::optional<run_stopped> stop_;
  std::size_t stop_task_ = 0;
  progress_bar bar_;
};

// Runs every point x strategy x replication of this shard. `checked`: every point's model was
// built (and so checked) already, by the memory estimate.
void run_sweep(scenario& sc, const model_runner& model, const run_options& options, bool checked,
               report::scenario_result& result, std::optional<interrupt_deferral>& deferred,
               std::optional<report::output_folder>& folder) {
  // The grid is walked by index, never held: a million points cost no memory of their own.
  const std::size_t points = sc.point_count();
  // Check every point before running any, so a bad value at the last point fails at once.
  for (std::size_t p = 0; !checked && p < points; ++p) {
    scenario at = sc.at(sc.point(p));
    (void)make_model(at);
  }
  // From the first run to the last output written, a signal stops the runs instead of the
  // process, so that what was done is written (before, the process simply exits).
  deferred.emplace();
  const std::size_t all_tasks = points * sc.strategies().size() * sc.replications();
  // This shard's tasks: every count-th from index - 1 (round robin spreads the costly points).
  const report::shard_spec part = options.shard.value_or(report::shard_spec{});
  const std::size_t first = part.index - 1;
  const std::size_t tasks = all_tasks <= first ? 0 : (all_tasks - first - 1) / part.count + 1;
  result.shard = options.shard;
  // The folder is made once every point is checked, and holds the spool (on the disk the outputs
  // go to); without one, the temporary folder does.
  if (options.out && !options.shard) folder.emplace(*options.out);
  std::shared_ptr<report::sweep_spool> spool;
  if (options.spool_points && !options.shard) {
    spool = std::make_shared<report::sweep_spool>(
        folder ? folder->dir() : std::filesystem::temp_directory_path(), model.outage().has_value(),
        sc.axes().size());
  }
  lay_out_sweep(sc, spool != nullptr, result);

  unsigned threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  threads = std::max(
      1U, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(tasks, 1))));
  sweep_pool pool(sc, part, tasks, options, result, spool.get());
  pool.run(threads);
  pool.spool_the_rest();
  result.spool = spool;
  result.events = pool.events();
  result.fingerprint = sc.fingerprint();
  if (const auto& stop = pool.stop()) {
    report::run_stop info = stop_after_runs(*stop, pool.done(), tasks);
    if (stop->reason == report::stop_reason::instant_limit) {
      info.strategy = pool.stopped_strategy();
      info.point = pool.stopped_point();
      info.at_s = static_cast<double>(stop->at) * model.seconds_per_unit();
    }
    result.stopped = std::move(info);
  }
}

// The memory guard stopped the run: the one-line error, once the partial outputs are written.
[[noreturn]] void over_limit(const scenario& sc, const run_options& options,
                             const memory_estimate& e, const report::run_stop& stop) {
  const std::string where =
      !stop.strategy.empty() ? fmt::format("stopped at {:.6g} s of simulated time in strategy '{}'",
                                           stop.at_s, stop.strategy)
      : stop.runs != 0       ? fmt::format("stopped after {} of {} runs", stop.runs_done, stop.runs)
                             : std::string("stopped");
  const std::string uses =
      stop.resident != 0 ? "the process uses " + format_size(stop.resident) + ", " : std::string();
  throw memory_limit_error(fmt::format(
      "scenario '{}' {}: {}over the limit of {} (--memory-limit); the estimate was about {} ({})",
      sc.name(), where, uses, format_size(options.memory_limit), format_size(e.bytes), e.driver));
}

// A run went over run.max_events_per_instant: the one-line error, once the partial outputs are
// written.
[[noreturn]] void stuck_at_one_instant(const scenario& sc, const model_runner& model,
                                       const run_options& options, const report::run_stop& stop) {
  const std::string where = stop.point.empty()
                                ? fmt::format("strategy '{}'", stop.strategy)
                                : fmt::format("strategy '{}' at {}", stop.strategy, stop.point);
  const std::string limit = sc.is_sweep() ? "run.max_events_per_instant"
                                          : fmt::format("run.max_events_per_instant = {}",
                                                        model.max_events_per_instant());
  throw instant_limit_error(fmt::format(
      "scenario '{}': {} ran more events at {:.6g} s of simulated time than {} without time "
      "advancing: a loop that feeds itself at zero delay (give its delays a non-zero time){}",
      sc.name(), where, stop.at_s, limit,
      options.out ? "; the outputs written are marked partial" : ""));
}

}  // namespace

report::run_stop stop_after_runs(const run_stopped& stop, std::size_t runs_done, std::size_t runs) {
  report::run_stop info;
  info.reason = stop.reason;
  info.signal = stop.signal;
  info.resident = stop.resident;
  info.runs_done = runs_done;
  info.runs = runs;
  return info;
}

void add_felt_outage(const model_runner& model, time_ns end, report::strategy_summary& summary) {
  const auto window = model.outage();
  if (!window) return;
  report::down_rule rule;
  rule.outage = *window;
  rule.end = end;
  const report::recorder_options o = recorder_for(model, summary.name);
  rule.baseline = o.baseline;
  rule.hold = o.recovery_hold;
  rule.fraction = o.recovery_fraction;
  const auto periods = report::down_periods(summary, rule);
  summary.fields.push_back(
      {report::felt_outage_field,
       periods ? std::optional<double>(report::felt_outage(*periods)) : std::nullopt});
}

strategy_run run_strategy(model_runner& model, const client_strategy& strategy, std::uint64_t seed,
                          run_guard& guard, const strategy_run_options& options) {
  strategy_run out;
  report::recorder rec(recorder_for(model, strategy.name(), strategy.guards().fallback),
                       options.clients);
  try {
    guard.check_between_runs();
    if (options.on_start) options.on_start();
    engine e(&guard, model.max_events_per_instant());
    const progress_fn silent = [](double) {};
    const run_info info =
        model.run(strategy, seed, e, rec, options.progress ? options.progress : silent);
    out.summary = rec.finish(info.end, info.events);
    add_felt_outage(model, info.end, *out.summary);
  } catch (const run_stopped& stopped) {
    // The figures up to where the engine stopped. The operations still in flight were not
    // reported by the model (it did not get to its end), so they are counted unfinished here and
    // have no clients.csv row.
    if (stopped.events > 0) {
      out.summary = rec.finish(stopped.at, stopped.events);
      out.summary->unfinished =
          out.summary->operations - out.summary->completed - out.summary->gave_up;
    }
    out.stopped = stopped;
  }
  if (out.summary && !options.keep_series) {
    out.summary->buckets.clear();
    out.summary->buckets.shrink_to_fit();
    out.summary->services.clear();
    out.summary->services.shrink_to_fit();
  }
  return out;
}

void check_scenario(scenario& sc) {
  if (sc.is_map()) {  // against the built-in suite (the CLI adds the files it is given)
    check_map(sc, builtin_scenarios());
    return;
  }
  (void)make_model(sc);
  for (std::size_t p = 0; sc.is_sweep() && p < sc.point_count(); ++p) {
    scenario at = sc.at(sc.point(p));
    (void)make_model(at);
  }
}

report::scenario_result result_header(const scenario& sc) {
  report::scenario_result result;
  result.scenario = sc.name();
  result.model = sc.model();
  result.description = sc.about().description;
  result.source = sc.about().source;
  result.claim = sc.about().claim;
  result.seed = sc.seed();
  return result;
}

namespace {

report::scenario_result result_for(const scenario& sc, const model_runner& model) {
  report::scenario_result result = result_header(sc);
  result.outage = model.outage().has_value();
  if (const auto window = model.outage()) {
    const double spu = model.seconds_per_unit();
    result.outage_s = {static_cast<double>(window->start) * spu,
                       static_cast<double>(window->end) * spu};
  }
  return result;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A sweep, or one shard of it: summary.json and sweep.csv (a shard writes nothing here).
report::scenario_result sweep_scenario(scenario& sc, const model_runner& model,
                                       const run_options& options, bool checked) {
  report::scenario_result result = result_for(sc, model);
  const auto wall_start = std::chrono::steady_clock::now();
  std::optional<interrupt_deferral> deferred;   // set once the runs start, held to the last write
  std::optional<report::output_folder> folder;  // made by run_sweep (not for a shard)
  run_sweep(sc, model, options, checked, result, deferred, folder);
  result.wall_s = seconds_since(wall_start);
  // A shard's file is its caller's to write (shards.hpp's write_shard_file, with the report's
  // inputs), and only when the shard is complete: a partial one cannot be merged.
  if (folder) report::write_run_files(result, *folder);
  return result;
}

// How a run stopped in strategy `i`: where (when it had run events, its figures are kept, as
// run_strategy gives them) and which strategies did not run.
report::run_stop stop_in(const scenario& sc, const model_runner& model, std::size_t i,
                         const run_stopped& stopped) {
  const std::vector<client_strategy>& strategies = sc.strategies();
  report::run_stop info;
  info.reason = stopped.reason;
  info.signal = stopped.signal;
  info.resident = stopped.resident;
  if (stopped.events > 0) {
    info.strategy = strategies[i].name();
    info.at_s = static_cast<double>(stopped.at) * model.seconds_per_unit();
  }
  for (std::size_t j = info.strategy.empty() ? i : i + 1; j < strategies.size(); ++j) {
    info.not_run.push_back(strategies[j].name());
  }
  return info;
}

// The strategies one after the other on this thread, clients.csv's rows streamed as they come.
void run_in_turn(scenario& sc, model_runner& model, const run_options& options,
                 std::ostream* clients, report::scenario_result& result) {
  const std::vector<client_strategy>& strategies = sc.strategies();
  const bool show = options.progress && ::isatty(STDERR_FILENO) == 1;
  run_guard guard;
  guard.memory_limit = options.memory_limit;
  for (std::size_t i = 0; i < strategies.size() && !result.stopped; ++i) {
    progress_bar bar(show, fmt::format("{} {} ({}/{})", sc.name(), strategies[i].name(), i + 1,
                                       strategies.size()));
    strategy_run run = run_strategy(model, strategies[i], sc.seed(), guard,
                                    {.clients = clients,
                                     .progress = [&](double f) { bar.update(f); },
                                     .on_start =
                                         [&] {
                                           if (options.on_strategy_start)
                                             options.on_strategy_start(i);
                                         }});
    if (run.summary) {
      result.events += run.summary->events;
      result.strategies.push_back(std::move(*run.summary));
    }
    if (run.stopped) result.stopped = stop_in(sc, model, i, *run.stopped);
  }
}

// The strategies of a plain run, side by side on `workers` threads: each worker has its own model
// (models keep per-run state) and each run its own engine and recorder, on the scenario's seed,
// as when they run in turn. What a run leaves (its summary, the stop that ended it, where its
// rows are in its worker's spool) is kept by strategy, and the result is put together in strategy
// order afterwards, so that it is the same, byte for byte, whatever the number of workers. A stop
// is taken as the runs in turn would meet it: the strategies before the first one stopped are
// kept whole (run_tasks runs every task below the first stop), that one's figures up to its stop
// are kept, and the ones after it are "not run", even if a worker finished one.
class strategy_pool {
 public:
  strategy_pool(scenario& sc, model_runner& model, unsigned workers, const run_options& options,
                const std::filesystem::path* folder)
      : sc_(sc),
        options_(options),
        runs_(sc.strategies().size()),
        bar_(options.progress && ::isatty(STDERR_FILENO) == 1,
             fmt::format("{} ({} strategies)", sc.name(), sc.strategies().size())),
        fractions_(sc.strategies().size(), 0.0) {
    guard_.memory_limit = options.memory_limit;
    for (unsigned w = 0; w < workers; ++w) {
      worker& k = workers_.emplace_back();
      if (w == 0) {
        k.model = &model;
      } else {
        owned_.push_back(make_model(sc));
        k.model = owned_.back().get();
      }
      if (folder != nullptr) k.rows.emplace(*folder / "clients.csv");
    }
  }

  void run() {
    std::atomic<unsigned> next_worker{0};
    run_tasks(
        runs_.size(), static_cast<unsigned>(workers_.size()),
        [&] {
          return [this, &k = workers_[next_worker.fetch_add(1)]](std::size_t s) { run_one(k, s); };
        },
        [](std::size_t, const run_stopped&) {},  // kept by run_one, with the partial figures
        [](std::size_t) {});
  }

  // The result, in strategy order (see the class comment).
  void gather(const model_runner& model, report::scenario_result& result, std::ostream* clients) {
    std::size_t i = 0;
    for (; i < runs_.size() && runs_[i].summary && !runs_[i].stop; ++i) {
      append_rows(runs_[i], clients);
      result.events += runs_[i].summary->events;
      result.strategies.push_back(std::move(*runs_[i].summary));
    }
    if (i == runs_.size()) return;
    // The first run that did not finish was stopped: every run below the first stop ran.
    run_left& r = runs_[i];
    if (r.stop->events > 0) {
      append_rows(r, clients);
      result.strategies.push_back(std::move(*r.summary));
      result.events += r.stop->events;
    }
    report::run_stop info = stop_in(sc_, model, i, *r.stop);
    // Over the memory limit, one run's poll saw it and the others stopped on its word: the
    // figure is the one that saw it.
    for (const auto& other : runs_) {
      if (other.stop) info.resident = std::max(info.resident, other.stop->resident);
    }
    result.stopped = std::move(info);
  }

 private:
  struct worker {
    model_runner* model = nullptr;
    std::optional<report::spool_file> rows;  // with clients.csv: the rows of its runs
  };
  struct run_left {
    std::optional<report::strategy_summary> summary;  // whole, or up to the stop
    std::optional<run_stopped> stop;
    report::spool_file* rows = nullptr;  // its worker's spool, and where its rows are in it
    std::uint64_t rows_from = 0, rows_to = 0;
  };

  static void append_rows(const run_left& r, std::ostream* clients) {
    if (clients != nullptr && r.rows != nullptr)
      r.rows->append_to(*clients, r.rows_from, r.rows_to);
  }

  void run_one(worker& k, std::size_t s) {
    run_left& left = runs_[s];
    model_runner& model = *k.model;
    const client_strategy& strategy = sc_.strategies()[s];
    if (k.rows) {
      left.rows = &*k.rows;
      left.rows_from = left.rows_to = k.rows->written();
    }
    strategy_run run =
        run_strategy(model, strategy, sc_.seed(), guard_,
                     {.clients = k.rows ? &k.rows->stream() : nullptr,
                      .progress =
                          [&](double f) {
                            const std::scoped_lock hold(progress_lock_);
                            fractions_[s] = f;
                            double sum = 0;
                            for (const double x : fractions_) sum += x;
                            bar_.update(sum / static_cast<double>(fractions_.size()));
                          },
                      .on_start =
                          [&] {
                            if (options_.on_strategy_start) options_.on_strategy_start(s);
                          }});
    left.summary = std::move(run.summary);
    if (k.rows) left.rows_to = k.rows->written();
    if (run.stopped) {
      left.stop = run.stopped;
      throw *run.stopped;  // the pool starts no run after this one
    }
    const std::scoped_lock hold(progress_lock_);
    fractions_[s] = 1.0;
  }

  scenario& sc_;
  const run_options& options_;
  std::vector<run_left> runs_;
  run_guard guard_;
  std::vector<worker> workers_;  // the first one's model is the caller's
  std::vector<std::unique_ptr<model_runner>> owned_;
  std::mutex progress_lock_;
  progress_bar bar_;
  std::vector<double> fractions_;  // each strategy's progress, for the one bar
};

// A plain run: every strategy on the scenario's seed, side by side on `workers` threads (at most
// --threads, fewer when the memory limit holds fewer runs at once: memory.hpp), or in turn on one.
report::scenario_result plain_scenario(scenario& sc, model_runner& model,
                                       const run_options& options, unsigned workers) {
  if (options.shard) {
    throw scenario_error(sc.path() + ": not a sweep (no [sweep] and one replication): nothing to " +
                         "split into shards");
  }
  // From here to the last output written, a signal stops the run instead of the process, so
  // that what was done is written (before, the process simply exits).
  const interrupt_deferral deferred;
  // clients.csv lands beside the others at the end: streamed as the strategies run in turn, or
  // put together from the workers' spools when they run side by side.
  std::optional<report::output_folder> folder;
  std::optional<report::atomic_file> clients;
  if (options.out) {
    folder.emplace(*options.out);
    clients.emplace(folder->create("clients.csv"));
    clients->stream() << report::clients_csv_header_line;
  }
  const std::vector<client_strategy>& strategies = sc.strategies();
  report::scenario_result result = result_for(sc, model);
  for (const auto& s : strategies) result.policies.emplace_back(s.name(), s.policy().backoff);
  const auto wall_start = std::chrono::steady_clock::now();
  if (workers > 1) {
    strategy_pool pool(sc, model, workers, options, folder ? &folder->dir() : nullptr);
    pool.run();
    pool.gather(model, result, clients ? &clients->stream() : nullptr);
  } else {
    run_in_turn(sc, model, options, clients ? &clients->stream() : nullptr, result);
  }
  result.wall_s = seconds_since(wall_start);
  if (folder) {
    clients->commit();
    report::write_run_files(result, *folder);
  }
  return result;
}

}  // namespace

report::scenario_result run_scenario(scenario& sc, const run_options& options) {
  refuse_map(sc);
  std::unique_ptr<model_runner> model = make_model(sc);
  // Made before the run (so that a message shows what the process held then and the runs the
  // estimate assumed at once are the runs that ran), checked there when asked to.
  std::optional<memory_estimate> estimate;
  if (options.memory_limit != 0) {
    estimate = estimate_memory(sc, options.threads, options.memory_limit,
                               options.spool_points && !options.shard);
    if (options.preflight) check_memory(sc, *estimate, options.memory_limit);
  }
  report::scenario_result result =
      sc.is_sweep() ? sweep_scenario(sc, *model, options, estimate.has_value())
                    : plain_scenario(
                          sc, *model, options,
                          estimate ? estimate->workers : plain_run_workers(sc, options.threads, 0));
  if (result.stopped && result.stopped->reason == report::stop_reason::memory) {
    over_limit(sc, options, *estimate, *result.stopped);  // a memory stop needs a limit
  }
  if (result.stopped && result.stopped->reason == report::stop_reason::instant_limit) {
    stuck_at_one_instant(sc, *model, options, *result.stopped);
  }
  return result;
}

}  // namespace backoff::sim
