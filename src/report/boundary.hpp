// SPDX-License-Identifier: Apache-2.0
// What a metastable map (issue 23, SPEC 7.3 `metastable-map`) writes: boundary.csv, the `map`
// section of summary.json and the table printed on stdout; and the outage length users feel
// (felt_outage_s), computed after a run from its goodput series.
//
//   report::write_boundary_csv(result, out);      // model,load,trigger,trigger_lo,trigger_hi,...
//   std::cout << report::map_table(result);
//   auto x = report::down_periods(summary, {.outage = w, .end = end});   // seconds each
//   std::optional<double> felt = report::felt_outage(x);                // E[X^2] / (2 E[X])
//
// Down periods. The goodput level is recovery_s's (recorder.cpp): the mean successes per bucket
// over the whole buckets in the `baseline` before the outage starts, and a bucket is down when
// its successes are below `fraction` (90 %) of it. Counted from the bucket where the outage
// starts (dips before it are the baseline's own noise), a down period runs from a down bucket to
// the last down bucket before `hold` consecutive buckets at or above the level (the rule by which
// recovery_s says a run recovered), or to the last down bucket of the run if that never comes
// (then the period is cut by the run's end, and its length is a lower bound).
// felt_outage = E[X^2] / (2 E[X]) over the periods X (Brooker, "Meet Alice", 2026: a user who
// arrives at a random instant of down time sees on average this much of it still to come; one
// period of length L gives L / 2). 0 when no bucket was down; none without a baseline.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "result.hpp"

namespace backoff::report {

struct down_rule {
  outage_window outage;                  // model units
  time_units end = 0;                    // the run's end
  time_units baseline = 30'000'000'000;  // as recorder_options::baseline
  time_units hold = 5'000'000'000;       // as recorder_options::recovery_hold
  double fraction = 0.9;                 // as recorder_options::recovery_fraction
};

// The down periods of a run, in seconds (ticks in tick models), in time order; none when the run
// has no baseline to measure against (nothing succeeded before the outage).
std::optional<std::vector<double>> down_periods(const strategy_summary& s, const down_rule& rule);

// E[X^2] / (2 E[X]) over `periods`; 0 for none.
double felt_outage(const std::vector<double>& periods);

// The name of the field (strategy_summary::fields) that holds it.
inline constexpr const char* felt_outage_field = "felt_outage_s";

// boundary.csv: `model,load,trigger,trigger_lo,trigger_hi,replications` (SPEC 7.3), then
// `strategy,probes,always_down,never_down,load_key,trigger_key,mapped`; one row per boundary
// point, in map order and each map's load order.
void write_boundary_csv(const scenario_result& r, std::ostream& out);
// The `map` section of summary.json: {"maps": [{axes..., "boundary": [points]}]}.
nlohmann::ordered_json map_json(const scenario_result& r);
// The strategies mapped over the same scenario and axes, compared load by load: `strategy`
// survives a longer trigger (its boundary is higher, a load that never tips counting as the
// range's high end) than every other at `later` of the `loads` they were all mapped at, the most
// of any; `example` shows the load where they differ most. One per group of two or more.
struct map_comparison {
  std::string mapped, strategy;
  std::size_t later = 0, loads = 0;
  std::vector<std::string> others;
  std::string example;  // "at workload.clients = 200 clients: fixed 4.38 s, exponential 19 s"
  // "outage-recovery: exponential survives a longer trigger than fixed at 4 of 4 loads".
  std::string sentence() const;
};
std::vector<map_comparison> map_comparisons(const scenario_result& r);

// A boundary point's trigger in words: "4.38 s", "none up to 20 s", "down after any trigger".
std::string trigger_text(const boundary_point& b, const std::string& unit);

// The stdout table of a map run.
std::string map_table(const scenario_result& r);

}  // namespace backoff::report
