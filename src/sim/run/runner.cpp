#include "runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <boost/math/distributions/students_t.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "models/model.hpp"

namespace backoff::sim {
namespace {

// A one-line progress bar on stderr, drawn only after the run has taken a second, with the
// time left estimated from the pace so far.
class progress_bar {
 public:
  progress_bar(bool enabled, std::string label)
      : enabled_(enabled), label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}
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

nlohmann::ordered_json number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

namespace {

std::unique_ptr<model_runner> make_model(scenario& sc) {
  const model_factory* factory = find_model(sc.model());
  if (factory == nullptr) {
    std::string known;
    for (auto name : model_names()) known += (known.empty() ? "" : ", ") + std::string(name);
    sc.config().fail("model", "unknown model '" + sc.model() + "' (known: " + known + ")");
  }
  std::unique_ptr<model_runner> model = (*factory)(sc.config());
  sc.config().finish();
  std::vector<client_strategy> strategies;
  for (const auto& spec : sc.strategies()) strategies.emplace_back(spec);
  model->check_all(strategies);
  return model;
}

}  // namespace

std::uint64_t replication_seed(std::uint64_t seed, std::uint32_t replication) {
  return replication == 0 ? seed : derive_seed(seed, 0x7265706cULL + replication);
}

mean_ci mean_and_ci95(const std::vector<double>& values) {
  mean_ci out;
  if (values.empty()) return out;
  double sum = 0;
  for (const double v : values) sum += v;
  const auto n = static_cast<double>(values.size());
  out.mean = sum / n;
  if (values.size() < 2) return out;
  if (std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); })) {
    out.mean = values.front();  // exactly, without the rounding of the sum
    return out;
  }
  double squares = 0;
  for (const double v : values) squares += (v - out.mean) * (v - out.mean);
  const double sd = std::sqrt(squares / (n - 1));
  const boost::math::students_t t(n - 1);
  out.ci95 = boost::math::quantile(t, 0.975) * sd / std::sqrt(n);
  return out;
}

namespace {

recorder_options recorder_for(const model_runner& model, const std::string& strategy) {
  recorder_options o;
  o.strategy = strategy;
  o.bucket = model.bucket();
  o.seconds_per_unit = model.seconds_per_unit();
  o.outage = model.outage();
  o.baseline = static_cast<time_ns>(30.0 / o.seconds_per_unit);
  o.recovery_hold = static_cast<time_ns>(5.0 / o.seconds_per_unit);
  return o;
}

// Runs every point x strategy x replication; tasks are numbered point-major, and each worker
// builds its own scenario and model for the point it is on (models keep per-run state).
void run_sweep(scenario& sc, const std::vector<client_strategy>& strategies,
               const run_options& options, scenario_result& result) {
  const std::vector<sweep_point> points = sc.points();
  // Check every point before running any, so a bad value at the last point fails at once.
  for (const auto& p : points) {
    scenario at = sc.at(p);
    (void)make_model(at);
  }
  const std::size_t per_point = strategies.size() * sc.replications();
  const std::size_t all_tasks = points.size() * per_point;
  // This shard's tasks: every count-th from index - 1 (round robin spreads the costly points).
  const shard_spec part = options.shard.value_or(shard_spec{});
  std::vector<std::size_t> mine;
  for (std::size_t t = part.index - 1; t < all_tasks; t += part.count) mine.push_back(t);
  const std::size_t tasks = mine.size();
  result.shard = options.shard;
  result.sweep = true;
  result.replications = sc.replications();
  for (const auto& axis : sc.axes()) result.sweep_keys.push_back(axis.key);
  result.points.resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (const auto& [axis, value] : points[i].params) {
      result.points[i].params.emplace_back(axis->key, *value);
    }
    for (const auto& s : strategies) {
      result.points[i].strategies.push_back({s.name(),
                                             std::vector<strategy_summary>(sc.replications()),
                                             std::vector<std::uint8_t>(sc.replications(), 0)});
    }
  }

