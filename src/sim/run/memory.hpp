// SPDX-License-Identifier: Apache-2.0
// The simulator's memory limit: sizes as users write them (`512MiB`, `4GiB`, `none`), the default
// limit, and the up-front estimate that refuses a scenario before it allocates, naming the key
// that drives it. The engine's guard (engine/guard.hpp) enforces the same limit during the run,
// on the resident set, in case the estimate was wrong.
//
// The estimate is an upper bound built from what each model says one run holds (model_runner::
// memory(): bytes per client or operation in flight, measured with /usr/bin/time at 10^5 to
// 4 x 10^5 of them, docs/SIMULATOR.md "Memory limit", and its timeseries buckets): for a plain run
// each worker's run (its strategies run side by side, on as many workers as fit under the limit)
// plus every strategy's series, for sweeps each worker's run at the costliest point plus every
// run's summary; plus what the process already holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/size.hpp"
#include "sim/scenario/scenario.hpp"

namespace backoff::sim {

class memory_limit_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "4GiB", "512MiB", "1.5G", "100000000" (bytes); "0" or "none": no limit (returns 0). The one
// size parser, shared with the retry tool and the CLI's options (config/size.hpp).
using config::parse_size;
// "3.1 GiB", "512 MiB", "900 KiB", "12 B".
std::string format_size(std::uint64_t bytes);

// min(physical memory / 2, 8 GiB), where physical memory is the smaller of the machine's and the
// cgroup's (memory.max) when there is one.
std::uint64_t default_memory_limit();

struct memory_estimate {
  std::uint64_t bytes = 0;     // the whole process, what it holds now included
  std::uint64_t baseline = 0;  // what it held when estimated
  std::string driver;          // the largest term, e.g. "workload.operations = 20000000 in flight"
  unsigned workers = 1;        // the runs it assumed at once (a plain run's strategies, a sweep's)
};

// The estimate for running `sc` on `threads` workers (0: one per core; a plain run uses at most
// one per strategy, and no more than plain_run_workers(sc, threads, limit)). It builds the model
// of the scenario (and of each point, for a sweep), which reads and checks their keys
// (scenario_error on the first bad one), and allocates nothing of the runs.
// `spooled`: a sweep written point by point (run_options::spool_points), which holds only the
// points in flight; otherwise every run and the outputs built from them are counted.
memory_estimate estimate_memory(scenario& sc, unsigned threads, std::uint64_t limit = 0,
                                bool spooled = false);

// How many of a plain run's strategies run at once: up to `threads` (0: one per core) and one
// per strategy, and only as many as the estimate fits under `limit` (0: no limit), at least one.
// A run that fits one at a time runs one at a time rather than being refused.
unsigned plain_run_workers(scenario& sc, unsigned threads, std::uint64_t limit);

// Throws memory_limit_error, "scenario 'x' would need about 3.1 GiB (driver); the limit is
// 2.0 GiB (--memory-limit)", when the estimate is over `limit` (0: no limit).
void check_memory(scenario& sc, unsigned threads, std::uint64_t limit);
void check_memory(const scenario& sc, const memory_estimate& estimate, std::uint64_t limit);

}  // namespace backoff::sim
