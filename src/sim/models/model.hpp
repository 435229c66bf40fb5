// How a model plugs into the simulator. A model type (a server with its workload, such as seed
// 003's one-client burst) reads and checks its scenario keys once, then runs one strategy at a
// time on a fresh engine, reporting to a recorder. Adding a model is a new file that registers a
// factory here; the engine and the runner do not change.
//
//   class my_model final : public sim::model_runner {
//     explicit my_model(sim::config_reader& keys);          // read every key, with defaults
//     sim::run_info run(const sim::client_strategy& s, std::uint64_t seed,
//                       report::recorder& out) override;       // one strategy, one engine
//   };
//   const sim::model_registration reg{"my-model", [](sim::config_reader& k) {
//     return std::unique_ptr<sim::model_runner>(new my_model(k)); }};
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "report/recorder.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/strategy.hpp"

namespace backoff::sim {

struct run_info {
  time_ns end = 0;           // the run's last instant, in model units
  std::uint64_t events = 0;  // events the engine processed
};

// Called between slices of a run with the fraction done, for the progress bar.
using progress_fn = std::function<void(double fraction)>;

class model_runner {
 public:
  virtual ~model_runner() = default;
  // Output units: 1e-9 for nanosecond models, 1 for tick models (a tick reported as "1 s").
  virtual double seconds_per_unit() const { return 1e-9; }
  // The width of a timeseries bucket, in model units.
  virtual time_ns bucket() const = 0;
  // The server outage, if the model has one: the recorder then measures recovery_s.
  virtual std::optional<report::outage_window> outage() const { return std::nullopt; }
  // Rejects (scenario_error) a strategy this model cannot run, before any run starts.
  virtual void check(const client_strategy& strategy) const { (void)strategy; }
  // Checks the scenario's strategies together (e.g. that names the model's keys refer to exist).
  virtual void check_all(const std::vector<client_strategy>& all) const {
    for (const auto& s : all) check(s);
  }
  virtual run_info run(const client_strategy& strategy, std::uint64_t seed, report::recorder& out,
                       const progress_fn& progress) = 0;
};

using model_factory = std::function<std::unique_ptr<model_runner>(config_reader&)>;

// Registers a model type by name at static-initialization time (one object per model file).
struct model_registration {
  model_registration(std::string_view name, model_factory factory);
};

const model_factory* find_model(std::string_view name);
std::vector<std::string_view> model_names();

// Random streams of a run: one per component, independent of each other (random.hpp's
// derive_seed), and the same for every strategy, so strategies meet the same arrivals.
enum class stream : std::uint64_t { workload = 1, server = 2, client = 3, network = 4, outage = 5 };
inline std::uint64_t stream_seed(std::uint64_t seed, stream s, std::uint64_t index = 0) {
  return derive_seed(derive_seed(seed, static_cast<std::uint64_t>(s)), index);
}

}  // namespace backoff::sim
