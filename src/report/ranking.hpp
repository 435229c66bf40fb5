// SPDX-License-Identifier: Apache-2.0
// The advice at the top of report.html (issue 23): the strategies of a run ranked by one
// documented rule, and one sentence per question an SRE asks (which makes the fewest calls, which
// has the shortest tail, which survives the outage), so a strategy can be picked without reading
// a CSV. A plain run is ranked on its summaries; a sweep point on the means of its replications.
//
//   report::ranking r = report::rank_plain(result);
//   for (const auto& row : r.rows) ...;       // best first
//   for (const auto& s : r.sentences) ...;    // plain text: escape it for HTML
//
// The rule (ranks_before), from what an SRE picks first to what decides between equals: with an
// outage, the share of runs that recovered, more first; then whether the success rate is within
// one percentage point of the best (as shown, 0.1 point): those first, and among them the fewest
// attempts per operation (the load), then the lower p99; the others by success, higher first,
// then load, then p99; then the scenario's order. So the headline is the cheapest strategy that
// succeeds about as well as any, never the one that buys its last tenth of a point with three
// times the calls; the report says the trade-off in a sentence when the first makes more than
// twice the calls of the second. Beside the order, each row says whether any other strategy beats
// it on success, load and p99 together (the unbeaten ones are the only sensible picks). A sweep
// point ranks on the means of its replications. Everything here is text and numbers computed from
// the result: no clock, no machine, the same bytes every time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "result.hpp"

namespace backoff::report {

// One strategy's figures as the ranking table shows them; latencies in the run's unit (s, or
// ticks in tick models), each the mean over the runs that completed something.
struct ranking_row {
  std::string name;
  std::size_t runs = 0;               // replications behind the figures (1 in a plain run)
  double success = 0;                 // completed / operations, 0..1 (mean over runs)
  double attempts_per_operation = 0;  // the `load` field: attempts per operation (mean)
  std::optional<double> p50, p99, max;
  std::size_t recovered_runs = 0;    // runs with a recovery_s (meaningful with an outage)
  std::optional<double> recovery_s;  // mean over the recovered runs
  // Attempts sent while the server was out (the buckets that start inside the outage), mean over
  // the runs; none without an outage window or a time series.
  std::optional<double> outage_attempts;
  // No other strategy succeeds at least as often (as shown), with no more load and no longer p99,
  // and is better on one of them (none: a p99 longer than any).
  bool unbeaten = false;
};

struct ranking {
  std::string unit = "s";         // of the latencies: "s" or "ticks"
  bool outage = false;            // the model has an outage: `recovers` is meaningful
  double best_success = 0;        // the highest success of any row, 0..1
  std::vector<ranking_row> rows;  // best first
  // The recommendation (and the trade-off when it makes more than twice the calls of the
  // runner-up), the unbeaten strategies, then fewest calls, shortest tail, survives the outage.
  std::vector<std::string> sentences;
};

// Strategies by name with their runs (one for a plain run), in the scenario's order.
using ranking_input = std::vector<std::pair<std::string, std::vector<const strategy_summary*>>>;

// True when `a` ranks above `b` (the rule in the header comment), `best_success` the highest
// success of the strategies ranked.
bool ranks_before(const ranking_row& a, const ranking_row& b, bool outage, double best_success);
// Within one percentage point (as shown) of the best success.
bool near_best_success(const ranking_row& row, double best_success);

// True when nothing a reader would act on tells `a` from `b`: the same recovery (with an outage)
// and success as shown, p99 latencies within 5 % of each other (or both missing), attempts per
// operation within 5 %. The rule still orders them; the report calls the top a tie, not a win.
bool indistinguishable(const ranking_row& a, const ranking_row& b, bool outage);
// The rows tied with the first (itself included): one name when the first is clearly first.
std::vector<std::string> tied_first(const ranking& k);

ranking rank_strategies(const ranking_input& strategies, bool outage,
                        const std::optional<std::pair<double, double>>& outage_s = {});
ranking rank_plain(const scenario_result& r);
ranking rank_point(const scenario_result& r, const point_result& point);

// "failure_rate=0.1, clients=10": a sweep point's parameters as text.
std::string point_label(const point_result& point);

// One line for the reports index: the first-ranked strategy and its figures (a plain run), how
// often each strategy ranks first, ties apart (a sweep), or the map's boundary; empty when
// nothing ran.
std::string verdict(const scenario_result& r);

// Numbers as the report prints them: seconds with three significant digits (no exponent from
// 0.001 to 10^6), percentages with one decimal, attempts with two.
std::string format_latency(double v);
std::string format_percent(double share);  // 0.625 -> "62.5"
std::string format_attempts(double v);

// One column of a report table: every number in the same unit with the same decimals, so that
// 0.0005 never stands as 5.00e-04 beside a 1. `unit` is what the header shows.
struct number_column {
  double scale = 1;  // shown = value * scale
  std::string unit;
  int decimals = 0;
  std::string operator()(double v) const;  // "-" for a value that is not finite
};
// Times: in s, ms or µs by the column's largest value ("s" in, "ticks" kept as it is), with the
// fewest decimals (at most four) that show every value exactly, else those that give the
// smallest non-zero value three significant digits (at most four).
number_column time_column(const std::vector<double>& values, const std::string& unit);
// Other quantities, unscaled: the decimals as above.
number_column plain_column(const std::vector<double>& values, std::string unit = "");

}  // namespace backoff::report