  unsigned threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  threads = std::max(
      1U, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(tasks, 1))));
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex lock;  // guards the progress bar, the first error and the first stop
  std::exception_ptr error;
  std::size_t error_task = tasks;
  std::optional<run_stopped> stop;
  run_guard limits;
  limits.memory_limit = options.memory_limit;
  progress_bar bar(options.progress && ::isatty(STDERR_FILENO) == 1,
                   fmt::format("{} ({} runs)", sc.name(), tasks));

  const auto worker = [&] {
    const guard_scope scope(limits);
    std::size_t point = points.size();
    std::unique_ptr<model_runner> model;
    for (;;) {
      const std::size_t slot = next.fetch_add(1);
      if (slot >= tasks || failed.load()) return;
      const std::size_t task = mine[slot];
      try {
        limits.check_between_runs();
        const std::size_t p = task / per_point;
        const std::size_t s = (task % per_point) / sc.replications();
        const auto rep = static_cast<std::uint32_t>(task % sc.replications());
        if (p != point) {
          scenario at = sc.at(points[p]);
          model = make_model(at);
          point = p;
        }
        recorder rec(recorder_for(*model, strategies[s].name()), nullptr);
        const run_info info =
            model->run(strategies[s], replication_seed(sc.seed(), rep), rec, [](double) {});
        strategy_summary summary = rec.finish(info.end, info.events);
        summary.buckets.clear();
        summary.buckets.shrink_to_fit();
        result.points[p].strategies[s].runs[rep] = std::move(summary);
        result.points[p].strategies[s].ran[rep] = 1;
      } catch (const run_stopped& stopped) {
        // Not an error: the runs done so far are kept and the outputs marked partial.
        const std::scoped_lock guard_lock(lock);
        if (!stop || stopped.resident > stop->resident) stop = stopped;
        failed.store(true);
        return;
      } catch (...) {
        const std::scoped_lock guard(lock);
        if (task < error_task) {
          error = std::current_exception();
          error_task = task;
        }
        failed.store(true);
        return;
      }
      const std::size_t finished = done.fetch_add(1) + 1;
      const std::scoped_lock guard(lock);
      bar.update(static_cast<double>(finished) / static_cast<double>(tasks));
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  for (const auto& p : result.points) {
    for (const auto& cell : p.strategies) {
      for (const auto& run : cell.runs) result.events += run.events;
    }
  }
  result.fingerprint = sc.fingerprint();
  if (stop) {
    run_stop info;
    info.reason = stop->reason;
    info.signal = stop->signal;
    info.resident = stop->resident;
    info.runs_done = done.load();
    info.runs = tasks;
    result.stopped = std::move(info);
  }
}

// The memory guard stopped the run: the one-line error, once the partial outputs are written.
[[noreturn]] void over_limit(const scenario& sc, const run_options& options,
                             const memory_estimate& e, const run_stop& stop) {
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

}  // namespace

void check_scenario(scenario& sc) {
  (void)make_model(sc);
  for (const auto& p : sc.is_sweep() ? sc.points() : std::vector<sweep_point>{}) {
    scenario at = sc.at(p);
    (void)make_model(at);
  }
}

std::string describe(const run_stop& stop) {
  if (stop.reason == stop_reason::memory) return "over the memory limit";
  const char* name = stop.signal == SIGINT    ? "SIGINT"
                     : stop.signal == SIGTERM ? "SIGTERM"
                                              : nullptr;
  return name != nullptr ? fmt::format("interrupted ({})", name)
                         : fmt::format("interrupted (signal {})", stop.signal);
}

scenario_result run_scenario(scenario& sc, const run_options& options) {
  std::unique_ptr<model_runner> model = make_model(sc);
  std::vector<client_strategy> strategies;
  for (const auto& spec : sc.strategies()) strategies.emplace_back(spec);
  // Made before the run when checked up front (so that the message shows what the process held
  // then), else only when the guard stops the run.
  std::optional<memory_estimate> estimate;
  if (options.memory_limit != 0 && options.preflight) {
    if (sc.is_sweep()) check_scenario(sc);  // every point's keys, before estimating them
    estimate = estimate_memory(sc, options.threads);
    check_memory(sc, *estimate, options.memory_limit);
  }

  if (sc.is_sweep()) {
    scenario_result result;
    result.scenario = sc.name();
    result.model = sc.model();
    result.seed = sc.seed();
    const auto wall_start = std::chrono::steady_clock::now();
    result.outage = model->outage().has_value();
    run_sweep(sc, strategies, options, result);
    result.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (options.out && options.shard && result.stopped) {
      // A partial shard cannot be merged: nothing is written, the shard is run again.
    } else if (options.out && options.shard) {
      std::filesystem::create_directories(*options.out);
      const auto file = *options.out / shard_file_name(*options.shard);
      std::ofstream shard(file, std::ios::binary);
      write_shard_json(result, shard);
      if (!shard) throw scenario_error(file.string() + ": could not write");
    } else if (options.out) {
      write_sweep_outputs(result, *options.out);
    }
    if (result.stopped && result.stopped->reason == stop_reason::memory) {
      over_limit(sc, options, estimate ? *estimate : estimate_memory(sc, options.threads),
                 *result.stopped);
    }
    return result;
  }
  if (options.shard) {
    throw scenario_error(sc.path() + ": not a sweep (no [sweep] and one replication): nothing to " +
                         "split into shards");
  }

  std::ofstream clients;
  if (options.out) {
    std::filesystem::create_directories(*options.out);
    clients.open(*options.out / "clients.csv", std::ios::binary);
    if (!clients) throw scenario_error((*options.out / "clients.csv").string() + ": cannot write");
    clients << "strategy,id,first_attempt_s,done_s,attempts,latency_s,status\n";
  }

  scenario_result result;
  result.scenario = sc.name();
  result.model = sc.model();
  result.seed = sc.seed();
  result.outage = model->outage().has_value();
  for (const auto& s : strategies) {
    result.policies.emplace_back(s.name(), s.policy().backoff.to_string());
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const bool show = options.progress && ::isatty(STDERR_FILENO) == 1;
  run_guard guard;
  guard.memory_limit = options.memory_limit;
  const guard_scope scope(guard);
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    recorder rec(recorder_for(*model, strategies[i].name()), options.out ? &clients : nullptr);
    try {
      guard.check_between_runs();
      progress_bar bar(show, fmt::format("{} {} ({}/{})", sc.name(), strategies[i].name(), i + 1,
                                         strategies.size()));
      const run_info info =
          model->run(strategies[i], sc.seed(), rec, [&](double f) { bar.update(f); });
      result.strategies.push_back(rec.finish(info.end, info.events));
      result.events += info.events;
    } catch (const run_stopped& stopped) {
      run_stop info;
      info.reason = stopped.reason;
      info.signal = stopped.signal;
      info.resident = stopped.resident;
      if (stopped.events > 0) {
        // The figures up to where the engine stopped; the operations still in flight were not
        // reported by the model (it did not get to its end), so they are counted unfinished
        // here and have no clients.csv row.
        strategy_summary partial = rec.finish(stopped.at, stopped.events);
        partial.unfinished = partial.operations - partial.completed - partial.gave_up;
        result.strategies.push_back(std::move(partial));
        result.events += stopped.events;
        info.strategy = strategies[i].name();
        info.at_s = static_cast<double>(stopped.at) * model->seconds_per_unit();
      }
      for (std::size_t j = info.strategy.empty() ? i : i + 1; j < strategies.size(); ++j) {
        info.not_run.push_back(strategies[j].name());
      }
      result.stopped = std::move(info);
      break;
    }
  }
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  if (options.out) {
    std::ofstream summary(*options.out / "summary.json", std::ios::binary);
    write_summary_json(result, summary);
    std::ofstream series(*options.out / "timeseries.csv", std::ios::binary);
    write_timeseries_csv(result, series);
    if (!summary || !series || !clients) {
      throw scenario_error(options.out->string() + ": could not write the outputs");
    }
  }
  if (result.stopped && result.stopped->reason == stop_reason::memory) {
    over_limit(sc, options, estimate ? *estimate : estimate_memory(sc, options.threads),
               *result.stopped);
  }
  return result;
}

namespace {

nlohmann::ordered_json strategy_json(const strategy_summary& s) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["operations"] = s.operations;
  j["completed"] = s.completed;
  j["failed"] = s.operations - s.completed;
  j["gave_up"] = s.gave_up;
  j["unfinished"] = s.unfinished;
  j["attempts"] = s.attempts;
  j["attempts_per_operation"] = s.attempts_per_operation;
  j["makespan_s"] = s.makespan_s;
  j["latency_s"] = {{"p50", s.latency_s.p50}, {"p75", s.latency_s.p75},   {"p90", s.latency_s.p90},
                    {"p99", s.latency_s.p99}, {"p999", s.latency_s.p999}, {"max", s.latency_s.max}};
  j["goodput_per_s"] = s.goodput_per_s;
  j["recovery_s"] = number_or_null(s.recovery_s);
  j["peak_load"] = s.peak_load;
  j["mean_load"] = s.mean_load;
  j["events"] = s.events;
  return j;
}

// The metrics averaged over replications, by their summary.json path.
struct summary_metric {
  const char* name;
  double (*get)(const strategy_summary&);
};
const std::vector<summary_metric>& metrics() {
  static const std::vector<summary_metric> all{
      {"operations", [](const strategy_summary& s) { return static_cast<double>(s.operations); }},
      {"completed", [](const strategy_summary& s) { return static_cast<double>(s.completed); }},
      {"failed",
       [](const strategy_summary& s) { return static_cast<double>(s.operations - s.completed); }},
      {"gave_up", [](const strategy_summary& s) { return static_cast<double>(s.gave_up); }},
      {"unfinished", [](const strategy_summary& s) { return static_cast<double>(s.unfinished); }},
      {"attempts", [](const strategy_summary& s) { return static_cast<double>(s.attempts); }},
      {"attempts_per_operation",
       [](const strategy_summary& s) { return s.attempts_per_operation; }},
      {"makespan_s", [](const strategy_summary& s) { return s.makespan_s; }},
      {"latency_s.p50", [](const strategy_summary& s) { return s.latency_s.p50; }},
      {"latency_s.p75", [](const strategy_summary& s) { return s.latency_s.p75; }},
      {"latency_s.p90", [](const strategy_summary& s) { return s.latency_s.p90; }},
      {"latency_s.p99", [](const strategy_summary& s) { return s.latency_s.p99; }},
      {"latency_s.p999", [](const strategy_summary& s) { return s.latency_s.p999; }},
      {"latency_s.max", [](const strategy_summary& s) { return s.latency_s.max; }},
      {"goodput_per_s", [](const strategy_summary& s) { return s.goodput_per_s; }},
      {"peak_load", [](const strategy_summary& s) { return static_cast<double>(s.peak_load); }},
      {"mean_load", [](const strategy_summary& s) { return s.mean_load; }},
      {"events", [](const strategy_summary& s) { return static_cast<double>(s.events); }},
  };
  return all;
}

mean_ci metric_of(const sweep_cell& cell, const summary_metric& m) {
  std::vector<double> v;
  v.reserve(cell.runs.size());
  for (const auto& run : cell.runs) v.push_back(m.get(run));
  return mean_and_ci95(v);
}

// recovery_s over the runs that recovered; their count beside it.
std::pair<std::optional<mean_ci>, std::size_t> recovery_of(const sweep_cell& cell) {
  std::vector<double> v;
  for (const auto& run : cell.runs) {
    if (run.recovery_s) v.push_back(*run.recovery_s);
  }
  if (v.empty()) return {std::nullopt, 0};
  return {mean_and_ci95(v), v.size()};
}

// Sets j["a.b"] as j["a"]["b"].
void put(nlohmann::ordered_json& j, const std::string& path, double value) {
  const auto dot = path.find('.');
  if (dot == std::string::npos) {
    j[path] = value;
  } else {
    j[path.substr(0, dot)][path.substr(dot + 1)] = value;
  }
}

nlohmann::ordered_json cell_json(const sweep_cell& cell) {
  if (cell.runs.size() == 1) return strategy_json(cell.runs.front());
  nlohmann::ordered_json j, ci;
  j["name"] = cell.name;
  j["replications"] = cell.runs.size();
  for (const auto& m : metrics()) {
    const mean_ci v = metric_of(cell, m);
    put(j, m.name, v.mean);
    put(ci, m.name, v.ci95);
  }
  const auto [recovery, recovered] = recovery_of(cell);
  j["recovery_s"] = recovery ? nlohmann::ordered_json(recovery->mean) : nullptr;
  j["recovered_runs"] = recovered;
  ci["recovery_s"] = recovery ? nlohmann::ordered_json(recovery->ci95) : nullptr;
  j["ci95"] = std::move(ci);
  return j;
}

// A cell of an interrupted sweep: only the replications that ran.
sweep_cell ran_runs(const sweep_cell& cell) {
  sweep_cell out{cell.name, {}, {}};
  for (std::size_t r = 0; r < cell.runs.size(); ++r) {
    if (cell.ran[r] != 0) {
      out.runs.push_back(cell.runs[r]);
      out.ran.push_back(1);
    }
  }
  return out;
}

bool complete(const sweep_cell& cell) {
  return std::find(cell.ran.begin(), cell.ran.end(), 0) == cell.ran.end();
}

nlohmann::ordered_json partial_cell_json(const sweep_cell& cell) {
  const sweep_cell done = ran_runs(cell);
  nlohmann::ordered_json j;
  if (done.runs.empty()) {
    j["name"] = cell.name;
  } else {
    j = cell_json(done);
  }
  j["partial"] = true;
  j["replications_done"] = done.runs.size();
  return j;
}

const char* reason_key(stop_reason r) {
  return r == stop_reason::memory ? "memory-limit" : "interrupted";
}

nlohmann::ordered_json param_json(const sweep_value& v) {
  switch (v.type) {
    case sweep_value::kind::integer:
      return std::stoll(v.text);
    case sweep_value::kind::number:
      return std::stod(v.text);
    case sweep_value::kind::boolean:
      return v.text == "true";
    case sweep_value::kind::string:
      break;
  }
  return v.text;
}

// A CSV field, quoted when it needs to be.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void write_summary_json(const scenario_result& r, std::ostream& out) {
  nlohmann::ordered_json doc;
  doc["scenario"] = r.scenario;
  doc["model"] = r.model;
  doc["seed"] = r.seed;
  doc["run"] = {{"events", r.events},
                {"wall_s", r.wall_s},
                {"events_per_s", r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0}};
  // Only a stopped run has these keys: a whole run's summary.json is as it always was.
  if (r.stopped) {
    const run_stop& stop = *r.stopped;
    doc["partial"] = true;
    doc["reason"] = reason_key(stop.reason);
    if (stop.reason == stop_reason::interrupted) {
      doc["signal"] = stop.signal == SIGINT    ? "SIGINT"
                      : stop.signal == SIGTERM ? "SIGTERM"
                                               : std::to_string(stop.signal);
    }
    if (r.sweep) {
      doc["runs_done"] = stop.runs_done;
      doc["runs"] = stop.runs;
    } else {
      doc["stopped_at_s"] = stop.strategy.empty() ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(stop.at_s);
      doc["stopped_in"] = stop.strategy.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(stop.strategy);
      doc["not_run"] = stop.not_run;
    }
  }
  if (r.sweep) {
    doc["replications"] = r.replications;
    auto& points = doc["points"] = nlohmann::ordered_json::array();
    for (const auto& p : r.points) {
      nlohmann::ordered_json point;
      point["params"] = nlohmann::ordered_json::object();
      for (const auto& [key, value] : p.params) point["params"][key] = param_json(value);
      auto& list = point["strategies"] = nlohmann::ordered_json::array();
      for (const auto& cell : p.strategies) {
        list.push_back(complete(cell) ? cell_json(cell) : partial_cell_json(cell));
      }
      points.push_back(std::move(point));
    }
  } else {
    auto& list = doc["strategies"] = nlohmann::ordered_json::array();
    for (const auto& s : r.strategies) {
      list.push_back(strategy_json(s));
      if (r.stopped && s.name == r.stopped->strategy) list.back()["partial"] = true;
    }
  }
  out << doc.dump(2) << '\n';
}

