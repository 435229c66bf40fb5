#include "runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backoff/error.hpp"
#include "models/model.hpp"

namespace backoff::sim {
namespace {

// A one-line progress bar on stderr, drawn only after the run has taken a second.
class progress_bar {
 public:
  progress_bar(bool enabled, std::string label)
      : enabled_(enabled), label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}
  ~progress_bar() {
    if (drawn_) std::fputs("\r\033[K", stderr);
  }
  void update(double fraction) {
    if (!enabled_) return;
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    if (elapsed < std::chrono::seconds{1}) return;
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::fprintf(stderr, "\r%s [%s%s] %3d%%", label_.c_str(),
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(),
                 static_cast<int>(fraction * 100));
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  bool enabled_;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
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
  for (const auto& spec : sc.strategies()) model->check(client_strategy(spec));
  return model;
}

}  // namespace

void check_scenario(scenario& sc) {
  (void)make_model(sc);
}

scenario_result run_scenario(scenario& sc, const run_options& options) {
  std::unique_ptr<model_runner> model = make_model(sc);
  std::vector<client_strategy> strategies;
  for (const auto& spec : sc.strategies()) strategies.emplace_back(spec);

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
  const auto wall_start = std::chrono::steady_clock::now();
  const bool show = options.progress && ::isatty(STDERR_FILENO) == 1;
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    recorder rec({strategies[i].name(), model->bucket(), model->seconds_per_unit()},
                 options.out ? &clients : nullptr);
    progress_bar bar(show, fmt::format("{} {} ({}/{})", sc.name(), strategies[i].name(), i + 1,
                                       strategies.size()));
    const run_info info =
        model->run(strategies[i], sc.seed(), rec, [&](double f) { bar.update(f); });
    result.strategies.push_back(rec.finish(info.end, info.events));
    result.events += info.events;
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
  return result;
}

void write_summary_json(const scenario_result& r, std::ostream& out) {
  nlohmann::ordered_json doc;
  doc["scenario"] = r.scenario;
  doc["model"] = r.model;
  doc["seed"] = r.seed;
  doc["run"] = {{"events", r.events},
                {"wall_s", r.wall_s},
                {"events_per_s", r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0}};
  auto& list = doc["strategies"] = nlohmann::ordered_json::array();
  for (const auto& s : r.strategies) {
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
    j["latency_s"] = {{"p50", s.latency_s.p50},   {"p75", s.latency_s.p75},
                      {"p90", s.latency_s.p90},   {"p99", s.latency_s.p99},
                      {"p999", s.latency_s.p999}, {"max", s.latency_s.max}};
    j["goodput_per_s"] = s.goodput_per_s;
    j["recovery_s"] = number_or_null(s.recovery_s);
    j["peak_load"] = s.peak_load;
    j["mean_load"] = s.mean_load;
    j["events"] = s.events;
    list.push_back(std::move(j));
  }
  out << doc.dump(2) << '\n';
}

void write_timeseries_csv(const scenario_result& r, std::ostream& out) {
  out << "strategy,t_s,new,attempts,successes,errors,timeouts,in_service,queued,cwnd,ssthresh\n";
  std::string row;
  for (const auto& s : r.strategies) {
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      const bucket& b = s.buckets[i];
      const double t =
          static_cast<double>(static_cast<time_ns>(i) * s.bucket_width) * s.seconds_per_unit;
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
  rows.push_back({"strategy", "ops", "done", "failed", "attempts", "att/op", "makespan_s", "p50",
                  "p75", "p99", "max", "goodput/s", "peak"});
  for (const auto& s : r.strategies) {
    rows.push_back({s.name, std::to_string(s.operations), std::to_string(s.completed),
                    std::to_string(s.operations - s.completed), std::to_string(s.attempts),
                    fmt::format("{:.2f}", s.attempts_per_operation),
                    fmt::format("{:.4g}", s.makespan_s), fmt::format("{:.4g}", s.latency_s.p50),
                    fmt::format("{:.4g}", s.latency_s.p75), fmt::format("{:.4g}", s.latency_s.p99),
                    fmt::format("{:.4g}", s.latency_s.max), fmt::format("{:.4g}", s.goodput_per_s),
                    std::to_string(s.peak_load)});
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out = fmt::format("{} (model {}, seed {})\n", r.scenario, r.model, r.seed);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      out += c == 0 ? fmt::format("{:<{}}", row[c], width[c])
                    : fmt::format("  {:>{}}", row[c], width[c]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace backoff::sim
