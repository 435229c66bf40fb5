// SPDX-License-Identifier: Apache-2.0
// How a model plugs into the simulator. A model type (a server with its workload, such as seed
// 003's one-client burst) reads and checks its scenario keys once, then runs one strategy at a
// time on a fresh engine, reporting to a recorder. Adding a model is a new file that registers a
// factory here; the engine and the runner do not change.
//
//   class my_model final : public sim::model_runner {
//     explicit my_model(sim::config_reader& keys);          // read every key, with defaults
//     sim::run_info run(const sim::client_strategy& s, std::uint64_t seed, sim::engine& e,
//                       report::recorder& out, const sim::progress_fn&) override;
//                                        // one strategy on the fresh engine the runner gives
//     sim::memory_need memory() const override;  // what a run holds, from the keys it read
//   };
//   const sim::model_registration reg{"my-model", [](sim::config_reader& k) {
//     return std::unique_ptr<sim::model_runner>(new my_model(k)); }};
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/duration.hpp"
#include "report/recorder.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/strategy.hpp"

namespace backoff::sim {

// What one run of one strategy holds, for the memory estimate (sim/run/memory.hpp), which refuses
// a scenario before anything is allocated. Each model computes it from the keys it read, with
// bytes per client or operation it measured (docs/SIMULATOR.md, "Memory limit").
struct memory_need {
  double state_bytes = 0;        // the clients or operations that can be in flight at once
  std::string state_what;        // the key that drives it: "workload.clients = 800 clients"
  std::int64_t state_count = 0;  // how many of them (800)
  double buckets = 0;            // timeseries buckets of one run
  std::string buckets_what;      // "run.limit = 1d in buckets of run.bucket = 1s"

  // `count` things of `bytes_each`, named by `key` and what they are.
  void per(std::string_view key, std::int64_t count, double bytes_each, std::string_view what) {
    state_count = std::max<std::int64_t>(count, 0);
    state_bytes = static_cast<double>(state_count) * bytes_each;
    state_what = std::string(key) + " = " + std::to_string(count) + " " + std::string(what);
  }
  // A run of `horizon` (named by `key`) cut into buckets of `bucket` (run.bucket).
  void over(std::string_view key, time_ns horizon, time_ns bucket) {
    buckets = std::ceil(static_cast<double>(std::max<time_ns>(horizon, 0)) /
                        static_cast<double>(std::max<time_ns>(bucket, 1)));
    buckets_what = std::string(key) + " = " + format_duration(duration{horizon}) +
                   " in buckets of run.bucket = " + format_duration(duration{bucket});
  }
};

struct run_info {
  time_ns end = 0;           // the run's last instant, in model units
  std::uint64_t events = 0;  // events the engine processed
};

// Called between slices of a run with the fraction done, for the progress bar.
using progress_fn = std::function<void(double fraction)>;

// The guards of SPEC 7.2 that a model carries out. A model whose clients retry through the
// library's retry_controller gets a circuit breaker through its gates for free; hedging (several
// attempts of one operation in flight) and per-attempt deadlines need the model's own events.
// make_model refuses, with one line, a strategy whose guard its model would silently ignore.
using backoff::guard_support;  // what a model honours of a strategy's guards

class model_runner {
 public:
  virtual ~model_runner() = default;
  // What this model honours of a strategy's breaker, hedge and deadline keys.
  virtual guard_support guards() const { return {}; }
  // Whether its strategies may set guards per edge (edge.NAME.KEY): the system model's only.
  virtual bool takes_edge_settings() const { return false; }
  // Output units: 1e-9 for nanosecond models, 1 for tick models (a tick reported as "1 s").
  virtual double seconds_per_unit() const { return 1e-9; }
  // The width of a timeseries bucket, in model units.
  virtual time_ns bucket() const = 0;
  // The server outage, if the model has one: the recorder then measures recovery_s.
  virtual std::optional<report::outage_window> outage() const { return std::nullopt; }
  // How long goodput must hold at 90 % of its pre-outage level for recovery_s (SPEC 6.2: 5 s);
  // a model whose runs are shorter names its own key (outage-amplification's recovery.hold).
  virtual time_ns recovery_hold() const { return static_cast<time_ns>(5.0 / seconds_per_unit()); }
  // What one run holds (see memory_need).
  virtual memory_need memory() const = 0;
  // Rejects (scenario_error) a strategy this model cannot run, before any run starts.
  virtual void check(const client_strategy& strategy) const { (void)strategy; }
  // Checks the scenario's strategies together (e.g. that names the model's keys refer to exist).
  virtual void check_all(const std::vector<client_strategy>& all) const {
    for (const auto& s : all) check(s);
  }
  // One run of one strategy on `e`, a fresh engine the runner made (with its guard).
  virtual run_info run(const client_strategy& strategy, std::uint64_t seed, engine& e,
                       report::recorder& out, const progress_fn& progress) = 0;

  // run.max_events_per_instant, which make_model reads for every model: the runner gives its
  // engines this limit (engine.hpp).
  std::uint64_t max_events_per_instant() const noexcept { return max_events_per_instant_; }
  void set_max_events_per_instant(std::uint64_t limit) noexcept { max_events_per_instant_ = limit; }

 private:
  std::uint64_t max_events_per_instant_ = 0;
};

// The default of run.max_events_per_instant: far above what a legitimate instant holds (every
// client or operation acting a few times at once, as in a tick of tick-burst), so that only a
// loop at zero delay reaches it; a model of n clients gets max(10^7, 100 n).
std::int64_t default_max_events_per_instant(const memory_need& need);

using model_factory = std::function<std::unique_ptr<model_runner>(config_reader&)>;

// Registers a model type by name at static-initialization time (one object per model file).
struct model_registration {
  model_registration(std::string_view name, model_factory factory);
};

const model_factory* find_model(std::string_view name);
// The model of `sc`, its keys read and checked (no key left unread) and its strategies checked;
// scenario_error on the first problem.
std::unique_ptr<model_runner> make_model(scenario& sc);
std::vector<std::string_view> model_names();

// Random streams of a run: one per component, independent of each other (random.hpp's
// derive_seed), and the same for every strategy, so strategies meet the same arrivals.
enum class stream : std::uint64_t { workload = 1, server = 2, client = 3, network = 4, outage = 5 };
inline std::uint64_t stream_seed(std::uint64_t seed, stream s, std::uint64_t index = 0) {
  return derive_seed(derive_seed(seed, static_cast<std::uint64_t>(s)), index);
}

}  // namespace backoff::sim