void write_sweep_outputs(const scenario_result& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream summary(dir / "summary.json", std::ios::binary);
  write_summary_json(r, summary);
  std::ofstream table(dir / "sweep.csv", std::ios::binary);
  write_sweep_csv(r, table);
  if (!summary || !table) throw scenario_error(dir.string() + ": could not write the outputs");
}

void write_sweep_csv(const scenario_result& r, std::ostream& out) {
  std::string header;
  for (const auto& key : r.sweep_keys) header += csv_field(key) + ",";
  header += "strategy,replications";
  for (const auto& m : metrics()) {
    std::string name = m.name;
    std::replace(name.begin(), name.end(), '.', '_');
    header += "," + name + "," + name + "_ci95";
  }
  header += ",recovery_s,recovery_s_ci95,recovered_runs\n";
  out << header;
  std::string row;
  for (const auto& p : r.points) {
    for (const auto& cell : p.strategies) {
      if (!complete(cell)) continue;  // an interrupted sweep: summary.json marks these
      row.clear();
      for (const auto& [key, value] : p.params) row += csv_field(value.text) + ",";
      row += csv_field(cell.name) + "," + std::to_string(cell.runs.size());
      for (const auto& m : metrics()) {
        const mean_ci v = metric_of(cell, m);
        fmt::format_to(std::back_inserter(row), ",{},{}", v.mean, v.ci95);
      }
      const auto [recovery, recovered] = recovery_of(cell);
      if (recovery) {
        fmt::format_to(std::back_inserter(row), ",{},{},{}\n", recovery->mean, recovery->ci95,
                       recovered);
      } else {
        fmt::format_to(std::back_inserter(row), ",,,0\n");
      }
      out << row;
    }
  }
}

void write_timeseries_csv(const scenario_result& r, std::ostream& out) {
  out << "strategy,t_s,new,attempts,successes,errors,timeouts,in_service,queued,cwnd,ssthresh\n";
  std::string row;
  for (const auto& s : r.strategies) {
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const bucket& b = s.buckets[i];
      // Divide by whole units per second where there are (1e9 ns): 58 s, not 58.00000000000001.
      const double start = static_cast<double>(static_cast<time_ns>(i) * s.bucket_width);
      const double t = s.seconds_per_unit < 1 ? start / std::round(1 / s.seconds_per_unit)
                                              : start * s.seconds_per_unit;
      row.clear();
      fmt::format_to(std::back_inserter(row), "{},{},{},{},{},{},{},{},{},", s.name, t,
                     b.new_operations, b.attempts, b.successes, b.errors, b.timeouts, b.in_service,
                     b.queued);
      if (s.has_window) {
        fmt::format_to(std::back_inserter(row), "{},{}\n", b.cwnd, b.ssthresh);
      } else {
        row += ",\n";
      }
      out << row;
    }
  }
}

std::string comparison_table(const scenario_result& r) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = r.sweep_keys;
  for (const char* h : {"strategy", "ops", "done", "failed", "attempts", "att/op", "makespan_s",
                        "p50", "p75", "p99", "max", "goodput/s", "peak"}) {
    header.emplace_back(h);
  }
  if (r.outage) header.emplace_back("recovery_s");
  rows.push_back(header);
  const auto num = [](double v) { return fmt::format("{:.4g}", v); };
  const auto add = [&](std::vector<std::string> row, const strategy_summary& s) {
    for (auto v : {std::to_string(s.operations), std::to_string(s.completed),
                   std::to_string(s.operations - s.completed), std::to_string(s.attempts),
                   fmt::format("{:.2f}", s.attempts_per_operation), num(s.makespan_s),
                   num(s.latency_s.p50), num(s.latency_s.p75), num(s.latency_s.p99),
                   num(s.latency_s.max), num(s.goodput_per_s), std::to_string(s.peak_load)}) {
      row.push_back(std::move(v));
    }
    if (r.outage) row.push_back(s.recovery_s ? num(*s.recovery_s) : "never");
    rows.push_back(std::move(row));
  };
  for (const auto& s : r.strategies) add({s.name}, s);
  for (const auto& p : r.points) {
    for (const auto& full : p.strategies) {
      const bool whole = complete(full);
      const sweep_cell cell = whole ? full : ran_runs(full);
      if (cell.runs.empty()) continue;
      std::vector<std::string> row;
      for (const auto& [key, value] : p.params) row.push_back(value.text);
      row.push_back(
          whole ? cell.name
                : fmt::format("{} ({}/{} runs)", cell.name, cell.runs.size(), full.runs.size()));
      if (cell.runs.size() == 1) {
        add(std::move(row), cell.runs.front());
        continue;
      }
      // Means over the replications (counts rounded for display).
      const auto mean = [&](const char* name) {
        for (const auto& m : metrics()) {
          if (std::string_view(m.name) == name) return metric_of(cell, m).mean;
        }
        return 0.0;
      };
      for (const char* name : {"operations", "completed", "failed", "attempts"}) {
        row.push_back(fmt::format("{:.1f}", mean(name)));
      }
      row.push_back(fmt::format("{:.2f}", mean("attempts_per_operation")));
      for (const char* name : {"makespan_s", "latency_s.p50", "latency_s.p75", "latency_s.p99",
                               "latency_s.max", "goodput_per_s", "peak_load"}) {
        row.push_back(num(mean(name)));
      }
      if (r.outage) {
        const auto [recovery, recovered] = recovery_of(cell);
        row.push_back(
            recovery ? fmt::format("{} ({}/{})", num(recovery->mean), recovered, cell.runs.size())
                     : "never");
      }
      rows.push_back(std::move(row));
    }
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out = fmt::format("{} (model {}, seed {}", r.scenario, r.model, r.seed);
  if (r.sweep && r.replications > 1) {
    out += fmt::format(", means over {} replications", r.replications);
  }
  out += ")\n";
  const std::size_t text_columns = r.sweep_keys.size() + 1;  // left-aligned
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string sep = c == 0 ? "" : "  ";
      out += c < text_columns ? fmt::format("{}{:<{}}", sep, row[c], width[c])
                              : fmt::format("{}{:>{}}", sep, row[c], width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  if (r.stopped) {
    const run_stop& stop = *r.stopped;
    out += "partial: " + describe(stop);
    if (r.sweep) {
      out += fmt::format(" after {} of {} runs; a strategy marked (k/n runs) has only k",
                         stop.runs_done, stop.runs);
    } else if (!stop.strategy.empty()) {
      out += fmt::format(" at {:.6g} s of simulated time in {} (its row stops there)", stop.at_s,
                         stop.strategy);
    }
    if (!stop.not_run.empty()) {
      std::string names;
      for (const auto& n : stop.not_run) names += (names.empty() ? "" : ", ") + n;
      out += "; not run: " + names;
    }
    out += '\n';
  }
  return out;
}

}  // namespace backoff::sim
